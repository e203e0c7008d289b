// Shared pieces of the emulator tests: hand translations of small warp-specialized kernels,
// written the way the translator will emit them (every PTX statement a wsemu::ptx call with
// the kernel's own file:line).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "emu/runtime/ptx.h"

namespace emutest {

using namespace wsemu;

inline Config cfgOf(Policy p = Policy::Eager, Order o = Order::RoundRobin, uint64_t seed = 1) {
  Config c;
  c.policy = p;
  c.order = o;
  c.seed = seed;
  return c;
}

// A rows x cols bf16 matrix in emulated global memory, values (r*cols+c) % 251 - 125 (exact in bf16).
struct Bf16Matrix {
  int rows, cols;
  uint16_t *dev;
  std::vector<float> host;
  Bf16Matrix(int r, int c, const char *name, bool random = false, uint32_t seed = 1) : rows(r), cols(c) {
    dev = static_cast<uint16_t *>(emuMalloc((size_t)r * c * 2, name));
    host.resize((size_t)r * c);
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    for (int i = 0; i < r * c; ++i) {
      float v = random ? d(g) : (float)((i % 251) - 125);
      dev[i] = floatToBf16(v);
      host[i] = bf16ToFloat(dev[i]);
    }
  }
  ~Bf16Matrix() { emuFree(dev); }
  TensorMap map(int box_rows, int box_cols, int swizzle = TM_SWIZZLE_128B) const {
    TensorMap m;
    uint64_t dims[2] = {(uint64_t)cols, (uint64_t)rows}, strides[1] = {(uint64_t)cols * 2};
    uint32_t box[2] = {(uint32_t)box_cols, (uint32_t)box_rows}, es[2] = {1, 1};
    EXPECT_EQ(encodeTiled(&m, TM_BFLOAT16, 2, dev, dims, strides, box, es, 0, swizzle, 0, TM_OOB_FILL_ZERO), 0);
    return m;
  }
};

// Byte offset of element (row, col) of a [rows][64] bf16 tile in the 128B-swizzled image.
inline uint32_t sw128(int row, int col) { return row * 128 + ((((col / 8) ^ (row % 8))) << 4) + (col % 8) * 2; }

// "file.h:LINE" of the line of tests/emu/<file> that carries `// @marker`.
inline std::string siteOfMarker(const std::string &file, const std::string &marker) {
  FILE *f = std::fopen((std::string(WSEMU_TEST_DIR) + "/" + file).c_str(), "r");
  if (!f) return "?";
  char buf[512];
  int line = 0;
  std::string out = "?";
  while (std::fgets(buf, sizeof buf, f)) {
    ++line;
    if (std::strstr(buf, ("// @" + marker).c_str())) {
      out = file + ":" + std::to_string(line);
      break;
    }
  }
  std::fclose(f);
  return out;
}

inline bool hasLine(const Verdict &v, const std::string &needle) {
  for (auto &l : v.lines())
    if (l.find(needle) != std::string::npos) return true;
  return false;
}

inline std::string dump(const Verdict &v) {
  std::string s;
  for (auto &l : v.lines()) s += l + "\n";
  return s;
}

}  // namespace emutest
