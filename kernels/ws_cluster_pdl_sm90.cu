// ws_cluster_pdl_sm90.cu — a thread-block cluster and a programmatic dependent launch (Hopper, sm_90a).
//
// Two kernels, launched one after the other in one stream:
//   rmsnorm_cluster_kernel (the primary grid, clusters of 2 CTAs):
//     R[r]    = rsqrt(mean(X[r, :]^2) + eps)   and   Y[r, c] = X[r, c] * R[r]
//     Each row is split over the two CTAs of a cluster: CTA rank q owns columns q*HALF ..
//     q*HALF+HALF-1. Each CTA sums the squares of its half of every row and hands those partial
//     sums to its peer through distributed shared memory (st.shared::cluster, then a remote
//     mbarrier arrive with release at cluster scope), so both have the whole row's sum.
//   scale_kernel (the dependent grid, programmatic stream serialization):
//     Z[r, c] = Y[r, c] * G[c]
//     Its prologue loads G before griddepcontrol.wait; it reads Y only after the wait.
//
// X, Y, Z: [NORM_ROWS, NORM_COLS] fp32 row-major; G: [NORM_COLS]. A primary CTA is 160 threads:
//   warps 0-3 = the consumer warpgroup: waits on full, reads its half-tile into registers,
//               arrives on empty, reduces each row, exchanges the row sums with the peer CTA,
//               writes Y;
//   warp 4    = the producer warp: one elected lane streams TILE_ROWS x HALF half-tiles of X by
//               TMA into a ring of STAGES stages (full/empty mbarriers).
// Cluster c handles row tiles c, c + NORM_CLUSTERS, ...
// The worksheet for this program: kernels/README.md, section ws_cluster_pdl_sm90.cu.
//
// Build: nvcc -std=c++17 -O2 -lineinfo -gencode=arch=compute_90a,code=sm_90a
//             -I oracle/include kernels/ws_cluster_pdl_sm90.cu -o cpdl      (./cpdl N replays seed N)
#include <cuda.h>  // CUtensorMap and the driver enums only: the encoder comes from the runtime
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "wscheck.h"

// ---- knobs (all overridable with -D) ---------------------------------------------------------
#ifndef NORM_ROWS
#define NORM_ROWS 64
#endif
#ifndef NORM_COLS
#define NORM_COLS 128
#endif
#ifndef TILE_ROWS
#define TILE_ROWS 16
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef NORM_CLUSTERS
#define NORM_CLUSTERS 1  // clusters of the primary grid (2 CTAs each); capped at NUM_TILES
#endif
#ifndef DEP_ROWS
#define DEP_ROWS 16  // rows of Z per CTA of the dependent grid
#endif
#ifndef NORM_EPS
#define NORM_EPS 1e-6f
#endif

#define CLUSTER_SIZE 2                             // CTAs per cluster: one per half of a row
#define HALF (NORM_COLS / CLUSTER_SIZE)            // columns per CTA (the TMA box width)
#define NUM_TILES (NORM_ROWS / TILE_ROWS)
#define CONSUMER_THREADS 128                       // one warpgroup: warps 0-3
#define PRODUCER_WARP 4
#define NUM_THREADS (CONSUMER_THREADS + 32)        // + the producer warp
#define ROWS_PER_WARP (TILE_ROWS / 4)              // consumer warp w owns these rows of a tile
#define COLS_PER_LANE (HALF / 32)                  // lane l owns columns l, l+32, ... of the half
#define TILE_BYTES (TILE_ROWS * HALF * 4)
#define GRID_CLUSTERS (NORM_CLUSTERS < NUM_TILES ? NORM_CLUSTERS : NUM_TILES)

static_assert(NORM_ROWS % TILE_ROWS == 0, "NORM_ROWS must be a multiple of TILE_ROWS");
static_assert(TILE_ROWS % 4 == 0 && ROWS_PER_WARP <= 32, "TILE_ROWS must split over the 4 consumer warps, "
              "at most one row sum per lane");
