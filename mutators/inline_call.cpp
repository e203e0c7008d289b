// inline-call: a helper's calls in the main file (never recursive, never by address) are
// replaced by its body, and its definition goes: one site, every edit. Three forms, each keeping
// the meaning:
//   - `return E;` alone in the body, any number of calls: each call becomes `(E)` with each
//     parameter replaced by its argument (a cast where the types differ, `128u` for a literal
//     into a uint32_t); a parameter the body writes, or an argument with side effects used
//     other than once, rules the site out;
//   - one statement alone in a void body (an `asm`, a store), any number of calls that are
//     whole statements: each becomes that statement with the arguments in place, when that takes
//     lines away (`mbar_init(&full[0], 1);` -> `asm volatile("mbarrier.init..." :: "r"(smem_u32(
//     &full[0])), "r"(1u));`);
//   - otherwise, one call that is a whole statement: it becomes a block that declares each
//     parameter from its argument (`{ int n = (k * 2); ...body... }`), a final `return E;` kept
//     as `E;`.
// Skipped: templates, methods, kernels, variadic functions, default arguments, unnamed
// parameters, reference parameters whose argument is not a plain name, and arguments that
// mention a parameter's name (they would see the new local instead).
#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>

#include <algorithm>
#include <map>
#include <set>

namespace wsr {
namespace {

struct Refs : clang::RecursiveASTVisitor<Refs> {
  std::map<const clang::FunctionDecl *, std::vector<const clang::Expr *>> refs;  // every mention
  std::map<const clang::Expr *, const clang::CallExpr *> callOf;  // callee -> its call
  std::set<const clang::CallExpr *> statements;                   // calls that are a statement

  bool VisitCallExpr(clang::CallExpr *c) {
    if (auto *callee = c->getCallee()) callOf[callee->IgnoreParenImpCasts()] = c;
    return true;
  }
  bool VisitDeclRefExpr(clang::DeclRefExpr *e) {
    if (auto *fd = llvm::dyn_cast<clang::FunctionDecl>(e->getDecl()))
      refs[fd->getCanonicalDecl()].push_back(e);
    return true;
  }
  bool VisitUnresolvedLookupExpr(clang::UnresolvedLookupExpr *e) {
    for (auto *d : e->decls())
      if (auto *fd = llvm::dyn_cast<clang::FunctionDecl>(d))
        refs[fd->getCanonicalDecl()].push_back(e);
    return true;
  }
  void statement(clang::Stmt *st) {
    if (auto *e = llvm::dyn_cast_or_null<clang::Expr>(st))
      if (auto *c = llvm::dyn_cast<clang::CallExpr>(e->IgnoreImplicit())) statements.insert(c);
  }
  bool VisitCompoundStmt(clang::CompoundStmt *cs) {
    for (auto *st : cs->body()) statement(st);
    return true;
  }
  // `if (c) f(x);`, `for (...) f(x);`: a call that is a branch's or a loop's whole body
  bool VisitIfStmt(clang::IfStmt *s) {
    statement(s->getThen());
    statement(s->getElse());
    return true;
  }
  bool VisitForStmt(clang::ForStmt *s) {
    statement(s->getBody());
    return true;
  }
  bool VisitWhileStmt(clang::WhileStmt *s) {
    statement(s->getBody());
    return true;
  }
};

// Parameter uses inside a piece of the body: where they are, and whether each is only read.
struct ParamUses : clang::RecursiveASTVisitor<ParamUses> {
  std::set<const clang::ParmVarDecl *> params;
  std::vector<std::pair<const clang::ParmVarDecl *, const clang::DeclRefExpr *>> uses;
  std::set<const clang::Expr *> reads;
  std::vector<const clang::ReturnStmt *> returns;
  std::set<const clang::Expr *> bare;  // a whole call argument or asm operand: needs no parentheses
  bool VisitCallExpr(clang::CallExpr *c) {
    for (auto *a : c->arguments()) bare.insert(a->IgnoreImpCasts());
    return true;
  }
  bool VisitGCCAsmStmt(clang::GCCAsmStmt *a) {
    for (unsigned i = 0; i < a->getNumInputs(); ++i)
      bare.insert(a->getInputExpr(i)->IgnoreImpCasts());
    return true;
  }
  bool VisitImplicitCastExpr(clang::ImplicitCastExpr *c) {
    if (c->getCastKind() == clang::CK_LValueToRValue) reads.insert(c->getSubExpr()->IgnoreParens());
    return true;
  }
  bool VisitDeclRefExpr(clang::DeclRefExpr *e) {
    if (auto *p = llvm::dyn_cast<clang::ParmVarDecl>(e->getDecl()))
      if (params.count(p)) uses.push_back({p, e});
    return true;
  }
  bool VisitReturnStmt(clang::ReturnStmt *r) {
    returns.push_back(r);
    return true;
  }
  bool onlyRead(const clang::ParmVarDecl *p) const {
    for (auto &[q, e] : uses)
      if (q == p && !reads.count(e)) return false;
    return true;
  }
};

// Names an argument mentions (a new local with one of those names would hide it).
struct Names : clang::RecursiveASTVisitor<Names> {
  std::set<std::string> names;
  bool VisitDeclRefExpr(clang::DeclRefExpr *e) {
    names.insert(e->getDecl()->getNameAsString());
    return true;
  }
};

// Whether "(...)" is one parenthesized group (not "(a) + (b)").
bool balancedInside(const std::string &t) {
  int depth = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '(')
      ++depth;
    else if (t[i] == ')' && --depth == 0 && i + 1 != t.size())
      return false;
  }
  return depth == 0;
}

