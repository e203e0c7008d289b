// ws_gemm_sm100.cu — the Blackwell (sm_100a) form of a warp-specialized GEMM.
//
// C[m, n] = sum_k A[m, k] * B[n, k]     A: [GEMM_M, GEMM_K] bf16, K-major (row-major)
//                                       B: [GEMM_N, GEMM_K] bf16, K-major (row-major)
//                                       C: [GEMM_M, GEMM_N] fp32, row-major
// One CTA computes one BLOCK_M x BLOCK_N tile of C; the fp32 accumulator lives in TMEM.
// The CTA is two warpgroups (256 threads):
//   warp 0, one elected lane  = TMA producer: A and B k-tiles into a ring of STAGES stages
//                               (128-byte swizzle), full/empty mbarriers
//   warp 1                    = TMEM owner (alloc/relinquish/dealloc, whole warp) and, on one
//                               elected lane, the MMA issuer: tcgen05.mma per 16-wide k-step,
//                               tcgen05.commit -> empty[s] per stage, -> accum_full at the end
//   warps 2-3                 = idle (they only make warpgroup 1 start at warp 4)
//   warps 4-7 (warpgroup 1)   = epilogue: wait accum_full, tcgen05.ld its 32-lane TMEM
//                               sub-partition (warp % 4), convert, store C
// The worksheet for this kernel: kernels/README.md, section ws_gemm_sm100.cu.
//
// Build: nvcc -std=c++17 -O3 -gencode=arch=compute_100a,code=sm_100a -lineinfo
//             -I oracle/include kernels/ws_gemm_sm100.cu -o g100
#include <cuda.h>          // CUtensorMap and the driver enums only: no -lcuda
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "wscheck.h"

// ---- knobs (all overridable with -D) ---------------------------------------------------------
#ifndef GEMM_M
#define GEMM_M 512
#endif
#ifndef GEMM_N
#define GEMM_N 768
#endif
#ifndef GEMM_K
#define GEMM_K 1024
#endif
#ifndef BLOCK_M
#define BLOCK_M 128  // = the UMMA M of cta_group::1: accumulator row m is TMEM lane m
#endif
#ifndef BLOCK_N
#define BLOCK_N 128  // = the UMMA N: accumulator column n is TMEM column n
#endif
#ifndef BLOCK_K
#define BLOCK_K 64   // 64 bf16 = 128 bytes: exactly one 128-byte swizzle row
#endif
#ifndef STAGES
#define STAGES 4
#endif

#define UMMA_K 16                                   // K of one kind::f16 MMA
#define K_TILES (GEMM_K / BLOCK_K)
#define NUM_THREADS 256
#define A_STAGE_BYTES (BLOCK_M * BLOCK_K * 2)
#define B_STAGE_BYTES (BLOCK_N * BLOCK_K * 2)
#define STAGE_TX_BYTES (A_STAGE_BYTES + B_STAGE_BYTES)  // what one full[s] phase waits for
#define EPI_COLS 32                                 // columns per tcgen05.ld (32x32b.x32)
#define TMEM_COLS (BLOCK_N <= 32 ? 32 : BLOCK_N <= 64 ? 64 : BLOCK_N <= 128 ? 128 : BLOCK_N <= 256 ? 256 : 512)

static_assert(GEMM_M % BLOCK_M == 0 && GEMM_N % BLOCK_N == 0 && GEMM_K % BLOCK_K == 0,
              "shapes must be multiples of the tile");
static_assert(BLOCK_M == 128, "this kernel uses the M=128 cta_group::1 MMA (one TMEM lane per row)");
static_assert(BLOCK_N % 16 == 0 && BLOCK_N >= 32 && BLOCK_N <= 256, "M=128 MMA needs N % 16 == 0, 16 <= N <= 256");
static_assert(BLOCK_N % EPI_COLS == 0, "the epilogue reads TMEM 32 columns at a time");
static_assert(BLOCK_K * 2 == 128, "one k-tile row must be exactly one 128-byte swizzle span");
static_assert(BLOCK_K % UMMA_K == 0, "BLOCK_K must be a multiple of the MMA K");

