// remove-unreachable: delete the top-level declarations of the user's file that the program
// does not reach from `main` and from the global variables whose initialisers run code. On a
// program with its library headers inlined (wsreduce --flatten) most of the text is library
// code no kernel instantiates; the search tries every site in one candidate first and halves
// on refusal (ddmin), so this is the first big bite at that scale.
//
// A unit is a declaration directly in the file's scope or in a namespace or `extern "C"` block
// (namespaces themselves are containers, never units). Reachability is computed on each parsed
// side over the whole AST, template instantiations included: a reference inside a declaration
// links that declaration's unit to the referenced one's, by source location, so an instantiated
// body counts for the template it came from, and a specialisation for its primary template and
// the partial specialisation it was instantiated from. A function or class reaches all of its
// redeclarations (a prototype, an out-of-line member definition). References made from code
// outside the user's file (a library template instantiated with a user type) are treated as
// made from `main`: that code runs only because something reached it. A unit is offered only
// when no side reaches it. `using` directives and declarations, namespace aliases and deduction
// guides are never offered (they act on name lookup and deduction, not by being referenced).
#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/ExprConcepts.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/SourceManager.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

namespace wsr {

namespace {

struct Unit {
  Range range;        // widened to whole lines
  std::string what;   // for the note
  bool root = false;  // main, a global with a dynamic initialiser
};

class Units {
 public:
  Units(clang::ASTContext &ctx, const ParsedSource &src) : ctx_(ctx), src_(src) {
    collect(ctx.getTranslationUnitDecl());
    std::sort(units_.begin(), units_.end(),
              [](const Unit &a, const Unit &b) { return a.range.begin < b.range.begin; });
    // Ranges of units never overlap; if two do (a declaration group split oddly), the later
    // one is dropped rather than offered twice.
    std::vector<Unit> kept;
    for (auto &u : units_)
      if (kept.empty() || u.range.begin >= kept.back().range.end)
        kept.push_back(std::move(u));
      else
        kept.back().root |= u.root;
    units_ = std::move(kept);
  }

  // The unit holding `loc` (its file location): -1 between units of the user's file, -2
  // outside the user's file.
  int at(clang::SourceLocation loc) const {
    if (loc.isInvalid()) return -1;
    auto &sm = ctx_.getSourceManager();
    clang::SourceLocation f = sm.getFileLoc(loc);
    if (!isUserFileLoc(ctx_, f)) return -2;
    unsigned off = sm.getFileOffset(f);
    auto it = std::upper_bound(units_.begin(), units_.end(), off,
                               [](unsigned o, const Unit &u) { return o < u.range.begin; });
    if (it == units_.begin()) return -1;
    --it;
    return off < it->range.end ? (int)(it - units_.begin()) : -1;
  }

  std::vector<Unit> &all() { return units_; }

 private:
  void collect(clang::DeclContext *dc) {
    for (clang::Decl *d : dc->decls()) {
      if (d->isImplicit()) continue;
      if (auto *ns = llvm::dyn_cast<clang::NamespaceDecl>(d)) {
        collect(ns);
        continue;
      }
      if (auto *ls = llvm::dyn_cast<clang::LinkageSpecDecl>(d)) {
        collect(ls);
        continue;
      }
      if (llvm::isa<clang::UsingDirectiveDecl, clang::UsingDecl, clang::NamespaceAliasDecl,
                    clang::EmptyDecl, clang::UsingEnumDecl, clang::CXXDeductionGuideDecl>(d))
        continue;
      if (auto *ft = llvm::dyn_cast<clang::FunctionTemplateDecl>(d);
          ft && llvm::isa<clang::CXXDeductionGuideDecl>(ft->getTemplatedDecl()))
        continue;  // class template argument deduction uses it without a reference
      if (!isMainFileLoc(ctx_, d->getLocation())) continue;
      auto r = mainFileRangeWithSemi(ctx_, d->getSourceRange());
      if (!r) continue;
      // A function's range stops before `= delete;` / `= default;`: the unit takes them too.
      if (const std::string &t = src_.text; r->end < t.size()) {
        size_t at = t.find_first_not_of(" \t\r\n", r->end);
        if (at != std::string::npos && t[at] == '=' &&
            llvm::isa<clang::FunctionDecl, clang::FunctionTemplateDecl>(d))
          if (size_t semi = t.find(';', at); semi != std::string::npos) r->end = (unsigned)semi + 1;
      }
      Unit u;
      u.range = widenToLines(src_.text, *r);
      u.what = describe(d);
      u.root = isRoot(d);
      units_.push_back(std::move(u));
    }
  }

