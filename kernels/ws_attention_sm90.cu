// ws_attention_sm90.cu — FlashAttention-3-style forward attention for Hopper (sm_90a),
// warp-specialized: one TMA producer warpgroup, two wgmma consumer warpgroups.
//
//   O = softmax(Q K^T / sqrt(HEAD_DIM)) V      non-causal, per (batch, head)
//   Q, K, V: bf16 [ATT_BATCH*ATT_HEADS*ATT_SEQ, HEAD_DIM] row-major; O: bf16, same shape.
//   S and the softmax statistics are fp32 in registers; P is rounded to bf16 for P V;
//   O accumulates in fp32 and is rounded to bf16 once, in the epilogue.
//
// Build (from the repository root):
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -lineinfo -I oracle/include kernels/ws_attention_sm90.cu -o ws_attention_sm90
// Knobs: -DATT_BATCH= -DATT_HEADS= -DATT_SEQ= -DBLOCK_N=64|128 -DSTAGES=  (see below).
// Worksheet (roles / storage / handoff / lifetime): kernels/README.md, section ws_attention_sm90.cu

#include <cuda.h>  // CUtensorMap and its enums only: the driver is reached via cudaGetDriverEntryPointByVersion
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "wscheck.h"

// ---------------------------------------------------------------------------------------------
// Shapes and tiles (each overridable with -D)
// ---------------------------------------------------------------------------------------------
#ifndef ATT_BATCH
#define ATT_BATCH 2
#endif
#ifndef ATT_HEADS
#define ATT_HEADS 4
#endif
#ifndef ATT_SEQ
#define ATT_SEQ 512
#endif
#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
#ifndef BLOCK_M
#define BLOCK_M 128  // Q rows per CTA: 64 per consumer warpgroup
#endif
#ifndef BLOCK_N
#define BLOCK_N 128  // K/V rows per pipeline stage
#endif
#ifndef STAGES
#define STAGES 2  // depth of the K/V ring
#endif

static_assert(HEAD_DIM == 64, "one 64-element bf16 row == one 128-byte swizzle row: descriptors assume it");
static_assert(BLOCK_M == 128, "two consumer warpgroups x 64 rows (wgmma M = 64)");
static_assert(BLOCK_N == 64 || BLOCK_N == 128, "S = Q K^T uses wgmma m64nBLOCK_Nk16 with N in {64, 128}");
static_assert(STAGES >= 1, "the K/V ring needs a stage (1 is legal but serialises load and compute)");
static_assert(ATT_SEQ % BLOCK_M == 0, "ATT_SEQ must be a multiple of BLOCK_M");
static_assert(ATT_SEQ % BLOCK_N == 0, "ATT_SEQ must be a multiple of BLOCK_N");

#define NUM_WARPGROUPS 3
#define NUM_THREADS (NUM_WARPGROUPS * 128)
#define NUM_CONSUMER_THREADS (2 * 128)
#define PRODUCER_REGS 40   // setmaxnreg.dec: the producer only computes coordinates
#define CONSUMER_REGS 232  // setmaxnreg.inc: 128*40 + 256*232 = 64512 <= 65536
#define ATT_ROWS (ATT_BATCH * ATT_HEADS * ATT_SEQ)  // rows of each 2D tensor
#define KV_TILES (ATT_SEQ / BLOCK_N)                // K/V tiles each CTA streams

// Shared memory, offsets from a 1024-byte aligned base (128B swizzle repeats every 1024 B).
#define Q_TILE_BYTES (BLOCK_M * HEAD_DIM * 2)
#define KV_TILE_BYTES (BLOCK_N * HEAD_DIM * 2)
#define O_TILE_BYTES (BLOCK_M * HEAD_DIM * 2)
#define SMEM_Q_OFF 0
#define SMEM_K_OFF (SMEM_Q_OFF + Q_TILE_BYTES)
#define SMEM_V_OFF (SMEM_K_OFF + STAGES * KV_TILE_BYTES)
#define SMEM_O_OFF (SMEM_V_OFF + STAGES * KV_TILE_BYTES)
#define SMEM_BYTES (SMEM_O_OFF + O_TILE_BYTES + 1024)  // + slack to align the base
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory budget of one H100/H200 CTA");
static_assert(KV_TILE_BYTES % 1024 == 0 && Q_TILE_BYTES % 1024 == 0, "tiles must stay 1024-byte aligned");

// ---------------------------------------------------------------------------------------------
// Primitives: one inline-PTX statement each, named so a reader sees the handoff, not the asm
// ---------------------------------------------------------------------------------------------
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
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}

