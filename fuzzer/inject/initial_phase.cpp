// initial-phase: one side of a handoff waits on the other parity, so producer and consumer
// start on the same phase: a producer at 0 blocks on a fresh barrier (hang), a consumer at 1
// passes before the data lands (stale data; 719 on the H200).
#include "inject.h"

#include <regex>

namespace wsr::inject {

std::vector<InjectSite> initialPhaseSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  static const std::regex xor1(R"(^\s*(.*?)\s*\^\s*1\s*$)");
  for (auto *o : idx.inKernels("mbarrier.wait")) {
    auto *p = o->last();
    if (!p || !p->src) continue;
    std::string e = slice(t, *p->src), with;
    std::smatch m;
    if (std::regex_match(e, m, xor1))
      with = m[1];
    else
      with = "(" + e + ") ^ 1";
    std::string role = roleOf(*o);
    out.push_back(makeSite("initial-phase", t, {Edit{p->src->begin, p->src->size(), with}},
                           (role.empty() ? "" : role + " ") + "wait parity " + e + " -> " + with +
                               " (" + o->via + " at line " + std::to_string(o->line) + ")"));
  }
  return out;
}

}  // namespace wsr::inject
