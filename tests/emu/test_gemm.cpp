// kernels/ws_gemm_sm90.cu translated by hand (M = N = K = 512, BLOCK_N = 128, STAGES = 5,
// 4 persistent CTAs so the ring's phases carry across tiles): the benchmark, under
// every policy, against a CPU matmul. Each primitive keeps the kernel's shape: one call per
// PTX statement; WSEMU_CALL marks the user's call site, as the translator will.
#include <chrono>
#include <cmath>

#include "emu_test.h"

using namespace emutest;
using namespace wsemu::ptx;

namespace {

constexpr int GEMM_M = 512, GEMM_N = 512, GEMM_K = 512, BLOCK_M = 128, BLOCK_N = 128, BLOCK_K = 64, STAGES = 5;
constexpr int NUM_THREADS = 384, NUM_CONSUMERS = 2, CONSUMER_ROWS = 64;
constexpr int K_TILES = GEMM_K / BLOCK_K, TILES_N = GEMM_N / BLOCK_N, NUM_TILES = (GEMM_M / BLOCK_M) * TILES_N;
constexpr uint32_t A_STAGE_BYTES = BLOCK_M * BLOCK_K * 2, B_STAGE_BYTES = BLOCK_N * BLOCK_K * 2;
constexpr uint32_t STAGE_TX_BYTES = A_STAGE_BYTES + B_STAGE_BYTES, C_BOX_BYTES = CONSUMER_ROWS * 64 * 2;
constexpr uint32_t C_HALF_BYTES = CONSUMER_ROWS * BLOCK_N * 2;
constexpr uint32_t OFF_A = 0, OFF_B = OFF_A + STAGES * A_STAGE_BYTES, OFF_C = OFF_B + STAGES * B_STAGE_BYTES;
constexpr uint32_t OFF_FULL = OFF_C + NUM_CONSUMERS * C_HALF_BYTES, OFF_EMPTY = OFF_FULL + STAGES * 8;
constexpr uint32_t SMEM_BYTES = OFF_EMPTY + STAGES * 8 + 1024;

bool g_drop_last_empty_arrive = false;  // bug knob: the tile's last k-block never frees its stage

void mbar_wait(uint64_t *bar, uint32_t phase, SrcLoc at) {
  CallSite site(at);  // what the translator emits for a call of a __device__ helper
  uint32_t done = 0;
  while (!done) done = mbarrier_try_wait_parity(smemAddr(bar), phase, WSEMU_HERE);  // @mbar-wait-asm
}

uint64_t make_desc_sw128(const void *tile) {
  uint64_t desc = 0;
  desc |= (uint64_t)((smemAddr(tile) & 0x3FFFF) >> 4);
  desc |= (uint64_t)1 << 16;
  desc |= (uint64_t)(1024 >> 4) << 32;
  desc |= (uint64_t)1 << 62;
  return desc;
}

uint32_t c_stage_offset(int row, int col) {
  return (col / 64) * C_BOX_BYTES + row * 128 + ((((col % 64) / 8) ^ (row % 8)) << 4) + (col % 8) * 2;
}

void ws_gemm_kernel(const TensorMap tmap_a, const TensorMap tmap_b, const TensorMap tmap_c) {
  // __grid_constant__ parameters, as the translator registers them (emu/runtime/tma.cpp, checkMapSpace)
  wsemu::ptx::kernelParam(&tmap_a, sizeof tmap_a, "tmap_a", true); wsemu::ptx::kernelParam(&tmap_b, sizeof tmap_b, "tmap_b", true); wsemu::ptx::kernelParam(&tmap_c, sizeof tmap_c, "tmap_c", true);
  uint8_t *smem_raw = dynamicShared();
  uint8_t *smem = smem_raw + ((1024 - (smemAddr(smem_raw) & 1023)) & 1023);
  uint8_t *sA = smem + OFF_A, *sB = smem + OFF_B, *sC = smem + OFF_C;
  uint64_t *full = reinterpret_cast<uint64_t *>(smem + OFF_FULL);
  uint64_t *empty = reinterpret_cast<uint64_t *>(smem + OFF_EMPTY);
  nameShared(full, STAGES * 8, 8, "full");
  nameShared(empty, STAGES * 8, 8, "empty");

  const int warpgroup = (int)shfl_idx(0xffffffff, threadIdx().x / 128, 0, 32, WSEMU_HERE);
  const int wg_thread = threadIdx().x % 128;

  if (threadIdx().x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(smemAddr(&full[s]), 1, WSEMU_HERE);
      mbarrier_init(smemAddr(&empty[s]), NUM_CONSUMERS, WSEMU_HERE);
    }
    fence_mbarrier_init(WSEMU_HERE);
  }
  syncthreads(WSEMU_HERE);

