// expect_tx_gemm: warp-specialised TMA -> mbarrier ring -> wgmma GEMM for sm_90a.
//
//   C[256 x 256] (fp32) = A[256 x 512] (bf16, K contiguous) * B[256 x 512]^T (bf16, K contiguous)
//
// One CTA per 128x128 output tile (grid 2x2), 384 threads = three warpgroups:
//   WG0      producer: one elected thread streams 128x64 boxes of A and B with TMA
//   WG1, WG2 consumers: each owns 64 of the 128 tile rows, wgmma m64n128k16 from smem
// The 8 k-tiles go through a 4-stage ring, so every stage is refilled once.
//   full[s]  : 1 arrival (producer's arrive.expect_tx) + the bytes of both TMA boxes
//   empty[s] : 256 arrivals (every consumer thread, after its wgmma group retired)
// Build: nvcc -std=c++17 -O2 -arch=sm_90a -lineinfo -o /tmp/x expect_tx_gemm_ok.cu -lcuda
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

static void etx_check(cudaError_t e, const char* what, int line) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "[etx] %s failed (line %d): %s\n", what, line, cudaGetErrorString(e));
  std::exit(2);
}
#define ETX_CHECK(call) etx_check((call), #call, __LINE__)

// nvcc 13 also emits a generic compute_90 PTX image for -arch=sm_90a; wgmma and
// setmaxnreg only exist in the arch-specific (sm_90a) flavour, so guard them.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ETX_SM90A 1
#endif

namespace etx {

constexpr int kM = 256, kN = 256, kK = 512;
constexpr int kTileM = 128, kTileN = 128, kTileK = 64;  // 64 bf16 = one 128-byte swizzle row
constexpr int kStages = 4;
constexpr int kKTiles = kK / kTileK;                    // 8
constexpr int kThreads = 384;
constexpr int kConsumerThreads = 256;
constexpr int kRowsPerConsumerWG = 64;
constexpr uint32_t kTileABytes = kTileM * kTileK * sizeof(uint16_t);  // 16 KB
constexpr uint32_t kTileBBytes = kTileN * kTileK * sizeof(uint16_t);  // 16 KB
constexpr uint32_t kStageBytes = kTileABytes + kTileBBytes;           // 32 KB
constexpr uint32_t kRingBytes = kStages * kStageBytes;                // 128 KB
constexpr uint32_t kBarrierBytes = 2 * kStages * sizeof(uint64_t);
constexpr uint32_t kSmemBytes = 1024 /* alignment slack */ + kRingBytes + kBarrierBytes;

static_assert(kM % kTileM == 0 && kN % kTileN == 0 && kK % kTileK == 0, "tiling");
static_assert(kKTiles > kStages, "the ring has to wrap for the test to mean anything");
static_assert(kTileABytes % 1024 == 0 && kTileBBytes % 1024 == 0, "SW128 atoms need 1 KB alignment");
static_assert(kTileM == 2 * kRowsPerConsumerWG, "two consumer warpgroups split the tile rows");

// ---- ptx wrappers ------------------------------------------------------------
__device__ __forceinline__ uint32_t cvta_smem(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void bar_init(uint32_t bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrivals) : "memory");
}

__device__ __forceinline__ void fence_bar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

__device__ __forceinline__ void bar_arrive_tx(uint32_t bar, uint32_t tx_bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(tx_bytes)
               : "memory");
}

__device__ __forceinline__ void bar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

__device__ __forceinline__ uint32_t bar_try_parity(uint32_t bar, uint32_t parity) {
  uint32_t ready;
  asm volatile(
      "{\n\t.reg .pred P1;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, P1;\n\t}"
      : "=r"(ready)
      : "r"(bar), "r"(parity)
      : "memory");
  return ready;
}

__device__ __forceinline__ void bar_wait(uint32_t bar, uint32_t parity) {
  while (!bar_try_parity(bar, parity)) {
  }
}

__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// 2-D tiled TMA load, completion reported as transaction bytes on `bar`.
__device__ __forceinline__ void tma_load_tile(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                              int c_inner, int c_outer) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c_inner), "r"(c_outer), "r"(bar)
      : "memory");
}

