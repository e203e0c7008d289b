// k-loop-off-by-one: a handoff loop (the innermost loop around an mbarrier wait) of one role
// iterates one time fewer: the phases of the two sides drift, "hang on the second tile".
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> kLoopOffByOneSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto *o : idx.inKernels("mbarrier.wait")) {
    for (auto &c : o->ctl) {
      if (c.kind != Ctl::Loop) continue;
      if (c.bound) {
        std::string b = slice(t, *c.bound), role = roleOf(*o);
        out.push_back(makeSite(
            "k-loop-off-by-one", t, {Edit{c.bound->begin, c.bound->size(), "(" + b + ") - 1"}},
            (role.empty() ? "" : role + " ") + "loop `" + c.cond_text + "` (line " +
                std::to_string(lineOf(t, c.whole.begin)) + ") bound " + b + " -> (" + b + ") - 1"));
      }
      break;  // the innermost loop only
    }
  }
  return out;
}

}  // namespace wsr::inject
