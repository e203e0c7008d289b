// dealloc-without-sync (Blackwell): the CTA barrier between the epilogue's last TMEM read
// and tcgen05.dealloc deleted (a LIFETIME violation: TMEM freed while still read).
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> deallocWithoutSyncSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto *d : idx.inKernels("tcgen05.dealloc")) {
    const Occurrence *sync = nullptr;
    for (auto *b : idx.inKernels("bar.cta"))
      if (b->function == d->function && b->expr.end <= d->expr.begin)
        sync = b;  // the nearest before
    if (!sync) continue;
    if (auto e = deleteUse(t, *sync))
      out.push_back(makeSite("dealloc-without-sync", t, {*e},
                             "delete " + sync->via + " at line " + std::to_string(sync->line) +
                                 " before " + d->via + " at line " + std::to_string(d->line)));
  }
  return out;
}

bool deallocWithoutSyncCheck(const KernelIndex &idx, std::string *why) {
  for (auto *d : idx.inKernels("tcgen05.dealloc")) {
    unsigned last_ld = 0;
    for (auto *l : idx.inKernels("tcgen05.ld"))
      if (l->function == d->function && l->expr.end <= d->expr.begin)
        last_ld = std::max(last_ld, l->expr.end);
    if (!last_ld) continue;
    bool synced = false;
    for (auto *b : idx.inKernels("bar.cta"))
      synced |=
          b->function == d->function && b->expr.begin >= last_ld && b->expr.end <= d->expr.begin;
    if (!synced) {
      if (why)
        *why = "no CTA barrier between the last tcgen05.ld and tcgen05.dealloc at line " +
               std::to_string(d->line);
      return true;
    }
  }
  if (why) *why = "every tcgen05.dealloc follows a CTA barrier after the last TMEM read";
  return false;
}

}  // namespace wsr::inject
