// The CUDA names a translated program uses: the runtime subset real harnesses
// call (cudaMalloc/Memcpy/Memset/Free/DeviceSynchronize/GetLastError/FuncSetAttribute/
// GetDriverEntryPoint for cuTensorMapEncodeTiled, ...), the driver's tensor-map types, bf16,
// the CUDA attributes and the device built-ins and intrinsics. emu/translate/translate.cpp's output
// includes it first; emu/runtime/shim/ holds cuda.h, cuda_runtime.h, ... that forward here, so the
// user's #include lines resolve to it. Device intrinsics are macros so that WSEMU_HERE names the
// user's line (the translated file keeps the user's line numbers).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "emu/runtime/ptx.h"

// ---- attributes and qualifiers: the translator removes __shared__; the rest mean nothing here
// ----
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __grid_constant__
#define __align__(n) alignas(n)
#define __constant__
#define __managed__
#define WSEMU_TRANSLATED 1

// ---- vector types and dim3 ----
using dim3 = ::wsemu::Dim3;
struct uint2 {
  unsigned x, y;
};
struct uint4 {
  unsigned x, y, z, w;
};
struct int2 {
  int x, y;
};
struct int4 {
  int x, y, z, w;
};
struct float2 {
  float x, y;
};
struct float4 {
  float x, y, z, w;
};

// ---- built-ins of the current emulated thread ----
#define threadIdx (::wsemu::threadIdx())
#define blockIdx (::wsemu::blockIdx())
#define blockDim (::wsemu::blockDim())
#define gridDim (::wsemu::gridDim())
constexpr int warpSize = 32;

namespace wsemu_shim {
template <class T>
T &sharedVar(const char *name, size_t align = 0) {
  using E = std::remove_all_extents_t<T>;
  size_t a = align ? align : (alignof(T) < 16 ? 16 : alignof(T));
  return *static_cast<T *>(::wsemu::sharedStaticBytes(name, sizeof(T), a, sizeof(E)));
}
template <class T>
inline uint32_t toBits(T v) {
  static_assert(sizeof(T) == 4, "__shfl_*_sync on a 4-byte value");
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}
template <class T>
inline T fromBits(uint32_t u) {
  T v;
  std::memcpy(&v, &u, 4);
  return v;
}
template <class T>
inline T shfl(::wsemu::ptx::Shfl mode, ::wsemu::SrcLoc loc, uint32_t mask, T v, int b,
              int width = 32) {
  uint32_t c =
      mode == ::wsemu::ptx::Shfl::Up ? ((32u - width) << 8) : (((32u - width) << 8) | 0x1f);
  if constexpr (sizeof(T) == 8) {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    uint32_t lo = ::wsemu::ptx::shfl_sync(mode, (uint32_t)u, (uint32_t)b, c, mask, loc);
    uint32_t hi = ::wsemu::ptx::shfl_sync(mode, (uint32_t)(u >> 32), (uint32_t)b, c, mask, loc);
    u = (uint64_t)hi << 32 | lo;
    std::memcpy(&v, &u, 8);
    return v;
  } else {
    return fromBits<T>(::wsemu::ptx::shfl_sync(mode, toBits(v), (uint32_t)b, c, mask, loc));
  }
}
inline void syncwarp(::wsemu::SrcLoc loc, uint32_t mask = 0xffffffffu) {
  ::wsemu::ptx::syncwarp(mask, loc);
}
// `f(args)` inside device code -> at_call(WSEMU_HERE, [&]() -> decltype(auto) { return f(args); }):
// a parked thread's site reads "caller-line>callee-line".
template <class F>
inline decltype(auto) at_call(::wsemu::SrcLoc loc, F &&f) {
  ::wsemu::CallSite site(loc);
  return f();
}
// An address operand of an asm statement without a state space: a generic pointer, as a shared one.
inline uint32_t sharedOperand(uint64_t generic, ::wsemu::SrcLoc loc) {
  return ::wsemu::smemAddr(reinterpret_cast<const void *>((uintptr_t)generic), loc);
}
inline const ::wsemu::TensorMap *mapOperand(uint64_t generic) {
  return reinterpret_cast<const ::wsemu::TensorMap *>((uintptr_t)generic);
}
inline size_t cvtaShared(const void *p, ::wsemu::SrcLoc loc) { return ::wsemu::smemAddr(p, loc); }
}  // namespace wsemu_shim

