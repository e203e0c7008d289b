// remove-stmt: delete one statement of a compound statement. Hierarchical: the level is
// the nesting depth, so a whole loop or role branch goes before the statements inside it.
// A declaration goes together with the later statements of its block that use what it
// declares (transitively, uses.h): alone it could only fail the parse check.
// A loop's or branch's body of at most one statement loses its braces (`{ }` -> `;`,
// `{ s; }` -> `s;`): the statements of a body can go, its braces only so. On the CPU benchmark's
// host hang, wsreduce ended at `int main() { while (1) { } }`, 12 tokens to C-Vise's 11.
#include "pass.h"
#include "uses.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/Stmt.h>

namespace wsr {
namespace {
struct Visitor : clang::RecursiveASTVisitor<Visitor> {
  clang::ASTContext &ctx;
  const ParsedSource &src;
  std::vector<PassSite> &out;
  UseIndex uses;
  int depth = 0;
  Visitor(clang::ASTContext &c, const ParsedSource &s, std::vector<PassSite> &o)
      : ctx(c), src(s), out(o), uses(c, s) {}

  // `body` (a loop's or an if's sub-statement): a site that drops its braces, when it is a block
  // of no statement or of one simple statement. A nested if, loop or declaration keeps them (an
  // else would bind to another if; a declaration's scope would change).
  void unbrace(clang::Stmt *body, const char *of) {
    auto *cs = llvm::dyn_cast_or_null<clang::CompoundStmt>(body);
    if (!cs || cs->size() > 1) return;
    auto r = mainFileRange(ctx, cs->getSourceRange());
    if (!r || r->size() < 2 || src.text[r->begin] != '{' || src.text[r->end - 1] != '}') return;
    std::string with = ";";
    if (cs->size() == 1) {
      clang::Stmt *st = cs->body_front();
      if (!llvm::isa<clang::Expr, clang::ReturnStmt, clang::BreakStmt, clang::ContinueStmt,
                     clang::NullStmt, clang::AsmStmt>(st))
        return;
      auto sr = mainFileRangeWithSemi(ctx, st->getSourceRange());
      if (!sr || sr->begin <= r->begin || sr->end >= r->end) return;
      with = src.text.substr(sr->begin, sr->size());
    }
    out.push_back(replaceSite("remove-stmt", src, *r, with,
                              std::string("remove the braces of the ") + of + " body at line " +
                                  std::to_string(lineOf(src.text, r->begin)),
                              depth + 1));
  }
  bool VisitWhileStmt(clang::WhileStmt *s) { return unbrace(s->getBody(), "while"), true; }
  bool VisitForStmt(clang::ForStmt *s) { return unbrace(s->getBody(), "for"), true; }
  bool VisitCXXForRangeStmt(clang::CXXForRangeStmt *s) {
    return unbrace(s->getBody(), "for"), true;
  }
  bool VisitDoStmt(clang::DoStmt *s) { return unbrace(s->getBody(), "do"), true; }
  bool VisitIfStmt(clang::IfStmt *s) {
    unbrace(s->getThen(), "if");
    unbrace(s->getElse(), "else");
    return true;
  }

  bool TraverseCompoundStmt(clang::CompoundStmt *cs) {
    for (auto *st : cs->body()) {
      if (llvm::isa<clang::NullStmt>(st)) continue;
      if (isFinalReturn(ctx, cs, st))
        continue;  // the function would fall off its end: the parse check refuses it
      auto r = mainFileRangeWithSemi(ctx, st->getSourceRange());
      size_t n = llvm::isa<clang::DeclStmt>(st) ? uses.dependentsCount(st) : 0;
      if (r && r->size() > 0 && n > 1) {
        auto edits = uses.removeWithDependents(st);
        if (!edits.empty()) {
          PassSite p;
          p.pass = "remove-stmt";
          p.edits = std::move(edits);
          p.line = lineOf(src.text, p.edits.front().offset);
          p.level = depth;
          p.note = "remove the declaration at line " + std::to_string(p.line) + " and the " +
                   std::to_string(n - 1) + " statement" + (n > 2 ? "s" : "") + " using it";
          out.push_back(std::move(p));
        }
        continue;  // its users cannot all go (one is the function's final return): alone it cannot
                   // parse
      }
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
