// unwrap-macro: the use of a function-like macro becomes one of the expressions passed to it,
// `CUDA_CHECK(cudaMalloc(&d, n));` -> `cudaMalloc(&d, n);`. Error-checking wrappers are in every
// CUDA program and their expansion (a do/while, an if, a printf, an exit) hides the call from
// the statement passes: remove-stmt can only take the call and its check together, and the
// macro's definition stays as long as one use does. An argument is offered when Clang saw it
// as a whole expression (the outermost expression spelled inside that argument); the macro
// itself goes later with remove-decl, once no use is left. A kernel's `__launch_bounds__(...)`
// is offered for removal whole.
#include "visit.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Lex/Lexer.h>

namespace wsr {
namespace {

struct Visitor : clang::RecursiveASTVisitor<Visitor> {
  using Base = clang::RecursiveASTVisitor<Visitor>;
  clang::ASTContext &ctx;
  const ParsedSource &src;
  std::vector<PassSite> &out;
  PlaceIds &places;
  std::vector<const clang::Stmt *> stack;
  Visitor(clang::ASTContext &c, const ParsedSource &s, std::vector<PassSite> &o, PlaceIds &p)
      : ctx(c), src(s), out(o), places(p) {}

  // The argument spelling of `loc` when it is a macro argument expanded into a function-like
  // macro's body (the outermost such macro); the invocation's range in the file as well.
  bool argOf(clang::SourceLocation loc, clang::SourceLocation &spelled,
             clang::CharSourceRange &call) {
    auto &sm = ctx.getSourceManager();
    if (!loc.isMacroID() || !sm.isMacroArgExpansion(loc)) return false;
    spelled = sm.getSpellingLoc(loc);
    call = sm.getExpansionRange(loc);
    return isMainFileLoc(ctx, spelled) && isMainFileLoc(ctx, call.getBegin());
  }

  void offer(const clang::Expr *e) {
    auto &sm = ctx.getSourceManager();
    clang::SourceLocation b, en;
    clang::CharSourceRange call, call2;
    if (!argOf(e->getBeginLoc(), b, call) || !argOf(e->getEndLoc(), en, call2)) return;
    if (call.getBegin() != call2.getBegin()) return;
    // The expression's own text (token range), and the whole invocation's.
    unsigned eb = sm.getFileOffset(b);
    unsigned ee =
        sm.getFileOffset(en) + clang::Lexer::MeasureTokenLength(en, sm, ctx.getLangOpts());
    unsigned cb = sm.getFileOffset(call.getBegin());
    unsigned ce = sm.getFileOffset(call.getEnd());
    if (call.isTokenRange())
      ce += clang::Lexer::MeasureTokenLength(call.getEnd(), sm, ctx.getLangOpts());
    if (!(cb <= eb && eb < ee && ee <= ce) || ce > src.text.size()) return;
    std::string with = src.text.substr(eb, ee - eb);
    std::string name =
        src.text.substr(cb, std::min<unsigned>(ce - cb, src.text.find('(', cb) - cb));
    // The toolchain's own (__launch_bounds__, __align__): attributes, not calls to unwrap.
    if (name.rfind("__", 0) == 0) return;
    out.push_back(
        replaceSite("unwrap-macro", src, Range{cb, ce}, with,
                    name + "(...) -> its argument at line " + std::to_string(lineOf(src.text, cb)),
                    0, places(Range{cb, ce})));
  }

  bool TraverseStmt(clang::Stmt *s) {
    if (!s) return true;
    if (auto *e = llvm::dyn_cast<clang::Expr>(s)) {
      // The outermost expression spelled in a macro argument: its parent is not spelled there.
      // (Implicit nodes share their child's location: the first explicit ancestor decides.)
      bool outer = true;
      for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
        if (llvm::isa<clang::ImplicitCastExpr, clang::FullExpr, clang::MaterializeTemporaryExpr>(
                *it))
          continue;
        auto &sm = ctx.getSourceManager();
        auto pb = (*it)->getBeginLoc();
        if (pb.isMacroID() && sm.isMacroArgExpansion(pb)) outer = false;
        break;
      }
      if (outer && !llvm::isa<clang::ImplicitCastExpr, clang::ParenExpr>(e)) offer(e);
    }
    stack.push_back(s);
    bool ok = Base::TraverseStmt(s);
    stack.pop_back();
    return ok;
  }
};

}  // namespace

// `__launch_bounds__(384, 1)` on a kernel: a hint to the register allocator, which a hang or a
// wrong result rarely needs; taken out whole (the kernel's header then fits on one line).
void launchBoundsSites(const ParsedSource &src, std::vector<PassSite> &out) {
  const std::string &t = src.text;
  const std::string name = "__launch_bounds__";
  for (size_t at = t.find(name); at != std::string::npos; at = t.find(name, at + 1)) {
    if (at > 0 && (std::isalnum((unsigned char)t[at - 1]) || t[at - 1] == '_')) continue;
    size_t i = at + name.size();
    while (i < t.size() && (t[i] == ' ' || t[i] == '\t')) ++i;
    if (i >= t.size() || t[i] != '(') continue;
    int depth = 0;
    size_t e = i;
    for (; e < t.size(); ++e) {
      if (t[e] == '(')
        ++depth;
      else if (t[e] == ')' && --depth == 0)
        break;
    }
    if (e >= t.size() || t[e] != ')') continue;
    size_t end = e + 1;
    while (end < t.size() && (t[end] == ' ' || t[end] == '\t' || t[end] == '\n')) ++end;
    // a comment or a #define spelling it is not a use: only where a kernel's declaration is
    size_t ls = t.rfind('\n', at);
    std::string line =
        t.substr(ls == std::string::npos ? 0 : ls + 1, at - (ls == std::string::npos ? 0 : ls + 1));
    if (line.find("//") != std::string::npos || line.find('#') != std::string::npos) continue;
    out.push_back(replaceSite(
        "unwrap-macro", src, Range{(unsigned)at, (unsigned)end}, "",
        "remove __launch_bounds__(...) at line " + std::to_string(lineOf(t, (unsigned)at))));
  }
}

std::vector<PassSite> unwrapMacroSites(const ParsedSource &src) {
  auto sites = visitorSites<Visitor>(src);
  launchBoundsSites(src, sites);
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
