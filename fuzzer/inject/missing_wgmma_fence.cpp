// missing-wgmma-fence: the wgmma.fence before a batch of wgmma.mma_async deleted (undefined
// by the PTX spec: register/smem accesses are not ordered before the async MMA).
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> missingWgmmaFenceSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto *f : idx.inKernels("wgmma.fence"))
    if (auto e = deleteUse(t, *f))
      out.push_back(makeSite("missing-wgmma-fence", t, {*e},
                             "delete " + f->via + " at line " + std::to_string(f->line)));
  return out;
}

}  // namespace wsr::inject
