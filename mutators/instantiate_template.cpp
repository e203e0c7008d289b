// instantiate-template: a function template the program instantiates exactly once
// becomes that instantiation: the `template <...>` header goes, every use of a template
// parameter in the signature and the body is replaced by its argument as Clang prints it
// (`N` -> `232`, `T` -> `float`), and explicit template arguments at the uses go
// (`f<232>()` -> `f()`). One site = all those edits. Skipped: templates with packs,
// template template or declaration arguments, forward declarations or explicit
// specializations, and parameter uses inside macro expansions.
#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/Expr.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/TypeLoc.h>

#include <algorithm>
#include <map>

namespace wsr {
namespace {

// Rewrites the uses of the template's parameters inside its pattern.
struct Substitute : clang::RecursiveASTVisitor<Substitute> {
  clang::ASTContext &ctx;
  const std::map<const clang::NamedDecl *, std::string> &with;
  std::vector<Edit> edits;
  bool ok = true;
  Substitute(clang::ASTContext &c, const std::map<const clang::NamedDecl *, std::string> &w)
      : ctx(c), with(w) {}

  void replace(const clang::NamedDecl *d, clang::SourceRange r) {
    auto it = with.find(d);
    if (it == with.end()) return;
    auto fr = mainFileRange(ctx, r);
    if (!fr) {
      ok = false;
      return;
    }
    edits.push_back(Edit{fr->begin, fr->size(), it->second});
  }
  bool VisitDeclRefExpr(clang::DeclRefExpr *e) {
    replace(e->getDecl(), e->getSourceRange());
    return true;
  }
  bool VisitTemplateTypeParmTypeLoc(clang::TemplateTypeParmTypeLoc tl) {
    replace(tl.getDecl(), tl.getSourceRange());
    return true;
  }
};

// Explicit template arguments where the program names the one specialization.
struct Uses : clang::RecursiveASTVisitor<Uses> {
  clang::ASTContext &ctx;
  const clang::FunctionDecl *spec;
  std::vector<Edit> edits;
  bool ok = true;
  Uses(clang::ASTContext &c, const clang::FunctionDecl *s) : ctx(c), spec(s) {}
  bool VisitDeclRefExpr(clang::DeclRefExpr *e) {
    if (e->getDecl() != spec || !e->hasExplicitTemplateArgs()) return true;
    auto r = mainFileRange(ctx, clang::SourceRange(e->getLAngleLoc(), e->getRAngleLoc()));
    if (!r)
      ok = false;
    else
      edits.push_back(Edit{r->begin, r->size(), ""});
    return true;
  }
};

std::optional<std::string> printArg(clang::ASTContext &ctx, const clang::TemplateArgument &a) {
  std::string s;
  llvm::raw_string_ostream os(s);
  switch (a.getKind()) {
    case clang::TemplateArgument::Type: {
      auto policy = ctx.getPrintingPolicy();
      policy.SuppressUnwrittenScope = true;
      a.getAsType().print(os, policy);
      if (os.str().find("(lambda") != std::string::npos ||
          os.str().find("(unnamed") != std::string::npos)
        return std::nullopt;
      return os.str();
    }
    case clang::TemplateArgument::Integral:
      a.print(ctx.getPrintingPolicy(), os, /*IncludeType=*/false);
      if (!os.str().empty() && os.str()[0] == '-') return "(" + os.str() + ")";
      return os.str();
    default:
      return std::nullopt;
  }
}

void sitesFor(clang::ASTContext &ctx, const ParsedSource &src, clang::FunctionTemplateDecl *ft,
              const std::vector<clang::Decl *> &mainDecls, std::vector<PassSite> &out) {
  clang::FunctionDecl *fd = ft->getTemplatedDecl();
  if (!fd->doesThisDeclarationHaveABody() || ft->getPreviousDecl() || ft->getMostRecentDecl() != ft)
    return;
  std::vector<clang::FunctionDecl *> specs(ft->specializations().begin(),
                                           ft->specializations().end());
  if (specs.size() != 1 ||
      specs[0]->getTemplateSpecializationKind() != clang::TSK_ImplicitInstantiation)
    return;
  const clang::FunctionDecl *spec = specs[0];
  const clang::TemplateArgumentList *args = spec->getTemplateSpecializationArgs();
  const clang::TemplateParameterList *params = ft->getTemplateParameters();
  if (!args || args->size() != params->size()) return;
  std::map<const clang::NamedDecl *, std::string> with;
  std::string shown;
  for (unsigned i = 0; i < params->size(); ++i) {
    const clang::NamedDecl *p = params->getParam(i);
    if (p->isParameterPack() || llvm::isa<clang::TemplateTemplateParmDecl>(p)) return;
    auto s = printArg(ctx, args->get(i));
    if (!s) return;
    with[p] = *s;
    shown += (i ? ", " : "") + *s;
  }

  PassSite site;
  site.pass = "instantiate-template";
  // The header, with the blanks after it up to and including one line break.
  auto head =
      mainFileRange(ctx, clang::SourceRange(params->getTemplateLoc(), params->getRAngleLoc()));
  if (!head) return;
  unsigned e = head->end;
  while (e < src.text.size() && (src.text[e] == ' ' || src.text[e] == '\t')) ++e;
  if (e < src.text.size() && src.text[e] == '\n') ++e;
  site.edits.push_back(Edit{head->begin, e - head->begin, ""});

  Substitute sub(ctx, with);
  sub.TraverseDecl(fd);
  if (!sub.ok) return;
  site.edits.insert(site.edits.end(), sub.edits.begin(), sub.edits.end());
  Uses uses(ctx, spec);
  for (auto *d : mainDecls) uses.TraverseDecl(d);
  if (!uses.ok) return;
  site.edits.insert(site.edits.end(), uses.edits.begin(), uses.edits.end());

  std::sort(site.edits.begin(), site.edits.end());
  site.edits.erase(std::unique(site.edits.begin(), site.edits.end()), site.edits.end());
  site.line = lineOf(src.text, head->begin);
  site.note = "instantiate " + fd->getNameAsString() + "<" + shown + ">";
  out.push_back(std::move(site));
}

}  // namespace

std::vector<PassSite> instantiateTemplateSites(const ParsedSource &src) {
  std::vector<PassSite> sites;
  forEachSide(src, [&](clang::ASTContext &ctx, bool) {
    std::vector<clang::Decl *> mainDecls;
    forEachMainFileDecl(ctx, [&](clang::Decl *d) { mainDecls.push_back(d); });
    std::function<void(clang::Decl *)> walk = [&](clang::Decl *d) {
      if (auto *ns = llvm::dyn_cast<clang::NamespaceDecl>(d))
        for (auto *x : ns->decls()) walk(x);
      else if (auto *ft = llvm::dyn_cast<clang::FunctionTemplateDecl>(d))
        sitesFor(ctx, src, ft, mainDecls, sites);
    };
    for (auto *d : mainDecls) walk(d);
  });
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