static_assert(NORM_COLS % (32 * CLUSTER_SIZE) == 0, "each CTA's half must split over the 32 lanes");
static_assert(HALF <= 256 && TILE_ROWS <= 256, "a TMA box is at most 256 elements per dimension");
static_assert(NORM_COLS <= 1024, "the dependent grid has one thread per column");
static_assert(NORM_ROWS % DEP_ROWS == 0, "NORM_ROWS must be a multiple of DEP_ROWS");
static_assert(STAGES >= 1, "the ring needs a stage");
static_assert(ROWS_PER_WARP * COLS_PER_LANE <= 128, "tile too large for the consumer's registers");
static_assert(STAGES * TILE_BYTES + 2 * TILE_ROWS * 4 + (2 * STAGES + 2) * 8 <= 48 * 1024,
              "static shared memory is at most 48 KiB");

// ---- primitives: one tiny function per PTX instruction ----------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// The lane from %laneid: a value the compiler cannot bound, so it adds it into the smem index
// instead of packing warp and lane with prmt (a byte permute the CPU emulator does not run).
__device__ __forceinline__ int lane_id() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%laneid;\n" : "=r"(r));
  return (int)r;
}

__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

__device__ __forceinline__ uint32_t cluster_id_x() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
  return r;
}

__device__ __forceinline__ uint32_t cluster_count_x() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(r));
  return r;
}

// The shared::cluster address of the same shared variable in CTA `rank` of the cluster.
__device__ __forceinline__ uint32_t mapa_shared(uint32_t addr, uint32_t rank) {
  uint32_t d;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(d) : "r"(addr), "r"(rank));
  return d;
}

__device__ __forceinline__ void st_cluster_f32(uint32_t cluster_addr, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(cluster_addr), "f"(v) : "memory");
}

__device__ __forceinline__ void cluster_arrive() {  // release: this thread's writes, cluster-wide
  asm volatile("barrier.cluster.arrive.release;\n" ::: "memory");
}

__device__ __forceinline__ void cluster_wait() {  // acquire: every arrived thread's writes
  asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory");
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

// An arrive on a barrier of a peer CTA (a shared::cluster address from mapa_shared). Its release
// at cluster scope is what makes this thread's earlier st.shared::cluster stores into that CTA
// visible to the peer's threads that acquire the phase; a .cta release covers the own CTA only.
__device__ __forceinline__ void mbar_arrive_remote(uint32_t cluster_bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_bar) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t phase) {
  uint32_t done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(bar)), "r"(phase) : "memory");
  }
}

// A wait on a barrier that the peer CTA's threads arrive on: acquire at cluster scope.
__device__ __forceinline__ void mbar_wait_cluster(uint64_t* bar, uint32_t phase) {
  uint32_t done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(bar)), "r"(phase) : "memory");
  }
}

__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
      ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}

__device__ __forceinline__ uint32_t elect_one_sync() {  // 1 on exactly one lane of a converged warp
  uint32_t pred = 0;
  asm volatile("{\n .reg .b32 rx;\n .reg .pred px;\n elect.sync rx|px, 0xffffffff;\n selp.u32 %0, 1, 0, px;\n}\n"
               : "=r"(pred));
  return pred;
}

// Programmatic dependent launch. launch_dependents lets the dependent grid be scheduled (no
// memory ordering); wait returns once the grids before this one have completed and their memory
// operations are visible.
__device__ __forceinline__ void griddep_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

