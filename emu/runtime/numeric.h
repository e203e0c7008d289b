// bf16 / f16 / tf32 conversions the PTX interpreter and translated code share (cvt.*).
#pragma once

#include <cstdint>
#include <cstring>

namespace wsemu {

inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t floatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bf16ToFloat(uint16_t b) { return bitsToFloat((uint32_t)b << 16); }
inline uint16_t floatToBf16(float f) {  // round to nearest even, NaN kept quiet
  uint32_t u = floatToBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}
float f16ToFloat(uint16_t h);
uint16_t floatToF16(float f);
inline float tf32ToFloat(uint32_t bits) {
  return bitsToFloat(bits & 0xffffe000u);
}  // tf32 ignores the low 13 bits
// cvt.rn.bf16x2.f32 d, hi, lo: lo in bits 0-15
inline uint32_t packBf16x2(float lo, float hi) {
  return (uint32_t)floatToBf16(lo) | ((uint32_t)floatToBf16(hi) << 16);
}

}  // namespace wsemu
