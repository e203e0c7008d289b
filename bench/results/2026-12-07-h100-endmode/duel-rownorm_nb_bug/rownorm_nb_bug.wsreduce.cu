#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>

enum NamedBarrier : int { kBarEpilogue = 1,
                          kBarSlotWG0 = 2,
                          kBarSlotWG1 = 3,
                          kBarBandMax = 4 };

struct Smem {
  float tile[4][64 * 64];
  float partial[2][64];
  float warpMax[4];
  uint64_t full[4];
  uint64_t empty[4];
};

__global__ void rownorm_kernel() {
  float *__restrict bandMax{};
  float *__restrict norms{};
  extern __shared__ unsigned char dsmem[];
  Smem &sm = *reinterpret_cast<Smem *>((reinterpret_cast<uintptr_t>(dsmem) + 127) & ~uintptr_t(127));

  if ((threadIdx.x >> 5) == 8) {
  } else {
    const int s = 0 % 4;
    reinterpret_cast<const float4 *>(&sm.tile[s][((threadIdx.x % 128) >> 1) * 64 + ((threadIdx.x / 128) * 32 + ((threadIdx.x % 128) & 1) * 16)]);

    if ((threadIdx.x / 128) == 1) {
      {
        int id = kBarEpilogue;
        int count{};
        asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
      }
    } else {
      asm volatile("bar.sync %0, %1;\n" ::"r"((int)kBarEpilogue), "r"(288) : "memory");
      float nrm = 0.f;

      nrm = sqrtf(sm.partial[0][(threadIdx.x % 128) >> 1] + sm.partial[1][(threadIdx.x % 128) >> 1]);
      norms[(blockIdx.x * 64) + ((threadIdx.x % 128) >> 1)] = nrm;

      float m = nrm;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
      sm.warpMax[threadIdx.x >> 5] = m;
      asm volatile("bar.sync %0, %1;\n" ::"r"((int)kBarBandMax), "r"(128) : "memory");
      bandMax[blockIdx.x] = fmaxf(fmaxf(sm.warpMax[0], sm.warpMax[1]), fmaxf(sm.warpMax[2], sm.warpMax[3]));
    }
  }
  __syncthreads();
}

int main() {
  cudaFuncSetAttribute(rownorm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)66256ul);
  rownorm_kernel<<<1024 / 64, 288, 66256ul>>>();

  cudaError_t q;
  while ((q = cudaStreamQuery(0)) == cudaErrorNotReady) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}