  if (warpgroup == 0) {
    setmaxnreg(false, 40, WSEMU_HERE);
    if (wg_thread == 0) {
      int stage = 0;
      uint32_t phase = 0;
      for (int tile = blockIdx().x; tile < NUM_TILES; tile += gridDim().x) {
        int m0 = (tile / TILES_N) * BLOCK_M, n0 = (tile % TILES_N) * BLOCK_N;
        for (int kt = 0; kt < K_TILES; ++kt) {
          mbar_wait(&empty[stage], phase ^ 1, WSEMU_HERE);  // @producer-wait
          mbarrier_arrive_expect_tx(smemAddr(&full[stage]), STAGE_TX_BYTES, WSEMU_HERE);
          tma_load_2d(smemAddr(sA + stage * A_STAGE_BYTES), &tmap_a, smemAddr(&full[stage]), kt * BLOCK_K, m0, WSEMU_HERE);
          tma_load_2d(smemAddr(sB + stage * B_STAGE_BYTES), &tmap_b, smemAddr(&full[stage]), kt * BLOCK_K, n0, WSEMU_HERE);
          if (++stage == STAGES) { stage = 0; phase ^= 1; }
        }
      }
    }
  } else {
    setmaxnreg(true, 232, WSEMU_HERE);
    const int consumer = warpgroup - 1;
    const int warp = wg_thread / 32, lane = wg_thread % 32;
    uint8_t *my_sC = sC + consumer * C_HALF_BYTES;
    float acc[BLOCK_N / 2];
    int stage = 0;
    uint32_t phase = 0;
    for (int tile = blockIdx().x; tile < NUM_TILES; tile += gridDim().x) {
      int m0 = (tile / TILES_N) * BLOCK_M, n0 = (tile % TILES_N) * BLOCK_N;
      int prev_stage = 0;
      for (int kt = 0; kt < K_TILES; ++kt) {
        mbar_wait(&full[stage], phase, WSEMU_HERE);  // @consumer-wait
        const uint64_t desc_a = make_desc_sw128(sA + stage * A_STAGE_BYTES + consumer * CONSUMER_ROWS * 128);
        const uint64_t desc_b = make_desc_sw128(sB + stage * B_STAGE_BYTES);
        wgmma_fence(WSEMU_HERE);
        for (int k = 0; k < BLOCK_K / 16; ++k)
          wgmma_ss(acc, WgType::BF16, desc_a + 2 * k, desc_b + 2 * k, (kt > 0 || k > 0), 0, 0, WSEMU_HERE);
        wgmma_commit_group(WSEMU_HERE);
        wgmma_wait_group(1, WSEMU_HERE);
        if (kt > 0 && wg_thread == 0) mbarrier_arrive(smemAddr(&empty[prev_stage]), WSEMU_HERE);
        prev_stage = stage;
        if (++stage == STAGES) { stage = 0; phase ^= 1; }
      }
      wgmma_wait_group(0, WSEMU_HERE);
      if (wg_thread == 0 && !g_drop_last_empty_arrive) mbarrier_arrive(smemAddr(&empty[prev_stage]), WSEMU_HERE);
      if (wg_thread == 0) bulk_wait_group(0, true, WSEMU_HERE);
      bar_sync(1 + consumer, 128, WSEMU_HERE);
      for (int j = 0; j < BLOCK_N / 8; ++j)
        for (int h = 0; h < 2; ++h) {
          const int row = 16 * warp + lane / 4 + 8 * h, col = 8 * j + 2 * (lane % 4);
          at(reinterpret_cast<uint32_t *>(my_sC + c_stage_offset(row, col)), WSEMU_HERE) =
              packBf16x2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
        }
      fence_proxy_async(WSEMU_HERE);
      bar_sync(1 + consumer, 128, WSEMU_HERE);
      if (wg_thread == 0) {
        for (int q = 0; q < BLOCK_N / 64; ++q)
          tma_store_2d(&tmap_c, smemAddr(my_sC + q * C_BOX_BYTES), n0 + q * 64, m0 + consumer * CONSUMER_ROWS, WSEMU_HERE);
        bulk_commit_group(WSEMU_HERE);
      }
    }
    if (wg_thread == 0) bulk_wait_group(0, false, WSEMU_HERE);
  }
}

}  // namespace

