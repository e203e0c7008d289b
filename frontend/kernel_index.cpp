// The injectors' view of a program, built once from the Clang AST: every use of a
// synchronisation primitive with its operands resolved to source expressions, its enclosing
// guards and loops, the kernels' top-level role branches, global subscripts and knobs.
//
// A primitive is recognised by the PTX it issues, not by a name: a small non-kernel function
// whose body is one asm statement (or one call to such a function) is a *wrapper* — the
// reference kernels' mbar_init, tma_load_2d, wgmma_wait<N>..., or a user's own — and each
// call to it is a use; PTX written straight into a kernel is a use where it stands. The asm
// inside a wrapper is the wrapper's definition and never a site. `__syncthreads()`, the CUDA
// runtime's programmatic-dependent-launch calls and the cluster barrier's intrinsics are known
// by name.
#include "kernel_index.h"

#include "edit.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/Stmt.h>
#include <clang/Frontend/ASTUnit.h>
#include <clang/Lex/Lexer.h>
#include <clang/Lex/MacroInfo.h>
#include <clang/Lex/Preprocessor.h>

#include <functional>
#include <map>
#include <regex>

namespace wsr {

std::vector<const Operand *> Occurrence::coords() const {
  std::vector<const Operand *> out;
  for (auto &o : ops)
    if (o.in_braces) out.push_back(&o);
  return out;
}

bool Occurrence::underIf() const {
  for (auto &c : ctl)
    if (c.kind == Ctl::If) return true;
  return false;
}

std::vector<const Occurrence *> KernelIndex::find(std::string_view prim) const {
  std::vector<const Occurrence *> out;
  for (auto &o : occs)
    if (o.prim == prim) out.push_back(&o);
  return out;
}

std::vector<const Occurrence *> KernelIndex::inKernels(std::string_view prim) const {
  std::vector<const Occurrence *> out;
  for (auto &o : occs)
    if (o.prim == prim && o.in_kernel) out.push_back(&o);
  return out;
}

namespace {

std::string slice(const std::string &text, Range r) {
  if (r.begin > text.size() || r.end > text.size() || r.end < r.begin) return {};
  return text.substr(r.begin, r.size());
}

struct Match {
  std::string prim;
  size_t pos = std::string::npos;  // where the instruction starts in the asm string
  std::string opcode;              // the instruction's opcode and qualifiers, as written
};

// The opcode (with its qualifiers) of the instruction starting at `at`.
std::string opcodeAt(std::string_view s, size_t at) {
  size_t end = s.find_first_of(" \t\n;", at);
  return std::string(s.substr(at, end == std::string_view::npos ? s.npos : end - at));
}

Match matchPtx(std::string_view s) {
  // A whole cluster barrier in one asm statement: its arrive, then its wait.
  if (size_t a = s.find("barrier.cluster.arrive"), w = s.find("barrier.cluster.wait");
      a != std::string_view::npos && w != std::string_view::npos && a < w)
    return {"barrier.cluster", a, opcodeAt(s, a)};
  struct P {
    const char *needle, *prim;
  };
  static const P table[] = {
      {"mbarrier.init", "mbarrier.init"},
      {"mbarrier.arrive.expect_tx", "mbarrier.arrive.expect_tx"},
      {"mbarrier.arrive", "mbarrier.arrive"},
      {"mbarrier.try_wait", "mbarrier.wait"},
      {"mbarrier.test_wait", "mbarrier.wait"},
      {"fence.mbarrier_init", "fence.mbarrier_init"},
      {"fence.proxy.async", "fence.proxy.async"},
      {"cp.async.bulk.commit_group", "bulk.commit_group"},
      {"cp.async.bulk.wait_group.read", "bulk.wait_group.read"},
      {"cp.async.bulk.wait_group", "bulk.wait_group"},
      {"cp.async.bulk.tensor", "tma"},
      {"wgmma.fence", "wgmma.fence"},
      {"wgmma.commit_group", "wgmma.commit_group"},
      {"wgmma.wait_group", "wgmma.wait_group"},
      {"wgmma.mma_async", "wgmma.mma"},
      {"tcgen05.alloc", "tcgen05.alloc"},
      {"tcgen05.dealloc", "tcgen05.dealloc"},
      {"tcgen05.relinquish_alloc_permit", "tcgen05.relinquish"},
      {"tcgen05.mma", "tcgen05.mma"},
      {"tcgen05.commit", "tcgen05.commit"},
      {"tcgen05.fence::after_thread_sync", "tcgen05.fence.after"},
      {"tcgen05.fence::before_thread_sync", "tcgen05.fence.before"},
      {"tcgen05.wait::ld", "tcgen05.wait.ld"},
      {"tcgen05.ld", "tcgen05.ld"},
      {"elect.sync", "elect.sync"},
      {"setmaxnreg", "setmaxnreg"},
      {"barrier.sync", "bar"},
      {"bar.sync", "bar"},
      {"barrier.cluster.arrive", "barrier.cluster.arrive"},
      {"barrier.cluster.wait", "barrier.cluster.wait"},
      {"griddepcontrol.wait", "griddepcontrol.wait"},
      {"griddepcontrol.launch_dependents", "griddepcontrol.launch_dependents"},
  };
  for (auto &p : table) {
    size_t at = s.find(p.needle);
    if (at == std::string_view::npos) continue;
    Match m{p.prim, at, opcodeAt(s, at)};
    if (m.prim == "tma") {
      size_t end = s.find(';', at);
      auto instr = s.substr(at, end == std::string_view::npos ? s.npos : end - at);
      m.prim = instr.find(".global.shared") != std::string_view::npos ? "tma.store" : "tma.load";
    }
    return m;
  }
  return {};
}

// "a, [b, {c, d}], e" -> top-level pieces.
std::vector<std::string> splitTop(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (!cur.empty()) out.push_back(cur);
  for (auto &p : out) {
    size_t b = p.find_first_not_of(" \t\n"), e = p.find_last_not_of(" \t\n");
    p = b == std::string::npos ? "" : p.substr(b, e - b + 1);
  }
  return out;
}

struct RawOp {
  std::string text;
  bool in_braces = false;
};

// The operands of the instruction starting at `pos`, flattened: "[%1, {%3, %4}]" gives
// %1, then %3 and %4 as coordinates.
std::vector<RawOp> ptxOperands(const std::string &s, size_t pos) {
  size_t end = s.find(';', pos);
  std::string instr = s.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
  size_t sp = instr.find_first_of(" \t");
  if (sp == std::string::npos) return {};
  std::vector<RawOp> out;
  std::function<void(const std::string &, bool)> add = [&](const std::string &p, bool braces) {
    if (p.empty()) return;
    if (p.front() == '[' && p.back() == ']') {
      for (auto &q : splitTop(std::string_view(p).substr(1, p.size() - 2))) add(q, braces);
    } else if (p.front() == '{' && p.back() == '}') {
      for (auto &q : splitTop(std::string_view(p).substr(1, p.size() - 2))) add(q, true);
    } else {
      out.push_back({p, braces});
    }
  };
  for (auto &p : splitTop(std::string_view(instr).substr(sp + 1))) add(p, false);
  return out;
}

int percentIndex(const std::string &t) {
  if (t.size() < 2 || t[0] != '%' || !isdigit((unsigned char)t[1])) return -1;
  return std::atoi(t.c_str() + 1);
}

// What an operand of a wrapper is at its call: the n-th call argument or template argument.
struct OpSpec {
  std::string ptx;
  bool in_braces = false;
  int param = -1;   // call argument index
  int tparam = -1;  // template argument index
};

struct Wrapper {
  std::string prim;
  std::vector<OpSpec> ops;
  std::string opcode;  // Occurrence::opcode
};

std::optional<Range> fileRange(const clang::ASTContext &ctx, clang::SourceRange r) {
  auto &sm = ctx.getSourceManager();
  if (r.isInvalid()) return std::nullopt;
  auto cr = clang::Lexer::makeFileCharRange(clang::CharSourceRange::getTokenRange(r), sm,
                                            ctx.getLangOpts());
  if (cr.isInvalid() || !sm.isInMainFile(cr.getBegin()) || !sm.isInMainFile(cr.getEnd()))
    return std::nullopt;
  Range out{sm.getFileOffset(cr.getBegin()), sm.getFileOffset(cr.getEnd())};
  if (out.end < out.begin) return std::nullopt;
  return out;
}

std::optional<Range> withSemi(const std::string &text, std::optional<Range> r) {
  if (!r) return r;
  unsigned i = r->end;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  if (i < text.size() && text[i] == ';') r->end = i + 1;
  return r;
}

std::optional<long long> evalInt(const clang::ASTContext &ctx, const clang::Expr *e) {
  if (!e || e->isValueDependent() || e->isTypeDependent()) return std::nullopt;
  clang::Expr::EvalResult res;
  if (!e->EvaluateAsInt(res, ctx)) return std::nullopt;
  return res.Val.getInt().getExtValue();
}

const clang::FunctionDecl *pattern(const clang::FunctionDecl *f) {
  if (!f) return nullptr;
  if (auto *p = f->getTemplateInstantiationPattern()) f = p;
  return f->getCanonicalDecl();
}

bool isKernel(const clang::FunctionDecl *f) { return f && f->hasAttr<clang::CUDAGlobalAttr>(); }

// ---- pass 1: find the wrappers ---------------------------------------------------------------
struct FnFacts {
  const clang::FunctionDecl *fn = nullptr;
  std::vector<const clang::GCCAsmStmt *> asms;
  std::vector<const clang::CallExpr *> calls;
  int stmts = 0;
};

struct FactsCollector : clang::RecursiveASTVisitor<FactsCollector> {
  clang::ASTContext &ctx;
  std::map<const clang::FunctionDecl *, FnFacts> facts;
  const clang::FunctionDecl *cur = nullptr;
  explicit FactsCollector(clang::ASTContext &c) : ctx(c) {}
  bool inMain(const clang::Decl *d) {
    auto &sm = ctx.getSourceManager();
    return sm.isInMainFile(sm.getExpansionLoc(d->getLocation()));
  }
  bool TraverseDecl(clang::Decl *d) {
    if (!d) return true;
    if (!llvm::isa<clang::TranslationUnitDecl>(d) && !inMain(d)) return true;
    auto *f = llvm::dyn_cast<clang::FunctionDecl>(d);
    if (f && f->doesThisDeclarationHaveABody()) {
      auto *saved = cur;
      cur = f->getCanonicalDecl();
      facts[cur].fn = f;
      bool ok = clang::RecursiveASTVisitor<FactsCollector>::TraverseDecl(d);
      cur = saved;
      return ok;
    }
    return clang::RecursiveASTVisitor<FactsCollector>::TraverseDecl(d);
  }
  bool VisitStmt(clang::Stmt *s) {
    if (cur && !llvm::isa<clang::Expr>(s)) facts[cur].stmts++;
    return true;
  }
  bool VisitGCCAsmStmt(clang::GCCAsmStmt *a) {
    if (cur) facts[cur].asms.push_back(a);
    return true;
  }
  bool VisitCallExpr(clang::CallExpr *c) {
    if (cur) facts[cur].calls.push_back(c);
    return true;
  }
};

int paramIndexOf(const clang::Expr *e, int *tparam) {
  *tparam = -1;
  if (!e) return -1;
  e = e->IgnoreParenImpCasts();
  if (auto *sub = llvm::dyn_cast<clang::SubstNonTypeTemplateParmExpr>(e))
    e = sub->getReplacement()->IgnoreParenImpCasts();
  auto *dr = llvm::dyn_cast<clang::DeclRefExpr>(e);
  if (!dr) return -1;
  if (auto *p = llvm::dyn_cast<clang::ParmVarDecl>(dr->getDecl()))
    return (int)p->getFunctionScopeIndex();
  if (auto *t = llvm::dyn_cast<clang::NonTypeTemplateParmDecl>(dr->getDecl()))
    *tparam = (int)t->getIndex();
  return -1;
}

const clang::Expr *asmOperand(const clang::GCCAsmStmt *a, int k) {
  if (k < 0) return nullptr;
  if ((unsigned)k < a->getNumOutputs()) return a->getOutputExpr(k);
  k -= a->getNumOutputs();
  if ((unsigned)k < a->getNumInputs()) return a->getInputExpr(k);
  return nullptr;
}

const clang::FunctionDecl *calleeOf(const clang::CallExpr *c) {
  return pattern(c->getDirectCallee());
}

std::string calleeName(const clang::CallExpr *c) {
  if (auto *f = c->getDirectCallee()) return f->getNameAsString();
  if (auto *u = llvm::dyn_cast<clang::UnresolvedLookupExpr>(c->getCallee()->IgnoreParenImpCasts()))
    return u->getName().getAsString();
  return {};
}

std::map<const clang::FunctionDecl *, Wrapper> findWrappers(
    std::map<const clang::FunctionDecl *, FnFacts> &facts) {
  std::map<const clang::FunctionDecl *, Wrapper> w;
  for (auto &[fn, f] : facts) {
    if (isKernel(f.fn) || f.stmts > 10) continue;
    const clang::GCCAsmStmt *hit = nullptr;
    Match m;
    int n = 0;
    std::string second;  // the prim of a second asm statement
    for (auto *a : f.asms) {
      auto mm = matchPtx(a->getAsmString());
      if (mm.prim.empty()) continue;
      if (++n == 1) hit = a, m = mm;
      if (n == 2) second = mm.prim;
    }
    // A cluster barrier written as two asm statements (arrive, then wait) is one primitive.
    if (n == 2 && m.prim == "barrier.cluster.arrive" && second == "barrier.cluster.wait") {
      w[fn] = Wrapper{"barrier.cluster", {}, m.opcode};
      continue;
    }
    if (n != 1) continue;
    Wrapper wr{m.prim, {}, m.opcode};
    for (auto &op : ptxOperands(hit->getAsmString(), m.pos)) {
      OpSpec s{op.text, op.in_braces};
      s.param = paramIndexOf(asmOperand(hit, percentIndex(op.text)), &s.tparam);
      wr.ops.push_back(s);
    }
    w[fn] = wr;
  }
  // Wrappers of wrappers (wgmma_bf16 -> wgmma_m64n128k16): small, no PTX of their own, one call.
  for (int round = 0; round < 3; ++round) {
    for (auto &[fn, f] : facts) {
      if (w.count(fn) || isKernel(f.fn) || f.stmts > 6) continue;
      bool own = false;
      for (auto *a : f.asms) own |= !matchPtx(a->getAsmString()).prim.empty();
      if (own) continue;
      const clang::CallExpr *only = nullptr;
      int n = 0;
      for (auto *c : f.calls)
        if (auto *cf = calleeOf(c); cf && w.count(cf)) ++n, only = c;
      if (n != 1) continue;
      Wrapper inner = w[calleeOf(only)], wr{inner.prim, {}, inner.opcode};
      for (auto s : inner.ops) {
        int tp = -1;
        int p = s.param >= 0 && (unsigned)s.param < only->getNumArgs()
                    ? paramIndexOf(only->getArg(s.param), &tp)
                    : -1;
        s.param = p;
        s.tparam = tp;
        wr.ops.push_back(s);
      }
      w[fn] = wr;
    }
  }
  return w;
}

// ---- pass 2: the uses ------------------------------------------------------------------------
struct UseCollector : clang::RecursiveASTVisitor<UseCollector> {
  using Base = clang::RecursiveASTVisitor<UseCollector>;
  clang::ASTContext &ctx;
  const std::string &text;
  const std::map<const clang::FunctionDecl *, Wrapper> &wrappers;
  std::map<std::string, const Wrapper *> by_name;
  KernelIndex &idx;
  const clang::FunctionDecl *cur = nullptr;
  std::vector<const clang::Stmt *> stack;
  std::map<const clang::Stmt *, int> block_ids;
  std::vector<std::string> static_asserts;

