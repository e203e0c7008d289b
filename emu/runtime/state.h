// Internal state of one emulated CTA: threads, mbarriers, named barriers, collectives and
// pending async operations. Shared by the runtime's .cpp files; a translated kernel never
// includes it.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "emu/runtime/core.h"
#include "emu/runtime/fiber.h"

namespace wsemu {

struct Thread;
struct Cta;
struct Cluster;
struct Tmem;
struct GridDep;

enum class WaitKind { None, MBarrier, NamedBarrier, Collective, Async, ClusterBarrier, GridDep };

struct WaitInfo {
  WaitKind kind = WaitKind::None;
  SrcLoc loc;
  uint32_t addr = 0;    // mbarrier shared address
  uint32_t parity = 0;  // parity waited for (mbarrier)
  int bar_id = -1;      // named barrier
  struct Collective *coll = nullptr;
  const char *what = "";
};

struct MBarrier {
  uint32_t addr = 0;
  uint32_t expected = 0;  // arrivals per phase (init count, lowered by arrive.drop)
  int64_t pending = 0;    // arrivals still missing in the current phase
  int64_t tx = 0;         // tx-count: bytes expected minus bytes delivered
  int64_t delivered = 0;  // bytes complete_tx delivered in the current phase
  // No mbarrier.init set it up: a wait read it as the GPU reads a zeroed shared word (phase 0,
  // never completing); an arrive on it fails; mbarrier.init makes it a barrier (mbarrier.cpp).
  bool uninit = false;
  uint64_t phase = 0;  // completed phases; the current phase's parity is phase & 1
  SrcLoc init_loc;
  int init_thread = -1;             // the thread whose mbarrier.init set it up
  uint64_t init_epoch = 0;          // the CTA's barrier epoch at that init
  uint64_t init_cluster_epoch = 0;  // the cluster's barrier.cluster epoch at that init
  // Programmatic dependent launch (pdl.cpp): an arrival of the current phase by a thread that knew
  // the grids its grid depends on had completed (Thread::dep_known), and the first completed phase
  // count with such an arrival (~0: none). A wait that sees that phase complete knows it too: the
  // arrival happens before the phase completes, and the wait's return after.
  bool dep_arrival = false;
  uint64_t dep_phase = ~0ull;
  std::vector<Thread *> waiters;
  // The arrival that completed the last phase: its warp, site and how many arrivals its thread had
  // made there before (the lanes of one warp at one arrive instruction, converged, share these).
  struct Arrival {
    int cta = 0;  // the arriving thread's CTA (its rank in the cluster): a remote arrive differs
    int warp = -1;
    const char *file = nullptr;
    int line = 0;
    uint64_t iter = 0;
    bool operator==(const Arrival &) const = default;
  } completer;
};

struct NamedBarrier {
  int expected = 0;  // threads (warp-granular) of the current generation; 0 = not started
  int arrived = 0;   // warp-granular arrivals
  uint64_t generation = 0;
  std::vector<int> warp_arrived;  // threads of each warp arrived in this generation
  std::vector<char> warp_counted;
  std::vector<Thread *> waiters;
  bool cta_wide = false;  // no count: every (live, with exited_warps_arrive) warp of the CTA
  SrcLoc first_loc;
};

// A rendezvous of a warp (mask) or a warpgroup: elect, shfl, vote, ldmatrix, wgmma, setmaxnreg.
struct Collective {
  std::string kind;
  int scope = 0;  // warp or warpgroup index
  int base = 0;   // thread id of slot 0
  int expected = 0;
  int arrived = 0;
  uint64_t mask = 0;  // the slots that take part (a warp's member mask); 0: all
  bool done = false;
  SrcLoc loc;
  std::vector<uint64_t> in, in2, out;  // per slot (lane or warpgroup thread)
  std::vector<char> present;
  std::vector<void *> ptrs;  // per slot (wgmma: the thread's argument block)
  std::function<void(Collective &)> complete;
  std::vector<Thread *> waiters;
  std::shared_ptr<void> result;  // what the completion made (wgmma: the op)
};

struct AsyncOp {
  uint64_t seq = 0;
  const char *kind = "";
  SrcLoc loc;
  int issuer = -1;
  int chain = -1;  // ops with the same chain (a warpgroup's wgmmas) complete in issue order
  bool read_done = false, done = false;
  // A bulk store: a cp.async.bulk.wait_group(.read) of its thread covered it. What the thread
  // knows, not what the scheduler did: under the eager policy a store is done at issue, and a
  // thread that never waits for it is still wrong (the CTA may exit before the read).
  bool waited = false;
  // A bulk store: once it has read shared memory it needs nothing of the CTA, and its global
  // writes land after the CTA exits (CUTLASS ends a kernel with wait_group.read 0).
  bool store = false;
  // A tcgen05.mma or tcgen05.commit: one still in flight when every thread of the CTA has exited
  // completes then (its tensor-memory writes and its barrier arrival reach no thread). Whether a
  // thread was wrong to leave it is judged where a thread reads what it writes (tcgen05.cpp).
  bool tensor = false;
  // An Ampere cp.async or its mbarrier arrive: one still in flight when every thread of the CTA
  // has exited completes then, with no verdict (no thread is left to read what it writes).
  bool thread_copy = false;
  virtual ~AsyncOp() = default;
  virtual void read() {}        // snapshot the sources
  virtual void complete() = 0;  // write the destinations, signal
};
using AsyncPtr = std::shared_ptr<AsyncOp>;

struct Thread {
  int id = 0;  // linear thread index in the CTA
  Dim3 tid;
  Cta *home = nullptr;  // its CTA
  // The CTA current while it runs: its own, or, inside a CtaScope, a peer CTA of its cluster whose
  // shared memory it reaches (a remote mbarrier arrive, a DSMEM access, a multicast's copy). The
  // scheduler resumes the thread with this CTA current, so a preemption inside the scope is safe.
  Cta *cur = nullptr;
  // barrier.cluster: the cluster barrier phase this thread arrived in and has not waited for yet
  // (~0: none).
  uint64_t cbar_arrived = ~0ull;
  int warp = 0, lane = 0, warpgroup = 0;
  enum State { Runnable, Blocked, Exited } state = Runnable;
  bool queued = false;
  WaitInfo wait;
  uint64_t parked_at = 0;
  std::map<std::pair<const char *, int>, uint64_t> site_iters;    // waits completed per site
  std::map<std::pair<const char *, int>, uint64_t> arrive_iters;  // mbarrier arrivals made per site
  // mbarrier -> its completed phases this thread knows of: from a wait that returned true, or from
  // another thread at a CTA barrier both took part in (readBeforeLanded).
  std::unordered_map<uint32_t, uint64_t> seen_phase;
  // Programmatic dependent launch (pdl.cpp): the thread is ordered after the completion of the
  // grids its grid depends on: by its own griddepcontrol.wait, or through a barrier or an mbarrier
  // phase from a thread that was. Before that its global accesses race with theirs.
  bool dep_known = false;
  // Distributed shared memory (mbarrier.cpp, the remote-arrive rule): per CTA rank of the cluster,
  // this thread's first store, atom or red into that peer CTA's shared memory that no release of
  // the thread at cluster scope (or wider) has covered since; line 0: none.
  std::vector<SrcLoc> dsmem_unreleased;
  // tcgen05 (tcgen05.cpp). The completed mbarrier phases this thread's tcgen05 operations are
  // ordered after: seen_phase as it was at the thread's last tcgen05.fence::after_thread_sync.
  std::unordered_map<uint32_t, uint64_t> tc_seen;
  uint64_t tc_issued = 0;  // tcgen05.mmas and cps this thread issued (a commit tracks them)
  // Per warp of the CTA: how many of that warp's tcgen05.lds this thread knows happened before
  // it (its own warp's from the ld's rendezvous, the others' through CTA barriers).
  std::vector<uint64_t> tmem_reads_seen;
  // tcgen05.lds not waited for yet (tcgen05.wait::ld writes the registers under the late
  // policies; ReadsLate reads tensor memory there too).
  struct TcLd {
    std::vector<uint64_t *> dst;
    std::vector<uint32_t> values;
    uint32_t taddr = 0;
    bool read = false;
    SrcLoc loc;
  };
  std::vector<TcLd> tc_lds;
  // tcgen05.st: the warp's source registers while its rendezvous is open (the completing lane
  // reads every lane's), and the cells this thread's stores wrote that no tcgen05.wait::st of it
  // has covered yet: (cell index, value), `landed` once the value is in tensor memory (at issue
  // under the eager policy, at the wait under the late ones).
  std::vector<uint32_t> tc_st_src;
  struct TcSt {
    uint32_t cell = 0, value = 0;
    bool landed = false;
  };
  std::vector<TcSt> tc_sts;
  Fiber fiber;
  // cp.async.bulk groups and wgmma groups, per thread
  std::vector<AsyncPtr> bulk_open;
  std::deque<std::vector<AsyncPtr>> bulk_groups;
  std::vector<AsyncPtr> wg_open;
  std::deque<std::vector<AsyncPtr>> wg_groups;
  // Ampere cp.async: the copies not committed yet, and the committed groups not yet waited for.
  std::vector<AsyncPtr> cpa_open;
  std::deque<std::vector<AsyncPtr>> cpa_groups;
  // A wgmma.fence since the thread's start, or since its last wgmma.wait_group that gave registers
  // back to it (after which it may read or write them): a wgmma without one is ub/wgmma-unfenced,
  // unless every accumulator register it names is still an in-flight wgmma's (a chain of wgmmas
  // on one accumulator needs no fence between them).
  bool wg_fenced = false;
  // This thread's accumulator registers that issued, not yet retired wgmmas name, with how many.
  std::unordered_map<const float *, int> wg_inflight;
  struct Param {  // a by-value kernel parameter of class type in this thread's frame (kernelParam)
    const char *lo, *hi, *name;
    bool grid_constant;
  };
  std::vector<Param> params;
  std::vector<SrcLoc> calls;  // CallSite frames: the user's call chain to the current op
  uint64_t ops = 0;           // emulated ops this thread executed
  uint64_t poll_ops = 0;      // ops at the last failed test_wait ...
  uint32_t poll_addr = ~0u;   // ... on this barrier ...
  uint64_t poll_phase = 0;    // ... in this phase
};

struct Cta {
  Config cfg;
  Dim3 grid, block, block_idx;
  int nthreads = 0, nwarps = 0;
  std::vector<std::unique_ptr<Thread>> threads;
  std::vector<int> warp_live;  // non-exited threads per warp
  std::vector<int> warp_size;  // threads per warp (the last warp may be partial)
  // shared memory: one arena, dynamic part first
  uint8_t *smem = nullptr;
  // Shared memory as the async proxy (TMA, bulk copies) last saw it: the arena at the CTA's start,
  // copied again at each fence.proxy.async (of shared memory), written by TMA and bulk loads.
  // A TMA or bulk store, or a wgmma, whose source differs from it reads from here (asyncView).
  // Set up with the arena (device.cpp, setupSharedArena).
  std::vector<uint8_t> async_view;
  size_t smem_bytes = 0, dyn_bytes = 0, static_used = 0, static_cap = 0;
  std::map<std::string, size_t> static_offsets;
  struct Sym {
    std::string name;
    size_t bytes, elem;
  };
  std::map<uint32_t, Sym> smem_names;
  std::unordered_map<uint32_t, MBarrier> mbars;
  NamedBarrier bars[16];
  uint64_t inits_run = 0;  // mbarrier.inits this CTA executed
  uint64_t bar_epoch =
      0;  // completed CTA-wide bar.syncs: what orders an mbarrier's init before other threads' use
  std::map<std::string, std::shared_ptr<Collective>> open_colls;
  std::vector<AsyncPtr> pending;
  // Shared bytes a TMA (or bulk) load writes, with the barrier it signals and that barrier's phase
  // at issue: the bytes are there for a thread once it knows that phase completed.
  struct TxWrite {
    uint32_t begin = 0, end = 0, bar = 0;
    uint64_t phase = 0;
    // The bytes of [begin, end) as they were just before the load landed (empty until then): what
    // a tcgen05.mma that is not ordered after the load's phase may read (tcgen05.cpp).
    std::shared_ptr<std::vector<uint8_t>> before;
  };
  std::vector<TxWrite> tx_writes;
  Cluster *cluster = nullptr;
  int rank = 0;        // %cluster_ctarank
  Dim3 cluster_ctaid;  // %cluster_ctaid
  std::mt19937_64 rng;
  uint64_t step = 0, op_seq = 0, ops = 0, switches = 0;
  std::vector<int> maxnreg;  // per warpgroup, 0 = not set
  std::vector<std::string> fences;
  // wgmma results under the late policies: computed, not yet visible in the owning thread's
  // registers (a thread sees them at its wgmma.wait_group).
  std::unordered_map<float *, float> acc_overlay;
  // Tensor memory and its allocations (tcgen05.cpp); made at the CTA's first tcgen05.alloc.
  std::unique_ptr<Tmem> tmem;
  // Its grid's part in a programmatic dependent launch (pdl.h), or null for a launch on its own;
  // `dep_released`: the CTA executed griddepcontrol.launch_dependents or has exited.
  GridDep *dep = nullptr;
  bool dep_released = false;
  Verdict *verdict = nullptr;
  bool failed = false;
};

// A CTA's tensor memory (PTX ISA, "Tensor Memory"): 128 lanes x 512 columns of 32-bit cells,
// cell (lane, column) at cur[lane * kTmemCols + column]; an address is lane << 16 | column.
constexpr uint32_t kTmemLanes = 128, kTmemCols = 512;
struct Tmem {
  std::vector<uint32_t> cur;
  // What a read that is not ordered after the last write of a cell may see: the cell's value
  // before that write, and the write (an index into mmas, 0: none since the allocation).
  std::vector<uint32_t> prev, writer;
  struct Alloc {
    uint32_t col = 0, ncols = 0;
    int warp = 0;
    SrcLoc loc;
  };
  std::vector<Alloc> allocs;
  std::vector<Alloc> freed;  // deallocated, not allocated again since (warp, loc: the dealloc's)
  bool relinquished = false;
  SrcLoc relinquish_loc;
  std::vector<Thread *> alloc_waiters;  // a tcgen05.alloc waiting for free columns
  struct Mma {
    int issuer = 0;
    uint64_t n = 0;  // the issuer's tc_issued count with it
  };
  std::vector<Mma> mmas;  // tcgen05.mma and tcgen05.cp, each thread's in issue order; 0 unused
  // Per cell: 1 + the id of the thread whose tcgen05.st wrote it and that has not waited for the
  // store (tcgen05.wait::st) yet; 0: none.
  std::vector<uint32_t> st_pending;
  // A tcgen05.commit: the issuer's mmas up to `upto` are complete once its arrival, which counted
  // toward `phase` of the barrier at `bar`, is done.
  struct Commit {
    int issuer = 0;
    uint64_t upto = 0;
    uint32_t bar = 0;
    uint64_t phase = 0;
    bool arrived = false;
  };
  std::vector<Commit> commits;
  // Per warp and column: how many tcgen05.lds that warp had made when it last read the column.
  std::vector<uint64_t> last_read;  // nwarps x kTmemCols
  std::vector<uint64_t> reads;      // per warp: its tcgen05.lds
};

// A thread-block cluster (%cluster_nctarank CTAs) runs as one: the threads of all its CTAs in one
// run queue, so a thread of one CTA may wake a thread of another (a remote mbarrier arrive,
// barrier.cluster). A launch without cluster dimensions is clusters of one CTA.
struct Cluster {
  Dim3 dims;                 // %cluster_nctaid
  Dim3 id;                   // %clusterid
  Dim3 nclusters;            // %nclusterid
  bool is_explicit = false;  // %is_explicit_cluster: launched with cluster dimensions
  std::vector<Cta *> ctas;   // by rank
  std::deque<Thread *> runq;
  // barrier.cluster: threads arrived in the current phase, completed phases, the waiters.
  int bar_arrived = 0;
  uint64_t bar_phase = 0;
  std::vector<Thread *> bar_waiters;
  SrcLoc bar_first_loc;
};

// Shared::cluster addresses (emu/runtime/device.cpp): a 32-bit shared::cta window address of CTA
// `rank` of the cluster, with rank + 1 in bits 24-28 (kClusterRankShift). 0 there means the
// executing CTA's own: a shared::cta address is a shared::cluster address of its own CTA, as in
// the PTX ISA. The window of one CTA stays below 2^24 (its arena is at most ~300 KiB).
constexpr uint32_t kClusterRankShift = 24;
constexpr uint32_t kClusterLocalMask = (1u << kClusterRankShift) - 1;
// The CTA of the current cluster that a shared::cluster address names, and its shared::cta
// address there; a rank outside the cluster is ub/out-of-bounds-shared at `loc`.
Cta &clusterTarget(uint32_t addr, uint32_t *local, SrcLoc loc);
// The shared::cluster address of a generic pointer into the shared memory of a CTA of the
// cluster (its own included: then with its own rank); UB if it is in none.
uint32_t clusterSmemAddr(const void *p, SrcLoc loc);
// The CTA of the current cluster whose arena holds p, or null.
Cta *clusterCtaOf(const void *p);
inline uint32_t clusterEncode(int rank, uint32_t local) {
  return ((uint32_t)(rank + 1) << kClusterRankShift) | (local & kClusterLocalMask);
}

// Makes `c` the current CTA until the scope ends (for the running thread too: Thread::cur).
Cta *swapCta(Cta *c);
struct CtaScope {
  Cta *prev;
  explicit CtaScope(Cta &c) : prev(swapCta(&c)) {}
  ~CtaScope() { swapCta(prev); }
  CtaScope(const CtaScope &) = delete;
  CtaScope &operator=(const CtaScope &) = delete;
};

// barrier.cluster (sync.cpp): every non-exited thread of every CTA of the cluster.
void clusterBarrierExit(Thread &t);

// The scheduler side (fiber.cpp).
Cta &cta();
Thread &self();
bool inKernel();
void park(const WaitInfo &w);  // block the current thread until someone wakes it
void wake(Thread *t);
void wakeAll(std::vector<Thread *> &ws);
void preempt();  // a preemption point (Order::Random), counts ops
void traceOp(const char *what, uint64_t a = 0, uint64_t b = 0);
// `mark` is added to the signature (",init=absent"): a distinction of the failure that its site
// and role do not carry.
[[noreturn]] void fail(const std::string &detail, SrcLoc loc, const std::string &message,
                       const std::string &mark = "");
// fail(), for a verdict that names another thread than the running one, in block `block` (a race
// found at its second access, named by the access the rule is about).
[[noreturn]] void failAs(const std::string &detail, const std::string &signature,
                         const std::string &message, Dim3 block);
void onThreadExit(Thread &t);   // barriers: a warp whose live threads all arrived counts
void issueAsync(AsyncPtr op);   // policy: eager completes now, else pending
void finishAsync(AsyncOp &op);  // read if needed, complete, drop from pending
void finishAsyncRead(AsyncOp &op);
std::string smemName(uint32_t addr);
std::string siteOf(SrcLoc loc);  // basename:line
std::string describeWait(const Thread &t);
// How far the phase a parked thread waits on had got, for the hang's signature: "none" (no
// arrival and no transaction byte yet), "partial" (some arrivals, not all), "tx" (every arrival,
// bytes still missing); "" for a wait that is not on an mbarrier.
std::string waitArrivals(const Thread &t);
// A load's bytes in [lo, hi) that thread `t` reads before it knows their barrier phase completed
// (counted for the notes smem-read-unwaited and smem-read-before-tx); noteTxWrite records a load's
// destination at issue.
bool readBeforeLanded(const Thread &t, uint32_t lo, uint32_t hi);
// The async proxy's view of the shared bytes at `addr` (Cta::async_view, tma.cpp): proxyWrite is a
// TMA or bulk load landing; proxySees says whether the view of `n` bytes equals the arena (no
// generic store changed them since the last fence.proxy.async).
uint8_t *asyncView(uint32_t addr);
void proxyWrite(uint32_t addr, const void *p, size_t n);
bool proxySees(uint32_t addr, size_t n);  // always true with Config::coherent_proxy (tma.cpp)
// Returns where the load's `before` bytes go (Cta::TxWrite), to be filled as it lands.
std::shared_ptr<std::vector<uint8_t>> noteTxWrite(uint32_t dst, uint64_t bytes, uint32_t bar);
// The same question asked with `known` for what the reader knows of completed phases (a
// tcgen05.mma asks with its thread's tc_seen); counted as readBeforeLanded counts.
bool readBeforeLandedKnowing(const std::unordered_map<uint32_t, uint64_t> &known, uint32_t lo,
                             uint32_t hi);
// tcgen05 (tcgen05.cpp): a lane of a warp that has a tcgen05 warp collective open exits; and,
// once every thread of the CTA has exited, the tensor memory still allocated (both UB).
void tcgen05ThreadExit(Thread &t);
void tcgen05CtaExit(Cta &c);
// Join the open rendezvous `kind` of a thread set (slots base..base+nslots-1 that `mask` names);
// the last arrival runs `complete`; returns once it has run.
std::shared_ptr<Collective> rendezvous(const std::string &kind, int scope, int base, int nslots,
                                       uint64_t mask, int expected, int slot, SrcLoc loc,
                                       uint64_t in, uint64_t in2, void *ptr,
                                       const std::function<void(Collective &)> &complete);
std::shared_ptr<Collective> warpRendezvous(const std::string &kind, uint32_t mask, SrcLoc loc,
                                           uint64_t in, uint64_t in2, void *ptr,
                                           const std::function<void(Collective &)> &complete);
std::shared_ptr<Collective> warpgroupRendezvous(const std::string &kind, SrcLoc loc, void *ptr,
                                                const std::function<void(Collective &)> &complete);

}  // namespace wsemu
