/*
 * tma_xform.cu
 *
 * Streaming elementwise transform on Hopper:  Y = leaky(X * scale + bias)
 *
 *   warp 0 (producer)      : lane 0 pulls 64x64 fp32 tiles of X into a
 *                            3-deep shared-memory ring with TMA loads.
 *   warps 1..4 (consumers) : one warpgroup; transforms a tile into one of two
 *                            output staging buffers and lane 0 of warp 1
 *                            writes it back with a TMA store (bulk_group).
 *
 * Each CTA walks one 64-row band of the matrix, left to right.
 * The result is checked with a weighted checksum plus an exact element count.
 *
 * nvcc -std=c++17 -O2 -arch=sm_90a -lineinfo -o tma_xform tma_xform.cu -lcuda
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cfg {
constexpr int kRows = 2048;
constexpr int kCols = 1024;
constexpr int kTileR = 64;
constexpr int kTileC = 64;
constexpr int kDepth = 3;                          // input ring depth
constexpr int kTilesPerCta = kCols / kTileC;       // 16
constexpr int kConsumers = 128;                    // one warpgroup
constexpr int kBlock = 32 + kConsumers;            // producer warp + warpgroup
constexpr int kTileElems = kTileR * kTileC;
constexpr uint32_t kTileBytes = kTileElems * sizeof(float);   // 16 KB
constexpr int kStoreBarrier = 1;                   // named barrier id (0 is __syncthreads)
}  // namespace cfg

struct SharedStorage {
  alignas(128) float in[cfg::kDepth][cfg::kTileElems];
  alignas(128) float out[2][cfg::kTileElems];
  alignas(8) uint64_t filled[cfg::kDepth];
  alignas(8) uint64_t drained[cfg::kDepth];
};

static void die(const char* what, const char* detail) {
  std::fprintf(stderr, "tma_xform: %s: %s\n", what, detail);
  std::exit(2);
}
#define CUDA_OK(x) do { cudaError_t st = (x); if (st != cudaSuccess) die(#x, cudaGetErrorString(st)); } while (0)

// ====================================================================== PTX
namespace ptx {

__device__ __forceinline__ uint32_t saddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t expected) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" : : "r"(saddr(bar)), "r"(expected) : "memory");
}

__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" : : : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" : : "r"(saddr(bar)) : "memory");
}

__device__ __forceinline__ void mbar_arrive_tx(uint64_t* bar, uint32_t tx) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" : : "r"(saddr(bar)), "r"(tx) : "memory");
}

__device__ __forceinline__ bool mbar_test(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "  selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(saddr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  while (!mbar_test(bar, parity)) {
  }
}

__device__ __forceinline__ void tma_load(float* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
      :
      : "r"(saddr(dst)), "l"(map), "r"(c0), "r"(c1), "r"(saddr(bar))
      : "memory");
}

__device__ __forceinline__ void tma_store(const CUtensorMap* map, const float* src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
               :
               : "l"(map), "r"(c0), "r"(c1), "r"(saddr(src))
               : "memory");
}

__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" : : : "memory"); }

template <int Pending>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" : : "n"(Pending) : "memory");
}

__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" : : : "memory"); }

// make this thread's generic-proxy smem writes visible to the async (TMA) proxy
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;" : : : "memory"); }

__device__ __forceinline__ void named_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;" : : "r"(id), "r"(count) : "memory");
}

}  // namespace ptx

// =================================================================== kernel
__device__ __forceinline__ float leaky(float v) { return v > 0.f ? v : 0.125f * v; }

__global__ void __launch_bounds__(cfg::kBlock, 1)
xform_kernel(const __grid_constant__ CUtensorMap srcMap, const __grid_constant__ CUtensorMap dstMap, float scale,
             float bias) {
  extern __shared__ unsigned char raw[];
  SharedStorage& S = *reinterpret_cast<SharedStorage*>((reinterpret_cast<uintptr_t>(raw) + 127) & ~uintptr_t(127));

  const int tid = threadIdx.x;
  const int bandRow = blockIdx.x * cfg::kTileR;

  if (tid == 0) {
    for (int i = 0; i < cfg::kDepth; ++i) {
      ptx::mbar_init(&S.filled[i], 1);
      ptx::mbar_init(&S.drained[i], cfg::kConsumers);   // every consumer thread arrives
    }
    ptx::mbar_fence_init();
  }
  __syncthreads();

  if (tid < 32) {
    // ------------------------------------------------------------ producer
    if (tid == 0) {
      int slot = 0;
      uint32_t lap = 0;
      for (int t = 0; t < cfg::kTilesPerCta; ++t) {
        ptx::mbar_wait(&S.drained[slot], lap ^ 1u);
        ptx::mbar_arrive_tx(&S.filled[slot], cfg::kTileBytes);
        ptx::tma_load(S.in[slot], &srcMap, &S.filled[slot], t * cfg::kTileC, bandRow);
        if (++slot == cfg::kDepth) { slot = 0; lap ^= 1u; }
      }
    }
    return;
  }

  // -------------------------------------------------------------- consumers
  const int ct = tid - 32;            // 0..127 inside the warpgroup
  const bool storer = (ct == 0);
  int slot = 0;
  uint32_t lap = 0;

  for (int t = 0; t < cfg::kTilesPerCta; ++t) {
    const int ob = t & 1;

    // out[ob] was last handed to the TMA store of tile t-2: wait until that
    // store has finished reading shared memory before anyone overwrites it.
    if (storer) ptx::bulk_wait_read<1>();
    ptx::named_sync(cfg::kStoreBarrier, cfg::kConsumers);

    ptx::mbar_wait(&S.filled[slot], lap);
    const float4* src4 = reinterpret_cast<const float4*>(S.in[slot]);
    float4 v[cfg::kTileElems / 4 / cfg::kConsumers];
#pragma unroll
    for (int i = 0; i < cfg::kTileElems / 4 / cfg::kConsumers; ++i) v[i] = src4[ct + i * cfg::kConsumers];
    ptx::mbar_arrive(&S.drained[slot]);   // values are in registers: slot may be refilled
    if (++slot == cfg::kDepth) { slot = 0; lap ^= 1u; }

    float4* dst4 = reinterpret_cast<float4*>(S.out[ob]);
#pragma unroll
    for (int i = 0; i < cfg::kTileElems / 4 / cfg::kConsumers; ++i) {
      float4 w;
      w.x = leaky(v[i].x * scale + bias);
      w.y = leaky(v[i].y * scale + bias);
      w.z = leaky(v[i].z * scale + bias);
      w.w = leaky(v[i].w * scale + bias);
      dst4[ct + i * cfg::kConsumers] = w;
    }
    ptx::fence_async_smem();
    ptx::named_sync(cfg::kStoreBarrier, cfg::kConsumers);

    if (storer) {
      ptx::tma_store(&dstMap, S.out[ob], t * cfg::kTileC, bandRow);
      ptx::bulk_commit();
    }
  }
  if (storer) ptx::bulk_wait_all();
}

// ===================================================================== host
static CUtensorMap plain_map(float* base) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cfg::kCols, cfg::kRows};
  const cuuint64_t pitch[1] = {cfg::kCols * sizeof(float)};
  const cuuint32_t box[2] = {cfg::kTileC, cfg::kTileR};
  const cuuint32_t step[2] = {1, 1};
  CUresult rc = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, base, dims, pitch, box, step,
                                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                       CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (rc != CUDA_SUCCESS) {
    const char* msg = nullptr;
    cuGetErrorString(rc, &msg);
    die("cuTensorMapEncodeTiled", msg ? msg : "?");
  }
  return map;
}

static inline float host_leaky(float v) { return v > 0.f ? v : 0.125f * v; }

int main() {
  const size_t n = static_cast<size_t>(cfg::kRows) * cfg::kCols;
  const float scale = 1.5f, bias = -2.0f;

  // integers/8 in [-64, 64): every step of the transform is exact in fp32
  std::vector<float> hx(n), hy(n);
  uint32_t lcg = 0x1234567u;
  for (size_t i = 0; i < n; ++i) {
    lcg = lcg * 1664525u + 1013904223u;
    hx[i] = static_cast<float>(static_cast<int>((lcg >> 9) % 1024u) - 512) / 8.0f;
  }

  float *dx = nullptr, *dy = nullptr;
  CUDA_OK(cudaMalloc(&dx, n * sizeof(float)));
  CUDA_OK(cudaMalloc(&dy, n * sizeof(float)));
  CUDA_OK(cudaMemcpy(dx, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(dy, 0xFF, n * sizeof(float)));

  CUtensorMap srcMap = plain_map(dx);
  CUtensorMap dstMap = plain_map(dy);

  const int smem = static_cast<int>(sizeof(SharedStorage)) + 128;
  CUDA_OK(cudaFuncSetAttribute(xform_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  xform_kernel<<<cfg::kRows / cfg::kTileR, cfg::kBlock, smem>>>(srcMap, dstMap, scale, bias);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(hy.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));

  double sumDev = 0.0, sumRef = 0.0;
  size_t mismatches = 0;
  for (size_t i = 0; i < n; ++i) {
    const float ref = host_leaky(hx[i] * scale + bias);
    const double w = static_cast<double>((i % 7) + 1);
    sumRef += w * ref;
    sumDev += w * hy[i];
    if (!(hy[i] == ref)) ++mismatches;
  }
  CUDA_OK(cudaFree(dx));
  CUDA_OK(cudaFree(dy));

  const bool pass = (mismatches == 0) && std::fabs(sumDev - sumRef) <= 1e-6 * (1.0 + std::fabs(sumRef));
  std::printf("tma_xform  %dx%d  checksum dev=%.4f ref=%.4f  mismatches=%zu/%zu  => %s\n", cfg::kRows, cfg::kCols,
              sumDev, sumRef, mismatches, n, pass ? "PASSED" : "FAILED");
  return pass ? 0 : 1;
}
