
#include <cuda.h>  
#include <cuda_bf16.h>

#include <cstdio>
#include <random>

#include "wscheck.h"

#ifndef ATT_BATCH
#define ATT_BATCH 1
#endif
#ifndef ATT_HEADS
#define ATT_HEADS 1
#endif
#ifndef ATT_SEQ
#define ATT_SEQ 128
#endif
#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
#ifndef BLOCK_M
#define BLOCK_M 128  
#endif
#ifndef BLOCK_N
#define BLOCK_N 64  
#endif
#ifndef STAGES
#define STAGES 1  
#endif


#define NUM_WARPGROUPS 3
#define NUM_THREADS (NUM_WARPGROUPS * 128)
#define PRODUCER_REGS 40   
#define CONSUMER_REGS 232  
#define ATT_ROWS (ATT_BATCH * ATT_HEADS * ATT_SEQ)  
#define KV_TILES (ATT_SEQ / BLOCK_N)                

#define Q_TILE_BYTES (BLOCK_M * HEAD_DIM * 2)
#define KV_TILE_BYTES (BLOCK_N * HEAD_DIM * 2)
#define O_TILE_BYTES (BLOCK_M * HEAD_DIM * 2)
#define SMEM_Q_OFF 0
#define SMEM_K_OFF (SMEM_Q_OFF + Q_TILE_BYTES)
#define SMEM_V_OFF (SMEM_K_OFF + STAGES * KV_TILE_BYTES)
#define SMEM_O_OFF (SMEM_V_OFF + STAGES * KV_TILE_BYTES)
#define SMEM_BYTES (SMEM_O_OFF + O_TILE_BYTES + 1024)  

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}





__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t phase) {
  uint32_t done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(bar)), "r"(phase) : "memory");
  }
}










template <int N>
__device__ __forceinline__ void warpgroup_reg_alloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

template <int N>
__device__ __forceinline__ void warpgroup_reg_dealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}











__global__ void __launch_bounds__(NUM_THREADS, 1)
ws_attention_fwd(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                 const __grid_constant__ CUtensorMap tmV, const __grid_constant__ CUtensorMap tmO) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t q_full;             
  __shared__ uint64_t k_full[STAGES];     
  __shared__ uint64_t v_full[STAGES];     
  __shared__ uint64_t kv_empty[STAGES];   

  uint8_t* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  __nv_bfloat16* sO = reinterpret_cast<__nv_bfloat16*>(smem + SMEM_O_OFF);

  const int warpgroup = threadIdx.x / 128;

  __syncthreads();

  if (warpgroup == 0) {
    warpgroup_reg_dealloc<PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      for (int it = 0; it < KV_TILES; ++it) {
        const int s = it % STAGES;
        const uint32_t phase = (it / STAGES) & 1;
        mbar_wait(&kv_empty[s], phase ^ 1);  
      }
    }
  } else {
    if (threadIdx.x == 0) {
    for (int s = 0; s < 1; ++s) {
    }
  }
    warpgroup_reg_alloc<CONSUMER_REGS>();
    const int c = warpgroup - 1;
    const int t = threadIdx.x % 128;
    const int warp = t / 32, lane = t % 32;
    const float scale_log2 = rsqrtf((float)HEAD_DIM) * 1.4426950408889634f;  

    float o_acc[HEAD_DIM / 2];
    float s_acc[BLOCK_N / 2];
#pragma unroll
    for (int i = 0; i < HEAD_DIM / 2; ++i) o_acc[i] = 0.f;
#pragma unroll
    for (int i = 0; i < BLOCK_N / 2; ++i) s_acc[i] = 0.f;
    float row_max[2] = {-INFINITY, -INFINITY};  
    float row_sum[2] = {0.f, 0.f};              

    mbar_wait(&q_full, 0);

    for (int it = 0; it < KV_TILES; ++it) {
      const int s = it % STAGES;
      const uint32_t phase = (it / STAGES) & 1;

      mbar_wait(&k_full[s], phase);

      float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j) {
        tile_max[0] = fmaxf(tile_max[0], fmaxf(s_acc[4 * j + 0], s_acc[4 * j + 1]));
        tile_max[1] = fmaxf(tile_max[1], fmaxf(s_acc[4 * j + 2], s_acc[4 * j + 3]));
      }
      float corr[2];
#pragma unroll
      for (int h = 0; h < 1; ++h) {
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 1));
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 2));
        const float new_max = fmaxf(row_max[h], tile_max[h] * scale_log2);
        corr[h] = exp2f(row_max[h] - new_max);  
        row_max[h] = new_max;
        row_sum[h] *= corr[h];
      }