bool isSimple(const clang::Expr *e) {
  e = e->IgnoreParenImpCasts();
  return llvm::isa<clang::DeclRefExpr, clang::IntegerLiteral, clang::FloatingLiteral,
                   clang::CXXBoolLiteralExpr, clang::CharacterLiteral>(e);
}

std::string printed(clang::ASTContext &ctx, clang::QualType t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.getUnqualifiedType().print(os, ctx.getPrintingPolicy());
  return os.str();
}

// The text of argument `i` in place of parameter `p` (nullopt: not without changing the meaning).
std::optional<std::string> argFor(clang::ASTContext &ctx, const clang::ParmVarDecl *p,
                                  const clang::Expr *a, const std::string &text, unsigned uses) {
  if (a->HasSideEffects(ctx) && uses != 1) return std::nullopt;
  clang::QualType pt = p->getType().getNonReferenceType();
  clang::QualType at = a->IgnoreParenImpCasts()->getType();
  if (p->getType()->isReferenceType() || ctx.hasSameUnqualifiedType(pt, at))
    return isSimple(a) ? text : "(" + text + ")";
  if (auto *lit = llvm::dyn_cast<clang::IntegerLiteral>(a->IgnoreParenImpCasts());
      lit && pt->isIntegerType()) {
    llvm::APSInt v(lit->getValue(), pt->isUnsignedIntegerType());
    if (std::string l = integerLiteralOf(pt, v); !l.empty())
      return l;  // `128` into a uint32_t: `128u`
  }
  if (pt->isScalarType() && at->isScalarType()) return "((" + printed(ctx, pt) + ")(" + text + "))";
  return std::nullopt;
}