  UseCollector(clang::ASTContext &c, const std::string &t,
               const std::map<const clang::FunctionDecl *, Wrapper> &w, KernelIndex &i)
      : ctx(c), text(t), wrappers(w), idx(i) {
    for (auto &[fn, wr] : w) by_name[fn->getNameAsString()] = &wr;
  }
  bool inMain(const clang::Decl *d) {
    auto &sm = ctx.getSourceManager();
    return sm.isInMainFile(sm.getExpansionLoc(d->getLocation()));
  }
  bool TraverseDecl(clang::Decl *d) {
    if (!d) return true;
    if (!llvm::isa<clang::TranslationUnitDecl>(d) && !inMain(d)) return true;
    if (auto *sa = llvm::dyn_cast<clang::StaticAssertDecl>(d)) {
      if (auto r = fileRange(ctx, sa->getSourceRange())) static_asserts.push_back(slice(text, *r));
      return true;
    }
    auto *f = llvm::dyn_cast<clang::FunctionDecl>(d);
    if (f && f->doesThisDeclarationHaveABody()) {
      auto *saved = cur;
      cur = f->getCanonicalDecl();
      if (isKernel(f)) kernel(f);
      bool ok = Base::TraverseDecl(d);
      cur = saved;
      return ok;
    }
    return Base::TraverseDecl(d);
  }
  // Fully recursive (no data-recursion queue), so `stack` is the real ancestor chain.
  bool TraverseStmt(clang::Stmt *s, DataRecursionQueue * = nullptr) {
    if (!s) return true;
    stack.push_back(s);
    bool ok = Base::TraverseStmt(s, nullptr);
    stack.pop_back();
    return ok;
  }
  bool inWrapper() const { return cur && wrappers.count(cur); }