// ---- intrinsics (macros: the SrcLoc is the user's line) ----
#define __syncthreads() ::wsemu::ptx::syncthreads(WSEMU_HERE)
#define __syncwarp(...) ::wsemu_shim::syncwarp(WSEMU_HERE __VA_OPT__(, ) __VA_ARGS__)
#define __cvta_generic_to_shared(p) ::wsemu_shim::cvtaShared((p), WSEMU_HERE)
#define __shfl_sync(m, v, s, ...) \
  ::wsemu_shim::shfl(::wsemu::ptx::Shfl::Idx, WSEMU_HERE, (m), (v), (s)__VA_OPT__(, ) __VA_ARGS__)
#define __shfl_xor_sync(m, v, s, ...) \
  ::wsemu_shim::shfl(::wsemu::ptx::Shfl::Bfly, WSEMU_HERE, (m), (v), (s)__VA_OPT__(, ) __VA_ARGS__)
#define __shfl_down_sync(m, v, s, ...) \
  ::wsemu_shim::shfl(::wsemu::ptx::Shfl::Down, WSEMU_HERE, (m), (v), (s)__VA_OPT__(, ) __VA_ARGS__)
#define __shfl_up_sync(m, v, s, ...) \
  ::wsemu_shim::shfl(::wsemu::ptx::Shfl::Up, WSEMU_HERE, (m), (v), (s)__VA_OPT__(, ) __VA_ARGS__)
#define __all_sync(m, p) \
  (::wsemu::ptx::vote_sync(::wsemu::ptx::Vote::All, (p), (m), WSEMU_HERE) != 0)
#define __any_sync(m, p) \
  (::wsemu::ptx::vote_sync(::wsemu::ptx::Vote::Any, (p), (m), WSEMU_HERE) != 0)
#define __ballot_sync(m, p) \
  ::wsemu::ptx::vote_sync(::wsemu::ptx::Vote::Ballot, (p), (m), WSEMU_HERE)
#define __trap() ::wsemu::ptx::unknown_instruction("trap", WSEMU_HERE)
#define atomicAdd(p, v) ::wsemu_shim::atomicAddImpl((p), (v), WSEMU_HERE)
#define atomicCAS(p, c, v) ::wsemu::ptx::atom_cas_u32((uint32_t *)(p), (c), (v), WSEMU_HERE)
#define atomicExch(p, v) \
  ::wsemu::ptx::atom_u32(::wsemu::ptx::Atom::Exch, (uint32_t *)(p), (v), WSEMU_HERE)
#define atomicMax(p, v) \
  ::wsemu::ptx::atom_s32(::wsemu::ptx::Atom::Max, (int32_t *)(p), (v), WSEMU_HERE)
#define atomicMin(p, v) \
  ::wsemu::ptx::atom_s32(::wsemu::ptx::Atom::Min, (int32_t *)(p), (v), WSEMU_HERE)
#define clock64() ((long long)::wsemu::clock64())
#define __ldg(p) (*(p))

namespace wsemu_shim {
inline float atomicAddImpl(float *p, float v, ::wsemu::SrcLoc l) {
  return ::wsemu::ptx::atom_add_f32(p, v, l);
}
inline int atomicAddImpl(int *p, int v, ::wsemu::SrcLoc l) {
  return ::wsemu::ptx::atom_s32(::wsemu::ptx::Atom::Add, p, v, l);
}
inline unsigned atomicAddImpl(unsigned *p, unsigned v, ::wsemu::SrcLoc l) {
  return ::wsemu::ptx::atom_u32(::wsemu::ptx::Atom::Add, p, v, l);
}
inline unsigned long long atomicAddImpl(unsigned long long *p, unsigned long long v,
                                        ::wsemu::SrcLoc l) {
  return ::wsemu::ptx::atom_add_u64(reinterpret_cast<uint64_t *>(p), v, l);
}
}  // namespace wsemu_shim

