// init-in-role-branch: the barrier-init block (the top-level `if (threadIdx.x == 0)` holding
// the mbarrier inits) moved into a role branch that CTA thread 0 does not take, so nobody
// initialises the barriers (docs/methodology.md class 1, row 2; the "spot the bug" widget).
#include "inject.h"

#include <regex>

namespace wsr::inject {

// The arm of a role branch that thread 0 (warpgroup 0, warp 0) never enters.
static const Range *armWithoutThread0(const TopIf &f) {
  static const std::regex zero(R"(\b(warpgroup|wg|wg_id|warp_group|warp|warp_id|role)\s*==\s*0\b)");
  static const std::regex other(
      R"(\b(warpgroup|wg|wg_id|warp_group|warp|warp_id|role)\s*(==\s*[1-9]|!=\s*0|>=?\s*[1-9]))");
  if (isSingleThreadGuard(f.cond_text)) return nullptr;
  if (std::regex_search(f.cond_text, zero))
    return f.has_else && f.else_compound ? &f.else_arm : nullptr;
  if (std::regex_search(f.cond_text, other)) return f.then_compound ? &f.then_arm : nullptr;
  return nullptr;
}

std::vector<InjectSite> initInRoleBranchSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto &k : idx.kernels) {
    for (size_t i = 0; i < k.ifs.size(); ++i) {
      const TopIf &init = k.ifs[i];
      if (!isSingleThreadGuard(init.cond_text)) continue;
      bool has_init = false;
      for (auto *o : idx.inKernels("mbarrier.init"))
        has_init |= o->expr.begin >= init.whole.begin && o->expr.end <= init.whole.end;
      if (!has_init) continue;
      for (size_t j = i + 1; j < k.ifs.size(); ++j) {
        const Range *arm = armWithoutThread0(k.ifs[j]);
        if (!arm) continue;
        out.push_back(makeSite(
            "init-in-role-branch", t,
            {deleteStmt(t, init.whole, true), insertAtBlockStart(t, *arm, slice(t, init.whole))},
            "barrier init `if (" + init.cond_text + ")` (line " +
                std::to_string(lineOf(t, init.whole.begin)) + ") moved into the `if (" +
                k.ifs[j].cond_text + ")` " + (arm == &k.ifs[j].else_arm ? "else arm" : "branch") +
                " at line " + std::to_string(lineOf(t, arm->begin))));
        break;  // the first role branch without thread 0: one bug per init block
      }
    }
  }
  return out;
}

}  // namespace wsr::inject
