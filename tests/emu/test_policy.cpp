// (k) The policy matrix: a missing wait is invisible under eager and visible under the late
// policies. (j) Determinism: one seed, one trace.
#include <cmath>

#include "emu_test.h"

using namespace emutest;

static void missingWaitKernel(float *C) {
  using namespace wsemu::ptx;
  uint8_t *smem = dynamicShared();
  const int t = (int)threadIdx().x, w = t / 32, l = t % 32;
  // A = identity-ish: A[m][k] = (m == k), B[n][k] = 1 -> D[m][n] = 1 for m < 16
  auto *A = reinterpret_cast<uint16_t *>(smem), *B = reinterpret_cast<uint16_t *>(smem + 8192);
  for (int e = t; e < 64 * 64; e += 128) {
    int r = e / 64, c = e % 64;
    at(reinterpret_cast<uint16_t *>(smem + sw128(r, c)), WSEMU_HERE) = floatToBf16(r == c ? 1.f : 0.f);
    at(reinterpret_cast<uint16_t *>(smem + 8192 + sw128(r, c)), WSEMU_HERE) = floatToBf16(1.f);
  }
  (void)A;
  (void)B;
  fence_proxy_async(WSEMU_HERE);
  syncthreads(WSEMU_HERE);
  float acc[32] = {};
  uint64_t da = (1ull << 62) | ((uint64_t)(1024 >> 4) << 32) | (1 << 16) | (smemAddr(smem) >> 4);
  uint64_t db = (1ull << 62) | ((uint64_t)(1024 >> 4) << 32) | (1 << 16) | (smemAddr(smem + 8192) >> 4);
  wgmma_fence(WSEMU_HERE);
  wgmma_ss(acc, WgType::BF16, da, db, false, 0, 0, WSEMU_HERE);
  wgmma_commit_group(WSEMU_HERE);
  for (int i = 0; i < 32; ++i) {  // the bug: reading the accumulators before wgmma.wait_group
    int row = 16 * w + l / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * (l % 4) + i % 2;
    at(&C[row * 64 + col], WSEMU_HERE) = acc[i];
  }
  wgmma_wait_group(0, WSEMU_HERE);
}

static int wrongCells(Policy p) {
  auto *C = static_cast<float *>(emuMalloc(64 * 64 * 4, "C"));
  Verdict v = launch(Dim3(1), Dim3(128), 16384, [=] { missingWaitKernel(C); }, cfgOf(p));
  EXPECT_TRUE(v.pass()) << dump(v);
  int bad = 0;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 64; ++n) bad += C[m * 64 + n] != (m < 16 ? 1.f : 0.f);
  emuFree(C);
  return bad;
}

TEST(Policy, MissingWgmmaWaitIsCorrectUnderEagerAndWrongUnderCompletionsLate) {
  EXPECT_EQ(wrongCells(Policy::Eager), 0);
  EXPECT_EQ(wrongCells(Policy::CompletionsLate), 16 * 64);  // rows 0-15 read before the result landed
  EXPECT_EQ(wrongCells(Policy::ReadsLate), 16 * 64);
}

// A TMA store whose staging buffer is overwritten without cp.async.bulk.wait_group.read:
// eager stores the first image, reads-late stores the overwritten one.
static uint16_t storeThenOverwrite(Policy p) {
  auto *out = static_cast<uint16_t *>(emuMalloc(64 * 64 * 2, "out"));
  TensorMap map;
  uint64_t dims[2] = {64, 64}, strides[1] = {128};
  uint32_t box[2] = {64, 64}, es[2] = {1, 1};
  EXPECT_EQ(encodeTiled(&map, TM_BFLOAT16, 2, out, dims, strides, box, es, 0, TM_SWIZZLE_128B, 0, 0), 0);
  Verdict v = launch(Dim3(1), Dim3(32), 8192, [&] {
    using namespace wsemu::ptx;
    auto *s = reinterpret_cast<uint16_t *>(dynamicShared());
    for (int e = threadIdx().x; e < 4096; e += 32) at(&s[e], WSEMU_HERE) = 1;
    fence_proxy_async(WSEMU_HERE);
    syncwarp(0xffffffff, WSEMU_HERE);
    if (threadIdx().x == 0) {
      tma_store_2d(&map, smemAddr(s), 0, 0, WSEMU_HERE);
      bulk_commit_group(WSEMU_HERE);
    }
    syncwarp(0xffffffff, WSEMU_HERE);  // the bug: no bulk_wait_group(0, read) before the overwrite
    for (int e = threadIdx().x; e < 4096; e += 32) at(&s[e], WSEMU_HERE) = 2;
    if (threadIdx().x == 0) bulk_wait_group(0, false, WSEMU_HERE);
  }, cfgOf(p));
  EXPECT_TRUE(v.pass()) << dump(v);
  uint16_t r = out[0];
  emuFree(out);
  return r;
}