  static std::string describe(clang::Decl *d) {
    if (auto *nd = llvm::dyn_cast<clang::NamedDecl>(d)) {
      std::string n = nd->getNameAsString();
      if (!n.empty()) return n;
    }
    return d->getDeclKindName();
  }

  bool isRoot(clang::Decl *d) const {
    if (auto *fd = llvm::dyn_cast<clang::FunctionDecl>(d)) return fd->isMain();
    if (auto *vd = llvm::dyn_cast<clang::VarDecl>(d)) {
      // A global whose initialiser runs code (a constructor, a call) acts when the program
      // starts, referenced or not.
      const clang::Expr *init = vd->getInit();
      if (!init || vd->getType()->isDependentType()) return false;
      return !init->isConstantInitializer(ctx_, vd->getType()->isReferenceType());
    }
    return false;
  }

  clang::ASTContext &ctx_;
  const ParsedSource &src_;
  std::vector<Unit> units_;
};

// Every reference in the AST as an edge between units (from -> to); kFromRoot for references
// made outside the user's file.
class Edges : public clang::RecursiveASTVisitor<Edges> {
 public:
  static constexpr int kFromRoot = -2;
  Edges(clang::ASTContext &ctx, const Units &u) : ctx_(ctx), units_(u) {}

  bool shouldVisitTemplateInstantiations() const { return true; }
  bool shouldVisitImplicitCode() const { return true; }

  bool TraverseDecl(clang::Decl *d) {
    if (!d) return true;
    int saved = from_;
    if (!llvm::isa<clang::TranslationUnitDecl, clang::NamespaceDecl, clang::LinkageSpecDecl>(d)) {
      int u = units_.at(d->getLocation());
      // Code of the user's file between units (a namespace's braces) keeps the enclosing one.
      if (u != -1) from_ = u;
    }
    bool r = clang::RecursiveASTVisitor<Edges>::TraverseDecl(d);
    from_ = saved;
    return r;
  }

  bool VisitDeclRefExpr(clang::DeclRefExpr *e) {
    to(e->getDecl());
    to(e->getFoundDecl());
    return true;
  }
  bool VisitMemberExpr(clang::MemberExpr *e) {
    to(e->getMemberDecl());
    return true;
  }
  bool VisitCXXConstructExpr(clang::CXXConstructExpr *e) {
    to(e->getConstructor());
    return true;
  }
  bool VisitCXXNewExpr(clang::CXXNewExpr *e) {
    to(e->getOperatorNew());
    return true;
  }
  bool VisitCXXDeleteExpr(clang::CXXDeleteExpr *e) {
    to(e->getOperatorDelete());
    return true;
  }
  bool VisitOverloadExpr(clang::OverloadExpr *e) {
    for (auto *d : e->decls()) to(d);
    return true;
  }
  bool VisitConceptSpecializationExpr(clang::ConceptSpecializationExpr *e) {
    to(e->getNamedConcept());
    return true;
  }
  bool VisitTypeLoc(clang::TypeLoc tl) {
    type(tl.getType());
    return true;
  }
  bool VisitValueDecl(clang::ValueDecl *d) {
    type(d->getType());
    return true;
  }
  // A partial specialisation that an instantiation came from is kept whoever needed it: the need
  // is often in no type that survives (a signature's substitution, `tuple_element<0, ...>` during
  // deduction), so it is not an edge anyone's code shows.
  bool VisitClassTemplateSpecializationDecl(clang::ClassTemplateSpecializationDecl *d) {
    to(d);  // a specialisation reaches what it was made from
    if (d->getSpecializationKind() == clang::TSK_ExplicitSpecialization) return true;
    auto from = d->getSpecializedTemplateOrPartial();
    if (auto *p = from.dyn_cast<clang::ClassTemplatePartialSpecializationDecl *>()) {
      int saved = from_;
      from_ = kFromRoot;
      add(p);
      from_ = saved;
    }
    return true;
  }
  bool VisitCXXRecordDecl(clang::CXXRecordDecl *d) {
    if (d->hasDefinition())
      for (auto &b : d->bases()) type(b.getType());
    return true;
  }
  // A using-declaration is never offered: what it names must stay.
  bool VisitUsingDecl(clang::UsingDecl *d) {
    for (auto *sh : d->shadows()) to(sh->getTargetDecl());
    return true;
  }
  // A specialisation, explicit or partial, cannot stand without its primary template.
  bool VisitVarTemplateSpecializationDecl(clang::VarTemplateSpecializationDecl *d) {
    to(d->getSpecializedTemplate());
    return true;
  }
  bool VisitFunctionDecl(clang::FunctionDecl *d) {
    to(d->getTemplateInstantiationPattern());
    to(d->getPrimaryTemplate());
    return true;
  }