// Returns once the barrier's phase with parity `phase` has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t phase) {
  uint32_t done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(bar)), "r"(phase) : "memory");
  }
}

// 2D tile global -> smem; completes `bytes` of the barrier's expect_tx. c0 = column, c1 = row.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
      ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_u32(bar))
      : "memory");
}

// 2D tile smem -> global, tracked by the issuing thread's bulk async-group.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(src)), "r"(c0), "r"(c1)
               : "memory");
}

// Generic-proxy smem writes become visible to the async proxy (TMA, wgmma).
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

// At most N bulk groups may still be reading their smem source.
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

// At most N bulk groups may still be in flight at all.
template <int N>
__device__ __forceinline__ void tma_store_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

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

// bar.sync on a named barrier (id 0 is __syncthreads): `count` threads, a multiple of 32.
__device__ __forceinline__ void named_barrier_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// Pins the compiler's view of wgmma operand registers: nothing that touches them may move across
// (the wgmma asm writes them asynchronously; only wgmma_fence / wgmma_wait order the hardware).
template <int N>
__device__ __forceinline__ void wgmma_fence_operands(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void wgmma_fence_operands(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(r[i][j])::"memory");
}

// wgmma shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"):
//   bits 0-13 start >> 4 | 16-29 LBO >> 4 | 32-45 SBO >> 4 | 49-51 base offset (0: tiles are
//   1024-byte aligned) | 62-63 swizzle mode (1 = 128B).
__device__ __forceinline__ uint64_t make_smem_desc(const void* tile, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  uint64_t desc = (smem_u32(tile) & 0x3FFFF) >> 4;
  desc |= (uint64_t)((lbo_bytes & 0x3FFFF) >> 4) << 16;
  desc |= (uint64_t)((sbo_bytes & 0x3FFFF) >> 4) << 32;
  desc |= 1ull << 62;
  return desc;
}

// K-major operand [rows][64] bf16 with 128B swizzle (Q as A, K as B): rows in 8-row groups of
// 1024 B (SBO); LBO unused for swizzled K-major ("assumed 1"). Step k16 = +32 B = +2 encoded.
__device__ __forceinline__ uint64_t desc_k_major(const void* tile) { return make_smem_desc(tile, 16, 1024); }

// MN-major operand (V as B of P V): V is [BLOCK_N = K][64 = N] row-major, N contiguous. Canonical
// MN-major 128B layout ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)): SBO = 1024 B between 8-row K groups,
// LBO = distance to the next 64-wide N panel (there is none at N = 64). Step k16 = 16 rows = +2048 B.
__device__ __forceinline__ uint64_t desc_mn_major(const void* tile) {
  return make_smem_desc(tile, BLOCK_N * 128, 1024);
}

// Two fp32 -> one register of two bf16, `lo` in bits 0-15 (the lower column of the pair).
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// D[64 x 128] (+)= A * B^T, A and B both from smem, both K-major (imm-trans-a = imm-trans-b = 0).
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], uint64_t a_desc, uint64_t b_desc,
                                                    int scale_d) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %66, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16\n"
      " {%0, %1, %2, %3, %4, %5, %6, %7,"
      "  %8, %9, %10, %11, %12, %13, %14, %15,"
      "  %16, %17, %18, %19, %20, %21, %22, %23,"
      "  %24, %25, %26, %27, %28, %29, %30, %31,"
      "  %32, %33, %34, %35, %36, %37, %38, %39,"
      "  %40, %41, %42, %43, %44, %45, %46, %47,"
      "  %48, %49, %50, %51, %52, %53, %54, %55,"
      "  %56, %57, %58, %59, %60, %61, %62, %63},\n"
      " %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),
        "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
        "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
        "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
        "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
        "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]),
        "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
        "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a_desc), "l"(b_desc), "r"(scale_d));
}

// D[64 x 64] (+)= A * B^T, A and B both from smem, both K-major (imm-trans-a = imm-trans-b = 0).
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], uint64_t a_desc, uint64_t b_desc,
                                                    int scale_d) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16\n"
      " {%0, %1, %2, %3, %4, %5, %6, %7,"
      "  %8, %9, %10, %11, %12, %13, %14, %15,"
      "  %16, %17, %18, %19, %20, %21, %22, %23,"
      "  %24, %25, %26, %27, %28, %29, %30, %31},\n"
      " %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),
        "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
        "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
        "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a_desc), "l"(b_desc), "r"(scale_d));
}

