// attention_vs_naive.cu — kernels/ws_attention_sm90.cu against a naive attention on the same GPU:
//   S = scale * Q K^T (cuBLAS, bf16 in, fp32 out) -> row softmax (one block per row, P in bf16)
//   -> O = P V (cuBLAS, fp32 out). Both are timed with cudaEvents (3 warm-up, 20 timed launches).
//
// Build and run (from the repository root; the shape defaults to batch 4, heads 16, seq 4096):
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -lineinfo -I oracle/include bench/attention_vs_naive.cu -o attention_vs_naive -lcublas && ./attention_vs_naive
// Other shapes: add -DATT_BATCH= -DATT_HEADS= -DATT_SEQ= (and -DBLOCK_N= -DSTAGES= for the kernel).
// The naive path holds S (fp32) and P (bf16) for every head at once: 6 B * B*H*SEQ^2 (6.4 GB here).
//
// Prints: BENCH name=ws_attention_sm90 ... ms=.. tflops=..  /  BENCH name=naive ...  /
//         BENCH speedup=..  /  BENCH max_abs_diff=..   Exit 1 if the outputs disagree.

#ifndef ATT_BATCH
#define ATT_BATCH 4
#endif
#ifndef ATT_HEADS
#define ATT_HEADS 16
#endif
#ifndef ATT_SEQ
#define ATT_SEQ 4096
#endif
#ifndef WS_NO_MAIN
#define WS_NO_MAIN
#endif
#include "../kernels/ws_attention_sm90.cu"

#include <cublas_v2.h>

#define CUBLAS_CHECK(call)                                                                  \
  do {                                                                                      \
    cublasStatus_t st_ = (call);                                                            \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                     \
      std::fprintf(stderr, "cuBLAS error: %s (%d) at %s:%d\n", cublasGetStatusString(st_), \
                   (int)st_, __FILE__, __LINE__);                                           \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

#define SOFTMAX_THREADS 256

// Block-wide reduction (max or sum) of one value per thread; every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float v) {
  __shared__ float partial[SOFTMAX_THREADS / 32];
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  v = partial[0];
  for (int w = 1; w < SOFTMAX_THREADS / 32; ++w) v = kMax ? fmaxf(v, partial[w]) : v + partial[w];
  __syncthreads();  // partial[] is reused by the next call
  return v;
}

// One block per row of S: P = softmax(S row), written as bf16.
__global__ void __launch_bounds__(SOFTMAX_THREADS) naive_row_softmax(const float* S, __nv_bfloat16* P, int n) {
  const float* row = S + (size_t)blockIdx.x * n;
  __nv_bfloat16* out = P + (size_t)blockIdx.x * n;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < n; j += SOFTMAX_THREADS) m = fmaxf(m, row[j]);
  m = block_reduce<true>(m);
  float sum = 0.f;
  for (int j = threadIdx.x; j < n; j += SOFTMAX_THREADS) sum += __expf(row[j] - m);
  const float inv = 1.f / block_reduce<false>(sum);
  for (int j = threadIdx.x; j < n; j += SOFTMAX_THREADS) out[j] = __float2bfloat16(__expf(row[j] - m) * inv);
}

// cuBLAS is column-major: a row-major [r, c] buffer is a column-major [c, r] matrix.
static void naive_attention(cublasHandle_t h, const __nv_bfloat16* Q, const __nv_bfloat16* K,
                            const __nv_bfloat16* V, float* S, __nv_bfloat16* P, float* O) {
  const int n = ATT_SEQ, d = HEAD_DIM, batch = ATT_BATCH * ATT_HEADS;
  const float scale = 1.f / std::sqrt((float)HEAD_DIM), one = 1.f, zero = 0.f;
  // S^T (col-major n x n) = K Q^T: row-major S[i][j] = scale * q_i . k_j
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, d, &scale, K, CUDA_R_16BF, d,
                                          (long long)n * d, Q, CUDA_R_16BF, d, (long long)n * d, &zero, S,
                                          CUDA_R_32F, n, (long long)n * n, batch, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT));
  naive_row_softmax<<<batch * n, SOFTMAX_THREADS>>>(S, P, n);
  CUDA_CHECK(cudaGetLastError());
  // O^T (col-major d x n) = V^T P^T: row-major O[i][:] = sum_j P[i][j] v_j
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, d, n, n, &one, V, CUDA_R_16BF, d,
                                          (long long)n * d, P, CUDA_R_16BF, n, (long long)n * n, &zero, O,
                                          CUDA_R_32F, d, (long long)n * d, batch, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT));
}