void sitesFor(clang::ASTContext &ctx, const ParsedSource &src, const clang::FunctionDecl *fd,
              const Refs &refs, std::vector<PassSite> &out) {
  auto rit = refs.refs.find(fd->getCanonicalDecl());
  if (rit == refs.refs.end() || rit->second.empty()) return;
  auto *body = llvm::dyn_cast_or_null<clang::CompoundStmt>(fd->getBody());
  auto whole = mainFileRange(ctx, fd->getSourceRange());
  if (!body || !whole) return;
  for (auto *p : fd->parameters())
    if (p->getName().empty() || p->hasDefaultArg()) return;
  // Every mention must be a direct call (not the function's address), outside the function
  // itself (not recursive), in the text itself (not a macro's body), and no call inside another.
  std::vector<const clang::CallExpr *> calls;
  std::vector<Range> callRs;
  for (auto *ref : rit->second) {
    auto cit = refs.callOf.find(ref);
    if (cit == refs.callOf.end()) return;
    const clang::CallExpr *call = cit->second;
    if (llvm::isa<clang::CUDAKernelCallExpr>(call) || call->getNumArgs() != fd->getNumParams())
      return;
    auto callR = mainFileRange(ctx, call->getSourceRange());
    if (!callR) return;
    if (callR->begin >= whole->begin && callR->end <= whole->end) return;  // recursive
    for (auto &o : callRs)
      if (callR->begin < o.end && o.begin < callR->end) return;  // f(f(x))
    calls.push_back(call);
    callRs.push_back(*callR);
  }
  unsigned wend = whole->end;
  while (wend < src.text.size() && (src.text[wend] == ' ' || src.text[wend] == '\t')) ++wend;
  if (wend < src.text.size() && src.text[wend] == ';') whole->end = wend + 1;
  Range removeFn = widenToLines(src.text, *whole);

  ParamUses pu;
  for (auto *p : fd->parameters()) pu.params.insert(p);
  pu.TraverseStmt(body);
  auto useCount = [&](const clang::ParmVarDecl *p) {
    unsigned n = 0;
    for (auto &u : pu.uses) n += u.first == p;
    return n;
  };
  auto useEdits = [&](auto &&textFor) -> std::optional<std::vector<Edit>> {
    std::vector<Edit> edits;
    for (auto &[p, e] : pu.uses) {
      auto r = mainFileRange(ctx, e->getSourceRange());
      if (!r) return std::nullopt;
      std::string t = textFor(p);
      // `f(p)` with p -> `(&full[s])`: `f(&full[s])`
      if (pu.bare.count(e) && t.size() > 2 && t.front() == '(' && t.back() == ')' &&
          balancedInside(t))
        t = t.substr(1, t.size() - 2);
      edits.push_back(Edit{r->begin, r->size(), t});
    }
    return edits;
  };
  // Piece `r` of the body with this call's arguments in place of the parameters.
  auto substituted = [&](const clang::CallExpr *call, Range r) -> std::optional<std::string> {
    std::vector<std::string> with(fd->getNumParams());
    for (unsigned i = 0; i < fd->getNumParams(); ++i) {
      const clang::ParmVarDecl *p = fd->getParamDecl(i);
      const clang::Expr *a = call->getArg(i);
      auto ar = mainFileRange(ctx, a->getSourceRange());
      if (!ar) return std::nullopt;
      if (p->getType()->isReferenceType() &&
          !llvm::isa<clang::DeclRefExpr>(a->IgnoreParenImpCasts()))
        return std::nullopt;
      if (!p->getType()->isReferenceType() && !pu.onlyRead(p)) return std::nullopt;
      auto w = argFor(ctx, p, a, src.text.substr(ar->begin, ar->size()), useCount(p));
      if (!w) return std::nullopt;
      with[i] = *w;
    }
    auto edits =
        useEdits([&](const clang::ParmVarDecl *p) { return with[p->getFunctionScopeIndex()]; });
    if (!edits) return std::nullopt;
    return rewritten(src.text, r, *edits);
  };

  PassSite site;
  site.pass = "inline-call";
  std::string name = fd->getNameAsString();
  std::string count =
      calls.size() == 1 ? "the one call" : "the " + std::to_string(calls.size()) + " calls";
  const clang::Stmt *only = body->size() == 1 ? body->body_front() : nullptr;
  auto *ret = llvm::dyn_cast_or_null<clang::ReturnStmt>(only);
  if (ret && ret->getRetValue()) {
    // Expression form: `(E)` with the arguments in place of the parameters, at every call.
    const clang::Expr *e = ret->getRetValue();
    auto er = mainFileRange(ctx, e->getSourceRange());
    if (!er) return;
    clang::QualType rt = fd->getReturnType(), et = e->IgnoreParenImpCasts()->getType();
    bool cast = !ctx.hasSameUnqualifiedType(rt, et);
    if (cast && (!rt->isScalarType() || !et->isScalarType())) return;
    for (size_t c = 0; c < calls.size(); ++c) {
      auto t = substituted(calls[c], *er);
      if (!t) return;
      std::string text = "(" + *t + ")";
      if (cast) text = "((" + printed(ctx, rt) + ")" + text + ")";
      site.edits.push_back(Edit{callRs[c].begin, callRs[c].size(), text});
    }
    site.note = "inline " + count + " of " + name + " (its return expression)";
  } else if (only && !llvm::isa<clang::ReturnStmt, clang::DeclStmt, clang::CompoundStmt>(only) &&
             fd->getReturnType()->isVoidType()) {
    // One statement (an asm, a store): each call statement becomes it, with the arguments in
    // place of the parameters; no block, no new names. Offered when it takes lines away.
    auto sr = mainFileRangeWithSemi(ctx, only->getSourceRange());
    if (!sr) return;
    std::string stmtText = src.text.substr(sr->begin, sr->size());
    auto linesOf = [](const std::string &t) {
      return (long)std::count(t.begin(), t.end(), '\n') + 1;
    };
    long fnLines = linesOf(src.text.substr(removeFn.begin, removeFn.size()) + "x") - 1;
    if ((long)calls.size() * (linesOf(stmtText) - 1) >= fnLines) return;
    for (size_t c = 0; c < calls.size(); ++c) {
      if (!refs.statements.count(calls[c])) return;
      auto stmtR = mainFileRangeWithSemi(ctx, calls[c]->getSourceRange());
      auto t = substituted(calls[c], *sr);
      if (!stmtR || !t) return;
      site.edits.push_back(Edit{stmtR->begin, stmtR->size(), *t});
    }
    site.note = "inline " + count + " of " + name + " (its statement)";
  } else {
    // Statement form: a block declaring the parameters, then the body (one call only).
    if (calls.size() != 1) return;
    const clang::CallExpr *call = calls[0];
    if (!refs.statements.count(call)) return;
    std::vector<std::string> argText;
    for (unsigned i = 0; i < call->getNumArgs(); ++i) {
      const clang::Expr *a = call->getArg(i);
      auto ar = mainFileRange(ctx, a->getSourceRange());
      if (!ar) return;
      argText.push_back(src.text.substr(ar->begin, ar->size()));
      const clang::ParmVarDecl *p = fd->getParamDecl(i);
      if (p->getType()->isReferenceType() &&
          !llvm::isa<clang::DeclRefExpr>(a->IgnoreParenImpCasts()))
        return;
    }
    const clang::ReturnStmt *last = nullptr;
    if (!pu.returns.empty()) {
      last = body->size() ? llvm::dyn_cast<clang::ReturnStmt>(body->body_back()) : nullptr;
      if (pu.returns.size() != 1 || last != pu.returns[0]) return;  // a return in the middle
    }
    Names argNames;
    for (auto *a : call->arguments()) argNames.TraverseStmt(const_cast<clang::Expr *>(a));
    std::string decls;
    std::set<std::string> declared;
    for (unsigned i = 0; i < fd->getNumParams(); ++i) {
      const clang::ParmVarDecl *p = fd->getParamDecl(i);
      const clang::Expr *a = call->getArg(i)->IgnoreParenImpCasts();
      auto *dre = llvm::dyn_cast<clang::DeclRefExpr>(a);
      if (dre && dre->getDecl()->getName() == p->getName() &&
          (p->getType()->isReferenceType() ||
           (ctx.hasSameUnqualifiedType(p->getType(), a->getType()) && pu.onlyRead(p))))
        continue;  // `f(n)` into `int n`: the caller's n already is the parameter
      auto pr = mainFileRange(ctx, p->getSourceRange());
      if (!pr) return;
      declared.insert(p->getNameAsString());
      decls += src.text.substr(pr->begin, pr->size()) + " = " +
               (isSimple(call->getArg(i)) ? argText[i] : "(" + argText[i] + ")") + "; ";
    }
    for (auto &n : argNames.names)
      if (declared.count(n))
        return;  // the argument would see the new local, not the caller's variable
    auto lb = mainFileOffset(ctx, body->getLBracLoc()),
         rb = mainFileOffset(ctx, body->getRBracLoc());
    if (!lb || !rb) return;
    Range inner{*lb + 1, *rb};
    std::vector<Edit> edits;
    if (last) {  // `return E;` -> `E;`, `return;` -> nothing
      auto lr = mainFileRangeWithSemi(ctx, last->getSourceRange());
      if (!lr) return;
      std::string keep;
      if (auto *v = last->getRetValue()) {
        auto vr = mainFileRange(ctx, v->getSourceRange());
        if (!vr) return;
        keep = src.text.substr(vr->begin, vr->size()) + ";";
      }
      edits.push_back(Edit{lr->begin, lr->size(), keep});
    }
    auto stmtR = mainFileRangeWithSemi(ctx, call->getSourceRange());
    if (!stmtR) return;
    site.edits.push_back(
        Edit{stmtR->begin, stmtR->size(), "{ " + decls + rewritten(src.text, inner, edits) + "}"});
    site.note = "inline the one call of " + name + " (its body as a block)";
  }
  site.edits.push_back(Edit{removeFn.begin, removeFn.size(), ""});
  if (!sealSite(site, src.text)) return;
  site.line = lineOf(src.text, callRs[0].begin);
  out.push_back(std::move(site));
}

}  // namespace

