// The deterministic scheduler: one cluster at a time (a launch without cluster dimensions: one
// CTA at a time), one fiber per thread, pending async operations delivered when nothing can run,
// a deadlock when nothing can run and nothing is pending. The threads of all CTAs of a cluster
// share one run queue; each runs with its own CTA current (Thread::cur), so cta() is the running
// thread's CTA. The grids of a programmatic dependent launch run in one loop, a cluster of each at
// a time (launchDependent).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "emu/runtime/device.h"
#include "emu/runtime/pdl.h"
#include "emu/runtime/ptx.h"
#include "emu/runtime/state.h"

namespace wsemu {

namespace {
thread_local Cta *g_cta = nullptr;
thread_local Thread *g_self = nullptr;  // the thread whose fiber is running, or null (scheduler)
// The clusters running together (launchDependent: one of each grid of a chain), or null: one
// scheduler step counts for all of their CTAs.
thread_local const std::vector<Cluster *> *g_running = nullptr;
struct FailSignal {};

// After a failure: the running thread's fiber is never resumed (the launch unwinds it); on the
// scheduler, the launch's loop catches the signal.
[[noreturn]] void unwindFailed() {
  if (g_self) {
    for (;;) g_self->fiber.yield();
  }
  throw FailSignal{};
}
}  // namespace

void setupSharedArena(Cta &c, size_t dyn);  // device.cpp
void releaseSharedArena(Cta &c);

bool inKernel() { return g_cta != nullptr; }

Cta *swapCta(Cta *c) {
  Cta *prev = g_cta;
  g_cta = c;
  if (g_self) g_self->cur = c;
  return prev;
}

Cta &cta() {
  if (!g_cta) {
    std::fprintf(stderr,
                 "WSEMU verdict=infra-error/no-launch message=a device function ran outside "
                 "wsemu::launch\n");
    std::abort();
  }
  return *g_cta;
}

Thread &self() {
  if (!g_self) {
    std::fprintf(
        stderr,
        "WSEMU verdict=infra-error/no-thread message=a per-thread call ran on the scheduler\n");
    std::abort();
  }
  return *g_self;
}

std::string siteOf(SrcLoc loc) {
  const char *f = loc.file ? loc.file : "?";
  const char *slash = std::strrchr(f, '/');
  return std::string(slash ? slash + 1 : f) + ":" + std::to_string(loc.line);
}

const char *policyName(Policy p) {
  switch (p) {
    case Policy::Eager:
      return "eager";
    case Policy::ReadsLate:
      return "reads-late";
    case Policy::CompletionsLate:
      return "completions-late";
  }
  return "?";
}

void traceOp(const char *what, uint64_t a, uint64_t b) {
  Cta &c = cta();
  if (!c.cfg.trace || !c.verdict) return;
  std::ostringstream o;
  o << c.step << " t" << (g_self ? g_self->id : -1) << " " << what << " " << a << " " << b;
  c.verdict->trace.push_back(o.str());
}

void wake(Thread *t) {
  if (t->state != Thread::Blocked) return;
  t->state = Thread::Runnable;
  t->wait = WaitInfo{};
  if (!t->queued) {
    t->queued = true;
    t->home->cluster->runq.push_back(t);
  }
}

void wakeAll(std::vector<Thread *> &ws) {
  std::vector<Thread *> w;
  w.swap(ws);
  for (Thread *t : w) wake(t);
}

void park(const WaitInfo &w) {
  Thread &t = self();
  Cta &c = cta();
  t.state = Thread::Blocked;
  t.wait = w;
  t.parked_at = c.step;
  t.fiber.yield();
}

void uninit(void *p, size_t bytes) {
  static const int fill = [] {
    const char *m = std::getenv("WSEMU_LOCALS");
    return m && std::string(m) == "zero" ? 0 : 0xFE;
  }();
  std::memset(p, fill, bytes);
}

void loopTick(SrcLoc loc) {
  Cta &c = cta();
  if (++c.ops > c.cfg.max_ops)
    fail("hang/livelock", loc,
         "more than " + std::to_string(c.cfg.max_ops) +
             " emulated operations in one CTA without finishing the launch");
}

void preempt() {
  Cta &c = cta();
  if (g_self) ++g_self->ops;
  loopTick(SrcLoc{});  // an operation toward the launch's limit
  if (c.cfg.order == Order::Random && g_self && (c.rng() & 1)) {
    Thread &t = *g_self;
    if (!t.queued) {
      t.queued = true;
      c.cluster->runq.push_back(&t);
    }
    t.fiber.yield();
  }
}

namespace ptx {
// The GPU suspends the thread for about `ns` (at most 1 ms): the emulator has no time to wait, so
// the sleep is a yield. It counts as an operation toward the launch's limit and puts the thread
// at the back of its run queue under every order, so a spin with a backoff lets the threads it
// waits for run; a spin that nothing else ends is still hang/livelock at the limit.
void nanosleep(uint32_t, SrcLoc loc) {
  Cta &c = cta();
  if (g_self) ++g_self->ops;
  loopTick(loc);
  if (!g_self) return;
  Thread &t = *g_self;
  if (!t.queued) {
    t.queued = true;
    c.cluster->runq.push_back(&t);
  }
  t.fiber.yield();
}
}  // namespace ptx

[[noreturn]] void fail(const std::string &detail, SrcLoc loc, const std::string &message,
                       const std::string &mark) {
  Cta &c = cta();
  if (c.failed) unwindFailed();
  std::string signature =
      siteOf(loc) + "," +
      (g_self ? "warpgroup" + std::to_string(g_self->warpgroup) : std::string("async")) + mark;
  std::string who = g_self ? " by thread " + std::to_string(g_self->id) + " (warp " +
                                 std::to_string(g_self->warp) + ", warpgroup " +
                                 std::to_string(g_self->warpgroup) + ")"
                           : std::string(" by an async operation");
  failAs(detail, signature, detail + " at " + siteOf(loc) + who + ": " + message, c.block_idx);
}

[[noreturn]] void failAs(const std::string &detail, const std::string &signature,
                         const std::string &message, Dim3 block) {
  Cta &c = cta();
  if (!c.failed) {
    c.failed = true;
    Verdict &v = *c.verdict;
    v.detail = detail;
    v.symptom = detail.substr(0, detail.find('/'));
    v.signature = signature;
    v.message = message;
    v.block_of_failure = block;
  }
  unwindFailed();
}

void finishAsyncRead(AsyncOp &op) {
  if (!op.read_done) {
    op.read_done = true;
    op.read();
  }
}

void finishAsync(AsyncOp &op) {
  if (op.done) return;
  Cta &c = cta();
  // ops of one chain (a warpgroup's wgmmas) retire in issue order
  if (op.chain >= 0) {
    for (size_t i = 0; i < c.pending.size(); ++i) {
      AsyncOp *p = c.pending[i].get();
      if (p == &op) break;
      if (p->chain == op.chain && !p->done) finishAsync(*p);
    }
  }
  finishAsyncRead(op);
  op.done = true;
  op.complete();
  auto it = std::find_if(c.pending.begin(), c.pending.end(),
                         [&](const AsyncPtr &p) { return p.get() == &op; });
  if (it != c.pending.end()) c.pending.erase(it);
}

void issueAsync(AsyncPtr op) {
  Cta &c = cta();
  op->seq = ++c.op_seq;
  op->issuer = g_self ? g_self->id : -1;
  switch (c.cfg.policy) {
    case Policy::Eager:
      c.pending.push_back(op);
      finishAsync(*op);
      break;
    case Policy::CompletionsLate:
      finishAsyncRead(*op);
      c.pending.push_back(op);
      break;
    case Policy::ReadsLate:
      c.pending.push_back(op);
      break;
  }
}

namespace {

void deliverOne(Cta &c) {
  std::vector<AsyncOp *> eligible;
  std::set<int> chains;
  for (auto &p : c.pending) {
    if (p->chain >= 0) {
      if (chains.count(p->chain)) continue;
      chains.insert(p->chain);
    }
    eligible.push_back(p.get());
  }
  AsyncOp *op = eligible.front();
  if (c.cfg.order == Order::Random) op = eligible[c.rng() % eligible.size()];
  if (c.cfg.trace) traceOp(op->kind, op->seq, 0);
  finishAsync(*op);
}

// The cluster's scheduling draws come from its first CTA's generator (a cluster of one: the CTA's).
Thread *pickRunnable(Cluster &cl) {
  Cta &c = *cl.ctas.front();
  auto &runq = cl.runq;
  while (!runq.empty()) {
    Thread *t;
    if (c.cfg.order == Order::Random) {
      size_t i = c.rng() % runq.size();
      std::swap(runq[i], runq.back());
      t = runq.back();
      runq.pop_back();
    } else {
      t = runq.front();
      runq.pop_front();
    }
    t->queued = false;
    if (t->state == Thread::Runnable) return t;
  }
  return nullptr;
}

// A cluster of more than one CTA: each parked group names its CTA (rank) in what it waits on and in
// the signature (",ctaR" after the site); a cluster of one reads as a CTA always did. With the
// clusters of several grids of a programmatic dependent launch (launchDependent), each group names
// its kernel and block in what it waits on instead.
void reportDeadlock(const std::vector<Cluster *> &cls) {
  struct Key {
    size_t grid;
    int rank, wg;
    std::string site, what;
    bool operator<(const Key &o) const {
      return std::tie(grid, rank, wg, site, what) < std::tie(o.grid, o.rank, o.wg, o.site, o.what);
    }
  };
  const bool grids = cls.size() > 1;
  std::map<Key, ParkedGroup> groups;
  std::map<Key, WaitKind> kinds;
  std::map<Key, Cta *> ctas;
  std::map<Key, bool> waiting_on_parked;
  for (Cluster *clp : cls)
    for (Cta *cp : clp->ctas)
      for (auto &tp : cp->threads) {
        Thread &t = *tp;
        if (t.state != Thread::Blocked) continue;
        g_cta = cp;  // describeWait and waitArrivals read the thread's CTA
        std::string site;
        for (auto &f : t.calls) site += siteOf(f) + ">";
        site += siteOf(t.wait.loc);
        std::string what = describeWait(t);
        const size_t grid = cp->dep ? cp->dep->index : 0;
        if (grids) {
          const Dim3 &b = cp->block_idx;
          what = "in " + cp->dep->name + " block (" + std::to_string(b.x) + "," +
                 std::to_string(b.y) + "," + std::to_string(b.z) + "): " + what;
        } else if (clp->ctas.size() > 1) {
          what = "in CTA rank " + std::to_string(cp->rank) + ": " + what;
        }
        Key k{grid, cp->rank, t.warpgroup, site, what};
        ParkedGroup &g = groups[k];
        kinds[k] = t.wait.kind;
        ctas[k] = cp;
        // A thread at griddepcontrol.wait waits on the grids before its own, whose threads are
        // parked too: a consequence.
        if (t.wait.kind == WaitKind::GridDep) waiting_on_parked[k] = true;
        // A __syncwarp (bar.warp.sync) whose missing lanes are all parked elsewhere waits on them,
        // as on the GPU: a consequence of what they wait on, not the root (a lane of a producer
        // warp in its loop while the warp's other lanes wait at the __syncwarp after it). A lane
        // that exited, or an .aligned collective (wgmma) reached by part of its threads, is the
        // partial collective.
        if (t.wait.kind == WaitKind::Collective && t.wait.coll->kind == "bar.warp.sync") {
          const Collective &co = *t.wait.coll;
          bool parked = true;
          for (size_t s = 0; s < co.present.size(); ++s) {
            const int id = co.base + (int)s;
            if (co.present[s] || (co.mask && !(co.mask >> s & 1)) || id >= (int)cp->threads.size())
              continue;
            parked = parked && cp->threads[id]->state == Thread::Blocked;
          }
          waiting_on_parked[k] = parked;
        }
        uint64_t it = t.site_iters[{t.wait.loc.file, t.wait.loc.line}];
        if (g.threads == 0) {
          g.arrivals =
              waitArrivals(t);  // the same barrier for the whole group (`what` is in its key)
          g.warpgroup = t.warpgroup;
          g.site = k.site;
          g.what = k.what;
          g.iteration = it;
          g.parked_at = t.parked_at;
        }
        g.iteration = std::min(g.iteration, it);
        g.parked_at = std::min(g.parked_at, t.parked_at);
        if (std::find(g.warps.begin(), g.warps.end(), t.warp) == g.warps.end())
          g.warps.push_back(t.warp);
        g.threads++;
      }
  Verdict &v = *cls.front()->ctas.front()->verdict;
  struct Entry {
    ParkedGroup g;
    WaitKind kind;
    Cta *cta;
    bool consequence;
  };
  std::vector<Entry> all;
  for (auto &[k, g] : groups) all.push_back({g, kinds[k], ctas[k], waiting_on_parked[k]});
  std::stable_sort(all.begin(), all.end(),
                   [](auto &a, auto &b) { return a.g.parked_at < b.g.parked_at; });
  // The root: the group that parked first for good (the later ones wait, directly or not, on it),
  // passing over those that wait on parked threads (a __syncwarp's).
  const Entry &root_e = [&]() -> const Entry & {
    for (const Entry &e : all)
      if (!e.consequence) return e;
    return all.front();
  }();
  WaitKind root = root_e.kind;
  v.detail = root == WaitKind::MBarrier         ? "hang/mbarrier"
             : root == WaitKind::NamedBarrier   ? "hang/barrier"
             : root == WaitKind::ClusterBarrier ? "hang/barrier"
             : root == WaitKind::Collective     ? "ub/partial-collective"
                                                : "hang/unknown";
  v.symptom = v.detail.substr(0, v.detail.find('/'));
  std::set<std::string> sig;
  for (auto &e : all) {
    const ParkedGroup &g = e.g;
    v.parked.push_back(g);
    // A dependent grid's threads at griddepcontrol.wait are parked or not by when the policy let
    // it begin: the signature is the same without them.
    if (e.kind == WaitKind::GridDep) continue;
    sig.insert(g.site +
               (e.cta->cluster->ctas.size() > 1 ? ",cta" + std::to_string(e.cta->rank) : "") +
               ",warpgroup" + std::to_string(g.warpgroup) + ",iter" + std::to_string(g.iteration) +
               (g.arrivals.empty() ? "" : ",arrivals=" + g.arrivals));
  }
  for (auto &s : sig) v.signature += (v.signature.empty() ? "" : ";") + s;
  const ParkedGroup &r = root_e.g;
  v.message = "no runnable thread and no pending async operation; first parked: warpgroup " +
              std::to_string(r.warpgroup) + " at " + r.site + " " + r.what;
  v.block_of_failure = root_e.cta->block_idx;
  root_e.cta->failed = true;
}

// Once every thread has exited: a bulk store (TMA or plain) that no cp.async.bulk.wait_group(.read)
// of its issuing thread covered is UB under every policy. The CTA's shared memory may be gone
// before the store reads it; the eager policy happened to read it at issue.
void checkStoresWaited(Cta &c) {
  auto check = [](const AsyncPtr &op) {
    if (!op->waited)
      fail("ub/exit-with-bulk-in-flight", op->loc,
           std::string("every thread exited, and thread ") + std::to_string(op->issuer) +
               " never waited for its " + op->kind +
               " (no cp.async.bulk.commit_group and wait_group.read after it)");
  };
  for (auto &t : c.threads) {
    for (auto &op : t->bulk_open) check(op);
    for (auto &g : t->bulk_groups)
      for (auto &op : g) check(op);
  }
}

bool anyFailed(const Cluster &cl) {
  for (Cta *c : cl.ctas)
    if (c->failed) return true;
  return false;
}

// One scheduler step of the whole cluster: every CTA's step counts it (parked_at and traces compare
// across the cluster's CTAs). With the grids of a chain running together (g_running), every CTA of
// theirs counts it.
void tick(Cluster &cl) {
  if (g_running) {
    for (Cluster *x : *g_running)
      for (Cta *c : x->ctas) ++c->step;
    return;
  }
  for (Cta *c : cl.ctas) ++c->step;
}

// Every thread of the cluster on its fiber, queued to run (under the random order, shuffled).
void startCluster(Cluster &cl, StackPool &pool, const std::function<void()> &kernel) {
  for (Cta *cp : cl.ctas) {
    Cta &c = *cp;
    for (auto &tp : c.threads) {
      Thread *t = tp.get();
      t->fiber.start(pool, [t, &kernel] {
        try {
          kernel();
        } catch (boost::context::detail::forced_unwind &) {
          throw;
        } catch (std::exception &e) {
          fail("crash/host", SrcLoc{},
               std::string("C++ exception escaped the kernel: ") + e.what());
        }
        t->state = Thread::Exited;
        onThreadExit(*t);
        if (t->home->dep) pdlThreadExit(*t);
      });
      t->queued = true;
      cl.runq.push_back(t);
    }
  }
  Cta &first = *cl.ctas.front();
  if (first.cfg.order == Order::Random) std::shuffle(cl.runq.begin(), cl.runq.end(), first.rng);
}

void resumeThread(Thread &t) {
  tick(*t.home->cluster);
  ++t.home->switches;
  g_cta = t.cur;
  g_self = &t;
  t.fiber.resume();
  g_self = nullptr;
}

// What a cluster none of whose threads can run does: once every thread has exited, the exit checks
// and the stores that land after it (Exited); otherwise one pending async operation is delivered
// (Delivered); otherwise nothing (Stuck). A failure throws FailSignal.
enum class Idle { Exited, Delivered, Stuck };
Idle idleStep(Cluster &cl) {
  Cta &first = *cl.ctas.front();
  bool all_exited = true;
  for (Cta *cp : cl.ctas)
    all_exited = all_exited && std::all_of(cp->threads.begin(), cp->threads.end(),
                                           [](auto &p) { return p->state == Thread::Exited; });
  if (all_exited) {
    for (Cta *cp : cl.ctas) {
      Cta &c = *cp;
      g_cta = cp;
      checkStoresWaited(c);
      tcgen05CtaExit(c);
      // Stores whose reads are done (their threads waited for them) land after the CTA exits, and
      // so do tcgen05 operations and cp.asyncs still in flight (AsyncOp::tensor, thread_copy).
      for (const AsyncPtr &op : std::vector<AsyncPtr>(c.pending))
        if ((op->store && op->read_done) || op->tensor || op->thread_copy) {
          tick(cl);
          finishAsync(*op);
        }
      if (!c.pending.empty()) {
        AsyncOp &op = *c.pending.front();
        fail("ub/exit-with-bulk-in-flight", op.loc,
             std::string("every thread exited while ") + op.kind + " (issued by thread " +
                 std::to_string(op.issuer) + ") was still in flight");
      }
    }
    return Idle::Exited;
  }
  // Pending operations: the first CTA (by rank) that has one delivers one; under the random order,
  // a CTA drawn among those that have some.
  std::vector<Cta *> with;
  for (Cta *cp : cl.ctas)
    if (!cp->pending.empty()) with.push_back(cp);
  if (with.empty()) return Idle::Stuck;
  Cta *cp = with.front();
  if (first.cfg.order == Order::Random && with.size() > 1) cp = with[first.rng() % with.size()];
  g_cta = cp;
  tick(cl);
  deliverOne(*cp);
  return Idle::Delivered;
}

void runCluster(Cluster &cl, StackPool &pool, const std::function<void()> &kernel) {
  startCluster(cl, pool, kernel);
  while (!anyFailed(cl)) {
    if (Thread *t = pickRunnable(cl)) {
      resumeThread(*t);
      continue;
    }
    Idle what;
    try {
      what = idleStep(cl);
    } catch (FailSignal &) {
      break;
    }
    if (what == Idle::Exited) break;
    if (what == Idle::Delivered) continue;
    reportDeadlock({&cl});
  }
}

// Never destroyed: the PTX path's host library may run a launch it held at exit
// (emu/host/cudart.cpp), after the thread's thread_local objects are gone.
StackPool &poolFor(const Config &cfg) {
  static thread_local auto *pools = new std::map<size_t, std::unique_ptr<StackPool>>;
  auto &pool = (*pools)[cfg.stack_bytes];
  if (!pool) pool = std::make_unique<StackPool>(cfg.stack_bytes);
  return *pool;
}

// A grid the GPU would not run is crash/invalid-configuration; else its clusters, per dimension.
Dim3 clustersOf(const GridSpec &s, Verdict &v) {
  const Dim3 cd = s.cluster;
  if (s.block.count() == 0 || s.block.count() > 1024 || s.grid.count() == 0 || cd.count() == 0 ||
      s.grid.x % cd.x || s.grid.y % cd.y || s.grid.z % cd.z) {
    v.symptom = "crash";
    v.detail = "crash/invalid-configuration";
    v.signature = siteOf(s.loc);
    v.message = "invalid launch configuration";
    return Dim3(0, 0, 0);
  }
  return Dim3(s.grid.x / cd.x, s.grid.y / cd.y, s.grid.z / cd.z);
}

// The CTAs of one cluster of a grid (cluster `k` of `ncl`), ready to start.
struct ClusterRun {
  Cluster cl;
  std::vector<std::unique_ptr<Cta>> ctas;
};
std::unique_ptr<ClusterRun> makeCluster(const GridSpec &s, Dim3 ncl, Dim3 k, const Config &cfg,
                                        Verdict &v) {
  auto run = std::make_unique<ClusterRun>();
  Cluster &cl = run->cl;
  const Dim3 cd = s.cluster, grid = s.grid, block = s.block;
  cl.dims = cd;
  cl.id = k;
  cl.nclusters = ncl;
  cl.is_explicit = s.explicit_cluster;
  for (uint32_t rank = 0; rank < cd.count(); ++rank) {
    auto cp = std::make_unique<Cta>();
    Cta &c = *cp;
    const Dim3 in(rank % cd.x, (rank / cd.x) % cd.y, rank / (cd.x * cd.y));
    const uint32_t bx = k.x * cd.x + in.x, by = k.y * cd.y + in.y, bz = k.z * cd.z + in.z;
    c.cfg = cfg;
    c.grid = grid;
    c.block = block;
    c.block_idx = Dim3(bx, by, bz);
    c.cluster = &cl;
    c.rank = (int)rank;
    c.cluster_ctaid = in;
    c.nthreads = (int)block.count();
    c.nwarps = (c.nthreads + 31) / 32;
    c.rng.seed(cfg.seed * 0x9e3779b97f4a7c15ull + (bx + grid.x * (by + grid.y * bz)));
    c.verdict = &v;
    c.warp_live.assign(c.nwarps, 0);
    c.warp_size.assign(c.nwarps, 0);
    c.maxnreg.assign((c.nwarps + 3) / 4, 0);
    for (int i = 0; i < c.nthreads; ++i) {
      auto t = std::make_unique<Thread>();
      t->id = i;
      t->home = t->cur = &c;
      t->tid = Dim3(i % block.x, (i / block.x) % block.y, i / (block.x * block.y));
      t->warp = i / 32;
      t->lane = i % 32;
      t->warpgroup = t->warp / 4;
      c.warp_live[t->warp]++;
      c.warp_size[t->warp]++;
      c.threads.push_back(std::move(t));
    }
    for (auto &b : c.bars) {
      b.warp_arrived.assign(c.nwarps, 0);
      b.warp_counted.assign(c.nwarps, 0);
    }
    setupSharedArena(c, s.dynamic_smem);
    cl.ctas.push_back(&c);
    run->ctas.push_back(std::move(cp));
  }
  return run;
}

// Unwinds the cluster's unfinished fibers while their CTA is current (their frames may call back),
// counts its operations into the verdict and frees its shared memory.
void finishCluster(ClusterRun &run, Verdict &v) {
  for (Cta *cp : run.cl.ctas)
    for (auto &t : cp->threads) {
      g_cta = t->cur;
      t->fiber.reset();
    }
  for (Cta *cp : run.cl.ctas) {
    v.ops += cp->ops;
    v.switches += cp->switches;
  }
  g_cta = nullptr;
  for (Cta *cp : run.cl.ctas) releaseSharedArena(*cp);
}

void exitOnFailure(const Verdict &v, const Config &cfg) {
  if (!v.pass() && cfg.exit_on_failure) {
    v.print(stderr);
    std::fflush(stderr);
    std::fflush(stdout);
    std::_Exit(v.exitStatus());
  }
}

}  // namespace

CallSite::CallSite(SrcLoc loc) {
  if (inKernel() && g_self) {
    g_self->calls.push_back(loc);
    pushed_ = true;
  }
}
CallSite::~CallSite() {
  if (pushed_ && g_self) g_self->calls.pop_back();
}

Config &defaultConfig() {
  static Config cfg;
  return cfg;
}

Config configFromEnv() {
  Config cfg;
  cfg.exit_on_failure = true;
  if (const char *p = std::getenv("WSEMU_POLICY")) {
    std::string s = p;
    cfg.policy = s == "reads-late"         ? Policy::ReadsLate
                 : s == "completions-late" ? Policy::CompletionsLate
                                           : Policy::Eager;
  }
  if (const char *p = std::getenv("WSEMU_ORDER"))
    cfg.order = std::string(p) == "random" ? Order::Random : Order::RoundRobin;
  if (const char *p = std::getenv("WSEMU_SEED")) cfg.seed = std::strtoull(p, nullptr, 10);
  if (const char *p = std::getenv("WSEMU_TRACE")) cfg.trace = std::string(p) == "1";
  if (const char *p = std::getenv("WSEMU_PROXY")) cfg.coherent_proxy = std::string(p) == "coherent";
  if (const char *p = std::getenv("WSEMU_MAX_OPS"))
    if (uint64_t n = std::strtoull(p, nullptr, 10)) cfg.max_ops = n;
  return cfg;
}

Verdict launch(Dim3 grid, Dim3 block, size_t dynamic_smem, const std::function<void()> &kernel,
               const Config &cfg, SrcLoc loc, Dim3 cluster_dims, bool explicit_cluster) {
  Verdict v;
  StackPool &pool = poolFor(cfg);
  const GridSpec s{grid, block, dynamic_smem, kernel, loc, cluster_dims, explicit_cluster};
  const Dim3 ncl = clustersOf(s, v);
  // Clusters in the order CTAs ran before clusters existed (x fastest); a cluster's CTAs by rank.
  for (uint32_t kz = 0; kz < ncl.z && v.pass(); ++kz)
    for (uint32_t ky = 0; ky < ncl.y && v.pass(); ++ky)
      for (uint32_t kx = 0; kx < ncl.x && v.pass(); ++kx) {
        auto run = makeCluster(s, ncl, Dim3(kx, ky, kz), cfg, v);
        g_cta = run->cl.ctas.front();
        runCluster(run->cl, pool, s.kernel);
        finishCluster(*run, v);
      }
  exitOnFailure(v, cfg);
  return v;
}

// The grids of a chain run in one loop, each one cluster at a time as launch() runs them, the
// clusters of different grids together. A thread is picked from the latest grid that has one
// (under the random order, from a grid drawn among those that have one): a dependent runs as early
// as the rules let it, so its reads before griddepcontrol.wait see what the grid before it has not
// written yet. When no thread of any grid can run, the earliest grid's cluster that can make
// progress does (its exit, or an async operation's delivery); when none can, the parked threads of
// every grid are the deadlock.
Verdict launchDependent(const std::vector<GridSpec> &grids, const Config &cfg,
                        size_t *failed_grid) {
  Verdict v;
  *failed_grid = 0;
  StackPool &pool = poolFor(cfg);
  struct Run {
    const GridSpec *spec = nullptr;
    GridDep dep;
    Dim3 ncl;
    uint32_t next = 0, total = 0;  // clusters started, clusters in all
    std::unique_ptr<ClusterRun> active;
  };
  Chain chain;
  std::vector<std::unique_ptr<Run>> runs;
  for (size_t i = 0; i < grids.size(); ++i) {
    auto r = std::make_unique<Run>();
    r->spec = &grids[i];
    r->ncl = clustersOf(grids[i], v);
    if (!v.pass()) {
      *failed_grid = i;
      exitOnFailure(v, cfg);
      return v;
    }
    r->total = r->ncl.count();
    GridDep &d = r->dep;
    d.index = i;
    d.name = grids[i].loc.file ? grids[i].loc.file : "?";
    d.grid = grids[i].grid;
    d.block = grids[i].block;
    d.ctas = grids[i].grid.count();
    d.chain = &chain;
    d.prerequisites_done = i == 0;
    if (i > 0) {
      d.prev = &runs[i - 1]->dep;
      d.prev->next = &d;
      d.wait_what = "griddepcontrol.wait (for " + d.prev->name + " to complete)";
    }
    runs.push_back(std::move(r));
  }
  auto mayStart = [&](const GridDep &d) {
    if (!d.prev) return true;
    if (cfg.policy == Policy::CompletionsLate) return d.prev->complete;
    return d.prev->released == d.prev->ctas;
  };
  // A grid's last cluster finished: the waits of a grid whose earlier grids have all completed
  // return.
  auto completed = [&](GridDep &done) {
    done.complete = true;
    bool before = true;
    for (auto &r : runs) {
      GridDep &d = r->dep;
      if (before && !d.prerequisites_done) {
        d.prerequisites_done = true;
        wakeAll(d.waiters);
      }
      before = before && d.complete;
    }
  };
  std::mt19937_64 draw(cfg.seed * 0x9e3779b97f4a7c15ull + 0x9d1);
  std::vector<Cluster *> running;
  g_running = &running;
  while (v.pass()) {
    bool all_complete = true;
    for (auto &rp : runs) {
      Run &r = *rp;
      if (r.dep.complete) continue;
      all_complete = false;
      if (r.active || r.next == r.total || !mayStart(r.dep)) continue;
      const uint32_t k = r.next++;
      r.active =
          makeCluster(*r.spec, r.ncl,
                      Dim3(k % r.ncl.x, (k / r.ncl.x) % r.ncl.y, k / (r.ncl.x * r.ncl.y)), cfg, v);
      for (Cta *c : r.active->cl.ctas) c->dep = &r.dep;
      r.dep.started = true;
      g_cta = r.active->cl.ctas.front();
      startCluster(r.active->cl, pool, r.spec->kernel);
    }
    if (all_complete) break;
    running.clear();
    for (auto &r : runs)
      if (r->active) running.push_back(&r->active->cl);
    Thread *t = nullptr;
    if (cfg.order == Order::Random) {
      std::vector<Cluster *> with;
      for (Cluster *c : running)
        if (!c->runq.empty()) with.push_back(c);
      while (!t && !with.empty()) {
        const size_t k = draw() % with.size();
        t = pickRunnable(*with[k]);
        if (!t) with.erase(with.begin() + (ptrdiff_t)k);
      }
    } else {
      for (auto it = running.rbegin(); !t && it != running.rend(); ++it) t = pickRunnable(**it);
    }
    if (t) {
      resumeThread(*t);
      continue;
    }
    Idle what = Idle::Stuck;
    try {
      for (auto &rp : runs) {
        Run &r = *rp;
        if (!r.active) continue;
        what = idleStep(r.active->cl);
        if (what == Idle::Exited) {
          std::erase(running, &r.active->cl);  // no step counts for it any more
          finishCluster(*r.active, v);
          r.active.reset();
          if (r.next == r.total) completed(r.dep);
        }
        if (what != Idle::Stuck) break;
      }
    } catch (FailSignal &) {
      break;
    }
    if (what != Idle::Stuck) continue;
    if (running.empty()) {  // no grid can start and none runs: a dependency the loop cannot meet
      v.symptom = "infra-error";
      v.detail = "infra-error/scheduler";
      v.message = "no grid of the programmatic dependent launch can start";
      break;
    }
    reportDeadlock(running);
  }
  for (size_t i = runs.size(); i-- > 0;) {
    if (runs[i]->active)
      for (Cta *c : runs[i]->active->cl.ctas)
        if (c->failed) *failed_grid = i;
  }
  for (size_t i = 0; i < runs.size(); ++i)
    if (runs[i]->dep.blamed) *failed_grid = i;
  for (auto &r : runs)
    if (r->active) finishCluster(*r->active, v);
  g_running = nullptr;
  exitOnFailure(v, cfg);
  return v;
}

}  // namespace wsemu
