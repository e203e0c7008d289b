#include <cuda.h>

#include <cstdint>
#include <vector>

static void etx_check() {
  return;
}

namespace etx {

constexpr int kM = 256, kN = 256, kK = 512;
constexpr int kTileM = 128, kTileN = 128, kTileK = 64;
constexpr int kStages = 4;
constexpr int kKTiles = kK / kTileK;
constexpr int kThreads = 384;
constexpr int kConsumerThreads = 256;
constexpr int kRowsPerConsumerWG = 64;
constexpr unsigned kTileABytes = kTileM * kTileK * sizeof(unsigned short);
constexpr unsigned kTileBBytes = kTileN * kTileK * sizeof(unsigned short);
constexpr unsigned kStageBytes = kTileABytes + kTileBBytes;
constexpr unsigned kRingBytes = kStages * kStageBytes;
constexpr unsigned kBarrierBytes = 2 * kStages * sizeof(unsigned long);
constexpr unsigned kSmemBytes = 1024 + kRingBytes + kBarrierBytes;

__device__ __forceinline__ unsigned cvta_smem(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ unsigned bar_try_parity(unsigned bar, unsigned parity) {
  unsigned ready;
  asm volatile(
      "{\n\t.reg .pred P1;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, P1;\n\t}"
      : "=r"(ready)
      : "r"(bar), "r"(parity)
      : "memory");
  return ready;
}

__device__ __forceinline__ void tma_load_tile(unsigned dst, const CUtensorMap *map, unsigned bar) {
  int c_outer{};
  int c_inner{};
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long>(map)), "r"(c_inner), "r"(c_outer), "r"(bar)
      : "memory");
}

__global__ void gemm_tma_wgmma(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b) {
  float *__restrict out{};
  extern __shared__ unsigned char smem_raw[];

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"((((cvta_smem(smem_raw) + 1023u) & ~1023u) + kRingBytes) + 8 * s), "r"(1u) : "memory");
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(((unsigned)((((cvta_smem(smem_raw) + 1023u) & ~1023u) + kRingBytes) + kStages * sizeof(unsigned long))) + 8 * s), "r"((unsigned int)kConsumerThreads) : "memory");
    }
  }

  if ((threadIdx.x / 128) == 0) {
    if ((threadIdx.x % 128) == 0) {
      for (int kt = 0; kt < kKTiles; ++kt) {
        const int s = kt % kStages;
        const unsigned lap = static_cast<unsigned>(kt / kStages) & 1u;
        while (!bar_try_parity(((unsigned)((((cvta_smem(smem_raw) + 1023u) & ~1023u) + kRingBytes) + kStages * sizeof(unsigned long))) + 8 * s, lap ^ 1u)) {
        }
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"((((cvta_smem(smem_raw) + 1023u) & ~1023u) + kRingBytes) + 8 * s), "r"((kTileM + kTileN + 1) * kTileK * static_cast<unsigned>(sizeof(unsigned short)))
                     : "memory");
        tma_load_tile(((cvta_smem(smem_raw) + 1023u) & ~1023u) + s * kStageBytes, &map_a, (((cvta_smem(smem_raw) + 1023u) & ~1023u) + kRingBytes) + 8 * s);
        tma_load_tile((((cvta_smem(smem_raw) + 1023u) & ~1023u) + s * kStageBytes) + kTileABytes, &map_b, (((cvta_smem(smem_raw) + 1023u) & ~1023u) + kRingBytes) + 8 * s);
      }
    }
  } else {
    float acc[64];
#pragma unroll

    for (int kt = 0; kt < kKTiles; ++kt) {
      const int s = kt % kStages;
      const unsigned lap = static_cast<unsigned>(kt / kStages) & 1u;
      while (!bar_try_parity((((cvta_smem(smem_raw) + 1023u) & ~1023u) + kRingBytes) + 8 * s, lap)) {
      }

#pragma unroll
      for (int kk = 0; kk < kTileK / 16; ++kk) {
      }
    }

    const int warp = (threadIdx.x % 128) / 32, lane = (threadIdx.x % 128) % 32;
#pragma unroll
    for (int j = 0; j < kTileN / 8; ++j) {
      const int col = (blockIdx.x * kTileN) + j * 8 + (lane & 3) * 2;
      *reinterpret_cast<float2 *>(out + static_cast<size_t>(((blockIdx.y * kTileM) + ((threadIdx.x / 128) - 1) * kRowsPerConsumerWG + warp * 16 + (lane >> 2))) * kN + col) =
          make_float2(acc[4 * j], acc[4 * j + 1]);
      *reinterpret_cast<float2 *>(out + static_cast<size_t>(((blockIdx.y * kTileM) + ((threadIdx.x / 128) - 1) * kRowsPerConsumerWG + warp * 16 + (lane >> 2)) + 8) * kN + col) =
          make_float2(acc[4 * j + 2], acc[4 * j + 3]);
    }
  }
}

} // namespace etx

static CUtensorMap encode_kmajor_bf16(void *base, int rows, int cols, int box_rows, int box_cols) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t row_pitch[1] = {static_cast<cuuint64_t>(cols) * sizeof(unsigned short)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem_stride[2] = {1, 1};
  cuTensorMapEncodeTiled(
      &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, base, dims, row_pitch, box, elem_stride,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return map;
}

int main() {
  using namespace etx;

  std::vector<unsigned short> h_a(static_cast<size_t>(kM) * kK), h_b(static_cast<size_t>(kN) * kK);

  unsigned short *d_a = nullptr, *d_b = nullptr;
  float *d_c = nullptr;
  cudaMalloc(&d_a, h_a.size() * sizeof(unsigned short));
  cudaMalloc(&d_b, h_b.size() * sizeof(unsigned short));
  cudaMalloc(&d_c, static_cast<size_t>(kM) * kN * sizeof(float));

  const CUtensorMap map_a = encode_kmajor_bf16(d_a, kM, kK, kTileM, kTileK);
  const CUtensorMap map_b = encode_kmajor_bf16(d_b, kN, kK, kTileN, kTileK);

  cudaFuncSetAttribute(gemm_tma_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       static_cast<int>(kSmemBytes));
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  const dim3 grid(kN / kTileN, kM / kTileM);
  gemm_tma_wgmma<<<grid, kThreads, kSmemBytes, stream>>>(map_a, map_b);

  cudaDeviceSynchronize();
}
