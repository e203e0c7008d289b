__global__ void handoff_kernel() {
  __shared__ uint64_t full;
  uint32_t count = 2;
  asm("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(0), "r"(count));

  asm("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(0));

  uint32_t done = 0;
  while (1)
    asm("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, "
        "p; }"
        : "=r"(done)
        : "r"(0), "r"(0));
}

int main() {
  handoff_kernel<<<1, 1>>>();
  cudaFree(0);
}
