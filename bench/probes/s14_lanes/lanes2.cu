// An mbarrier initialised for 2 arrivals that only one thread arrives on: every thread
// waits forever (seed 000 class 1, arrival-count mismatch). Expected: hang.
#include "common.h"
#include <cstdint>
__global__ void k(int *out) {
  __shared__ uint64_t bar;
  uint32_t a = (uint32_t)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 2;" ::"r"(a));
  __syncthreads();
  if (threadIdx.x < 2) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(a) : "memory");
  uint32_t done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(a) : "memory");
  out[threadIdx.x] = 1;
}
int main() {
  int *d;
  CHECK(cudaMalloc(&d, 128 * 4));
  k<<<1, 128>>>(d);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  return 0;
}