// D[64 x 64] (+)= A * B, A from registers (bf16 fragment), B from smem MN-major (imm-trans-b = 1).
__device__ __forceinline__ void wgmma_m64n64k16_rs_tnspB(float (&d)[32], const uint32_t (&a)[4],
                                                          uint64_t b_desc, int scale_d) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %37, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16\n"
      " {%0, %1, %2, %3, %4, %5, %6, %7,"
      "  %8, %9, %10, %11, %12, %13, %14, %15,"
      "  %16, %17, %18, %19, %20, %21, %22, %23,"
      "  %24, %25, %26, %27, %28, %29, %30, %31},\n"
      " {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),
        "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
        "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
        "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(scale_d));
}

// S tile of one consumer: D[64 x BLOCK_N] = Q_sub[64 x 64] * K_tile[BLOCK_N x 64]^T, 4 k16 steps.
__device__ __forceinline__ void wgmma_qk(float (&s)[BLOCK_N / 2], uint64_t q_desc, uint64_t k_desc) {
#pragma unroll
  for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
#if BLOCK_N == 128
    wgmma_m64n128k16_ss(s, q_desc + 2 * kk, k_desc + 2 * kk, kk > 0);
#else
    wgmma_m64n64k16_ss(s, q_desc + 2 * kk, k_desc + 2 * kk, kk > 0);
#endif
  }
}

// ---------------------------------------------------------------------------------------------
// The kernel. grid = (ATT_SEQ / BLOCK_M, ATT_BATCH * ATT_HEADS), block = 384 threads.
// ---------------------------------------------------------------------------------------------
__global__ void __launch_bounds__(NUM_THREADS, 1)
ws_attention_fwd(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                 const __grid_constant__ CUtensorMap tmV, const __grid_constant__ CUtensorMap tmO) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t q_full;             // Q tile landed (TMA tx)
  __shared__ uint64_t k_full[STAGES];     // K tile of stage s landed (TMA tx)
  __shared__ uint64_t v_full[STAGES];     // V tile of stage s landed (TMA tx)
  __shared__ uint64_t kv_empty[STAGES];   // both consumers are done reading K and V of stage s

  // 128B-swizzled tiles must start on a 1024-byte boundary (the swizzle XORs address bits 4-6 with 7-9).
  uint8_t* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  __nv_bfloat16* sQ = reinterpret_cast<__nv_bfloat16*>(smem + SMEM_Q_OFF);
  __nv_bfloat16* sK = reinterpret_cast<__nv_bfloat16*>(smem + SMEM_K_OFF);  // stage s: + s * BLOCK_N * HEAD_DIM
  __nv_bfloat16* sV = reinterpret_cast<__nv_bfloat16*>(smem + SMEM_V_OFF);
  __nv_bfloat16* sO = reinterpret_cast<__nv_bfloat16*>(smem + SMEM_O_OFF);

  const int warpgroup = threadIdx.x / 128;
  const int q_row0 = blockIdx.y * ATT_SEQ + blockIdx.x * BLOCK_M;  // first Q/O row of this CTA
  const int kv_row0 = blockIdx.y * ATT_SEQ;                         // first K/V row of this (batch, head)

  if (threadIdx.x == 0) {
    mbar_init(&q_full, 1);  // one arrive_expect_tx by the producer lane
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&k_full[s], 1);
      mbar_init(&v_full[s], 1);
      mbar_init(&kv_empty[s], NUM_CONSUMER_THREADS);  // every consumer thread arrives once per use
    }
    fence_barrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---- producer: warpgroup 0; one lane (CTA thread 0) issues every TMA ----
    warpgroup_reg_dealloc<PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      mbar_arrive_expect_tx(&q_full, Q_TILE_BYTES);
      tma_load_2d(sQ, &tmQ, &q_full, 0, q_row0);
      for (int it = 0; it < KV_TILES; ++it) {
        const int s = it % STAGES;
        const uint32_t phase = (it / STAGES) & 1;
        mbar_wait(&kv_empty[s], phase ^ 1);  // round 0 waits on parity 1: passes on a fresh barrier
        mbar_arrive_expect_tx(&k_full[s], KV_TILE_BYTES);
        tma_load_2d(sK + s * BLOCK_N * HEAD_DIM, &tmK, &k_full[s], 0, kv_row0 + it * BLOCK_N);
        mbar_arrive_expect_tx(&v_full[s], KV_TILE_BYTES);
        tma_load_2d(sV + s * BLOCK_N * HEAD_DIM, &tmV, &v_full[s], 0, kv_row0 + it * BLOCK_N);
      }
    }
  } else {
    // ---- consumers: warpgroups 1 and 2; warpgroup 1 + c owns Q rows [64c, 64c + 64) of the tile ----
    warpgroup_reg_alloc<CONSUMER_REGS>();
    const int c = warpgroup - 1;
    const int t = threadIdx.x % 128;
    const int warp = t / 32, lane = t % 32;
    // wgmma accumulator fragment: this thread holds rows r0 = 16*warp + lane/4 and r0 + 8,
    // columns 8j + 2*(lane%4) + {0,1}; register 4j+{0,1} -> row r0, 4j+{2,3} -> row r0 + 8.
    const float scale_log2 = rsqrtf((float)HEAD_DIM) * 1.4426950408889634f;  // exp(x/sqrt(d)) = exp2(x*this)

    float o_acc[HEAD_DIM / 2];
    float s_acc[BLOCK_N / 2];
#pragma unroll
    for (int i = 0; i < HEAD_DIM / 2; ++i) o_acc[i] = 0.f;
#pragma unroll
    for (int i = 0; i < BLOCK_N / 2; ++i) s_acc[i] = 0.f;
    float row_max[2] = {-INFINITY, -INFINITY};  // running max of the scaled-log2 scores of rows r0, r0+8
    float row_sum[2] = {0.f, 0.f};              // this thread's share of the running sum (quad-reduced at the end)

    const uint64_t q_desc = desc_k_major(sQ + c * 64 * HEAD_DIM);
    mbar_wait(&q_full, 0);

    for (int it = 0; it < KV_TILES; ++it) {
      const int s = it % STAGES;
      const uint32_t phase = (it / STAGES) & 1;

      // S = Q K^T (both operands from smem)
      mbar_wait(&k_full[s], phase);
      wgmma_fence_operands(s_acc);
      wgmma_fence();
      wgmma_qk(s_acc, q_desc, desc_k_major(sK + s * BLOCK_N * HEAD_DIM));
      wgmma_commit();
      wgmma_wait<0>();
      wgmma_fence_operands(s_acc);

      // online softmax: new row max, then the correction step on O and the running sum
      float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j) {
        tile_max[0] = fmaxf(tile_max[0], fmaxf(s_acc[4 * j + 0], s_acc[4 * j + 1]));
        tile_max[1] = fmaxf(tile_max[1], fmaxf(s_acc[4 * j + 2], s_acc[4 * j + 3]));
      }
      float corr[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // the 4 lanes of a quad (lane/4 equal) hold one row between them
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 1));
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 2));
        const float new_max = fmaxf(row_max[h], tile_max[h] * scale_log2);
        corr[h] = exp2f(row_max[h] - new_max);  // 0 on the first tile (row_max = -inf)
        row_max[h] = new_max;
        row_sum[h] *= corr[h];
      }
