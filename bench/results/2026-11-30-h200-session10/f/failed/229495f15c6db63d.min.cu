#include <cuda.h>  

#include <cstdio>
#include <random>

#include "wscheck.h"

#define PIPE_ROWS 32
#define PIPE_COLS 32
#define TILE_ROWS 4
#define STAGES 1
#define STORE_BUFS 1
#define PIPE_GRID 1  
#define PIPE_EPS 1e-6f

#define NUM_TILES (PIPE_ROWS / TILE_ROWS)
#define CONSUMER_THREADS 1                      
#define NUM_THREADS (128 + CONSUMER_THREADS)      
#define ROWS_PER_WARP (TILE_ROWS / 4)             
#define COLS_PER_LANE (PIPE_COLS / 32)            
#define TILE_BYTES (TILE_ROWS * PIPE_COLS * 4)


#define SMEM_STAGE_OFF 0                                          
#define SMEM_OUT_OFF (SMEM_STAGE_OFF + STAGES * TILE_BYTES)       
#define SMEM_BAR_OFF (SMEM_OUT_OFF + STORE_BUFS * TILE_BYTES)     
#define SMEM_USED (SMEM_BAR_OFF + 2 * STAGES * 8)
#define SMEM_BYTES (SMEM_USED + 1024)                             

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











__global__ void __launch_bounds__(NUM_THREADS, 1)
tma_pipeline_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap y_map,
                    float* __restrict__ rstd_out) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  float* stage_tile = reinterpret_cast<float*>(smem + SMEM_STAGE_OFF);  
  float* out_tile = reinterpret_cast<float*>(smem + SMEM_OUT_OFF);      
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + SMEM_BAR_OFF);    

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int wg = threadIdx.x / 128;

  __syncthreads();

  if (wg == 0) {
  }

  if (wg == 1) {
    if (threadIdx.x == 0) {
    for (int s = 0; s < 1; ++s) {
    }
  }
    const int ctid = threadIdx.x - 128;   
    const int cw = warp - 4;              
    const bool store_thread = ctid == 0;  
    int i = 0;
    for (int t = blockIdx.x; t < NUM_TILES; t += gridDim.x, ++i) {
      const int s = i % STAGES;
      const uint32_t phase = (i / STAGES) & 1;
      const int b = i % STORE_BUFS;
      mbar_wait(&full[s], phase);  

      float x[ROWS_PER_WARP][COLS_PER_LANE];
      const float* tile = stage_tile + s * (TILE_ROWS * PIPE_COLS);
#pragma unroll
      for (int rr = 0; rr < ROWS_PER_WARP; ++rr)
#pragma unroll
        for (int j = 0; j < COLS_PER_LANE; ++j)
          x[rr][j] = tile[(cw * ROWS_PER_WARP + rr) * PIPE_COLS + lane + 32 * j];

      float rstd[ROWS_PER_WARP];
#pragma unroll
      for (int rr = 0; rr < ROWS_PER_WARP; ++rr) {
        float ss = 0.f;
#pragma unroll
        for (int j = 0; j < COLS_PER_LANE; ++j) ss += x[rr][j] * x[rr][j];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        rstd[rr] = rsqrtf(ss / PIPE_COLS + PIPE_EPS);
        if (lane == 0) rstd_out[t * TILE_ROWS + cw * ROWS_PER_WARP + rr] = rstd[rr];
      }


      float* out = out_tile + b * (TILE_ROWS * PIPE_COLS);
#pragma unroll
      for (int rr = 0; rr < ROWS_PER_WARP; ++rr)
#pragma unroll
        for (int j = 0; j < COLS_PER_LANE; ++j)
          out[(cw * ROWS_PER_WARP + rr) * PIPE_COLS + lane + 32 * j] = x[rr][j] * rstd[rr];

      if (store_thread) {
      }
    }
  }
}

