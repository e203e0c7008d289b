// simplify-expr: a scalar subexpression becomes 0, 1, or one of its own operands (a binary
// operator's lhs or rhs, a conditional's arm, a call's argument of a compatible type, a
// unary or cast operand). The alternatives of one expression are a group; the level is
// the depth in its full expression, so `a * b + c` is tried before `a * b`. Left alone:
// expressions that are only part of a macro's expansion (they have no text of their own;
// mainFileRange says so), the strings and outputs of asm statements (not expressions to
// shrink), and any alternative no shorter than what it replaces (a one-letter name -> 0).
#include "visit.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/Stmt.h>

#include <set>

namespace wsr {
namespace {

// Expressions that never need parentheses where another expression stood.
bool isPrimary(const clang::Expr *e) {
  e = e->IgnoreImpCasts();
  return llvm::isa<
      clang::DeclRefExpr, clang::IntegerLiteral, clang::FloatingLiteral, clang::CXXBoolLiteralExpr,
      clang::CharacterLiteral, clang::ParenExpr, clang::CallExpr, clang::MemberExpr,
      clang::ArraySubscriptExpr, clang::CXXNamedCastExpr, clang::CXXFunctionalCastExpr,
      clang::UnaryExprOrTypeTraitExpr, clang::CXXNullPtrLiteralExpr, clang::CXXThisExpr>(e);
}

// Nodes with no text of their own: they neither offer sites nor count as a level.
bool isInvisible(const clang::Expr *e) {
  return llvm::isa<clang::ImplicitCastExpr, clang::ParenExpr, clang::FullExpr,
                   clang::MaterializeTemporaryExpr, clang::CXXBindTemporaryExpr,
                   clang::OpaqueValueExpr, clang::CXXDefaultArgExpr, clang::CXXDefaultInitExpr>(e);
}

bool isLiteral(const clang::Expr *e) {
  return llvm::isa<clang::IntegerLiteral, clang::FloatingLiteral, clang::CXXBoolLiteralExpr,
                   clang::CharacterLiteral, clang::StringLiteral, clang::CXXNullPtrLiteralExpr>(e);
}

struct Visitor : clang::RecursiveASTVisitor<Visitor> {
  using Base = clang::RecursiveASTVisitor<Visitor>;
  clang::ASTContext &ctx;
  const ParsedSource &src;
  std::vector<PassSite> &out;
  PlaceIds &places;
  std::set<const clang::Expr *> reads;  // lvalues read through an lvalue-to-rvalue conversion
  int depth = 0;
  Visitor(clang::ASTContext &c, const ParsedSource &s, std::vector<PassSite> &o, PlaceIds &p)
      : ctx(c), src(s), out(o), places(p) {}

  // Whether `o` may stand where `e` stood: same type, or (for operators) both arithmetic.
  bool compatible(const clang::Expr *e, const clang::Expr *o, bool exact) {
    clang::QualType te = e->getType(), to = o->IgnoreImpCasts()->getType();
    if (te->isDependentType() || to->isDependentType()) return false;
    if (!exact && te->isArithmeticType() && !te->isEnumeralType() && to->isArithmeticType() &&
        !to->isEnumeralType())
      return true;
    return ctx.hasSameUnqualifiedType(te, to);
  }

