// Barriers and collectives: __syncthreads in a role branch, a wgmma reached by part of its
// warpgroup, named barriers with counts, and out-of-bounds accesses.
#include "ring_kernel.h"

using namespace emutest;

// (c) the consumers' __syncthreads waits for warp 0, whose producer lane parks on empty[]
// once the ring is full: the barrier parked first, so the verdict is hang/barrier.
TEST(Hangs, SyncthreadsInRoleBranchIsHangBarrier) {
  Bf16Matrix in(256, 64, "in");
  auto *out = static_cast<uint16_t *>(emuMalloc(256 * 64 * 2, "out"));
  TensorMap map = in.map(kBoxRows, 64);
  RingKnobs k;
  k.sync_in_consumer = true;
  Verdict v = launch(Dim3(1), Dim3(kRingThreads), kRingSmem, [&] { ring_kernel(map, out, 256, k); }, cfgOf());
  EXPECT_EQ(v.detail, "hang/barrier") << dump(v);
  std::string cs = siteOfMarker("ring_kernel.h", "consumer-sync");
  EXPECT_TRUE(hasLine(v, "parked at " + cs + " bar.sync 0 (128 of 160 threads arrived, warp-granular)")) << dump(v);
  EXPECT_TRUE(hasLine(v, "mbarrier empty[0] waiting for parity 0")) << dump(v);
  emuFree(out);
}

TEST(Hangs, NamedBarrierCountsAreWarpGranular) {
  int after = 0;
  Verdict v = launch(Dim3(1), Dim3(256), 0, [&] {
    using namespace wsemu::ptx;
    int wg = (int)threadIdx().x / 128;
    bar_sync(1 + wg, 128, WSEMU_HERE);  // two independent 128-thread barriers
    if (threadIdx().x < 64) bar_arrive(3, 128, WSEMU_HERE);  // producers arrive ...
    else if (threadIdx().x < 128) bar_sync(3, 128, WSEMU_HERE);  // ... consumers wait
    ++after;
  }, cfgOf());
  EXPECT_TRUE(v.pass()) << dump(v);
  EXPECT_EQ(after, 256);
}

TEST(Hangs, NamedBarrierWithTooFewThreadsHangs) {
  Verdict v = launch(Dim3(1), Dim3(128), 0, [] {
    if (threadIdx().x < 96) wsemu::ptx::bar_sync(1, 128, WSEMU_HERE);
  }, cfgOf());
  EXPECT_EQ(v.detail, "hang/barrier") << dump(v);
  EXPECT_TRUE(hasLine(v, "bar.sync 1 (96 of 128 threads arrived, warp-granular)")) << dump(v);
}

TEST(Hangs, EarlyExitBeforeSyncthreadsPassesWhenExitedWarpsArrive) {
  Verdict v = launch(Dim3(1), Dim3(128), 0, [] {
    if (threadIdx().x >= 64) return;
    wsemu::ptx::syncthreads(WSEMU_HERE);
  }, cfgOf());
  EXPECT_TRUE(v.pass()) << dump(v);
  Config strict = cfgOf();
  strict.exited_warps_arrive = false;
  v = launch(Dim3(1), Dim3(128), 0, [] {
    if (threadIdx().x >= 64) return;
    wsemu::ptx::syncthreads(WSEMU_HERE);
  }, strict);
  EXPECT_EQ(v.detail, "hang/barrier") << dump(v);
}

// A wgmma (a warpgroup collective) that warp 3 never reaches: UB, not a plain hang.
TEST(Hangs, WgmmaReachedByPartOfItsWarpgroupIsUB) {
  Verdict v = launch(Dim3(1), Dim3(128), 4096, [] {
    using namespace wsemu::ptx;
    if (threadIdx().x >= 96) return;
    float acc[32] = {};
    uint64_t desc = (uint64_t)1 << 62 | (uint64_t)(1024 >> 4) << 32;
    wgmma_fence(WSEMU_HERE);
    wgmma_ss(acc, WgType::BF16, desc, desc, false, 0, 0, WSEMU_HERE);  // @partial-wgmma
    wgmma_commit_group(WSEMU_HERE);
    wgmma_wait_group(0, WSEMU_HERE);
  }, cfgOf());
  EXPECT_EQ(v.detail, "ub/partial-collective") << dump(v);
  EXPECT_TRUE(hasLine(v, "wgmma.mma_async.m64n64k16.ss")) << dump(v);
  EXPECT_TRUE(hasLine(v, "96 of 128 threads arrived; missing warp 3 exited;")) << dump(v);
}

