// expect-tx-bytes: arrive.expect_tx announces a byte count != the bytes the TMA moves,
// twice and half (both hung on the H200; half can complete early with several boxes).
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> expectTxBytesSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto *o : idx.find("mbarrier.arrive.expect_tx")) {
    auto *b = o->last();
    if (!b || !b->src) continue;
    std::string e = slice(t, *b->src),
                at = " (" + o->via + " at line " + std::to_string(o->line) + ")";
    for (const char *op : {" * 2", " / 2"})
      out.push_back(makeSite("expect-tx-bytes", t,
                             {Edit{b->src->begin, b->src->size(), "(" + e + ")" + op}},
                             "expect_tx bytes " + e + " -> (" + e + ")" + op + at));
  }
  return out;
}

}  // namespace wsr::inject
