// named-barrier-id-collision: two groups of threads made to count on one hardware barrier. A
// counted named barrier whose id depends on the group (`1 + consumer`) is given one id for all,
// 0 (the one __syncthreads waits on): each group's arrivals then complete the other's phases,
// and a group that runs ahead into its next use mixes two phases. A barrier with a constant id
// is given another named barrier's id. (A constant id turned into 0 with nothing else on
// barrier 0 at the time is a legal use, not a bug: the GPU and the emulator both pass it.) A
// kernel written this way wedged one CTA in about 1 of 25 launches on the GPU.
#include "inject.h"

#include <set>

namespace wsr::inject {

std::vector<InjectSite> namedBarrierIdCollisionSites(const ParsedSource &src,
                                                     const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  auto named = idx.inKernels("bar.named");
  std::set<long long> ids;
  for (auto *o : named)
    if (!o->ops.empty() && o->ops[0].value) ids.insert(*o->ops[0].value);
  for (auto *o : named) {
    if (o->ops.size() < 2 || !o->ops[0].src) continue;
    const Operand &id = o->ops[0];
    std::string e = slice(t, *id.src);
    std::set<long long> to = id.value ? ids : std::set<long long>{0};
    for (long long other : to) {
      if (id.value && *id.value == other) continue;
      std::string with = std::to_string(other);
      out.push_back(makeSite("named-barrier-id-collision", t,
                             {Edit{id.src->begin, id.src->size(), with}},
                             "named barrier id " + e + " -> " + with +
                                 (id.value ? " (another named barrier's)" : " for every group") +
                                 " (" + o->via + " at line " + std::to_string(o->line) + ")"));
    }
  }
  return out;
}

}  // namespace wsr::inject
