
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <random>

typedef __nv_bfloat16 bf16;

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t phase) {
  uint32_t done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(bar)), "r"(phase) : "memory");
  }
}

__global__ void ws_gemm_kernel() {
  extern __shared__ uint8_t smem_raw[];
  uint8_t *smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);

  if (threadIdx.x == 0) {
    for (int s = 0; s < 3; ++s) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(&(reinterpret_cast<uint64_t *>(smem + 131072u))[s])), "r"(1u) : "memory");
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(&(reinterpret_cast<uint64_t *>(smem + 131096u))[s])), "r"((uint32_t)(2 * 128)) : "memory");
    }
  }
  __syncthreads();

  if ((__shfl_sync(0xffffffff, (int)threadIdx.x / 128, 0)) == 0) {
    if ((threadIdx.x % 128) == 0) {
      int stage = 0;
      uint32_t phase = 0;
      int m0, n0;
      for (int kt = 0; kt < 4; ++kt) {
        mbar_wait(&(reinterpret_cast<uint64_t *>(smem + 131096u))[stage], phase ^ 1);
        {
          uint64_t *bar = (&(reinterpret_cast<uint64_t *>(smem + 131072u))[stage]);
          uint32_t bytes{};
          asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
        }
        if (++stage == 3) {
          stage = 0;
          phase ^= 1;
        }
      }
    }
  } else {
    const int warp = (threadIdx.x % 128) / 32, lane = (threadIdx.x % 128) % 32;
    int stage = 0;
    uint32_t phase = 0;
    int m0, n0;
    int prev_stage = 0;
    for (int kt = 0; kt < 4; ++kt) {
      mbar_wait(&(reinterpret_cast<uint64_t *>(smem + 131072u))[stage], phase);
      if (kt > 0 && (threadIdx.x % 128) == 0)
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(&(reinterpret_cast<uint64_t *>(smem + 131096u))[prev_stage])) : "memory");
      prev_stage = stage;
      if (++stage == 3) {
        stage = 0;
        phase ^= 1;
      }
    }
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(&(reinterpret_cast<uint64_t *>(smem + 131096u))[prev_stage])) : "memory");

#pragma unroll
    for (int j = 0; j < 1; ++j) {
#pragma unroll
      for (int h = 0; h < 1; ++h) {
      }
    }
  }
}

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);

  std::vector<bf16> hA((size_t)128 * 512), hB((size_t)384 * 512), hC((size_t)128 * 384);

  bf16 *dA, *dB, *dC;
  cudaMalloc(&dB, hB.size() * sizeof(bf16));
  cudaMalloc(&dC, hC.size() * sizeof(bf16));

  {
    int num_sms = (prop.multiProcessorCount);
    cudaStream_t stream{};
    static bool configured = false;

    cudaFuncSetAttribute(ws_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)132144u);
    configured = true;

    const int grid = std::min(num_sms, 3);
    ws_gemm_kernel<<<grid, 384, 132144u, stream>>>();
  }

  cudaFree(dB);
}
