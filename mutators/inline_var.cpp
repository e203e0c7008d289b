// inline-var: a local variable that is only ever read is replaced by its initializer at every
// use, and its declaration goes (`int s = 0; ... &full[s]` -> `&full[0]`; `uint64_t *bar =
// &full[0]; ... smem_u32(bar)` -> `smem_u32((&full[0]))`). A local of a scalar type (an integer,
// a float, a pointer), declared alone, whose every use is a read (no assignment, ++, &v or
// reference binding), with an initializer that reads only what cannot change under it: constants,
// arrays, `threadIdx` and the like, and other locals that are only ever read. An initializer with
// side effects (a call, `__shfl_sync`) is moved only into a variable's single use. A long
// initializer (more than 16 tokens) is copied only into a single use, so that the program gets
// shorter, not denser. Where the types differ (an `int` from `threadIdx.x / 128`) the copy is
// cast, unless both are integers of one width.
// One site per variable (level 1), after one with all of them at once (level 0; a variable whose
// initializer names another one gets that one's initializer in place).
#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/SourceManager.h>

#include <algorithm>
#include <map>
#include <set>

namespace wsr {
namespace {

struct Use {
  const clang::DeclRefExpr *e;
  Range r;
};

struct Scan : clang::RecursiveASTVisitor<Scan> {
  clang::ASTContext &ctx;
  explicit Scan(clang::ASTContext &c) : ctx(c) {}
  std::map<const clang::VarDecl *, const clang::DeclStmt *> stmtOf;
  std::vector<const clang::VarDecl *> locals;
  std::map<const clang::VarDecl *, std::vector<const clang::DeclRefExpr *>> uses;
  std::set<const clang::Expr *> reads;

