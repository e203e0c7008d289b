// named-barrier-arrive: one use of a counted named barrier that only arrives (`bar.sync id, n`
// -> `bar.arrive id, n`): its threads still count toward the barrier but go on without waiting
// for the others. A CUTLASS attention kernel hung this way when an early-exit path called
// NamedBarrier::arrive() where its loop needed arrive_and_wait(). The threads that went on read
// what the others have not written yet, or reach the barrier's next use one phase early.
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> namedBarrierArriveSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto *o : idx.inKernels("bar.named")) {
    if (o->ops.size() < 2 || !o->ops[0].src || !o->ops[1].src) continue;
    const std::string where = o->via + " at line " + std::to_string(o->line);
    if (o->via == "asm") {
      // PTX in the kernel itself: the instruction's name in the asm string.
      std::string text = slice(t, o->expr);
      for (const char *op : {"barrier.sync", "bar.sync"})
        if (size_t at = text.find(op); at != std::string::npos) {
          std::string arrive = std::string(op).substr(0, std::string(op).find('.')) + ".arrive";
          out.push_back(makeSite("named-barrier-arrive", t,
                                 {Edit{o->expr.begin + (unsigned)at,
                                       (unsigned)std::string(op).size(), arrive}},
                                 std::string(op) + " -> " + arrive + " (" + where + ")"));
          break;
        }
      continue;
    }
    // A wrapper's call that is a statement of its own becomes the arrive, with its arguments.
    auto stmt = useStmt(t, *o);
    if (!stmt) continue;
    std::string id = slice(t, *o->ops[0].src), count = slice(t, *o->ops[1].src);
    out.push_back(makeSite(
        "named-barrier-arrive", t,
        {Edit{o->expr.begin, o->expr.size(),
              "asm volatile(\"bar.arrive %0, %1;\\n\" ::\"r\"(" + id + "), \"r\"(" + count +
                  ") : \"memory\")"}},
        "named barrier " + id + " only arrives (" + where + ")"));
  }
  return out;
}

}  // namespace wsr::inject
