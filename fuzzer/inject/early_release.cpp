// early-release: the consumer's arrive on `empty` moved above the wgmma.wait_group that
// retires the wgmmas still reading the stage: the producer refills smem under a running MMA.
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> earlyReleaseSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto *a : idx.inKernels("mbarrier.arrive")) {
    if (a->block < 0) continue;
    const Occurrence *wait = nullptr;
    for (auto *w : idx.inKernels("wgmma.wait_group"))
      if (w->block == a->block && w->anchor.end <= a->anchor.begin &&
          (!wait || w->anchor.begin > wait->anchor.begin))
        wait = w;
    if (!wait) continue;
    std::string stmt = slice(t, a->anchor);
    out.push_back(
        makeSite("early-release", t,
                 {deleteStmt(t, a->anchor, true), insertLineBefore(t, wait->anchor.begin, stmt)},
                 "`" + stmt + "` (line " + std::to_string(lineOf(t, a->anchor.begin)) +
                     ") moved above " + wait->via + " (line " + std::to_string(wait->line) + ")"));
  }
  return out;
}

}  // namespace wsr::inject
