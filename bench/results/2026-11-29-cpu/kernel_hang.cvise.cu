#define THREADS 128
#define CHECK0                                                              \
  } while 0
__device__ __forceinline__ uint32_t smem_addr(const void *p) {
              return __cvta_generic_to_shared(p);
              }
                __device__ __forceinline__ void bar_init(uint64_t *bar, uint32_t count) {
                asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
              }
                __device__ __forceinline__ void bar_wait(uint64_t *bar, uint32_t parity) {
                uint32_t done = 0;
                while (!done)     asm volatile(" .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; "                  : "=r"(done)                  : "r"(smem_addr(bar)), "r"(parity)                  : "memory");
              }
                __device__ int square(int x) {
      }
                __global__ void handoff_kernel(const int *in, int *out) {
                __shared__ uint64_t full;
                if (threadIdx.x == 0) bar_init(&full, 2);
                bar_wait(&full, 0);
              }
                int main() {
                int *d_in = nullptr, *d_out = nullptr;
                handoff_kernel<<<1, THREADS>>>(d_in, d_out);
              }