// ---- shared-memory layout (offsets from a 1024-byte-aligned base; SW128 tiles need 1024) -----
#define SMEM_A_OFF 0                                                // STAGES x [BLOCK_M][BLOCK_K] bf16, SW128
#define SMEM_B_OFF (SMEM_A_OFF + STAGES * A_STAGE_BYTES)           // STAGES x [BLOCK_N][BLOCK_K] bf16, SW128
#define SMEM_BAR_OFF (SMEM_B_OFF + STAGES * B_STAGE_BYTES)         // full[STAGES], empty[STAGES], accum_full
#define SMEM_TMEM_SLOT_OFF (SMEM_BAR_OFF + (2 * STAGES + 1) * 8)   // uint32: TMEM base address from alloc
#define SMEM_USED (SMEM_TMEM_SLOT_OFF + 4)
#define SMEM_BYTES (SMEM_USED + 1024)
static_assert(A_STAGE_BYTES % 1024 == 0 && B_STAGE_BYTES % 1024 == 0, "stages must stay 1024-byte aligned");
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory over the per-block limit (227 KiB)");

// Instruction descriptor, kind::f16 (bit layout: CUTLASS cute/arch/mma_sm100_desc.hpp, UMMA::InstrDescriptor):
// [4,6) D format 1 = F32; [7,10) A format 1 = BF16; [10,13) B format 1 = BF16; bit 15/16 A/B major 0 = K;
// [17,23) N >> 3; [24,29) M >> 4; everything else 0 (dense, no negate, no saturate, no shift).
#define IDESC ((1u << 4) | (1u << 7) | (1u << 10) | ((uint32_t)(BLOCK_N >> 3) << 17) | ((uint32_t)(BLOCK_M >> 4) << 24))

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

__device__ __forceinline__ uint32_t elect_one_sync() {  // 1 on exactly one lane of a converged warp
  uint32_t pred = 0;
  asm volatile("{\n .reg .b32 rx;\n .reg .pred px;\n elect.sync rx|px, 0xffffffff;\n selp.u32 %0, 1, 0, px;\n}\n"
               : "=r"(pred));
  return pred;
}

// TMEM allocation: whole-warp collectives (.sync.aligned) — never under a lane guard.
__device__ __forceinline__ void tmem_alloc(uint32_t* dst_slot, uint32_t ncols) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;\n"
               ::"r"(smem_u32(dst_slot)), "r"(ncols) : "memory");
}

__device__ __forceinline__ void tmem_relinquish() {
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void tmem_dealloc(uint32_t taddr, uint32_t ncols) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;\n" ::"r"(taddr), "r"(ncols) : "memory");
}

// Shared-memory matrix descriptor, K-major, 128-byte swizzle (CUTLASS UMMA::SmemDescriptor):
// [0,14) start >> 4; [16,30) LBO >> 4 (unused for swizzled K-major, 1 by convention);
// [32,46) SBO >> 4 = 1024 B between 8-row groups; [46,48) version 1 (sm_100); [61,64) 2 = SWIZZLE_128B.
__device__ __forceinline__ uint64_t make_smem_desc_sw128(const void* tile) {
  return (uint64_t)((smem_u32(tile) & 0x3FFFFu) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
         ((uint64_t)1 << 46) | ((uint64_t)2 << 61);
}

// D[tmem] (+)= A[smem] * B[smem]^T, issued by one thread; accumulate = 0 overwrites D.
__device__ __forceinline__ void tcgen05_mma(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc,
                                            uint32_t accumulate) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %4, 0;\n"
               " tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n}\n"
               ::"r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(accumulate) : "memory");
}

// One arrival on bar once every tcgen05 op this thread issued before it has completed.
__device__ __forceinline__ void tcgen05_commit(uint64_t* bar) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];\n"
               ::"r"(smem_u32(bar)) : "memory");
}

__device__ __forceinline__ void tcgen05_fence_after() {
  asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");
}

__device__ __forceinline__ void tcgen05_fence_before() {
  asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");
}

