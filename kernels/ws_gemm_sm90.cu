// ws_gemm_sm90.cu: the reference warp-specialized Hopper GEMM (TMA ring + mbarriers + wgmma + TMA store).
//
//   C[M][N] = sum_k A[M][K] * B[N][K]        ("TN": both operands K-major, the layout wgmma
//                                            reads from shared memory without transposes)
//   A: bf16, M x K row-major.  B: bf16, N x K row-major.  C: bf16, M x N row-major.
//   Accumulation in fp32 registers; the output is rounded to bf16 once, in the epilogue.
//
// Roles (one CTA of 384 threads = 3 warpgroups, persistent over output tiles):
//   warpgroup 0      producer: thread 0 alone issues the TMA loads into a STAGES-deep ring
//   warpgroups 1, 2  consumers: each owns 64 rows of the 128 x BLOCK_N tile, issues wgmma,
//                    then stages its rows through smem and stores them with a TMA store
// Every handoff (who arrives, which barrier, which phase, which fence) is in the worksheet
// kernels/README.md (section ws_gemm_sm90.cu); docs/methodology.md explains the columns.
//
// Build (from the repository root):
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -lineinfo -I oracle/include kernels/ws_gemm_sm90.cu -o ws_gemm
// Knobs: -DGEMM_M= -DGEMM_N= -DGEMM_K= -DBLOCK_N=64|128|256 -DSTAGES= (BLOCK_M=128, BLOCK_K=64
// are fixed by the role split and the 128B swizzle). -DWS_NO_MAIN drops main() so that
// bench/gemm_vs_cublas.cu can include this file and call launch_ws_gemm().

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "wscheck.h"

// ---------------------------------------------------------------------------------------
// Knobs
// ---------------------------------------------------------------------------------------
#ifndef GEMM_M
#define GEMM_M 2048  // with GEMM_N: 192 tiles > 132 SMs, so CTAs walk >1 tile and the ring's phase carries
#endif
#ifndef GEMM_N
#define GEMM_N 1536
#endif
#ifndef GEMM_K
#define GEMM_K 512
#endif
#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef BLOCK_K
#define BLOCK_K 64
#endif
#ifndef STAGES
#if BLOCK_N == 256
#define STAGES 3
#else
#define STAGES 5
#endif
#endif

#define NUM_THREADS 384     // 3 warpgroups: producer + 2 consumers
#define NUM_CONSUMERS 2     // consumer warpgroups; each arrives once per stage on empty[]
#define CONSUMER_ROWS 64    // rows of the tile one consumer owns: one wgmma m64
#define PRODUCER_REGS 40    // setmaxnreg budgets: 128*40 + 256*232 <= 64K registers
#define CONSUMER_REGS 232

static_assert(GEMM_M % BLOCK_M == 0 && GEMM_N % BLOCK_N == 0 && GEMM_K % BLOCK_K == 0,
              "shapes must be multiples of the tile sizes");
static_assert(BLOCK_M == NUM_CONSUMERS * CONSUMER_ROWS, "each consumer owns 64 rows of the tile");
static_assert(BLOCK_K == 64, "BLOCK_K must be 64 bf16 = 128 bytes: one 128B-swizzle row");
static_assert(BLOCK_N == 64 || BLOCK_N == 128 || BLOCK_N == 256, "wgmma n must be 64, 128 or 256");
static_assert(STAGES >= 2, "the ring needs at least two stages to overlap load and compute");

typedef __nv_bfloat16 bf16;

constexpr int K_TILES = GEMM_K / BLOCK_K;
constexpr int TILES_M = GEMM_M / BLOCK_M;
constexpr int TILES_N = GEMM_N / BLOCK_N;
constexpr int NUM_TILES = TILES_M * TILES_N;

