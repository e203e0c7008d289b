#include <cuda_bf16.h>

#include <random>

namespace wscheck {

struct Result {
  double max_abs, max_rel;
  std::string shape;
};

Result compare(float *, float *, int, int, double, double, char *name) {
  Result r;

  r.shape = "row-stripe";

  std::string corr_text;
  printf("WSCHECK name=%s rows=%d cols=%d bad=%lld nan=%lld max_abs=%.6g max_rel=%.6g "
         "badrows=%s badcols=%s shape=%s%s%s\n",
         name, 0, 0, 1, 0, r.max_abs, r.max_rel, 0, 0, r.shape.c_str(), 0 ?: "", corr_text.c_str());
  return r;
}

} // namespace wscheck

#define GEMM_M 1
#define GEMM_N 1
#define GEMM_K 1

typedef __nv_bfloat16 bf16;

__global__ void ws_gemm_kernel() {}

int main() {

  std::vector<bf16> hC;
  std::vector<float> fA(1), fB(1);

  ws_gemm_kernel<<<1, 0>>>();

  std::vector<float> fBt((size_t)GEMM_K * GEMM_N), ref((size_t)GEMM_M * GEMM_N, 0.0f),
      out(hC.size());
  for (int n = 0; n < GEMM_N; ++n)
    for (int k = 0; k < GEMM_K; ++k)
      fBt[(size_t)k * GEMM_N + n] = fB[(size_t)n * GEMM_K + k];
  for (int m = 0; m < GEMM_M; ++m) {
    float *c = &ref[(size_t)m * GEMM_N];
    for (int k = 0; k < GEMM_K; ++k) {
      const float a = fA[(size_t)m * GEMM_K + k];
      const float *b = &fBt[(size_t)k * GEMM_N];
      for (int n = 0; n < GEMM_N; ++n)
        c[n] += a * b[n];
    }
  }
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = __bfloat162float(hC[i]);

  wscheck::compare(out.data(), ref.data(), GEMM_M, GEMM_N, 1e-2, 1e-2, "C");
}
