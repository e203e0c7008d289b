// Programmatic dependent launch: griddepcontrol and the races of a dependent grid's accesses before
// its griddepcontrol.wait.
//
// PTX ISA, griddepcontrol: `.launch_dependents` lets the dependents be scheduled once every CTA of
// the grid has issued it or completed (its repeats by other threads of a CTA change nothing);
// `.wait` makes the thread wait until the prerequisite grids have completed and their memory
// operations are performed and made visible to the current grid. Nothing else orders a dependent's
// global accesses after the grid it depends on: launch_dependents carries no memory ordering. So a
// global access of a dependent thread that nothing has ordered after a wait races with every
// access of the grid before it to the same bytes when one of the two writes, whichever the
// schedule ran first and whether or not the value was there yet; two atomics do not race.
//
// A thread is ordered after the wait by its own griddepcontrol.wait, or by a barrier (bar.sync,
// barrier.cluster) or an mbarrier phase whose arrivals include a thread that was (CUTLASS's
// warp-specialized kernels wait in the producer warps only: the consumers learn through the
// pipeline's barriers). The check is the grid's own access against the grid it depends on, and
// the grid's accesses against the early ones of the grid that depends on it; a chain's grids
// further apart are not compared.
#include "emu/runtime/pdl.h"

#include <algorithm>

#include "emu/runtime/device.h"
#include "emu/runtime/ptx.h"

