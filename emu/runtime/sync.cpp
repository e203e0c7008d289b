// Named barriers, warp and warpgroup collectives (elect, shfl, vote, ldmatrix, setmaxnreg),
// atomics, and the unknown-instruction error.
#include <algorithm>
#include <bit>
#include <sstream>

#include "emu/runtime/ptx.h"
#include "emu/runtime/state.h"

namespace wsemu {

// ---------------------------------------------------------------------------------------
// Named barriers: arrivals are warp-granular. A warp counts (32 threads) once every live
// thread of it has arrived; a barrier without a count expects every warp of the CTA.
// ---------------------------------------------------------------------------------------
namespace {
void countWarp(Cta &c, NamedBarrier &b, int w) {
  if (!b.warp_counted[w] && b.warp_arrived[w] > 0 && b.warp_arrived[w] >= c.warp_live[w]) {
    b.warp_counted[w] = 1;
    b.arrived += 32;
  }
}

// What the threads of `c` that took part in a barrier (`took_part`) know of completed mbarrier
// phases, they all know once it completes (readBeforeLanded: one thread waits on `full`, a
// barrier, then all read the tile); so with the tcgen05.lds they know of (tcgen05.cpp: a
// dealloc must come after every warp's).
template <class TookPart>
void shareSeenPhases(Cta &c, TookPart took_part) {
  // In a programmatic dependent launch: what one of them knows of the grids before its own having
  // completed (a thread that executed griddepcontrol.wait), all of them know (pdl.cpp).
  if (c.dep) {
    bool dep_known = false;
    for (auto &tp : c.threads) dep_known = dep_known || (took_part(*tp) && tp->dep_known);
    if (dep_known)
      for (auto &tp : c.threads)
        if (took_part(*tp)) tp->dep_known = true;
  }
  std::unordered_map<uint32_t, uint64_t> known;
  std::vector<uint64_t> reads;
  for (auto &tp : c.threads)
    if (took_part(*tp)) {
      for (auto &[bar, ph] : tp->seen_phase) known[bar] = std::max(known[bar], ph);
      const auto &r = tp->tmem_reads_seen;
      if (reads.size() < r.size()) reads.resize(r.size(), 0);
      for (size_t w = 0; w < r.size(); ++w) reads[w] = std::max(reads[w], r[w]);
    }
  if (known.empty() && reads.empty()) return;
  for (auto &tp : c.threads)
    if (took_part(*tp)) {
      for (auto &[bar, ph] : known) tp->seen_phase[bar] = std::max(tp->seen_phase[bar], ph);
      auto &r = tp->tmem_reads_seen;
      if (r.size() < reads.size()) r.resize(reads.size(), 0);
      for (size_t w = 0; w < reads.size(); ++w) r[w] = std::max(r[w], reads[w]);
    }
}

void tryComplete(Cta &c, NamedBarrier &b) {
  if (b.expected == 0) return;
  if (b.cta_wide && c.cfg.exited_warps_arrive) {
    int warps = 0;
    for (int w = 0; w < c.nwarps; ++w) warps += (c.warp_live[w] > 0 || b.warp_counted[w]) ? 1 : 0;
    b.expected = 32 * warps;
  }
  if (b.arrived < b.expected) return;
  shareSeenPhases(c, [&](const Thread &t) { return b.warp_arrived[t.warp] > 0; });
  b.generation++;
  if (b.cta_wide || b.expected >= 32 * c.nwarps)
    c.bar_epoch++;  // every thread took part: it orders them all
  b.arrived = 0;
  b.expected = 0;
  b.cta_wide = false;
  std::fill(b.warp_arrived.begin(), b.warp_arrived.end(), 0);
  std::fill(b.warp_counted.begin(), b.warp_counted.end(), 0);
  wakeAll(b.waiters);
}

void barrier(uint32_t id, uint32_t count, SrcLoc loc, bool wait) {
  preempt();
  Cta &c = cta();
  Thread &t = self();
  if (id >= 16)
    ptx::unknown_instruction(("bar with barrier id " + std::to_string(id) + " (0-15)").c_str(),
                             loc);
  if (count % 32)
    fail("ub/barrier-count", loc,
         "bar count " + std::to_string(count) + " is not a multiple of 32");
  NamedBarrier &b = c.bars[id];
  int expected = count ? (int)count : 32 * c.nwarps;
  if (b.expected == 0) {
    b.expected = expected;
    b.cta_wide = count == 0;
    b.first_loc = loc;
  } else if (!b.cta_wide && count != 0 && b.expected != expected) {
    fail("ub/barrier-count-mismatch", loc,
         "bar " + std::to_string(id) + " with count " + std::to_string(count) +
             " while the barrier's current use at " + siteOf(b.first_loc) + " expects " +
             std::to_string(b.expected));
  }
  traceOp(wait ? "bar.sync" : "bar.arrive", id, count);
  uint64_t gen = b.generation;
  b.warp_arrived[t.warp]++;
  countWarp(c, b, t.warp);
  tryComplete(c, b);
  if (!wait) return;
  while (b.generation == gen) {
    b.waiters.push_back(&t);
    WaitInfo w;
    w.kind = WaitKind::NamedBarrier;
    w.loc = loc;
    w.bar_id = (int)id;
    park(w);
  }
  t.site_iters[{loc.file, loc.line}]++;
}
}  // namespace

void onThreadExit(Thread &t) {
  Cta &c = cta();
  // What the thread knows, under every policy: a wgmma no wgmma.wait_group of its thread retired
  // (the eager policy completed it at issue; the GPU may not have, and its accumulators were read
  // or dropped unordered with it).
  for (auto &g : t.wg_groups)
    for (auto &op : g)
      fail("ub/exit-with-wgmma-in-flight", op->loc,
           "the thread exited before a wgmma.wait_group retired this wgmma; its accumulators are "
           "gone");
  for (auto &op : t.wg_open)
    fail("ub/exit-with-wgmma-in-flight", op->loc,
         "the thread exited with an uncommitted wgmma in flight");
  tcgen05ThreadExit(t);
  c.warp_live[t.warp]--;
  traceOp("exit", t.id, 0);
  for (auto &b : c.bars) {
    countWarp(c, b, t.warp);
    tryComplete(c, b);
  }
  clusterBarrierExit(t);
}

// ---------------------------------------------------------------------------------------
// barrier.cluster (PTX ISA, "barrier.cluster"): arrive marks the thread's arrival in the current
// phase; wait returns once every non-exited thread of every CTA of the cluster arrived in the phase
// the thread arrived in. Thread-granular: a thread that exits no longer counts. It orders every
// thread of the cluster, so it orders each CTA's mbarrier inits before their uses, a remote
// arrive's included (orderedAfterInit, mbarrier.cpp).
// ---------------------------------------------------------------------------------------
namespace {
int clusterLive(const Cluster &cl) {
  int live = 0;
  for (const Cta *c : cl.ctas)
    for (auto &tp : c->threads) live += tp->state != Thread::Exited;
  return live;
}

void clusterTryComplete(Cluster &cl) {
  const int live = clusterLive(cl);
  if (cl.bar_arrived == 0 || cl.bar_arrived < live) return;
  // It orders every thread of the cluster after the griddepcontrol.wait of any (pdl.cpp).
  bool dep_known = false;
  for (const Cta *c : cl.ctas)
    for (auto &tp : c->threads) dep_known = dep_known || (c->dep && tp->dep_known);
  if (dep_known)
    for (Cta *c : cl.ctas)
      for (auto &tp : c->threads) tp->dep_known = true;
  for (Cta *c : cl.ctas) {
    shareSeenPhases(*c, [](const Thread &) { return true; });  // each CTA's, as at bar.sync
    c->bar_epoch++;
  }
  cl.bar_phase++;
  cl.bar_arrived = 0;
  traceOp("barrier.cluster.phase", cl.bar_phase, 0);
  wakeAll(cl.bar_waiters);
}
}  // namespace

void clusterBarrierExit(Thread &t) {
  Cluster *cl = t.home ? t.home->cluster : nullptr;
  if (!cl) return;
  if (t.cbar_arrived == cl->bar_phase) cl->bar_arrived--;  // its arrival leaves with it
  t.cbar_arrived = ~0ull;
  clusterTryComplete(*cl);
}

// ---------------------------------------------------------------------------------------
// Rendezvous
// ---------------------------------------------------------------------------------------
std::shared_ptr<Collective> rendezvous(const std::string &kind, int scope, int base, int nslots,
                                       uint64_t mask, int expected, int slot, SrcLoc loc,
                                       uint64_t in, uint64_t in2, void *ptr,
                                       const std::function<void(Collective &)> &complete) {
  Cta &c = cta();
  std::string key = kind + "#" + std::to_string(scope) + "#" + std::to_string(mask);
  auto &open = c.open_colls[key];
  if (!open) {
    open = std::make_shared<Collective>();
    open->kind = kind;
    open->scope = scope;
    open->base = base;
    open->loc = loc;
    open->in.assign(nslots, 0);
    open->in2.assign(nslots, 0);
    open->out.assign(nslots, 0);
    open->present.assign(nslots, 0);
    open->ptrs.assign(nslots, nullptr);
    open->expected = expected;
    open->mask = mask;
    open->complete = complete;
  }
  std::shared_ptr<Collective> k = open;
  k->present[slot] = 1;
  k->in[slot] = in;
  k->in2[slot] = in2;
  k->ptrs[slot] = ptr;
  k->arrived++;
  if (k->arrived == k->expected) {
    c.open_colls.erase(key);
    k->done = true;
    k->complete(*k);
    wakeAll(k->waiters);
  }
  while (!k->done) {
    k->waiters.push_back(&self());
    WaitInfo w;
    w.kind = WaitKind::Collective;
    w.loc = loc;
    w.coll = k.get();
    park(w);
  }
  return k;
}

std::shared_ptr<Collective> warpRendezvous(const std::string &kind, uint32_t mask, SrcLoc loc,
                                           uint64_t in, uint64_t in2, void *ptr,
                                           const std::function<void(Collective &)> &complete) {
  Cta &c = cta();
  Thread &t = self();
  uint32_t exist = c.warp_size[t.warp] == 32 ? 0xffffffffu : ((1u << c.warp_size[t.warp]) - 1);
  mask &= exist;
  if (!(mask >> t.lane & 1))
    fail("ub/collective-mask", loc,
         kind + " with a member mask that does not name the executing lane " +
             std::to_string(t.lane));
  return rendezvous(kind, t.warp, t.warp * 32, 32, mask, std::popcount(mask), t.lane, loc, in, in2,
                    ptr, complete);
}

std::shared_ptr<Collective> warpgroupRendezvous(const std::string &kind, SrcLoc loc, void *ptr,
                                                const std::function<void(Collective &)> &complete) {
  Cta &c = cta();
  Thread &t = self();
  int base = t.warpgroup * 128;
  int n = std::min(128, c.nthreads - base);
  return rendezvous(kind, t.warpgroup, base, 128, 0, n, t.id - base, loc, 0, 0, ptr, complete);
}

namespace ptx {

void cluster_arrive(SrcLoc loc) {
  preempt();
  Thread &t = self();
  Cluster &cl = *t.home->cluster;
  if (t.cbar_arrived != ~0ull)
    fail("ub/cluster-barrier-arrive-twice", loc,
         "barrier.cluster.arrive by a thread that arrived before (at phase " +
             std::to_string(t.cbar_arrived) + ") and has not executed barrier.cluster.wait since");
  if (cl.bar_arrived == 0) cl.bar_first_loc = loc;
  traceOp("barrier.cluster.arrive", cl.bar_phase, 0);
  t.cbar_arrived = cl.bar_phase;
  cl.bar_arrived++;
  clusterTryComplete(cl);
}

void cluster_wait(SrcLoc loc) {
  preempt();
  Thread &t = self();
  Cluster &cl = *t.home->cluster;
  if (t.cbar_arrived == ~0ull)
    fail("ub/cluster-barrier-wait-unarrived", loc,
         "barrier.cluster.wait by a thread that made no barrier.cluster.arrive before it");
  traceOp("barrier.cluster.wait", t.cbar_arrived, cl.bar_phase);
  while (cl.bar_phase == t.cbar_arrived) {
    cl.bar_waiters.push_back(&t);
    WaitInfo w;
    w.kind = WaitKind::ClusterBarrier;
    w.loc = loc;
    park(w);
  }
  t.cbar_arrived = ~0ull;
  t.site_iters[{loc.file, loc.line}]++;
}

void bar_sync(uint32_t id, uint32_t count, SrcLoc loc) { barrier(id, count, loc, true); }
void bar_arrive(uint32_t id, uint32_t count, SrcLoc loc) { barrier(id, count, loc, false); }

bool elect_sync(uint32_t mask, SrcLoc loc, uint32_t *leader_lane) {
  preempt();
  auto k = warpRendezvous("elect.sync", mask, loc, 0, 0, nullptr, [](Collective &k) {
    int leader = -1;
    for (int i = 0; i < 32; ++i)
      if (k.present[i]) {
        leader = i;
        break;
      }
    for (int i = 0; i < 32; ++i) k.out[i] = (uint64_t)leader;
  });
  uint32_t leader = (uint32_t)k->out[self().lane];
  if (leader_lane) *leader_lane = leader;
  return leader == (uint32_t)self().lane;
}

uint32_t shfl_sync(Shfl mode, uint32_t value, uint32_t b, uint32_t c, uint32_t mask, SrcLoc loc,
                   bool *in_range) {
  preempt();
  static const char *names[] = {"shfl.sync.up", "shfl.sync.down", "shfl.sync.bfly",
                                "shfl.sync.idx"};
  auto k = warpRendezvous(names[(int)mode], mask, loc, value, (uint64_t)b | ((uint64_t)c << 32),
                          nullptr, [mode](Collective &k) {
                            for (uint32_t lane = 0; lane < 32; ++lane) {
                              if (!k.present[lane]) continue;
                              uint32_t bval = k.in2[lane] & 31, cval = (k.in2[lane] >> 32) & 31,
                                       segmask = (k.in2[lane] >> 40) & 31;
                              uint32_t maxLane = (lane & segmask) | (cval & ~segmask),
                                       minLane = lane & segmask;
                              int64_t j;
                              bool p;
                              switch (mode) {
                                case Shfl::Up:
                                  j = (int64_t)lane - bval;
                                  p = j >= (int64_t)maxLane;
                                  break;
                                case Shfl::Down:
                                  j = lane + bval;
                                  p = j <= maxLane;
                                  break;
                                case Shfl::Bfly:
                                  j = lane ^ bval;
                                  p = j <= maxLane;
                                  break;
                                default:
                                  j = minLane | (bval & ~segmask);
                                  p = j <= maxLane;
                                  break;
                              }
                              if (!p || j < 0 || j > 31) j = lane;
                              uint32_t v = k.present[j] ? (uint32_t)k.in[j] : (uint32_t)k.in[lane];
                              k.out[lane] = v | ((uint64_t)p << 32);
                            }
                          });
  uint64_t r = k->out[self().lane];
  if (in_range) *in_range = (r >> 32) & 1;
  return (uint32_t)r;
}

uint32_t vote_sync(Vote mode, bool pred, uint32_t mask, SrcLoc loc) {
  preempt();
  static const char *names[] = {"vote.sync.all", "vote.sync.any", "vote.sync.uni",
                                "vote.sync.ballot"};
  auto k =
      warpRendezvous(names[(int)mode], mask, loc, pred ? 1 : 0, 0, nullptr, [mode](Collective &k) {
        uint32_t ballot = 0, members = 0;
        for (int i = 0; i < 32; ++i)
          if (k.present[i]) {
            members |= 1u << i;
            if (k.in[i]) ballot |= 1u << i;
          }
        uint32_t r = mode == Vote::Ballot ? ballot
                     : mode == Vote::All  ? (ballot == members)
                     : mode == Vote::Any  ? (ballot != 0)
                                          : (ballot == members || ballot == 0);
        for (int i = 0; i < 32; ++i) k.out[i] = r;
      });
  return (uint32_t)k->out[self().lane];
}

uint32_t redux_sync(Redux op, bool is_signed, uint32_t value, uint32_t mask, SrcLoc loc) {
  preempt();
  static const char *names[] = {"redux.sync.add", "redux.sync.min", "redux.sync.max",
                                "redux.sync.and", "redux.sync.or",  "redux.sync.xor"};
  auto k = warpRendezvous(names[(int)op], mask, loc, value, 0, nullptr, [=](Collective &k) {
    uint32_t r = 0;
    bool first = true;
    for (int i = 0; i < 32; ++i) {
      if (!k.present[i]) continue;
      const uint32_t v = (uint32_t)k.in[i];
      if (first) {
        r = v;
        first = false;
        continue;
      }
      switch (op) {
        case Redux::Add:
          r += v;
          break;
        case Redux::Min:
          r = is_signed ? (uint32_t)std::min((int32_t)r, (int32_t)v) : std::min(r, v);
          break;
        case Redux::Max:
          r = is_signed ? (uint32_t)std::max((int32_t)r, (int32_t)v) : std::max(r, v);
          break;
        case Redux::And:
          r &= v;
          break;
        case Redux::Or:
          r |= v;
          break;
        case Redux::Xor:
          r ^= v;
          break;
      }
    }
    for (int i = 0; i < 32; ++i) k.out[i] = r;
  });
  return (uint32_t)k->out[self().lane];
}

uint32_t match_sync(bool all, uint64_t value, uint32_t mask, SrcLoc loc, bool *all_equal) {
  preempt();
  auto k = warpRendezvous(all ? "match.all.sync" : "match.any.sync", mask, loc, value, 0, nullptr,
                          [=](Collective &k) {
                            uint32_t members = 0;
                            for (int i = 0; i < 32; ++i)
                              if (k.present[i]) members |= 1u << i;
                            for (int i = 0; i < 32; ++i) {
                              if (!k.present[i]) continue;
                              uint32_t same = 0;
                              for (int j = 0; j < 32; ++j)
                                if (k.present[j] && k.in[j] == k.in[i]) same |= 1u << j;
                              // bit 32: every member holds the value
                              k.out[i] = same | ((uint64_t)(same == members) << 32);
                            }
                          });
  const uint64_t r = k->out[self().lane];
  const bool eq = (r >> 32) & 1;
  if (all_equal) *all_equal = eq;
  if (all) return eq ? (uint32_t)r : 0;
  return (uint32_t)r;
}

void syncwarp(uint32_t mask, SrcLoc loc) {
  preempt();
  warpRendezvous("bar.warp.sync", mask, loc, 0, 0, nullptr, [](Collective &) {});
}

void ldmatrix(int num, bool trans, uint32_t row_addr, uint32_t *regs, SrcLoc loc) {
  preempt();
  if (num != 1 && num != 2 && num != 4)
    unknown_instruction("ldmatrix with a count other than x1/x2/x4", loc);
  std::string kind = "ldmatrix.x" + std::to_string(num) + (trans ? ".trans" : "");
  warpRendezvous(kind, 0xffffffffu, loc, row_addr, 0, regs, [num, trans, loc](Collective &k) {
    for (int m = 0; m < num; ++m)
      for (int r = 0; r < 8; ++r) checkShared((uint32_t)k.in[m * 8 + r], 16, loc);
    auto elem = [&](int m, int r, int col) {
      uint16_t v;
      std::memcpy(&v, static_cast<uint8_t *>(smemPtr((uint32_t)k.in[m * 8 + r])) + 2 * col, 2);
      return (uint32_t)v;
    };
    for (int l = 0; l < 32; ++l) {
      if (!k.present[l]) continue;
      auto *out = static_cast<uint32_t *>(k.ptrs[l]);
      for (int m = 0; m < num; ++m) {
        uint32_t lo, hi;
        if (!trans) {
          lo = elem(m, l / 4, 2 * (l % 4));
          hi = elem(m, l / 4, 2 * (l % 4) + 1);
        } else {
          lo = elem(m, 2 * (l % 4), l / 4);
          hi = elem(m, 2 * (l % 4) + 1, l / 4);
        }
        out[m] = lo | (hi << 16);
      }
    }
  });
}

void stmatrix(int num, bool trans, uint32_t row_addr, const uint32_t *regs, SrcLoc loc) {
  preempt();
  if (num != 1 && num != 2 && num != 4)
    unknown_instruction("stmatrix with a count other than x1/x2/x4", loc);
  std::string kind = "stmatrix.x" + std::to_string(num) + (trans ? ".trans" : "");
  warpRendezvous(kind, 0xffffffffu, loc, row_addr, 0, const_cast<uint32_t *>(regs),
                 [num, trans, loc](Collective &k) {
                   for (int m = 0; m < num; ++m)
                     for (int r = 0; r < 8; ++r) {
                       uint32_t a = (uint32_t)k.in[m * 8 + r];
                       checkShared(a, 16, loc);
                       for (int col = 0; col < 8; ++col) {
                         // fragment (row, col) lives in lane 4*row + col/2, half col%2; .trans
                         // swaps them
                         int fr = trans ? col : r, fc = trans ? r : col;
                         int lane = 4 * fr + fc / 2;
                         uint32_t reg = static_cast<uint32_t *>(k.ptrs[lane])[m];
                         uint16_t v = (uint16_t)(fc % 2 ? reg >> 16 : reg & 0xffff);
                         std::memcpy(static_cast<uint8_t *>(smemPtr(a)) + 2 * col, &v, 2);
                       }
                     }
                 });
}

void setmaxnreg(bool inc, uint32_t regs, SrcLoc loc) {
  preempt();
  if (regs < 24 || regs > 256 || regs % 8)
    // ptxas rejects it: on the GPU this program never builds.
    fail("compile-error/ptxas", loc,
         "setmaxnreg." + std::string(inc ? "inc" : "dec") + " " + std::to_string(regs) +
             ": ptxas accepts a register count of 24-256 in multiples of 8");
  int wg = self().warpgroup;
  warpgroupRendezvous(inc ? "setmaxnreg.inc" : "setmaxnreg.dec", loc, nullptr,
                      [wg, regs](Collective &) { cta().maxnreg[wg] = (int)regs; });
}

// ---------------------------------------------------------------------------------------
// Atomics
// ---------------------------------------------------------------------------------------
template <class T>
static T atomApply(Atom op, T old, T v) {
  switch (op) {
    case Atom::Add:
      return old + v;
    case Atom::Min:
      return std::min(old, v);
    case Atom::Max:
      return std::max(old, v);
    case Atom::And:
      return old & v;
    case Atom::Or:
      return old | v;
    case Atom::Xor:
      return old ^ v;
    case Atom::Exch:
      return v;
    case Atom::Inc:
      return old >= v ? 0 : old + 1;
    case Atom::Dec:
      return (old == 0 || old > v) ? v : old - 1;
  }
  return old;
}

uint32_t atom_u32(Atom op, uint32_t *p, uint32_t v, SrcLoc loc) {
  preempt();
  checkAccess(p, 4, loc);
  uint32_t old = *p;
  *p = atomApply(op, old, v);
  return old;
}

int32_t atom_s32(Atom op, int32_t *p, int32_t v, SrcLoc loc) {
  preempt();
  checkAccess(p, 4, loc);
  int32_t old = *p;
  *p = atomApply(op, old, v);
  return old;
}

float atom_add_f32(float *p, float v, SrcLoc loc) {
  preempt();
  checkAccess(p, 4, loc);
  float old = *p;
  *p = old + v;
  return old;
}

uint32_t atom_cas_u32(uint32_t *p, uint32_t compare, uint32_t v, SrcLoc loc) {
  preempt();
  checkAccess(p, 4, loc);
  uint32_t old = *p;
  if (old == compare) *p = v;
  return old;
}

uint64_t atom_add_u64(uint64_t *p, uint64_t v, SrcLoc loc) {
  preempt();
  checkAccess(p, 8, loc);
  uint64_t old = *p;
  *p = old + v;
  return old;
}

void unknown_instruction(const char *instruction, SrcLoc loc) {
  fail("infra-error/unknown-instruction", loc,
       std::string("the emulator does not implement: ") + instruction);
}

}  // namespace ptx
}  // namespace wsemu