  void kernel(const clang::FunctionDecl *f) {
    KernelInfo k;
    k.name = f->getNameAsString();
    auto *body = llvm::dyn_cast_or_null<clang::CompoundStmt>(f->getBody());
    if (!body) return;
    if (auto r = fileRange(ctx, body->getSourceRange())) k.body = *r;
    for (auto *s : body->body()) {
      auto *ifs = llvm::dyn_cast<clang::IfStmt>(s);
      if (!ifs) continue;
      TopIf t;
      auto w = fileRange(ctx, ifs->getSourceRange());
      auto c = fileRange(ctx, ifs->getCond()->getSourceRange());
      auto th = fileRange(ctx, ifs->getThen()->getSourceRange());
      if (!w || !c || !th) continue;
      t.whole = *withSemi(text, w);
      t.cond_text = slice(text, *c);
      t.then_arm = *th;
      t.then_compound = llvm::isa<clang::CompoundStmt>(ifs->getThen());
      if (auto *e = ifs->getElse()) {
        if (auto er = fileRange(ctx, e->getSourceRange())) {
          t.else_arm = *er;
          t.has_else = true;
          t.else_compound = llvm::isa<clang::CompoundStmt>(e);
        }
      }
      k.ifs.push_back(t);
    }
    idx.kernels.push_back(k);
  }

