// Probe (issue 4, the hang signature): what the 64-bit mbarrier object holds on this GPU after
// init, arrivals and expect_tx, read with ld.shared.b64, and what mbarrier.pending_count says of
// that word. The GPU watchdog could then tell "no arrival yet" from "some arrivals missing" at a
// parked wait, as the emulator does. PTX calls the object opaque: this only records what sm_90a does.
#include <cstdint>
#include <cstdio>

__device__ uint64_t g_words[16];
__device__ uint32_t g_pending[16];

__device__ __forceinline__ void snap(uint32_t a, int i) {
  uint64_t w;
  uint32_t p;
  asm volatile("ld.shared.b64 %0, [%1];" : "=l"(w) : "r"(a) : "memory");
  asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(p) : "l"(w));
  g_words[i] = w;
  g_pending[i] = p;
}

__global__ void probe() {
  __shared__ uint64_t bar;
  uint32_t a = (uint32_t)__cvta_generic_to_shared(&bar);
  if (threadIdx.x != 0) return;
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 5;" ::"r"(a) : "memory");
  snap(a, 0);                                                                   // init 5
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(a) : "memory");
  snap(a, 1);                                                                   // 1 of 5 arrived
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], 100;" ::"r"(a) : "memory");
  snap(a, 2);                                                                   // + tx 100
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], 3;" ::"r"(a) : "memory");
  snap(a, 3);                                                                   // 4 of 5, tx 100
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(a) : "memory");
  snap(a, 4);                                                                   // 5 of 5, tx 100 pending
  asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], 100;" ::"r"(a) : "memory");
  snap(a, 5);                                                                   // phase 1 complete
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], 2;" ::"r"(a) : "memory");
  snap(a, 6);                                                                   // phase 1: 2 of 5
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 256;" ::"r"(a) : "memory");
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], 2;" ::"r"(a) : "memory");
  snap(a, 7);                                                                   // init 256, 2 arrived (the GEMM bug)
}

int main() {
  probe<<<1, 32>>>();
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { std::printf("probe failed: %s\n", cudaGetErrorString(e)); return 1; }
  uint64_t w[16];
  uint32_t p[16];
  cudaMemcpyFromSymbol(w, g_words, sizeof w);
  cudaMemcpyFromSymbol(p, g_pending, sizeof p);
  const char *what[] = {"init 5",           "1 of 5 arrived",       "+ expect_tx 100",    "4 of 5, tx 100",
                        "5 of 5, tx 100",   "complete_tx 100: phase 1", "phase 1, 2 of 5", "init 256, 2 arrived"};
  for (int i = 0; i < 8; ++i)
    std::printf("MBARWORD %d %-26s word=0x%016llx pending_count=%u\n", i, what[i], (unsigned long long)w[i], p[i]);
  return 0;
}
