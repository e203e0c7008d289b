// missing-store-wait: a TMA store's bulk commit_group, its wait_group.read before the
// staging buffer is rewritten, or its final wait_group before the CTA's smem goes away,
// deleted: a LIFETIME violation on the store path.
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> missingStoreWaitSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  if (idx.inKernels("tma.store").empty()) return out;
  for (auto &o : idx.occs) {
    if (!o.in_kernel) continue;
    const char *what = o.prim == "bulk.commit_group"      ? "commit_group"
                       : o.prim == "bulk.wait_group.read" ? "wait_group.read before staging reuse"
                       : o.prim == "bulk.wait_group"      ? "wait_group before exit"
                                                          : nullptr;
    if (!what) continue;
    if (auto e = deleteUse(t, o))
      out.push_back(makeSite("missing-store-wait", t, {*e},
                             std::string("delete the store ") + what + ": " + o.via + " at line " +
                                 std::to_string(o.line)));
  }
  return out;
}

}  // namespace wsr::inject