  // Fills the anchor, block and guards of a use at the top of the stack.
  void place(Occurrence &o) {
    const clang::Stmt *body = nullptr;
    if (cur) {
      if (auto *def = cur->getDefinition()) body = def->getBody();
    }
    for (int i = (int)stack.size() - 1; i > 0; --i) {
      auto *parent = stack[i - 1];
      auto *child = stack[i];
      if (llvm::isa<clang::CompoundStmt>(parent) && o.block < 0) {
        auto r = withSemi(text, fileRange(ctx, child->getSourceRange()));
        if (r) o.anchor = *r;
        o.block = block_ids.try_emplace(parent, (int)block_ids.size()).first->second;
        o.anchor_top_level = parent == body;
      }
      Ctl c;
      bool is_ctl = false;
      if (auto *ifs = llvm::dyn_cast<clang::IfStmt>(parent)) {
        if (child == ifs->getThen() || child == ifs->getElse()) {
          is_ctl = true;
          c.kind = Ctl::If;
          c.in_else = child == ifs->getElse();
          if (auto r = fileRange(ctx, ifs->getCond()->getSourceRange()))
            c.cond_text = slice(text, *r);
        }
      } else if (auto *fs = llvm::dyn_cast<clang::ForStmt>(parent)) {
        if (child == fs->getBody()) {
          is_ctl = true;
          c.kind = Ctl::Loop;
          if (auto *cond = fs->getCond()) {
            if (auto r = fileRange(ctx, cond->getSourceRange())) c.cond_text = slice(text, *r);
            if (auto *b = llvm::dyn_cast<clang::BinaryOperator>(cond->IgnoreParenImpCasts()))
              if (b->getOpcode() == clang::BO_LT || b->getOpcode() == clang::BO_LE ||
                  b->getOpcode() == clang::BO_NE)
                c.bound = fileRange(ctx, b->getRHS()->getSourceRange());
          }
          std::function<void(const clang::Expr *)> inc = [&](const clang::Expr *e) {
            if (!e) return;
            e = e->IgnoreParenImpCasts();
            if (auto *b = llvm::dyn_cast<clang::BinaryOperator>(e)) {
              if (b->getOpcode() == clang::BO_Comma) return inc(b->getLHS()), inc(b->getRHS());
              if (b->getOpcode() == clang::BO_AddAssign) {
                auto r = fileRange(ctx, b->getRHS()->getSourceRange());
                if (r && slice(text, *r).find("gridDim") != std::string::npos) c.grid_advance = r;
              }
            }
          };
          inc(fs->getInc());
        }
      } else if (auto *ws = llvm::dyn_cast<clang::WhileStmt>(parent)) {
        if (child == ws->getBody()) {
          is_ctl = true;
          c.kind = Ctl::Loop;
          if (auto r = fileRange(ctx, ws->getCond()->getSourceRange()))
            c.cond_text = slice(text, *r);
        }
      } else if (auto *ds = llvm::dyn_cast<clang::DoStmt>(parent)) {
        if (child == ds->getBody()) is_ctl = true, c.kind = Ctl::Loop;
      }
      if (is_ctl) {
        if (auto r = withSemi(text, fileRange(ctx, parent->getSourceRange()))) c.whole = *r;
        if (auto r = fileRange(ctx, child->getSourceRange())) c.arm = *r;
        c.arm_is_compound = llvm::isa<clang::CompoundStmt>(child);
        c.top_level = i >= 2 && stack[i - 2] == body;
        o.ctl.push_back(c);
      }
    }
    o.function = cur ? cur->getNameAsString() : "";
    o.in_kernel = cur && isKernel(cur->getDefinition() ? cur->getDefinition() : cur);
    o.line = lineOf(text, o.expr.begin);
  }

