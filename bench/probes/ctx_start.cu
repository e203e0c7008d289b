// Issue 8 probe: what a fresh CUDA process costs, alone on a GPU and beside another starting on a
// different GPU. `ctx_start hold` keeps its context open until killed (a keeper). Prints the time to the first context (cudaFree(0)), to an empty kernel's end,
// and the process's whole life is measured outside (bench/jobs/h200x2_s10_reduce.sh).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <unistd.h>

__global__ void empty_kernel() {}

int main(int argc, char **argv) {
  auto t0 = std::chrono::steady_clock::now();
  cudaFree(0);
  auto t1 = std::chrono::steady_clock::now();
  if (argc > 1 && std::strcmp(argv[1], "hold") == 0) {  // a keeper: hold the context until killed
    std::printf("holding\n");
    std::fflush(stdout);
    pause();
  }
  empty_kernel<<<1, 32>>>();
  cudaError_t e = cudaDeviceSynchronize();
  auto t2 = std::chrono::steady_clock::now();
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::printf("ctx_ms=%.1f kernel_ms=%.1f %s\n", ms(t0, t1), ms(t1, t2), cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