// ---- math ----
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0 ? 0.f : x > 1 ? 1.f : x; }
inline float __uint_as_float(unsigned u) { return ::wsemu::bitsToFloat(u); }
inline unsigned __float_as_uint(float f) { return ::wsemu::floatToBits(f); }
inline int __float_as_int(float f) { return (int)::wsemu::floatToBits(f); }
inline float __int_as_float(int i) { return ::wsemu::bitsToFloat((uint32_t)i); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
template <class T>
inline T min(T a, T b) {
  return a < b ? a : b;
}
template <class T>
inline T max(T a, T b) {
  return a < b ? b : a;
}

// ---- bf16 / fp16 (cuda_bf16.h, cuda_fp16.h): storage types with the conversions ----
struct __nv_bfloat16 {
  uint16_t __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : __x(::wsemu::floatToBf16(f)) {}
  operator float() const { return ::wsemu::bf16ToFloat(__x); }
};
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return ::wsemu::bf16ToFloat(b.__x); }
inline __nv_bfloat162 __floats2bfloat162_rn(float lo, float hi) {
  return {__nv_bfloat16(lo), __nv_bfloat16(hi)};
}
inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return __floats2bfloat162_rn(f.x, f.y); }
struct __half {
  uint16_t __x;
  __half() = default;
  __half(float f) : __x(::wsemu::floatToF16(f)) {}
  operator float() const { return ::wsemu::f16ToFloat(__x); }
};
struct __half2 {
  __half x, y;
};
using half = __half;
inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half h) { return ::wsemu::f16ToFloat(h.__x); }
inline __half2 __floats2half2_rn(float lo, float hi) { return {__half(lo), __half(hi)}; }

// ---- the driver's tensor-map API (cuda.h, cudaTypedefs.h) ----
using CUtensorMap = ::wsemu::TensorMap;
using cuuint64_t = uint64_t;
using cuuint32_t = uint32_t;
enum CUresult { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1 };
enum CUtensorMapDataType {
  CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
  CU_TENSOR_MAP_DATA_TYPE_UINT16,
  CU_TENSOR_MAP_DATA_TYPE_UINT32,
  CU_TENSOR_MAP_DATA_TYPE_INT32,
  CU_TENSOR_MAP_DATA_TYPE_UINT64,
  CU_TENSOR_MAP_DATA_TYPE_INT64,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ,
  CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
  CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ
};
enum CUtensorMapInterleave {
  CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
  CU_TENSOR_MAP_INTERLEAVE_16B,
  CU_TENSOR_MAP_INTERLEAVE_32B
};
enum CUtensorMapSwizzle {
  CU_TENSOR_MAP_SWIZZLE_NONE = 0,
  CU_TENSOR_MAP_SWIZZLE_32B,
  CU_TENSOR_MAP_SWIZZLE_64B,
  CU_TENSOR_MAP_SWIZZLE_128B
};
enum CUtensorMapL2promotion {
  CU_TENSOR_MAP_L2_PROMOTION_NONE = 0,
  CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
  CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
  CU_TENSOR_MAP_L2_PROMOTION_L2_256B
};
enum CUtensorMapFloatOOBfill {
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0,
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
};
inline CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank,
                                       void *base, const cuuint64_t *dims,
                                       const cuuint64_t *strides, const cuuint32_t *box,
                                       const cuuint32_t *estr, CUtensorMapInterleave il,
                                       CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
                                       CUtensorMapFloatOOBfill oob) {
  return (CUresult)::wsemu::encodeTiled(map, (int)dt, rank, base, dims, strides, box, estr, (int)il,
                                        (int)sw, (int)l2, (int)oob);
}
using PFN_cuTensorMapEncodeTiled_v12000 = decltype(&cuTensorMapEncodeTiled);
using PFN_cuTensorMapEncodeTiled = PFN_cuTensorMapEncodeTiled_v12000;

