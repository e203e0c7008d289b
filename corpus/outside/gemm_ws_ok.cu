// gemm_ws.cu -- warp-specialised bf16 GEMM for Hopper (sm_90a)
//
//   C[M,N] (fp32) = A[M,K] (bf16, row-major) * B[N,K]^T (bf16, row-major)
//
// CTA = 3 warpgroups (384 threads):
//   WG0      : producer; one elected thread streams A/B K-slices with TMA
//   WG1, WG2 : consumers; each owns 64 rows of the 128x256 CTA tile and
//              issues wgmma.mma_async m64n256k16 on 128B-swizzled smem.
// A STAGES-deep ring of (A,B) slices is guarded by full/empty mbarriers.
//
// Build: nvcc -std=c++17 -O2 -arch=sm_90a -lineinfo -o gemm_ws gemm_ws.cu -lcuda
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <string>
#include <vector>

#define CK(call)                                                              \
  do {                                                                        \
    cudaError_t e_ = (call);                                                  \
    if (e_ != cudaSuccess) {                                                  \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__,        \
              __LINE__, cudaGetErrorString(e_));                              \
      exit(2);                                                                \
    }                                                                         \
  } while (0)

// ---------------------------------------------------------------- sizes ----
constexpr int GM = 256, GN = 512, GK = 1024;
constexpr int BM = 128, BN = 256, BK = 64;   // BK*2 bytes == one 128B swizzle row
constexpr int STAGES = 4;
constexpr int THREADS = 384;
constexpr int CONSUMER_WARPS = 8;            // one empty-arrival per consumer warp
constexpr int A_TILE_BYTES = BM * BK * 2;    // 16 KB
constexpr int B_TILE_BYTES = BN * BK * 2;    // 32 KB
constexpr int STAGE_TX = A_TILE_BYTES + B_TILE_BYTES;
constexpr int SMEM_BYTES = 1024 /*align slack*/ + STAGES * STAGE_TX + 2 * STAGES * 8;
static_assert(GM % BM == 0 && GN % BN == 0 && GK % BK == 0, "tile divisibility");

// ------------------------------------------------------- device helpers ----
__device__ __forceinline__ uint32_t cvta_smem(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void bar_init(uint64_t* b, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(cvta_smem(b)), "r"(count) : "memory");
}

