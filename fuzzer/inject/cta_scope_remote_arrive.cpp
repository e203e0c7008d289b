// cta-scope-remote-arrive: an mbarrier arrive on a peer CTA's barrier (a shared::cluster address,
// from mapa) releases at `.cta` scope where `.cluster` is needed. A thread that stored into the
// peer's shared memory (st.shared::cluster) before it arrives has not released those stores to
// the peer's threads that acquire the phase: they may read the peer's buffer before the stores.
// `.release.cluster` -> `.release.cta` in the asm; a wrapper's call becomes the asm with its
// arguments.
#include "inject.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/StringRef.h>

namespace wsr::inject {

std::vector<InjectSite> ctaScopeRemoteArriveSites(const ParsedSource &src, const KernelIndex &idx) {
  std::vector<InjectSite> out;
  const std::string &t = src.text;
  for (auto &o : idx.occs) {
    if (!o.in_kernel || (o.prim != "mbarrier.arrive" && o.prim != "mbarrier.arrive.expect_tx"))
      continue;
    llvm::SmallVector<llvm::StringRef, 8> q;  // the opcode's qualifiers
    llvm::StringRef(o.opcode).split(q, '.');
    bool remote = false, cluster_scope = false;
    for (auto &x : q) {
      remote |= x == "shared::cluster";
      if (x == "cluster") x = "cta", cluster_scope = true;
    }
    if (!remote || !cluster_scope) continue;
    const std::string opcode = llvm::join(q, ".");
    const std::string where = o.via + " at line " + std::to_string(o.line);
    if (o.via == "asm") {
      std::string text = slice(t, o.expr);
      size_t at = text.find(o.opcode);
      if (at == std::string::npos) continue;  // the opcode is split over string literals
      out.push_back(makeSite("cta-scope-remote-arrive", t,
                             {Edit{o.expr.begin + (unsigned)at, (unsigned)o.opcode.size(), opcode}},
                             o.opcode + " -> " + opcode + " (" + where + ")"));
      continue;
    }
    // A wrapper's call that is a statement of its own: the state (the sink `_`), the barrier's
    // address and an optional count or byte count, each from the call's arguments.
    if (!useStmt(t, o) || o.ops.size() < 2 || o.ops.size() > 3 || o.ops[0].ptx != "_") continue;
    std::string operands = "_", inputs;
    bool ok = true;
    for (size_t i = 1; i < o.ops.size(); ++i) {
      if (!o.ops[i].src) {
        ok = false;
        break;
      }
      const std::string n = "%" + std::to_string(i - 1);
      operands += i == 1 ? ", [" + n + "]" : ", " + n;
      inputs += std::string(i == 1 ? "" : ", ") + "\"r\"(" + slice(t, *o.ops[i].src) + ")";
    }
    if (!ok) continue;
    out.push_back(makeSite("cta-scope-remote-arrive", t,
                           {Edit{o.expr.begin, o.expr.size(),
                                 "asm volatile(\"" + opcode + " " + operands +
                                     ";\\n\" ::" + inputs + " : \"memory\")"}},
                           o.opcode + " -> " + opcode + " (" + where + ")"));
  }
  return out;
}

}  // namespace wsr::inject