// Shared memory layout, offsets from the 1024-aligned base (128B swizzle repeats every 1024 B).
constexpr uint32_t A_STAGE_BYTES = BLOCK_M * BLOCK_K * 2;              // 16 KiB
constexpr uint32_t B_STAGE_BYTES = BLOCK_N * BLOCK_K * 2;              // 16 KiB at BLOCK_N=128
constexpr uint32_t STAGE_TX_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;     // what one full[] phase waits for
constexpr uint32_t C_BOX_COLS = 64;                                    // one TMA store box: 64 x 64 bf16
constexpr uint32_t C_BOX_BYTES = CONSUMER_ROWS * C_BOX_COLS * 2;       // 8 KiB, 128B-swizzled
constexpr uint32_t C_HALF_BYTES = CONSUMER_ROWS * BLOCK_N * 2;         // one consumer's staging buffer
constexpr uint32_t OFF_A = 0;
constexpr uint32_t OFF_B = OFF_A + STAGES * A_STAGE_BYTES;
constexpr uint32_t OFF_C = OFF_B + STAGES * B_STAGE_BYTES;
constexpr uint32_t OFF_FULL = OFF_C + NUM_CONSUMERS * C_HALF_BYTES;
constexpr uint32_t OFF_EMPTY = OFF_FULL + STAGES * 8;
constexpr uint32_t SMEM_USED = OFF_EMPTY + STAGES * 8;
constexpr uint32_t SMEM_BYTES = SMEM_USED + 1024;                      // slack to align the base
static_assert(SMEM_BYTES <= 232448, "ring + staging exceed the 227 KiB of an sm_90 CTA: lower STAGES");
static_assert(A_STAGE_BYTES % 1024 == 0 && B_STAGE_BYTES % 1024 == 0 && C_HALF_BYTES % 1024 == 0,
              "every swizzled tile must start 1024-aligned");

// ---------------------------------------------------------------------------------------
// Primitives: one PTX instruction each, so a reader (and the bug injectors) see the handoff
// ---------------------------------------------------------------------------------------
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
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
               ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t phase) {
  uint32_t done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(bar)), "r"(phase) : "memory");
  }
}

// c0 is the innermost (contiguous, K or N) coordinate, c1 the row.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
      ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}

__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(src)), "r"(c0), "r"(c1)
               : "memory");
}

// Generic-proxy writes to smem (st.shared) become visible to the async proxy (TMA store).
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void tma_store_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

// At most N store groups may still be reading their smem source.
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

// At most N store groups may still be in flight at all (global writes included).
template <int N>
__device__ __forceinline__ void tma_store_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
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

// wgmma shared-memory matrix descriptor for a K-major tile written by a 128B-swizzle TMA:
// rows of 64 bf16 (128 B), 8-row core-matrix groups 1024 B apart (SBO), LBO unused (1),
// base_offset 0 (tiles are 1024-aligned), swizzle mode 1 = 128B in bits 62-63.
// Advancing K by 16 elements inside the tile = +32 B = +2 in the start-address field.
__device__ __forceinline__ uint64_t make_desc_sw128(const void* tile) {
  uint64_t desc = 0;
  desc |= (uint64_t)((smem_u32(tile) & 0x3FFFF) >> 4);  // bits 0-13: start address >> 4
  desc |= (uint64_t)1 << 16;                             // bits 16-29: LBO >> 4 (unused)
  desc |= (uint64_t)(1024 >> 4) << 32;                   // bits 32-45: SBO >> 4
  desc |= (uint64_t)1 << 62;                             // bits 62-63: 128B swizzle
  return desc;
}

// The compiler must not read or move the accumulators across a wgmma_wait: pin them here.
template <int R>
__device__ __forceinline__ void fence_acc(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// D(64 x n, fp32 regs) (+)= A(64 x 16, smem desc) * B(n x 16, smem desc)^T; scale_d = 0 zeroes D.
__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[32], uint64_t desc_a, uint64_t desc_b,
                                                  int scale_d) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31},"
               " %32, %33, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t desc_a, uint64_t desc_b,
                                                  int scale_d) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %66, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
               "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
               "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63},"
               " %64, %65, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                 "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                 "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                 "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                 "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a, uint64_t desc_b,
                                                  int scale_d) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %130, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
               "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
               "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
               "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
               "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
               "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
               "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127},"
               " %128, %129, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                 "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                 "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                 "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                 "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                 "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                 "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
                 "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
                 "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
                 "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
                 "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
                 "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
                 "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
               : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_bf16(float (&d)[BLOCK_N / 2], uint64_t desc_a, uint64_t desc_b, int scale_d) {
#if BLOCK_N == 64
  wgmma_m64n64k16(d, desc_a, desc_b, scale_d);
#elif BLOCK_N == 128
  wgmma_m64n128k16(d, desc_a, desc_b, scale_d);
#else
  wgmma_m64n256k16(d, desc_a, desc_b, scale_d);
#endif
}