template <uint32_t kRegs>
__device__ __forceinline__ void regs_shrink() {
#ifdef ETX_SM90A
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
#endif
}

template <uint32_t kRegs>
__device__ __forceinline__ void regs_grow() {
#ifdef ETX_SM90A
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
#endif
}

// Shared-memory matrix descriptor for a K-major operand that TMA wrote with
// SWIZZLE_128B: rows of 128 bytes, 8-row (1 KB) core-matrix groups.
__device__ __forceinline__ uint64_t smem_desc_sw128(uint32_t saddr) {
  uint64_t desc = 0;
  desc |= static_cast<uint64_t>((saddr & 0x3FFFFu) >> 4);  // [0,14)  start address >> 4
  desc |= static_cast<uint64_t>(16u >> 4) << 16;            // [16,30) LBO (unused for SW128 K-major)
  desc |= static_cast<uint64_t>(1024u >> 4) << 32;          // [32,46) SBO: next 8-row group
  desc |= static_cast<uint64_t>(1u) << 62;                  // [62,64) layout: 128B swizzle
  return desc;
}

__device__ __forceinline__ void mma_fence() {
#ifdef ETX_SM90A
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ void mma_commit() {
#ifdef ETX_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#else
  __trap();
#endif
}

template <int kPending>
__device__ __forceinline__ void mma_wait() {
#ifdef ETX_SM90A
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
#else
  __trap();
#endif
}

// Keeps the compiler from moving accumulator register traffic across wgmma fences/waits.
__device__ __forceinline__ void pin_acc(float (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// D[64x128] = A[64x16] * B[16x128] (+ D if accumulate), both operands K-major in smem.
__device__ __forceinline__ void mma_m64n128k16(float (&d)[64], uint64_t desc_a, uint64_t desc_b,
                                               int accumulate) {
#ifdef ETX_SM90A
  asm volatile(
      "{\n\t.reg .pred ACC;\n\t"
      "setp.ne.b32 ACC, %66, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, ACC, 1, 1, 0, 0;\n\t"
      "}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(accumulate)
      : "memory");
#else
  (void)d; (void)desc_a; (void)desc_b; (void)accumulate;
  __trap();
#endif
}

// ---- kernel ------------------------------------------------------------------
__global__ void __launch_bounds__(kThreads, 1)
gemm_tma_wgmma(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
               float* __restrict__ out) {
  extern __shared__ uint8_t smem_raw[];
  // SW128 TMA destinations and wgmma descriptors want 1 KB-aligned tiles.
  const uint32_t raw_addr = cvta_smem(smem_raw);
  const uint32_t ring = (raw_addr + 1023u) & ~1023u;
  const uint32_t full_bar = ring + kRingBytes;                  // kStages x 8 B
  const uint32_t empty_bar = full_bar + kStages * sizeof(uint64_t);

  const int warpgroup = threadIdx.x / 128;
  const int wg_thread = threadIdx.x % 128;
  const int tile_m0 = blockIdx.y * kTileM;
  const int tile_n0 = blockIdx.x * kTileN;

  if (threadIdx.x == 0) {
    tma_prefetch_map(&map_a);
    tma_prefetch_map(&map_b);
    for (int s = 0; s < kStages; ++s) {
      bar_init(full_bar + 8 * s, 1);
      bar_init(empty_bar + 8 * s, kConsumerThreads);
    }
    fence_bar_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---------------- producer warpgroup ----------------
    regs_shrink<40>();
    if (wg_thread == 0) {
      for (int kt = 0; kt < kKTiles; ++kt) {
        const int s = kt % kStages;
        const uint32_t lap = static_cast<uint32_t>(kt / kStages) & 1u;
        const uint32_t stage_a = ring + s * kStageBytes;
        const uint32_t stage_b = stage_a + kTileABytes;
        // first lap: parity 1 of a fresh barrier counts as already completed
        bar_wait(empty_bar + 8 * s, lap ^ 1u);
        // one arrival + the bytes both boxes will land on this barrier
        bar_arrive_tx(full_bar + 8 * s, (kTileM + kTileN) * kTileK * static_cast<uint32_t>(sizeof(uint16_t)));
        tma_load_tile(stage_a, &map_a, full_bar + 8 * s, kt * kTileK, tile_m0);
        tma_load_tile(stage_b, &map_b, full_bar + 8 * s, kt * kTileK, tile_n0);
      }
    }
  } else {
    // ---------------- consumer warpgroups ----------------
    regs_grow<232>();
    const int cwg = warpgroup - 1;  // 0 -> tile rows 0..63, 1 -> rows 64..127
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = 0.0f;

    for (int kt = 0; kt < kKTiles; ++kt) {
      const int s = kt % kStages;
      const uint32_t lap = static_cast<uint32_t>(kt / kStages) & 1u;
      bar_wait(full_bar + 8 * s, lap);

      // this warpgroup's 64 rows of A start 64 * 128 B = 8 KB into the A box
      const uint32_t a_base = ring + s * kStageBytes + cwg * kRowsPerConsumerWG * 128u;
      const uint32_t b_base = ring + s * kStageBytes + kTileABytes;
      pin_acc(acc);
      mma_fence();
#pragma unroll
      for (int kk = 0; kk < kTileK / 16; ++kk) {
        // a k16 slice is 32 bytes further along the (swizzled) 128-byte row
        mma_m64n128k16(acc, smem_desc_sw128(a_base + kk * 32u), smem_desc_sw128(b_base + kk * 32u),
                       (kt | kk) != 0);
      }
      mma_commit();
      mma_wait<0>();               // the stage's smem has been read by the tensor cores
      pin_acc(acc);
      bar_arrive(empty_bar + 8 * s);  // hand the stage back to the producer
    }

    // Epilogue: wgmma m64nN f32 accumulator layout.
    const int warp = wg_thread / 32, lane = wg_thread % 32;
    const int row = tile_m0 + cwg * kRowsPerConsumerWG + warp * 16 + (lane >> 2);
#pragma unroll
    for (int j = 0; j < kTileN / 8; ++j) {
      const int col = tile_n0 + j * 8 + (lane & 3) * 2;
      *reinterpret_cast<float2*>(out + static_cast<size_t>(row) * kN + col) =
          make_float2(acc[4 * j + 0], acc[4 * j + 1]);
      *reinterpret_cast<float2*>(out + static_cast<size_t>(row + 8) * kN + col) =
          make_float2(acc[4 * j + 2], acc[4 * j + 3]);
    }
  }
}

}  // namespace etx

// ---- host side ---------------------------------------------------------------
static uint16_t bf16_bits(float v) {  // exact for the small integers used here
  uint32_t u;
  std::memcpy(&u, &v, sizeof(u));
  return static_cast<uint16_t>(u >> 16);
}

static float a_value(int m, int k) { return static_cast<float>((m * 5 + k * 3) % 11 - 5); }
static float b_value(int n, int k) { return static_cast<float>((n * 7 + k) % 9 - 4); }

static CUtensorMap encode_kmajor_bf16(void* base, int rows, int cols, int box_rows, int box_cols) {
  CUtensorMap map;
  std::memset(&map, 0, sizeof(map));
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t row_pitch[1] = {static_cast<cuuint64_t>(cols) * sizeof(uint16_t)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem_stride[2] = {1, 1};
  const CUresult r = cuTensorMapEncodeTiled(
      &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, base, dims, row_pitch, box, elem_stride,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "[etx] cuTensorMapEncodeTiled failed (%d)\n", static_cast<int>(r));
    std::exit(2);
  }
  return map;
}

int main() {
  using namespace etx;
  ETX_CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  ETX_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9) {
    std::fprintf(stderr, "[etx] needs an sm_90 (Hopper) device, found sm_%d%d\n", prop.major, prop.minor);
    return 2;
  }

  std::vector<uint16_t> h_a(static_cast<size_t>(kM) * kK), h_b(static_cast<size_t>(kN) * kK);
  std::vector<float> fa(h_a.size()), fb(h_b.size());
  for (size_t i = 0; i < h_a.size(); ++i) {
    fa[i] = a_value(static_cast<int>(i / kK), static_cast<int>(i % kK));
    h_a[i] = bf16_bits(fa[i]);
  }
  for (size_t i = 0; i < h_b.size(); ++i) {
    fb[i] = b_value(static_cast<int>(i / kK), static_cast<int>(i % kK));
    h_b[i] = bf16_bits(fb[i]);
  }

  uint16_t *d_a = nullptr, *d_b = nullptr;
  float* d_c = nullptr;
  const size_t c_bytes = static_cast<size_t>(kM) * kN * sizeof(float);
  ETX_CHECK(cudaMalloc(&d_a, h_a.size() * sizeof(uint16_t)));
  ETX_CHECK(cudaMalloc(&d_b, h_b.size() * sizeof(uint16_t)));
  ETX_CHECK(cudaMalloc(&d_c, c_bytes));
  ETX_CHECK(cudaMemcpy(d_a, h_a.data(), h_a.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
  ETX_CHECK(cudaMemcpy(d_b, h_b.data(), h_b.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
  ETX_CHECK(cudaMemset(d_c, 0xFF, c_bytes));  // NaN everywhere: unwritten tiles fail the check

  const CUtensorMap map_a = encode_kmajor_bf16(d_a, kM, kK, kTileM, kTileK);
  const CUtensorMap map_b = encode_kmajor_bf16(d_b, kN, kK, kTileN, kTileK);

  ETX_CHECK(cudaFuncSetAttribute(gemm_tma_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(kSmemBytes)));
  cudaStream_t stream;
  ETX_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const dim3 grid(kN / kTileN, kM / kTileM);
  gemm_tma_wgmma<<<grid, kThreads, kSmemBytes, stream>>>(map_a, map_b, d_c);
  ETX_CHECK(cudaGetLastError());

  // Host-side watchdog: a lost transaction byte shows up as a kernel that never ends.
  const auto t_start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t q = cudaStreamQuery(stream);
    if (q == cudaSuccess) break;
    if (q != cudaErrorNotReady) {
      std::fprintf(stderr, "[etx] kernel failed: %s\n", cudaGetErrorString(q));
      return 2;
    }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    if (waited > 10.0) {
      std::printf("[etx] TIMEOUT: gemm kernel still running after %.1f s, giving up\n", waited);
      std::fflush(stdout);
      std::_Exit(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  std::vector<float> h_c(static_cast<size_t>(kM) * kN);
  ETX_CHECK(cudaMemcpy(h_c.data(), d_c, c_bytes, cudaMemcpyDeviceToHost));

  // fp32 reference; all partial sums are integers below 2^24, so it is exact.
  long bad = 0;
  double worst = 0.0;
  int first_bad_row = -1, first_bad_col = -1;
  for (int m = 0; m < kM; ++m) {
    for (int n = 0; n < kN; ++n) {
      float ref = 0.0f;
      const float* ar = &fa[static_cast<size_t>(m) * kK];
      const float* br = &fb[static_cast<size_t>(n) * kK];
      for (int k = 0; k < kK; ++k) ref += ar[k] * br[k];
      const float got = h_c[static_cast<size_t>(m) * kN + n];
      if (!(got == ref)) {
        if (bad == 0) { first_bad_row = m; first_bad_col = n; }
        ++bad;
        const double e = std::isnan(got) ? INFINITY : std::fabs(static_cast<double>(got) - ref);
        if (e > worst) worst = e;
      }
    }
  }
  const long total = static_cast<long>(kM) * kN;
  if (bad == 0) {
    std::printf("[etx] C=%dx%d K=%d: %ld/%ld outputs exact -> GEMM OK\n", kM, kN, kK, total, total);
  } else {
    std::printf("[etx] C=%dx%d K=%d: %ld/%ld outputs wrong (first at [%d,%d], max err %g) -> GEMM WRONG\n",
                kM, kN, kK, bad, total, first_bad_row, first_bad_col, worst);
  }

  ETX_CHECK(cudaStreamDestroy(stream));
  ETX_CHECK(cudaFree(d_a));
  ETX_CHECK(cudaFree(d_b));
  ETX_CHECK(cudaFree(d_c));
  return bad == 0 ? 0 : 1;
}
