// tmem-alloc-lane-guard (Blackwell): tcgen05.alloc / dealloc, whole-warp collectives, put
// under a lane==0 guard (docs/methodology.md class 2: poisons the context on hardware). Here:
// compiled, and the static check confirms a TMEM collective under a lane guard.
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> tmemAllocLaneGuardSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto &o : idx.occs) {
    if (!o.in_kernel || (o.prim != "tcgen05.alloc" && o.prim != "tcgen05.dealloc")) continue;
    auto st = useStmt(t, o);
    if (!st) continue;
    out.push_back(makeSite(
        "tmem-alloc-lane-guard", t,
        {Edit{st->first.begin, st->first.size(),
              "if ((threadIdx.x % 32) == 0) { " + slice(t, st->first) + " }"}},
        o.via + " (" + o.prim + ") at line " + std::to_string(o.line) + " under a lane==0 guard"));
  }
  return out;
}

bool tmemAllocLaneGuardCheck(const KernelIndex &idx, std::string *why) {
  for (auto &o : idx.occs) {
    if (!o.in_kernel || (o.prim != "tcgen05.alloc" && o.prim != "tcgen05.dealloc")) continue;
    for (auto &c : o.ctl)
      if (c.kind == Ctl::If && isLaneGuard(c.cond_text)) {
        if (why)
          *why = o.prim + " at line " + std::to_string(o.line) + " runs under `if (" + c.cond_text +
                 ")`: one lane, not the warp";
        return true;
      }
  }
  if (why) *why = "every tcgen05.alloc/dealloc is issued by a whole warp";
  return false;
}

}  // namespace wsr::inject
