// scheduler-skip (persistent kernels): some threads of a role never advance the tile
// scheduler (`tile += gridDim.x` -> 0 for them) and wait for a tile the others already
// consumed. In a multi-thread role the odd warps skip; a one-thread role (the TMA producer)
// skips as a whole.
#include "inject.h"

#include <set>

namespace wsr::inject {

std::vector<InjectSite> schedulerSkipSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  std::set<unsigned> seen;
  for (auto &o : idx.occs) {
    if (!o.in_kernel) continue;
    for (size_t i = 0; i < o.ctl.size(); ++i) {
      auto &c = o.ctl[i];
      if (c.kind != Ctl::Loop || !c.grid_advance || !seen.insert(c.whole.begin).second) continue;
      bool single = false;
      for (size_t j = i + 1; j < o.ctl.size(); ++j)
        single |= o.ctl[j].kind == Ctl::If && isSingleThreadGuard(o.ctl[j].cond_text);
      std::string rhs = slice(t, *c.grid_advance), role = roleOf(o);
      std::string with =
          single ? "0 * (" + rhs + ")" : "((threadIdx.x / 32) % 2 ? 0 : (" + rhs + "))";
      out.push_back(makeSite(
          "scheduler-skip", t, {Edit{c.grid_advance->begin, c.grid_advance->size(), with}},
          (role.empty() ? "" : role + " ") + "tile loop (line " +
              std::to_string(lineOf(t, c.whole.begin)) +
              "): " + (single ? "its one thread never advances" : "odd warps never advance") +
              " (+= " + rhs + " -> " + with + ")"));
    }
  }
  return out;
}

}  // namespace wsr::inject