TEST(Policy, MissingWaitGroupReadIsVisibleUnderReadsLate) {
  EXPECT_EQ(storeThenOverwrite(Policy::Eager), 1);
  EXPECT_EQ(storeThenOverwrite(Policy::CompletionsLate), 1);
  EXPECT_EQ(storeThenOverwrite(Policy::ReadsLate), 2);
}

// A bulk store its thread never waited for is UB when the CTA exits, under every policy: what the
// thread knows, not whether the eager policy happened to read the source at issue. With a
// wait_group.read after the commit, every policy passes.
TEST(Policy, ExitWithAnUnwaitedBulkStoreIsUbUnderEveryPolicy) {
  auto *out = static_cast<uint16_t *>(emuMalloc(64 * 64 * 2, "out"));
  TensorMap map;
  uint64_t dims[2] = {64, 64}, strides[1] = {128};
  uint32_t box[2] = {64, 64}, es[2] = {1, 1};
  ASSERT_EQ(encodeTiled(&map, TM_BFLOAT16, 2, out, dims, strides, box, es, 0, TM_SWIZZLE_128B, 0, 0), 0);
  for (bool wait : {false, true}) {
    auto kernel = [&] {
      using namespace wsemu::ptx;
      if (threadIdx().x == 0) {
        tma_store_2d(&map, smemAddr(dynamicShared()), 0, 0, WSEMU_HERE);  // @store-no-wait
        bulk_commit_group(WSEMU_HERE);
        if (wait) bulk_wait_group(0, true, WSEMU_HERE);
      }
    };
    for (Policy p : {Policy::Eager, Policy::ReadsLate, Policy::CompletionsLate}) {
      Verdict v = launch(Dim3(1), Dim3(32), 8192, kernel, cfgOf(p));
      if (wait) {
        EXPECT_TRUE(v.pass()) << policyName(p) << dump(v);
        continue;
      }
      EXPECT_EQ(v.detail, "ub/exit-with-bulk-in-flight") << policyName(p) << dump(v);
      EXPECT_EQ(v.signature, siteOfMarker("test_policy.cpp", "store-no-wait") + ",async") << policyName(p);
    }
  }
  emuFree(out);
}

// (j) Random order + completions-late: the same seed gives the same trace, another seed another.
static std::vector<std::string> traceOf(uint64_t seed) {
  Config c = cfgOf(Policy::CompletionsLate, Order::Random, seed);
  c.trace = true;
  std::vector<int> order;
  Verdict v = launch(Dim3(2), Dim3(96), 64, [&] {
    using namespace wsemu::ptx;
    auto *bar = reinterpret_cast<uint64_t *>(dynamicShared());
    if (threadIdx().x == 0) mbarrier_init(smemAddr(bar), 96, WSEMU_HERE);
    syncthreads(WSEMU_HERE);
    for (int i = 0; i < 3; ++i) {
      mbarrier_arrive(smemAddr(bar), WSEMU_HERE);
      while (!mbarrier_try_wait_parity(smemAddr(bar), i & 1, WSEMU_HERE)) {}
    }
    elect_sync(0xffffffff, WSEMU_HERE);
  }, c);
  EXPECT_TRUE(v.pass()) << dump(v);
  return v.trace;
}

TEST(Determinism, SameSeedSameTrace) {
  auto a = traceOf(7), b = traceOf(7), c = traceOf(8);
  EXPECT_GT(a.size(), 500u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}
