// remove-tma-load: a function's TMA loads deleted together with the byte counts its
// arrive.expect_tx announced for them (set to 0). Either edit alone changes how a pipeline hangs:
// a load with nothing expected leaves the barrier's tx-count below zero, an expect_tx with no load
// never completes. So delta debugging over single statements keeps every load, and with them the
// tensor maps and the host code that makes them: the GEMM hang's reduction on the H200 stopped at
// 137 lines, a third of them that. As one site the pair can go.
// The loads and the expect_tx uses come from the injectors' index (frontend/kernel_index.h):
// wrapper calls and raw PTX alike.
#include "kernel_index.h"
#include "pass.h"

#include <algorithm>
#include <map>

namespace wsr {

std::vector<PassSite> removeTmaLoadSites(const ParsedSource &src) {
  std::vector<PassSite> out;
  KernelIndex idx = buildIndex(src);
  if (!idx.parsed) return out;
  struct Parts {
    std::vector<Edit> loads, bytes;
    unsigned line = 0;
  };
  std::map<std::string, Parts> per_fn;  // by function, in name order (deterministic)
  for (auto *o : idx.find("tma.load")) {
    Range r = widenToLines(src.text, o->anchor);
    auto &p = per_fn[o->function];
    p.loads.push_back(Edit{r.begin, r.size(), ""});
    if (!p.line || o->line < p.line) p.line = o->line;
  }
  for (auto *o : idx.find("mbarrier.arrive.expect_tx")) {
    auto *b = o->last();
    if (!b || !b->src || (b->value && *b->value == 0)) continue;
    per_fn[o->function].bytes.push_back(Edit{b->src->begin, b->src->size(), "0"});
  }
  std::vector<Edit> all;
  size_t fns = 0;
  for (auto &[fn, p] : per_fn) {
    std::erase_if(p.bytes, [&](const Edit &b) {  // inside a load's statement: it goes with it
      return std::any_of(p.loads.begin(), p.loads.end(),
                         [&](const Edit &l) { return overlaps(l, b); });
    });
    if (p.loads.empty() || p.bytes.empty()) continue;
    ++fns;
    PassSite s;
    s.pass = "remove-tma-load";
    s.edits = p.loads;
    s.edits.insert(s.edits.end(), p.bytes.begin(), p.bytes.end());
    all.insert(all.end(), s.edits.begin(), s.edits.end());
    std::sort(s.edits.begin(), s.edits.end());
    s.line = p.line;
    s.note = "remove the " + std::to_string(p.loads.size()) + " TMA load(s) of " + fn +
             " and set its " + std::to_string(p.bytes.size()) + " expect_tx byte count(s) to 0";
    out.push_back(std::move(s));
  }
  // Each function's site after the all-functions one (level 1) when there are several; one
  // function's is tried in the first round (level 0), before the statements are taken one by one.
  // At level 1 it waited for round 2, and the tensor maps and the host code that makes them stayed
  // until then: 339 s of the 900 s CPU reduction of the GEMM hang (gemm-2).
  for (auto &s : out) s.level = fns > 1 ? 1 : 0;
  if (fns > 1) {  // every function's at once first
    PassSite s;
    s.pass = "remove-tma-load";
    std::sort(all.begin(), all.end());
    s.edits = std::move(all);
    s.line = lineOf(src.text, s.edits.front().offset);
    s.level = 0;
    s.note = "remove every TMA load and set every expect_tx byte count to 0";
    out.push_back(std::move(s));
  }
  dedupeAndOrder(out);
  return out;
}

}  // namespace wsr
