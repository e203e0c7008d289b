// The producer/consumer ring and the mbarrier rules: a correct copy, and the handoff bugs
// of class 1 (docs/methodology.md) each named by the verdict they must get.
#include "emu/runtime/state.h"
#include "ring_kernel.h"

using namespace emutest;

namespace {

Verdict runRing(Bf16Matrix &in, uint16_t *out, RingKnobs knobs, Config cfg = cfgOf()) {
  TensorMap map = in.map(kBoxRows, 64);
  int rows = in.rows;
  return launch(Dim3(1), Dim3(kRingThreads), kRingSmem, [&] { ring_kernel(map, out, rows, knobs); }, cfg);
}

}  // namespace

// (a) 8 tiles through 3 stages: the ring's phases wrap twice; every policy copies exactly.
TEST(Ring, CopiesTheTensorUnderEveryPolicy) {
  for (Policy p : {Policy::Eager, Policy::ReadsLate, Policy::CompletionsLate}) {
    Bf16Matrix in(256, 64, "in");
    auto *out = static_cast<uint16_t *>(emuMalloc(256 * 64 * 2, "out"));
    Verdict v = runRing(in, out, {}, cfgOf(p));
    EXPECT_TRUE(v.pass()) << policyName(p) << "\n" << dump(v);
    EXPECT_EQ(std::memcmp(out, in.dev, 256 * 64 * 2), 0) << policyName(p);
    emuFree(out);
  }
}

TEST(Ring, CopiesUnderSeededRandomOrder) {
  for (uint64_t seed : {1, 2, 3}) {
    Bf16Matrix in(256, 64, "in");
    auto *out = static_cast<uint16_t *>(emuMalloc(256 * 64 * 2, "out"));
    Verdict v = runRing(in, out, {}, cfgOf(Policy::CompletionsLate, Order::Random, seed));
    EXPECT_TRUE(v.pass()) << dump(v);
    EXPECT_EQ(std::memcmp(out, in.dev, 256 * 64 * 2), 0) << "seed " << seed;
    emuFree(out);
  }
}

// (b) full[] initialised for 128 arrivals, the producer arrives once: the consumers park on
// full[0] for parity 0 with 127 arrivals missing, the producer on empty[0] once the ring is full.
TEST(Ring, InitCount128WithOneArrivalHangsOnMbarrier) {
  Bf16Matrix in(256, 64, "in");
  auto *out = static_cast<uint16_t *>(emuMalloc(256 * 64 * 2, "out"));
  RingKnobs k;
  k.full_count = 128;
  Verdict v = runRing(in, out, k);
  EXPECT_EQ(v.detail, "hang/mbarrier") << dump(v);
  EXPECT_EQ(v.symptom, "hang");
  EXPECT_EQ(v.exitStatus(), kExitHang);
  std::string cw = siteOfMarker("ring_kernel.h", "consumer-wait"), pw = siteOfMarker("ring_kernel.h", "producer-wait");
  EXPECT_TRUE(hasLine(v, "parked at " + cw + " mbarrier full[0] waiting for parity 0 (phase 0 parity 0, pending 127 of 128, tx 0)"))
      << dump(v);
  EXPECT_TRUE(hasLine(v, "parked at " + pw + " mbarrier empty[0] waiting for parity 0")) << dump(v);
  EXPECT_NE(v.signature.find(cw + ",warpgroup1,iter0"), std::string::npos) << v.signature;
  EXPECT_NE(v.signature.find(pw + ",warpgroup0,iter3"), std::string::npos) << v.signature;
  // the consumers parked first: they are the first parked line
  ASSERT_FALSE(v.parked.empty());
  EXPECT_EQ(v.parked.front().site, cw);
  emuFree(out);
}

// (f) expect_tx of 16 bytes more than the box: the phase never completes, tx 16 still owed.
TEST(Ring, ExpectTxLargerThanDeliveredHangs) {
  for (Policy p : {Policy::Eager, Policy::CompletionsLate}) {
    Bf16Matrix in(256, 64, "in");
    auto *out = static_cast<uint16_t *>(emuMalloc(256 * 64 * 2, "out"));
    RingKnobs k;
    k.extra_tx = 16;
    Verdict v = runRing(in, out, k, cfgOf(p));
    EXPECT_EQ(v.detail, "hang/mbarrier") << dump(v);
    EXPECT_TRUE(hasLine(v, "mbarrier full[0] waiting for parity 0 (phase 0 parity 0, pending 0 of 1, tx 16)")) << dump(v);
    emuFree(out);
  }
}

