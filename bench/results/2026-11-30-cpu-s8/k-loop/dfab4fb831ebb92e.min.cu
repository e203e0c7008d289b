
#include <random>

#include "wscheck.h"

#define PIPE_COLS 1
#define TILE_ROWS 1
#define STAGES 1
#define STORE_BUFS 1

#define NUM_TILES (PIPE_ROWS / TILE_ROWS)
#define CONSUMER_THREADS 1                      
#define NUM_THREADS (128 + CONSUMER_THREADS)      
#define TILE_BYTES (TILE_ROWS * PIPE_COLS * 4)


#define SMEM_STAGE_OFF 0                                          
#define SMEM_OUT_OFF (SMEM_STAGE_OFF + STAGES * TILE_BYTES)       
#define SMEM_BAR_OFF (SMEM_OUT_OFF + STORE_BUFS * TILE_BYTES)     
#define SMEM_USED (SMEM_BAR_OFF + 2 * STAGES * 8)
#define SMEM_BYTES (SMEM_USED + 1024)                             

















__global__ void __launch_bounds__(NUM_THREADS, 1)
tma_pipeline_kernel() {




}




cudaError_t launch_tma_pipeline() { cudaStream_t stream{}; 
  const int grid = PIPE_GRID < NUM_TILES ? PIPE_GRID : NUM_TILES;
  tma_pipeline_kernel<<<grid, NUM_THREADS, SMEM_BYTES, stream>>>();
  return cudaGetLastError();
}

int main(int argc, char** argv) {

  const size_t n = (size_t)PIPE_ROWS * PIPE_COLS;
  std::vector<float> hx(n), hy(n), hr(PIPE_ROWS), ref_y(n), ref_r(PIPE_ROWS);

  float *dx, *dy, *dr;
  cudaMalloc(&dy, n * sizeof(float));
  cudaMemset(dy, 0xFF, n * sizeof(float));  

  cudaMemcpy(hy.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost);

  wscheck::compare(hy.data(), ref_y.data(), PIPE_ROWS, PIPE_COLS, 1e-5, 1e-4, "Y");

  return wscheck::exit_code();
}