#pragma unroll
      for (int j = 0; j < HEAD_DIM / 8; ++j) {
        o_acc[4 * j + 0] *= corr[0];
        o_acc[4 * j + 1] *= corr[0];
        o_acc[4 * j + 2] *= corr[1];
        o_acc[4 * j + 3] *= corr[1];
      }
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int h = e / 2;
          s_acc[4 * j + e] = exp2f(fmaf(s_acc[4 * j + e], scale_log2, -row_max[h]));
          row_sum[h] += s_acc[4 * j + e];
        }
      }

      // P -> bf16 A fragments: k16 chunk kc takes accumulator registers 8kc..8kc+7 (S columns
      // 16kc..16kc+15); register r of the chunk packs S registers 8kc+2r, 8kc+2r+1.
      uint32_t p_frag[BLOCK_N / 16][4];
#pragma unroll
      for (int kc = 0; kc < BLOCK_N / 16; ++kc)
#pragma unroll
        for (int r = 0; r < 4; ++r) p_frag[kc][r] = pack_bf16x2(s_acc[8 * kc + 2 * r], s_acc[8 * kc + 2 * r + 1]);

      // O += P V (A = P from registers, B = V from smem, MN-major)
      mbar_wait(&v_full[s], phase);
      const uint64_t v_desc = desc_mn_major(sV + s * BLOCK_N * HEAD_DIM);
      wgmma_fence_operands(o_acc);
      wgmma_fence_operands(p_frag);
      wgmma_fence();
