// remove-function: delete a function, kernel or function template definition (never
// main). Whatever still calls it stops parsing, and the parse check skips that candidate
// before any nvcc run.
#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/DeclTemplate.h>

namespace wsr {

std::vector<PassSite> removeFunctionSites(const ParsedSource &src) {
  std::vector<PassSite> sites;
  forEachSide(src, [&](clang::ASTContext &ctx, bool) {
    std::function<void(clang::DeclContext *)> walk = [&](clang::DeclContext *dc) {
      for (auto *d : dc->decls()) {
        if (auto *ns = llvm::dyn_cast<clang::NamespaceDecl>(d)) { walk(ns); continue; }
        clang::FunctionDecl *fd = llvm::dyn_cast<clang::FunctionDecl>(d);
        clang::Decl *whole = d;
        if (auto *ft = llvm::dyn_cast<clang::FunctionTemplateDecl>(d)) fd = ft->getTemplatedDecl();
        if (!fd || fd->isMain() || !fd->doesThisDeclarationHaveABody()) continue;
        if (fd->isImplicit()) continue;
        auto r = mainFileRangeWithSemi(ctx, whole->getSourceRange());
        if (!r) continue;
        sites.push_back(replaceSite("remove-function", src, widenToLines(src.text, *r), "",
                                    "remove function " + fd->getNameAsString()));
      }
    };
    walk(ctx.getTranslationUnitDecl());
  });
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
