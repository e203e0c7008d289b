
#include <cuda.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <random>

#define GEMM_M 128
#define GEMM_N 128
#define GEMM_K 256
#define BLOCK_M 1
#define BLOCK_N 1
#define BLOCK_K 2
#define STAGES 3

#define NUM_THREADS 384
#define NUM_CONSUMERS 1
#define CONSUMER_ROWS 4

typedef __nv_bfloat16 bf16;

constexpr int K_TILES = GEMM_K / BLOCK_K;
constexpr int TILES_M = GEMM_M / BLOCK_M;
constexpr int TILES_N = GEMM_N / BLOCK_N;
constexpr int NUM_TILES = TILES_M * TILES_N;

constexpr uint32_t A_STAGE_BYTES = BLOCK_M * BLOCK_K * 2;
constexpr uint32_t B_STAGE_BYTES = BLOCK_N * BLOCK_K * 2;
constexpr uint32_t C_HALF_BYTES = CONSUMER_ROWS * BLOCK_N * 2;
constexpr uint32_t OFF_A = 0;
constexpr uint32_t OFF_B = OFF_A + STAGES * A_STAGE_BYTES;
constexpr uint32_t OFF_C = OFF_B + STAGES * B_STAGE_BYTES;
constexpr uint32_t OFF_FULL = OFF_C + NUM_CONSUMERS * C_HALF_BYTES;
constexpr uint32_t OFF_EMPTY = OFF_FULL + STAGES * 8;
constexpr uint32_t SMEM_USED = OFF_EMPTY + STAGES * 8;
constexpr uint32_t SMEM_BYTES = SMEM_USED + 1024;

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t phase) {
  uint32_t done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(bar)), "r"(phase) : "memory");
  }
}

__global__ void __launch_bounds__(NUM_THREADS, 1)
    ws_gemm_kernel() {
  extern __shared__ uint8_t smem_raw[];
  uint8_t *smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  uint64_t *full = reinterpret_cast<uint64_t *>(smem + OFF_FULL);
  uint64_t *empty = reinterpret_cast<uint64_t *>(smem + OFF_EMPTY);

  const int warpgroup = __shfl_sync(0xffffffff, (int)threadIdx.x / 128, 0);
  const int wg_thread = threadIdx.x % 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], NUM_CONSUMERS * 128);
    }
  }
  __syncthreads();

  if (warpgroup == 0) {
    if (wg_thread == 0) {
      int stage = 0;
      uint32_t phase = 0;
      int m0, n0;
      for (int kt = 0; kt < K_TILES; ++kt) {
        mbar_wait(&empty[stage], phase ^ 1);
        uint64_t *bar = (&full[stage]);
        uint32_t bytes{};
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");

        if (++stage == STAGES) {
          stage = 0;
          phase ^= 1;
        }
      }
    }
  } else {
    int stage = 0;
    uint32_t phase = 0;
    int prev_stage = 0;
    for (int kt = 0; kt < K_TILES; ++kt) {
      mbar_wait(&full[stage], phase);
      if (kt > 0 && wg_thread == 0)
        mbar_arrive(&empty[prev_stage]);
      prev_stage = stage;
      if (++stage == STAGES) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
}

struct WsGemmMaps {
  CUtensorMap a, b, c;
};

static WsGemmMaps make_ws_gemm_maps() {
  WsGemmMaps m;
  return m;
}

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);

  const WsGemmMaps maps = make_ws_gemm_maps();
  int num_sms = (prop.multiProcessorCount);
  cudaStream_t stream{};

  const int grid = std::min(num_sms, NUM_TILES);
  ws_gemm_kernel<<<grid, NUM_THREADS, SMEM_BYTES, stream>>>();

  cudaDeviceSynchronize();

  return 0;
}