TEST(Collectives, ElectShflVote) {
  std::vector<uint32_t> leaders(64), sh(64), ballots(64);
  Verdict v = launch(Dim3(1), Dim3(64), 0, [&] {
    using namespace wsemu::ptx;
    uint32_t t = threadIdx().x;
    bool elected = elect_sync(0xffffffff, WSEMU_HERE);
    leaders[t] = elected;
    sh[t] = shfl_idx(0xffffffff, t * 10, 3, 32, WSEMU_HERE) + shfl_xor(0xffffffff, t, 1, 32, WSEMU_HERE);
    ballots[t] = vote_sync(Vote::Ballot, t % 2 == 0, 0xffffffff, WSEMU_HERE);
  }, cfgOf(Policy::Eager, Order::Random, 5));
  ASSERT_TRUE(v.pass()) << dump(v);
  for (uint32_t t = 0; t < 64; ++t) {
    EXPECT_EQ(leaders[t], t % 32 == 0 ? 1u : 0u);
    EXPECT_EQ(sh[t], (t / 32 * 32 + 3) * 10 + (t ^ 1));
    EXPECT_EQ(ballots[t], 0x55555555u);
  }
}

TEST(Collectives, SetmaxnregIsAWarpgroupCollective) {
  Verdict v = launch(Dim3(1), Dim3(256), 0, [] {
    using namespace wsemu::ptx;
    if (threadIdx().x < 128) setmaxnreg(false, 40, WSEMU_HERE);
    else setmaxnreg(true, 232, WSEMU_HERE);
  }, cfgOf());
  EXPECT_TRUE(v.pass()) << dump(v);
}

TEST(Collectives, LdmatrixStmatrixRoundTrip) {
  std::vector<uint32_t> regs(32 * 4);
  Verdict v = launch(Dim3(1), Dim3(32), 2048, [&] {
    using namespace wsemu::ptx;
    auto *s = reinterpret_cast<uint16_t *>(dynamicShared());
    uint32_t l = threadIdx().x;
    for (int i = 0; i < 8; ++i) at(&s[l * 8 + i], WSEMU_HERE) = (uint16_t)(l * 8 + i);  // 4 8x8 matrices
    syncwarp(0xffffffff, WSEMU_HERE);
    uint32_t r[4];
    ldmatrix(4, false, smemAddr(&s[l * 8]), r, WSEMU_HERE);  // lane l: row l%8 of matrix l/8
    for (int i = 0; i < 4; ++i) regs[l * 4 + i] = r[i];
    stmatrix(4, true, smemAddr(&s[256 + l * 8]), r, WSEMU_HERE);
  }, cfgOf());
  ASSERT_TRUE(v.pass()) << dump(v);
  for (int l = 0; l < 32; ++l)
    for (int m = 0; m < 4; ++m) {  // matrix m, row l/4, cols 2(l%4), +1
      uint32_t lo = m * 64 + (l / 4) * 8 + 2 * (l % 4);
      EXPECT_EQ(regs[l * 4 + m], lo | ((lo + 1) << 16)) << l << " " << m;
    }
}

// (i) an out-of-bounds global store is UB at its line; the neighbouring heap stays intact.
TEST(Memory, GlobalOutOfBoundsStoreIsUBNotHeapCorruption) {
  auto *buf = static_cast<float *>(emuMalloc(128 * sizeof(float), "buf"));
  Verdict v = launch(Dim3(1), Dim3(128), 0, [&] {
    int i = (int)threadIdx().x * 2;                  // the bug: stride 2 over 128 floats
    at(&buf[i], WSEMU_HERE) = 1.0f;  // @oob-store
  }, cfgOf());
  EXPECT_EQ(v.detail, "ub/out-of-bounds-global") << dump(v);
  EXPECT_EQ(v.signature, siteOfMarker("test_hangs.cpp", "oob-store") + ",warpgroup0");
  EXPECT_NE(v.message.find("nearest: buf of 512 bytes"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("offset 512"), std::string::npos) << v.message;
  EXPECT_TRUE(redZonesIntact());
  emuFree(buf);
}

TEST(Memory, SharedOutOfBoundsIsUB) {
  Verdict v = launch(Dim3(1), Dim3(32), 256, [] {
    auto *s = reinterpret_cast<uint32_t *>(dynamicShared());
    at(&s[threadIdx().x * 4], WSEMU_HERE) = 0;
  }, cfgOf());
  EXPECT_EQ(v.detail, "ub/out-of-bounds-shared") << dump(v);
}

// On the H200 the kernel's shared memory starts at shared-window address 1024: the first KiB is
// reserved (bench/probes/smem_base.cu, bench/results/2026-11-30-h200-session11/). A barrier at a
// literal address 0, what simplify-expr once made of `smem_u32(&full[0])`, is not the kernel's.
TEST(Memory, SharedWindowStartsAfterTheReservedKilobyte) {
  uint32_t first = 0;
  Verdict ok = launch(Dim3(1), Dim3(32), 256, [&] {
    if (threadIdx().x == 0) first = smemAddr(dynamicShared());
  }, cfgOf());
  EXPECT_TRUE(ok.pass()) << dump(ok);
  EXPECT_EQ(first, 1024u);
  Verdict v = launch(Dim3(1), Dim3(32), 256, [] {
    if (threadIdx().x == 0) ptx::mbarrier_init(0, 1, WSEMU_HERE);
  }, cfgOf());
  EXPECT_EQ(v.detail, "ub/out-of-bounds-shared") << dump(v);
  EXPECT_NE(v.message.find("reserved"), std::string::npos) << v.message;
}
