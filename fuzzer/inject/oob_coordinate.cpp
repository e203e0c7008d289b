// oob-coordinate: a TMA box's row coordinate, or a kernel's global-memory index, pushed past
// the tensor's end (docs/methodology.md class 2, last row). TMA clips (zeros in, stores dropped); a
// plain index lands elsewhere or faults.
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> oobCoordinateSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto &o : idx.occs) {
    if (!o.in_kernel || (o.prim != "tma.load" && o.prim != "tma.store")) continue;
    auto coords = o.coords();
    if (coords.empty() || !coords.back()->src) continue;
    Range r = *coords.back()->src;  // the outermost dimension: the row
    std::string e = slice(t, r);
    out.push_back(
        makeSite("oob-coordinate", t, {Edit{r.begin, r.size(), "(" + e + ") + (1 << 20)"}},
                 std::string(o.prim == "tma.load" ? "TMA load" : "TMA store") + " row coordinate " +
                     e + " + 2^20 (" + o.via + " at line " + std::to_string(o.line) + ")"));
  }
  for (auto &g : idx.globals) {
    std::string e = slice(t, g.index);
    out.push_back(makeSite("oob-coordinate", t,
                           {Edit{g.index.begin, g.index.size(), "(" + e + ") + (1 << 22)"}},
                           std::string("global ") + (g.write ? "store " : "load ") + g.base + "[" +
                               e + " + 2^22] at line " + std::to_string(lineOf(t, g.index.begin))));
  }
  return out;
}

}  // namespace wsr::inject