TEST(Gemm, WsGemm512CubedMatchesCpuUnderEveryPolicy) {
  Bf16Matrix A(GEMM_M, GEMM_K, "A", true, 1), B(GEMM_N, GEMM_K, "B", true, 2), C(GEMM_M, GEMM_N, "C");
  std::vector<double> ref((size_t)GEMM_M * GEMM_N, 0.0);
  for (int m = 0; m < GEMM_M; ++m)
    for (int n = 0; n < GEMM_N; ++n) {
      double s = 0;
      for (int k = 0; k < GEMM_K; ++k) s += (double)A.host[m * GEMM_K + k] * B.host[n * GEMM_K + k];
      ref[(size_t)m * GEMM_N + n] = s;
    }
  TensorMap ma = A.map(BLOCK_M, BLOCK_K), mb = B.map(BLOCK_N, BLOCK_K), mc = C.map(CONSUMER_ROWS, 64);
  for (Policy p : {Policy::Eager, Policy::ReadsLate, Policy::CompletionsLate}) {
    std::memset(C.dev, 0xFF, (size_t)GEMM_M * GEMM_N * 2);
    auto t0 = std::chrono::steady_clock::now();
    Verdict v = launch(Dim3(4), Dim3(NUM_THREADS), SMEM_BYTES, [&] { ws_gemm_kernel(ma, mb, mc); }, cfgOf(p));
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[ gemm     ] 512^3 ws_gemm, policy %s: %.3f s, %llu ops, %llu fiber switches\n", policyName(p), s,
                (unsigned long long)v.ops, (unsigned long long)v.switches);
    ASSERT_TRUE(v.pass()) << dump(v);
    int bad = 0;
    for (size_t i = 0; i < ref.size(); ++i)
      bad += std::fabs(bf16ToFloat(C.dev[i]) - ref[i]) > 1e-2 + 1e-2 * std::fabs(ref[i]);
    EXPECT_EQ(bad, 0) << policyName(p);
  }
}

// The same kernel with the consumers' empty[] arrival dropped for the last k-block: the
// producer of the next tile parks on empty[], the verdict names it.
TEST(Gemm, DroppedEmptyArrivalHangsWithTheCallChain) {
  Bf16Matrix A(GEMM_M, GEMM_K, "A", true, 1), B(GEMM_N, GEMM_K, "B", true, 2), C(GEMM_M, GEMM_N, "C");
  TensorMap ma = A.map(BLOCK_M, BLOCK_K), mb = B.map(BLOCK_N, BLOCK_K), mc = C.map(CONSUMER_ROWS, 64);
  g_drop_last_empty_arrive = true;
  auto t0 = std::chrono::steady_clock::now();
  Verdict v = launch(Dim3(4), Dim3(NUM_THREADS), SMEM_BYTES, [&] { ws_gemm_kernel(ma, mb, mc); }, cfgOf());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  g_drop_last_empty_arrive = false;
  std::printf("[ gemm     ] deadlock found in %.1f ms:\n", s * 1e3);
  v.print(stdout);
  EXPECT_EQ(v.detail, "hang/mbarrier");
  std::string inner = siteOfMarker("test_gemm.cpp", "mbar-wait-asm");
  std::string prod = siteOfMarker("test_gemm.cpp", "producer-wait") + ">" + inner;
  std::string cons = siteOfMarker("test_gemm.cpp", "consumer-wait") + ">" + inner;
  EXPECT_NE(v.signature.find(prod + ",warpgroup0"), std::string::npos) << v.signature;
  EXPECT_NE(v.signature.find(cons + ",warpgroup1"), std::string::npos) << v.signature;
  EXPECT_NE(v.signature.find(cons + ",warpgroup2"), std::string::npos) << v.signature;
}