// ---- the runtime API ----
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevice = 101,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801
};
using cudaError = cudaError_t;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9,
  cudaFuncAttributeNonPortableClusterSizeAllowed = 12
};
enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
};
enum cudaDriverEntryPointQueryResult {
  cudaDriverEntryPointSuccess = 0,
  cudaDriverEntryPointSymbolNotFound = 1,
  cudaDriverEntryPointVersionNotSufficent = 2
};
enum { cudaEnableDefault = 0, cudaEnableLegacyStream = 1, cudaEnablePerThreadDefaultStream = 2 };
struct CUstream_st;
using cudaStream_t = CUstream_st *;
struct CUevent_st;
using cudaEvent_t = CUevent_st *;
// A plain struct like the runtime's: `cudaDeviceProp prop;` holds nothing until
// cudaGetDeviceProperties fills it (with default member initialisers here, a program that
// never called it read 132 SMs on the emulator and garbage on the GPU).
struct cudaDeviceProp {
  char name[256];
  int major, minor;
  int multiProcessorCount;
  size_t sharedMemPerBlock, sharedMemPerBlockOptin, sharedMemPerMultiprocessor;
  size_t totalGlobalMem;
  int maxThreadsPerBlock, warpSize, regsPerBlock, clockRate;
  int l2CacheSize, maxThreadsPerMultiProcessor;
};
namespace wsemu_shim {
inline const cudaDeviceProp &props() {  // the device the emulator stands for
  static const cudaDeviceProp p = [] {
    cudaDeviceProp q{};
    std::snprintf(q.name, sizeof q.name, "%s", "wsemu (CPU emulation of sm_90a)");
    q.major = 9, q.minor = 0, q.multiProcessorCount = 132;
    q.sharedMemPerBlock = 48 * 1024, q.sharedMemPerBlockOptin = 227 * 1024,
    q.sharedMemPerMultiprocessor = 228 * 1024;
    q.totalGlobalMem = 80ull << 30;
    q.maxThreadsPerBlock = 1024, q.warpSize = 32, q.regsPerBlock = 65536, q.clockRate = 1980000;
    q.l2CacheSize = 50 << 20, q.maxThreadsPerMultiProcessor = 2048;
    return q;
  }();
  return p;
}
}  // namespace wsemu_shim

namespace wsemu_shim {
inline cudaError_t &lastError() {
  static cudaError_t e = cudaSuccess;
  return e;
}
// A kernel runs when it is launched, but its failure (a hang, UB) is shown where the GPU's would
// show: at the host's next synchronizing call (cudaDeviceSynchronize, cudaMemcpy, cudaFree, ...).
// A program that never synchronizes never sees it, on the GPU as here: it exits normally and the
// kernel is abandoned. (A reduction judged on the emulator once dropped the only synchronizing
// call after a hanging launch; the H200 then passed the program:
// bench/results/2026-11-29-h200-session4/.)
struct Pending {
  bool set = false;
  ::wsemu::Verdict v;
  ::wsemu::SrcLoc loc;
  bool sticky = false;    // a fault the host has been told of: every call returns it from then on
  bool reported = false;  // the host asked for its text (cudaGetErrorString/Name): it says it
};
inline Pending &pending() {
  static Pending p;
  return p;
}
// A hang blocks the synchronizing call for ever: its verdict, now. A fault (the emulator's UB, a
// crash) is what the GPU returns there, "unspecified launch failure", and returns from every call
// after it. What is seen then is what the program does with it, as on the GPU: its check prints it
// (the emulator's verdict follows at exit), or the program ignores it and exits as it would. On
// the H200 a reduction of pipeline_init_in_role that no longer checked cudaDeviceSynchronize()
// passed while the emulator, stopping at the sync, called it a crash.
[[noreturn]] inline void sayVerdictAndExit(const Pending &p) {
  std::fflush(stdout);
  p.v.print(stderr);
  std::fflush(stderr);
  std::_Exit(p.v.exitStatus());
}
inline cudaError_t syncPoint() {
  auto &p = pending();
  if (!p.set) return cudaSuccess;
  if (p.v.symptom == "ub" || p.v.symptom == "crash") {
    p.sticky = true;
    return lastError() = cudaErrorLaunchFailure;
  }
  sayVerdictAndExit(p);
}
inline cudaError_t sticky() { return pending().sticky ? cudaErrorLaunchFailure : cudaSuccess; }
// The program asks for an error's text: if it is the fault's, the program reports it.
inline void askedFor(cudaError_t e) {
  if (e == cudaErrorLaunchFailure && pending().sticky) pending().reported = true;
}
inline void atExit(int status, void *) {
  auto &p = pending();
  if (!p.set) return;
  if (p.reported) sayVerdictAndExit(p);
  if (p.sticky)
    std::fprintf(stderr,
                 "[wsemu] the kernel launched at %s:%d failed (%s); the program was told "
                 "(unspecified launch "
                 "failure) and exited with status %d without reporting it: on the GPU nothing more "
                 "is seen\n",
                 p.loc.file, p.loc.line, p.v.detail.c_str(), status);
  else
    std::fprintf(stderr,
                 "[wsemu] the kernel launched at %s:%d failed (%s), but the program never "
                 "synchronized with it "
                 "before exiting: on the GPU it is abandoned at exit and nothing is seen\n",
                 p.loc.file, p.loc.line, p.v.detail.c_str());
}
}  // namespace wsemu_shim

