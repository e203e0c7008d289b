// arrival-count: an mbarrier's init count != the number of threads that arrive on it
// (docs/methodology.md class 1, row 1). Two bugs per init: the count doubled, and 1 <-> 128
// (128 where one elected lane arrives, 1 where a warpgroup does).
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> arrivalCountSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto *o : idx.find("mbarrier.init")) {
    auto *count = o->last();
    if (!count || !count->src) continue;
    std::string e = slice(t, *count->src);
    std::string at = " (" + o->via + " at line " + std::to_string(o->line) + ")";
    out.push_back(makeSite("arrival-count", t,
                           {Edit{count->src->begin, count->src->size(), "(" + e + ") * 2"}},
                           "init count " + e + " -> (" + e + ") * 2" + at));
    if (count->value) {
      std::string alt = *count->value == 1 ? "128" : "1";
      out.push_back(makeSite(
          "arrival-count", t, {Edit{count->src->begin, count->src->size(), alt}},
          "init count " + e + " (= " + std::to_string(*count->value) + ") -> " + alt + at));
    }
  }
  return out;
}

}  // namespace wsr::inject