__device__ __forceinline__ void griddep_wait() {
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

// ---- the primary kernel ----------------------------------------------------------------------
__global__ void __launch_bounds__(NUM_THREADS, 1)
rmsnorm_cluster_kernel(const __grid_constant__ CUtensorMap x_map, float* __restrict__ y) {
  __shared__ alignas(128) float stage_tile[STAGES][TILE_ROWS * HALF];  // X half-tiles, TMA-written
  __shared__ float xchg[2][TILE_ROWS];                // the peer's partial row sums, written by the peer
  __shared__ alignas(8) uint64_t full[STAGES];        // TMA landed in stage s
  __shared__ alignas(8) uint64_t empty[STAGES];       // consumers done with stage s
  __shared__ alignas(8) uint64_t xfull[2];            // the peer's row sums are in xchg[b]

  const int warp = threadIdx.x / 32;
  const int lane = lane_id();
  const uint32_t rank = cluster_ctarank();  // which half of the columns this CTA owns
  const uint32_t peer = rank ^ 1;
  const int cluster = (int)cluster_id_x();
  const int nclusters = (int)cluster_count_x();

  // Barrier init: CTA thread 0, top level, before any role branch.
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);                  // one arrival: the producer's arrive_expect_tx (+ tx bytes)
      mbar_init(&empty[s], CONSUMER_THREADS);  // every consumer thread arrives once per use
    }
    for (int b = 0; b < 2; ++b) mbar_init(&xfull[b], CONSUMER_THREADS);  // the peer's consumer threads
    fence_barrier_init();
  }
  // Both CTAs' barriers are initialised before any thread of the cluster uses them: its own CTA's
  // (full, empty) or, by a remote arrive, its peer's (xfull).
  cluster_arrive();
  cluster_wait();

  if (warp == PRODUCER_WARP) {
    // ROLE producer: one elected lane of warp 4 runs the ring.
    if (elect_one_sync()) {
      int i = 0;  // this cluster's tile counter: stage i % STAGES, round i / STAGES
      for (int t = cluster; t < NUM_TILES; t += nclusters, ++i) {
        const int s = i % STAGES;
        const uint32_t phase = (i / STAGES) & 1;
        mbar_wait(&empty[s], phase ^ 1);  // starts on 1: a fresh barrier's "previous phase" is complete
        mbar_arrive_expect_tx(&full[s], TILE_BYTES);
        tma_load_2d(stage_tile[s], &x_map, &full[s], (int)rank * HALF, t * TILE_ROWS);
      }
    }
  } else {
    // ROLE consumer: warps 0-3; warp w owns rows w*ROWS_PER_WARP.. of each tile.
    int i = 0;
    for (int t = cluster; t < NUM_TILES; t += nclusters, ++i) {
      const int s = i % STAGES;
      const uint32_t phase = (i / STAGES) & 1;
      const int b = i % 2;                    // exchange buffer
      const uint32_t xphase = (i / 2) & 1;    // its phase
      mbar_wait(&full[s], phase);  // starts on 0: blocks until the first TMA lands

      float x[ROWS_PER_WARP][COLS_PER_LANE];
#pragma unroll
      for (int rr = 0; rr < ROWS_PER_WARP; ++rr)
#pragma unroll
        for (int j = 0; j < COLS_PER_LANE; ++j)
          x[rr][j] = stage_tile[s][(warp * ROWS_PER_WARP + rr) * HALF + lane + 32 * j];
      mbar_arrive(&empty[s]);  // the half-tile is in registers: stage s may be refilled

      float ss[ROWS_PER_WARP];  // this CTA's half of each row's sum of squares, in every lane
#pragma unroll
      for (int rr = 0; rr < ROWS_PER_WARP; ++rr) {
        float a = 0.f;
#pragma unroll
        for (int j = 0; j < COLS_PER_LANE; ++j) a += x[rr][j] * x[rr][j];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
        ss[rr] = a;
      }

      // Hand the half sums to the peer: lane rr writes row rr of this warp into the peer's
      // xchg[b], then every consumer thread arrives on the peer's xfull[b]. That buffer held tile
      // i - 2's sums; every peer consumer read them before it arrived on this CTA's xfull for tile
      // i - 1, which this thread waited for: it is free (kernels/README.md, HANDOFF H4).
#pragma unroll
      for (int rr = 0; rr < ROWS_PER_WARP; ++rr)
        if (lane == rr) st_cluster_f32(mapa_shared(smem_u32(&xchg[b][warp * ROWS_PER_WARP + rr]), peer), ss[rr]);
      mbar_arrive_remote(mapa_shared(smem_u32(&xfull[b]), peer));

      mbar_wait_cluster(&xfull[b], xphase);  // the peer's half sums of this tile are in xchg[b]
#pragma unroll
      for (int rr = 0; rr < ROWS_PER_WARP; ++rr) {
        const int row = warp * ROWS_PER_WARP + rr;
        const float rstd = rsqrtf((ss[rr] + xchg[b][row]) / NORM_COLS + NORM_EPS);
#pragma unroll
        for (int j = 0; j < COLS_PER_LANE; ++j)
          y[(size_t)(t * TILE_ROWS + row) * NORM_COLS + rank * HALF + lane + 32 * j] = x[rr][j] * rstd;
      }
    }
    // The dependent grid may be scheduled once every CTA got here or exited. This orders no
    // memory (the dependent's griddepcontrol.wait waits for this whole grid), so one thread of
    // the CTA is enough.
    if (threadIdx.x == 0) griddep_launch_dependents();
  }
  // No CTA exits while its peer may still reach its shared memory.
  cluster_arrive();
  cluster_wait();
}