// (d) an arrival on a phase whose pending count is already 0 (its tx still owed) is UB.
TEST(MBarrier, OverArrivalIsUB) {
  Verdict v = launch(Dim3(1), Dim3(32), 64, [] {
    using namespace wsemu::ptx;
    auto *bar = reinterpret_cast<uint64_t *>(dynamicShared());
    nameShared(bar, 8, 8, "full");
    if (threadIdx().x == 0) {
      mbarrier_init(smemAddr(bar), 1, WSEMU_HERE);
      mbarrier_arrive_expect_tx(smemAddr(bar), 128, WSEMU_HERE);
      mbarrier_arrive(smemAddr(bar), WSEMU_HERE);  // @over-arrival
    }
  }, cfgOf());
  EXPECT_EQ(v.detail, "ub/over-arrival") << dump(v);
  EXPECT_EQ(v.symptom, "ub");
  EXPECT_EQ(v.exitStatus(), kExitUB);
  EXPECT_EQ(v.signature, siteOfMarker("test_mbarrier.cpp", "over-arrival") + ",warpgroup0");
  EXPECT_NE(v.message.find("full (phase 0, pending 0 of 1, tx 128)"), std::string::npos) << v.message;
}

// (e) a barrier no mbarrier.init set up, as the H200 treats it (bench/probes/s16_uninit): a wait
// reads a zeroed word, phase 0 that never completes (a wait loop hangs, a lone try_wait returns
// false and traps nothing); an arrive on it traps, the emulator's UB, named at the arrive.
TEST(MBarrier, AWaitBeforeInitReadsAZeroedWordAndAnArriveIsUB) {
  Verdict w = launch(Dim3(1), Dim3(64), 64, [] {
    using namespace wsemu::ptx;
    auto *bar = reinterpret_cast<uint64_t *>(dynamicShared());
    nameShared(bar, 8, 8, "full");
    if (threadIdx().x == 32) while (!mbarrier_try_wait_parity(smemAddr(bar), 0, WSEMU_HERE)) {}  // @wait-before-init
    syncthreads(WSEMU_HERE);
    if (threadIdx().x == 0) mbarrier_init(smemAddr(bar), 1, WSEMU_HERE);
  }, cfgOf());
  EXPECT_EQ(w.symptom, "hang") << dump(w);  // (the other warps' __syncthreads parked first)
  EXPECT_NE(w.signature.find(siteOfMarker("test_mbarrier.cpp", "wait-before-init") + ",warpgroup0,iter0,arrivals=uninit"),
            std::string::npos) << w.signature;
  EXPECT_TRUE(hasLine(w, "mbarrier full (not initialised: read as a zeroed word, phase 0) waiting for parity 0")) << dump(w);
  bool lone = false, odd = false;
  Verdict once = launch(Dim3(1), Dim3(32), 64, [&] {
    using namespace wsemu::ptx;
    auto *bar = reinterpret_cast<uint64_t *>(dynamicShared());
    if (threadIdx().x == 0) {
      lone = mbarrier_try_wait_parity(smemAddr(bar), 0, WSEMU_HERE);
      odd = mbarrier_try_wait_parity(smemAddr(bar), 1, WSEMU_HERE);  // phase 0's parity is 0: "done"
    }
  }, cfgOf());
  EXPECT_TRUE(once.pass()) << dump(once);
  EXPECT_FALSE(lone);
  EXPECT_TRUE(odd);
  Verdict a = launch(Dim3(1), Dim3(32), 64, [] {
    using namespace wsemu::ptx;
    auto *bar = reinterpret_cast<uint64_t *>(dynamicShared());
    nameShared(bar, 8, 8, "full");
    if (threadIdx().x == 0) {
      (void)mbarrier_try_wait_parity(smemAddr(bar), 0, WSEMU_HERE);
      mbarrier_arrive(smemAddr(bar), WSEMU_HERE);  // @arrive-before-init
    }
  }, cfgOf());
  EXPECT_EQ(a.detail, "ub/use-before-init") << dump(a);
  EXPECT_EQ(a.signature, siteOfMarker("test_mbarrier.cpp", "arrive-before-init") + ",warpgroup0");
  EXPECT_NE(a.message.find("mbarrier used before init"), std::string::npos);
}

