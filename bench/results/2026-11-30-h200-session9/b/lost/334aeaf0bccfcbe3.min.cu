
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "wscheck.h"

#ifndef GEMM_M
#define GEMM_M 128  
#endif
#ifndef GEMM_N
#define GEMM_N 128
#endif
#ifndef GEMM_K
#define GEMM_K 64
#endif
#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif
#ifndef BLOCK_K
#define BLOCK_K 64
#endif
#ifndef STAGES
#if BLOCK_N == 256
#define STAGES 3
#else
#define STAGES 5
#endif
#endif

#define NUM_THREADS 384     
#define NUM_CONSUMERS 2     
#define CONSUMER_ROWS 64    
#define PRODUCER_REGS 40    
#define CONSUMER_REGS 232

static_assert(GEMM_M % BLOCK_M == 0 && GEMM_N % BLOCK_N == 0 && GEMM_K % BLOCK_K == 0,
              "shapes must be multiples of the tile sizes");
static_assert(BLOCK_M == NUM_CONSUMERS * CONSUMER_ROWS, "each consumer owns 64 rows of the tile");
static_assert(BLOCK_K == 64, "BLOCK_K must be 64 bf16 = 128 bytes: one 128B-swizzle row");
static_assert(BLOCK_N == 64 || BLOCK_N == 128 || BLOCK_N == 256, "wgmma n must be 64, 128 or 256");
static_assert(STAGES >= 2, "the ring needs at least two stages to overlap load and compute");

typedef __nv_bfloat16 bf16;

constexpr int K_TILES = GEMM_K / BLOCK_K;
constexpr int TILES_M = GEMM_M / BLOCK_M;
constexpr int TILES_N = GEMM_N / BLOCK_N;
constexpr int NUM_TILES = TILES_M * TILES_N;

constexpr uint32_t A_STAGE_BYTES = BLOCK_M * BLOCK_K * 2;              
constexpr uint32_t B_STAGE_BYTES = BLOCK_N * BLOCK_K * 2;              
constexpr uint32_t STAGE_TX_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;     
constexpr uint32_t C_BOX_COLS = 32;                                    
constexpr uint32_t C_BOX_BYTES = CONSUMER_ROWS * C_BOX_COLS * 2;       
constexpr uint32_t C_HALF_BYTES = CONSUMER_ROWS * BLOCK_N * 2;         
constexpr uint32_t OFF_A = 0;
constexpr uint32_t OFF_B = OFF_A + STAGES * A_STAGE_BYTES;
constexpr uint32_t OFF_C = OFF_B + STAGES * B_STAGE_BYTES;
constexpr uint32_t OFF_FULL = OFF_C + NUM_CONSUMERS * C_HALF_BYTES;
constexpr uint32_t OFF_EMPTY = OFF_FULL + STAGES * 8;
constexpr uint32_t SMEM_USED = OFF_EMPTY + STAGES * 8;
constexpr uint32_t SMEM_BYTES = SMEM_USED + 1024;                      
static_assert(SMEM_BYTES <= 232448, "ring + staging exceed the 227 KiB of an sm_90 CTA: lower STAGES");
static_assert(A_STAGE_BYTES % 1024 == 0 && B_STAGE_BYTES % 1024 == 0 && C_HALF_BYTES % 1024 == 0,
              "every swizzled tile must start 1024-aligned");














__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

template <int N>
__device__ __forceinline__ void warpgroup_reg_alloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

template <int N>
__device__ __forceinline__ void warpgroup_reg_dealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

__device__ __forceinline__ void named_barrier_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

__device__ __forceinline__ uint64_t make_desc_sw128(const void* tile) {
  uint64_t desc = 0;
  desc |= (uint64_t)1 << 16;                             
  desc |= (uint64_t)(1024 >> 4) << 32;                   
  desc |= (uint64_t)1 << 62;                             
  return desc;
}

template <int R>
__device__ __forceinline__ void fence_acc(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}




__device__ __forceinline__ void wgmma_bf16(float (&d)[BLOCK_N / 2], uint64_t desc_a, uint64_t desc_b, int scale_d) {
#if BLOCK_N == 64
#elif BLOCK_N == 128
  wgmma_m64n128k16(d, desc_a, desc_b, scale_d);
#else
  wgmma_m64n256k16(d, desc_a, desc_b, scale_d);
#endif
}

__device__ __forceinline__ uint32_t c_stage_offset(int row, int col) {
  return (col / 64) * C_BOX_BYTES + row * 128 + ((((col % 64) / 8) ^ (row % 8)) << 4) + (col % 8) * 2;
}

