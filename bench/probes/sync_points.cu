// Which host calls wait for a running kernel: a kernel spins for ~SPIN_MS on the GPU clock, then the
// host makes one call (argv[1]) and times it. A call that waits takes ~SPIN_MS; one that does not
// returns in microseconds (and the process then exits with the kernel still running).
// Session 12: a reduction whose only synchronizing call had become cudaMemcpy(0, 0, 0, D2H) after a
// hanging launch passed on the H200, while the emulator (which synchronized there) said hang.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#define SPIN_MS 1500
__global__ void spin(long long cycles, int *out) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  if (out) out[0] = 1;
}
int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "sync";
  int *d = nullptr;
  cudaMalloc(&d, 4);
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  cudaDeviceSynchronize();
  spin<<<1, 1>>>((long long)clock_khz * SPIN_MS, d);
  int h = 0;
  auto t0 = std::chrono::steady_clock::now();
  cudaError_t e = cudaSuccess;
  if (!strcmp(what, "sync")) e = cudaDeviceSynchronize();
  else if (!strcmp(what, "memcpy0")) e = cudaMemcpy(nullptr, nullptr, 0, cudaMemcpyDeviceToHost);
  else if (!strcmp(what, "memcpy0d")) e = cudaMemcpy(&h, d, 0, cudaMemcpyDeviceToHost);
  else if (!strcmp(what, "memcpy4")) e = cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost);
  else if (!strcmp(what, "memcpyh2h")) e = cudaMemcpy(&h, &clock_khz, 4, cudaMemcpyHostToHost);
  else if (!strcmp(what, "free0")) e = cudaFree(nullptr);
  else if (!strcmp(what, "free")) e = cudaFree(d);
  else if (!strcmp(what, "memset")) e = cudaMemset(d, 0, 4);
  else if (!strcmp(what, "getlasterror")) e = cudaGetLastError();
  else if (!strcmp(what, "malloc0memcpy")) {  // session 14: a reduction ended so and passed on the H200
    int *z = d;
    cudaError_t m = cudaMalloc(&z, 0);
    std::printf("cudaMalloc(&z, 0): %s, z %s\n", cudaGetErrorString(m), z ? "not null" : "null");
    t0 = std::chrono::steady_clock::now();
    e = cudaMemcpy(&h, z, 1, cudaMemcpyDeviceToHost);
  } else if (!strcmp(what, "memcpyhostsrc")) e = cudaMemcpy(&h, &clock_khz, 4, cudaMemcpyDeviceToHost);
  else if (!strcmp(what, "freeinterior")) e = cudaFree(d + 1);  // not where an allocation starts
  else if (!strcmp(what, "freegarbage")) e = cudaFree(reinterpret_cast<void *>(0xfefefefefefefefeull));
  else if (!strcmp(what, "memcpyhostdst")) e = cudaMemcpy(&h, &clock_khz, 4, cudaMemcpyHostToDevice);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%-13s %8.3f ms  %s  (%s)\n", what, ms, ms > SPIN_MS / 2 ? "WAITS" : "returns", cudaGetErrorString(e));
  return 0;
}