// Byte offset of C element (row, col) of one consumer's 64 x BLOCK_N staging buffer: 64-column
// boxes of 8 KiB, each the 128B-swizzled image the TMA store expects (16-byte unit ^= row % 8).
__device__ __forceinline__ uint32_t c_stage_offset(int row, int col) {
  return (col / 64) * C_BOX_BYTES + row * 128 + ((((col % 64) / 8) ^ (row % 8)) << 4) + (col % 8) * 2;
}

// The tile scheduler: both roles walk the same tiles in the same order, so the ring's
// stage/phase counters stay in lockstep across tiles.
__device__ __forceinline__ void tile_origin(int tile, int& m0, int& n0) {
  m0 = (tile / TILES_N) * BLOCK_M;
  n0 = (tile % TILES_N) * BLOCK_N;
}

// ---------------------------------------------------------------------------------------
// The kernel
// ---------------------------------------------------------------------------------------
__global__ void __launch_bounds__(NUM_THREADS, 1)
ws_gemm_kernel(const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b,
               const __grid_constant__ CUtensorMap tmap_c) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  uint8_t* sA = smem + OFF_A;  // [STAGES][BLOCK_M][64] bf16, 128B-swizzled
  uint8_t* sB = smem + OFF_B;  // [STAGES][BLOCK_N][64] bf16, 128B-swizzled
  uint8_t* sC = smem + OFF_C;  // [NUM_CONSUMERS][BLOCK_N/64][64][64] bf16, 128B-swizzled
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + OFF_FULL);    // TMA landed stage s
  uint64_t* empty = reinterpret_cast<uint64_t*>(smem + OFF_EMPTY);  // both consumers are done with s

  const int warpgroup = __shfl_sync(0xffffffff, (int)threadIdx.x / 128, 0);  // warp-uniform
  const int wg_thread = threadIdx.x % 128;

  // Barrier init: thread 0, top level, before any role branch (docs/methodology.md class 1, row 2).
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);               // one arrival: the producer's arrive_expect_tx
      mbar_init(&empty[s], NUM_CONSUMERS);  // one arrival per consumer warpgroup
    }
    fence_barrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---- producer: one thread streams A and B k-blocks into the ring ----
    warpgroup_reg_dealloc<PRODUCER_REGS>();
    if (wg_thread == 0) {
      int stage = 0;
      uint32_t phase = 0;
      for (int tile = blockIdx.x; tile < NUM_TILES; tile += gridDim.x) {
        int m0, n0;
        tile_origin(tile, m0, n0);
        for (int kt = 0; kt < K_TILES; ++kt) {
          mbar_wait(&empty[stage], phase ^ 1);  // round 0 passes: a fresh barrier's parity-1 phase counts as done
          mbar_arrive_expect_tx(&full[stage], STAGE_TX_BYTES);
          tma_load_2d(sA + stage * A_STAGE_BYTES, &tmap_a, &full[stage], kt * BLOCK_K, m0);
          tma_load_2d(sB + stage * B_STAGE_BYTES, &tmap_b, &full[stage], kt * BLOCK_K, n0);
          if (++stage == STAGES) { stage = 0; phase ^= 1; }
        }
      }
    }
  } else {
    // ---- consumers: wgmma over the ring, then the epilogue through smem and a TMA store ----
    warpgroup_reg_alloc<CONSUMER_REGS>();
    const int consumer = warpgroup - 1;  // owns tile rows [64*consumer, 64*consumer + 64)
    const int warp = wg_thread / 32, lane = wg_thread % 32;
    uint8_t* my_sC = sC + consumer * C_HALF_BYTES;
    float acc[BLOCK_N / 2];
    int stage = 0;
    uint32_t phase = 0;
    for (int tile = blockIdx.x; tile < NUM_TILES; tile += gridDim.x) {
      int m0, n0;
      tile_origin(tile, m0, n0);
      int prev_stage = 0;
      for (int kt = 0; kt < K_TILES; ++kt) {
        mbar_wait(&full[stage], phase);
        const uint64_t desc_a = make_desc_sw128(sA + stage * A_STAGE_BYTES + consumer * CONSUMER_ROWS * 128);
        const uint64_t desc_b = make_desc_sw128(sB + stage * B_STAGE_BYTES);
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < BLOCK_K / 16; ++k)  // +32 B (+2 in the descriptor) per 16 elements of K
          wgmma_bf16(acc, desc_a + 2 * k, desc_b + 2 * k, (kt > 0 || k > 0) ? 1 : 0);
        wgmma_commit();
        wgmma_wait<1>();  // k-block kt-1 has retired: only now may its stage be refilled
        if (kt > 0 && wg_thread == 0) mbar_arrive(&empty[prev_stage]);
        prev_stage = stage;
        if (++stage == STAGES) { stage = 0; phase ^= 1; }
      }
      wgmma_wait<0>();
      fence_acc(acc);
      if (wg_thread == 0) mbar_arrive(&empty[prev_stage]);  // the tile's last k-block

      // Epilogue. The previous tile's TMA store must have finished reading my_sC first.
      if (wg_thread == 0) tma_store_wait_read<0>();
      named_barrier_sync(1 + consumer, 128);
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // fragment: row 16*warp + lane/4 (+8), cols 8j + 2*(lane%4) + {0,1}
          const int row = 16 * warp + lane / 4 + 8 * h;
          const int col = 8 * j + 2 * (lane % 4);
          *reinterpret_cast<__nv_bfloat162*>(my_sC + c_stage_offset(row, col)) =
              __floats2bfloat162_rn(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
        }
      }
      fence_proxy_async();  // every writing thread, before the barrier that releases the store
      named_barrier_sync(1 + consumer, 128);
      if (wg_thread == 0) {
        for (int q = 0; q < BLOCK_N / 64; ++q)
          tma_store_2d(&tmap_c, my_sC + q * C_BOX_BYTES, n0 + q * 64, m0 + consumer * CONSUMER_ROWS);
        tma_store_commit();
      }
    }
    if (wg_thread == 0) tma_store_wait<0>();  // smem must outlive the last store's reads
  }
}

