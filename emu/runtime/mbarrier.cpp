// mbarrier semantics (PTX ISA, "Parallel Synchronization and Communication Instructions:
// mbarrier"): a phase completes when its pending arrival count and its tx-count are both 0;
// then the phase advances, pending resets to the expected count.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "emu/runtime/ptx.h"
#include "emu/runtime/state.h"

namespace wsemu::ptx {

std::atomic<uint64_t> g_init_unordered{0};
std::atomic<int> g_init_sites{-1};
std::atomic<uint64_t> g_wait_uninit{0}, g_tx_uninit{0}, g_read_unlanded{0}, g_read_unwaited{0};
std::atomic<uint64_t> g_proxy_unfenced{0};

bool declareInitSites(int sites) {
  g_init_sites = sites;
  return true;
}

void printNotes(FILE *f) {
  const std::pair<const char *, const std::atomic<uint64_t> *> notes[] = {
      {"mbarrier-init-unordered", &g_init_unordered}, {"mbarrier-wait-uninit", &g_wait_uninit},
      {"mbarrier-tx-uninit", &g_tx_uninit},           {"smem-read-before-tx", &g_read_unlanded},
      {"smem-read-unwaited", &g_read_unwaited},       {"proxy-unfenced", &g_proxy_unfenced}};
  for (auto &[name, n] : notes)
    if (uint64_t v = n->load())
      std::fprintf(f, "WSEMU note %s=%llu\n", name, (unsigned long long)v);
}

namespace {
constexpr int64_t kTxMax = (1 << 20) - 1;

// Whether the current thread's operation on `b` is ordered after its init: the same thread did it,
// or a CTA-wide barrier completed since. A thread of a peer CTA of the cluster (a remote arrive)
// is ordered after it by a barrier.cluster only.
bool orderedAfterInit(const MBarrier &b, const Cta &c) {
  if (b.init_thread < 0) return true;
  const Thread &t = self();
  const bool cluster_since = c.cluster && b.init_cluster_epoch != c.cluster->bar_phase;
  if (t.home != &c) return cluster_since;
  return b.init_thread == t.id || b.init_epoch != c.bar_epoch || cluster_since;
}
// A program that ends normally says its notes at exit (a failed launch, with its verdict:
// Verdict::print).
struct ExitNotes {
  ~ExitNotes() { printNotes(stderr); }
} g_exit_notes;

// What every use of a barrier's address checks first: shared memory, 8-byte aligned.
void checkBarAddr(uint32_t addr, SrcLoc loc, const char *op) {
  checkShared(addr, 8, loc);
  if (addr % 8)
    fail("ub/misaligned", loc, std::string(op) + " on a shared address that is not 8-byte aligned");
}

MBarrier &getBar(uint32_t addr, SrcLoc loc, const char *op, bool by_thread = true) {
  checkBarAddr(addr, loc, op);
  Cta &c = cta();
  auto it = c.mbars.find(addr);
  if (it == c.mbars.end() || it->second.uninit) {
    // Which use before init: the program has no init a thread could reach ("absent"); it has one
    // but this CTA ran no init at all ("unrun": docs/bugs.md's init in a role branch thread 0
    // does not take); or other inits ran, not this barrier's yet ("other"). A reduction of the
    // second kept the same "ub/use-before-init" once the init block was gone (327 ->
    // 18 lines with no init in them): the failure, without the cause a report should show.
    std::string mark, why;
    if (int sites = g_init_sites.load(); sites >= 0) {
      mark = sites == 0 ? "absent" : c.inits_run == 0 ? "unrun" : "other";
      why = sites == 0 ? "; the program has no mbarrier.init"
            : c.inits_run == 0
                ? "; the program's mbarrier.init (" + std::to_string(sites) +
                      (sites == 1 ? " site" : " sites") + ") never ran in this CTA"
                : "; other barriers' inits ran (" + std::to_string(c.inits_run) + ")";
    }
    fail("ub/use-before-init", loc,
         std::string("mbarrier used before init: ") + op + " on " + smemName(addr) +
             ", which no mbarrier.init set up" + why,
         mark.empty() ? "" : ",init=" + mark);
  }
  // Used by a thread that no CTA barrier has ordered after the init (another thread's): a race
  // the emulator's schedule hides (it ran the init first). Counted, not failed: a kernel may have
  // it from the start (a __syncthreads moved into a role branch), and its failure is then the
  // hang; the count goes into the failure's signature (+mbarrier-init-unordered), so a reduction
  // cannot drop the __syncthreads after the inits (a reduction of the GEMM hang did).
  if (by_thread && !orderedAfterInit(it->second, c)) ++g_init_unordered;
  return it->second;
}

// The barrier a wait reads. One that no mbarrier.init set up reads, on the H200, as the zeroed
// shared word it usually is (bench/probes/s16_uninit): try_wait.parity 0 returns
// false for ever and traps nothing, so a lone try_wait passes and a wait loop hangs (a word of
// ones traps instead). Judged as a use before init, a reduction of pipeline_init_in_role (its
// crash is the producer's arrive.expect_tx, which traps) kept one consumer try_wait that passed
// on the GPU. So a wait on it sees phase 0 of a barrier no one can complete; it is
// counted (+mbarrier-wait-uninit in the signature) and mbarrier.init turns it into a barrier.
MBarrier &waitBar(uint32_t addr, SrcLoc loc, const char *op) {
  checkBarAddr(addr, loc, op);
  Cta &c = cta();
  auto it = c.mbars.find(addr);
  if (it != c.mbars.end() && !it->second.uninit) return getBar(addr, loc, op);
  ++g_wait_uninit;
  MBarrier &b = c.mbars[addr];
  b.addr = addr;
  b.uninit = true;
  return b;
}

std::string state(const MBarrier &b) {
  std::ostringstream o;
  o << smemName(b.addr) << " (phase " << b.phase << ", pending " << b.pending << " of "
    << b.expected << ", tx " << b.tx << ")";
  return o.str();
}

void maybeComplete(MBarrier &b) {
  if (b.pending == 0 && b.tx == 0) {
    b.phase++;
    if (b.dep_arrival && b.dep_phase == ~0ull) b.dep_phase = b.phase;
    b.dep_arrival = false;
    b.pending = b.expected;
    b.delivered = 0;
    traceOp("mbarrier.phase", b.addr, b.phase);
    wakeAll(b.waiters);
  }
}

void arrive(MBarrier &b, uint32_t count, SrcLoc loc, const char *op) {
  if ((int64_t)count > b.pending)
    fail("ub/over-arrival", loc,
         std::string(op) + " on mbarrier " + state(b) +
             ": more arrivals than the phase's pending count");
  // The lanes of a warp that reach one arrive instruction together arrive as one operation on the
  // GPU: more of them than the phase's pending count is a launch failure there ("unspecified
  // launch failure" on the H200: 127 producer threads, 4 warps, each arriving
  // once on a count-1 barrier), where arriving one thread after another here would complete a
  // phase per lane and hang. So an arrival from the warp, site and iteration whose arrival just
  // completed the phase is an over-arrival too.
  Thread &t = self();
  MBarrier::Arrival me{t.home ? t.home->rank : 0, t.warp, loc.file, loc.line,
                       t.arrive_iters[{loc.file, loc.line}]++};
  if (b.phase > 0 && b.pending == (int64_t)b.expected && me == b.completer)
    fail("ub/over-arrival", loc,
         std::string(op) + " on mbarrier " + state(b) + ": lanes of warp " +
             std::to_string(t.warp) +
             " arrive here together, more of them than the phase's pending count");
  b.pending -= count;
  if (b.pending == 0 && b.tx == 0) b.completer = me;
  if (t.dep_known) b.dep_arrival = true;
  maybeComplete(b);
}

void expectTx(MBarrier &b, uint32_t bytes, SrcLoc loc) {
  if (b.tx + (int64_t)bytes > kTxMax)
    fail("ub/tx-overflow", loc,
         "expect_tx of " + std::to_string(bytes) + " bytes on mbarrier " + state(b) +
             " exceeds the tx-count range 2^20-1");
  b.tx += bytes;
}

bool parityDone(const MBarrier &b, uint32_t parity) { return (b.phase & 1) != (parity & 1); }

void countSite(SrcLoc loc) { self().site_iters[{loc.file, loc.line}]++; }
}  // namespace

void mbarrier_init(uint32_t addr, uint32_t count, SrcLoc loc) {
  preempt();
  checkBarAddr(addr, loc, "mbarrier.init");
  if (count == 0 || count > (uint32_t)kTxMax)
    fail("ub/mbarrier-init-count", loc,
         "mbarrier.init count " + std::to_string(count) + " is outside [1, 2^20-1]");
  Cta &c = cta();
  // Two threads initialising one mbarrier with no CTA barrier between them race: mbarrier.init is a
  // plain write of the object, and on the GPU the later init lands wherever the other thread's
  // arrivals and waits happen to be (a reduction that dropped the init's `threadIdx.x == 0` guard
  // hung here and passed on the H200). Re-initialising by the same thread is ordered.
  if (auto it = c.mbars.find(addr); it != c.mbars.end() && !orderedAfterInit(it->second, c))
    fail("ub/mbarrier-init-race", loc,
         "mbarrier.init on " + smemName(addr) + " by thread " + std::to_string(self().id) +
             " races with thread " + std::to_string(it->second.init_thread) + "'s init at line " +
             std::to_string(it->second.init_loc.line) + ": no barrier orders them");
  MBarrier &b = c.mbars[addr];  // a word read before (uninit) keeps its waiters
  b.uninit = false;
  c.inits_run++;
  b.init_thread = self().id;
  b.init_epoch = c.bar_epoch;
  b.init_cluster_epoch = c.cluster ? c.cluster->bar_phase : 0;
  b.addr = addr;
  b.expected = count;
  b.pending = count;
  b.tx = 0;
  b.delivered = 0;
  b.phase = 0;
  b.completer = {};
  b.init_loc = loc;
  b.dep_arrival = false;
  b.dep_phase = ~0ull;
  traceOp("mbarrier.init", addr, count);
}

void mbarrier_inval(uint32_t addr, SrcLoc loc) {
  preempt();
  getBar(addr, loc, "mbarrier.inval");
  cta().mbars.erase(addr);
}

uint64_t mbarrier_arrive(uint32_t addr, SrcLoc loc, uint32_t count) {
  preempt();
  MBarrier &b = getBar(addr, loc, "mbarrier.arrive");
  uint64_t token = b.phase;
  traceOp("mbarrier.arrive", addr, count);
  arrive(b, count, loc, "mbarrier.arrive");
  return token;
}

uint64_t mbarrier_arrive_expect_tx(uint32_t addr, uint32_t tx, SrcLoc loc) {
  preempt();
  MBarrier &b = getBar(addr, loc, "mbarrier.arrive.expect_tx");
  uint64_t token = b.phase;
  traceOp("mbarrier.arrive.expect_tx", addr, tx);
  expectTx(b, tx, loc);
  arrive(b, 1, loc, "mbarrier.arrive.expect_tx");
  return token;
}

uint64_t mbarrier_arrive_drop(uint32_t addr, SrcLoc loc, uint32_t count) {
  preempt();
  MBarrier &b = getBar(addr, loc, "mbarrier.arrive_drop");
  uint64_t token = b.phase;
  if (count > b.expected)
    fail("ub/over-arrival", loc,
         "mbarrier.arrive_drop below an expected count of 0 on " + state(b));
  b.expected -= count;
  arrive(b, count, loc, "mbarrier.arrive_drop");
  return token;
}

void mbarrier_expect_tx(uint32_t addr, uint32_t tx, SrcLoc loc) {
  preempt();
  MBarrier &b = getBar(addr, loc, "mbarrier.expect_tx");
  expectTx(b, tx, loc);
}

void mbarrier_complete_tx(uint32_t addr, uint32_t tx, SrcLoc loc, bool dep_known) {
  // On a barrier no init set up, the bytes land and the word is left as it was (the H200 traps
  // nothing there: bench/probes/s16_uninit, modes bulk and bulkwait).
  if (auto it = cta().mbars.find(addr); it == cta().mbars.end() || it->second.uninit) {
    checkBarAddr(addr, loc, "complete_tx");
    ++g_tx_uninit;
    traceOp("mbarrier.complete_tx", addr, tx);
    return;
  }
  MBarrier &b = getBar(addr, loc, "complete_tx", false);  // the copy engine's, not a thread's
  if (b.tx - (int64_t)tx < -kTxMax)
    fail("ub/tx-overflow", loc,
         "complete_tx of " + std::to_string(tx) + " bytes on mbarrier " + state(b) +
             " leaves the tx-count below -(2^20-1)");
  b.tx -= tx;
  b.delivered += tx;
  traceOp("mbarrier.complete_tx", addr, tx);
  if (b.pending == 0 && b.tx == 0) b.completer = {};  // the bytes, not an arrival, complete it
  if (dep_known) b.dep_arrival = true;
  maybeComplete(b);
}

uint64_t mbarrier_arrive_async(uint32_t addr, SrcLoc loc, bool dep_known, const char *who) {
  MBarrier &b = getBar(addr, loc, who, false);
  if (b.pending < 1)
    fail("ub/over-arrival", loc,
         std::string(who) + " on mbarrier " + state(b) +
             ": more arrivals than the phase's pending count");
  const uint64_t phase = b.phase;
  traceOp("mbarrier.arrive.async", addr, 1);
  b.pending -= 1;
  if (b.pending == 0 && b.tx == 0) b.completer = {};
  if (dep_known) b.dep_arrival = true;
  maybeComplete(b);
  return phase;
}

void mbarrier_pending_inc(uint32_t addr, SrcLoc loc, const char *op) {
  MBarrier &b = getBar(addr, loc, op);
  traceOp("mbarrier.pending_inc", addr, 1);
  b.pending += 1;
}

namespace {
// A failed test_wait returns false. The second failed poll in a row of the same unchanged
// barrier, with no other emulated operation in between, is a spin: park until it changes.
bool testWait(uint32_t addr, SrcLoc loc, const char *op, bool done_now, uint32_t parity) {
  Thread &t = self();
  MBarrier &b = cta().mbars[addr];  // the caller's waitBar found or made it
  if (done_now) {
    uint64_t &seen = t.seen_phase[addr];
    seen = std::max(seen, b.phase);
    if (b.dep_phase <= b.phase) t.dep_known = true;
    t.poll_addr = ~0u;
    countSite(loc);
    return true;
  }
  bool spin = t.poll_addr == addr && t.poll_phase == b.phase && t.poll_ops + 1 == t.ops;
  t.poll_addr = addr;
  t.poll_phase = b.phase;
  if (spin) {
    b.waiters.push_back(&t);
    WaitInfo w;
    w.kind = WaitKind::MBarrier;
    w.loc = loc;
    w.addr = addr;
    w.parity = parity;
    // (a try_wait loop waits this way on every kernel: its evidence reads as a plain wait)
    w.what = std::strstr(op, "try_wait") ? "" : "(test_wait spin)";
    park(w);
  }
  t.poll_ops = t.ops;
  return false;
}
}  // namespace

bool mbarrier_test_wait_parity(uint32_t addr, uint32_t parity, SrcLoc loc) {
  preempt();
  MBarrier &b = waitBar(addr, loc, "mbarrier.test_wait.parity");
  return testWait(addr, loc, "mbarrier.test_wait.parity", parityDone(b, parity), parity & 1);
}

bool mbarrier_test_wait(uint32_t addr, uint64_t token, SrcLoc loc) {
  preempt();
  MBarrier &b = waitBar(addr, loc, "mbarrier.test_wait");
  return testWait(addr, loc, "mbarrier.test_wait", b.phase > token, (uint32_t)(token & 1));
}

// try_wait may suspend the thread, but only up to a time limit, after which it returns false: it
// is a test_wait that polls for a while. Parking until the phase completed (as this emulator did)
// turned a lone try_wait, no loop around it, into a hang: a reduction of the GEMM hang kept one
// and passed on the H200. Same model as test_wait: a failed poll returns false; a spin on it
// parks until the barrier changes (a deadlock the scheduler sees when nothing else can run).
bool mbarrier_try_wait_parity(uint32_t addr, uint32_t parity, SrcLoc loc) {
  preempt();
  MBarrier &b = waitBar(addr, loc, "mbarrier.try_wait.parity");
  return testWait(addr, loc, "mbarrier.try_wait.parity", parityDone(b, parity), parity & 1);
}

bool mbarrier_try_wait(uint32_t addr, uint64_t token, SrcLoc loc) {
  preempt();
  MBarrier &b = waitBar(addr, loc, "mbarrier.try_wait");
  return testWait(addr, loc, "mbarrier.try_wait", b.phase > token, (uint32_t)(token & 1));
}

void dsmem_write(int rank, SrcLoc loc) {
  Thread &t = self();
  if (t.dsmem_unreleased.size() <= (size_t)rank) t.dsmem_unreleased.resize((size_t)rank + 1);
  if (t.dsmem_unreleased[(size_t)rank].line == 0) t.dsmem_unreleased[(size_t)rank] = loc;
}

void cluster_release() { self().dsmem_unreleased.clear(); }

void remote_arrive(int rank, bool cluster_scope, SrcLoc loc, SrcLoc caller) {
  Thread &t = self();
  if (cluster_scope) {
    t.dsmem_unreleased.clear();
    return;
  }
  if ((size_t)rank >= t.dsmem_unreleased.size() || t.dsmem_unreleased[(size_t)rank].line == 0)
    return;
  const std::string peer = "CTA rank " + std::to_string(rank) + " of the cluster";
  const std::string store = siteOf(t.dsmem_unreleased[(size_t)rank]);
  fail("ub/remote-arrive-cta-scope", loc,
       "the mbarrier.arrive at " + siteOf(caller) + " on a barrier of " + peer +
           " releases at .cta scope (as an arrive that names no scope does), which orders this "
           "thread's writes for its own CTA's threads only; its store into the shared memory of " +
           peer + " at " + store +
           ", which no release at cluster scope has covered since, is not ordered before what "
           "the peer's threads read once they see the phase complete: the arrive needs "
           ".release.cluster");
}

void fence(const char *which, SrcLoc loc) {
  preempt();
  Cta &c = cta();
  if (c.fences.size() < 4096) c.fences.push_back(std::string(which) + "@" + siteOf(loc));
  // fence.proxy.async (all state spaces, or shared::cta / shared::cluster): what generic stores
  // wrote to shared memory so far is what the async proxy sees (the CTA's, not only this thread's:
  // right for stores a barrier orders before the fence; a store that nothing orders before it but
  // that the schedule ran first is taken too, emu/README.md).
  const std::string w = which;
  if (w.rfind("proxy.async", 0) == 0 && w.find("global") == std::string::npos)
    std::memcpy(c.async_view.data(), c.smem, c.smem_bytes);
  traceOp("fence", 0, 0);
}

}  // namespace wsemu::ptx