  bool VisitDeclStmt(clang::DeclStmt *ds) {
    if (ds->isSingleDecl())
      if (auto *v = llvm::dyn_cast<clang::VarDecl>(ds->getSingleDecl()); v && v->isLocalVarDecl()) {
        stmtOf[v] = ds;
        locals.push_back(v);
      }
    return true;
  }
  bool VisitImplicitCastExpr(clang::ImplicitCastExpr *c) {
    if (c->getCastKind() == clang::CK_LValueToRValue ||
        c->getCastKind() == clang::CK_ArrayToPointerDecay)
      reads.insert(c->getSubExpr()->IgnoreParens());
    return true;
  }
  bool VisitMemberExpr(clang::MemberExpr *m) {  // `threadIdx.x`: a read of a const object's member
    if (!m->isArrow() && m->getBase()->getType().isConstQualified())
      reads.insert(m->getBase()->IgnoreParens());
    return true;
  }
  bool VisitDeclRefExpr(clang::DeclRefExpr *e) {
    if (auto *v = llvm::dyn_cast<clang::VarDecl>(e->getDecl())) uses[v].push_back(e);
    return true;
  }
  bool onlyRead(const clang::VarDecl *v) const {
    auto it = uses.find(v);
    if (it == uses.end()) return true;
    for (auto *e : it->second)
      if (!reads.count(e)) return false;
    return true;
  }
};

// The names an initializer reads (each must be stable under the copy).
struct InitRefs : clang::RecursiveASTVisitor<InitRefs> {
  std::vector<const clang::DeclRefExpr *> refs;
  bool VisitDeclRefExpr(clang::DeclRefExpr *e) {
    refs.push_back(e);
    return true;
  }
};

// Side effects Clang's HasSideEffects sees, less the reads of CUDA's builtin variables
// (`threadIdx.x` is a call of __fetch_builtin_x behind a property).
struct Effects : clang::RecursiveASTVisitor<Effects> {
  bool any = false;
  bool VisitCallExpr(clang::CallExpr *c) {
    auto *fd = c->getDirectCallee();
    if (!fd || !llvm::StringRef(fd->getNameAsString()).starts_with("__fetch_builtin_")) any = true;
    return true;
  }
  bool VisitBinaryOperator(clang::BinaryOperator *b) {
    if (b->isAssignmentOp()) any = true;
    return true;
  }
  bool VisitUnaryOperator(clang::UnaryOperator *u) {
    if (u->isIncrementDecrementOp()) any = true;
    return true;
  }
  bool VisitCXXConstructExpr(clang::CXXConstructExpr *) {
    any = true;
    return true;
  }
};
bool sideEffects(const clang::Expr *e) {
  Effects f;
  f.TraverseStmt(const_cast<clang::Expr *>(e));
  return f.any;
}

}  // namespace

std::vector<PassSite> inlineVarSites(const ParsedSource &src) {
  std::vector<PassSite> sites;
  forEachSide(src, [&](clang::ASTContext &ctx, bool) {
    Scan scan(ctx);
    forEachMainFileDecl(ctx, [&](clang::Decl *d) { scan.TraverseDecl(d); });
    struct Cand {
      const clang::VarDecl *v;
      Range decl, init;
      std::vector<Range> uses;
      std::vector<std::pair<Range, const clang::VarDecl *>>
          inner;  // candidate locals the init reads
      bool cast = false;
      std::string type;
    };
    std::map<const clang::VarDecl *, Cand> cands;
    auto stable = [&](const clang::VarDecl *w) {
      if (w->getType().isConstQualified() || w->getType()->isArrayType()) return true;
      if ((w->isLocalVarDecl() && !w->isStaticLocal()) || llvm::isa<clang::ParmVarDecl>(w))
        return scan.onlyRead(w) && !w->getType().isVolatileQualified();
      return false;
    };
    for (auto *v : scan.locals) {
      if (v->isStaticLocal() || !v->getInit() || v->getType().isVolatileQualified()) continue;
      clang::QualType t = v->getType();
      if (!(t->isIntegerType() || t->isRealFloatingType() || t->isPointerType()) ||
          t->isReferenceType())
        continue;
      if (!scan.onlyRead(v)) continue;
      auto it = scan.uses.find(v);
      if (it == scan.uses.end() || it->second.empty()) continue;  // unused: remove-decl's
      const clang::Expr *init = v->getInit()->IgnoreImplicit();
      if (llvm::isa<clang::CXXConstructExpr>(init)) continue;
      if (llvm::isa<clang::InitListExpr>(init)) {  // `int s{0}`: its one element
        auto *il = llvm::cast<clang::InitListExpr>(init);
        if (il->getNumInits() != 1) continue;
        init = il->getInit(0)->IgnoreImplicit();
      }
      auto ds = scan.stmtOf.find(v);
      auto dr = mainFileRange(ctx, ds->second->getSourceRange());
      auto ir = mainFileRange(ctx, init->getSourceRange());
      if (!dr || !ir) continue;
      InitRefs refs;
      refs.TraverseStmt(const_cast<clang::Expr *>(init));
      bool ok = true;
      Cand c;
      for (auto *r : refs.refs) {
        if (auto *w = llvm::dyn_cast<clang::VarDecl>(r->getDecl())) {
          if (!stable(w)) ok = false;
          if (w->isLocalVarDecl()) {
            auto rr = mainFileRange(ctx, r->getSourceRange());
            if (!rr)
              ok = false;
            else
              c.inner.push_back({*rr, w});
          }
        }
      }
      if (!ok) continue;
      std::string initText = src.text.substr(ir->begin, ir->size());
      size_t n = it->second.size();
      if (n > 1 && (sideEffects(init) || countTokens(initText) > 16)) continue;
      for (auto *e : it->second) {
        auto ur = mainFileRange(ctx, e->getSourceRange());
        if (!ur) {
          ok = false;
          break;
        }
        c.uses.push_back(*ur);
      }
      if (!ok) continue;
      clang::QualType it2 = init->getType();
      if (!ctx.hasSameUnqualifiedType(t, it2)) {
        bool sameInt = t->isIntegerType() && it2->isIntegerType() &&
                       ctx.getTypeSize(t) == ctx.getTypeSize(it2);
        if (!sameInt) {
          c.cast = true;
          std::string s;
          llvm::raw_string_ostream os(s);
          t.getUnqualifiedType().print(os, ctx.getPrintingPolicy());
          c.type = os.str();
        }
      }
      c.v = v;
      c.decl = widenToLines(src.text, *dr);
      c.init = *ir;
      cands.emplace(v, std::move(c));
    }
    if (cands.empty()) return;
    auto simple = [](const std::string &t) {
      for (char ch : t)
        if (!(std::isalnum((unsigned char)ch) || ch == '_' || ch == '.')) return false;
      return true;
    };
    // The text a use gets: the initializer, with the chosen locals it reads replaced in turn.
    std::function<std::optional<std::string>(const clang::VarDecl *,
                                             const std::set<const clang::VarDecl *> &, int)>
        textOf = [&](const clang::VarDecl *v, const std::set<const clang::VarDecl *> &chosen,
                     int depth) -> std::optional<std::string> {
      if (depth > 16) return std::nullopt;
      const Cand &c = cands.at(v);
      std::vector<Edit> edits;
      for (auto &[r, w] : c.inner) {
        if (!chosen.count(w)) continue;
        auto t = textOf(w, chosen, depth + 1);
        if (!t) return std::nullopt;
        edits.push_back(Edit{r.begin, r.size(), *t});
      }
      std::string out = rewritten(src.text, c.init, std::move(edits));
      if (c.cast) return "((" + c.type + ")(" + out + "))";
      return simple(out) ? out : "(" + out + ")";
    };
    auto siteOf = [&](const std::set<const clang::VarDecl *> &chosen, std::string note, int level) {
      PassSite s;
      s.pass = "inline-var";
      s.level = level;
      s.note = std::move(note);
      auto insideChosenDecl = [&](Range r) {
        for (auto *w : chosen) {
          const Cand &c = cands.at(w);
          if (r.begin >= c.decl.begin && r.end <= c.decl.end) return true;
        }
        return false;
      };
      for (auto *v : chosen) {
        const Cand &c = cands.at(v);
        s.edits.push_back(Edit{c.decl.begin, c.decl.size(), ""});
        auto t = textOf(v, chosen, 0);
        if (!t) return;
        for (auto &u : c.uses)
          if (!insideChosenDecl(u)) s.edits.push_back(Edit{u.begin, u.size(), *t});
      }
      if (sealSite(s, src.text)) sites.push_back(std::move(s));
    };
    std::set<const clang::VarDecl *> all;
    for (auto &[v, c] : cands) all.insert(v);
    if (all.size() > 1)
      siteOf(all, "inline the " + std::to_string(all.size()) + " read-only locals into their uses",
             0);
    for (auto &[v, c] : cands)
      siteOf({v},
             "inline " + v->getNameAsString() + " into its " + std::to_string(c.uses.size()) +
                 " use(s)",
             all.size() > 1);
  });
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