// ---------------------------------------------------------------------------------------
// Host side: tensor maps and the launch, shared by main() and bench/gemm_vs_cublas.cu
// ---------------------------------------------------------------------------------------
#define CUDA_CHECK(call)                                                                    \
  do {                                                                                      \
    cudaError_t err_ = (call);                                                              \
    if (err_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "CUDA error: %s (%d) at %s:%d\n", cudaGetErrorString(err_),     \
                   (int)err_, __FILE__, __LINE__);                                          \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

struct WsGemmMaps {
  CUtensorMap a, b, c;
};

// cuTensorMapEncodeTiled through the runtime's driver entry point: no -lcuda needed.
static PFN_cuTensorMapEncodeTiled_v12000 get_encode_tiled() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  if (!fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || p == nullptr) {
      std::fprintf(stderr, "CUDA error: cuTensorMapEncodeTiled not found in the driver (%d) at %s:%d\n",
                   (int)q, __FILE__, __LINE__);
      std::exit(1);
    }
    fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }
  return fn;
}

// A row-major bf16 matrix of rows x cols, moved in boxes of box_rows x box_cols, 128B-swizzled.
static CUtensorMap make_tmap_2d(const void* base, uint64_t rows, uint64_t cols, uint32_t box_rows,
                                uint32_t box_cols) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cols, rows};              // innermost first
  const cuuint64_t strides[1] = {cols * sizeof(bf16)};  // bytes between rows
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  CUresult r = get_encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims,
                                  strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "CUDA error: cuTensorMapEncodeTiled failed (%d) at %s:%d\n", (int)r, __FILE__, __LINE__);
    std::exit(1);
  }
  return map;
}

static WsGemmMaps make_ws_gemm_maps(const bf16* dA, const bf16* dB, bf16* dC) {
  WsGemmMaps m;
  m.a = make_tmap_2d(dA, GEMM_M, GEMM_K, BLOCK_M, BLOCK_K);             // one k-block of the tile's rows
  m.b = make_tmap_2d(dB, GEMM_N, GEMM_K, BLOCK_N, BLOCK_K);
  m.c = make_tmap_2d(dC, GEMM_M, GEMM_N, CONSUMER_ROWS, C_BOX_COLS);   // one consumer's 64 x 64 box
  return m;
}

