// missing-tcgen05-fence (Blackwell): the tcgen05.fence::after_thread_sync between an
// mbarrier wait and the tcgen05.mma / tcgen05.ld it releases, deleted.
#include "inject.h"

namespace wsr::inject {

static const Occurrence *nextTcgen05Use(const KernelIndex &idx, const Occurrence &after) {
  for (auto &o : idx.occs)
    if (o.function == after.function && o.expr.begin > after.expr.end &&
        (o.prim == "tcgen05.ld" || o.prim == "tcgen05.mma"))
      return &o;
  return nullptr;
}

std::vector<InjectSite> missingTcgen05FenceSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto *f : idx.inKernels("tcgen05.fence.after")) {
    bool after_wait = false;
    for (auto *w : idx.inKernels("mbarrier.wait"))
      after_wait |= w->block == f->block && w->anchor.end <= f->anchor.begin;
    const Occurrence *use = nextTcgen05Use(idx, *f);
    if (!after_wait || !use) continue;
    if (auto e = deleteUse(t, *f))
      out.push_back(makeSite("missing-tcgen05-fence", t, {*e},
                             "delete " + f->via + " at line " + std::to_string(f->line) +
                                 " (between the mbarrier wait and " + use->prim + " at line " +
                                 std::to_string(use->line) + ")"));
  }
  return out;
}

bool missingTcgen05FenceCheck(const KernelIndex &idx, std::string *why) {
  for (auto *w : idx.inKernels("mbarrier.wait")) {
    const Occurrence *use = nextTcgen05Use(idx, *w);
    if (!use) continue;
    bool fenced = false;
    for (auto *f : idx.inKernels("tcgen05.fence.after"))
      fenced |= f->function == w->function && f->expr.begin >= w->expr.end &&
                f->expr.end <= use->expr.begin;
    if (!fenced) {
      if (why)
        *why = "mbarrier wait at line " + std::to_string(w->line) + " reaches " + use->prim +
               " at line " + std::to_string(use->line) +
               " with no tcgen05.fence::after_thread_sync";
      return true;
    }
  }
  if (why)
    *why =
        "every mbarrier wait before a tcgen05.mma/ld is followed by "
        "tcgen05.fence::after_thread_sync";
  return false;
}

}  // namespace wsr::inject