__device__ __forceinline__ void bar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void bar_expect_tx_arrive(uint64_t* b, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(cvta_smem(b)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void bar_arrive(uint64_t* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(cvta_smem(b)) : "memory");
}

// Spin (in PTX) until the phase with the given parity has completed.
__device__ __forceinline__ void bar_wait(uint64_t* b, uint32_t parity) {
  asm volatile(
      "{\n\t"
      ".reg .pred ready;\n"
      "SPIN_AGAIN:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 ready, [%0], %1;\n\t"
      "@!ready bra SPIN_AGAIN;\n"
      "}" ::"r"(cvta_smem(b)),
      "r"(parity)
      : "memory");
}

__device__ __forceinline__ void tma_load_tile(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(cvta_smem(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(cvta_smem(bar))
      : "memory");
}

// K-major operand, 128-byte swizzle: rows are 128 B apart, 8-row groups 1024 B apart.
__device__ __forceinline__ uint64_t sw128_desc(const void* p) {
  uint64_t addr = cvta_smem(p);
  uint64_t d = 0;
  d |= (addr & 0x3FFFFull) >> 4;          // start address       [0,14)
  d |= 1ull << 16;                        // leading byte offset (unused for SW128 K-major)
  d |= (uint64_t)(1024 >> 4) << 32;       // stride byte offset  [32,46)
  d |= 1ull << 62;                        // layout: 128B swizzle
  return d;
}

// wgmma exists only on the arch-specific target; nvcc also emits a generic
// compute_90 PTX image for -arch=sm_90a, where these helpers just trap.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WGMMA_ASM(...) asm volatile(__VA_ARGS__)
#else
#define WGMMA_ASM(...) __trap()
#endif

__device__ __forceinline__ void wgmma_fence() { WGMMA_ASM("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { WGMMA_ASM("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  WGMMA_ASM("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// keep the compiler from moving accumulator traffic across wgmma boundaries
__device__ __forceinline__ void acc_fence(float (&d)[128]) {
#pragma unroll
  for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t da, uint64_t db) {
  WGMMA_ASM(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, "
      "%128, %129, p, 1, 1, 0, 0;\n"
      "}\n"
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
      : "l"(da), "l"(db), "r"(1));
}

// ---------------------------------------------------------------- kernel ----
__global__ void __launch_bounds__(THREADS, 1)
gemm_ws_kernel(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapB,
               float* __restrict__ C) {
  extern __shared__ unsigned char smem_dyn[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(smem_dyn) + 1023) & ~static_cast<uintptr_t>(1023));
  unsigned char* tileA = smem;                            // STAGES x [128 rows][64 k]
  unsigned char* tileB = smem + STAGES * A_TILE_BYTES;    // STAGES x [256 cols][64 k]
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * STAGE_TX);
  uint64_t* empty = full + STAGES;

  const int wg = threadIdx.x / 128;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  const int rowBase = blockIdx.y * BM;
  const int colBase = blockIdx.x * BN;
  constexpr int KT = GK / BK;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      bar_init(&full[s], 1);
      bar_init(&empty[s], CONSUMER_WARPS);
    }
    bar_init_fence();
  }
  __syncthreads();

  if (wg == 0) {
    // ------------------------------------------------------ producer ----
    if (threadIdx.x == 0) {
      for (int kt = 0; kt < KT; ++kt) {
        const int s = kt % STAGES;
        const uint32_t round = kt / STAGES;
        bar_wait(&empty[s], (round & 1) ^ 1);   // first lap passes immediately
        bar_expect_tx_arrive(&full[s], STAGE_TX);
        tma_load_tile(tileA + s * A_TILE_BYTES, &mapA, &full[s], kt * BK, rowBase);
        tma_load_tile(tileB + s * B_TILE_BYTES, &mapB, &full[s], kt * BK, colBase);
      }
    }
    return;
  }

  // -------------------------------------------------------- consumers ----
  const int cg = wg - 1;  // which 64-row half of the CTA tile
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.f;

  for (int kt = 0; kt < KT; ++kt) {
    const int s = kt % STAGES;
    bar_wait(&full[s], (kt / STAGES) & 1);

    const unsigned char* a = tileA + s * A_TILE_BYTES + cg * 64 * (BK * 2);
    const unsigned char* b = tileB + s * B_TILE_BYTES;
    acc_fence(acc);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
      wgmma_m64n256k16(acc, sw128_desc(a + kk * 32), sw128_desc(b + kk * 32));
    wgmma_commit();
    wgmma_wait<0>();
    acc_fence(acc);
    if (lane == 0) bar_arrive(&empty[s]);   // stage s may be refilled now
  }
  wgmma_wait<0>();
  acc_fence(acc);

  // accumulator fragment of m64nNk16: warp w owns rows 16w..16w+15
  const int r0 = rowBase + cg * 64 + (warp % 4) * 16 + (lane >> 2);
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int col = colBase + j * 8 + (lane & 3) * 2;
    *reinterpret_cast<float2*>(&C[(size_t)r0 * GN + col]) = make_float2(acc[4 * j + 0], acc[4 * j + 1]);
    *reinterpret_cast<float2*>(&C[(size_t)(r0 + 8) * GN + col]) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
  }
}

// ------------------------------------------------------------------ host ----
typedef CUresult (*EncodeTiledFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                  const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static EncodeTiledFn get_encoder() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
  if (q != cudaDriverEntryPointSuccess || fn == nullptr) {
    fprintf(stderr, "cuTensorMapEncodeTiled not available\n");
    exit(2);
  }
  return reinterpret_cast<EncodeTiledFn>(fn);
}

