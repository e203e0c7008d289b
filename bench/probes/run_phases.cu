// Issue 8 probe: where a short CUDA program's time goes, alone on a GPU and beside the same program
// on the other GPU. Phases as a candidate has them: the context (cudaFree(0)), device memory
// (3 x 32 MiB cudaMalloc + memset), host-mapped memory as the watchdog takes it (cudaHostAlloc
// 1 MiB, mapped), the first launch (module load) and its end, a 32 MiB copy back; the process's
// exit (context teardown) is what the wall time measured outside adds. `run_phases hold` opens a
// context and sleeps (a keeper).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <unistd.h>

__global__ void touch(float *a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] += 1.0f;
}

int main(int argc, char **argv) {
  using clk = std::chrono::steady_clock;
  auto ms = [](clk::time_point a, clk::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  auto t0 = clk::now();
  cudaFree(0);
  auto t1 = clk::now();
  if (argc > 1 && std::strcmp(argv[1], "hold") == 0) { sleep(600); return 0; }
  const int n = 8 << 20;
  float *d[3];
  for (auto &p : d) { cudaMalloc(&p, n * sizeof(float)); cudaMemset(p, 0, n * sizeof(float)); }
  cudaDeviceSynchronize();
  auto t2 = clk::now();
  void *h = nullptr;
  cudaHostAlloc(&h, 1 << 20, cudaHostAllocMapped);
  auto t3 = clk::now();
  touch<<<n / 256, 256>>>(d[0], n);
  cudaError_t e = cudaDeviceSynchronize();
  auto t4 = clk::now();
  static float back[8 << 20];
  cudaMemcpy(back, d[0], n * sizeof(float), cudaMemcpyDeviceToHost);
  auto t5 = clk::now();
  std::printf("ctx_ms=%.1f malloc_ms=%.1f hostalloc_ms=%.1f launch_ms=%.1f copy_ms=%.1f inside_ms=%.1f %s\n", ms(t0, t1),
              ms(t1, t2), ms(t2, t3), ms(t3, t4), ms(t4, t5), ms(t0, t5), cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
