// shape: docs/methodology.md step 1, reproduce at the minimum failing shape. Every integer knob — a
// `#define NAME 512` (including `#ifndef` defaults a -D overrides), a namespace-scope
// `constexpr int NAME = 512`, a literal loop bound, a literal launch dimension — is
// offered at smaller values: 1, the other knobs' values that divide it (the tile sizes:
// one tile per dimension), then the halvings (half, a quarter, ...).
#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Frontend/ASTUnit.h>
#include <clang/Lex/MacroInfo.h>
#include <clang/Lex/Preprocessor.h>

#include <algorithm>
#include <map>
#include <set>

namespace wsr {
namespace {

struct Knob {
  std::string name;
  Range where;  // the literal's bytes
  long long value;
};

bool parseInt(llvm::StringRef s, long long &v) {
  s = s.rtrim("uUlL");
  return !s.getAsInteger(0, v);
}

struct Collector : clang::RecursiveASTVisitor<Collector> {
  clang::ASTContext &ctx;
  std::vector<Knob> &out;
  Collector(clang::ASTContext &c, std::vector<Knob> &o) : ctx(c), out(o) {}

  void literal(const clang::Expr *e, const std::string &name) {
    if (!e) return;
    e = e->IgnoreParenImpCasts();
    auto *lit = llvm::dyn_cast<clang::IntegerLiteral>(e);
    if (!lit) return;
    auto r = mainFileRange(ctx, lit->getSourceRange());
    if (!r) return;
    long long v = (long long)lit->getValue().getLimitedValue();
    out.push_back({name, *r, v});
  }
  bool VisitVarDecl(clang::VarDecl *v) {
    if (!v->getDeclContext()->isFileContext() && !v->isStaticDataMember()) return true;
    if (!v->getType()->isIntegerType() || !v->getType().isConstQualified()) return true;
    literal(v->getInit(), v->getNameAsString());
    return true;
  }
  bool VisitForStmt(clang::ForStmt *f) {
    if (auto *b = llvm::dyn_cast_or_null<clang::BinaryOperator>(f->getCond()))
      if (b->isRelationalOp()) literal(b->getRHS(), "loop bound");
    return true;
  }
  bool VisitCUDAKernelCallExpr(clang::CUDAKernelCallExpr *k) {
    auto *cfg = k->getConfig();
    if (!cfg) return true;
    // Each dimension arrives as a dim3 built from the literal: look through the construction.
    for (unsigned i = 0; i < 2 && i < cfg->getNumArgs(); ++i) {
      const clang::Expr *dim = cfg->getArg(i)->IgnoreImplicit();
      if (auto *fc = llvm::dyn_cast<clang::CXXFunctionalCastExpr>(dim))
        dim = fc->getSubExpr()->IgnoreImplicit();
      if (auto *ce = llvm::dyn_cast<clang::CXXConstructExpr>(dim))
        dim = ce->getNumArgs() == 1 ||
                      (ce->getNumArgs() > 1 && llvm::isa<clang::CXXDefaultArgExpr>(ce->getArg(1)))
                  ? ce->getArg(0)
                  : nullptr;
      literal(dim, i ? "block size" : "grid size");
    }
    return true;
  }
};

}  // namespace

std::vector<PassSite> shapeSites(const ParsedSource &src) {
  std::vector<Knob> knobs;
  for (auto &side : src.sides) {
    if (!side.ast) continue;
    auto &ctx = side.ast->getASTContext();
    auto &sm = ctx.getSourceManager();
    auto &pp = side.ast->getPreprocessor();
    for (auto it = pp.macro_begin(); it != pp.macro_end(); ++it) {
      auto *md = pp.getLocalMacroDirective(it->first);
      if (!md) continue;
      auto *mi = md->getMacroInfo();
      if (!mi || mi->getNumTokens() != 1 || mi->isFunctionLike()) continue;
      const clang::Token &tok = mi->getReplacementToken(0);
      if (!tok.is(clang::tok::numeric_constant)) continue;
      auto loc = tok.getLocation();
      // In the user's file: its main FileID, or, for a #define inside a precompiled preamble (the
      // parse check's kind of parse), the preamble's copy of the same file, whose bytes are the
      // text's own (a preamble is reused only while the text's leading directives are unchanged).
      if (!isUserFileLoc(ctx, loc)) continue;  // not the predefines' __CUDA_ARCH__ & co.
      // (the spelling from the text: a token read back from a preamble has no literal data)
      unsigned off = sm.getFileOffset(loc);
      if (off + tok.getLength() > src.text.size()) continue;
      long long v;
      std::string spelling = src.text.substr(off, tok.getLength());
      if (!parseInt(spelling, v)) continue;
      knobs.push_back({it->first->getName().str(), Range{off, off + tok.getLength()}, v});
    }
    Collector c(ctx, knobs);
    c.TraverseDecl(ctx.getTranslationUnitDecl());
  }

  // In text order: the macro table's order is a hash map's, and differs with a preamble.
  std::stable_sort(knobs.begin(), knobs.end(),
                   [](const Knob &a, const Knob &b) { return a.where.begin < b.where.begin; });
  std::set<long long> values;
  for (auto &k : knobs) values.insert(k.value);
  std::vector<PassSite> sites;
  std::set<unsigned> done;
  int group = 0;
  for (auto &k : knobs) {
    if (k.value <= 1 || !done.insert(k.where.begin).second) continue;
    std::vector<long long> alts = {1};
    for (long long w : values)
      if (w > 1 && w < k.value && k.value % w == 0) alts.push_back(w);
    // The halvings all the way down (512: 256, 128, ..., 2), not only the first: a place's first
    // interesting alternative is taken, so one visit finds the smallest failing power-of-two
    // fraction. With only the half, a K of 256 took five rounds of every pass to reach 8
    // (bench/results/2026-11-30-cpu-s10/gemm-2: 240 of its 900 s).
    for (long long h = k.value; h % 2 == 0 && h / 2 > 1;) alts.push_back(h /= 2);
    std::sort(alts.begin(), alts.end());
    alts.erase(std::unique(alts.begin(), alts.end()), alts.end());
    if (alts.size() > 12) alts.erase(alts.begin() + 6, alts.end() - 6);  // keep both ends
    for (long long a : alts) {
      sites.push_back(replaceSite(
          "shape", src, k.where, std::to_string(a),
          k.name + " " + std::to_string(k.value) + " -> " + std::to_string(a), 0, group));
      sites.back().place = k.name + "@" + std::to_string(lineOf(src.text, k.where.begin));
    }
    ++group;
  }
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
