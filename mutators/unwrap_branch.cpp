// unwrap-branch: an if/else becomes one of its arms (then first, else second) or goes
// away; a loop becomes one copy of its body, or goes away; a block inside a block becomes its
// statements. The alternatives of one
// statement form a group: at most one is kept. A role branch unwrapped is how a
// repro loses the roles that are not involved in the broken handoff.
#include "visit.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/Stmt.h>

namespace wsr {
namespace {
struct Visitor : clang::RecursiveASTVisitor<Visitor> {
  clang::ASTContext &ctx;
  const ParsedSource &src;
  std::vector<PassSite> &out;
  PlaceIds &places;  // one id per statement across the host and device parses
  int depth = 0;
  Visitor(clang::ASTContext &c, const ParsedSource &s, std::vector<PassSite> &o, PlaceIds &p)
      : ctx(c), src(s), out(o), places(p) {}

  std::string text(const clang::Stmt *s) {
    if (!s) return "";
    auto r = mainFileRangeWithSemi(ctx, s->getSourceRange());
    if (!r) return "\x01";  // not expressible
    return src.text.substr(r->begin, r->size());
  }
  void offer(const clang::Stmt *whole, std::vector<std::pair<std::string, std::string>> alts) {
    auto r = mainFileRangeWithSemi(ctx, whole->getSourceRange());
    if (!r) return;
    int group = places(*r);
    for (auto &[with, note] : alts) {
      if (with.find('\x01') != std::string::npos) continue;
      out.push_back(replaceSite("unwrap-branch", src, *r, with,
                                note + " at line " + std::to_string(lineOf(src.text, r->begin)), depth, group));
    }
  }
  bool TraverseIfStmt(clang::IfStmt *s) {
    if (!s->isConsteval() && !s->hasInitStorage() && !s->hasVarStorage()) {
      std::vector<std::pair<std::string, std::string>> alts;
      alts.push_back({text(s->getThen()), "if -> then arm"});
      if (s->getElse()) alts.push_back({text(s->getElse()), "if -> else arm"});
      else alts.push_back({"", "remove if"});
      offer(s, alts);
    }
    ++depth;
    bool ok = clang::RecursiveASTVisitor<Visitor>::TraverseIfStmt(s);
    --depth;
    return ok;
  }
  bool loop(clang::Stmt *s, clang::Stmt *body, clang::Stmt *init) {
    std::string b = text(body);
    std::string once = init ? "{ " + text(init) + (text(init).back() == ';' ? " " : "; ") + b + " }" : b;
    offer(s, {{once, "loop -> body once"}, {"", "remove loop"}});
    return true;
  }
  bool TraverseForStmt(clang::ForStmt *s) {
    loop(s, s->getBody(), s->getInit());
    ++depth;
    bool ok = clang::RecursiveASTVisitor<Visitor>::TraverseForStmt(s);
    --depth;
    return ok;
  }
  bool TraverseWhileStmt(clang::WhileStmt *s) {
    loop(s, s->getBody(), nullptr);
    ++depth;
    bool ok = clang::RecursiveASTVisitor<Visitor>::TraverseWhileStmt(s);
    --depth;
    return ok;
  }
  bool TraverseDoStmt(clang::DoStmt *s) {
    loop(s, s->getBody(), nullptr);
    ++depth;
    bool ok = clang::RecursiveASTVisitor<Visitor>::TraverseDoStmt(s);
    --depth;
    return ok;
  }
  // A block that is a statement of another block (what unwrapping and inlining leave behind:
  // `{ { x; } }`) becomes its statements. Its declarations may then clash with the outer
  // block's; the parse check refuses those candidates.
  const clang::Stmt *parent = nullptr;
  bool TraverseStmt(clang::Stmt *s) {
    if (!s) return true;
    if (auto *c = llvm::dyn_cast<clang::CompoundStmt>(s); c && parent && llvm::isa<clang::CompoundStmt>(parent)) {
      auto whole = mainFileRange(ctx, c->getSourceRange());
      auto lb = mainFileOffset(ctx, c->getLBracLoc()), rb = mainFileOffset(ctx, c->getRBracLoc());
      if (whole && lb && rb && *lb + 1 <= *rb)
        out.push_back(replaceSite("unwrap-branch", src, *whole, src.text.substr(*lb + 1, *rb - *lb - 1),
                                  "block -> its statements at line " + std::to_string(lineOf(src.text, whole->begin)),
                                  depth, places(*whole)));
    }
    const clang::Stmt *saved = parent;
    parent = s;
    bool ok = clang::RecursiveASTVisitor<Visitor>::TraverseStmt(s);
    parent = saved;
    return ok;
  }
};
}  // namespace

std::vector<PassSite> unwrapBranchSites(const ParsedSource &src) { return visitorSites<Visitor>(src); }

}  // namespace wsr
