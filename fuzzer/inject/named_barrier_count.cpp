// named-barrier-count: a named barrier (`bar.sync id, count`) told to wait for one warp more
// than the threads that reach it, the mistake of a pipeline whose epilogue barrier counts the
// producer warp too: the warps that do arrive wait for ever. Outside programs written this way
// hang on the H200 (corpus/outside/rownorm_nb_bug.cu); the watchdog names the barrier, the
// count and the threads that arrived.
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> namedBarrierCountSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto *o : idx.inKernels("bar.named")) {
    if (o->ops.size() < 2) continue;  // bar.sync id: every thread of the CTA, no count to change
    const Operand &count = o->ops[1];
    if (!count.src) continue;
    std::string e = slice(t, *count.src);
    out.push_back(makeSite("named-barrier-count", t,
                           {Edit{count.src->begin, count.src->size(), "(" + e + ") + 32"}},
                           "named barrier count " + e + " -> (" + e + ") + 32 (" + o->via +
                               " at line " + std::to_string(o->line) + ")"));
  }
  return out;
}

}  // namespace wsr::inject
