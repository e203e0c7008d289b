// Verdict rendering: the WSEMU lines the oracle parses, and what a parked thread waits on.
#include <map>
#include <sstream>

#include "emu/runtime/ptx.h"
#include "emu/runtime/state.h"

namespace wsemu {

int Verdict::exitStatus() const {
  if (symptom == "pass") return 0;
  if (symptom == "hang") return kExitHang;
  if (symptom == "infra-error" || symptom == "compile-error") return kExitInfra;
  return kExitUB;  // ub, crash
}

std::vector<std::string> Verdict::lines() const {
  std::vector<std::string> out;
  std::ostringstream h;
  h << "WSEMU verdict=" << (detail.empty() ? symptom : detail) << " symptom=" << symptom
    << " block=" << block_of_failure.x << "," << block_of_failure.y << "," << block_of_failure.z
    << " signature=" << signature;
  out.push_back(h.str());
  for (auto &g : parked) {
    std::ostringstream p;
    p << "WSEMU parked warpgroup " << g.warpgroup << ", " << g.warps.size()
      << (g.warps.size() == 1 ? " warp" : " warps") << " (warp";
    for (size_t i = 0; i < g.warps.size(); ++i) p << (i ? "," : " ") << g.warps[i];
    p << "; " << g.threads << " threads), parked at " << g.site << " " << g.what << " iteration "
      << g.iteration;
    out.push_back(p.str());
  }
  if (!message.empty()) out.push_back("WSEMU message " + message);
  out.push_back("WSEMU ops " +
                std::to_string(ops));  // what a caller's WSEMU_MAX_OPS is scaled from
  return out;
}

// The program's notes go with its verdict: both callers _Exit after it, which runs no destructor.
void Verdict::print(FILE *f) const {
  for (auto &l : lines()) std::fprintf(f, "%s\n", l.c_str());
  ptx::printNotes(f);
}

std::string smemName(uint32_t addr) {
  Cta &c = cta();
  auto it = c.smem_names.upper_bound(addr);
  if (it != c.smem_names.begin()) {
    --it;
    const Cta::Sym &s = it->second;
    if (addr < it->first + s.bytes) {
      uint32_t off = addr - it->first;
      std::string n = s.name;
      if (s.bytes > s.elem) n += "[" + std::to_string(off / s.elem) + "]";
      if (off % s.elem) n += "+" + std::to_string(off % s.elem);
      return n;
    }
  }
  std::ostringstream o;
  o << "smem+0x" << std::hex << addr;
  return o.str();
}

std::string waitArrivals(const Thread &t) {
  // A counted named barrier: which one, and how many of its count arrived, in the GPU watchdog's
  // words ("named1:256/288"). The parked roles alone let a CPU reduction of the outside
  // named-barrier hang drop the warpgroup whose bar.arrive brought 128 of the 256: the same
  // roles parked on a barrier that 128 of 288 reach, another cause. A CTA-wide barrier has no
  // count to name (the GPU's signature gives none either).
  if (t.wait.kind == WaitKind::NamedBarrier) {
    const NamedBarrier &b = cta().bars[t.wait.bar_id];
    if (b.cta_wide || b.expected == 0) return "";
    return "named" + std::to_string(t.wait.bar_id) + ":" + std::to_string(b.arrived) + "/" +
           std::to_string(b.expected);
  }
  if (t.wait.kind != WaitKind::MBarrier) return "";
  auto it = cta().mbars.find(t.wait.addr);
  if (it == cta().mbars.end()) return "";
  const MBarrier &b = it->second;
  if (b.uninit) return "uninit";
  if (b.pending == b.expected && b.tx == 0) return "none";
  if (b.pending > 0) return "partial";
  // Every arrival is in and bytes are owed. Whether any came in this phase tells an expect_tx
  // larger than the copies deliver ("tx") from bytes expected with no copy feeding the barrier at
  // all ("tx-none"): the CPU reduction of gemm_expect_tx removed the TMA load and
  // kept expect_tx(65536), the same hang with its cause gone. More bytes than expected: "tx-over".
  if (b.tx < 0) return "tx-over";
  return b.delivered > 0 ? "tx" : "tx-none";
}

std::string describeWait(const Thread &t) {
  Cta &c = cta();
  const WaitInfo &w = t.wait;
  std::ostringstream o;
  switch (w.kind) {
    case WaitKind::MBarrier: {
      o << "mbarrier " << smemName(w.addr);
      auto it = c.mbars.find(w.addr);
      if (it == c.mbars.end()) {
        o << " (not initialised)";
        break;
      }
      const MBarrier &b = it->second;
      if (b.uninit) {
        o << " (not initialised: read as a zeroed word, phase 0) waiting for parity " << w.parity;
        break;
      }
      if (w.what && *w.what) o << " " << w.what;
      o << " waiting for parity " << w.parity << " (phase " << b.phase << " parity "
        << (b.phase & 1) << ", pending " << b.pending << " of " << b.expected << ", tx " << b.tx
        << ")";
      break;
    }
    case WaitKind::NamedBarrier: {
      const NamedBarrier &b = c.bars[w.bar_id];
      o << "bar.sync " << w.bar_id << " (" << b.arrived << " of " << b.expected
        << " threads arrived, warp-granular)";
      break;
    }
    case WaitKind::ClusterBarrier: {
      const Cluster &cl = *c.cluster;
      int live = 0;
      for (const Cta *x : cl.ctas)
        for (auto &tp : x->threads) live += tp->state != Thread::Exited;
      o << "barrier.cluster.wait (" << cl.bar_arrived << " of " << live
        << " non-exited threads of the cluster's " << cl.ctas.size() << " CTAs arrived)";
      break;
    }
    case WaitKind::Collective: {
      Collective *k = w.coll;
      o << k->kind << " rendezvous (" << k->arrived << " of " << k->expected
        << " threads arrived; missing";
      std::map<int, std::string> missing;  // warp -> what its missing threads do
      for (size_t s = 0; s < k->present.size(); ++s) {
        int id = k->base + (int)s;
        if (k->present[s] || id >= (int)c.threads.size()) continue;
        const Thread &m = *c.threads[id];
        std::string st = m.state == Thread::Exited    ? "exited"
                         : m.state == Thread::Blocked ? "parked at " + siteOf(m.wait.loc)
                                                      : "running";
        missing.emplace(m.warp, st);
      }
      for (auto &[wp, st] : missing) o << " warp " << wp << " " << st << ";";
      o << ")";
      break;
    }
    default:
      o << (w.what ? w.what : "?");
  }
  return o.str();
}

}  // namespace wsemu
