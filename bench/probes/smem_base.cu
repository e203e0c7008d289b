// Issue 4 probe: where a kernel's dynamic shared memory starts in the CTA's shared window on this
// GPU. A reduction (bench/results/2026-11-30-cpu-s10/gemm-1) replaced a barrier's address by the
// literal 0, which the emulator maps to the first byte of dynamic shared memory; that is the same
// barrier on the GPU only if the dynamic array starts at shared address 0 there too.
#include <cstdint>
#include <cstdio>

__global__ void dyn_only(uint32_t *out) {
  extern __shared__ __align__(16) uint8_t smem_raw[];
  if (threadIdx.x == 0) out[0] = (uint32_t)__cvta_generic_to_shared(smem_raw);
}

__global__ void dyn_and_static(uint32_t *out) {
  __shared__ uint64_t bar[4];
  extern __shared__ __align__(16) uint8_t smem_raw[];
  if (threadIdx.x == 0) {
    bar[0] = 1;
    out[0] = (uint32_t)__cvta_generic_to_shared(smem_raw);
    out[1] = (uint32_t)__cvta_generic_to_shared(bar);
  }
}

int main() {
  uint32_t *d, h[2] = {0xffffffffu, 0xffffffffu};
  cudaMalloc(&d, 8);
  cudaMemcpy(d, h, 8, cudaMemcpyHostToDevice);
  dyn_only<<<1, 32, 1024>>>(d);
  cudaMemcpy(h, d, 8, cudaMemcpyDeviceToHost);
  std::printf("dynamic only (1 KiB): smem_raw at shared address %u\n", h[0]);
  cudaFuncSetAttribute(dyn_only, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
  dyn_only<<<1, 32, 200 * 1024>>>(d);
  cudaMemcpy(h, d, 8, cudaMemcpyDeviceToHost);
  std::printf("dynamic only (200 KiB): smem_raw at shared address %u\n", h[0]);
  dyn_and_static<<<1, 32, 1024>>>(d);
  cudaMemcpy(h, d, 8, cudaMemcpyDeviceToHost);
  std::printf("static 32 B + dynamic: smem_raw at %u, static bar at %u (%s)\n", h[0], h[1],
              cudaGetErrorString(cudaDeviceSynchronize()));
  return 0;
}
