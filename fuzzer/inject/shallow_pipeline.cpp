// shallow-pipeline (class 4, correct but slow): the ring depth knob (STAGES) at the smallest
// value its static_asserts allow, or a wgmma.wait_group<N> with N > 0 made a wait<0> right
// after issue. Judged against the reference's own timing baseline.
#include "inject.h"

#include <regex>

namespace wsr::inject {

std::vector<InjectSite> shallowPipelineSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  static const std::regex depth(
      R"((^|_)(STAGES|STAGE_COUNT|PIPE_DEPTH|PIPELINE_DEPTH|RING_DEPTH)$)");
  for (auto &k : idx.knobs) {
    if (!std::regex_search(k.name, depth) || k.v <= k.min_allowed) continue;
    out.push_back(makeSite(
        "shallow-pipeline", t, {Edit{k.value.begin, k.value.size(), std::to_string(k.min_allowed)}},
        k.name + " " + std::to_string(k.v) + " -> " + std::to_string(k.min_allowed) + " (line " +
            std::to_string(lineOf(t, k.value.begin)) + ")"));
  }
  for (auto *w : idx.inKernels("wgmma.wait_group")) {
    if (!w->targs || !w->targ_value || *w->targ_value <= 0) continue;
    out.push_back(makeSite("shallow-pipeline", t, {Edit{w->targs->begin, w->targs->size(), "0"}},
                           w->via + "<" + slice(t, *w->targs) + "> -> <0> at line " +
                               std::to_string(w->line) + ": wait right after issue"));
  }
  return out;
}

}  // namespace wsr::inject
