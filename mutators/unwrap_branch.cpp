// unwrap-branch: an if/else becomes one of its arms (then first, else second) or goes
// away; a loop becomes one copy of its body, or goes away; a block inside a block becomes its
// statements. The alternatives of one
// statement form a group: at most one is kept. A role branch unwrapped is how a
// repro loses the roles that are not involved in the broken handoff.
// An arm or a body that is a block declaring nothing at its top, inside a block, is spliced
// without its braces; a `for` whose body only reads its variable runs once as the body with
// the variable's first value in place (`for (int s = 0; s < 1; ++s) { init(s); }` -> `init(0);`).
// Each was three accepted steps before (the loop as `{ int s = 0; {...} }`, inline-var, two block
// unwraps): on the H200 the last of them was a round of ~20 s short of the budget.
#include "visit.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Expr.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/Stmt.h>

#include <optional>

namespace wsr {
namespace {
// The references to `v` in a statement, and whether any of them may write it.
struct VarUses : clang::RecursiveASTVisitor<VarUses> {
  const clang::VarDecl *v;
  std::vector<const clang::DeclRefExpr *> refs;
  bool written = false;
  explicit VarUses(const clang::VarDecl *d) : v(d) {}
  bool names(const clang::Expr *e) const {
    auto *r = llvm::dyn_cast<clang::DeclRefExpr>(e->IgnoreParenImpCasts());
    return r && r->getDecl() == v;
  }
  bool VisitDeclRefExpr(clang::DeclRefExpr *e) {
    if (e->getDecl() == v) refs.push_back(e);
    return true;
  }
  bool VisitUnaryOperator(clang::UnaryOperator *u) {
    if ((u->isIncrementDecrementOp() || u->getOpcode() == clang::UO_AddrOf) &&
        names(u->getSubExpr()))
      written = true;
    return true;
  }
  bool VisitBinaryOperator(clang::BinaryOperator *b) {
    if (b->isAssignmentOp() && names(b->getLHS())) written = true;
    return true;
  }
};

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
                                note + " at line " + std::to_string(lineOf(src.text, r->begin)),
                                depth, group));
    }
  }
  // The statement `s` is a statement of (not the body of a loop or an if).
  bool inBlock(const clang::Stmt *s) const {
    return stack.size() >= 2 && stack.back() == s &&
           llvm::isa<clang::CompoundStmt>(stack[stack.size() - 2]);
  }
  // The text an arm or a body leaves in place of `whole`: a block's statements without the braces
  // when `whole` is a statement of a block and the block declares nothing at its top (its names
  // would join the outer scope); the arm as it is otherwise. `edits` (inside `arm`) are applied.
  std::string armText(const clang::Stmt *whole, const clang::Stmt *arm,
                      std::vector<Edit> edits = {}) {
    if (!arm) return "";
    auto *c = llvm::dyn_cast<clang::CompoundStmt>(arm);
    bool splice = c && inBlock(whole);
    if (splice)
      for (auto *x : c->body())
        if (llvm::isa<clang::DeclStmt>(x)) splice = false;
    if (splice) {
      auto lb = mainFileOffset(ctx, c->getLBracLoc()), rb = mainFileOffset(ctx, c->getRBracLoc());
      if (lb && rb && *lb < *rb) return rewritten(src.text, Range{*lb + 1, *rb}, std::move(edits));
    }
    auto r = mainFileRangeWithSemi(ctx, arm->getSourceRange());
    if (!r) return "\x01";
    return rewritten(src.text, *r, std::move(edits));
  }
  // `for (int s = first; ...; ...) body` with a body that only reads `s`: the body once with
  // `first` in place of every use of `s`.
  std::optional<std::string> onceWithFirstValue(const clang::ForStmt *s) {
    auto *ds = llvm::dyn_cast_or_null<clang::DeclStmt>(s->getInit());
    if (!ds || !ds->isSingleDecl() || !s->getBody()) return std::nullopt;
    auto *v = llvm::dyn_cast<clang::VarDecl>(ds->getSingleDecl());
    if (!v || !v->getInit() || !v->getType()->isIntegerType()) return std::nullopt;
    clang::Expr::EvalResult first;
    if (v->getInit()->isValueDependent() || !v->getInit()->EvaluateAsInt(first, ctx))
      return std::nullopt;
    std::string lit = integerLiteralOf(v->getType(), first.Val.getInt());
    if (lit.empty()) return std::nullopt;
    VarUses uses(v);
    uses.TraverseStmt(const_cast<clang::Stmt *>(s->getBody()));
    if (uses.written) return std::nullopt;
    std::vector<Edit> edits;
    for (auto *ref : uses.refs) {
      auto r = mainFileRange(ctx, ref->getSourceRange());
      if (!r) return std::nullopt;
      edits.push_back(Edit{r->begin, r->size(), lit});
    }
    return armText(s, s->getBody(), std::move(edits));
  }
  bool TraverseIfStmt(clang::IfStmt *s) {
    if (!s->isConsteval() && !s->hasInitStorage() && !s->hasVarStorage()) {
      std::vector<std::pair<std::string, std::string>> alts;
      alts.push_back({armText(s, s->getThen()), "if -> then arm"});
      if (s->getElse())
        alts.push_back({armText(s, s->getElse()), "if -> else arm"});
      else
        alts.push_back({"", "remove if"});
      offer(s, alts);
    }
    ++depth;
    bool ok = clang::RecursiveASTVisitor<Visitor>::TraverseIfStmt(s);
    --depth;
    return ok;
  }
  bool loop(clang::Stmt *s, clang::Stmt *body, clang::Stmt *init,
            std::optional<std::string> substituted = std::nullopt) {
    std::string once;
    if (substituted) {
      once = *substituted;
    } else if (init) {
      std::string b = text(body);
      once = "{ " + text(init) + (text(init).back() == ';' ? " " : "; ") + b + " }";
    } else {
      once = armText(s, body);
    }
    offer(s, {{once, "loop -> body once"}, {"", "remove loop"}});
    return true;
  }
  bool TraverseForStmt(clang::ForStmt *s) {
    loop(s, s->getBody(), s->getInit(), onceWithFirstValue(s));
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
  std::vector<const clang::Stmt *> stack;  // the statements being traversed, innermost last
  bool TraverseStmt(clang::Stmt *s) {
    if (!s) return true;
    const clang::Stmt *parent = stack.empty() ? nullptr : stack.back();
    if (auto *c = llvm::dyn_cast<clang::CompoundStmt>(s);
        c && parent && llvm::isa<clang::CompoundStmt>(parent)) {
      auto whole = mainFileRange(ctx, c->getSourceRange());
      auto lb = mainFileOffset(ctx, c->getLBracLoc()), rb = mainFileOffset(ctx, c->getRBracLoc());
      if (whole && lb && rb && *lb + 1 <= *rb)
        out.push_back(replaceSite(
            "unwrap-branch", src, *whole, src.text.substr(*lb + 1, *rb - *lb - 1),
            "block -> its statements at line " + std::to_string(lineOf(src.text, whole->begin)),
            depth, places(*whole)));
    }
    stack.push_back(s);
    bool ok = clang::RecursiveASTVisitor<Visitor>::TraverseStmt(s);
    stack.pop_back();
    return ok;
  }
};
}  // namespace

std::vector<PassSite> unwrapBranchSites(const ParsedSource &src) {
  return visitorSites<Visitor>(src);
}

}  // namespace wsr