namespace wsemu {

Footprint::Page *Footprint::page(uintptr_t key, bool make) const {
  if (key == last_key_) return last_;
  auto it = pages_.find(key);
  if (it == pages_.end()) {
    if (!make) return nullptr;
    it = pages_.emplace(key, std::make_unique<Page>()).first;
  }
  last_key_ = key;
  last_ = it->second.get();
  return last_;
}

void Footprint::add(uintptr_t a, size_t n, Who w) {
  while (n) {
    const uintptr_t off = a % kPage;
    const size_t m = std::min<size_t>(n, kPage - off);
    Page &p = *page(a / kPage, true);
    for (size_t i = off; i < off + m; ++i) {
      uint64_t &bits = p.bits[i / 64];
      if (!(bits >> (i % 64 & ~size_t(3)) & 0xF)) p.who[i / 4] = w;  // the word's first access
      bits |= 1ull << (i % 64);
    }
    a += m;
    n -= m;
  }
}

bool Footprint::find(uintptr_t a, size_t n, uintptr_t *at, Who *w) const {
  if (pages_.empty()) return false;
  while (n) {
    const uintptr_t off = a % kPage;
    const size_t m = std::min<size_t>(n, kPage - off);
    if (const Page *p = page(a / kPage, false))
      for (size_t i = off; i < off + m; ++i)
        if (p->bits[i / 64] >> (i % 64) & 1) {
          *at = a - off + i;
          *w = p->who[i / 4];
          return true;
        }
    a += m;
    n -= m;
  }
  return false;
}

namespace {

uint32_t siteId(Chain &ch, SrcLoc loc) {
  auto [it, fresh] = ch.site_ids.emplace(std::make_pair(loc.file, loc.line), 0);
  if (fresh) {
    it->second = (uint32_t)ch.sites.size();
    ch.sites.push_back(loc);
  }
  return it->second;
}

Footprint::Who who(const Thread &t, SrcLoc loc, Chain &ch) {
  const Cta &c = *t.home;
  const uint64_t cta =
      c.block_idx.x + (uint64_t)c.grid.x * (c.block_idx.y + (uint64_t)c.grid.y * c.block_idx.z);
  return {siteId(ch, loc), cta < (1u << 22) ? (uint32_t)(cta << 10 | (uint32_t)t.id) : ~0u};
}

// The rule a dependent's early access of kind `s` breaks against an access of kind `p` of the grid
// it depends on to the same bytes, or null: one of them writes, and not both are atomic.
const char *raceOf(Access s, Access p) {
  if (s == Access::Atomic && p == Access::Atomic) return nullptr;
  if (s == Access::Read) return p == Access::Read ? nullptr : "ub/pdl-read-before-wait";
  if (s == Access::Write) return "ub/pdl-write-before-wait";
  return p == Access::Write ? "ub/pdl-read-before-wait" : "ub/pdl-write-before-wait";
}

// "thread 5 (warp 0, warpgroup 0) of block (1,0,0)", from a Who.
std::string threadOf(const GridDep &g, Footprint::Who w) {
  if (w.thread == ~0u) return "a thread";
  const uint32_t cta = w.thread >> 10, id = w.thread & 1023;
  const Dim3 b(cta % g.grid.x, (cta / g.grid.x) % g.grid.y, cta / (g.grid.x * g.grid.y));
  return "thread " + std::to_string(id) + " (warp " + std::to_string(id / 32) + ", warpgroup " +
         std::to_string(id / 128) + ") of block (" + std::to_string(b.x) + "," +
         std::to_string(b.y) + "," + std::to_string(b.z) + ")";
}

// The verdict names the dependent's early access (its site and role in the signature, its block),
// whichever of the two accesses the schedule ran first.
[[noreturn]] void reportRace(const char *detail, GridDep &dep, Footprint::Who dw, Access da,
                             GridDep &pre, Footprint::Who pw, Access pa, uintptr_t at) {
  const Chain &ch = *dep.chain;
  const SrcLoc ds = ch.sites[dw.site], ps = ch.sites[pw.site];
  const std::string dthread = threadOf(dep, dw), pthread = threadOf(pre, pw);
  static const char *const verb[] = {"reads", "writes", "updates (atomically)"};
  const std::string where = describeGlobal(reinterpret_cast<const void *>(at));
  const std::string message =
      std::string(detail) + " at " + siteOf(ds) + " by " + dthread + " of " + dep.name + ": it " +
      verb[(int)da] + " the global byte at " + where +
      " before anything orders it after a griddepcontrol.wait (cudaGridDependencySynchronize), "
      "and " +
      pre.name + ", the grid it depends on (the kernel launched before it in the stream), " +
      verb[(int)pa] + " that byte at " + siteOf(ps) + ", by " + pthread +
      ": griddepcontrol.launch_dependents lets the dependent begin while that grid runs, and only "
      "griddepcontrol.wait orders that grid's memory operations before the dependent's";
  const uint32_t cta = dw.thread == ~0u ? 0 : dw.thread >> 10;
  const uint32_t warpgroup = dw.thread == ~0u ? 0 : (dw.thread & 1023) / 128;
  const Dim3 block(cta % dep.grid.x, (cta / dep.grid.x) % dep.grid.y,
                   cta / (dep.grid.x * dep.grid.y));
  dep.blamed = true;
  failAs(detail, siteOf(ds) + ",warpgroup" + std::to_string(warpgroup), message, block);
}

}  // namespace

void pdlAccess(const void *p, size_t n, Access a, SrcLoc loc) {
  if (!inKernel() || n == 0) return;
  Thread &t = self();
  GridDep *g = t.home->dep;
  if (!g) return;
  const bool early = g->prev && !t.dep_known;
  if (!early && !g->next) return;
  if (!emuInAllocation(p)) return;  // local or shared memory through a generic address
  const auto u = reinterpret_cast<uintptr_t>(p);
  const Footprint::Who me = who(t, loc, *g->chain);
  uintptr_t at = 0;
  Footprint::Who w;
  if (g->next) {
    GridDep &d = *g->next;
    for (int s = 0; s < 3; ++s)
      if (const char *r = raceOf((Access)s, a); r && d.early[s].find(u, n, &at, &w))
        reportRace(r, d, w, (Access)s, *g, me, a, at);
    g->all[(int)a].add(u, n, me);
  }
  if (early) {
    GridDep &pre = *g->prev;
    for (int q = 0; q < 3; ++q)
      if (const char *r = raceOf(a, (Access)q); r && pre.all[q].find(u, n, &at, &w))
        reportRace(r, *g, me, a, pre, w, (Access)q, at);
    g->early[(int)a].add(u, n, me);
  }
}

void pdlRelease(Cta &c) {
  if (!c.dep || c.dep_released) return;
  c.dep_released = true;
  c.dep->released++;
}

void pdlThreadExit(Thread &t) {
  Cta &c = *t.home;
  if (std::all_of(c.warp_live.begin(), c.warp_live.end(), [](int n) { return n == 0; }))
    pdlRelease(c);
}

namespace ptx {

void griddepcontrol_launch_dependents(SrcLoc loc) {
  preempt();
  traceOp("griddepcontrol.launch_dependents");
  pdlRelease(*self().home);
}

void griddepcontrol_wait(SrcLoc loc) {
  preempt();
  Thread &t = self();
  traceOp("griddepcontrol.wait");
  // A grid with nothing before it in flight (a launch without the attribute, or the first of a
  // chain) returns at once, as on the GPU.
  if (GridDep *g = t.home->dep) {
    while (!g->prerequisites_done) {
      g->waiters.push_back(&t);
      WaitInfo w;
      w.kind = WaitKind::GridDep;
      w.loc = loc;
      w.what = g->wait_what.c_str();
      park(w);
    }
    t.site_iters[{loc.file, loc.line}]++;
  }
  t.dep_known = true;
}

}  // namespace ptx
}  // namespace wsemu
