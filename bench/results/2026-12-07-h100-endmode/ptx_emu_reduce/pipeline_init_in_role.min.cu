#include <cstdio>

#define NUM_THREADS (128 + 1)
#define TILE_BYTES (4 * 32 * 4)

#define SMEM_OUT_OFF (0 + 1 * TILE_BYTES)
#define SMEM_BAR_OFF (SMEM_OUT_OFF + 1 * TILE_BYTES)
#define SMEM_USED (SMEM_BAR_OFF + 2 * 1 * 8)
#define SMEM_BYTES (SMEM_USED + 1024)

__global__ void tma_pipeline_kernel() {
  extern __shared__ char smem_raw[];

  if (0)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(0), "r"(0) : "memory");

  unsigned done;

  asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done) : "r"(static_cast<unsigned>(__cvta_generic_to_shared(smem_raw))), "r"(0) : "memory");

  asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(smem_raw))), "r"(0) : "memory");
}

#define CUDA_CHECK(call)                                                                          \
  do {                                                                                            \
    cudaError_t err_ = (call);                                                                    \
    if (err_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "CUDA error: %s (%d) at %s:%d\n", cudaGetErrorString(err_), (int)err_, \
                   __FILE__, __LINE__);                                                           \
    }                                                                                             \
  } while (0)

int main() {
  tma_pipeline_kernel<<<1, NUM_THREADS, SMEM_BYTES>>>();

  CUDA_CHECK(cudaDeviceSynchronize());
}