#pragma unroll
      for (int kc = 0; kc < BLOCK_N / 16; ++kc)
        wgmma_m64n64k16_rs_tnspB(o_acc, p_frag[kc], v_desc + kc * (2048 >> 4), 1);
      wgmma_commit();
      wgmma_wait<0>();
      wgmma_fence_operands(o_acc);

      mbar_arrive(&kv_empty[s]);  // after wgmma_wait: this thread's wgmmas no longer read K or V of stage s
    }

    // ---- epilogue: O / row sum -> bf16 -> swizzled smem -> one TMA store per consumer ----
    float inv_sum[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 1);
      row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 2);
      inv_sum[h] = 1.f / row_sum[h];
    }
    uint8_t* sO_c = reinterpret_cast<uint8_t*>(sO + c * 64 * HEAD_DIM);  // 64 x 64 bf16, 8 KB, 1024-aligned
    const int r0 = 16 * warp + lane / 4;
#pragma unroll
    for (int j = 0; j < HEAD_DIM / 8; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = r0 + 8 * h;
        // 128B swizzle as TMA applies it: 16-byte chunk index (col/8) XOR (row % 8)
        const int byte = row * 128 + ((j ^ (row & 7)) << 4) + (2 * (lane % 4)) * 2;
        *reinterpret_cast<uint32_t*>(sO_c + byte) =
            pack_bf16x2(o_acc[4 * j + 2 * h] * inv_sum[h], o_acc[4 * j + 2 * h + 1] * inv_sum[h]);
      }
    }
    fence_proxy_async();                    // make these generic-proxy writes visible to the TMA store
    named_barrier_sync(1 + c, 128);         // the whole consumer warpgroup has written its rows
    if (t == 0) {
      tma_store_2d(&tmO, sO_c, 0, q_row0 + c * 64);
      tma_store_commit();
      tma_store_wait<0>();                  // sO must outlive the TMA's read of it: smem dies with the CTA
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Host: tensor maps and the launch, shared by main() and bench/attention_vs_naive.cu
// ---------------------------------------------------------------------------------------------
#define CUDA_CHECK(call)                                                                          \
  do {                                                                                            \
    cudaError_t err_ = (call);                                                                    \
    if (err_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "CUDA error: %s (%d) at %s:%d\n", cudaGetErrorString(err_), (int)err_, \
                   __FILE__, __LINE__);                                                           \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

struct WsAttentionPlan {
  CUtensorMap q, k, v, o;
};

// A [ATT_ROWS, HEAD_DIM] bf16 row-major tensor, boxes of [box_rows, HEAD_DIM], 128B swizzle.
static void make_tensor_map(CUtensorMap* map, const void* base, uint32_t box_rows) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  if (!encode) {
    cudaDriverEntryPointQueryResult qres;
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode), 12000,
                                                cudaEnableDefault, &qres));
    if (qres != cudaDriverEntryPointSuccess || !encode) {
      std::fprintf(stderr, "cuTensorMapEncodeTiled is not available from the driver\n");
      std::exit(1);
    }
  }
  const cuuint64_t dims[2] = {HEAD_DIM, (cuuint64_t)ATT_ROWS};         // innermost first
  const cuuint64_t strides[1] = {HEAD_DIM * sizeof(__nv_bfloat16)};   // bytes between rows
  const cuuint32_t box[2] = {HEAD_DIM, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box,
                      elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed: CUresult %d\n", (int)r);
    std::exit(1);
  }
}

static WsAttentionPlan ws_attention_plan(const __nv_bfloat16* dQ, const __nv_bfloat16* dK,
                                         const __nv_bfloat16* dV, __nv_bfloat16* dO) {
  WsAttentionPlan p;
  make_tensor_map(&p.q, dQ, BLOCK_M);
  make_tensor_map(&p.k, dK, BLOCK_N);
  make_tensor_map(&p.v, dV, BLOCK_N);
  make_tensor_map(&p.o, dO, 64);  // one 64-row box per consumer warpgroup
  return p;
}

static cudaError_t ws_attention_launch(const WsAttentionPlan& p, cudaStream_t stream = 0) {
  static bool smem_opt_in = false;  // > 48 KB of dynamic smem needs the opt-in, once per process
  if (!smem_opt_in) {
    cudaError_t err = cudaFuncSetAttribute(ws_attention_fwd, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    if (err != cudaSuccess) return err;
    smem_opt_in = true;
  }
  const dim3 grid(ATT_SEQ / BLOCK_M, ATT_BATCH * ATT_HEADS);
  ws_attention_fwd<<<grid, NUM_THREADS, SMEM_BYTES, stream>>>(p.q, p.k, p.v, p.o);
  return cudaGetLastError();
}

// Skips (exit 77) unless an sm_90 device is present.
static void ws_require_hopper() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) wscheck::skip("no CUDA device");
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9 || prop.minor != 0) wscheck::skip("needs sm_90a (Hopper)");
}

