#include "uses.h"

#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>
#include <clang/AST/RecursiveASTVisitor.h>

#include <algorithm>

namespace wsr {

const clang::Decl *UseIndex::key(const clang::Decl *d) {
  if (!d) return d;
  if (auto *ft = llvm::dyn_cast<clang::FunctionTemplateDecl>(d)) d = ft->getTemplatedDecl();
  if (auto *fd = llvm::dyn_cast<clang::FunctionDecl>(d))
    if (auto *pt = fd->getPrimaryTemplate()) d = pt->getTemplatedDecl();
  return d->getCanonicalDecl();
}

bool isFinalReturn(clang::ASTContext &ctx, const clang::CompoundStmt *body, const clang::Stmt *st) {
  auto *ret = llvm::dyn_cast<clang::ReturnStmt>(st);
  if (!ret || !ret->getRetValue() || body->body_empty() || body->body_back() != st) return false;
  for (auto &parent : ctx.getParents(*body)) {
    if (auto *fd = parent.get<clang::FunctionDecl>())
      return !fd->getReturnType()->isVoidType() && !fd->isMain();  // main returns 0 at its end
    if (parent.get<clang::LambdaExpr>()) return true;
  }
  return false;
}

struct UseVisitor : clang::RecursiveASTVisitor<UseVisitor> {
  clang::ASTContext &ctx;
  const ParsedSource &src;
  UseIndex &idx;
  std::vector<std::pair<size_t, size_t>> stack;  // the (block, child) statements around here
  UseVisitor(clang::ASTContext &c, const ParsedSource &s, UseIndex &i) : ctx(c), src(s), idx(i) {}

  bool TraverseCompoundStmt(clang::CompoundStmt *cs) {
    size_t b = idx.blocks_.size();
    idx.blocks_.emplace_back();
    size_t i = 0;
    for (auto *st : cs->body()) {
      UseIndex::Child c;
      auto r = mainFileRangeWithSemi(ctx, st->getSourceRange());
      if (r && r->size() > 0) c.range = widenToLines(src.text, *r);
      if (auto *ds = llvm::dyn_cast<clang::DeclStmt>(st))
        for (auto *d : ds->decls()) c.declares.insert(UseIndex::key(d));
      c.final_return = isFinalReturn(ctx, cs, st);
      idx.blocks_[b].push_back(std::move(c));  // by index: nested blocks grow blocks_
      idx.where_[st] = {b, i};
      stack.push_back({b, i});
      TraverseStmt(st);
      stack.pop_back();
      ++i;
    }
    return true;
  }
  void use(const clang::Decl *d) {
    auto k = UseIndex::key(d);
    if (stack.empty()) {
      idx.unplaced_.insert(k);
      return;
    }
    for (auto [b, i] : stack) idx.blocks_[b][i].uses.insert(k);
    idx.users_[k].insert(stack.back());
  }
  bool VisitDeclRefExpr(clang::DeclRefExpr *e) {
    use(e->getDecl());
    return true;
  }
  bool VisitOverloadExpr(clang::OverloadExpr *e) {  // a call inside a template, not yet resolved
    for (auto *d : e->decls()) use(d);
    return true;
  }
};

UseIndex::UseIndex(clang::ASTContext &ctx, const ParsedSource &src) {
  UseVisitor v(ctx, src, *this);
  forEachMainFileDecl(ctx, [&](clang::Decl *d) { v.TraverseDecl(d); });
}

std::set<size_t> UseIndex::closure(size_t block, size_t index) const {
  const auto &kids = blocks_[block];
  std::set<size_t> c{index};
  std::set<const clang::Decl *> gone = kids[index].declares;
  for (size_t j = index + 1; j < kids.size() && !gone.empty(); ++j) {
    bool uses = false;
    for (auto *d : kids[j].uses)
      if (gone.count(d)) {
        uses = true;
        break;
      }
    if (!uses) continue;
    c.insert(j);
    gone.insert(kids[j].declares.begin(), kids[j].declares.end());
  }
  return c;
}

// Sorted, and without the edits inside another one (a use inside a statement already removed).
static void normalize(std::vector<Edit> &edits) {
  std::sort(edits.begin(), edits.end(), [](const Edit &a, const Edit &b) {
    return a.offset != b.offset ? a.offset < b.offset : a.length > b.length;
  });
  std::vector<Edit> out;
  for (auto &e : edits)
    if (out.empty() || e.offset >= out.back().offset + out.back().length) out.push_back(e);
  edits = std::move(out);
}

void UseIndex::addEdits(size_t block, const std::set<size_t> &idx, std::vector<Edit> &out) const {
  for (size_t i : idx) {
    const auto &r = blocks_[block][i].range;
    if (!r || blocks_[block][i].final_return) {
      out.clear();
      return;
    }
    out.push_back(Edit{r->begin, r->size(), ""});
  }
}

std::vector<Edit> UseIndex::removeWithDependents(const clang::Stmt *s) const {
  auto it = where_.find(s);
  if (it == where_.end()) return {};
  std::vector<Edit> out;
  addEdits(it->second.first, closure(it->second.first, it->second.second), out);
  normalize(out);
  return out;
}

size_t UseIndex::dependentsCount(const clang::Stmt *s) const {
  auto it = where_.find(s);
  return it == where_.end() ? 0 : closure(it->second.first, it->second.second).size();
}

bool UseIndex::removeUses(const clang::Decl *d, std::vector<Edit> &out) const {
  auto k = key(d);
  if (unplaced_.count(k)) return false;
  auto it = users_.find(k);
  if (it == users_.end()) return true;
  for (auto [b, i] : it->second) {
    std::vector<Edit> e;
    addEdits(b, closure(b, i), e);
    if (e.empty()) return false;
    out.insert(out.end(), e.begin(), e.end());
  }
  normalize(out);
  return true;
}

}  // namespace wsr
