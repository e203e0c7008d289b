#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <random>

#define PIPE_EPS 1e-6f

#define NUM_TILES (32 / 4)
#define NUM_THREADS (128 + 1)
#define ROWS_PER_WARP (4 / 4)
#define COLS_PER_LANE (32 / 32)
#define TILE_BYTES (4 * 32 * 4)

#define SMEM_OUT_OFF (0 + 1 * TILE_BYTES)
#define SMEM_BAR_OFF (SMEM_OUT_OFF + 1 * TILE_BYTES)
#define SMEM_USED (SMEM_BAR_OFF + 2 * 1 * 8)
#define SMEM_BYTES (SMEM_USED + 1024)

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
  asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t phase) {
  uint32_t done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(bar)), "r"(phase) : "memory");
  }
}

__device__ __forceinline__ uint32_t elect_one_sync() {
  uint32_t pred = 0;
  asm volatile("{\n .reg .b32 rx;\n .reg .pred px;\n elect.sync rx|px, 0xffffffff;\n selp.u32 %0, 1, 0, px;\n}\n"
               : "=r"(pred));
  return pred;
}

__global__ void tma_pipeline_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap y_map,
                                    float *__restrict__ rstd_out) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t *smem = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));

  if (threadIdx.x == 0 && (threadIdx.x / 128) == 1) {
    for (int s = 0; s < 1; ++s) {
      mbar_init(&(reinterpret_cast<uint64_t *>(smem + SMEM_BAR_OFF))[s], 1);
      mbar_init(&((reinterpret_cast<uint64_t *>(smem + SMEM_BAR_OFF)) + 1)[s], 1);
    }
  }

  if ((threadIdx.x / 128) == 0) {
    if ((threadIdx.x / 32) == 0 && elect_one_sync()) {
      int i = 0;
      for (int t = blockIdx.x; t < NUM_TILES; t += gridDim.x, ++i) {
        const int s = i % 1;
        const uint32_t phase = (i / 1) & 1;
        mbar_wait(&((reinterpret_cast<uint64_t *>(smem + SMEM_BAR_OFF)) + 1)[s], phase ^ 1);
        mbar_arrive_expect_tx(&(reinterpret_cast<uint64_t *>(smem + SMEM_BAR_OFF))[s], 0);
      }
    }
  }
}

#define CUDA_CHECK(call)                                                                          \
  do {                                                                                            \
    cudaError_t err_ = (call);                                                                    \
    if (err_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "CUDA error: %s (%d) at %s:%d\n", cudaGetErrorString(err_), (int)err_, \
                   __FILE__, __LINE__);                                                           \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

inline CUtensorMap make_row_tile_map(float *base, int rows, int cols) {
  CUtensorMap m;
  return m;
}

cudaError_t launch_tma_pipeline(const CUtensorMap &x_map, const CUtensorMap &y_map, float *d_rstd,
                                cudaStream_t stream = 0) {
  tma_pipeline_kernel<<<1, NUM_THREADS, SMEM_BYTES, stream>>>(x_map, y_map, d_rstd);
  return cudaGetLastError();
}

int main(int argc, char **argv) {

  float *dx, *dy, *dr;
  cudaMalloc(&dx, 1024ul * sizeof(float));
  cudaMalloc(&dy, 1024ul * sizeof(float));
  cudaMalloc(&dr, 32 * sizeof(float));

  const CUtensorMap x_map = make_row_tile_map(dx, 32, 32);
  const CUtensorMap y_map = make_row_tile_map(dy, 32, 32);
  launch_tma_pipeline(x_map, y_map, dr);

  CUDA_CHECK(cudaDeviceSynchronize());
}
