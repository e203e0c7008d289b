#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>

#include <random>

#include "wscheck.h"

#define GEMM_M 128
#define GEMM_N 128
#define GEMM_K 64

typedef __nv_bfloat16 bf16;



__device__ __forceinline__ unsigned long make_desc_sw128(const void *tile) {
  unsigned long desc = 0;
  desc |= ((((__cvta_generic_to_shared(tile)))) >> 4);
  desc |= (unsigned long)(1024 >> 4) << 32;
  desc |= (unsigned long)1 << 62;
  return desc;
}

__global__ void ws_gemm_kernel(const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b,
                               const __grid_constant__ CUtensorMap tmap_c) {
  extern __shared__ unsigned char smem_raw[];


  if (threadIdx.x == 0) {

    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(((unsigned int)(__cvta_generic_to_shared((const void *)(&(reinterpret_cast<unsigned long *>((smem_raw + (0)) + 65536u))[0]))))), "r"(1u) : "memory");
  }
  __syncthreads();

  if (((threadIdx.x / 128)) == 0) {
    if ((threadIdx.x) == 0) {

      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(((unsigned int)(__cvta_generic_to_shared((const void *)(&(reinterpret_cast<unsigned long *>((smem_raw + (0)) + 65536u))[0]))))), "r"(32768u) : "memory");
      asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(((unsigned int)(__cvta_generic_to_shared((const void *)(((void *)(((smem_raw + (0)))))))))), "l"(reinterpret_cast<unsigned long>((&tmap_a))), "r"(((unsigned int)(__cvta_generic_to_shared((const void *)((&(reinterpret_cast<unsigned long *>((smem_raw + (0)) + 65536u))[0])))))), "r"(0), "r"(0)
      : "memory");
      asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(((unsigned int)(__cvta_generic_to_shared((const void *)(((void *)(((smem_raw + (0)) + 16384u)))))))), "l"(reinterpret_cast<unsigned long>((&tmap_b))), "r"(((unsigned int)(__cvta_generic_to_shared((const void *)((&(reinterpret_cast<unsigned long *>((smem_raw + (0)) + 65536u))[0])))))), "r"(0), "r"(0)
      : "memory");
    }
  } else {
    const int warp = (threadIdx.x % 128) / 32, lane = (threadIdx.x) % 32;
    float acc[128 / 2];
    
    

    
      unsigned done = 0;
      while (!done) {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(((unsigned int)(__cvta_generic_to_shared((const void *)(((&(reinterpret_cast<unsigned long *>((smem_raw + (0)) + 65536u))[0]))))))), "r"(0) : "memory");
      }
    
#pragma unroll
    for (int k = 0; k < 1; ++k) {
      float (&d)[128 / 2] = acc;
      asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %66, 0;\n"
                   " wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                   "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                   "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
                   "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
                   "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63},"
                   " %64, %65, p, 1, 1, 0, 0;\n}\n"
                   : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                     "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                     "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                     "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                     "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                     "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                     "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                     "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                   : "l"((((make_desc_sw128(((smem_raw + (0))) + (((threadIdx.x / 128)) - 1) * 64 * 128))))), "l"((((make_desc_sw128(((smem_raw + (0)) + 16384u)))))), "r"(0));
    }

#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = 16 * warp + lane / 4 + 8 * h;
        const int col = 8 * j + 2 * (lane % 4);
        *reinterpret_cast<__nv_bfloat162 *>((((smem_raw + (0)) + 32768u) + (((threadIdx.x / 128)) - 1) * 16384u) + (row * 128 + ((((col) / 8) ^ (row % 8)) << 4) + (col % 8) * 2)) =
            __floats2bfloat162_rn(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
      }
    }

    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(reinterpret_cast<unsigned long>((&tmap_c))), "r"(((unsigned int)(__cvta_generic_to_shared((const void *)((((smem_raw + (0)) + 32768u) + (((threadIdx.x / 128)) - 1) * 16384u)))))), "r"(0), "r"((((threadIdx.x / 128)) - 1) * 64)
                 : "memory");
  }
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
  const cuuint64_t strides[1] = {cols * sizeof(bf16)};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  CUresult r = get_encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(base), dims,
                                  strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return map;
}

static WsGemmMaps make_ws_gemm_maps(const bf16 *dA, const bf16 *dB, bf16 *dC) {
  WsGemmMaps m;
  m.a = make_tmap_2d(dA, GEMM_M, GEMM_K, 128, 64);
  m.b = make_tmap_2d(dB, GEMM_N, GEMM_K, 128, 64);
  m.c = make_tmap_2d(dC, GEMM_M, GEMM_N, 64, 64u);
  return m;
}

static void fill_random_bf16(std::mt19937 &gen, std::vector<bf16> &bits, std::vector<float> &rounded) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < bits.size(); ++i) {
    bits[i] = __float2bfloat16(dist(gen));
    rounded[i] = __bfloat162float(bits[i]);
  }
}

int main() {

  std::mt19937 gen((0));
  std::vector<bf16> hA(GEMM_M * GEMM_K), hB(GEMM_N * GEMM_K), hC(GEMM_M * GEMM_N);
  std::vector<float> fA(hA.size()), fB(hB.size());
  fill_random_bf16(gen, hA, fA);
  fill_random_bf16(gen, hB, fB);

  bf16 *dA, *dB, *dC;
  cudaMalloc(&dA, hA.size() * sizeof(bf16));
  cudaMalloc(&dB, hB.size() * sizeof(bf16));
  cudaMalloc(&dC, hC.size() * sizeof(bf16));
  cudaMemcpy(dA, hA.data(), hA.size() * sizeof(bf16), cudaMemcpyHostToDevice);
  cudaMemcpy(dB, hB.data(), hB.size(), cudaMemcpyHostToDevice);

  const WsGemmMaps maps = make_ws_gemm_maps(dA, dB, dC);

  cudaFuncSetAttribute(ws_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 66576u);

  ws_gemm_kernel<<<1, 384, 66576u, 0>>>(maps.a, maps.b, maps.c);

  cudaMemcpy(hC.data(), dC, hC.size() * sizeof(bf16), cudaMemcpyDeviceToHost);

  std::vector<float> fBt((size_t)GEMM_K * GEMM_N), ref((size_t)GEMM_M * GEMM_N, 0.0f), out(hC.size());
  for (int n = 0; n < GEMM_N; ++n)
    for (int k = 0; k < GEMM_K; ++k)
      fBt[(size_t)k * GEMM_N + n] = fB[(size_t)n * GEMM_K + k];
  for (int m = 0; m < GEMM_M; ++m) {
    float *c = &ref[(size_t)m * GEMM_N];
    for (int k = 0; k < GEMM_K; ++k) {
      const float a = fA[(size_t)m * GEMM_K + k];
      const float *b = &fBt[(size_t)k * GEMM_N];
      for (int n = 0; n < GEMM_N; ++n)
        c[n] += a * b[n];
    }
  }
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = __bfloat162float(hC[i]);

  wscheck::compare(out.data(), ref.data(), GEMM_M, GEMM_N, 1e-2, 1e-2, "C");
}
