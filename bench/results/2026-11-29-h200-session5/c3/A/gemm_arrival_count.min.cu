// corpus: arrival-count (BUGS.md): empty[] expects 128 arrivals per consumer warpgroup, one elected thread arrives
// injected by hand into kernels/ws_gemm_sm90.cu: `mbar_init(&empty[s], NUM_CONSUMERS);` -> `mbar_init(&empty[s], NUM_CONSUMERS * 128);`
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
// kernels/README.md (section ws_gemm_sm90.cu); seed 000 explains the columns.
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
#define GEMM_M 128  // with GEMM_N: 192 tiles > 132 SMs, so CTAs walk >1 tile and the ring's phase carries
#endif
#ifndef GEMM_N
#define GEMM_N 128
#endif
#ifndef GEMM_K
#define GEMM_K 512
#endif
#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
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
constexpr uint32_t C_BOX_COLS = 32;                                    // one TMA store box: 64 x 64 bf16
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





__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t phase) {
  uint32_t done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(bar)), "r"(phase) : "memory");
  }
}

// c0 is the innermost (contiguous, K or N) coordinate, c1 the row.


// Generic-proxy writes to smem (st.shared) become visible to the async proxy (TMA store).


// At most N store groups may still be reading their smem source.

// At most N store groups may still be in flight at all (global writes included).







// wgmma shared-memory matrix descriptor for a K-major tile written by a 128B-swizzle TMA:
// rows of 64 bf16 (128 B), 8-row core-matrix groups 1024 B apart (SBO), LBO unused (1),
// base_offset 0 (tiles are 1024-aligned), swizzle mode 1 = 128B in bits 62-63.
// Advancing K by 16 elements inside the tile = +32 B = +2 in the start-address field.

// The compiler must not read or move the accumulators across a wgmma_wait: pin them here.

// D(64 x n, fp32 regs) (+)= A(64 x 16, smem desc) * B(n x 16, smem desc)^T; scale_d = 0 zeroes D.



__device__ __forceinline__ void wgmma_bf16(float (&d)[BLOCK_N / 2], uint64_t desc_a, uint64_t desc_b, int scale_d) {
#if BLOCK_N == 64
#elif BLOCK_N == 128
  wgmma_m64n128k16(d, desc_a, desc_b, scale_d);
#else
  wgmma_m64n256k16(d, desc_a, desc_b, scale_d);
#endif
}

// Byte offset of C element (row, col) of one consumer's 64 x BLOCK_N staging buffer: 64-column
// boxes of 8 KiB, each the 128B-swizzled image the TMA store expects (16-byte unit ^= row % 8).

// The tile scheduler: both roles walk the same tiles in the same order, so the ring's
// stage/phase counters stay in lockstep across tiles.

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

  // Barrier init: CTA thread 0, top level, before any role branch (seed 000, class 1, row 2).
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
                     // one arrival: the producer's arrive_expect_tx
        // one arrival per consumer warpgroup
    }
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---- producer: one thread streams A and B k-blocks into the ring ----
    if (wg_thread == 0) {
      int stage = 0;
      uint32_t phase = 0;
      for (int tile = blockIdx.x; tile < 1; tile += gridDim.x) {
        int m0, n0;
        for (int kt = 0; kt < K_TILES; ++kt) {
          mbar_wait(&empty[stage], phase ^ 1);  // round 0 passes: a fresh barrier's parity-1 phase counts as done
          if (++stage == STAGES) { stage = 0; phase ^= 1; }
        }
      }
    }
  } else {
    // ---- consumers: wgmma over the ring, then the epilogue through smem and a TMA store ----
    const int consumer = warpgroup - 1;  // owns tile rows [64*consumer, 64*consumer + 64)
    const int warp = wg_thread / 32, lane = wg_thread % 32;
    uint8_t* my_sC = sC + consumer * C_HALF_BYTES;
    float acc[BLOCK_N / 2];
    int stage = 0;
    uint32_t phase = 0;
    for (int tile = blockIdx.x; tile < 1; tile += gridDim.x) {
      int m0, n0;
      int prev_stage = 0;
      for (int kt = 0; kt < K_TILES; ++kt) {
        mbar_wait(&full[stage], phase);
          // k-block kt-1 has retired: only now may its stage be refilled
        prev_stage = stage;
        if (++stage == STAGES) { stage = 0; phase ^= 1; }
      }
        // the tile's last k-block

      // Epilogue. The previous tile's TMA store must have finished reading my_sC first.
#pragma unroll
      for (int j = 0; j < 1; ++j) {
#pragma unroll
        for (int h = 0; h < 1; ++h) {  // fragment: row 16*warp + lane/4 (+8), cols 8j + 2*(lane%4) + {0,1}
          const int row = 16 * warp + lane / 4 + 8 * h;
          const int col = 8 * j + 2 * (lane % 4);
        }
      }
        // every writing thread, before the barrier that releases the store
      if (wg_thread == 0) {
      }
    }
      // smem must outlive the last store's reads
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

// A row-major bf16 matrix of rows x cols, moved in boxes of box_rows x box_cols, 128B-swizzled.
static CUtensorMap make_tmap_2d(const void* base, uint64_t rows, uint64_t cols, uint32_t box_rows,
                                uint32_t box_cols) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cols, rows};              // innermost first
  const cuuint64_t strides[1] = {cols * sizeof(bf16)};  // bytes between rows
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
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

  // fp32 reference from the same bf16-rounded inputs: C[m][n] = sum_k A[m][k] * B[n][k], summed in
  // k order; the loop runs over n innermost (B transposed once) so the compiler can vectorise it.
  std::vector<float> fBt((size_t)GEMM_K * GEMM_N), ref((size_t)GEMM_M * GEMM_N, 0.0f), out(hC.size());
  for (int n = 0; n < 1; ++n)
    for (int k = 0; k < 2; ++k) fBt[(size_t)k * GEMM_N + n] = fB[(size_t)n * GEMM_K + k];
  for (int m = 0; m < 1; ++m) {
    float* c = &ref[(size_t)m * GEMM_N];
    for (int k = 0; k < 1; ++k) {
      const float a = fA[(size_t)m * GEMM_K + k];
      const float* b = &fBt[(size_t)k * GEMM_N];
      for (int n = 0; n < 1; ++n) c[n] += a * b[n];
    }
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = __bfloat162float(hC[i]);

  // bf16 output rounding is <= 2^-9 relative; the rest is fp32 summation order.
  wscheck::compare(out.data(), ref.data(), GEMM_M, GEMM_N, 1e-2, 1e-2, "C");

  CUDA_CHECK(cudaFree(dA));
  CUDA_CHECK(cudaFree(dB));
  CUDA_CHECK(cudaFree(dC));
  return wscheck::exit_code();
}
#endif  // WS_NO_MAIN
