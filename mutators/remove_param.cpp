// remove-param: a function parameter goes, together with the matching argument at every
// call and kernel launch in the main file (one site = all those edits). A parameter the
// body still reads becomes a value-initialised local (`float *out{};`), so the site can
// still parse; the interestingness test says whether the failure survives that. main's
// parameters go only all together (`int main(int, char **)` -> `int main()`; `main(char **)` alone
// is ill-formed), when nothing reads them. Skipped: methods, variadic functions, functions whose
// address is taken (a kernel handed to a cuda* runtime call, cudaFuncSetAttribute(kernel, ...),
// is not) or that are named in an overload set a template has not resolved yet, and declarations
// outside the file.
#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>

#include <algorithm>
#include <map>
#include <set>

namespace wsr {
namespace {

const clang::FunctionDecl *keyOf(const clang::FunctionDecl *fd) {
  if (auto *pat = fd->getTemplateInstantiationPattern()) fd = pat;
  return fd->getCanonicalDecl();
}

struct Uses : clang::RecursiveASTVisitor<Uses> {
  std::map<const clang::FunctionDecl *, std::vector<const clang::CallExpr *>> calls;
  std::set<const clang::FunctionDecl *> unsafe;  // address taken, or an unresolved overload set
  std::set<const clang::Expr *> callees;