  std::vector<std::pair<int, int>> edges;

 private:
  // Every declaration a type names, through its sugar (an alias, `tuple_element<...>::type`), its
  // template arguments, pointees, elements, and a function type's parts: an instantiated
  // signature names the specialisation whose member typedef gave it.
  void type(clang::QualType t0) {
    std::vector<clang::QualType> work{t0};
    while (!work.empty()) {
      clang::QualType t = work.back();
      work.pop_back();
      if (t.isNull() || !seen_types_.insert({from_, t.getTypePtr()}).second) continue;
      const clang::Type *ty = t.getTypePtr();
      if (auto *td = llvm::dyn_cast<clang::TypedefType>(ty)) to(td->getDecl());
      if (auto *tt = llvm::dyn_cast<clang::TagType>(ty)) to(tt->getDecl());
      if (auto *ts = llvm::dyn_cast<clang::TemplateSpecializationType>(ty)) {
        to(ts->getTemplateName().getAsTemplateDecl());
        for (auto &a : ts->template_arguments())
          if (a.getKind() == clang::TemplateArgument::Type) work.push_back(a.getAsType());
      }
      if (auto *fp = llvm::dyn_cast<clang::FunctionProtoType>(ty)) {
        work.push_back(fp->getReturnType());
        for (auto p : fp->param_types()) work.push_back(p);
      }
      if (auto *mp = llvm::dyn_cast<clang::MemberPointerType>(ty))
        to(mp->getMostRecentCXXRecordDecl());
      if (!ty->getPointeeType().isNull()) work.push_back(ty->getPointeeType());
      if (auto *at = llvm::dyn_cast<clang::ArrayType>(ty)) work.push_back(at->getElementType());
      clang::QualType next = t.getSingleStepDesugaredType(ctx_);
      if (next != t) work.push_back(next);
    }
  }

  void to(const clang::Decl *d) {
    if (!d || !seen_.insert({from_, d}).second) return;
    if (auto *us = llvm::dyn_cast<clang::UsingShadowDecl>(d)) to(us->getTargetDecl());
    if (auto *ec = llvm::dyn_cast<clang::EnumConstantDecl>(d))
      to(llvm::dyn_cast<clang::EnumDecl>(ec->getDeclContext()));
    if (auto *fd = llvm::dyn_cast<clang::FunctionDecl>(d)) {
      for (auto *r : fd->redecls()) add(r);
      if (auto *p = fd->getTemplateInstantiationPattern())
        for (auto *r : p->redecls()) add(r);
      if (auto *t = fd->getPrimaryTemplate()) to(t);
      if (auto *m = fd->getInstantiatedFromMemberFunction()) to(m);
      if (auto *md = llvm::dyn_cast<clang::CXXMethodDecl>(fd)) to(md->getParent());
      return;
    }
    if (auto *s = llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(d)) {
      add(s);
      to(s->getSpecializedTemplate());
      auto from = s->getSpecializedTemplateOrPartial();
      if (auto *p = from.dyn_cast<clang::ClassTemplatePartialSpecializationDecl *>()) add(p);
      return;
    }
    if (auto *rd = llvm::dyn_cast<clang::CXXRecordDecl>(d)) {
      for (auto *r : rd->redecls()) add(r);
      if (auto *t = rd->getDescribedClassTemplate()) to(t);
      if (auto *m = rd->getInstantiatedFromMemberClass()) to(m);
      members(rd);
      if (auto *p = rd->getTemplateInstantiationPattern()) members(p);
      return;
    }
    if (auto *td = llvm::dyn_cast<clang::RedeclarableTemplateDecl>(d)) {
      for (auto *r : td->redecls()) add(r);
      return;
    }
    if (auto *vd = llvm::dyn_cast<clang::VarDecl>(d)) {
      for (auto *r : vd->redecls()) add(r);
      if (auto *m = vd->getInstantiatedFromStaticDataMember()) to(m);
      if (auto *vs = llvm::dyn_cast<clang::VarTemplateSpecializationDecl>(vd))
        to(vs->getSpecializedTemplate());
      return;
    }
    add(d);
  }

