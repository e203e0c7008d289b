// cta-sync-in-role-branch: a top-level __syncthreads() (bar.sync 0) moved into one
// warpgroup's branch; the other roles never reach it (docs/methodology.md class 1, row 3).
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> ctaSyncInRoleBranchSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto *o : idx.inKernels("bar.cta")) {
    if (!o->ctl.empty() || !o->anchor_top_level) continue;
    auto st = useStmt(t, *o);
    if (!st || !st->second) continue;
    for (auto &k : idx.kernels) {
      if (o->expr.begin < k.body.begin || o->expr.end > k.body.end) continue;
      for (auto &f : k.ifs) {
        if (f.whole.begin < o->expr.end || isSingleThreadGuard(f.cond_text)) continue;
        if (f.cond_text.find("warp") == std::string::npos &&
            f.cond_text.find("wg") == std::string::npos &&
            f.cond_text.find("role") == std::string::npos)
          continue;
        auto add = [&](Range arm, const std::string &which) {
          out.push_back(makeSite(
              "cta-sync-in-role-branch", t,
              {deleteStmt(t, st->first, true), insertAtBlockStart(t, arm, slice(t, st->first))},
              o->via + " at line " + std::to_string(o->line) + " moved into the " + which +
                  " of `if (" + f.cond_text + ")` (line " +
                  std::to_string(lineOf(t, f.whole.begin)) + ")"));
        };
        if (f.then_compound) add(f.then_arm, "then arm");
        if (f.has_else && f.else_compound) add(f.else_arm, "else arm");
      }
    }
  }
  return out;
}

}  // namespace wsr::inject