// A load's bytes are there for a thread once it knows the load's barrier phase completed: from a
// wait of its own, or from a thread that waited, at a CTA barrier both took part in. Before that a
// read of them is counted (the signature's +smem-read-unwaited / +smem-read-before-tx), whatever
// the async timing policy.
TEST(MBarrier, ALoadsBytesAreKnownToHaveLandedAfterAWaitOrABarrierAfterOne) {
  auto *src = static_cast<uint8_t *>(emuMalloc(256, "src"));
  bool before = false, after_sync = false, waiter = true, stale = false;
  Verdict v = launch(Dim3(1), Dim3(64), 1024, [&] {
    using namespace wsemu::ptx;
    uint8_t *smem = dynamicShared();
    uint32_t buf = smemAddr(smem), bar = smemAddr(smem + 512);
    if (threadIdx().x == 0) mbarrier_init(bar, 1, WSEMU_HERE);
    syncthreads(WSEMU_HERE);
    if (threadIdx().x == 0) {
      mbarrier_arrive_expect_tx(bar, 256, WSEMU_HERE);
      bulk_load(buf, src, 256, bar, WSEMU_HERE);
      while (!mbarrier_try_wait_parity(bar, 0, WSEMU_HERE)) {}
      waiter = wsemu::readBeforeLanded(wsemu::self(), buf, buf + 256);
    }
    if (threadIdx().x == 32) before = wsemu::readBeforeLanded(wsemu::self(), buf, buf + 256);
    syncthreads(WSEMU_HERE);
    if (threadIdx().x == 32) after_sync = wsemu::readBeforeLanded(wsemu::self(), buf, buf + 256);
    syncthreads(WSEMU_HERE);
    if (threadIdx().x == 0) {  // the next load into the same bytes: its phase is not known yet
      mbarrier_arrive_expect_tx(bar, 256, WSEMU_HERE);
      bulk_load(buf, src, 256, bar, WSEMU_HERE);
      stale = wsemu::readBeforeLanded(wsemu::self(), buf, buf + 256);
      while (!mbarrier_try_wait_parity(bar, 1, WSEMU_HERE)) {}
    }
  }, cfgOf());
  EXPECT_TRUE(v.pass()) << dump(v);
  EXPECT_FALSE(waiter);
  EXPECT_TRUE(before);  // thread 32 neither waited nor met thread 0 at a barrier since the load
  EXPECT_FALSE(after_sync);
  EXPECT_TRUE(stale);
  emuFree(src);
}

// (f) mbarrier.init is a plain write of the object: two threads initialising one barrier with no
// CTA barrier between them race. A reduction that dropped the init's `threadIdx.x == 0` guard hung
// on the emulator and passed on the H200. The same thread again, or another thread
// after a __syncthreads, is ordered.
TEST(MBarrier, InitByTwoThreadsWithNoBarrierBetweenIsARace) {
  Verdict race = launch(Dim3(1), Dim3(64), 64, [] {
    using namespace wsemu::ptx;
    auto *bar = reinterpret_cast<uint64_t *>(dynamicShared());
    nameShared(bar, 8, 8, "full");
    if (threadIdx().x == 0 || threadIdx().x == 32) mbarrier_init(smemAddr(bar), 2, WSEMU_HERE);  // @init-race
    syncthreads(WSEMU_HERE);
  }, cfgOf());
  EXPECT_EQ(race.detail, "ub/mbarrier-init-race") << dump(race);
  EXPECT_EQ(race.signature.rfind(siteOfMarker("test_mbarrier.cpp", "init-race"), 0), 0u) << dump(race);
  EXPECT_NE(race.message.find("races with thread"), std::string::npos) << race.message;
  Verdict ordered = launch(Dim3(1), Dim3(64), 64, [] {
    using namespace wsemu::ptx;
    auto *bar = reinterpret_cast<uint64_t *>(dynamicShared());
    if (threadIdx().x == 0) mbarrier_init(smemAddr(bar), 2, WSEMU_HERE);
    if (threadIdx().x == 0) mbarrier_init(smemAddr(bar), 1, WSEMU_HERE);  // the same thread: ordered
    syncthreads(WSEMU_HERE);
    if (threadIdx().x == 32) mbarrier_init(smemAddr(bar), 1, WSEMU_HERE);  // after the barrier: ordered
    syncthreads(WSEMU_HERE);
  }, cfgOf());
  EXPECT_EQ(ordered.symptom, "pass") << dump(ordered);
}