  // A class reached reaches the definitions of its members made outside it (an out-of-line
  // member function, a static data member, a nested class): a destructor or a virtual function
  // runs without a reference anyone could see, and a member left declared but undefined would
  // fail at link time, after a whole build.
  void members(const clang::CXXRecordDecl *rd) {
    for (auto *m : rd->decls()) {
      const clang::Decl *inner = m;
      if (auto *ft = llvm::dyn_cast<clang::FunctionTemplateDecl>(m)) inner = ft->getTemplatedDecl();
      if (auto *fd = llvm::dyn_cast<clang::FunctionDecl>(inner))
        for (auto *r : fd->redecls()) add(r);
      else if (auto *vd = llvm::dyn_cast<clang::VarDecl>(inner))
        for (auto *r : vd->redecls()) add(r);
      else if (auto *nested = llvm::dyn_cast<clang::CXXRecordDecl>(inner))
        for (auto *r : nested->redecls()) add(r);
    }
  }

  void add(const clang::Decl *d) {
    if (!d) return;
    int u = units_.at(d->getLocation());
    if (u < 0) return;
    edges.push_back({from_, u});
  }

  clang::ASTContext &ctx_;
  const Units &units_;
  int from_ = kFromRoot;
  std::set<std::pair<int, const clang::Decl *>> seen_;
  std::set<std::pair<int, const clang::Type *>> seen_types_;
};

}  // namespace

std::vector<PassSite> removeUnreachableSites(const ParsedSource &src) {
  // One graph over both parsed sides, its units keyed by their text range (the same on both):
  // code one side does not compile (under __CUDA_ARCH__) still names what the other side must
  // keep, since a unit kept for one side is kept for both.
  using Key = std::pair<unsigned, unsigned>;
  std::map<Key, std::string> names;
  std::set<Key> roots;
  std::map<Key, std::set<Key>> out;
  std::set<Key> from_root;
  forEachSide(src, [&](clang::ASTContext &ctx, bool) {
    Units units(ctx, src);
    auto &all = units.all();
    auto key = [&](int u) { return Key{all[(size_t)u].range.begin, all[(size_t)u].range.end}; };
    for (size_t i = 0; i < all.size(); ++i) {
      names.try_emplace(key((int)i), all[i].what);
      if (all[i].root) roots.insert(key((int)i));
    }
    Edges e(ctx, units);
    e.TraverseDecl(ctx.getTranslationUnitDecl());
    for (auto &[from, to] : e.edges)
      if (from == Edges::kFromRoot)
        from_root.insert(key(to));
      else if (from >= 0)
        out[key(from)].insert(key(to));
  });
  std::set<Key> reached;
  std::deque<Key> todo;
  auto reach = [&](const Key &k) {
    if (reached.insert(k).second) todo.push_back(k);
  };
  for (auto &k : roots) reach(k);
  for (auto &k : from_root) reach(k);
  while (!todo.empty()) {
    Key k = todo.front();
    todo.pop_front();
    if (auto it = out.find(k); it != out.end())
      for (auto &v : it->second) reach(v);
  }
  std::vector<PassSite> sites;
  for (auto &[k, what] : names)
    if (!reached.count(k))
      sites.push_back(replaceSite("remove-unreachable", src, Range{k.first, k.second}, "",
                                  "remove " + what + ", which main does not reach"));
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