  bool VisitCallExpr(clang::CallExpr *c) {
    if (!cur || inWrapper()) return true;
    const Wrapper *w = nullptr;
    if (auto *f = calleeOf(c); f && wrappers.count(f)) w = &wrappers.at(f);
    std::string name = calleeName(c);
    if (!w && by_name.count(name)) w = by_name.at(name);
    Occurrence o;
    if (w) {
      o.prim = w->prim;
      o.via = name;
      o.opcode = w->opcode;
    } else if (std::string p = knownByName(name); !p.empty()) {
      o.prim = p;
      o.via = name;
    } else {
      return true;
    }
    auto r = fileRange(ctx, c->getSourceRange());
    if (!r) return true;
    o.expr = *r;
    // Explicit template arguments (wgmma_wait<1>()).
    std::vector<const clang::TemplateArgumentLoc *> targs;
    if (auto *dr = llvm::dyn_cast<clang::DeclRefExpr>(c->getCallee()->IgnoreParenImpCasts())) {
      if (dr->hasExplicitTemplateArgs() && dr->getNumTemplateArgs() > 0) {
        auto lr = fileRange(ctx, clang::SourceRange(dr->getLAngleLoc(), dr->getRAngleLoc()));
        if (lr && lr->size() >= 2) o.targs = Range{lr->begin + 1, lr->end - 1};
        for (unsigned i = 0; i < dr->getNumTemplateArgs(); ++i)
          targs.push_back(&dr->getTemplateArgs()[i]);
        auto &ta = dr->getTemplateArgs()[0].getArgument();
        if (ta.getKind() == clang::TemplateArgument::Expression)
          o.targ_value = evalInt(ctx, ta.getAsExpr());
      }
    }
    if (w) {
      for (auto &s : w->ops) {
        Operand op{s.ptx, s.in_braces, std::nullopt, std::nullopt};
        if (s.param >= 0 && (unsigned)s.param < c->getNumArgs()) {
          op.src = fileRange(ctx, c->getArg(s.param)->getSourceRange());
          op.value = evalInt(ctx, c->getArg(s.param));
        } else if (s.tparam >= 0 && (unsigned)s.tparam < targs.size()) {
          op.src = fileRange(ctx, targs[s.tparam]->getSourceRange());
          auto &ta = targs[s.tparam]->getArgument();
          if (ta.getKind() == clang::TemplateArgument::Expression)
            op.value = evalInt(ctx, ta.getAsExpr());
        } else if (!s.ptx.empty() && (isdigit((unsigned char)s.ptx[0]) || s.ptx[0] == '-')) {
          op.value = std::atoll(s.ptx.c_str());
        }
        o.ops.push_back(op);
      }
    }
    place(o);
    idx.occs.push_back(o);
    return true;
  }

