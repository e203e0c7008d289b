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
#define CONSUMER_THREADS 32                      
#define NUM_THREADS (128 + CONSUMER_THREADS)      
#define ROWS_PER_WARP (TILE_ROWS / 4)             
#define COLS_PER_LANE (PIPE_COLS / 32)            
#define TILE_BYTES (TILE_ROWS * PIPE_COLS * 4)


#define SMEM_STAGE_OFF 0                                          
#define SMEM_OUT_OFF (SMEM_STAGE_OFF + STAGES * TILE_BYTES)       
#define SMEM_BAR_OFF (SMEM_OUT_OFF + STORE_BUFS * TILE_BYTES)     
#define SMEM_USED (SMEM_BAR_OFF + 2 * STAGES * 8)
#define SMEM_BYTES (SMEM_USED + 1024)                             

















__global__ void __launch_bounds__(NUM_THREADS, 1)
tma_pipeline_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap y_map,
                    float* __restrict__ rstd_out) {

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int wg = threadIdx.x / 128;



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

  std::uniform_real_distribution<float> mag(0.125f, 2.0f);  
  const size_t n = (size_t)PIPE_ROWS * PIPE_COLS;
  std::vector<float> hx(n), hy(n), hr(PIPE_ROWS), ref_y(n), ref_r(PIPE_ROWS);

  float *dx, *dy, *dr;
  cudaMalloc(&dx, n * sizeof(float));
  cudaMalloc(&dy, n * sizeof(float));
  cudaMalloc(&dr, PIPE_ROWS * sizeof(float));
  cudaMemcpy(dx, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(dy, 0xFF, n * sizeof(float));  
  cudaMemset(dr, 0xFF, PIPE_ROWS * sizeof(float));

  std::printf("rows=%d cols=%d tile_rows=%d stages=%d store_bufs=%d tiles=%d grid=%d smem=%d\n", PIPE_ROWS,
              PIPE_COLS, TILE_ROWS, STAGES, STORE_BUFS, NUM_TILES, PIPE_GRID < NUM_TILES ? PIPE_GRID : NUM_TILES,
              SMEM_BYTES);
  cudaDeviceSynchronize();
  cudaMemcpy(hy.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(hr.data(), dr, PIPE_ROWS * sizeof(float), cudaMemcpyDeviceToHost);

  for (int r = 0; r < 1; ++r) {
    double ss = 0;
    for (int c = 0; c < 1; ++c) ss += (double)hx[(size_t)r * PIPE_COLS + c] * hx[(size_t)r * PIPE_COLS + c];
    const double rs = 1.0 / std::sqrt(ss / PIPE_COLS + (double)PIPE_EPS);
    ref_r[r] = (float)rs;
    for (int c = 0; c < 1; ++c) ref_y[(size_t)r * PIPE_COLS + c] = (float)(hx[(size_t)r * PIPE_COLS + c] * rs);
  }
  wscheck::compare(hy.data(), ref_y.data(), PIPE_ROWS, PIPE_COLS, 1e-5, 1e-4, "Y");
  wscheck::compare(hr.data(), ref_r.data(), PIPE_ROWS, 1, 1e-5, 1e-4, "R");

  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dr);
  return wscheck::exit_code();
}
