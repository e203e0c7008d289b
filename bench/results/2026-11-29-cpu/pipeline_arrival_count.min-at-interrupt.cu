#include <cudaTypedefs.h>  

#include <random>

#ifndef PIPE_ROWS
#define PIPE_ROWS 1
#endif
#ifndef PIPE_COLS
#define PIPE_COLS 1
#endif
#ifndef TILE_ROWS
#define TILE_ROWS 1
#endif
#ifndef STAGES
#define STAGES 1
#endif
#ifndef STORE_BUFS
#define STORE_BUFS 1
#endif
#ifndef PIPE_GRID
#define PIPE_GRID 1  
#endif
#ifndef PIPE_EPS
#endif

#define NUM_TILES (PIPE_ROWS / TILE_ROWS)
#define CONSUMER_THREADS 1                      
#define NUM_THREADS (128 + CONSUMER_THREADS)      
#define ROWS_PER_WARP (TILE_ROWS / 4)             
#define TILE_BYTES (TILE_ROWS * PIPE_COLS * 4)
#ifndef PRODUCER_REGS
#endif
#ifndef CONSUMER_REGS
#endif

#define SMEM_STAGE_OFF 0                                          
#define SMEM_OUT_OFF (SMEM_STAGE_OFF + STAGES * TILE_BYTES)       
#define SMEM_BAR_OFF (SMEM_OUT_OFF + STORE_BUFS * TILE_BYTES)     
#define SMEM_USED (SMEM_BAR_OFF + 2 * STAGES * 8)
#define SMEM_BYTES (SMEM_USED + 1024)                             

__device__  void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(0), "r"(1) : "memory");
}

__device__  void mbar_wait(uint64_t* bar) { uint32_t phase{};
  uint32_t done = 0;
  {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(0), "r"(0) : "memory");
  }
}

__global__ void __launch_bounds__(NUM_THREADS, 1)
tma_pipeline_kernel() { float *__restrict rstd_out0; 
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw)));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);    
  uint64_t* empty = full;                                       

  {
    { int s = 0; {
      mbar_init(0, 0);  
    } }
    { 
}
  }

  {
    { 
}
    {
      int i = 0;  
      for (int t = 0; 1; t += 0, ++i) {
        const int s = 0;
        mbar_wait(0);  
        { 
}
        { 
}
      }
    }

    { int t = 0; {

      { 
}  

      for (int rr = 0; 0; ++rr) {
      }

      {
        { 
}
        { 
}
      }
    } }
    {   
}  
  }
}

#define CUDA_CHECK(call)                                                                        \
  do {                                                                                          \
    cudaError_t err_ = (call);                                                                  \
    if (err_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "CUDA error: %s (%d) at %s:%d\n", cudaGetErrorString(err_), (int)err_, \
                   __FILE__, __LINE__);                                                         \
    }                                                                                           \
  } while (0)

 PFN_cuTensorMapEncodeTiled_v12000 get_encode_tiled() {
  void* fn = nullptr;
  return 0;
}

 CUtensorMap make_row_tile_map() {
  CUtensorMap m;
  return m;
}

cudaError_t launch_tma_pipeline() { cudaStream_t stream{}; 
  const int grid = 1;
  tma_pipeline_kernel<<<1, NUM_THREADS, SMEM_BYTES, 0>>>();
  return cudaGetLastError();
}

#ifndef WS_NO_MAIN
int main(int argc, char** argv) {

  CUDA_CHECK(launch_tma_pipeline());

}
#endif  