// rows x kdim bf16 row-major matrix, box = boxRows x 64 (128 B), 128B swizzle
static CUtensorMap make_kmajor_map(EncodeTiledFn enc, void* base, int rows, int kdim, int boxRows) {
  CUtensorMap m;
  cuuint64_t dims[2] = {(cuuint64_t)kdim, (cuuint64_t)rows};
  cuuint64_t strides[1] = {(cuuint64_t)kdim * 2};
  cuuint32_t box[2] = {(cuuint32_t)BK, (cuuint32_t)boxRows};
  cuuint32_t estr[2] = {1, 1};
  CUresult r = enc(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, base, dims, strides, box, estr,
                   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                   CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "cuTensorMapEncodeTiled failed (%d)\n", (int)r);
    exit(2);
  }
  return m;
}

// small multiples of 1/8: exact in bf16, products and sums exact in fp32
static float valA(int m, int k) { return (float)(((m * 7 + k * 3) % 17) - 8) / 8.0f; }
static float valB(int n, int k) { return (float)(((n * 5 + k * 11) % 13) - 6) / 8.0f; }

static std::string row_ranges(const std::vector<int>& rows) {
  std::string s;
  size_t i = 0;
  while (i < rows.size()) {
    size_t j = i;
    while (j + 1 < rows.size() && rows[j + 1] == rows[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(rows[i]);
    if (j > i) s += "-" + std::to_string(rows[j]);
    i = j + 1;
  }
  return s;
}

int main() {
  std::vector<__nv_bfloat16> hA((size_t)GM * GK), hB((size_t)GN * GK);
  std::vector<float> fA((size_t)GM * GK), fB((size_t)GN * GK);
  for (int m = 0; m < GM; ++m)
    for (int k = 0; k < GK; ++k) {
      fA[(size_t)m * GK + k] = valA(m, k);
      hA[(size_t)m * GK + k] = __float2bfloat16(valA(m, k));
    }
  for (int n = 0; n < GN; ++n)
    for (int k = 0; k < GK; ++k) {
      fB[(size_t)n * GK + k] = valB(n, k);
      hB[(size_t)n * GK + k] = __float2bfloat16(valB(n, k));
    }

  __nv_bfloat16 *dA = nullptr, *dB = nullptr;
  float* dC = nullptr;
  CK(cudaMalloc(&dA, hA.size() * sizeof(__nv_bfloat16)));
  CK(cudaMalloc(&dB, hB.size() * sizeof(__nv_bfloat16)));
  CK(cudaMalloc(&dC, (size_t)GM * GN * sizeof(float)));
  CK(cudaMemcpy(dA, hA.data(), hA.size() * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, hB.data(), hB.size() * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice));
  CK(cudaMemset(dC, 0xFF, (size_t)GM * GN * sizeof(float)));   // NaN sentinel

  EncodeTiledFn enc = get_encoder();
  CUtensorMap mapA = make_kmajor_map(enc, dA, GM, GK, BM);
  CUtensorMap mapB = make_kmajor_map(enc, dB, GN, GK, BN);

  CK(cudaFuncSetAttribute(gemm_ws_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
  dim3 grid(GN / BN, GM / BM);
  gemm_ws_kernel<<<grid, THREADS, SMEM_BYTES>>>(mapA, mapB, dC);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());

  std::vector<float> hC((size_t)GM * GN);
  CK(cudaMemcpy(hC.data(), dC, hC.size() * sizeof(float), cudaMemcpyDeviceToHost));

  // fp32 host reference
  long bad = 0;
  std::vector<int> badRows;
  for (int m = 0; m < GM; ++m) {
    bool rowBad = false;
    for (int n = 0; n < GN; ++n) {
      float ref = 0.f;
      const float* a = &fA[(size_t)m * GK];
      const float* b = &fB[(size_t)n * GK];
      for (int k = 0; k < GK; ++k) ref += a[k] * b[k];
      const float got = hC[(size_t)m * GN + n];
      if (!(fabsf(got - ref) <= 1e-3f + 1e-4f * fabsf(ref))) {
        if (bad < 5) fprintf(stderr, "  mismatch C[%d][%d] = %f, expected %f\n", m, n, got, ref);
        ++bad;
        rowBad = true;
      }
    }
    if (rowBad) badRows.push_back(m);
  }

  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));

  if (bad) {
    printf("RESULT FAIL bad=%ld of %d BADROWS %s\n", bad, GM * GN, row_ranges(badRows).c_str());
    return 1;
  }
  printf("RESULT OK\n");
  return 0;
}