TEST(MBarrier, TxOverflowIsUB) {
  Verdict v = launch(Dim3(1), Dim3(32), 64, [] {
    using namespace wsemu::ptx;
    auto *bar = reinterpret_cast<uint64_t *>(dynamicShared());
    if (threadIdx().x == 0) {
      mbarrier_init(smemAddr(bar), 2, WSEMU_HERE);
      mbarrier_arrive_expect_tx(smemAddr(bar), 1 << 19, WSEMU_HERE);
      mbarrier_arrive_expect_tx(smemAddr(bar), 1 << 19, WSEMU_HERE);
    }
  }, cfgOf());
  EXPECT_EQ(v.detail, "ub/tx-overflow") << dump(v);
}

// Phase arithmetic: a fresh barrier's parity-1 phase counts as complete; a complete_tx before
// the expect_tx (negative tx-count) is legal; test_wait spins are parked, not livelocked.
TEST(MBarrier, PhaseAndTxRules) {
  std::vector<int> seen;
  Verdict v = launch(Dim3(1), Dim3(64), 64, [&] {
    using namespace wsemu::ptx;
    auto *bar = reinterpret_cast<uint64_t *>(dynamicShared());
    uint32_t b = smemAddr(bar);
    if (threadIdx().x == 0) {
      mbarrier_init(b, 1, WSEMU_HERE);
      seen.push_back(mbarrier_test_wait_parity(b, 1, WSEMU_HERE));  // fresh: parity 1 done
      seen.push_back(mbarrier_test_wait_parity(b, 0, WSEMU_HERE));  // phase 0 not done
      mbarrier_complete_tx(b, 64, WSEMU_HERE);                        // tx -64
      mbarrier_arrive_expect_tx(b, 64, WSEMU_HERE);                   // tx 0, pending 0: completes
      seen.push_back(mbarrier_test_wait_parity(b, 0, WSEMU_HERE));
    }
    syncthreads(WSEMU_HERE);
    if (threadIdx().x == 32) {
      while (!mbarrier_test_wait_parity(b, 1, WSEMU_HERE)) {  // phase 1 completes only below
      }
      seen.push_back(2);
    }
    if (threadIdx().x == 33) mbarrier_arrive(b, WSEMU_HERE);
  }, cfgOf());
  EXPECT_TRUE(v.pass()) << dump(v);
  EXPECT_EQ(seen, (std::vector<int>{1, 0, 1, 2}));
}

TEST(MBarrier, TestWaitSpinWithNoArriverIsAHang) {
  Verdict v = launch(Dim3(1), Dim3(32), 64, [] {
    using namespace wsemu::ptx;
    auto *bar = reinterpret_cast<uint64_t *>(dynamicShared());
    uint32_t b = smemAddr(bar);
    if (threadIdx().x == 0) mbarrier_init(b, 1, WSEMU_HERE);
    syncwarp(0xffffffff, WSEMU_HERE);
    while (!mbarrier_test_wait_parity(b, 0, WSEMU_HERE)) {
    }
  }, cfgOf());
  EXPECT_EQ(v.detail, "hang/mbarrier") << dump(v);
  EXPECT_TRUE(hasLine(v, "(test_wait spin)")) << dump(v);
}

// try_wait suspends for a bounded time, then returns false: one try_wait with no loop around it
// does not hang on the GPU (a reduction of the GEMM hang that kept one passed on the H200), and
// the emulator must not call it a hang either; the same try_wait in a spin loop is one.
TEST(MBarrier, ALoneTryWaitReturnsFalseASpinOnItIsAHang) {
  for (bool spin : {false, true}) {
    bool got = true;
    Verdict v = launch(Dim3(1), Dim3(32), 64, [&] {
      using namespace wsemu::ptx;
      auto *bar = reinterpret_cast<uint64_t *>(dynamicShared());
      uint32_t b = smemAddr(bar);
      if (threadIdx().x == 0) mbarrier_init(b, 1, WSEMU_HERE);
      syncwarp(0xffffffff, WSEMU_HERE);
      if (!spin) {
        bool r = mbarrier_try_wait_parity(b, 0, WSEMU_HERE);
        if (threadIdx().x == 0) got = r;
      } else {
        while (!mbarrier_try_wait_parity(b, 0, WSEMU_HERE)) {
        }
      }
    }, cfgOf());
    if (!spin) {
      EXPECT_TRUE(v.pass()) << dump(v);
      EXPECT_FALSE(got);
    } else {
      EXPECT_EQ(v.detail, "hang/mbarrier") << dump(v);
      EXPECT_TRUE(hasLine(v, "waiting for parity 0 (phase 0 parity 0, pending 1 of 1, tx 0)")) << dump(v);
    }
  }
}
