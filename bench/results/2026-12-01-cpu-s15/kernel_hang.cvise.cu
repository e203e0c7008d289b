#define THREADS 128

__device__ uint32_t smem_addr(void *p) {
              return __cvta_generic_to_shared(p);
              }
                __device__ void bar_init(uint64_t *bar, uint32_t count) {
                asm ("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
              }
                __device__ void bar_wait(uint64_t *bar, uint32_t parity) {
                uint32_t done = 0;
                while (!done)     asm (" .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; "                  : "=r"(done)                  : "r"(smem_addr(bar)), "r"(parity)                   );
              }
                __global__ void handoff_kernel(int *, int *) {
                __shared__ uint64_t full;
                if (threadIdx.x == 0) bar_init(&full, 2);
                bar_wait(&full, 0);
              }
                int main() {
                int *d_in , *d_out ;
                handoff_kernel<<<1, THREADS>>>(d_in, d_out);
              }
