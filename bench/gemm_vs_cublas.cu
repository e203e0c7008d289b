// gemm_vs_cublas.cu: times kernels/ws_gemm_sm90.cu against cuBLAS on the same bf16 "TN" GEMM.
//
//   C[M][N] (bf16, row-major) = A[M][K] (bf16, row-major) * B[N][K]^T (bf16, row-major), fp32 accumulate.
//
// Build and run (from the repository root):
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -lineinfo -I oracle/include -DWS_NO_MAIN -DGEMM_M=4096 -DGEMM_N=4096 -DGEMM_K=4096 bench/gemm_vs_cublas.cu -lcublas -o gemm_vs_cublas
//   ./gemm_vs_cublas
// Other tile knobs of the kernel pass through, e.g. -DBLOCK_N=256 (STAGES defaults to 3 then).
//
// Prints `BENCH name=ws_gemm_sm90 ...`, `BENCH name=cublas ...`, `BENCH ratio=...` (ours / cuBLAS
// throughput), then one WSCHECK line comparing our C against cuBLAS's C; exits 1 if they disagree.

#include "../kernels/ws_gemm_sm90.cu"

#include <cublas_v2.h>

#include <cmath>

#define CUBLAS_CHECK(call)                                                                          \
  do {                                                                                              \
    cublasStatus_t st_ = (call);                                                                    \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                             \
      std::fprintf(stderr, "cuBLAS error: %s (%d) at %s:%d\n", cublasGetStatusString(st_), (int)st_, \
                   __FILE__, __LINE__);                                                             \
      std::exit(1);                                                                                 \
    }                                                                                               \
  } while (0)

constexpr int WARMUP = 5;
constexpr int ITERS = 20;

// Row-major C = A * B^T is column-major C^T (N x M, ldc=N) = B (N x K) * A^T (K x M).
// Row-major B (N x K) is column-major B^T (K x N, ld=K), so op(B) = T; row-major A (M x K) is
// column-major A^T (K x M, ld=K), so op(A^T) = N. This is cuBLAS's "TN" case.
static void cublas_gemm(cublasHandle_t handle, const bf16* dA, const bf16* dB, bf16* dC) {
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, GEMM_N, GEMM_M, GEMM_K, &alpha, dB, CUDA_R_16BF,
                            GEMM_K, dA, CUDA_R_16BF, GEMM_K, &beta, dC, CUDA_R_16BF, GEMM_N, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
}

// Average milliseconds per call of `fn` over ITERS back-to-back launches on stream 0.
template <class Fn>
static float time_ms(Fn fn) {
  for (int i = 0; i < WARMUP; ++i) fn();
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start, 0));
  for (int i = 0; i < ITERS; ++i) fn();
  CUDA_CHECK(cudaEventRecord(stop, 0));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return ms / ITERS;
}

static void print_bench(const char* name, float ms) {
  const double tflops = 2.0 * GEMM_M * GEMM_N * (double)GEMM_K / (ms * 1e-3) / 1e12;
  std::printf("BENCH name=%s M=%d N=%d K=%d ms=%.4f tflops=%.1f\n", name, GEMM_M, GEMM_N, GEMM_K, ms, tflops);
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) wscheck::skip("no CUDA device");
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9 || prop.minor != 0) wscheck::skip("needs sm_90a (Hopper)");

  const unsigned seed = std::random_device{}();
  std::printf("seed=%u\n", seed);
  std::mt19937 gen(seed);
  std::vector<bf16> hA((size_t)GEMM_M * GEMM_K), hB((size_t)GEMM_N * GEMM_K);
  std::vector<float> fA(hA.size()), fB(hB.size());
  fill_random_bf16(gen, hA, fA);
  fill_random_bf16(gen, hB, fB);

  const size_t c_elems = (size_t)GEMM_M * GEMM_N;
  bf16 *dA, *dB, *dC, *dC_ref;
  CUDA_CHECK(cudaMalloc(&dA, hA.size() * sizeof(bf16)));
  CUDA_CHECK(cudaMalloc(&dB, hB.size() * sizeof(bf16)));
  CUDA_CHECK(cudaMalloc(&dC, c_elems * sizeof(bf16)));
  CUDA_CHECK(cudaMalloc(&dC_ref, c_elems * sizeof(bf16)));
  CUDA_CHECK(cudaMemcpy(dA, hA.data(), hA.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dB, hB.data(), hB.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dC, 0xFF, c_elems * sizeof(bf16)));  // NaN poison
  CUDA_CHECK(cudaMemset(dC_ref, 0xFF, c_elems * sizeof(bf16)));

  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  const WsGemmMaps maps = make_ws_gemm_maps(dA, dB, dC);
  const int num_sms = prop.multiProcessorCount;

  const float ws_ms = time_ms([&] { launch_ws_gemm(maps, num_sms, 0); });
  const float cublas_ms = time_ms([&] { cublas_gemm(handle, dA, dB, dC_ref); });
  print_bench("ws_gemm_sm90", ws_ms);
  print_bench("cublas", cublas_ms);
  std::printf("BENCH ratio=%.3f\n", cublas_ms / ws_ms);  // > 1 means faster than cuBLAS

  std::vector<bf16> hC(c_elems), hC_ref(c_elems);
  CUDA_CHECK(cudaMemcpy(hC.data(), dC, c_elems * sizeof(bf16), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hC_ref.data(), dC_ref, c_elems * sizeof(bf16), cudaMemcpyDeviceToHost));
  std::vector<float> out(c_elems), ref(c_elems);
  double max_abs_diff = 0.0;
  for (size_t i = 0; i < c_elems; ++i) {
    out[i] = __bfloat162float(hC[i]);
    ref[i] = __bfloat162float(hC_ref[i]);
    const double d = std::fabs((double)out[i] - (double)ref[i]);
    max_abs_diff = std::isnan(d) ? INFINITY : std::max(max_abs_diff, d);
  }
  std::printf("BENCH check max_abs_diff=%.6g\n", max_abs_diff);
  // Both sides round an fp32 sum to bf16 (<= 2^-9 relative each) after different summation orders.
  wscheck::compare(out.data(), ref.data(), GEMM_M, GEMM_N, 5e-2, 2e-2, "C_vs_cublas");

  CUBLAS_CHECK(cublasDestroy(handle));
  CUDA_CHECK(cudaFree(dA));
  CUDA_CHECK(cudaFree(dB));
  CUDA_CHECK(cudaFree(dC));
  CUDA_CHECK(cudaFree(dC_ref));
  return wscheck::exit_code();
}
