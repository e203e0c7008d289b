// loop-trips: a `for` loop whose bound is a constant expression that is not a plain
// literal (`k < K_TILES - 1`, `s < STAGES`, `i < N / 2`) runs fewer times: the bound
// becomes 1, 2 or half its value. Literal bounds (`i < 8`, or `i < TILE` for a
// `#define TILE 16`) are shape's knobs, so each edit is offered once. Phase Shape: a trip count is
// part of the minimum failing shape (docs/methodology.md step 1); fewer trips make later candidates
// cheaper to run. A bound that names a constant another loop's bound in the same function also
// names (the producer's `t < NUM_TILES` and the consumer's) is left to shape: in a warp-specialized
// kernel those loops are the two sides of a handoff, and lowering one of them alone is a new bug
// (the producer makes fewer tiles than the consumer waits for). On the H200 a reduction
// of a producer loop one tile short, `(NUM_TILES) - 1`, lowered that bound to 1: the same hang, the
// injected bug replaced by a look-alike. Lowering the constant itself keeps the roles in step.
#include "visit.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Expr.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/Stmt.h>

#include <cctype>
#include <set>
#include <string>

namespace wsr {
namespace {

// The identifiers a bound's text names (`(NUM_TILES) - 1` -> NUM_TILES).
std::set<std::string> namesIn(const std::string &text) {
  std::set<std::string> out;
  for (size_t i = 0; i < text.size();) {
    if (std::isalpha((unsigned char)text[i]) || text[i] == '_') {
      size_t j = i;
      while (j < text.size() && (std::isalnum((unsigned char)text[j]) || text[j] == '_')) ++j;
      out.insert(text.substr(i, j - i));
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

struct Visitor : clang::RecursiveASTVisitor<Visitor> {
  using Base = clang::RecursiveASTVisitor<Visitor>;
  clang::ASTContext &ctx;
  const ParsedSource &src;
  std::vector<PassSite> &out;
  PlaceIds &places;
  const clang::Decl *fn = nullptr;
  struct Bound {
    const clang::Decl *fn;
    std::set<std::string> names;
    std::vector<PassSite> sites;  // empty: a bound this pass does not lower
  };
  std::vector<Bound> bounds;
  Visitor(clang::ASTContext &c, const ParsedSource &s, std::vector<PassSite> &o, PlaceIds &p)
      : ctx(c), src(s), out(o), places(p) {}

  // Every kind of function (free, member, lambda body) is a scope of its own.
  bool TraverseDecl(clang::Decl *d) {
    if (!d || !llvm::isa<clang::FunctionDecl>(d)) return Base::TraverseDecl(d);
    const clang::Decl *outer = fn;
    fn = d;
    bool r = Base::TraverseDecl(d);
    fn = outer;
    return r;
  }

  // The loop variable's side of the condition must be the one that counts up:
  // `i < B`, `i <= B`, `i != B`, or `B > i`, `B >= i`.
  bool VisitForStmt(clang::ForStmt *f) {
    auto *b = llvm::dyn_cast_or_null<clang::BinaryOperator>(f->getCond());
    if (!b) return true;
    const clang::Expr *bound = nullptr;
    switch (b->getOpcode()) {
      case clang::BO_LT:
      case clang::BO_LE:
      case clang::BO_NE:
        bound = b->getRHS();
        break;
      case clang::BO_GT:
      case clang::BO_GE:
        bound = b->getLHS();
        break;
      default:
        return true;
    }
    auto r = mainFileRange(ctx, bound->getSourceRange());
    if (!r || r->size() == 0) return true;
    std::string spelled = src.text.substr(r->begin, r->size());
    bounds.push_back(Bound{fn, namesIn(spelled), {}});
    const clang::Expr *bare = bound->IgnoreParenImpCasts();
    // shape already offers a literal on the right of a relational operator, written or
    // a whole macro (`i < 8`, `i < TILE`: shape.cpp), so each edit is offered once.
    if (llvm::isa<clang::IntegerLiteral>(bare) && b->isRelationalOp() && bound == b->getRHS() &&
        mainFileRange(ctx, bare->getSourceRange()))
      return true;
    if (bare->isValueDependent() || bare->isTypeDependent() || !bare->getType()->isIntegerType())
      return true;
    clang::Expr::EvalResult er;
    if (!bare->EvaluateAsInt(er, ctx)) return true;
    long long v = er.Val.getInt().getExtValue();
    if (v <= 1) return true;
    std::set<long long> alts = {1, 2, v / 2};
    int group = places(*r);
    for (long long a : alts) {
      if (a >= v || a < 1) continue;
      bounds.back().sites.push_back(replaceSite(
          "loop-trips", src, *r, std::to_string(a),
          "loop bound " + spelled + " (" + std::to_string(v) + ") -> " + std::to_string(a), 0,
          group));
    }
    return true;
  }

  // After the traversal: every bound's sites, but those of a bound sharing a name with another
  // loop's bound in its function.
  void flush() {
    for (size_t i = 0; i < bounds.size(); ++i) {
      bool shared = false;
      for (size_t j = 0; j < bounds.size() && !shared; ++j)
        if (j != i && bounds[j].fn == bounds[i].fn)
          for (auto &n : bounds[i].names)
            if (bounds[j].names.count(n)) {
              shared = true;
              break;
            }
      if (!shared) out.insert(out.end(), bounds[i].sites.begin(), bounds[i].sites.end());
    }
    bounds.clear();
  }
};

}  // namespace

std::vector<PassSite> loopTripSites(const ParsedSource &src) { return visitorSites<Visitor>(src); }

}  // namespace wsr