template <class F>
static float time_ms(F&& launch, int warmup = 3, int iters = 20) {
  for (int i = 0; i < warmup; ++i) launch();
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (int i = 0; i < iters; ++i) launch();
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return ms / iters;
}

int main() {
  ws_require_hopper();
  const size_t n = (size_t)ATT_ROWS * HEAD_DIM;
  const size_t bytes = n * sizeof(__nv_bfloat16);
  const size_t s_elems = (size_t)ATT_BATCH * ATT_HEADS * ATT_SEQ * ATT_SEQ;

  const unsigned seed = std::random_device{}();
  std::printf("seed=%u\n", seed);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<__nv_bfloat16> hQ(n), hK(n), hV(n), hO(n);
  for (size_t i = 0; i < n; ++i) {
    hQ[i] = __float2bfloat16(dist(gen));
    hK[i] = __float2bfloat16(dist(gen));
    hV[i] = __float2bfloat16(dist(gen));
  }

  __nv_bfloat16 *dQ, *dK, *dV, *dO, *dP;
  float *dS, *dOnaive;
  CUDA_CHECK(cudaMalloc(&dQ, bytes));
  CUDA_CHECK(cudaMalloc(&dK, bytes));
  CUDA_CHECK(cudaMalloc(&dV, bytes));
  CUDA_CHECK(cudaMalloc(&dO, bytes));
  CUDA_CHECK(cudaMalloc(&dOnaive, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dS, s_elems * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dP, s_elems * sizeof(__nv_bfloat16)));
  CUDA_CHECK(cudaMemcpy(dQ, hQ.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dK, hK.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dV, hV.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dO, 0xFF, bytes));  // poison: an unwritten output reads as NaN

  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  const WsAttentionPlan plan = ws_attention_plan(dQ, dK, dV, dO);

  const float ms_ws = time_ms([&] { CUDA_CHECK(ws_attention_launch(plan)); });
  const float ms_naive = time_ms([&] { naive_attention(handle, dQ, dK, dV, dS, dP, dOnaive); });

  std::vector<float> hOnaive(n);
  CUDA_CHECK(cudaMemcpy(hO.data(), dO, bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hOnaive.data(), dOnaive, n * sizeof(float), cudaMemcpyDeviceToHost));
  double max_diff = 0.0;
  bool finite = true;
  for (size_t i = 0; i < n; ++i) {
    const double diff = std::fabs((double)__bfloat162float(hO[i]) - (double)hOnaive[i]);
    if (!std::isfinite(diff)) finite = false;
    else max_diff = std::max(max_diff, diff);
  }

  const double flops = 4.0 * ATT_BATCH * ATT_HEADS * (double)ATT_SEQ * ATT_SEQ * HEAD_DIM;  // two GEMMs
  std::printf("BENCH name=ws_attention_sm90 batch=%d heads=%d seq=%d head_dim=%d block_n=%d stages=%d ms=%.4f tflops=%.2f\n",
              ATT_BATCH, ATT_HEADS, ATT_SEQ, HEAD_DIM, BLOCK_N, STAGES, ms_ws, flops / (ms_ws * 1e-3) / 1e12);
  std::printf("BENCH name=naive batch=%d heads=%d seq=%d head_dim=%d ms=%.4f tflops=%.2f\n", ATT_BATCH, ATT_HEADS,
              ATT_SEQ, HEAD_DIM, ms_naive, flops / (ms_naive * 1e-3) / 1e12);
  std::printf("BENCH speedup=%.2f\n", ms_naive / ms_ws);
  std::printf("BENCH max_abs_diff=%.3g%s\n", finite ? max_diff : NAN, finite ? "" : " (non-finite values in ws output)");

  CUBLAS_CHECK(cublasDestroy(handle));
  CUDA_CHECK(cudaFree(dQ));
  CUDA_CHECK(cudaFree(dK));
  CUDA_CHECK(cudaFree(dV));
  CUDA_CHECK(cudaFree(dO));
  CUDA_CHECK(cudaFree(dOnaive));
  CUDA_CHECK(cudaFree(dS));
  CUDA_CHECK(cudaFree(dP));
  // both paths round P to bf16 and ws rounds O to bf16: expect ~1e-3 at most
  if (!finite || max_diff > 1e-2) {
    std::fprintf(stderr, "ws_attention_sm90 and the naive attention disagree (max_abs_diff=%.3g)\n", max_diff);
    return 1;
  }
  return 0;
}