namespace wsemu {

// The eager policy lands a load's bytes at issue; the GPU lands them later. A read of them before
// the reader knows the load's barrier phase completed (no wait of its own, no CTA barrier after
// one) is a race the eager schedule hides: on the H200 a reduction of gemm_k_loop_short dropped
// the consumers' wait on `full`, its wgmma read the tiles anyway, and the product was right on the
// emulator and not on the GPU. The late policies see it, but the original
// itself fails otherwise under them; so it is counted under every policy and goes into the
// signature: +smem-read-unwaited when the reader never waited on (nor learned of) that barrier at
// all, as there; +smem-read-before-tx when it knows an earlier phase only, as when a consumer loop
// one K tile short falls out of step with its producer and reads a stage being refilled (the
// injected bug itself: gemm_k_loop_short has it from the start).
std::shared_ptr<std::vector<uint8_t>> noteTxWrite(uint32_t dst, uint64_t bytes, uint32_t bar) {
  Cta &c = cta();
  uint64_t phase = 0;
  if (auto it = c.mbars.find(bar); it != c.mbars.end()) phase = it->second.phase;
  std::erase_if(c.tx_writes,
                [&](const Cta::TxWrite &w) { return w.begin >= dst && w.end <= dst + bytes; });
  auto before = std::make_shared<std::vector<uint8_t>>();
  if (c.tx_writes.size() < 4096)
    c.tx_writes.push_back({dst, (uint32_t)(dst + bytes), bar, phase, before});
  return before;
}

bool readBeforeLanded(const Thread &t, uint32_t lo, uint32_t hi) {
  return readBeforeLandedKnowing(t.seen_phase, lo, hi);
}

bool readBeforeLandedKnowing(const std::unordered_map<uint32_t, uint64_t> &known, uint32_t lo,
                             uint32_t hi) {
  for (auto &w : cta().tx_writes) {
    if (w.end <= lo || hi <= w.begin) continue;
    auto it = known.find(w.bar);
    if (it == known.end()) {
      ++ptx::g_read_unwaited;
      return true;
    }
    if (it->second <= w.phase) {
      ++ptx::g_read_unlanded;
      return true;
    }
  }
  return false;
}

}  // namespace wsemu