// 32 TMEM lanes x 32 columns of 32 bits: thread t of the warp gets lane (taddr.lane + t), columns taddr.col + j.
__device__ __forceinline__ void tmem_ld_32x32b(uint32_t taddr, uint32_t (&v)[32]) {
  asm volatile(
      "tcgen05.ld.sync.aligned.32x32b.x32.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, [%32];\n"
      : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]), "=r"(v[4]), "=r"(v[5]), "=r"(v[6]), "=r"(v[7]),
        "=r"(v[8]), "=r"(v[9]), "=r"(v[10]), "=r"(v[11]), "=r"(v[12]), "=r"(v[13]), "=r"(v[14]), "=r"(v[15]),
        "=r"(v[16]), "=r"(v[17]), "=r"(v[18]), "=r"(v[19]), "=r"(v[20]), "=r"(v[21]), "=r"(v[22]), "=r"(v[23]),
        "=r"(v[24]), "=r"(v[25]), "=r"(v[26]), "=r"(v[27]), "=r"(v[28]), "=r"(v[29]), "=r"(v[30]), "=r"(v[31])
      : "r"(taddr)
      : "memory");
}

__device__ __forceinline__ void tmem_wait_ld() {
  asm volatile("tcgen05.wait::ld.sync.aligned;\n" ::: "memory");
}