  // The primitive a call performs that no wrapper of the file defines: the CUDA functions known by
  // name ("" when none).
  static std::string knownByName(const std::string &name) {
    if (name == "__syncthreads" || name == "__syncthreads_count" || name == "__syncthreads_and" ||
        name == "__syncthreads_or")
      return "bar.cta";
    if (name == "cudaGridDependencySynchronize") return "griddepcontrol.wait";
    if (name == "cudaTriggerProgrammaticLaunchCompletion")
      return "griddepcontrol.launch_dependents";
    if (name == "__cluster_barrier_arrive" || name == "__cluster_barrier_arrive_relaxed")
      return "barrier.cluster.arrive";
    if (name == "__cluster_barrier_wait") return "barrier.cluster.wait";
    return {};
  }

  bool VisitGCCAsmStmt(clang::GCCAsmStmt *a) {
    if (!cur || inWrapper()) return true;
    std::string s = a->getAsmString();
    auto m = matchPtx(s);
    if (m.prim.empty()) return true;
    Occurrence o;
    o.prim = m.prim;
    o.via = "asm";
    o.opcode = m.opcode;
    auto r = fileRange(ctx, a->getSourceRange());
    if (!r) return true;
    o.expr = *r;
    for (auto &op : ptxOperands(s, m.pos)) {
      Operand x{op.text, op.in_braces, std::nullopt, std::nullopt};
      if (auto *e = asmOperand(a, percentIndex(op.text))) {
        x.src = fileRange(ctx, e->getSourceRange());
        x.value = evalInt(ctx, e);
      } else if (!op.text.empty() && (isdigit((unsigned char)op.text[0]) || op.text[0] == '-')) {
        x.value = std::atoll(op.text.c_str());
      }
      o.ops.push_back(x);
    }
    place(o);
    idx.occs.push_back(o);
    return true;
  }

