#include <cuda.h>

#include <cstdint>
#include <vector>

static void etx_check(cudaError_t e, const char *what, int line) {
  if (e == cudaSuccess)
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
constexpr uint32_t kTileABytes = kTileM * kTileK * sizeof(uint16_t);
constexpr uint32_t kTileBBytes = kTileN * kTileK * sizeof(uint16_t);
constexpr uint32_t kStageBytes = kTileABytes + kTileBBytes;
constexpr uint32_t kRingBytes = kStages * kStageBytes;
constexpr uint32_t kBarrierBytes = 2 * kStages * sizeof(uint64_t);
constexpr uint32_t kSmemBytes = 1024 + kRingBytes + kBarrierBytes;

__device__ __forceinline__ uint32_t cvta_smem(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void bar_init(uint32_t bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrivals) : "memory");
}

__device__ __forceinline__ void bar_arrive_tx(uint32_t bar, uint32_t tx_bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(tx_bytes)
               : "memory");
}

__device__ __forceinline__ uint32_t bar_try_parity(uint32_t bar, uint32_t parity) {
  uint32_t ready;
  asm volatile("{\n\t.reg .pred P1;\n\t"
               "mbarrier.try_wait.parity.shared::cta.b64 P1, [%1], %2;\n\t"
               "selp.u32 %0, 1, 0, P1;\n\t}"
               : "=r"(ready)
               : "r"(bar), "r"(parity)
               : "memory");
  return ready;
}

__device__ __forceinline__ void bar_wait(uint32_t bar, uint32_t parity) {
  while (!bar_try_parity(bar, parity)) {
  }
}

__device__ __forceinline__ void tma_load_tile(uint32_t dst, const CUtensorMap *map, uint32_t bar,
                                              int c_inner, int c_outer) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
               "l"(reinterpret_cast<uint64_t>(map)), "r"(c_inner), "r"(c_outer), "r"(bar)
               : "memory");
}

__global__ void __launch_bounds__(kThreads, 1)
    gemm_tma_wgmma(const __grid_constant__ CUtensorMap map_a,
                   const __grid_constant__ CUtensorMap map_b, float *__restrict__ out) {
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw_addr = cvta_smem(smem_raw);
  const uint32_t ring = (raw_addr + 1023u) & ~1023u;
  const uint32_t full_bar = ring + kRingBytes;
  const uint32_t empty_bar = full_bar + kStages * sizeof(uint64_t);

  const int warpgroup = threadIdx.x / 128;
  const int wg_thread = threadIdx.x % 128;
  const int tile_m0 = blockIdx.y * kTileM;
  const int tile_n0 = blockIdx.x * kTileN;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      bar_init(full_bar + 8 * s, 1);
      bar_init(empty_bar + 8 * s, kConsumerThreads);
    }
  }

  if (warpgroup == 0) {
    if (wg_thread == 0) {
      for (int kt = 0; kt < kKTiles; ++kt) {
        const int s = kt % kStages;
        const uint32_t lap = static_cast<uint32_t>(kt / kStages) & 1u;
        const uint32_t stage_a = ring + s * kStageBytes;
        const uint32_t stage_b = stage_a + kTileABytes;
        bar_wait(empty_bar + 8 * s, lap ^ 1u);
        bar_arrive_tx(full_bar + 8 * s,
                      (kTileM + kTileN + 1) * kTileK * static_cast<uint32_t>(sizeof(uint16_t)));
        tma_load_tile(stage_a, &map_a, full_bar + 8 * s, kt * kTileK, tile_m0);
        tma_load_tile(stage_b, &map_b, full_bar + 8 * s, kt * kTileK, tile_n0);
      }
    }
  } else {
    const int cwg = warpgroup - 1;
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i)
      acc[i] = 0.0f;

    for (int kt = 0; kt < kKTiles; ++kt) {
      const int s = kt % kStages;
      const uint32_t lap = static_cast<uint32_t>(kt / kStages) & 1u;
      bar_wait(full_bar + 8 * s, lap);

#pragma unroll
      for (int kk = 0; kk < kTileK / 16; ++kk) {
      }
    }

    const int warp = wg_thread / 32, lane = wg_thread % 32;
    const int row = tile_m0 + cwg * kRowsPerConsumerWG + warp * 16 + (lane >> 2);
#pragma unroll
    for (int j = 0; j < kTileN / 8; ++j) {
      const int col = tile_n0 + j * 8 + (lane & 3) * 2;
      *reinterpret_cast<float2 *>(out + static_cast<size_t>(row) * kN + col) =
          make_float2(acc[4 * j], acc[4 * j + 1]);
      *reinterpret_cast<float2 *>(out + static_cast<size_t>(row + 8) * kN + col) =
          make_float2(acc[4 * j + 2], acc[4 * j + 3]);
    }
  }
}

} // namespace etx

static CUtensorMap encode_kmajor_bf16(void *base, int rows, int cols, int box_rows, int box_cols) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t row_pitch[1] = {static_cast<cuuint64_t>(cols) * sizeof(uint16_t)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem_stride[2] = {1, 1};
  cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, base, dims, row_pitch, box,
                         elem_stride, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                         CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return map;
}

int main() {
  using namespace etx;

  std::vector<uint16_t> h_a(static_cast<size_t>(kM) * kK), h_b(static_cast<size_t>(kN) * kK);

  uint16_t *d_a = nullptr, *d_b = nullptr;
  float *d_c = nullptr;
  const size_t c_bytes = static_cast<size_t>(kM) * kN * sizeof(float);
  cudaMalloc(&d_a, h_a.size() * sizeof(uint16_t));
  cudaMalloc(&d_b, h_b.size() * sizeof(uint16_t));
  cudaMalloc(&d_c, c_bytes);

  const CUtensorMap map_a = encode_kmajor_bf16(d_a, kM, kK, kTileM, kTileK);
  const CUtensorMap map_b = encode_kmajor_bf16(d_b, kN, kK, kTileN, kTileK);

  cudaFuncSetAttribute(gemm_tma_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       static_cast<int>(kSmemBytes));
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  const dim3 grid(kN / kTileN, kM / kTileM);
  gemm_tma_wgmma<<<grid, kThreads, kSmemBytes, stream>>>(map_a, map_b, d_c);

  cudaFree(d_c);
}
