// tma_pipeline_sm90.cu — the simplest honest warp-specialized program (Hopper, sm_90a).
//
// Y[r, c] = X[r, c] * rsqrt(mean(X[r, :]^2) + eps)   (RMSNorm, no weight)
// R[r]    = rsqrt(mean(X[r, :]^2) + eps)             (the per-row result, checked on its own)
//
// X, Y: [PIPE_ROWS, PIPE_COLS] fp32 row-major. The CTA is two warpgroups (256 threads):
//   warpgroup 0 = producer: warp 0, one elected lane, streams TILE_ROWS x PIPE_COLS row tiles
//                 of X by TMA into a ring of STAGES stages (full/empty mbarriers); warps 1-3
//                 only give their registers back (setmaxnreg needs the whole warpgroup) and exit.
//   warpgroup 1 = consumer (128 threads): waits on full, reads the tile into registers,
//                 arrives on empty, computes the row reduction and the elementwise result into
//                 a staging tile (STORE_BUFS buffers), and one thread stores it by TMA.
// Each CTA handles tiles blockIdx.x, blockIdx.x + gridDim.x, ... (grid < tiles: the ring wraps).
// The worksheet for this kernel: kernels/README.md, section tma_pipeline_sm90.cu.
//
// Build: nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -lineinfo
//             -I oracle/include kernels/tma_pipeline_sm90.cu -o pipe
#include <cuda.h>  // CUtensorMap and the driver enums only: no -lcuda, the encoder comes from the runtime
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "wscheck.h"

// ---- knobs (all overridable with -D) ---------------------------------------------------------
#ifndef PIPE_ROWS
#define PIPE_ROWS 4096
#endif
#ifndef PIPE_COLS
#define PIPE_COLS 256
#endif
#ifndef TILE_ROWS
#define TILE_ROWS 32
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef STORE_BUFS
#define STORE_BUFS 2
#endif
#ifndef PIPE_GRID
#define PIPE_GRID 16  // CTAs; capped at NUM_TILES. Fixed (not #SMs) so a run is the same everywhere
#endif
#ifndef PIPE_EPS
#define PIPE_EPS 1e-6f
#endif

#define NUM_TILES (PIPE_ROWS / TILE_ROWS)
#define CONSUMER_THREADS 128                      // one warpgroup
#define NUM_THREADS (128 + CONSUMER_THREADS)      // producer warpgroup + consumer warpgroup
#define ROWS_PER_WARP (TILE_ROWS / 4)             // each consumer warp owns these rows of a tile
#define COLS_PER_LANE (PIPE_COLS / 32)            // lane l owns columns l, l+32, l+64, ...
#define TILE_BYTES (TILE_ROWS * PIPE_COLS * 4)
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 40   // setmaxnreg.dec target of the producer warpgroup
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 232  // setmaxnreg.inc target of the consumer warpgroup
#endif

static_assert(PIPE_ROWS % TILE_ROWS == 0, "PIPE_ROWS must be a multiple of TILE_ROWS");
static_assert(TILE_ROWS % 4 == 0, "TILE_ROWS must split over the 4 consumer warps");
static_assert(PIPE_COLS % 32 == 0, "PIPE_COLS must split over the 32 lanes");
static_assert(PIPE_COLS <= 256 && TILE_ROWS <= 256, "a TMA box is at most 256 elements per dimension");
static_assert(STAGES >= 1 && STORE_BUFS >= 1, "need at least one stage and one staging buffer");
static_assert(ROWS_PER_WARP * COLS_PER_LANE <= 128, "tile too large for the consumer's registers");
static_assert(PRODUCER_REGS % 8 == 0 && CONSUMER_REGS % 8 == 0 && PRODUCER_REGS >= 24 && CONSUMER_REGS <= 256,
              "setmaxnreg takes a multiple of 8 in [24, 256]");

// ---- shared-memory layout (offsets from a 1024-byte-aligned base) ----------------------------
#define SMEM_STAGE_OFF 0                                          // STAGES x [TILE_ROWS][PIPE_COLS] fp32
#define SMEM_OUT_OFF (SMEM_STAGE_OFF + STAGES * TILE_BYTES)       // STORE_BUFS x [TILE_ROWS][PIPE_COLS] fp32
#define SMEM_BAR_OFF (SMEM_OUT_OFF + STORE_BUFS * TILE_BYTES)     // full[STAGES], empty[STAGES]: uint64 each
#define SMEM_USED (SMEM_BAR_OFF + 2 * STAGES * 8)
#define SMEM_BYTES (SMEM_USED + 1024)                             // + slack to align the base to 1024
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory over the sm_90 per-block limit (227 KiB)");

// ---- primitives: one tiny function per PTX instruction ----------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.shared::cta.b64 state, [%0];\n}\n"
               ::"r"(smem_u32(bar)) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n"
               ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t phase) {
  uint32_t done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(bar)), "r"(phase) : "memory");
  }
}

__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
      ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}

