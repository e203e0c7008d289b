// Session 16 probe: what the H200 does with an mbarrier that no mbarrier.init set up.
// A reduction of pipeline_init_in_role (init in a role branch no thread takes; 719 on the GPU) kept
// the emulator's ub/use-before-init with one try_wait left, and that program passed on the GPU.
// Which uses of an uninitialised barrier fail on the GPU? One variant per process:
//   ./uninit MODE FILL   MODE: wait1 | waitloop | arrive | expecttx | bulk | bulkwait | wait1p1 (parity 1)
//                        FILL: the shared word before use: zero | ones | none (left as it is)
// Prints what the kernel saw and what cudaDeviceSynchronize returned.
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

__device__ unsigned g_out[4];

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__global__ void probe(int mode, int fill, const float *src) {
  __shared__ alignas(16) float buf[64];
  __shared__ alignas(8) unsigned long long bar;
  if (threadIdx.x != 0) return;
  if (fill == 0) bar = 0ull;
  if (fill == 1) bar = ~0ull;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  unsigned b = smem_u32(&bar), done = 0, spins = 0;
  auto try_wait = [&](unsigned parity) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(b), "r"(parity) : "memory");
  };
  switch (mode) {
    case 0: try_wait(0); break;                                          // wait1
    case 1: for (done = 0; !done && spins < 100000; ++spins) try_wait(0); break;  // waitloop (bounded)
    case 2: asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(b) : "memory"); break;  // arrive
    case 3: asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(256u) : "memory"); break;
    case 4:  // bulk: a 256-byte bulk copy completing on the uninitialised barrier
    case 5:  // bulkwait: the same, then a bounded wait
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                   ::"r"(smem_u32(buf)), "l"(src), "r"(256u), "r"(b) : "memory");
      if (mode == 5) for (done = 0; !done && spins < 100000; ++spins) try_wait(0);
      break;
    case 6: try_wait(1); break;  // wait1p1: a zeroed word's phase 0 has parity 0, so parity 1 reads as done
  }
  g_out[0] = done;
  g_out[1] = spins;
  g_out[2] = (unsigned)bar;
  g_out[3] = (unsigned)(bar >> 32);
}

int main(int argc, char **argv) {
  const char *modes[] = {"wait1", "waitloop", "arrive", "expecttx", "bulk", "bulkwait", "wait1p1"};
  const char *fills[] = {"zero", "ones", "none"};
  int mode = -1, fill = -1;
  for (int i = 0; i < 7; ++i) if (argc > 1 && !strcmp(argv[1], modes[i])) mode = i;
  for (int i = 0; i < 3; ++i) if (argc > 2 && !strcmp(argv[2], fills[i])) fill = i;
  if (mode < 0 || fill < 0) { fprintf(stderr, "usage: uninit wait1|waitloop|arrive|expecttx|bulk|bulkwait|wait1p1 zero|ones|none\n"); return 2; }
  float *src;
  cudaMalloc(&src, 256);
  cudaMemset(src, 0, 256);
  probe<<<1, 32>>>(mode, fill, src);
  cudaError_t e = cudaDeviceSynchronize();
  unsigned out[4] = {0, 0, 0, 0};
  if (e == cudaSuccess) cudaMemcpyFromSymbol(out, g_out, sizeof out);
  printf("mode=%s fill=%s sync=%s done=%u spins=%u bar=0x%08x%08x\n", modes[mode], fills[fill], cudaGetErrorName(e), out[0],
         out[1], out[3], out[2]);
  return e == cudaSuccess ? 0 : 1;
}
