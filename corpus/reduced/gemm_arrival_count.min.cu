__device__ void mbar_wait(unsigned long *bar, unsigned phase) {
  unsigned done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(((int)(__cvta_generic_to_shared((bar))))), "r"(phase) : "memory");
  }
}

__global__ void ws_gemm_kernel() {
  extern __shared__ char smem_raw[];

  if (threadIdx.x == 0) {

    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(((int)(__cvta_generic_to_shared((&(reinterpret_cast<long *>((smem_raw + (0)) + 131072u))[0]))))), "r"(1u) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(((int)(__cvta_generic_to_shared((&(reinterpret_cast<long *>((smem_raw) + 131096u))[0]))))), "r"((128)) : "memory");
  }
  __syncthreads();

  if (((threadIdx.x / 128)) == 0) {
    if ((threadIdx.x) == 0) {
      unsigned phase = 0;
      for (int kt = 0;;) {
        mbar_wait(&(reinterpret_cast<unsigned long *>((smem_raw) + 131096u))[0], phase ^ 1);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(((int)(__cvta_generic_to_shared((((&(reinterpret_cast<long *>((smem_raw + (0)) + 131072u))[0]))))))), "r"(0) : "memory");

        phase ^= 1;
      }
    }
  } else {
    unsigned phase = 0;
    for (int kt = 0;;) {
      mbar_wait(&(reinterpret_cast<unsigned long *>((smem_raw) + 131072u))[0], phase);
      if ((threadIdx.x % 128) == 0)
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(((int)(__cvta_generic_to_shared((&(reinterpret_cast<long *>((smem_raw + (0)) + 131096u))[0]))))) : "memory");
      phase ^= 1;
    }
  }
}

int main() {

  cudaFuncSetAttribute(ws_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 132144u);

  ws_gemm_kernel<<<1, 384, 132144u, 0>>>();

  cudaDeviceSynchronize();
}