  void offer(const clang::Expr *e) {
    if (isLiteral(e)) return;
    clang::QualType t = e->getType();
    if (t.isNull() || t->isDependentType() || t->isEnumeralType()) return;
    bool arith = t->isArithmeticType(), ptr = t->isAnyPointerType();
    if (!arith && !ptr) return;
    if (!e->isPRValue() && !reads.count(e))
      return;  // an lvalue that is written, bound or addressed
    auto r = mainFileRange(ctx, e->getSourceRange());
    if (!r || r->size() == 0) return;
    std::string whole = src.text.substr(r->begin, r->size());

    std::vector<std::pair<std::string, std::string>> alts;  // replacement, what it is
    alts.push_back({"0", "0"});
    if (arith) alts.push_back({"1", "1"});
    std::vector<std::pair<const clang::Expr *, const char *>> ops;
    if (auto *b = llvm::dyn_cast<clang::BinaryOperator>(e)) {
      if (!b->isAssignmentOp() && !b->isCommaOp() && !b->isComparisonOp()) {
        ops.push_back({b->getLHS(), "lhs"});
        ops.push_back({b->getRHS(), "rhs"});
      }
    } else if (auto *c = llvm::dyn_cast<clang::ConditionalOperator>(e)) {
      ops.push_back({c->getTrueExpr(), "true arm"});
      ops.push_back({c->getFalseExpr(), "false arm"});
    } else if (auto *u = llvm::dyn_cast<clang::UnaryOperator>(e)) {
      switch (u->getOpcode()) {
        case clang::UO_Minus:
        case clang::UO_Plus:
        case clang::UO_Not:
        case clang::UO_LNot:
          ops.push_back({u->getSubExpr(), "operand"});
          break;
        default:
          break;
      }
    } else if (auto *k = llvm::dyn_cast<clang::ExplicitCastExpr>(e)) {
      ops.push_back({k->getSubExpr(), "cast operand"});
    } else if (auto *call = llvm::dyn_cast<clang::CallExpr>(e)) {
      for (auto *a : call->arguments()) ops.push_back({a, "argument"});
    }
    bool tight = llvm::isa<clang::BinaryOperator, clang::UnaryOperator, clang::ExplicitCastExpr>(e);
    for (auto &[o, what] : ops) {
      if (!o || llvm::isa<clang::CXXDefaultArgExpr>(o) ||
          !compatible(e, o, llvm::isa<clang::CallExpr>(e)))
        continue;
      auto orr = mainFileRange(ctx, o->getSourceRange());
      if (!orr || orr->size() == 0) continue;
      std::string text = src.text.substr(orr->begin, orr->size());
      if (!isPrimary(o) && !tight) text = "(" + text + ")";
      alts.push_back({text, what});
    }
    int group = places(*r);
    std::set<std::string> seen;
    if (whole.size() > 40) whole = whole.substr(0, 37) + "...";
    for (auto &[with, what] : alts) {
      // Only what shrinks the text: `n` -> `0` is no simpler, and each site costs a test.
      if (with.size() >= r->size() || !seen.insert(with).second) continue;
      out.push_back(replaceSite(
          "simplify-expr", src, *r, with,
          "`" + whole + "` -> " + what + " at line " + std::to_string(lineOf(src.text, r->begin)),
          depth, group));
    }
  }

  bool TraverseStmt(clang::Stmt *s, DataRecursionQueue * = nullptr) {
    if (!s) return true;
    if (auto *a = llvm::dyn_cast<clang::GCCAsmStmt>(
            s)) {  // only the input operands are expressions to shrink
      for (unsigned i = 0; i < a->getNumInputs(); ++i)
        if (!TraverseStmt(a->getInputExpr(i))) return false;
      return true;
    }
    auto *e = llvm::dyn_cast<clang::Expr>(s);
    if (!e) {  // a statement: its expressions start again at level 0
      int saved = depth;
      depth = 0;
      bool ok = Base::TraverseStmt(s);
      depth = saved;
      return ok;
    }
    if (auto *ic = llvm::dyn_cast<clang::ImplicitCastExpr>(e))
      if (ic->getCastKind() == clang::CK_LValueToRValue)
        reads.insert(ic->getSubExpr()->IgnoreParens());
    bool counts = !isInvisible(e);
    if (counts) offer(e);
    depth += counts;
    bool ok = Base::TraverseStmt(s);
    depth -= counts;
    return ok;
  }
};

}  // namespace

std::vector<PassSite> simplifyExprSites(const ParsedSource &src) {
  return visitorSites<Visitor>(src);
}

}  // namespace wsr
