
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <random>

typedef __nv_bfloat16 bf16;

__device__ __forceinline__ unsigned smem_u32(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_wait(unsigned long *bar, unsigned phase) {
  unsigned done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(bar)), "r"(phase) : "memory");
  }
}

__device__ __forceinline__ void tma_load_2d(void *dst, const CUtensorMap *map, unsigned long *bar) {
  int c1{};
  int c0{};
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(smem_u32(dst)), "l"(reinterpret_cast<unsigned long>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}

__global__ void ws_gemm_kernel(const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char *smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);

  if (threadIdx.x == 0) {

    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(&(reinterpret_cast<unsigned long *>(smem + 131072u))[0])), "r"(1u) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(&(reinterpret_cast<unsigned long *>(smem + 131096u))[0])), "r"(2u) : "memory");
  }
  __syncthreads();

  if ((__shfl_sync(0xffffffff, (int)threadIdx.x / 128, 0)) == 0) {
    if ((threadIdx.x % 128) == 0) {
      int stage = 0;
      unsigned phase = 0;
      int m0, n0;
      for (int kt = 0; kt < 2; ++kt) {
        mbar_wait(&(reinterpret_cast<unsigned long *>(smem + 131096u))[stage], phase ^ 1);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(&(reinterpret_cast<unsigned long *>(smem + 131072u))[stage])), "r"(32768u * 2) : "memory");
        tma_load_2d((smem + 0u) + stage * 16384u, &tmap_a, &(reinterpret_cast<unsigned long *>(smem + 131072u))[stage]);
        tma_load_2d((smem + 49152u) + stage * 16384u, &tmap_b, &(reinterpret_cast<unsigned long *>(smem + 131072u))[stage]);
        stage = 0;
        phase ^= 1;
      }
    }
  } else {

    mbar_wait(&(reinterpret_cast<unsigned long *>(smem + 131072u))[0], 0);
  }
}

struct WsGemmMaps {
  CUtensorMap a, b, c;
};

static PFN_cuTensorMapEncodeTiled_v12000 get_encode_tiled() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;

  void *p = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);

  fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);

  return fn;
}

static CUtensorMap make_tmap_2d(const void *base, unsigned long rows, unsigned long cols, unsigned box_rows,
                                unsigned box_cols) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {cols * sizeof(bf16)};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  CUresult r = get_encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(base), dims,
                                  strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return map;
}

static WsGemmMaps make_ws_gemm_maps(const bf16 *dA, const bf16 *dB) {
  WsGemmMaps m;
  m.a = make_tmap_2d(dA, 128, 512, 128, 64);
  m.b = make_tmap_2d(dB, 128, 512, 128, 64);
  return m;
}

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);

  std::vector<bf16> hA((size_t)128 * 512), hB((size_t)128 * 512), hC((size_t)128 * 128);

  bf16 *dA, *dB, *dC;
  cudaMalloc(&dA, hA.size() * sizeof(bf16));
  cudaMalloc(&dB, hB.size() * sizeof(bf16));

  const WsGemmMaps maps = make_ws_gemm_maps(dA, dB);
  int num_sms = (prop.multiProcessorCount);
  cudaStream_t stream{};

  cudaFuncSetAttribute(ws_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)132144u);

  const int grid = std::min(num_sms, 1);
  ws_gemm_kernel<<<grid, 384, 132144u, stream>>>(maps.a, maps.b);

  cudaDeviceSynchronize();
}