__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(src)), "r"(c0), "r"(c1) : "memory");
}

__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void tma_store_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

template <int N>
__device__ __forceinline__ void tma_store_wait_read() {  // <= N groups still reading their smem
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

template <int N>
__device__ __forceinline__ void tma_store_wait() {  // <= N groups not yet complete (writes visible)
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

template <int N>
__device__ __forceinline__ void warpgroup_reg_alloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

template <int N>
__device__ __forceinline__ void warpgroup_reg_dealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

__device__ __forceinline__ void named_barrier_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

__device__ __forceinline__ uint32_t elect_one_sync() {  // 1 on exactly one lane of a converged warp
  uint32_t pred = 0;
  asm volatile("{\n .reg .b32 rx;\n .reg .pred px;\n elect.sync rx|px, 0xffffffff;\n selp.u32 %0, 1, 0, px;\n}\n"
               : "=r"(pred));
  return pred;
}

// ---- the kernel ------------------------------------------------------------------------------
__global__ void __launch_bounds__(NUM_THREADS, 1)
tma_pipeline_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap y_map,
                    float* __restrict__ rstd_out) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  float* stage_tile = reinterpret_cast<float*>(smem + SMEM_STAGE_OFF);  // [STAGES][TILE_ROWS][PIPE_COLS]
  float* out_tile = reinterpret_cast<float*>(smem + SMEM_OUT_OFF);      // [STORE_BUFS][TILE_ROWS][PIPE_COLS]
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + SMEM_BAR_OFF);    // TMA landed in stage s
  uint64_t* empty = full + STAGES;                                       // consumers done with stage s

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int wg = threadIdx.x / 128;

  // Barrier init: CTA thread 0, top level, before any role branch.
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);                  // one arrival: the producer's arrive_expect_tx (+ tx bytes)
      mbar_init(&empty[s], CONSUMER_THREADS);  // every consumer thread arrives once per use
    }
    fence_barrier_init();
  }
  __syncthreads();

  // ROLE producer: warpgroup 0 gives registers back; warp 0's elected lane runs the ring.
  if (wg == 0) {
    warpgroup_reg_dealloc<PRODUCER_REGS>();
    if (warp == 0 && elect_one_sync()) {
      int i = 0;  // this CTA's tile counter: stage i % STAGES, round i / STAGES
      for (int t = blockIdx.x; t < NUM_TILES; t += gridDim.x, ++i) {
        const int s = i % STAGES;
        const uint32_t phase = (i / STAGES) & 1;
        mbar_wait(&empty[s], phase ^ 1);  // starts on 1: a fresh barrier's "previous phase" is complete
        mbar_arrive_expect_tx(&full[s], TILE_BYTES);
        tma_load_2d(stage_tile + s * (TILE_ROWS * PIPE_COLS), &x_map, &full[s], 0, t * TILE_ROWS);
      }
    }
  }

  // ROLE consumer: warpgroup 1 (warps 4-7); consumer warp cw owns rows cw*ROWS_PER_WARP.. of each tile.
  if (wg == 1) {
    warpgroup_reg_alloc<CONSUMER_REGS>();
    const int ctid = threadIdx.x - 128;   // 0..127 inside the consumer warpgroup
    const int cw = warp - 4;              // consumer warp 0..3
    const bool store_thread = ctid == 0;  // issues, commits and waits every TMA store (groups are per thread)
    int i = 0;
    for (int t = blockIdx.x; t < NUM_TILES; t += gridDim.x, ++i) {
      const int s = i % STAGES;
      const uint32_t phase = (i / STAGES) & 1;
      const int b = i % STORE_BUFS;
      mbar_wait(&full[s], phase);  // starts on 0: blocks until the first TMA lands

      float x[ROWS_PER_WARP][COLS_PER_LANE];
      const float* tile = stage_tile + s * (TILE_ROWS * PIPE_COLS);
#pragma unroll
      for (int rr = 0; rr < ROWS_PER_WARP; ++rr)
#pragma unroll
        for (int j = 0; j < COLS_PER_LANE; ++j)
          x[rr][j] = tile[(cw * ROWS_PER_WARP + rr) * PIPE_COLS + lane + 32 * j];
      mbar_arrive(&empty[s]);  // the tile is in registers: stage s may be refilled

      float rstd[ROWS_PER_WARP];
#pragma unroll
      for (int rr = 0; rr < ROWS_PER_WARP; ++rr) {
        float ss = 0.f;
#pragma unroll
        for (int j = 0; j < COLS_PER_LANE; ++j) ss += x[rr][j] * x[rr][j];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        rstd[rr] = rsqrtf(ss / PIPE_COLS + PIPE_EPS);
        if (lane == 0) rstd_out[t * TILE_ROWS + cw * ROWS_PER_WARP + rr] = rstd[rr];
      }

      // Staging buffer b was last read by the store issued STORE_BUFS tiles ago: drain it first.
      if (store_thread) tma_store_wait_read<STORE_BUFS - 1>();
      named_barrier_sync(1, CONSUMER_THREADS);  // everyone learns buffer b is free

      float* out = out_tile + b * (TILE_ROWS * PIPE_COLS);
#pragma unroll
      for (int rr = 0; rr < ROWS_PER_WARP; ++rr)
#pragma unroll
        for (int j = 0; j < COLS_PER_LANE; ++j)
          out[(cw * ROWS_PER_WARP + rr) * PIPE_COLS + lane + 32 * j] = x[rr][j] * rstd[rr];
      fence_proxy_async();                      // generic-proxy smem writes -> visible to the TMA engine
      named_barrier_sync(1, CONSUMER_THREADS);  // all 128 threads' writes are fenced

      if (store_thread) {
        tma_store_2d(&y_map, out, 0, t * TILE_ROWS);
        tma_store_commit();
      }
    }
    if (store_thread) tma_store_wait<0>();  // every store complete before the CTA (and its smem) goes away
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

// A [rows, cols] fp32 row-major tensor, box = TILE_ROWS x PIPE_COLS, no swizzle.
inline CUtensorMap make_row_tile_map(float* base, int rows, int cols) {
  CUtensorMap m;
  const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};  // innermost first
  const cuuint64_t strides[1] = {(cuuint64_t)cols * sizeof(float)};  // bytes, dims 1..rank-1
  const cuuint32_t box[2] = {(cuuint32_t)PIPE_COLS, (cuuint32_t)TILE_ROWS};
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

// The launch: grid = min(PIPE_GRID, NUM_TILES) CTAs of NUM_THREADS threads, SMEM_BYTES dynamic smem.
cudaError_t launch_tma_pipeline(const CUtensorMap& x_map, const CUtensorMap& y_map, float* d_rstd,
                                cudaStream_t stream = 0) {
  cudaError_t e = cudaFuncSetAttribute(tma_pipeline_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
  if (e != cudaSuccess) return e;
  const int grid = PIPE_GRID < NUM_TILES ? PIPE_GRID : NUM_TILES;
  tma_pipeline_kernel<<<grid, NUM_THREADS, SMEM_BYTES, stream>>>(x_map, y_map, d_rstd);
  return cudaGetLastError();
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
  const size_t n = (size_t)PIPE_ROWS * PIPE_COLS;
  std::vector<float> hx(n), hy(n), hr(PIPE_ROWS), ref_y(n), ref_r(PIPE_ROWS);
  for (size_t k = 0; k < n; ++k) hx[k] = (rng() & 1 ? 1.f : -1.f) * mag(rng);

  float *dx, *dy, *dr;
  CUDA_CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dr, PIPE_ROWS * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dy, 0xFF, n * sizeof(float)));  // NaN poison: an unwritten element shows as NaN
  CUDA_CHECK(cudaMemset(dr, 0xFF, PIPE_ROWS * sizeof(float)));

  const CUtensorMap x_map = make_row_tile_map(dx, PIPE_ROWS, PIPE_COLS);
  const CUtensorMap y_map = make_row_tile_map(dy, PIPE_ROWS, PIPE_COLS);
  std::printf("rows=%d cols=%d tile_rows=%d stages=%d store_bufs=%d tiles=%d grid=%d smem=%d\n", PIPE_ROWS,
              PIPE_COLS, TILE_ROWS, STAGES, STORE_BUFS, NUM_TILES, PIPE_GRID < NUM_TILES ? PIPE_GRID : NUM_TILES,
              SMEM_BYTES);
  CUDA_CHECK(launch_tma_pipeline(x_map, y_map, dr));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(hy.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hr.data(), dr, PIPE_ROWS * sizeof(float), cudaMemcpyDeviceToHost));

  // wsreduce: keep begin (the reference and its check: a reduction may not change them)
  // CPU reference in double.
  for (int r = 0; r < PIPE_ROWS; ++r) {
    double ss = 0;
    for (int c = 0; c < PIPE_COLS; ++c) ss += (double)hx[(size_t)r * PIPE_COLS + c] * hx[(size_t)r * PIPE_COLS + c];
    const double rs = 1.0 / std::sqrt(ss / PIPE_COLS + (double)PIPE_EPS);
    ref_r[r] = (float)rs;
    for (int c = 0; c < PIPE_COLS; ++c) ref_y[(size_t)r * PIPE_COLS + c] = (float)(hx[(size_t)r * PIPE_COLS + c] * rs);
  }
  wscheck::compare(hy.data(), ref_y.data(), PIPE_ROWS, PIPE_COLS, 1e-5, 1e-4, "Y");
  wscheck::compare(hr.data(), ref_r.data(), PIPE_ROWS, 1, 1e-5, 1e-4, "R");
  // wsreduce: keep end

  CUDA_CHECK(cudaFree(dx));
  CUDA_CHECK(cudaFree(dy));
  CUDA_CHECK(cudaFree(dr));
  return wscheck::exit_code();
}
#endif  // WS_NO_MAIN
