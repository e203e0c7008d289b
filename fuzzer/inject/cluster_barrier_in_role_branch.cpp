// cluster-barrier-in-role-branch: a top-level cluster barrier (barrier.cluster.arrive then
// barrier.cluster.wait, or one use that does both) moved into one role's branch. The barrier
// waits for every non-exited thread of the cluster: the roles outside the branch never arrive
// while they wait on what the roles inside it would do after the barrier (docs/methodology.md
// class 1). Offered for every role branch of the kernel, before the barrier or after it.
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> clusterBarrierInRoleBranchSites(const ParsedSource &src,
                                                        const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (size_t i = 0; i < idx.occs.size(); ++i) {
    const Occurrence &o = idx.occs[i];
    if (!o.in_kernel || !o.ctl.empty() || !o.anchor_top_level) continue;
    // The statements the barrier is: one use, or an arrive and the wait right after it.
    std::vector<Range> stmts;
    if (o.prim == "barrier.cluster") {
      if (auto st = useStmt(t, o); st && st->second) stmts.push_back(st->first);
    } else if (o.prim == "barrier.cluster.arrive" && i + 1 < idx.occs.size()) {
      const Occurrence &w = idx.occs[i + 1];
      auto sa = useStmt(t, o), sw = useStmt(t, w);
      if (w.prim == "barrier.cluster.wait" && w.block == o.block && sa && sw && sa->second &&
          sw->second)
        stmts = {sa->first, sw->first};
    }
    if (stmts.empty()) continue;
    std::string moved;
    for (auto &r : stmts) moved += (moved.empty() ? "" : " ") + slice(t, r);
    for (auto &k : idx.kernels) {
      if (o.expr.begin < k.body.begin || o.expr.end > k.body.end) continue;
      for (auto &f : k.ifs) {
        if (isSingleThreadGuard(f.cond_text)) continue;
        if (f.cond_text.find("warp") == std::string::npos &&
            f.cond_text.find("wg") == std::string::npos &&
            f.cond_text.find("role") == std::string::npos)
          continue;
        auto add = [&](Range arm, const std::string &which) {
          std::vector<Edit> edits;
          for (auto &r : stmts) edits.push_back(deleteStmt(t, r, true));
          edits.push_back(insertAtBlockStart(t, arm, moved));
          out.push_back(makeSite("cluster-barrier-in-role-branch", t, edits,
                                 "cluster barrier at line " + std::to_string(o.line) +
                                     " moved into the " + which + " of `if (" + f.cond_text +
                                     ")` (line " + std::to_string(lineOf(t, f.whole.begin)) + ")"));
        };
        if (f.then_compound) add(f.then_arm, "then arm");
        if (f.has_else && f.else_compound) add(f.else_arm, "else arm");
      }
    }
  }
  return out;
}

}  // namespace wsr::inject
