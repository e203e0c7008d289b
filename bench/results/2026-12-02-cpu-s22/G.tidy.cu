__device__ __forceinline__ void mbar_wait(unsigned long *bar, unsigned phase) {
  unsigned done = 0;
  while (!done)
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"((unsigned int)__cvta_generic_to_shared(bar)), "r"(phase) : "memory");
}

__global__ void ws_gemm_kernel() {
  extern __shared__ unsigned char smem_raw[];

  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"((unsigned int)__cvta_generic_to_shared(smem_raw + 131072u)), "r"(1u) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"((unsigned int)__cvta_generic_to_shared(smem_raw + 131096u)), "r"(128) : "memory");
  }
  __syncthreads();

  if ((threadIdx.x / 128) == 0) {
    if (threadIdx.x == 0) {
      unsigned phase = 0;
      while (1) {
        mbar_wait(reinterpret_cast<unsigned long *>(smem_raw + 131096u), phase ^ 1);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"((unsigned int)__cvta_generic_to_shared(smem_raw + 131072u)), "r"(0) : "memory");

        phase ^= 1;
      }
    }
  } else {
    unsigned phase = 0;
    while (1) {
      mbar_wait(reinterpret_cast<unsigned long *>(smem_raw + 131072u), phase);
      if ((threadIdx.x % 128) == 0)
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"((unsigned int)__cvta_generic_to_shared(smem_raw + 131096u)) : "memory");
      phase ^= 1;
    }
  }
}

int main() {
  cudaFuncSetAttribute(ws_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 132144u);

  ws_gemm_kernel<<<1, 384, 132144u, 0>>>();

  cudaDeviceSynchronize();
}
