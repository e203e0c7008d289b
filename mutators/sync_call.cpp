// sync-call: a host call that waits for the device (cudaMemcpy and its kin, cudaFree,
// cudaStreamSynchronize, cudaEventSynchronize) replaced by cudaDeviceSynchronize(). A hang shows at
// the host's first call that waits for the kernel, and delta debugging can only delete: when the
// original has a copy of the result and a cudaDeviceSynchronize(), whichever is deleted first
// leaves the other holding the hang, and a copy holds its buffers, their declarations, their
// allocation and the headers of their types with it. On the H200 the best of
// two reductions ended with five such lines in main() around `cudaMemcpy(hC.data(), dC, 1, D2H)`
// where the other run's had `cudaDeviceSynchronize();` alone. After this edit remove-stmt and
// remove-decl can take them. Each call is its own site (the oracle judges whether the program
// still fails the same way: a wrong result read through the copy does not).
#include "visit.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>
#include <clang/AST/RecursiveASTVisitor.h>

namespace wsr {
namespace {

bool waitsForTheDevice(llvm::StringRef name) {
  return name.starts_with("cudaMemcpy") || name == "cudaFree" || name == "cudaFreeHost" ||
         name == "cudaStreamSynchronize" || name == "cudaEventSynchronize";
}

struct Visitor : clang::RecursiveASTVisitor<Visitor> {
  clang::ASTContext &ctx;
  const ParsedSource &src;
  std::vector<PassSite> &out;
  Visitor(clang::ASTContext &c, const ParsedSource &s, std::vector<PassSite> &o, PlaceIds &)
      : ctx(c), src(s), out(o) {}

  bool VisitCallExpr(clang::CallExpr *call) {
    const clang::FunctionDecl *fd = call->getDirectCallee();
    if (!fd || !fd->getIdentifier() || !waitsForTheDevice(fd->getName())) return true;
    auto r = mainFileRange(ctx, call->getSourceRange());
    if (!r) return true;  // spelled by a macro's body: unwrap-macro goes first
    out.push_back(replaceSite("sync-call", src, *r, "cudaDeviceSynchronize()",
                              fd->getName().str() + "(...) -> cudaDeviceSynchronize() at line " +
                                  std::to_string(lineOf(src.text, r->begin))));
    return true;
  }
};

}  // namespace

std::vector<PassSite> syncCallSites(const ParsedSource &src) { return visitorSites<Visitor>(src); }

}  // namespace wsr
