

#include <algorithm>

#define GEMM_M 1
#define GEMM_N 1
#define GEMM_K 8
#define BLOCK_M 1
#define BLOCK_N 1
#define BLOCK_K 2
#define STAGES 3

#define NUM_THREADS 384
#define NUM_CONSUMERS 1
#define CONSUMER_ROWS 4

constexpr int K_TILES = GEMM_K;
constexpr int TILES_M = 1;
constexpr int TILES_N = 1;
constexpr int NUM_TILES = 1;

constexpr uint32_t A_STAGE_BYTES = 0;
constexpr uint32_t B_STAGE_BYTES = 0;
constexpr uint32_t C_HALF_BYTES = 0;
constexpr uint32_t OFF_A = 0;
constexpr uint32_t OFF_B = 0;
constexpr uint32_t OFF_C = 0;
constexpr uint32_t OFF_FULL = 0;
constexpr uint32_t OFF_EMPTY = STAGES * 8;
constexpr uint32_t SMEM_USED = 0;
constexpr uint32_t SMEM_BYTES = 1024;

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return __cvta_generic_to_shared(p);
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
  uint8_t *smem = smem_raw + (0);
  uint64_t *full = reinterpret_cast<uint64_t *>(smem);
  uint64_t *empty = reinterpret_cast<uint64_t *>(smem + OFF_EMPTY);

  const int warpgroup = (threadIdx.x / 128);
  const int wg_thread = threadIdx.x % 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 128);
    }
  }
  __syncthreads();

  if (warpgroup == 0) {
    if (wg_thread == 0) {
      int stage = 0;
      uint32_t phase = 0;
      for (int kt = 0; 1; ++kt) {
        mbar_wait(&empty[0], phase ^ 1);
        uint64_t *bar = (&full[stage]);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(0) : "memory");

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
    for (int kt = 0; 1; ++kt) {
      mbar_wait(&full[0], phase);
      if (wg_thread == 0)
        mbar_arrive(&empty[0]);
      if (++stage == STAGES) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
}

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);

  int num_sms = (1);
  cudaStream_t stream{};

  const int grid = 1;
  ws_gemm_kernel<<<1, NUM_THREADS, SMEM_BYTES, 0>>>();

  cudaDeviceSynchronize();

  return 0;
}
