// loop-trips: a `for` loop whose bound is a constant expression that is not a plain
// literal (`k < K_TILES - 1`, `s < STAGES`, `i < N / 2`) runs fewer times: the bound
// becomes 1, 2 or half its value. Literal bounds (`i < 8`, or `i < TILE` for a
// `#define TILE 16`) are shape's knobs, so each edit is offered once. Phase Shape: a trip count is part of the minimum failing shape
// (seed step 1), and fewer trips make every later candidate cheaper to run.
#include "visit.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Expr.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/Stmt.h>

#include <set>

namespace wsr {
namespace {

struct Visitor : clang::RecursiveASTVisitor<Visitor> {
  clang::ASTContext &ctx;
  const ParsedSource &src;
  std::vector<PassSite> &out;
  PlaceIds &places;
  Visitor(clang::ASTContext &c, const ParsedSource &s, std::vector<PassSite> &o, PlaceIds &p)
      : ctx(c), src(s), out(o), places(p) {}

  // The loop variable's side of the condition must be the one that counts up:
  // `i < B`, `i <= B`, `i != B`, or `B > i`, `B >= i`.
  bool VisitForStmt(clang::ForStmt *f) {
    auto *b = llvm::dyn_cast_or_null<clang::BinaryOperator>(f->getCond());
    if (!b) return true;
    const clang::Expr *bound = nullptr;
    switch (b->getOpcode()) {
      case clang::BO_LT: case clang::BO_LE: case clang::BO_NE: bound = b->getRHS(); break;
      case clang::BO_GT: case clang::BO_GE: bound = b->getLHS(); break;
      default: return true;
    }
    const clang::Expr *bare = bound->IgnoreParenImpCasts();
    // shape already offers a literal on the right of a relational operator, written or
    // a whole macro (`i < 8`, `i < TILE`: shape.cpp), so each edit is offered once.
    if (llvm::isa<clang::IntegerLiteral>(bare) && b->isRelationalOp() && bound == b->getRHS() &&
        mainFileRange(ctx, bare->getSourceRange()))
      return true;
    if (bare->isValueDependent() || bare->isTypeDependent() || !bare->getType()->isIntegerType()) return true;
    clang::Expr::EvalResult er;
    if (!bare->EvaluateAsInt(er, ctx)) return true;
    long long v = er.Val.getInt().getExtValue();
    if (v <= 1) return true;
    auto r = mainFileRange(ctx, bound->getSourceRange());
    if (!r || r->size() == 0) return true;
    std::set<long long> alts = {1, 2, v / 2};
    std::string spelled = src.text.substr(r->begin, r->size());
    int group = places(*r);
    for (long long a : alts) {
      if (a >= v || a < 1) continue;
      out.push_back(replaceSite("loop-trips", src, *r, std::to_string(a),
                                "loop bound " + spelled + " (" + std::to_string(v) + ") -> " + std::to_string(a), 0,
                                group));
    }
    return true;
  }
};

}  // namespace

std::vector<PassSite> loopTripSites(const ParsedSource &src) { return visitorSites<Visitor>(src); }

}  // namespace wsr
