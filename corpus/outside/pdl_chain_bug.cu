// pdl_chain_bug.cu -- producer/consumer kernel pair chained with Programmatic
// Dependent Launch (PDL) on one stream. Contains one deliberate PDL race.
//
// Build: nvcc -std=c++17 -arch=sm_90a -o pdl_chain_bug pdl_chain_bug.cu
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(call)                                                            \
  do {                                                                      \
    cudaError_t e_ = (call);                                                \
    if (e_ != cudaSuccess) {                                                \
      std::printf("CUDA error %s (%d) at %s:%d: %s\n", cudaGetErrorName(e_), \
                  (int)e_, __FILE__, __LINE__, cudaGetErrorString(e_));     \
      std::exit(2);                                                         \
    }                                                                       \
  } while (0)

constexpr int kN          = 1 << 22;  // 4M floats = 16 MB in, 16 MB out
constexpr int kIters      = 512;      // dependent FMAs per element (makes the producer slow)
constexpr int kProdThreads = 256;
constexpr int kProdBlocksPerSM = 4;   // one resident wave, leaves room on each SM
constexpr int kConsBlocks  = 64;
constexpr int kConsThreads = 256;
constexpr int kSamples     = 2048;    // elements of the producer output each consumer block reads
constexpr int kSampleStride = kN / kSamples;
static_assert(kConsBlocks < kSampleStride, "sample indices must stay in range");

// Element-wise map shared by device and host: a contraction iterated kIters times.
__host__ __device__ inline float relax(float x) {
  const float c = fmaf(0.25f, x, 0.5f);
  float v = x;
  for (int i = 0; i < kIters; ++i) v = fmaf(v, 0.75f, c);
  return v;
}

__host__ __device__ inline size_t sample_index(int k, int block) {
  return (size_t)k * kSampleStride + (size_t)block;
}

// Producer: out[i] = relax(in[i]), grid-stride loop. Signals dependents first thing.
__global__ void __launch_bounds__(kProdThreads) produce_kernel(const float* in, float* out, int n) {
  // Let the dependent grid get scheduled right away; it still must wait (griddepcontrol.wait)
  // before touching 'out', which only guarantees visibility once this grid has completed.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");

  const int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = relax(in[i]);
}

// Consumer: block b computes result[b] = sum_k w[b][k] * y[sample_index(k, b)].
__global__ void __launch_bounds__(kConsThreads) consume_kernel(const float* y, const float* weights,
                                                               float* result) {
  __shared__ float w_s[kSamples];
  __shared__ float red[kConsThreads];
  const int b = blockIdx.x;

  // Prologue, independent of the producer: stage this block's weights in shared memory.
  for (int k = threadIdx.x; k < kSamples; k += blockDim.x) w_s[k] = weights[(size_t)b * kSamples + k];
  __syncthreads();

  float acc = 0.f;
  // BUG: y (the producer's output) is read before cudaGridDependencySynchronize() -- races with the producer.
  for (int k = threadIdx.x; k < kSamples; k += blockDim.x) acc += w_s[k] * y[sample_index(k, b)];

  // Block until the producer grid has completed and its writes are visible.
  cudaGridDependencySynchronize();

  red[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) result[b] = red[0];
}

static unsigned int g_lcg = 12345u;
static float frand01() {  // deterministic uniform [0,1)
  g_lcg = g_lcg * 1664525u + 1013904223u;
  return (float)(g_lcg >> 8) * (1.0f / 16777216.0f);
}

int main() {
  int dev = 0;
  CK(cudaSetDevice(dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  if (prop.major < 9) {
    std::printf("CUDA error: device %s is sm_%d%d, PDL test needs sm_90\n", prop.name, prop.major, prop.minor);
    return 2;
  }

  std::vector<float> h_in(kN), h_w((size_t)kConsBlocks * kSamples), h_res(kConsBlocks);
  for (auto& v : h_in) v = frand01();
  for (auto& v : h_w) v = 2.f * frand01() - 1.f;

  float *d_in, *d_y, *d_w, *d_res;
  CK(cudaMalloc(&d_in, kN * sizeof(float)));
  CK(cudaMalloc(&d_y, kN * sizeof(float)));
  CK(cudaMalloc(&d_w, h_w.size() * sizeof(float)));
  CK(cudaMalloc(&d_res, kConsBlocks * sizeof(float)));
  CK(cudaMemcpy(d_in, h_in.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_w, h_w.data(), h_w.size() * sizeof(float), cudaMemcpyHostToDevice));

  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Poison the producer output (0xFFFFFFFF is a NaN) so a premature read cannot look right.
  CK(cudaMemsetAsync(d_y, 0xFF, kN * sizeof(float), stream));
  CK(cudaMemsetAsync(d_res, 0, kConsBlocks * sizeof(float), stream));

  const int prod_blocks = prop.multiProcessorCount * kProdBlocksPerSM;
  produce_kernel<<<prod_blocks, kProdThreads, 0, stream>>>(d_in, d_y, kN);
  CK(cudaGetLastError());

  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(kConsBlocks);
  cfg.blockDim = dim3(kConsThreads);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, consume_kernel, (const float*)d_y, (const float*)d_w, d_res));
  CK(cudaGetLastError());
  CK(cudaStreamSynchronize(stream));

  CK(cudaMemcpy(h_res.data(), d_res, kConsBlocks * sizeof(float), cudaMemcpyDeviceToHost));

  // Host reference (only the sampled elements of the producer output are needed).
  int mismatches = 0, first = -1;
  for (int b = 0; b < kConsBlocks; ++b) {
    double ref = 0.0, mag = 0.0;
    for (int k = 0; k < kSamples; ++k) {
      const double t = (double)h_w[(size_t)b * kSamples + k] * (double)relax(h_in[sample_index(k, b)]);
      ref += t;
      mag += std::fabs(t);
    }
    const double tol = 1e-5 * mag + 1e-6;
    if (!(std::fabs((double)h_res[b] - ref) <= tol)) {  // NaN counts as a mismatch
      if (first < 0) first = b;
      ++mismatches;
    }
  }

  CK(cudaStreamDestroy(stream));
  CK(cudaFree(d_in));
  CK(cudaFree(d_y));
  CK(cudaFree(d_w));
  CK(cudaFree(d_res));

  if (mismatches == 0) {
    std::printf("PDL_CHECK PASS\n");
    return 0;
  }
  std::printf("PDL_CHECK FAIL mismatches=%d first=%d\n", mismatches, first);
  return 1;
}
