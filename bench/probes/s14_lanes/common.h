// Shared by the GPU fixtures: the CUDA error check every harness has.
#pragma once
#include <cstdio>
#include <cstdlib>
#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "CUDA error: %s (%d) at %s:%d\n", cudaGetErrorString(e_), (int)e_, \
                   __FILE__, __LINE__);                                                   \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)
