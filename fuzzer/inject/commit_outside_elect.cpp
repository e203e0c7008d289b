// commit-outside-elect (Blackwell): a tcgen05.commit taken out of the elected lane's branch
// and issued by the whole warp: 31 lanes commit empty groups and signal the barrier early.
#include "inject.h"

namespace wsr::inject {

// The guard without its lane/elect terms: `warp == 1 && elect_one_sync()` -> `warp == 1`.
static std::string warpPart(const std::string &cond) {
  std::string out, term;
  size_t at = 0;
  while (at <= cond.size()) {
    size_t amp = cond.find("&&", at);
    term = cond.substr(at, amp == std::string::npos ? std::string::npos : amp - at);
    if (!isLaneGuard(term)) out += (out.empty() ? "" : " &&") + term;
    if (amp == std::string::npos) break;
    at = amp + 2;
  }
  size_t b = out.find_first_not_of(' '), e = out.find_last_not_of(' ');
  return b == std::string::npos ? "true" : out.substr(b, e - b + 1);
}

std::vector<InjectSite> commitOutsideElectSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto *c : idx.inKernels("tcgen05.commit")) {
    if (c->ctl.empty() || c->ctl[0].kind != Ctl::If || !isLaneGuard(c->ctl[0].cond_text)) continue;
    auto st = useStmt(t, *c);
    if (!st || !st->second) continue;
    const Ctl &g = c->ctl[0];
    unsigned ls = g.whole.begin;
    while (ls > 0 && t[ls - 1] != '\n') --ls;
    std::string indent;
    for (unsigned i = ls; i < t.size() && (t[i] == ' ' || t[i] == '\t'); ++i) indent += t[i];
    std::string guard = warpPart(g.cond_text);
    out.push_back(makeSite(
        "commit-outside-elect", t,
        {deleteStmt(t, st->first, true), Edit{g.whole.end, 0,
                                              "\n" + indent + "if (" + guard + ") " +
                                                  slice(t, st->first) + "  // every lane commits"}},
        c->via + " at line " + std::to_string(c->line) + " moved out of `if (" + g.cond_text +
            ")` to `if (" + guard + ")`: all 32 lanes commit"));
  }
  return out;
}

bool commitOutsideElectCheck(const KernelIndex &idx, std::string *why) {
  for (auto *c : idx.inKernels("tcgen05.commit")) {
    bool elected = false;
    for (auto &g : c->ctl) elected |= g.kind == Ctl::If && isLaneGuard(g.cond_text);
    if (!elected) {
      if (why)
        *why = "tcgen05.commit at line " + std::to_string(c->line) +
               " is not under an elect/lane guard: every lane of the warp commits";
      return true;
    }
  }
  if (why) *why = "every tcgen05.commit is issued by one elected lane";
  return false;
}

}  // namespace wsr::inject
