// rownorm_nb.cu
// ----------------------------------------------------------------------------
// Row L2 norms of a wide fp32 matrix, plus the largest norm of every 64-row
// band, on Hopper (sm_90a).
//
// Thread layout of one CTA (288 threads):
//   threads   0..127  consumer warpgroup 0  (columns  0..31 of every tile)
//   threads 128..255  consumer warpgroup 1  (columns 32..63 of every tile)
//   threads 256..287  producer warp: lane 0 streams 64x64 tiles with TMA
//
// Shared-memory ring: kStages slots, full[] (TMA tx-count) and empty[] (one
// arrival per consumer warpgroup) mbarriers.
// Named barriers (ids 1..4) coordinate the consumers among themselves:
//   2,3  per-warpgroup "everyone finished reading this slot"
//   1    epilogue hand-off WG1 -> WG0 (bar.arrive / bar.sync)
//   4    WG0-internal reduction of the band maximum
//
// nvcc -std=c++17 -O2 -arch=sm_90a -lineinfo -o rownorm_nb rownorm_nb.cu -lcuda
// ----------------------------------------------------------------------------
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

constexpr int kRows = 1024;
constexpr int kCols = 4096;
constexpr int kBand = 64;                         // rows per CTA
constexpr int kTileCols = 64;                     // tile = 64 x 64 fp32 = 16 KB
constexpr int kStages = 4;
constexpr int kNumTiles = kCols / kTileCols;      // 64 tiles per band
constexpr int kWG = 128;
constexpr int kConsumerThreads = 2 * kWG;
constexpr int kProducerWarp = kConsumerThreads / 32;
constexpr int kBlockThreads = kConsumerThreads + 32;
constexpr int kEpilogueThreads = 2 * kWG + 32;    // both consumer warpgroups meet in the epilogue
constexpr uint32_t kTileBytes = kBand * kTileCols * sizeof(float);
constexpr double kTimeoutSeconds = 10.0;

enum NamedBarrier : int { kBarEpilogue = 1, kBarSlotWG0 = 2, kBarSlotWG1 = 3, kBarBandMax = 4 };

struct Smem {
  float tile[kStages][kBand * kTileCols];
  float partial[2][kBand];
  float warpMax[4];
  uint64_t full[kStages];
  uint64_t empty[kStages];
};

// ------------------------------------------------------------ primitives ---
__device__ __forceinline__ uint32_t sptr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mb_init(uint64_t* mb, int n) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(sptr(mb)), "r"(n) : "memory");
}
__device__ __forceinline__ void mb_expect(uint64_t* mb, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(sptr(mb)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mb_signal(uint64_t* mb) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(sptr(mb)) : "memory");
}
__device__ __forceinline__ int mb_poll(uint64_t* mb, uint32_t parity) {
  int ok;
  asm volatile(
      "{\n\t.reg .pred q;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 q, [%1], %2;\n\t"
      "selp.b32 %0, 1, 0, q;\n}\n"
      : "=r"(ok)
      : "r"(sptr(mb)), "r"(parity)
      : "memory");
  return ok;
}
__device__ __forceinline__ void mb_block(uint64_t* mb, uint32_t parity) {
  for (;;)
    if (mb_poll(mb, parity)) break;
}

__device__ __forceinline__ void tma_fetch(void* dst, const CUtensorMap* tm, uint64_t* mb, int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          sptr(dst)),
      "l"((uint64_t)tm), "r"(x), "r"(y), "r"(sptr(mb))
      : "memory");
}

// named barriers: 'count' threads (a multiple of 32) must reach barrier 'id'
__device__ __forceinline__ void nb_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void nb_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// ---------------------------------------------------------------- kernel ---
__global__ void __launch_bounds__(kBlockThreads, 1)
rownorm_kernel(const __grid_constant__ CUtensorMap xmap, float* __restrict__ norms, float* __restrict__ bandMax) {
  extern __shared__ unsigned char dsmem[];
  Smem& sm = *reinterpret_cast<Smem*>((reinterpret_cast<uintptr_t>(dsmem) + 127) & ~uintptr_t(127));

  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int band0 = blockIdx.x * kBand;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mb_init(&sm.full[s], 1);
      mb_init(&sm.empty[s], 2);   // one arrival per consumer warpgroup
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warp == kProducerWarp) {
    // ======================================================== producer ====
    if (lane == 0) {
      for (int kt = 0; kt < kNumTiles; ++kt) {
        const int s = kt % kStages;
        const uint32_t ph = (kt / kStages) & 1;
        mb_block(&sm.empty[s], ph ^ 1);
        mb_expect(&sm.full[s], kTileBytes);
        tma_fetch(sm.tile[s], &xmap, &sm.full[s], kt * kTileCols, band0);
      }
    }
    __syncwarp();
  } else {
    // ======================================================= consumers ====
    const int g = threadIdx.x / kWG;          // consumer warpgroup
    const int t = threadIdx.x % kWG;          // thread inside it
    const int row = t >> 1;                   // 2 threads per row
    const int colOff = g * 32 + (t & 1) * 16; // 16 columns each

    float acc = 0.f;
    for (int kt = 0; kt < kNumTiles; ++kt) {
      const int s = kt % kStages;
      const uint32_t ph = (kt / kStages) & 1;
      mb_block(&sm.full[s], ph);
      const float4* p = reinterpret_cast<const float4*>(&sm.tile[s][row * kTileCols + colOff]);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float4 v = p[i];
        acc = fmaf(v.x, v.x, acc);
        acc = fmaf(v.y, v.y, acc);
        acc = fmaf(v.z, v.z, acc);
        acc = fmaf(v.w, v.w, acc);
      }
      nb_sync(kBarSlotWG0 + g, kWG);          // all of this warpgroup is done with slot s
      if (t == 0) mb_signal(&sm.empty[s]);
    }

    // stage 1: pair reduction, then WG1 hands its partial sums to WG0
    acc += __shfl_xor_sync(0xffffffffu, acc, 1);
    if ((t & 1) == 0) sm.partial[g][row] = acc;

    if (g == 1) {
      nb_arrive(kBarEpilogue, kEpilogueThreads);
    } else {
      nb_sync(kBarEpilogue, kEpilogueThreads);
      float nrm = 0.f;
      if ((t & 1) == 0) {
        nrm = sqrtf(sm.partial[0][row] + sm.partial[1][row]);
        norms[band0 + row] = nrm;
      }
      // stage 2: band maximum inside WG0
      float m = nrm;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
      if (lane == 0) sm.warpMax[warp] = m;
      nb_sync(kBarBandMax, kWG);
      if (t == 0)
        bandMax[blockIdx.x] = fmaxf(fmaxf(sm.warpMax[0], sm.warpMax[1]), fmaxf(sm.warpMax[2], sm.warpMax[3]));
    }
  }
  __syncthreads();
}

