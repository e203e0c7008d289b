// cluster_mc: 2-CTA thread-block cluster with a multicast-TMA ring and a DSMEM reduction (sm_90a).
//
// X is a 256 x 1024 fp32 matrix; rowsum[i] = sum_j X[i][j].  Cluster c (4 clusters, 8 CTAs)
// owns the band of rows [64c, 64c+64).  The band is streamed as 16 tiles of 64x64 fp32 (16 KB)
// through a 3-stage ring that sits at the same smem offset in both CTAs.  For each tile,
// the producer of CTA r loads rows [32r, 32r+32) of the tile with ONE multicast TMA
// (ctaMask 0b11), so each CTA's slot receives both halves: 8 KB from itself, 8 KB from its peer.
//   full[s]  (in each CTA): 1 arrival (own producer's arrive.expect_tx of 16 KB) + 16 KB of tx
//   empty[s] (in each CTA): 2 arrivals = own consumers + the peer's consumers (a remote
//            mbarrier.arrive through mapa), because every producer writes into both CTAs
// Consumers (warps 0-3): CTA r sums columns [32r, 32r+32) of each tile for all 64 rows.
// Teardown: CTA 1 stores its 64 partial sums into CTA 0's smem (st.shared::cluster), a cluster
// barrier, then CTA 0 adds both halves and writes rowsum.  Warp 4 is the producer warp.
// Build: nvcc -std=c++17 -O2 -arch=sm_90a -lineinfo -o /tmp/x cluster_mc_ok.cu -lcuda
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

static void cmc_check(cudaError_t e, const char* what, int line) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "[cmc] %s -> %s (line %d)\n", what, cudaGetErrorString(e), line);
  std::exit(2);
}
#define CMC_TRY(expr) cmc_check((expr), #expr, __LINE__)

namespace cmc {

constexpr int kRows = 256, kCols = 1024;
constexpr int kClusterSize = 2;
constexpr int kBandRows = 64;                            // rows per cluster
constexpr int kHalfRows = kBandRows / kClusterSize;      // rows in one CTA's TMA box
constexpr int kTileCols = 64;
constexpr int kTiles = kCols / kTileCols;                // 16
constexpr int kStages = 3;
constexpr int kConsumers = 128;                          // warps 0-3
constexpr int kThreads = kConsumers + 32;                // + producer warp
constexpr int kColsPerCta = kTileCols / kClusterSize;    // columns of a tile each CTA sums
constexpr uint32_t kHalfBytes = kHalfRows * kTileCols * sizeof(float);   // 8 KB
constexpr uint32_t kStageBytes = kBandRows * kTileCols * sizeof(float);  // 16 KB
constexpr uint32_t kRingBytes = kStages * kStageBytes;
constexpr uint32_t kInboxBytes = kBandRows * sizeof(float);
constexpr uint32_t kSmemBytes = 1024 + kRingBytes + kInboxBytes + 2 * kStages * sizeof(uint64_t);
constexpr uint16_t kAllCtas = (1u << kClusterSize) - 1u;

static_assert(kRows % kBandRows == 0 && kCols % kTileCols == 0, "tiling");
static_assert(kTiles > kStages, "the ring must wrap");
static_assert(kConsumers == 2 * kBandRows, "two consumer threads per row");
static_assert(kHalfBytes % 128 == 0, "TMA destinations need 128-byte alignment");

// ---- PTX helpers ------------------------------------------------------------------
__device__ __forceinline__ uint32_t sh_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ uint32_t my_cluster_rank() {
  uint32_t r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r;
}
__device__ __forceinline__ uint32_t my_cluster_id() {
  uint32_t c; asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(c)); return c;
}

// Full cluster barrier; every thread of both CTAs takes part.
__device__ __forceinline__ void cluster_barrier() {
  asm volatile("barrier.cluster.arrive.release;" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}

__device__ __forceinline__ void consumers_sync() {
  asm volatile("bar.sync 1, %0;" ::"n"(kConsumers) : "memory");
}

__device__ __forceinline__ void mb_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mb_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mb_expect_and_arrive(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;"
               ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mb_arrive_here(uint32_t bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Arrive on the barrier at the same smem offset in CTA `rank` of this cluster.
__device__ __forceinline__ void mb_arrive_at(uint32_t bar, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(rank));
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote)
               : "memory");
}

// Acquire at cluster scope: the empty barriers are completed by the peer CTA's arrivals.
__device__ __forceinline__ void mb_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n\t.reg .pred q;\n\t"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 q, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, q;\n\t}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  }
}

// One TMA box, written to the same CTA-relative offset in every CTA of ctaMask, each
// copy signalling complete_tx on the barrier at the same offset in that CTA.
__device__ __forceinline__ void tma_multicast_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                                 int x, int y, uint16_t cta_mask) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // nvcc 13 also builds a generic compute_90 image
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar), "h"(cta_mask)
      : "memory");
