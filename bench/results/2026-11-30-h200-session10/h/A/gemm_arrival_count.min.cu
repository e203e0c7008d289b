
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <random>


#define GEMM_M 1  
#define GEMM_N 1
#define GEMM_K 256
#define BLOCK_M 1
#define BLOCK_N 1
#define BLOCK_K 64
#define STAGES 3

#define NUM_THREADS 384     
#define NUM_CONSUMERS 1     
#define CONSUMER_ROWS 16    


typedef __nv_bfloat16 bf16;

constexpr int K_TILES = GEMM_K / BLOCK_K;
constexpr int TILES_M = GEMM_M / BLOCK_M;
constexpr int TILES_N = GEMM_N / BLOCK_N;
constexpr int NUM_TILES = TILES_M * TILES_N;

constexpr uint32_t A_STAGE_BYTES = BLOCK_M * BLOCK_K * 2;              
constexpr uint32_t B_STAGE_BYTES = BLOCK_N * BLOCK_K * 2;              
constexpr uint32_t STAGE_TX_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;     
constexpr uint32_t C_HALF_BYTES = CONSUMER_ROWS * BLOCK_N * 2;         
constexpr uint32_t OFF_A = 0;
constexpr uint32_t OFF_B = OFF_A + STAGES * A_STAGE_BYTES;
constexpr uint32_t OFF_C = OFF_B + STAGES * B_STAGE_BYTES;
constexpr uint32_t OFF_FULL = OFF_C + NUM_CONSUMERS * C_HALF_BYTES;
constexpr uint32_t OFF_EMPTY = OFF_FULL + STAGES * 8;
constexpr uint32_t SMEM_USED = OFF_EMPTY + STAGES * 8;
constexpr uint32_t SMEM_BYTES = SMEM_USED + 1024;                      

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}


__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}


__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t phase) {
  uint32_t done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(bar)), "r"(phase) : "memory");
  }
}

__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar) { int c0{}; int c1{};
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
      ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}




















__global__ void __launch_bounds__(NUM_THREADS, 1)
ws_gemm_kernel(const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  uint8_t* sA = smem + OFF_A;  
  uint8_t* sB = smem + OFF_B;  
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + OFF_FULL);    
  uint64_t* empty = reinterpret_cast<uint64_t*>(smem + OFF_EMPTY);  

  const int warpgroup = __shfl_sync(0xffffffff, (int)threadIdx.x / 128, 0);  
  const int wg_thread = threadIdx.x % 128;

  
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);               
      mbar_init(&empty[s], NUM_CONSUMERS * 128);  
    }
  
  __syncthreads();

  if (warpgroup == 0) {
    if (wg_thread == 0) {
      int stage = 0;
      uint32_t phase = 0;
        for (int kt = 0; kt < K_TILES; ++kt) {
          mbar_wait(&empty[stage], phase ^ 1);  
           uint64_t* bar = (&full[stage]); uint32_t bytes = STAGE_TX_BYTES; 
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
               ::"r"(smem_u32(bar)), "r"(bytes) : "memory");

          tma_load_2d(sA + stage * A_STAGE_BYTES, &tmap_a, &full[stage]);
          tma_load_2d(sB + stage * B_STAGE_BYTES, &tmap_b, &full[stage]);
          if (++stage == STAGES) { stage = 0; phase ^= 1; }
        }
       
    }
  } else {
    int stage = 0;
    uint32_t phase = 0;
      int prev_stage = 0;
      for (int kt = 0; kt < K_TILES; ++kt) {
        mbar_wait(&full[stage], phase);
        if (kt > 0 && wg_thread == 0) mbar_arrive(&empty[prev_stage]);
        if (++stage == STAGES) { stage = 0; phase ^= 1; }
      }

      
      
     
  }
}


struct WsGemmMaps {
  CUtensorMap a, b, c;
};

static PFN_cuTensorMapEncodeTiled_v12000 get_encode_tiled() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
    
    fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  
  return fn;
}

static CUtensorMap make_tmap_2d(const void* base, uint64_t rows, uint64_t cols, uint32_t box_rows,
                                uint32_t box_cols) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cols, rows};              
  const cuuint64_t strides[1] = {cols * sizeof(bf16)};  
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  CUresult r = get_encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims,
                                  strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return map;
}

static WsGemmMaps make_ws_gemm_maps(const bf16* dA, const bf16* dB) {
  WsGemmMaps m;
  m.a = make_tmap_2d(dA, GEMM_M, GEMM_K, BLOCK_M, BLOCK_K);             
  m.b = make_tmap_2d(dB, GEMM_N, GEMM_K, BLOCK_N, BLOCK_K);
  return m;
}



int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);

  std::vector<bf16> hA((size_t)GEMM_M * GEMM_K), hB((size_t)GEMM_N * GEMM_K), hC((size_t)GEMM_M * GEMM_N);

  bf16 *dA, *dB, *dC;
  cudaMalloc(&dA, hA.size() * sizeof(bf16));
  cudaMalloc(&dB, hB.size() * sizeof(bf16));

  const WsGemmMaps maps = make_ws_gemm_maps(dA, dB);
   int num_sms = (prop.multiProcessorCount);  cudaStream_t stream{};
  
  
  const int grid = std::min(num_sms, NUM_TILES);
  ws_gemm_kernel<<<grid, NUM_THREADS, SMEM_BYTES, stream>>>(maps.a, maps.b);

  cudaDeviceSynchronize();



  return 0;
}
