#include <cuda.h>  
#include <cudaTypedefs.h>  



#define PIPE_ROWS 2
#define PIPE_COLS 1
#define TILE_ROWS 1
#define STAGES 1
#define STORE_BUFS 1
#define PIPE_GRID 1  

#define NUM_TILES (PIPE_ROWS / TILE_ROWS)
#define CONSUMER_THREADS 1                      
#define NUM_THREADS (128 + CONSUMER_THREADS)      
#define TILE_BYTES (TILE_ROWS * PIPE_COLS * 4)


#define SMEM_STAGE_OFF 0                                          
#define SMEM_OUT_OFF (SMEM_STAGE_OFF + STAGES * TILE_BYTES)       
#define SMEM_BAR_OFF (SMEM_OUT_OFF + STORE_BUFS * TILE_BYTES)     
#define SMEM_USED (SMEM_BAR_OFF + 2 * STAGES * 8)
#define SMEM_BYTES (SMEM_USED + 1024)                             

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}




__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t phase) {
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

__global__ void __launch_bounds__(NUM_THREADS, 1)
tma_pipeline_kernel(const __grid_constant__ CUtensorMap x_map) { 
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  float* stage_tile = reinterpret_cast<float*>(smem + SMEM_STAGE_OFF);  
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + SMEM_BAR_OFF);    
  uint64_t* empty = full + STAGES;                                       

  const int warp = threadIdx.x / 32;
  const int wg = threadIdx.x / 128;

  
     int s = 0; 
      mbar_init(&full[s], 1);                  
      mbar_init(&empty[s], CONSUMER_THREADS + 1);  
     
  

  
    if (warp == 0 && elect_one_sync()) {
      int i = 0;  
      for (int t = blockIdx.x; t < NUM_TILES; t += gridDim.x, ++i) {
        const int s = i % STAGES;
        const uint32_t phase = (i / STAGES) & 1;
        mbar_wait(&empty[s], phase ^ 1);  
         uint64_t* bar = (&full[s]); uint32_t bytes = (TILE_BYTES); 
  asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n"
               ::"r"(smem_u32(bar)), "r"(bytes) : "memory");

        { void* dst = (stage_tile + s * (TILE_ROWS * PIPE_COLS)); const CUtensorMap* map = (&x_map); uint64_t* bar = (&full[s]);  int c1{}; int c0{};
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
      ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}
      }
    }
  

  if (wg == 1) {
    int i = 0;
    for (int t = blockIdx.x; t < NUM_TILES; t += gridDim.x, ++i) {
      const int s = i % STAGES;
      const uint32_t phase = (i / STAGES) & 1;
      mbar_wait(&full[s], phase);  

       uint64_t* bar = (&empty[s]); 
  asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.shared::cta.b64 state, [%0];\n}\n"
               ::"r"(smem_u32(bar)) : "memory");
  




      
      
    }
  }
}


inline PFN_cuTensorMapEncodeTiled_v12000 get_encode_tiled() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q);
  return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
}

inline CUtensorMap make_row_tile_map(float* base, int rows, int cols) {
  CUtensorMap m;
  const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};  
  const cuuint64_t strides[1] = {(cuuint64_t)cols * sizeof(float)};  
  const cuuint32_t box[2] = {(cuuint32_t)PIPE_COLS, (cuuint32_t)TILE_ROWS};
  const cuuint32_t estr[2] = {1, 1};
  CUresult r = get_encode_tiled()(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, base, dims, strides, box, estr,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return m;
}


int main(int argc, char** argv) {

  const size_t n = (size_t)PIPE_ROWS * PIPE_COLS;

  float *dx, *dy, *dr;
  cudaMalloc(&dx, n * sizeof(float));

  const CUtensorMap x_map = make_row_tile_map(dx, PIPE_ROWS, PIPE_COLS);
     cudaStream_t stream{};
  const int grid = PIPE_GRID < NUM_TILES ? PIPE_GRID : NUM_TILES;
  tma_pipeline_kernel<<<grid, NUM_THREADS, SMEM_BYTES, stream>>>(x_map);

  cudaDeviceSynchronize();


  return 0;
}