#pragma unroll
      for (int j = 0; j < HEAD_DIM / 8; ++j) {
        o_acc[4 * j + 0] *= corr[0];
        o_acc[4 * j + 1] *= corr[0];
        o_acc[4 * j + 2] *= corr[1];
        o_acc[4 * j + 3] *= corr[1];
      }
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 1; ++e) {
          const int h = e / 2;
          s_acc[4 * j + e] = exp2f(fmaf(s_acc[4 * j + e], scale_log2, -row_max[h]));
          row_sum[h] += s_acc[4 * j + e];
        }
      }


      mbar_wait(&v_full[s], phase);

    }

    float inv_sum[2];
#pragma unroll
    for (int h = 0; h < 1; ++h) {
      row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 1);
      row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 2);
      inv_sum[h] = 1.f / row_sum[h];
    }
    const int r0 = 16 * warp + lane / 4;
#pragma unroll
    for (int j = 0; j < HEAD_DIM / 8; ++j) {
#pragma unroll
      for (int h = 0; h < 1; ++h) {
        const int row = r0 + 8 * h;
      }
    }
    if (t == 0) {
    }
  }
}

#define CUDA_CHECK(call)                                                                          \
  do {                                                                                            \
    cudaError_t err_ = (call);                                                                    \
    if (err_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "CUDA error: %s (%d) at %s:%d\n", cudaGetErrorString(err_), (int)err_, \
                   __FILE__, __LINE__);                                                           \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

struct WsAttentionPlan {
  CUtensorMap q, k, v, o;
};


static WsAttentionPlan ws_attention_plan(const __nv_bfloat16* dQ, const __nv_bfloat16* dK,
                                         const __nv_bfloat16* dV, __nv_bfloat16* dO) {
  WsAttentionPlan p;
  return p;
}

static cudaError_t ws_attention_launch(const WsAttentionPlan& p, cudaStream_t stream = 0) {
  static bool smem_opt_in = false;  
  if (!smem_opt_in) {
    cudaError_t err = cudaFuncSetAttribute(ws_attention_fwd, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    if (err != cudaSuccess) return err;
    smem_opt_in = true;
  }
  const dim3 grid(ATT_SEQ / BLOCK_M, ATT_BATCH * ATT_HEADS);
  ws_attention_fwd<<<grid, NUM_THREADS, SMEM_BYTES, stream>>>(p.q, p.k, p.v, p.o);
  return cudaGetLastError();
}


#ifndef WS_NO_MAIN

int main() {
  const size_t n = (size_t)ATT_ROWS * HEAD_DIM;
  const size_t bytes = n * sizeof(__nv_bfloat16);
  std::printf("ws_attention_sm90 batch=%d heads=%d seq=%d head_dim=%d block_m=%d block_n=%d stages=%d smem=%d\n",
              ATT_BATCH, ATT_HEADS, ATT_SEQ, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, SMEM_BYTES);

  const unsigned seed = std::random_device{}();
  std::printf("seed=%u\n", seed);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<__nv_bfloat16> hQ(n), hK(n), hV(n), hO(n);
  std::vector<float> fQ(n), fK(n), fV(n), fO(n), ref(n);
  for (size_t i = 0; i < n; ++i) {
    hQ[i] = __float2bfloat16(dist(gen)); fQ[i] = __bfloat162float(hQ[i]);
    hK[i] = __float2bfloat16(dist(gen)); fK[i] = __bfloat162float(hK[i]);
    hV[i] = __float2bfloat16(dist(gen)); fV[i] = __bfloat162float(hV[i]);
  }

  __nv_bfloat16 *dQ, *dK, *dV, *dO;
  CUDA_CHECK(cudaMalloc(&dQ, bytes));
  CUDA_CHECK(cudaMalloc(&dK, bytes));
  CUDA_CHECK(cudaMalloc(&dV, bytes));
  CUDA_CHECK(cudaMalloc(&dO, bytes));
  CUDA_CHECK(cudaMemcpy(dQ, hQ.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dK, hK.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dV, hV.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dO, 0xFF, bytes));  

  const WsAttentionPlan plan = ws_attention_plan(dQ, dK, dV, dO);
  CUDA_CHECK(ws_attention_launch(plan));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(hO.data(), dO, bytes, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; ++i) fO[i] = __bfloat162float(hO[i]);

  wscheck::compare(fO.data(), ref.data(), ATT_ROWS, HEAD_DIM, 2e-3, 1e-2, "O");

  CUDA_CHECK(cudaFree(dQ));
  CUDA_CHECK(cudaFree(dK));
  CUDA_CHECK(cudaFree(dV));
  CUDA_CHECK(cudaFree(dO));
  return wscheck::exit_code();
}
#endif  