#else
  (void)dst; (void)map; (void)bar; (void)x; (void)y; (void)cta_mask;
  __trap();
#endif
}

__device__ __forceinline__ void dsmem_store(uint32_t local_addr, uint32_t rank, float v) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local_addr), "r"(rank));
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(remote), "f"(v) : "memory");
}

// ---- kernel -----------------------------------------------------------------------
__global__ void __launch_bounds__(kThreads, 1)
band_rowsum(const __grid_constant__ CUtensorMap map_x, float* __restrict__ rowsum,
            float* __restrict__ partial) {
  extern __shared__ uint8_t smem_raw[];
  // Same kernel, same layout: the aligned ring lands at the same offset in both CTAs,
  // which the multicast relies on.
  uint8_t* smem = smem_raw + ((1024u - (sh_addr(smem_raw) & 1023u)) & 1023u);
  const float* ring = reinterpret_cast<const float*>(smem);
  float* inbox = reinterpret_cast<float*>(smem + kRingBytes);    // CTA 1's partials (CTA 0 only)
  const uint32_t ring_s = sh_addr(smem);
  const uint32_t full_bar = ring_s + kRingBytes + kInboxBytes;
  const uint32_t empty_bar = full_bar + kStages * sizeof(uint64_t);

  const uint32_t rank = my_cluster_rank();
  const uint32_t peer = rank ^ 1u;
  const int band = static_cast<int>(my_cluster_id());
  const int tid = threadIdx.x;
  const int row = tid >> 1;  // consumer threads only: band row handled by this thread pair

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mb_init(full_bar + 8 * s, 1);
      mb_init(empty_bar + 8 * s, kClusterSize);
    }
    mb_init_fence();
  }
  // Setup: nobody multicasts into, or arrives on, a peer whose barriers do not exist yet.
  cluster_barrier();

  float acc = 0.0f;
  if (tid >= kConsumers) {
    // ---------------- producer warp ----------------
    if (tid == kConsumers) {
      for (int t = 0; t < kTiles; ++t) {
        const int s = t % kStages;
        const uint32_t lap = static_cast<uint32_t>(t / kStages) & 1u;
        // the slot is free only when BOTH CTAs' consumers have released it
        mb_wait(empty_bar + 8 * s, lap ^ 1u);
        // my half comes from my TMA, the other half from the peer's multicast
        mb_expect_and_arrive(full_bar + 8 * s, kStageBytes);
        tma_multicast_2d(ring_s + s * kStageBytes + rank * kHalfBytes, &map_x, full_bar + 8 * s,
                         t * kTileCols, band * kBandRows + static_cast<int>(rank) * kHalfRows,
                         kAllCtas);
      }
    }
    __syncwarp();
  } else {
    // ---------------- consumer warps ----------------
    const int col0 = static_cast<int>(rank) * kColsPerCta + (tid & 1) * (kColsPerCta / 2);
    for (int t = 0; t < kTiles; ++t) {
      const int s = t % kStages;
      const uint32_t lap = static_cast<uint32_t>(t / kStages) & 1u;
      mb_wait(full_bar + 8 * s, lap);
      const float4* src = reinterpret_cast<const float4*>(
          ring + s * (kStageBytes / sizeof(float)) + row * kTileCols + col0);
#pragma unroll
      for (int q = 0; q < kColsPerCta / 8; ++q) {
        const float4 v = src[q];
        acc += (v.x + v.y) + (v.z + v.w);
      }
      consumers_sync();  // all 128 consumer threads are done reading slot s
      if (tid == 0) {
        mb_arrive_here(empty_bar + 8 * s);
        mb_arrive_at(empty_bar + 8 * s, peer);
      }
    }
    acc += __shfl_xor_sync(0xffffffffu, acc, 1);
    if ((tid & 1) == 0) {
      partial[(band * kClusterSize + static_cast<int>(rank)) * kBandRows + row] = acc;
      if (rank != 0) dsmem_store(sh_addr(inbox + row), 0, acc);
    }
  }
  // Teardown: remote arrivals and DSMEM stores complete before any CTA exits or reads its inbox.
  cluster_barrier();
  if (rank == 0 && tid < kConsumers && (tid & 1) == 0) {
    rowsum[band * kBandRows + row] = acc + inbox[row];
  }
}

}  // namespace cmc

// ---- host ---------------------------------------------------------------------------
static float x_value(int i, int j) { return static_cast<float>((i * 13 + j * 7) % 17 - 8); }

