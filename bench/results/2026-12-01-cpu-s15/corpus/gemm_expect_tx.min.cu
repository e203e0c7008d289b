

#include <algorithm>

__device__ __forceinline__ unsigned smem_u32(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_wait(unsigned long *bar, unsigned phase) {
  unsigned done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(bar)), "r"(phase) : "memory");
  }
}

__global__ void ws_gemm_kernel() {
  extern __shared__ unsigned char smem_raw[];
  unsigned char *smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);

  if (threadIdx.x == 0) {

    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(&(reinterpret_cast<unsigned long *>(smem + 131072u))[0])), "r"(1u) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(&(reinterpret_cast<unsigned long *>(smem + 131096u))[0])), "r"(2u) : "memory");
  }
  __syncthreads();

  if ((__shfl_sync(0xffffffff, (int)threadIdx.x / 128, 0)) == 0) {
    if ((threadIdx.x % 128) == 0) {
      int stage = 0;
      unsigned phase = 0;
      for (int kt = 0; kt < 2; ++kt) {
        mbar_wait(&(reinterpret_cast<unsigned long *>(smem + 131096u))[stage], phase ^ 1);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(&(reinterpret_cast<unsigned long *>(smem + 131072u))[stage])), "r"(32768u * 2) : "memory");
        stage = 0;
        phase ^= 1;
      }
    }
  } else {

    mbar_wait(&(reinterpret_cast<unsigned long *>(smem + 131072u))[0], 0);
  }
}

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);

  int num_sms = (prop.multiProcessorCount);
  cudaStream_t stream{};

  cudaFuncSetAttribute(ws_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)132144u);

  const int grid = std::min(num_sms, 1);
  ws_gemm_kernel<<<grid, 384, 132144u, stream>>>();

  cudaDeviceSynchronize();
}