// Persistent launch: one CTA per SM (never more CTAs than tiles).
static void launch_ws_gemm(const WsGemmMaps& maps, int num_sms, cudaStream_t stream) {
  static bool configured = false;
  if (!configured) {
    CUDA_CHECK(cudaFuncSetAttribute(ws_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    configured = true;
  }
  const int grid = std::min(num_sms, NUM_TILES);
  ws_gemm_kernel<<<grid, NUM_THREADS, SMEM_BYTES, stream>>>(maps.a, maps.b, maps.c);
  CUDA_CHECK(cudaGetLastError());
}

// Uniform [-1, 1] values rounded to bf16; `rounded` holds the same values as floats.
static void fill_random_bf16(std::mt19937& gen, std::vector<bf16>& bits, std::vector<float>& rounded) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < bits.size(); ++i) {
    bits[i] = __float2bfloat16(dist(gen));
    rounded[i] = __bfloat162float(bits[i]);
  }
  bits[0] = __float2bfloat16(1.0f);  // never an all-zero input
  rounded[0] = 1.0f;
}

#ifndef WS_NO_MAIN
int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) wscheck::skip("no CUDA device");
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9 || prop.minor != 0) wscheck::skip("needs sm_90a (Hopper)");

  const unsigned seed = std::random_device{}();
  std::printf("seed=%u\n", seed);
  std::mt19937 gen(seed);
  std::vector<bf16> hA((size_t)GEMM_M * GEMM_K), hB((size_t)GEMM_N * GEMM_K), hC((size_t)GEMM_M * GEMM_N);
  std::vector<float> fA(hA.size()), fB(hB.size());
  fill_random_bf16(gen, hA, fA);
  fill_random_bf16(gen, hB, fB);

  bf16 *dA, *dB, *dC;
  CUDA_CHECK(cudaMalloc(&dA, hA.size() * sizeof(bf16)));
  CUDA_CHECK(cudaMalloc(&dB, hB.size() * sizeof(bf16)));
  CUDA_CHECK(cudaMalloc(&dC, hC.size() * sizeof(bf16)));
  CUDA_CHECK(cudaMemcpy(dA, hA.data(), hA.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dB, hB.data(), hB.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dC, 0xFF, hC.size() * sizeof(bf16)));  // NaN poison: an unwritten tile shows as NaN

  const WsGemmMaps maps = make_ws_gemm_maps(dA, dB, dC);
  std::printf("ws_gemm_sm90 M=%d N=%d K=%d tile=%dx%dx%d stages=%d tiles=%d grid=%d smem=%u\n", GEMM_M, GEMM_N,
              GEMM_K, BLOCK_M, BLOCK_N, BLOCK_K, STAGES, NUM_TILES, std::min(prop.multiProcessorCount, NUM_TILES),
              SMEM_BYTES);
  launch_ws_gemm(maps, prop.multiProcessorCount, 0);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(hC.data(), dC, hC.size() * sizeof(bf16), cudaMemcpyDeviceToHost));

  // wsreduce: keep begin (the reference and its check: a reduction may not change them)
  // fp32 reference from the same bf16-rounded inputs: C[m][n] = sum_k A[m][k] * B[n][k], summed in
  // k order; the loop runs over n innermost (B transposed once) so the compiler can vectorise it.
  std::vector<float> fBt((size_t)GEMM_K * GEMM_N), ref((size_t)GEMM_M * GEMM_N, 0.0f), out(hC.size());
  for (int n = 0; n < GEMM_N; ++n)
    for (int k = 0; k < GEMM_K; ++k) fBt[(size_t)k * GEMM_N + n] = fB[(size_t)n * GEMM_K + k];
  for (int m = 0; m < GEMM_M; ++m) {
    float* c = &ref[(size_t)m * GEMM_N];
    for (int k = 0; k < GEMM_K; ++k) {
      const float a = fA[(size_t)m * GEMM_K + k];
      const float* b = &fBt[(size_t)k * GEMM_N];
      for (int n = 0; n < GEMM_N; ++n) c[n] += a * b[n];
    }
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = __bfloat162float(hC[i]);

  // bf16 output rounding is <= 2^-9 relative; the rest is fp32 summation order.
  wscheck::compare(out.data(), ref.data(), GEMM_M, GEMM_N, 1e-2, 1e-2, "C");
  // wsreduce: keep end

  CUDA_CHECK(cudaFree(dA));
  CUDA_CHECK(cudaFree(dB));
  CUDA_CHECK(cudaFree(dC));
  return wscheck::exit_code();
}
#endif  // WS_NO_MAIN