// ------------------------------------------------------------------ host ---
#define CHECK_CUDA(expr)                                                                         \
  do {                                                                                           \
    cudaError_t err__ = (expr);                                                                  \
    if (err__ != cudaSuccess) {                                                                  \
      printf("[rownorm] %s failed: %s (line %d)\n", #expr, cudaGetErrorString(err__), __LINE__); \
      return 2;                                                                                  \
    }                                                                                            \
  } while (0)

using EncodeFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                              const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

int main() {
  std::vector<float> hx((size_t)kRows * kCols);
  uint64_t state = 88172645463325252ull;   // xorshift64
  for (auto& v : hx) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    v = (float)((double)(state >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
  }

  float *dx, *dnorm, *dmax;
  CHECK_CUDA(cudaMalloc(&dx, hx.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dnorm, kRows * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dmax, (kRows / kBand) * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(dx, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dnorm, 0, kRows * sizeof(float)));
  CHECK_CUDA(cudaMemset(dmax, 0, (kRows / kBand) * sizeof(float)));

  void* sym = nullptr;
  cudaDriverEntryPointQueryResult qr;
  CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &sym, 12000, cudaEnableDefault, &qr));
  if (qr != cudaDriverEntryPointSuccess) {
    printf("[rownorm] cuTensorMapEncodeTiled unavailable\n");
    return 2;
  }
  EncodeFn encode = reinterpret_cast<EncodeFn>(sym);

  CUtensorMap xmap;
  cuuint64_t gdim[2] = {kCols, kRows};
  cuuint64_t gstride[1] = {kCols * sizeof(float)};
  cuuint32_t box[2] = {kTileCols, kBand};
  cuuint32_t estride[2] = {1, 1};
  if (encode(&xmap, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, dx, gdim, gstride, box, estride,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
    printf("[rownorm] tensor map encode failed\n");
    return 2;
  }

  const size_t smemBytes = sizeof(Smem) + 128;
  CHECK_CUDA(cudaFuncSetAttribute(rownorm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smemBytes));
  rownorm_kernel<<<kRows / kBand, kBlockThreads, smemBytes>>>(xmap, dnorm, dmax);
  CHECK_CUDA(cudaGetLastError());

  // host-side watchdog: a deadlocked kernel must not hang the test forever
  const auto t0 = std::chrono::steady_clock::now();
  cudaError_t q;
  while ((q = cudaStreamQuery(0)) == cudaErrorNotReady) {
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (waited > kTimeoutSeconds) {
      printf("[rownorm] TIMEOUT: kernel still running after %.0f s (deadlock?)\n", kTimeoutSeconds);
      fflush(stdout);
      std::_Exit(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  CHECK_CUDA(q);

  std::vector<float> hn(kRows), hm(kRows / kBand);
  CHECK_CUDA(cudaMemcpy(hn.data(), dnorm, kRows * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hm.data(), dmax, hm.size() * sizeof(float), cudaMemcpyDeviceToHost));

  int okNorm = 0, okMax = 0;
  double worst = 0.0;
  std::vector<double> ref(kRows);
  for (int r = 0; r < kRows; ++r) {
    double s = 0.0;
    for (int c = 0; c < kCols; ++c) s += (double)hx[(size_t)r * kCols + c] * hx[(size_t)r * kCols + c];
    ref[r] = std::sqrt(s);
    const double rel = std::fabs(hn[r] - ref[r]) / ref[r];
    worst = std::fmax(worst, rel);
    if (rel < 1e-4) ++okNorm;
  }
  for (int b = 0; b < kRows / kBand; ++b) {
    double m = 0.0;
    for (int r = b * kBand; r < (b + 1) * kBand; ++r) m = std::fmax(m, ref[r]);
    if (std::fabs(hm[b] - m) / m < 1e-4) ++okMax;
  }
  printf("[rownorm] check norms   : %4d/%4d within 1e-4 (worst rel err %.2e)\n", okNorm, kRows, worst);
  printf("[rownorm] check bandmax : %4d/%4d within 1e-4\n", okMax, kRows / kBand);

  cudaFree(dx);
  cudaFree(dnorm);
  cudaFree(dmax);
  const bool pass = okNorm == kRows && okMax == kRows / kBand;
  printf("[rownorm] %s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