int main() {
  using namespace cmc;
  CMC_TRY(cudaSetDevice(0));
  int cc_major = 0, cluster_ok = 0;
  CMC_TRY(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, 0));
  CMC_TRY(cudaDeviceGetAttribute(&cluster_ok, cudaDevAttrClusterLaunch, 0));
  if (cc_major != 9 || !cluster_ok) {
    std::fprintf(stderr, "[cmc] needs a Hopper GPU with cluster launch support\n");
    return 2;
  }

  std::vector<float> hx(static_cast<size_t>(kRows) * kCols);
  for (int i = 0; i < kRows; ++i)
    for (int j = 0; j < kCols; ++j) hx[static_cast<size_t>(i) * kCols + j] = x_value(i, j);

  const int num_ctas = (kRows / kBandRows) * kClusterSize;  // 8
  float *dx = nullptr, *d_rowsum = nullptr, *d_partial = nullptr;
  CMC_TRY(cudaMalloc(&dx, hx.size() * sizeof(float)));
  CMC_TRY(cudaMalloc(&d_rowsum, kRows * sizeof(float)));
  CMC_TRY(cudaMalloc(&d_partial, num_ctas * kBandRows * sizeof(float)));
  CMC_TRY(cudaMemcpy(dx, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
  CMC_TRY(cudaMemset(d_rowsum, 0xFF, kRows * sizeof(float)));  // NaN until written
  CMC_TRY(cudaMemset(d_partial, 0xFF, num_ctas * kBandRows * sizeof(float)));

  CUtensorMap map_x;
  std::memset(&map_x, 0, sizeof(map_x));
  const cuuint64_t dims[2] = {kCols, kRows};
  const cuuint64_t pitch[1] = {kCols * sizeof(float)};
  const cuuint32_t box[2] = {kTileCols, kHalfRows};
  const cuuint32_t estride[2] = {1, 1};
  const CUresult cr = cuTensorMapEncodeTiled(&map_x, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, dx, dims, pitch,
                                             box, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                             CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (cr != CUDA_SUCCESS) {
    std::fprintf(stderr, "[cmc] cuTensorMapEncodeTiled failed: %d\n", static_cast<int>(cr));
    return 2;
  }

  CMC_TRY(cudaFuncSetAttribute(band_rowsum, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(kSmemBytes)));
  cudaStream_t stream;
  CMC_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim = {static_cast<unsigned>(kClusterSize), 1u, 1u};
  cudaLaunchConfig_t lc = {};
  lc.gridDim = dim3(num_ctas, 1, 1);
  lc.blockDim = dim3(kThreads, 1, 1);
  lc.dynamicSmemBytes = kSmemBytes;
  lc.stream = stream;
  lc.attrs = attr;
  lc.numAttrs = 1;
  CMC_TRY(cudaLaunchKernelEx(&lc, band_rowsum, map_x, d_rowsum, d_partial));

  // Watchdog: a CTA stuck on an mbarrier keeps the whole grid alive forever.
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t st = cudaStreamQuery(stream);
    if (st == cudaSuccess) break;
    if (st != cudaErrorNotReady) {
      std::fprintf(stderr, "[cmc] kernel error: %s\n", cudaGetErrorString(st));
      return 2;
    }
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) {
      std::printf("[cmc] TIMEOUT: cluster kernel has not finished after 10 s (stuck barrier?)\n");
      std::fflush(stdout);
      std::_Exit(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  std::vector<float> h_rowsum(kRows), h_partial(static_cast<size_t>(num_ctas) * kBandRows);
  CMC_TRY(cudaMemcpy(h_rowsum.data(), d_rowsum, kRows * sizeof(float), cudaMemcpyDeviceToHost));
  CMC_TRY(cudaMemcpy(h_partial.data(), d_partial, h_partial.size() * sizeof(float),
                     cudaMemcpyDeviceToHost));

  // Reference: integer-valued data, every sum is exact in fp32.
  int bad_rows = 0, bad_parts = 0, first_bad = -1;
  for (int i = 0; i < kRows; ++i) {
    float half_ref[kClusterSize] = {0.0f, 0.0f};
    for (int j = 0; j < kCols; ++j) half_ref[(j % kTileCols) / kColsPerCta] += x_value(i, j);
    const int b = i / kBandRows, r_in_band = i % kBandRows;
    for (int r = 0; r < kClusterSize; ++r) {
      if (!(h_partial[static_cast<size_t>(b * kClusterSize + r) * kBandRows + r_in_band] == half_ref[r]))
        ++bad_parts;
    }
    if (!(h_rowsum[i] == half_ref[0] + half_ref[1])) {
      if (first_bad < 0) first_bad = i;
      ++bad_rows;
    }
  }
  const int n_parts = num_ctas * kBandRows;
  const bool pass = bad_rows == 0 && bad_parts == 0;
  std::printf("[cmc] rowsum %d/%d exact, per-CTA partials %d/%d exact, first bad row %d -> %s\n",
              kRows - bad_rows, kRows, n_parts - bad_parts, n_parts, first_bad,
              pass ? "CLUSTER EXCHANGE OK" : "CLUSTER EXCHANGE BROKEN");

  CMC_TRY(cudaStreamDestroy(stream));
  CMC_TRY(cudaFree(dx)); CMC_TRY(cudaFree(d_rowsum)); CMC_TRY(cudaFree(d_partial));
  return pass ? 0 : 1;
}
