// remove-stmt: delete one statement of a compound statement. Hierarchical: the level is
// the nesting depth, so a whole loop or role branch goes before the statements inside it.
#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/Stmt.h>

namespace wsr {
namespace {
struct Visitor : clang::RecursiveASTVisitor<Visitor> {
  clang::ASTContext &ctx;
  const ParsedSource &src;
  std::vector<PassSite> &out;
  int depth = 0;
  Visitor(clang::ASTContext &c, const ParsedSource &s, std::vector<PassSite> &o) : ctx(c), src(s), out(o) {}

  bool TraverseCompoundStmt(clang::CompoundStmt *cs) {
    for (auto *st : cs->body()) {
      if (llvm::isa<clang::NullStmt>(st)) continue;
      auto r = mainFileRangeWithSemi(ctx, st->getSourceRange());
      if (r && r->size() > 0)
        out.push_back(replaceSite("remove-stmt", src, widenToLines(src.text, *r), "",
                                  std::string("remove ") + st->getStmtClassName() + " at line " +
                                      std::to_string(lineOf(src.text, r->begin)),
                                  depth));
    }
    ++depth;
    bool ok = clang::RecursiveASTVisitor<Visitor>::TraverseCompoundStmt(cs);
    --depth;
    return ok;
  }
};
}  // namespace

std::vector<PassSite> removeStmtSites(const ParsedSource &src) {
  std::vector<PassSite> sites;
  forEachSide(src, [&](clang::ASTContext &ctx, bool) {
    Visitor v(ctx, src, sites);
    v.TraverseDecl(ctx.getTranslationUnitDecl());
  });
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
