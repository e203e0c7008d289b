// missing-proxy-fence: the fence.proxy.async that makes threads' smem writes visible to the
// TMA engine, deleted before the TMA store that reads them.
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> missingProxyFenceSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto *f : idx.inKernels("fence.proxy.async")) {
    const Occurrence *store = nullptr;
    for (auto *s : idx.inKernels("tma.store"))
      if (s->function == f->function && s->expr.begin > f->expr.end && !store) store = s;
    if (!store) continue;
    if (auto e = deleteUse(t, *f))
      out.push_back(makeSite("missing-proxy-fence", t, {*e},
                             "delete " + f->via + " at line " + std::to_string(f->line) +
                                 " (before the TMA store at line " + std::to_string(store->line) +
                                 ")"));
  }
  return out;
}

}  // namespace wsr::inject