  bool VisitCallExpr(clang::CallExpr *c) {
    auto *callee = c->getCallee() ? c->getCallee()->IgnoreParenImpCasts() : nullptr;
    // A kernel handed to the runtime (cudaFuncSetAttribute(kernel, ...), cudaOccupancy...) is not
    // called through a pointer of its type: its parameters can still go.
    if (auto *rt = c->getDirectCallee();
        rt && llvm::StringRef(rt->getNameAsString()).starts_with("cuda"))
      for (auto *a : c->arguments()) {
        const clang::Expr *e = a->IgnoreParenImpCasts();
        if (auto *u = llvm::dyn_cast<clang::UnaryOperator>(e);
            u && u->getOpcode() == clang::UO_AddrOf)
          e = u->getSubExpr()->IgnoreParenImpCasts();
        if (auto *dre = llvm::dyn_cast<clang::DeclRefExpr>(e))
          if (auto *fd = llvm::dyn_cast<clang::FunctionDecl>(dre->getDecl());
              fd && fd->hasAttr<clang::CUDAGlobalAttr>())
            callees.insert(dre);
      }
    if (auto *dre = llvm::dyn_cast_or_null<clang::DeclRefExpr>(callee)) {
      if (auto *fd = llvm::dyn_cast<clang::FunctionDecl>(dre->getDecl())) {
        callees.insert(dre);
        calls[keyOf(fd)].push_back(c);
      }
    } else if (auto *ule = llvm::dyn_cast_or_null<clang::UnresolvedLookupExpr>(callee)) {
      callees.insert(ule);
      std::vector<const clang::FunctionDecl *> fds;
      for (auto *d : ule->decls()) {
        if (auto *ft = llvm::dyn_cast<clang::FunctionTemplateDecl>(d))
          fds.push_back(keyOf(ft->getTemplatedDecl()));
        else if (auto *fd = llvm::dyn_cast<clang::FunctionDecl>(d))
          fds.push_back(keyOf(fd));
      }
      if (fds.size() == 1)
        calls[fds[0]].push_back(c);
      else
        unsafe.insert(fds.begin(), fds.end());
    }
    return true;
  }
  bool VisitDeclRefExpr(clang::DeclRefExpr *e) {
    if (auto *fd = llvm::dyn_cast<clang::FunctionDecl>(e->getDecl()))
      if (!callees.count(e)) unsafe.insert(keyOf(fd));
    return true;
  }
  bool VisitUnresolvedLookupExpr(clang::UnresolvedLookupExpr *e) {
    if (callees.count(e)) return true;
    for (auto *d : e->decls()) {
      if (auto *ft = llvm::dyn_cast<clang::FunctionTemplateDecl>(d))
        unsafe.insert(keyOf(ft->getTemplatedDecl()));
      else if (auto *fd = llvm::dyn_cast<clang::FunctionDecl>(d))
        unsafe.insert(keyOf(fd));
    }
    return true;
  }
};

// The bytes that remove item i of a comma-separated list whose items span `items`:
// "a, " for the first of several, ", b" for a later one, "a" for the only one.
std::optional<Range> listItemRemoval(const std::vector<std::optional<Range>> &items, size_t i) {
  if (!items[i]) return std::nullopt;
  if (i + 1 < items.size()) {
    if (!items[i + 1]) return std::nullopt;
    return Range{items[i]->begin, items[i + 1]->begin};
  }
  if (i > 0) {
    if (!items[i - 1]) return std::nullopt;
    return Range{items[i - 1]->end, items[i]->end};
  }
  return items[i];
}

void sitesFor(clang::ASTContext &ctx, const ParsedSource &src, const clang::FunctionDecl *def,
              const Uses &uses, std::vector<PassSite> &out) {
  const clang::FunctionDecl *key = def->getCanonicalDecl();
  auto found = uses.calls.find(key);
  static const std::vector<const clang::CallExpr *> none;
  const auto &calls = found == uses.calls.end() ? none : found->second;
  unsigned n = def->getNumParams();
  for (unsigned i = 0; i < n; ++i) {
    const clang::ParmVarDecl *pvd = def->getParamDecl(i);
    if (pvd->isParameterPack()) return;
    PassSite site;
    site.pass = "remove-param";
    bool ok = true;
    for (const clang::FunctionDecl *rd : def->redecls()) {
      std::vector<std::optional<Range>> items;
      for (auto *p : rd->parameters()) items.push_back(mainFileRange(ctx, p->getSourceRange()));
      auto r = items.size() == n ? listItemRemoval(items, i) : std::nullopt;
      if (!r) {
        ok = false;
        break;
      }
      site.edits.push_back(Edit{r->begin, r->size(), ""});
    }
    // A parameter the body still uses stays as a local, value-initialised.
    std::string what =
        "remove parameter " + pvd->getNameAsString() + " of " + def->getNameAsString();
    if (ok && pvd->isReferenced()) {
      auto *body = llvm::dyn_cast_or_null<clang::CompoundStmt>(def->getBody());
      auto at = body ? mainFileOffset(ctx, body->getLBracLoc()) : std::nullopt;
      clang::QualType t = pvd->getType();
      if (!at || t->isReferenceType() || pvd->getName().empty())
        ok = false;
      else {
        std::string decl;
        llvm::raw_string_ostream os(decl);
        t.print(os, ctx.getPrintingPolicy(), pvd->getName());
        site.edits.push_back(Edit{*at + 1, 0, " " + os.str() + "{};"});
        what += " (kept as a local)";
      }
    }
    for (auto *c : calls) {
      if (!ok) break;
      if (c->getNumArgs() <= i || llvm::isa<clang::CXXDefaultArgExpr>(c->getArg(i))) continue;
      std::vector<std::optional<Range>> items;
      for (auto *a : c->arguments())
        if (!llvm::isa<clang::CXXDefaultArgExpr>(a))
          items.push_back(mainFileRange(ctx, a->getSourceRange()));
      auto r = listItemRemoval(items, i);
      if (!r) {
        ok = false;
        break;
      }
      site.edits.push_back(Edit{r->begin, r->size(), ""});
    }
    if (!ok || site.edits.empty()) continue;
    std::sort(site.edits.begin(), site.edits.end());
    site.line = lineOf(src.text, site.edits.front().offset);
    site.note = what + " and " + std::to_string(calls.size()) + " argument(s)";
    out.push_back(std::move(site));
  }
}

// main's parameters, all at once, when the body reads none of them.
void mainSite(clang::ASTContext &ctx, const ParsedSource &src, const clang::FunctionDecl *fd,
              std::vector<PassSite> &out) {
  if (fd->getPreviousDecl()) return;  // declared before its definition: leave it
  for (auto *p : fd->parameters())
    if (p->isReferenced()) return;
  auto first = mainFileRange(ctx, fd->parameters().front()->getSourceRange());
  auto last = mainFileRange(ctx, fd->parameters().back()->getSourceRange());
  if (!first || !last || last->end < first->begin) return;
  PassSite site;
  site.pass = "remove-param";
  site.edits.push_back(Edit{first->begin, last->end - first->begin, ""});
  site.line = lineOf(src.text, first->begin);
  site.note = "remove the parameters of main";
  out.push_back(std::move(site));
}

}  // namespace

std::vector<PassSite> removeParamSites(const ParsedSource &src) {
  std::vector<PassSite> sites;
  forEachSide(src, [&](clang::ASTContext &ctx, bool) {
    Uses uses;
    std::vector<const clang::FunctionDecl *> defs, mains;
    std::function<void(clang::Decl *)> collect = [&](clang::Decl *d) {
      if (auto *ns = llvm::dyn_cast<clang::NamespaceDecl>(d)) {
        for (auto *x : ns->decls()) collect(x);
        return;
      }
      const clang::FunctionDecl *fd = llvm::dyn_cast<clang::FunctionDecl>(d);
      if (auto *ft = llvm::dyn_cast<clang::FunctionTemplateDecl>(d)) fd = ft->getTemplatedDecl();
      if (!fd || !fd->doesThisDeclarationHaveABody() || fd->isVariadic() || fd->getNumParams() == 0)
        return;
      if (fd->isMain()) {
        mains.push_back(fd);
        return;
      }
      if (llvm::isa<clang::CXXMethodDecl>(fd) || fd->isImplicit()) return;
      defs.push_back(fd);
    };
    forEachMainFileDecl(ctx, [&](clang::Decl *d) {
      collect(d);
      uses.TraverseDecl(d);
    });
    for (auto *fd : defs)
      if (!uses.unsafe.count(fd->getCanonicalDecl())) sitesFor(ctx, src, fd, uses, sites);
    for (auto *fd : mains) mainSite(ctx, src, fd, sites);
  });
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
