// remove-function: delete a function, kernel or function template definition (never
// main), with its other declarations and every statement that uses it (a call, a launch,
// a cudaFuncSetAttribute naming the kernel) and what those statements declare for later
// ones (uses.h). Where a use cannot go with it (outside any statement, as in a global
// initializer, or the final `return` of a function), nothing is offered: it could not parse.
#include "pass.h"
#include "uses.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/DeclTemplate.h>

namespace wsr {

std::vector<PassSite> removeFunctionSites(const ParsedSource &src) {
  std::vector<PassSite> sites;
  forEachSide(src, [&](clang::ASTContext &ctx, bool) {
    UseIndex uses(ctx, src);
    std::function<void(clang::DeclContext *)> walk = [&](clang::DeclContext *dc) {
      for (auto *d : dc->decls()) {
        if (auto *ns = llvm::dyn_cast<clang::NamespaceDecl>(d)) {
          walk(ns);
          continue;
        }
        clang::FunctionDecl *fd = llvm::dyn_cast<clang::FunctionDecl>(d);
        clang::Decl *whole = d;
        if (auto *ft = llvm::dyn_cast<clang::FunctionTemplateDecl>(d)) fd = ft->getTemplatedDecl();
        if (!fd || fd->isMain() || !fd->doesThisDeclarationHaveABody()) continue;
        if (fd->isImplicit()) continue;
        auto r = mainFileRangeWithSemi(ctx, whole->getSourceRange());
        if (!r) continue;
        Range whole_r = widenToLines(src.text, *r);
        std::vector<Edit> edits{Edit{whole_r.begin, whole_r.size(), ""}};
        for (auto *rd : fd->redecls()) {  // prototypes
          if (rd == fd) continue;
          auto pr = mainFileRangeWithSemi(ctx, rd->getSourceRange());
          if (!pr) {
            edits.clear();
            break;
          }
          Range w = widenToLines(src.text, *pr);
          edits.push_back(Edit{w.begin, w.size(), ""});
        }
        size_t own = edits.size();
        if (edits.empty() || !uses.removeUses(fd, edits)) continue;  // a use that cannot go with it
        if (edits.size() > own) {
          PassSite p;
          p.pass = "remove-function";
          p.edits = std::move(edits);
          p.line = lineOf(src.text, whole_r.begin);
          p.note = "remove function " + fd->getNameAsString() + " and the statements using it";
          sites.push_back(std::move(p));
        } else {
          sites.push_back(replaceSite("remove-function", src, whole_r, "",
                                      "remove function " + fd->getNameAsString()));
        }
      }
    };
    walk(ctx.getTranslationUnitDecl());
  });
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