std::vector<PassSite> inlineCallSites(const ParsedSource &src) {
  std::vector<PassSite> sites;
  forEachSide(src, [&](clang::ASTContext &ctx, bool) {
    Refs refs;
    std::vector<const clang::FunctionDecl *> defs;
    std::function<void(clang::Decl *)> collect = [&](clang::Decl *d) {
      if (auto *ns = llvm::dyn_cast<clang::NamespaceDecl>(d)) {
        for (auto *x : ns->decls()) collect(x);
        return;
      }
      auto *fd = llvm::dyn_cast<clang::FunctionDecl>(d);
      if (!fd || !fd->doesThisDeclarationHaveABody() || fd->isMain() || fd->isVariadic() ||
          fd->isImplicit())
        return;
      if (llvm::isa<clang::CXXMethodDecl>(fd) ||
          fd->getTemplatedKind() != clang::FunctionDecl::TK_NonTemplate)
        return;
      if (fd->hasAttr<clang::CUDAGlobalAttr>() || fd->getPreviousDecl() ||
          fd->getMostRecentDecl() != fd)
        return;
      defs.push_back(fd);
    };
    forEachMainFileDecl(ctx, [&](clang::Decl *d) {
      collect(d);
      refs.TraverseDecl(d);
    });
    for (auto *fd : defs) sitesFor(ctx, src, fd, refs, sites);
  });
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