inline const char *cudaGetErrorString(cudaError_t e) {
  wsemu_shim::askedFor(e);
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
    default:
      return "unknown error";
  }
}
inline const char *cudaGetErrorName(cudaError_t e) {
  wsemu_shim::askedFor(e);
  return e == cudaSuccess              ? "cudaSuccess"
         : e == cudaErrorLaunchFailure ? "cudaErrorLaunchFailure"
                                       : "cudaErrorUnknown";
}
// cudaMalloc of 0 bytes succeeds and gives a null pointer, as on the GPU; a copy from it is then
// refused at once (cudaMemcpy below) without waiting for a running kernel. A reduction whose last
// call had become cudaMemcpy(h, dC, 1, D2H) after cudaMalloc(&dC, 0) hung here and passed on the
// H200 (bench/results/2026-11-30-h200-session14/a, L1; the probe bench/probes/sync_points.cu).
inline cudaError_t cudaMalloc(void **p, size_t bytes) {
  if (cudaError_t e = wsemu_shim::sticky()) return e;
  if (bytes == 0) {
    *p = nullptr;
    return cudaSuccess;
  }
  *p = ::wsemu::emuMalloc(bytes);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
template <class T>
inline cudaError_t cudaMalloc(T **p, size_t bytes) {
  void *v = nullptr;
  cudaError_t e = cudaMalloc(&v, bytes);
  *p = static_cast<T *>(v);
  return e;
}
inline cudaError_t cudaFree(void *p) {
  if (!p)
    return cudaSuccess;  // cudaFree(nullptr) returns at once on the GPU
                         // (bench/probes/sync_points.cu)
  // Nor does it wait to refuse a pointer that is not an allocation: a reduction whose only
  // synchronizing call had become cudaFree(dB) of an uninitialised `bf16 *dB` hung here and passed
  // on the H200 (bench/results/2026-11-30-h200-session14/b, L1).
  if (!::wsemu::emuIsAllocation(p)) return wsemu_shim::lastError() = cudaErrorInvalidValue;
  if (cudaError_t e = wsemu_shim::syncPoint()) return e;
  ::wsemu::emuFree(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                              cudaMemcpyKind kind = cudaMemcpyDefault) {
  // A copy of nothing returns at once on the GPU, without waiting for the device: a reduction
  // whose only synchronizing call had become cudaMemcpy(0, 0, 0, ...) after a hanging launch
  // passed on the H200 (bench/results/2026-11-30-h200-session12/a). The probe
  // bench/probes/sync_points.cu (../b/s12_sync.log): a copy of 4 bytes, device to host or host to
  // host, waits; one of 0 bytes, cudaFree(nullptr), cudaMemset and cudaGetLastError do not.
  if (bytes == 0) return cudaSuccess;
  // A null source or destination is refused before the copy waits for anything: a
  // reduction whose last call had become cudaMemcpy(0, 0, 1, D2H) passed on the H200.
  if (!dst || !src) return wsemu_shim::lastError() = cudaErrorInvalidValue;
  // So is a device side that is not in a device allocation: on the H200 a 4-byte copy "device to
  // host" from a host variable returned "invalid argument" in 0.02 ms while a kernel ran (the
  // probe's memcpyhostsrc, bench/results/2026-11-30-h200-session14/b/s14_sync.log).
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  if ((src_dev && !::wsemu::emuInAllocation(src)) || (dst_dev && !::wsemu::emuInAllocation(dst)))
    return wsemu_shim::lastError() = cudaErrorInvalidValue;
  if (cudaError_t e = wsemu_shim::syncPoint()) return e;
  ::wsemu::emuMemcpy(dst, src, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                                   cudaMemcpyKind k = cudaMemcpyDefault, cudaStream_t = nullptr) {
  return cudaMemcpy(dst, src, bytes, k);
}
inline cudaError_t cudaMemset(void *dst, int v, size_t bytes) {
  ::wsemu::emuMemset(dst, v, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void *dst, int v, size_t bytes, cudaStream_t = nullptr) {
  return cudaMemset(dst, v, bytes);
}
inline cudaError_t cudaDeviceSynchronize() { return wsemu_shim::syncPoint(); }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return wsemu_shim::syncPoint(); }
inline cudaError_t cudaGetLastError() {
  cudaError_t e = wsemu_shim::lastError();
  if (!wsemu_shim::sticky()) wsemu_shim::lastError() = cudaSuccess;
  return e;
}
inline cudaError_t cudaPeekAtLastError() { return wsemu_shim::lastError(); }
inline cudaError_t cudaDeviceReset() { return wsemu_shim::syncPoint(); }
inline cudaError_t cudaSetDevice(int) { return cudaSuccess; }
inline cudaError_t cudaGetDevice(int *d) {
  *d = 0;
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceCount(int *n) {
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int) {
  *p = wsemu_shim::props();
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int) {
  const cudaDeviceProp &p = wsemu_shim::props();
  switch (a) {
    case cudaDevAttrMaxThreadsPerBlock:
      *v = p.maxThreadsPerBlock;
      break;
    case cudaDevAttrMultiProcessorCount:
      *v = p.multiProcessorCount;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *v = p.major;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *v = p.minor;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *v = (int)p.sharedMemPerBlockOptin;
      break;
    default:
      *v = 0;
      return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}
namespace wsemu_shim {
// The largest cudaFuncAttributeMaxDynamicSharedMemorySize the program set (on any kernel: the
// launch below does not know which function its body calls). A launch asking for more than
// 48 KiB of dynamic shared memory without that opt-in fails on the GPU, the kernel never runs
// and cudaGetLastError says "invalid argument": found when a reduction judged on the emulator
// dropped the opt-in and the GPU then ran nothing (bench/results/2026-11-29-h200-session4/).
inline int &maxDynamicSmemOptin() {
  static int v = 0;
  return v;
}
}  // namespace wsemu_shim
template <class F>
inline cudaError_t cudaFuncSetAttribute(F *, cudaFuncAttribute a, int v) {
  if (a == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (v < 0 || (size_t)v > wsemu_shim::props().sharedMemPerBlockOptin)
      return wsemu_shim::lastError() = cudaErrorInvalidValue;
    wsemu_shim::maxDynamicSmemOptin() = std::max(wsemu_shim::maxDynamicSmemOptin(), v);
  }
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreate(cudaStream_t *s) {
  *s = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaEventCreate(cudaEvent_t *e) {
  *e = reinterpret_cast<cudaEvent_t>(new double(0));
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<double *>(e);
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = nullptr) {
  *reinterpret_cast<double *>(e) = (double)::wsemu::globaltimer() / 1e6;
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return wsemu_shim::syncPoint(); }
inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = (float)(*reinterpret_cast<double *>(b) - *reinterpret_cast<double *>(a));
  return cudaSuccess;
}
inline cudaError_t cudaGetDriverEntryPoint(const char *sym, void **fn, unsigned long long = 0,
                                           cudaDriverEntryPointQueryResult *q = nullptr) {
  if (std::strcmp(sym, "cuTensorMapEncodeTiled") == 0) {
    *fn = reinterpret_cast<void *>(&cuTensorMapEncodeTiled);
    if (q) *q = cudaDriverEntryPointSuccess;
    return cudaSuccess;
  }
  *fn = nullptr;
  if (q) *q = cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}
inline cudaError_t cudaGetDriverEntryPointByVersion(const char *sym, void **fn, unsigned,
                                                    unsigned long long flags,
                                                    cudaDriverEntryPointQueryResult *q = nullptr) {
  return cudaGetDriverEntryPoint(sym, fn, flags, q);
}

namespace wsemu_shim {
// kernel<<<g, b, smem, stream>>>(args) -> wsemu_shim::launch(g, b, smem, [&]{ kernel(args); },
// WSEMU_HERE) A failing launch prints its WSEMU lines and exits 86/87/88 (configFromEnv sets
// exit_on_failure) at the host's next synchronizing call (Pending above).
inline const ::wsemu::Config &config() {
  static ::wsemu::Config c = ::wsemu::configFromEnv();
  return c;
}
// The GPU's launch limits (sm_90): a grid of 1..2^31-1 x 1..65535 x 1..65535 blocks, a block of
// 1..1024 threads with x, y <= 1024 and z <= 64. Outside them the kernel never runs and the launch
// says "invalid configuration argument" (not sticky).
inline bool validConfig(::wsemu::Dim3 g, ::wsemu::Dim3 b) {
  if (g.x < 1 || g.x > 0x7fffffffu || g.y < 1 || g.y > 65535 || g.z < 1 || g.z > 65535)
    return false;
  if (b.x < 1 || b.y < 1 || b.z < 1 || b.x > 1024 || b.y > 1024 || b.z > 64) return false;
  return (uint64_t)b.x * b.y * b.z <= 1024;
}
template <class F>
inline void launch(::wsemu::Dim3 g, ::wsemu::Dim3 b, size_t smem, const F &body,
                   ::wsemu::SrcLoc loc) {
  if (!validConfig(g, b)) {
    lastError() = cudaErrorInvalidConfiguration;
    std::fprintf(stderr,
                 "[wsemu] launch at %s:%d not run: grid (%u, %u, %u) x block (%u, %u, %u) is "
                 "outside the GPU's "
                 "limits (the GPU refuses it: invalid configuration argument)\n",
                 loc.file, loc.line, g.x, g.y, g.z, b.x, b.y, b.z);
    return;
  }
  if (smem > wsemu_shim::props().sharedMemPerBlock && smem > (size_t)maxDynamicSmemOptin()) {
    lastError() = cudaErrorInvalidValue;  // as on the GPU: not launched, the error is not sticky
    std::fprintf(
        stderr,
        "[wsemu] launch at %s:%d not run: %zu bytes of dynamic shared memory > 48 KiB without "
        "cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) (the GPU refuses it: "
        "invalid argument)\n",
        loc.file, loc.line, smem);
    return;
  }
  if (pending().set) {  // queued behind a kernel that never finished (or faulted): never runs
    if (sticky()) lastError() = cudaErrorLaunchFailure;
    return;
  }
  static const ::wsemu::Config deferred = [] {
    ::wsemu::Config c = config();
    c.exit_on_failure = false;
    return c;
  }();
  ::wsemu::Verdict v = ::wsemu::launch(g, b, smem, std::function<void()>(body), deferred, loc);
  if (!v.pass()) {
    if (!config().exit_on_failure) return;
    pending() = Pending{true, v, loc};
    static const bool registered =
        (::on_exit(atExit, nullptr), true);  // glibc: the handler sees the status
    (void)registered;
  }
}
template <class F>
inline void launch(::wsemu::Dim3 g, ::wsemu::Dim3 b, size_t smem, cudaStream_t, const F &body,
                   ::wsemu::SrcLoc loc) {
  launch(g, b, smem, body, loc);
}
}  // namespace wsemu_shim

#ifndef __CUDA_ARCH__
#define __CUDA_ARCH__ 900
#endif