#ifndef WS_NO_MAIN
// wsreduce: keep begin (the reference and its check: a reduction may not change them)
// fp64 reference from the same bf16-rounded inputs.
static void reference_attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                                std::vector<float>& o) {
  const double scale = 1.0 / std::sqrt((double)HEAD_DIM);
  std::vector<double> p(ATT_SEQ);
  for (int bh = 0; bh < ATT_BATCH * ATT_HEADS; ++bh) {
    const size_t base = (size_t)bh * ATT_SEQ * HEAD_DIM;
    for (int i = 0; i < ATT_SEQ; ++i) {
      const float* qi = &q[base + (size_t)i * HEAD_DIM];
      double mx = -INFINITY;
      for (int j = 0; j < ATT_SEQ; ++j) {
        const float* kj = &k[base + (size_t)j * HEAD_DIM];
        double dot = 0;
        for (int d = 0; d < HEAD_DIM; ++d) dot += (double)qi[d] * kj[d];
        p[j] = dot * scale;
        mx = std::max(mx, p[j]);
      }
      double sum = 0;
      for (int j = 0; j < ATT_SEQ; ++j) sum += (p[j] = std::exp(p[j] - mx));
      for (int d = 0; d < HEAD_DIM; ++d) {
        double acc = 0;
        for (int j = 0; j < ATT_SEQ; ++j) acc += p[j] * v[base + (size_t)j * HEAD_DIM + d];
        o[base + (size_t)i * HEAD_DIM + d] = (float)(acc / sum);
      }
    }
  }
}
// wsreduce: keep end

int main() {
  ws_require_hopper();
  const size_t n = (size_t)ATT_ROWS * HEAD_DIM;
  const size_t bytes = n * sizeof(__nv_bfloat16);
  std::printf("ws_attention_sm90 batch=%d heads=%d seq=%d head_dim=%d block_m=%d block_n=%d stages=%d smem=%d\n",
              ATT_BATCH, ATT_HEADS, ATT_SEQ, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, SMEM_BYTES);

  const unsigned seed = std::random_device{}();
  std::printf("seed=%u\n", seed);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<__nv_bfloat16> hQ(n), hK(n), hV(n), hO(n);
  std::vector<float> fQ(n), fK(n), fV(n), fO(n), ref(n);
  for (size_t i = 0; i < n; ++i) {
    hQ[i] = __float2bfloat16(dist(gen)); fQ[i] = __bfloat162float(hQ[i]);
    hK[i] = __float2bfloat16(dist(gen)); fK[i] = __bfloat162float(hK[i]);
    hV[i] = __float2bfloat16(dist(gen)); fV[i] = __bfloat162float(hV[i]);
  }

  __nv_bfloat16 *dQ, *dK, *dV, *dO;
  CUDA_CHECK(cudaMalloc(&dQ, bytes));
  CUDA_CHECK(cudaMalloc(&dK, bytes));
  CUDA_CHECK(cudaMalloc(&dV, bytes));
  CUDA_CHECK(cudaMalloc(&dO, bytes));
  CUDA_CHECK(cudaMemcpy(dQ, hQ.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dK, hK.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dV, hV.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dO, 0xFF, bytes));  // poison: an unwritten output reads as NaN

  const WsAttentionPlan plan = ws_attention_plan(dQ, dK, dV, dO);
  CUDA_CHECK(ws_attention_launch(plan));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(hO.data(), dO, bytes, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; ++i) fO[i] = __bfloat162float(hO[i]);

  // wsreduce: keep begin
  reference_attention(fQ, fK, fV, ref);
  // bf16 output (rel 2^-9) and bf16 P; |O| is ~0.03 for these inputs, so atol stays well below it
  wscheck::compare(fO.data(), ref.data(), ATT_ROWS, HEAD_DIM, 2e-3, 1e-2, "O");
  // wsreduce: keep end

  CUDA_CHECK(cudaFree(dQ));
  CUDA_CHECK(cudaFree(dK));
  CUDA_CHECK(cudaFree(dV));
  CUDA_CHECK(cudaFree(dO));
  return wscheck::exit_code();
}
#endif  // WS_NO_MAIN