// ---- the kernel ------------------------------------------------------------------------------
__global__ void __launch_bounds__(NUM_THREADS, 1)
ws_gemm_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
               float* __restrict__ C) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* sA = smem + SMEM_A_OFF;                                      // stage s at sA + s * A_STAGE_BYTES
  uint8_t* sB = smem + SMEM_B_OFF;                                      // stage s at sB + s * B_STAGE_BYTES
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + SMEM_BAR_OFF);    // TMA landed A+B in stage s
  uint64_t* empty = full + STAGES;                                       // MMAs reading stage s completed
  uint64_t* accum_full = empty + STAGES;                                 // every MMA of the tile completed
  uint32_t* tmem_slot = reinterpret_cast<uint32_t*>(smem + SMEM_TMEM_SLOT_OFF);

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int wg = threadIdx.x / 128;
  const int m0 = blockIdx.y * BLOCK_M;
  const int n0 = blockIdx.x * BLOCK_N;

  // Barrier init: CTA thread 0, top level, before any role branch.
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);   // one arrival: the producer's arrive_expect_tx (+ STAGE_TX_BYTES)
      mbar_init(&empty[s], 1);  // one arrival: the MMA thread's tcgen05.commit
    }
    mbar_init(accum_full, 1);   // one arrival: the MMA thread's last tcgen05.commit
    fence_barrier_init();
  }
  // TMEM: warp 1 allocates as a whole warp and writes the base address to tmem_slot.
  if (warp == 1) {
    tmem_alloc(tmem_slot, TMEM_COLS);
    tmem_relinquish();  // this CTA allocates nothing else: let other CTAs on the SM allocate
  }
  tcgen05_fence_before();
  __syncthreads();  // barriers initialised and tmem_slot written, for every role
  tcgen05_fence_after();
  const uint32_t tmem_acc = *tmem_slot;  // lane 0, column base of the BLOCK_M x TMEM_COLS accumulator

  // ROLE producer: warp 0, one elected lane.
  if (warp == 0 && elect_one_sync()) {
#pragma unroll 1
    for (int kt = 0; kt < K_TILES; ++kt) {
      const int s = kt % STAGES;
      const uint32_t phase = (kt / STAGES) & 1;
      mbar_wait(&empty[s], phase ^ 1);  // starts on 1: a fresh barrier's "previous phase" is complete
      mbar_arrive_expect_tx(&full[s], STAGE_TX_BYTES);
      tma_load_2d(sA + s * A_STAGE_BYTES, &a_map, &full[s], kt * BLOCK_K, m0);
      tma_load_2d(sB + s * B_STAGE_BYTES, &b_map, &full[s], kt * BLOCK_K, n0);
    }
    // Tail: wait for the last release of every stage, so no tcgen05.commit arrival is in flight at exit.
#pragma unroll 1
    for (int kt = K_TILES; kt < K_TILES + STAGES; ++kt) mbar_wait(&empty[kt % STAGES], ((kt / STAGES) & 1) ^ 1);
  }

  // ROLE MMA: warp 1, one elected lane issues every MMA and every commit (commits track this thread's MMAs).
  if (warp == 1 && elect_one_sync()) {
#pragma unroll 1
    for (int kt = 0; kt < K_TILES; ++kt) {
      const int s = kt % STAGES;
      const uint32_t phase = (kt / STAGES) & 1;
      mbar_wait(&full[s], phase);  // starts on 0: blocks until the first TMA lands
      tcgen05_fence_after();
      const uint64_t a_desc = make_smem_desc_sw128(sA + s * A_STAGE_BYTES);
      const uint64_t b_desc = make_smem_desc_sw128(sB + s * B_STAGE_BYTES);
#pragma unroll
      for (int kk = 0; kk < BLOCK_K / UMMA_K; ++kk)  // +32 bytes (>> 4 = 2) per 16-element k-step in the swizzle row
        tcgen05_mma(tmem_acc, a_desc + 2 * kk, b_desc + 2 * kk, IDESC, (kt | kk) != 0);
      tcgen05_commit(&empty[s]);  // stage s is free once these MMAs have read it
    }
    tcgen05_commit(accum_full);   // the accumulator is final once every MMA above has completed
  }

  // ROLE epilogue: warpgroup 1 (warps 4-7); warp w may only touch TMEM lanes 32*(w%4) .. 32*(w%4)+31.
  if (wg == 1) {
    const int ew = warp % 4;
    mbar_wait(accum_full, 0);  // single use: phase 0
    __syncwarp();              // tcgen05.ld is .sync.aligned: the warp must be converged
    tcgen05_fence_after();
    const int row = m0 + ew * 32 + lane;
#pragma unroll 1
    for (int c = 0; c < BLOCK_N / EPI_COLS; ++c) {
      uint32_t v[32];
      tmem_ld_32x32b(tmem_acc + ((uint32_t)(ew * 32) << 16) + (uint32_t)(c * EPI_COLS), v);
      tmem_wait_ld();
      float4* dst = reinterpret_cast<float4*>(C + (size_t)row * GEMM_N + n0 + c * EPI_COLS);
#pragma unroll
      for (int j = 0; j < EPI_COLS / 4; ++j)
        dst[j] = make_float4(__uint_as_float(v[4 * j]), __uint_as_float(v[4 * j + 1]), __uint_as_float(v[4 * j + 2]),
                             __uint_as_float(v[4 * j + 3]));
    }
    tcgen05_fence_before();  // order this warp's tcgen05.ld before the barrier that precedes dealloc
  }

  __syncwarp();     // the elected lanes of warps 0 and 1 rejoin their warps
  __syncthreads();  // every role done with TMEM (top level: all 256 threads reach it)
  if (warp == 1) {  // the allocating warp frees it, as a whole warp
    tcgen05_fence_after();
    tmem_dealloc(tmem_acc, TMEM_COLS);
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

// A [rows, GEMM_K] bf16 K-major tensor, box = BLOCK_K x box_rows, 128-byte swizzle.
inline CUtensorMap make_kmajor_map(void* base, int rows, int box_rows) {
  CUtensorMap m;
  const cuuint64_t dims[2] = {(cuuint64_t)GEMM_K, (cuuint64_t)rows};  // innermost first
  const cuuint64_t strides[1] = {(cuuint64_t)GEMM_K * 2};             // bytes
  const cuuint32_t box[2] = {(cuuint32_t)BLOCK_K, (cuuint32_t)box_rows};
  const cuuint32_t estr[2] = {1, 1};
  CUresult r = get_encode_tiled()(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, base, dims, strides, box, estr,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "CUDA error: cuTensorMapEncodeTiled failed (%d) at %s:%d\n", (int)r, __FILE__, __LINE__);
    std::exit(1);
  }
  return m;
}