  bool VisitArraySubscriptExpr(clang::ArraySubscriptExpr *e) {
    if (!cur || inWrapper() || !isKernel(cur->getDefinition())) return true;
    auto *dr = llvm::dyn_cast<clang::DeclRefExpr>(e->getBase()->IgnoreParenImpCasts());
    if (!dr) return true;
    auto *p = llvm::dyn_cast<clang::ParmVarDecl>(dr->getDecl());
    if (!p || !p->getType()->isPointerType()) return true;
    auto r = fileRange(ctx, e->getIdx()->getSourceRange());
    if (!r) return true;
    GlobalAccess g{p->getNameAsString(), *r, false, cur->getNameAsString()};
    if (stack.size() >= 2) {
      if (auto *b = llvm::dyn_cast<clang::BinaryOperator>(stack[stack.size() - 2]))
        g.write = b->isAssignmentOp() && b->getLHS()->IgnoreParens() == e;
    }
    idx.globals.push_back(g);
    return true;
  }
};

void collectKnobs(const ParsedSide &side, const std::vector<std::string> &asserts,
                  KernelIndex &idx) {
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
    if (!sm.isInMainFile(loc)) continue;
    unsigned off = sm.getFileOffset(loc);
    // A macro read back from a precompiled preamble (the parse check's) has no literal data:
    // its spelling is the user's text at the token's offset.
    if (!tok.getLiteralData() && off + tok.getLength() > idx.text.size()) continue;
    llvm::StringRef spelling = tok.getLiteralData()
                                   ? llvm::StringRef(tok.getLiteralData(), tok.getLength())
                                   : llvm::StringRef(idx.text).substr(off, tok.getLength());
    long long v;
    if (spelling.rtrim("uUlL").getAsInteger(0, v)) continue;
    Knob k{it->first->getName().str(), Range{off, off + tok.getLength()}, v, 1};
    for (auto &a : asserts) {
      std::smatch m;
      std::regex ge("\\b" + k.name + "\\s*(>=|>)\\s*([0-9]+)");
      if (std::regex_search(a, m, ge)) {
        long long lo = std::stoll(m[2]) + (m[1] == ">" ? 1 : 0);
        k.min_allowed = std::max(k.min_allowed, lo);
      }
    }
    idx.knobs.push_back(k);
  }
  std::sort(idx.knobs.begin(), idx.knobs.end(),
            [](const Knob &a, const Knob &b) { return a.value.begin < b.value.begin; });
}

}  // namespace