// ---- the dependent kernel --------------------------------------------------------------------
__global__ void __launch_bounds__(NORM_COLS) scale_kernel(const float* y, const float* __restrict__ g,
                                                         float* __restrict__ z) {
  const int c = threadIdx.x;
  const float gc = g[c];  // prologue: nothing the primary grid writes
  griddep_wait();         // the primary grid has completed: Y is written and visible
  for (int rr = 0; rr < DEP_ROWS; ++rr) {
    const size_t at = (size_t)(blockIdx.x * DEP_ROWS + rr) * NORM_COLS + c;
    z[at] = y[at] * gc;
  }
}

// ---- host ------------------------------------------------------------------------------------
#define CUDA_CHECK(call)                                                                        \
  do {                                                                                          \
    cudaError_t err_ = (call);                                                                  \
    if (err_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "CUDA error: %s (%d) at %s:%d\n", cudaGetErrorString(err_), (int)err_, \
                   __FILE__, __LINE__);                                                         \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

// cuTensorMapEncodeTiled from the driver, through the runtime (no -lcuda).
inline PFN_cuTensorMapEncodeTiled_v12000 get_encode_tiled() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
  if (fn == nullptr || q != cudaDriverEntryPointSuccess) {
    std::fprintf(stderr, "CUDA error: cuTensorMapEncodeTiled not found (%d) at %s:%d\n", (int)q, __FILE__, __LINE__);
    std::exit(1);
  }
  return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
}

// X [NORM_ROWS, NORM_COLS] fp32 row-major, box = HALF x TILE_ROWS, no swizzle.
inline CUtensorMap make_half_tile_map(float* base) {
  CUtensorMap m;
  const cuuint64_t dims[2] = {(cuuint64_t)NORM_COLS, (cuuint64_t)NORM_ROWS};  // innermost first
  const cuuint64_t strides[1] = {(cuuint64_t)NORM_COLS * sizeof(float)};     // bytes, dims 1..rank-1
  const cuuint32_t box[2] = {(cuuint32_t)HALF, (cuuint32_t)TILE_ROWS};
  const cuuint32_t estr[2] = {1, 1};
  CUresult r = get_encode_tiled()(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, base, dims, strides, box, estr,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "CUDA error: cuTensorMapEncodeTiled failed (%d) at %s:%d\n", (int)r, __FILE__, __LINE__);
    std::exit(1);
  }
  return m;
}

// The primary: 2 * GRID_CLUSTERS CTAs of NUM_THREADS threads in clusters of CLUSTER_SIZE.
cudaError_t launch_primary(const CUtensorMap& x_map, float* d_y, cudaStream_t stream = 0) {
  cudaLaunchAttribute cluster_attr[1];
  cluster_attr[0].id = cudaLaunchAttributeClusterDimension;
  cluster_attr[0].val.clusterDim.x = CLUSTER_SIZE;
  cluster_attr[0].val.clusterDim.y = 1;
  cluster_attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(CLUSTER_SIZE * GRID_CLUSTERS);
  cfg.blockDim = dim3(NUM_THREADS);
  cfg.stream = stream;
  cfg.attrs = cluster_attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, rmsnorm_cluster_kernel, x_map, d_y);
}

