// missing-griddepcontrol-wait: the dependent grid of a programmatic dependent launch loses its
// griddepcontrol.wait (cudaGridDependencySynchronize()). launch_dependents lets it begin while
// the grid before it still runs, and only the wait orders that grid's writes before its reads: it
// now reads the primary's output whenever its threads get there.
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> missingGriddepcontrolWaitSites(const ParsedSource &src,
                                                       const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto *o : idx.inKernels("griddepcontrol.wait"))
    if (auto e = deleteUse(t, *o))
      out.push_back(makeSite("missing-griddepcontrol-wait", t, {*e},
                             "delete " + o->via + " at line " + std::to_string(o->line) + " (in " +
                                 o->function + ")"));
  return out;
}

}  // namespace wsr::inject
