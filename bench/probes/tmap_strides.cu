// Which global strides cuTensorMapEncodeTiled accepts (session 21): a reduction of
// gemm_expect_tx ended with `strides[1] = {0}` and the emulator's encode took it. The driver API
// documentation asks for a multiple of 16 below 2^40 and says nothing of a lower bound; this asks
// the driver. A 2D bf16 tensor of 128 rows x 512 columns (1024 bytes a row), box 64 x 128, 128B
// swizzle, as the GEMM's B map.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <cstdio>

int main() {
  void *p = nullptr;
  cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
  auto encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  void *d = nullptr;
  cudaMalloc(&d, 1 << 20);
  const cuuint64_t strides_to_try[] = {0, 16, 32, 128, 512, 1008, 1024, 1040, 2048};
  for (cuuint64_t s : strides_to_try) {
    alignas(64) CUtensorMap map;
    const cuuint64_t dims[2] = {512, 128};
    const cuuint64_t strides[1] = {s};
    const cuuint32_t box[2] = {64, 128};
    const cuuint32_t es[2] = {1, 1};
    CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, d, dims, strides, box, es,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    std::printf("stride %5llu bytes (a row is 1024): CUresult %d%s\n", (unsigned long long)s, (int)r,
                r == CUDA_SUCCESS ? " (accepted)" : " (refused)");
  }
  return 0;
}