// The launch: grid (GEMM_N / BLOCK_N, GEMM_M / BLOCK_M), NUM_THREADS threads, SMEM_BYTES dynamic smem.
cudaError_t launch_ws_gemm(const CUtensorMap& a_map, const CUtensorMap& b_map, float* d_c, cudaStream_t stream = 0) {
  cudaError_t e = cudaFuncSetAttribute(ws_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
  if (e != cudaSuccess) return e;
  const dim3 grid(GEMM_N / BLOCK_N, GEMM_M / BLOCK_M);
  ws_gemm_kernel<<<grid, NUM_THREADS, SMEM_BYTES, stream>>>(a_map, b_map, d_c);
  return cudaGetLastError();
}

#ifndef WS_NO_MAIN
static uint16_t f32_to_bf16(float f) {  // round to nearest even (inputs are finite)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static float bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

int main(int argc, char** argv) {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  if (prop.major != 10 || prop.minor != 0) {  // sm_100a code loads on compute capability 10.0 only
    char why[96];
    std::snprintf(why, sizeof why, "needs sm_100a (Blackwell); this device is sm_%d%d", prop.major, prop.minor);
    wscheck::skip(why);
  }

  // Fresh inputs every run; a seed on the command line replays one.
  const unsigned seed = argc > 1 ? (unsigned)std::strtoul(argv[1], nullptr, 10) : std::random_device{}();
  std::printf("seed=%u\n", seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mag(0.125f, 1.0f);  // |x| >= 0.125: never zero, exact-ish in bf16
  const size_t na = (size_t)GEMM_M * GEMM_K, nb = (size_t)GEMM_N * GEMM_K, nc = (size_t)GEMM_M * GEMM_N;
  std::vector<uint16_t> ha(na), hb(nb);
  std::vector<float> fa(na), fb(nb), hc(nc), ref(nc);
  for (size_t k = 0; k < na; ++k) { ha[k] = f32_to_bf16((rng() & 1 ? 1.f : -1.f) * mag(rng)); fa[k] = bf16_to_f32(ha[k]); }
  for (size_t k = 0; k < nb; ++k) { hb[k] = f32_to_bf16((rng() & 1 ? 1.f : -1.f) * mag(rng)); fb[k] = bf16_to_f32(hb[k]); }

  void *da, *db;
  float* dc;
  CUDA_CHECK(cudaMalloc(&da, na * 2));
  CUDA_CHECK(cudaMalloc(&db, nb * 2));
  CUDA_CHECK(cudaMalloc(&dc, nc * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(da, ha.data(), na * 2, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(db, hb.data(), nb * 2, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dc, 0xFF, nc * sizeof(float)));  // NaN poison: an unwritten element shows as NaN

  const CUtensorMap a_map = make_kmajor_map(da, GEMM_M, BLOCK_M);
  const CUtensorMap b_map = make_kmajor_map(db, GEMM_N, BLOCK_N);
  std::printf("M=%d N=%d K=%d block=%dx%dx%d stages=%d k_tiles=%d grid=%dx%d smem=%d tmem_cols=%d\n", GEMM_M, GEMM_N,
              GEMM_K, BLOCK_M, BLOCK_N, BLOCK_K, STAGES, K_TILES, GEMM_N / BLOCK_N, GEMM_M / BLOCK_M, SMEM_BYTES,
              TMEM_COLS);
  CUDA_CHECK(launch_ws_gemm(a_map, b_map, dc));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(hc.data(), dc, nc * sizeof(float), cudaMemcpyDeviceToHost));

  // wsreduce: keep begin (the reference and its check: a reduction may not change them)
  // CPU reference on the bf16-rounded inputs, double accumulation.
  for (int m = 0; m < GEMM_M; ++m)
    for (int n = 0; n < GEMM_N; ++n) {
      const float* a = &fa[(size_t)m * GEMM_K];
      const float* b = &fb[(size_t)n * GEMM_K];
      double acc = 0;
      for (int k = 0; k < GEMM_K; ++k) acc += (double)a[k] * b[k];
      ref[(size_t)m * GEMM_N + n] = (float)acc;
    }
  wscheck::compare(hc.data(), ref.data(), GEMM_M, GEMM_N, 1e-2, 1e-3, "C");
  // wsreduce: keep end

  CUDA_CHECK(cudaFree(da));
  CUDA_CHECK(cudaFree(db));
  CUDA_CHECK(cudaFree(dc));
  return wscheck::exit_code();
}
#endif  // WS_NO_MAIN
