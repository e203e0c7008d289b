#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>

#include <random>

typedef __nv_bfloat16 bf16;

__device__ __forceinline__ void mbar_wait(unsigned long *bar, unsigned phase) {
  unsigned done = 0;
  while (!done)
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"((unsigned int)__cvta_generic_to_shared(bar)), "r"(phase) : "memory");
}

__global__ void ws_gemm_kernel(const __grid_constant__ CUtensorMap tmap_b) {
  extern __shared__ unsigned char smem_raw[];

  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"((unsigned int)__cvta_generic_to_shared(smem_raw + 131072u)), "r"(1u) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"((unsigned int)__cvta_generic_to_shared(smem_raw + 131096u)), "r"(2u) : "memory");
  }
  __syncthreads();

  if ((threadIdx.x / 128) == 0) {
    if (threadIdx.x == 0) {
      unsigned phase = 0;
      while (1) {
        mbar_wait(reinterpret_cast<unsigned long *>(smem_raw + 131096u), phase ^ 1);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"((unsigned int)__cvta_generic_to_shared(smem_raw + 131072u)), "r"(32768u) : "memory");
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"((unsigned int)__cvta_generic_to_shared(smem_raw)), "l"(reinterpret_cast<unsigned long>((&tmap_b))), "r"((unsigned int)__cvta_generic_to_shared(smem_raw + 131072u)), "r"(0), "r"(0)
            : "memory");
        phase ^= 1;
      }
    }
  } else
    mbar_wait(reinterpret_cast<unsigned long *>(smem_raw + 131072u), 0);
}

struct WsGemmMaps {
  CUtensorMap a, b, c;
};

static PFN_cuTensorMapEncodeTiled_v12000 get_encode_tiled() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;

  void *p = nullptr;
  cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, 0);

  fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);

  return fn;
}

static CUtensorMap make_tmap_2d(const void *base, unsigned long rows, unsigned long cols, unsigned box_rows,
                                unsigned box_cols) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {0};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  get_encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(base), dims,
                     strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                     CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return map;
}

static WsGemmMaps make_ws_gemm_maps(const bf16 *dB) {
  WsGemmMaps m;
  m.b = make_tmap_2d(dB, 128, 512, 128, 64);
  return m;
}

int main() {
  std::vector<bf16> hA(128), hB(128), hC(0);

  bf16 *dB;
  cudaMalloc(&dB, hB.size());

  const WsGemmMaps maps = make_ws_gemm_maps(dB);

  cudaFuncSetAttribute(ws_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 132144u);

  ws_gemm_kernel<<<1, 384, 132144u, 0>>>(maps.b);

  cudaDeviceSynchronize();
}
