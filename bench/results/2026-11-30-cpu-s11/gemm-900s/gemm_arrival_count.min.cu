

#define NUM_THREADS 384

constexpr uint32_t OFF_EMPTY = 8;
uint32_t SMEM_BYTES = 16;

__device__ uint32_t smem_u32(void *p) {
  return __cvta_generic_to_shared(p);
}

__device__ void mbar_init(uint64_t *bar, uint32_t count) {
  asm("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

__device__ void mbar_arrive(uint64_t *bar) {
  asm("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

__device__ void mbar_wait(uint64_t *bar, uint32_t phase) {
  uint32_t done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(bar)), "r"(phase) : "memory");
  }
}

__global__ void
ws_gemm_kernel() {
  extern __shared__ uint8_t smem_raw[];
  uint8_t *smem = smem_raw + (0);
  uint64_t *full = reinterpret_cast<uint64_t *>(smem);
  uint64_t *empty = reinterpret_cast<uint64_t *>(smem + OFF_EMPTY);

  int warpgroup(threadIdx.x / 128);
  int wg_thread = threadIdx.x % 128;

  if (threadIdx.x == 0) {
    int s = 0;
    mbar_init(&full[s], 1);
    mbar_init(&empty[s], 128);
  }
  __syncthreads();

  if (warpgroup == 0) {
    if (wg_thread == 0) {
      uint32_t phase = 0;
      for (int kt = 0; 1; ++kt) {
        mbar_wait(&empty[0], phase ^ 1);
        uint64_t *bar = (&full[0]);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(0) : "memory");

        phase ^= 1;
      }
    }
  } else {
    uint32_t phase = 0;
    for (int kt = 0; 1; ++kt) {
      mbar_wait(&full[0], phase);
      if (wg_thread == 0)
        mbar_arrive(&empty[0]);
      phase ^= 1;
    }
  }
}

int main() {

  ws_gemm_kernel<<<1, NUM_THREADS, SMEM_BYTES, 0>>>();

  cudaDeviceSynchronize();
}