std::string primitiveOf(std::string_view asm_text) {
  auto m = matchPtx(asm_text);
  if (m.prim == "bar") {
    auto ops = ptxOperands(std::string(asm_text), m.pos);
    return ops.size() >= 2 ? "bar.named" : "bar.cta";
  }
  return m.prim;
}

KernelIndex buildIndex(const ParsedSource &src) {
  KernelIndex idx;
  idx.text = src.text;
  const ParsedSide *side = nullptr;
  for (auto &s : src.sides)
    if (s.ast && (s.device || !side)) side = &s;
  if (!side) return idx;
  idx.parsed = true;
  auto &ctx = side->ast->getASTContext();
  FactsCollector fc(ctx);
  fc.TraverseDecl(ctx.getTranslationUnitDecl());
  auto wrappers = findWrappers(fc.facts);
  // A bar.sync wrapper is a named barrier when its PTX has a thread count.
  for (auto &[fn, w] : wrappers)
    if (w.prim == "bar") w.prim = w.ops.size() >= 2 ? "bar.named" : "bar.cta";
  UseCollector uc(ctx, src.text, wrappers, idx);
  uc.TraverseDecl(ctx.getTranslationUnitDecl());
  for (auto &o : idx.occs)
    if (o.prim == "bar") o.prim = o.ops.size() >= 2 ? "bar.named" : "bar.cta";
  std::stable_sort(idx.occs.begin(), idx.occs.end(), [](const Occurrence &a, const Occurrence &b) {
    return a.expr.begin < b.expr.begin;
  });
  collectKnobs(*side, uc.static_asserts, idx);
  return idx;
}

}  // namespace wsr