__device__ __forceinline__ void tile_origin(int tile, int& m0, int& n0) {
  m0 = (tile / TILES_N) * BLOCK_M;
  n0 = (tile % TILES_N) * BLOCK_N;
}

__global__ void __launch_bounds__(NUM_THREADS, 1)
ws_gemm_kernel(const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b,
               const __grid_constant__ CUtensorMap tmap_c) {
  extern __shared__ uint8_t smem_raw[];

  const int warpgroup = __shfl_sync(0xffffffff, (int)threadIdx.x / 128, 0);  
  const int wg_thread = threadIdx.x % 128;

  __syncthreads();

}

#define CUDA_CHECK(call)                                                                    \
  do {                                                                                      \
    cudaError_t err_ = (call);                                                              \
    if (err_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "CUDA error: %s (%d) at %s:%d\n", cudaGetErrorString(err_),     \
                   (int)err_, __FILE__, __LINE__);                                          \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

struct WsGemmMaps {
  CUtensorMap a, b, c;
};


static CUtensorMap make_tmap_2d(const void* base, uint64_t rows, uint64_t cols, uint32_t box_rows,
                                uint32_t box_cols) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cols, rows};              
  const cuuint64_t strides[1] = {cols * sizeof(bf16)};  
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  return map;
}


static void launch_ws_gemm(const WsGemmMaps& maps, int num_sms, cudaStream_t stream) {
  static bool configured = false;
  if (!configured) {
    CUDA_CHECK(cudaFuncSetAttribute(ws_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    configured = true;
  }
  const int grid = std::min(num_sms, NUM_TILES);
  ws_gemm_kernel<<<grid, NUM_THREADS, SMEM_BYTES, stream>>>(maps.a, maps.b, maps.c);
  CUDA_CHECK(cudaGetLastError());
}


#ifndef WS_NO_MAIN
int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) wscheck::skip("no CUDA device");
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9 || prop.minor != 0) wscheck::skip("needs sm_90a (Hopper)");

  const unsigned seed = std::random_device{}();
  std::printf("seed=%u\n", seed);
  std::mt19937 gen(seed);
  std::vector<bf16> hA((size_t)GEMM_M * GEMM_K), hB((size_t)GEMM_N * GEMM_K), hC((size_t)GEMM_M * GEMM_N);
  std::vector<float> fA(hA.size()), fB(hB.size());

  bf16 *dA, *dB, *dC;
  CUDA_CHECK(cudaMalloc(&dA, hA.size() * sizeof(bf16)));
  CUDA_CHECK(cudaMalloc(&dB, hB.size() * sizeof(bf16)));
  CUDA_CHECK(cudaMalloc(&dC, hC.size() * sizeof(bf16)));
  CUDA_CHECK(cudaMemcpy(dA, hA.data(), hA.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dB, hB.data(), hB.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dC, 0xFF, hC.size() * sizeof(bf16)));  

  std::printf("ws_gemm_sm90 M=%d N=%d K=%d tile=%dx%dx%d stages=%d tiles=%d grid=%d smem=%u\n", GEMM_M, GEMM_N,
              GEMM_K, BLOCK_M, BLOCK_N, BLOCK_K, STAGES, NUM_TILES, std::min(prop.multiProcessorCount, NUM_TILES),
              SMEM_BYTES);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(hC.data(), dC, hC.size() * sizeof(bf16), cudaMemcpyDeviceToHost));

  std::vector<float> fBt((size_t)GEMM_K * GEMM_N), ref((size_t)GEMM_M * GEMM_N, 0.0f), out(hC.size());
  for (int n = 0; n < 1; ++n)
    for (int k = 0; k < 1; ++k) fBt[(size_t)k * GEMM_N + n] = fB[(size_t)n * GEMM_K + k];
  for (int m = 0; m < 1; ++m) {
    float* c = &ref[(size_t)m * GEMM_N];
    for (int k = 0; k < 1; ++k) {
      const float a = fA[(size_t)m * GEMM_K + k];
      const float* b = &fBt[(size_t)k * GEMM_N];
      for (int n = 0; n < 1; ++n) c[n] += a * b[n];
    }
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = __bfloat162float(hC[i]);

  wscheck::compare(out.data(), ref.data(), GEMM_M, GEMM_N, 1e-2, 1e-2, "C");

  CUDA_CHECK(cudaFree(dA));
  CUDA_CHECK(cudaFree(dB));
  CUDA_CHECK(cudaFree(dC));
  return wscheck::exit_code();
}
#endif  