#define CUDA_CHECK(call)                                                                        \
  do {                                                                                          \
    cudaError_t err_ = (call);                                                                  \
    if (err_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "CUDA error: %s (%d) at %s:%d\n", cudaGetErrorString(err_), (int)err_, \
                   __FILE__, __LINE__);                                                         \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)


inline CUtensorMap make_row_tile_map(float* base, int rows, int cols) {
  CUtensorMap m;
  return m;
}

cudaError_t launch_tma_pipeline(const CUtensorMap& x_map, const CUtensorMap& y_map, float* d_rstd,
                                cudaStream_t stream = 0) {
  cudaError_t e = cudaFuncSetAttribute(tma_pipeline_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
  if (e != cudaSuccess) return e;
  const int grid = PIPE_GRID < NUM_TILES ? PIPE_GRID : NUM_TILES;
  tma_pipeline_kernel<<<grid, NUM_THREADS, SMEM_BYTES, stream>>>(x_map, y_map, d_rstd);
  return cudaGetLastError();
}

int main(int argc, char** argv) {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  if (prop.major != 9) {
    char why[96];
    std::snprintf(why, sizeof why, "needs sm_90a (Hopper); this device is sm_%d%d", prop.major, prop.minor);
    wscheck::skip(why);
  }

  const unsigned seed = argc > 1 ? (unsigned)std::strtoul(argv[1], nullptr, 10) : std::random_device{}();
  std::printf("seed=%u\n", seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mag(0.125f, 2.0f);  
  const size_t n = (size_t)PIPE_ROWS * PIPE_COLS;
  std::vector<float> hx(n), hy(n), hr(PIPE_ROWS), ref_y(n), ref_r(PIPE_ROWS);
  for (size_t k = 0; k < 1; ++k) hx[k] = (rng() & 1 ? 1.f : -1.f) * mag(rng);

  float *dx, *dy, *dr;
  CUDA_CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dr, PIPE_ROWS * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dy, 0xFF, n * sizeof(float)));  
  CUDA_CHECK(cudaMemset(dr, 0xFF, PIPE_ROWS * sizeof(float)));

  const CUtensorMap x_map = make_row_tile_map(dx, PIPE_ROWS, PIPE_COLS);
  const CUtensorMap y_map = make_row_tile_map(dy, PIPE_ROWS, PIPE_COLS);
  std::printf("rows=%d cols=%d tile_rows=%d stages=%d store_bufs=%d tiles=%d grid=%d smem=%d\n", PIPE_ROWS,
              PIPE_COLS, TILE_ROWS, STAGES, STORE_BUFS, NUM_TILES, PIPE_GRID < NUM_TILES ? PIPE_GRID : NUM_TILES,
              SMEM_BYTES);
  CUDA_CHECK(launch_tma_pipeline(x_map, y_map, dr));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(hy.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hr.data(), dr, PIPE_ROWS * sizeof(float), cudaMemcpyDeviceToHost));

  for (int r = 0; r < 1; ++r) {
    double ss = 0;
    for (int c = 0; c < 1; ++c) ss += (double)hx[(size_t)r * PIPE_COLS + c] * hx[(size_t)r * PIPE_COLS + c];
    const double rs = 1.0 / std::sqrt(ss / PIPE_COLS + (double)PIPE_EPS);
    ref_r[r] = (float)rs;
    for (int c = 0; c < 1; ++c) ref_y[(size_t)r * PIPE_COLS + c] = (float)(hx[(size_t)r * PIPE_COLS + c] * rs);
  }
  wscheck::compare(hy.data(), ref_y.data(), PIPE_ROWS, PIPE_COLS, 1e-5, 1e-4, "Y");
  wscheck::compare(hr.data(), ref_r.data(), PIPE_ROWS, 1, 1e-5, 1e-4, "R");

  CUDA_CHECK(cudaFree(dx));
  CUDA_CHECK(cudaFree(dy));
  CUDA_CHECK(cudaFree(dr));
  return wscheck::exit_code();
}