// The dependent, launched right after the primary in the same stream with programmatic stream
// serialization: it may begin once every primary CTA has executed griddepcontrol.launch_dependents
// or exited.
cudaError_t launch_dependent(const float* d_y, const float* d_g, float* d_z, cudaStream_t stream = 0) {
  cudaLaunchAttribute pdl_attr[1];
  pdl_attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl_attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(NORM_ROWS / DEP_ROWS);
  cfg.blockDim = dim3(NORM_COLS);
  cfg.stream = stream;
  cfg.attrs = pdl_attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, scale_kernel, d_y, d_g, d_z);
}

#ifndef WS_NO_MAIN
int main(int argc, char** argv) {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  if (prop.major != 9) {
    char why[96];
    std::snprintf(why, sizeof why, "needs sm_90a (Hopper); this device is sm_%d%d", prop.major, prop.minor);
    wscheck::skip(why);
  }

  // Fresh inputs every run; a seed on the command line replays one.
  const unsigned seed = argc > 1 ? (unsigned)std::strtoul(argv[1], nullptr, 10) : std::random_device{}();
  std::printf("seed=%u\n", seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mag(0.125f, 2.0f);  // |x| >= 0.125: never zero
  std::uniform_real_distribution<float> gain(0.5f, 1.5f);
  const size_t n = (size_t)NORM_ROWS * NORM_COLS;
  std::vector<float> hx(n), hy(n), hz(n), hg(NORM_COLS), ref_y(n), ref_z(n);
  for (size_t k = 0; k < n; ++k) hx[k] = (rng() & 1 ? 1.f : -1.f) * mag(rng);
  for (int c = 0; c < NORM_COLS; ++c) hg[c] = gain(rng);

  float *dx, *dy, *dz, *dg;
  CUDA_CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dz, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dg, NORM_COLS * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dg, hg.data(), NORM_COLS * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dy, 0xFF, n * sizeof(float)));  // NaN poison: an unwritten element shows as NaN
  CUDA_CHECK(cudaMemset(dz, 0xFF, n * sizeof(float)));

  const CUtensorMap x_map = make_half_tile_map(dx);
  std::printf("rows=%d cols=%d tile_rows=%d stages=%d tiles=%d clusters=%d (x%d CTAs) dep_rows=%d\n", NORM_ROWS,
              NORM_COLS, TILE_ROWS, STAGES, NUM_TILES, GRID_CLUSTERS, CLUSTER_SIZE, DEP_ROWS);
  CUDA_CHECK(launch_primary(x_map, dy));
  CUDA_CHECK(launch_dependent(dy, dg, dz));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(hy.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hz.data(), dz, n * sizeof(float), cudaMemcpyDeviceToHost));

  // wsreduce: keep begin (the reference and its check: a reduction may not change them)
  // CPU reference in double.
  for (int r = 0; r < NORM_ROWS; ++r) {
    double ss = 0;
    for (int c = 0; c < NORM_COLS; ++c) ss += (double)hx[(size_t)r * NORM_COLS + c] * hx[(size_t)r * NORM_COLS + c];
    const double rs = 1.0 / std::sqrt(ss / NORM_COLS + (double)NORM_EPS);
    for (int c = 0; c < NORM_COLS; ++c) {
      const double yv = hx[(size_t)r * NORM_COLS + c] * rs;
      ref_y[(size_t)r * NORM_COLS + c] = (float)yv;
      ref_z[(size_t)r * NORM_COLS + c] = (float)(yv * hg[c]);
    }
  }
  wscheck::compare(hy.data(), ref_y.data(), NORM_ROWS, NORM_COLS, 1e-5, 1e-4, "Y");
  wscheck::compare(hz.data(), ref_z.data(), NORM_ROWS, NORM_COLS, 1e-5, 1e-4, "Z");
  // wsreduce: keep end

  CUDA_CHECK(cudaFree(dx));
  CUDA_CHECK(cudaFree(dy));
  CUDA_CHECK(cudaFree(dz));
  CUDA_CHECK(cudaFree(dg));
  return wscheck::exit_code();
}
#endif  // WS_NO_MAIN
