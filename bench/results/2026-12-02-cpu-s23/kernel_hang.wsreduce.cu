__global__ void handoff_kernel() {
  __shared__ unsigned long full;
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"((unsigned)__cvta_generic_to_shared(&full)), "r"(2u));

  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"((unsigned)__cvta_generic_to_shared(&full)) : "memory");

  unsigned long *bar(&full);
  unsigned done;
  while (1)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"((unsigned)__cvta_generic_to_shared(bar)), "r"(0)
                 : "memory");
}

int main() {
  handoff_kernel<<<1, 1>>>();
  cudaDeviceSynchronize();
}
