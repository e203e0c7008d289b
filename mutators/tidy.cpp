// tidy: rewrites that keep the program's meaning and make a reduced program read as a person
// would have written it. The other passes leave their traces: a macro unwrapped to
// `(smem_raw + (0))`, a constant folded to `"r"((128))`, a loop whose counter nothing reads any
// more (`for (int kt = 0; 1; ++kt)`). Each site is one of:
//  - parentheses dropped around a name, literal, call, member, subscript, named cast or another
//    parenthesis; or around any expression but a comma where the place is delimited already (a
//    call's argument, an asm operand, an initializer, a subscript, a return value, a condition);
//  - parentheses between two prefix operators or casts (`(T)(&x)` -> `(T)&x`);
//  - `e + 0`, `e - 0`, `e | 0`, `e ^ 0`, `e << 0`, `e >> 0`, `e * 1`, `e / 1`, `0 + e`, `0 | e`,
//    `1 * e` -> `e`, when `e` has the operator's type itself (`0u + 3` stays); `&p[0]` -> `p` for a
//    pointer p;
//  - a pointer cast dropped where the argument goes to a `void *` or `const void *` parameter;
//  - a pointer cast to an integer (or another pointer) and back to its own type -> the pointer;
//    of two pointer casts in a row, the inner one goes; a cast to the type its operand has goes;
//    a byte pointer's address summed as an integer is summed as the pointer;
//  - a for loop whose variables nothing but its own header names -> `while (cond)` (or
//    `for (;;)` without a condition); when its increment steps something else, the declaration
//    alone goes (`for (int t = 0;; ++i)` -> `for (;; ++i)`); a for loop that runs once -> its
//    body with the counter's value, one that never runs -> nothing;
//  - a local variable nothing names goes, or gives its initializer back as a statement when that
//    has side effects (`CUresult r = f(x);` -> `f(x);`; Unused below);
//  - a macro of the file that nothing expands or tests goes (its uses unwrapped by unwrap-macro
//    after remove-decl's last visit).
// wsreduce also applies every site at once to the program it finishes (reducer/wsreduce.cpp),
// however the search ended: a search stopped by its budget never reaches the cosmetic phase.
#include "tidy.h"
#include "visit.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/Stmt.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/ASTUnit.h>

#include <cctype>
#include <cstring>
#include <set>

namespace wsr {
namespace {

bool isPrimary(const clang::Expr *e) {
  e = e->IgnoreImpCasts();
  if (auto *d = llvm::dyn_cast<clang::DeclRefExpr>(e))
    return !d->hasQualifier();  // &(C::m) is not &C::m
  return llvm::isa<clang::IntegerLiteral, clang::FloatingLiteral, clang::CXXBoolLiteralExpr,
                   clang::CharacterLiteral, clang::StringLiteral, clang::ParenExpr, clang::CallExpr,
                   clang::MemberExpr, clang::ArraySubscriptExpr, clang::CXXNamedCastExpr,
                   clang::CXXNullPtrLiteralExpr, clang::CXXThisExpr, clang::PseudoObjectExpr,
                   clang::MSPropertyRefExpr>(e);  // threadIdx.x
}

// A prefix operator or a C-style cast: one of them stands after another as it stood in
// parentheses (`(T)(&x)` is `(T)&x`, `-(-x)` is `- -x`).
bool isPrefix(const clang::Expr *e) {
  e = e->IgnoreImpCasts();
  if (auto *u = llvm::dyn_cast<clang::UnaryOperator>(e)) return !u->isPostfix();
  return llvm::isa<clang::CStyleCastExpr>(e);
}

// Whether two characters would run together into one token if nothing stood between them.
bool wouldJoin(char a, char b) {
  auto word = [](char c) { return std::isalnum((unsigned char)c) || c == '_'; };
  if (word(a) && word(b)) return true;
  static const std::string ops = "+-*/%&|^<>=!:.";
  return ops.find(a) != std::string::npos && ops.find(b) != std::string::npos;
}

struct Visitor : clang::RecursiveASTVisitor<Visitor> {
  clang::ASTContext &ctx;
  const ParsedSource &src;
  std::vector<PassSite> &out;
  Visitor(clang::ASTContext &c, const ParsedSource &s, std::vector<PassSite> &o, PlaceIds &)
      : ctx(c), src(s), out(o) {}

  bool shouldVisitTemplateInstantiations() const { return false; }

  std::optional<unsigned> offsetOf(clang::SourceLocation l) {
    if (l.isInvalid() || !l.isFileID() || !isMainFileLoc(ctx, l)) return std::nullopt;
    return ctx.getSourceManager().getFileOffset(l);
  }

  // What stands right around [b, e) in the text once it is taken out: the characters that
  // would meet, skipping nothing (a blank between them keeps them apart).
  std::string gap(unsigned b, unsigned e) {
    const std::string &t = src.text;
    if (b == 0 || e >= t.size()) return "";
    return wouldJoin(t[b - 1], t[e]) ? " " : "";
  }

  // A place delimited already: a call's argument (not its callee), an asm operand, a subscript's
  // index, a return value, a statement's condition, an initializer, an element of a braced list.
  // `parent` is p's first parent node (VisitParenExpr has it).
  bool delimited(const clang::ParenExpr *p, const clang::DynTypedNode &parent) {
    if (parent.get<clang::VarDecl>()) return true;
    const clang::Stmt *par = parent.get<clang::Stmt>();
    const clang::Stmt *self = p;
    while (
        par &&
        llvm::isa<clang::ImplicitCastExpr, clang::FullExpr, clang::MaterializeTemporaryExpr>(par)) {
      self = par;
      auto up = ctx.getParents(*par);
      if (up.empty()) return false;
      if (up[0].get<clang::VarDecl>()) return true;
      par = up[0].get<clang::Stmt>();
    }
    if (!par) return false;
    if (auto *c = llvm::dyn_cast<clang::CallExpr>(par))
      return c->getCallee() != self && !llvm::isa<clang::CXXOperatorCallExpr>(c);
    if (auto *a = llvm::dyn_cast<clang::ArraySubscriptExpr>(par)) return a->getIdx() == self;
    if (llvm::isa<clang::GCCAsmStmt, clang::ReturnStmt, clang::InitListExpr,
                  clang::CXXConstructExpr>(par))
      return true;
    if (auto *i = llvm::dyn_cast<clang::IfStmt>(par)) return i->getCond() == self;
    if (auto *w = llvm::dyn_cast<clang::WhileStmt>(par)) return w->getCond() == self;
    if (auto *d = llvm::dyn_cast<clang::DoStmt>(par)) return d->getCond() == self;
    if (auto *s = llvm::dyn_cast<clang::SwitchStmt>(par)) return s->getCond() == self;
    if (auto *f = llvm::dyn_cast<clang::ForStmt>(par))
      return f->getCond() == self || f->getInc() == self;
    if (llvm::isa<clang::CompoundStmt>(par)) return true;  // an expression statement
    return false;
  }

  bool VisitParenExpr(clang::ParenExpr *p) {
    auto l = offsetOf(p->getLParen()), r = offsetOf(p->getRParen());
    if (!l || !r || *r <= *l) return true;
    // Only in a statement or a variable's initializer: decltype((x)) is not decltype(x), and
    // sizeof(x) would read `sizeof x`.
    auto ps = ctx.getParents(*p);
    if (ps.empty() || (!ps[0].get<clang::Stmt>() && !ps[0].get<clang::VarDecl>())) return true;
    if (ps[0].get<clang::UnaryExprOrTypeTraitExpr>()) return true;
    const clang::Expr *sub = p->getSubExpr();
    if (auto *b = llvm::dyn_cast<clang::BinaryOperator>(sub->IgnoreImpCasts()))
      if (b->isCommaOp() || b->isAssignmentOp())
        return true;  // `f((a, b))`, `if ((x = y))` mean what they say
    bool underPrefix = false;
    if (auto *pe = ps[0].get<clang::Expr>()) underPrefix = isPrefix(pe) && isPrefix(sub);
    if (!isPrimary(sub) && !underPrefix && !delimited(p, ps[0])) return true;
    if (sub->getType()->isFunctionType()) return true;  // `(f)(x)` keeps a macro from expanding
    PassSite s;
    s.pass = "tidy";
    s.edits.push_back({*l, 1, gap(*l, *l + 1)});
    s.edits.push_back({*r, 1, gap(*r, *r + 1)});
    s.note = "drop the parentheses at line " + std::to_string(lineOf(src.text, *l));
    if (sealSite(s, src.text)) out.push_back(std::move(s));
    return true;
  }

  // A cast of a pointer passed where the one function of its name takes `void *` or
  // `const void *`: the argument converts there by itself (`__cvta_generic_to_shared((const void
  // *)reinterpret_cast<unsigned long *>(p))` -> `__cvta_generic_to_shared(p)`, in two rounds).
  // Not for pointers to classes (a cast to a base moves the address), nor across overloads or
  // templates (the argument's type chooses there).
  bool VisitCallExpr(clang::CallExpr *c) {
    const clang::FunctionDecl *f = c->getDirectCallee();
    if (!f || f->isVariadic() || f->getPrimaryTemplate() || f->isTemplateInstantiation())
      return true;
    if (!f->getDeclName().isIdentifier()) return true;  // operators, conversions
    auto found = f->getDeclContext()->getRedeclContext()->lookup(f->getDeclName());
    if (std::distance(found.begin(), found.end()) != 1) return true;
    for (unsigned i = 0; i < c->getNumArgs() && i < f->getNumParams(); ++i) {
      clang::QualType pt = f->getParamDecl(i)->getType();
      if (!pt->isVoidPointerType()) continue;
      auto *cast = llvm::dyn_cast<clang::ExplicitCastExpr>(c->getArg(i)->IgnoreImpCasts());
      if (!cast || !llvm::isa<clang::CStyleCastExpr, clang::CXXStaticCastExpr,
                              clang::CXXReinterpretCastExpr>(cast))
        continue;
      // The operand as written: a C-style cast that drops a const holds an implicit no-op cast
      // to the unqualified type, which is not what the argument would convert from.
      const clang::Expr *op = cast->getSubExpr()->IgnoreParenImpCasts();
      clang::QualType ot = op->getType(), ct = cast->getType();
      if (ot->isArrayType()) ot = ctx.getArrayDecayedType(ot);
      if (!ot->isPointerType() || !ct->isPointerType()) continue;
      clang::QualType op_pointee = ot->getPointeeType(), c_pointee = ct->getPointeeType();
      if (op_pointee->isRecordType() || c_pointee->isRecordType() || op_pointee->isFunctionType())
        continue;
      if (op_pointee.isVolatileQualified()) continue;
      if (op_pointee.isConstQualified() && !pt->getPointeeType().isConstQualified()) continue;
      auto whole = mainFileRange(ctx, cast->getSourceRange());
      auto part = mainFileRange(ctx, op->getSourceRange());
      if (!whole || !part || part->size() == 0) continue;
      std::string text = src.text.substr(part->begin, part->size());
      if (auto *b = llvm::dyn_cast<clang::BinaryOperator>(op); b && b->isCommaOp()) continue;
      out.push_back(replaceSite("tidy", src, *whole, text,
                                "the cast of the argument `" + text.substr(0, 40) + "` to " +
                                    f->getNameAsString() + " at line " +
                                    std::to_string(lineOf(src.text, whole->begin))));
    }
    return true;
  }

  // A pointer cast to an integer or another pointer and back to its own type: the pointer
  // (`reinterpret_cast<char *>(reinterpret_cast<unsigned long>(p))` -> `p`, what is left of an
  // alignment macro once simplify-expr took its arithmetic). The integer holds the whole pointer.
  // An array (`smem_raw`) comes back only where it decays at once: an operand of arithmetic, a
  // cast, a subscript, an asm, or an argument of a function that is no template.
  bool VisitExplicitCastExpr(clang::ExplicitCastExpr *o) {
    clang::QualType t = o->getType();
    if (t->isDependentType()) return true;
    if (identityCast(o)) return true;
    if (!t->isPointerType()) return true;
    if (byteAddressSum(o)) return true;
    auto *in = llvm::dyn_cast<clang::ExplicitCastExpr>(o->getSubExpr()->IgnoreParens());
    if (!in || in->getType()->isDependentType()) return true;
    clang::QualType mid = in->getType();
    if (castOfACast(o, in)) return true;
    bool wide = mid->isIntegerType() && !mid->isEnumeralType() && !mid->isBooleanType() &&
                ctx.getTypeSize(mid) >= ctx.getTypeSize(t);
    if (!wide && !mid->isPointerType()) return true;
    if (mid->isPointerType() &&
        (mid->getPointeeType()->isRecordType() || t->getPointeeType()->isRecordType()))
      return true;  // a cast between classes may move the address
    const clang::Expr *op = in->getSubExpr()->IgnoreParenImpCasts();
    clang::QualType ot = op->getType();
    if (ot->isArrayType()) {
      if (!decaysAtOnce(o)) return true;
      ot = ctx.getArrayDecayedType(ot);
    }
    if (!ctx.hasSameType(ot, t)) return true;
    replaceByOperand(o, op, "the casts there and back around `%s`");
    return true;
  }

  // A cast of a scalar to the type it has already (`reinterpret_cast<char *>(smem_raw)` for a
  // char array, `(int)n` for an int): the operand, where only its value counts.
  bool identityCast(const clang::ExplicitCastExpr *o) {
    if (!llvm::isa<clang::CStyleCastExpr, clang::CXXStaticCastExpr, clang::CXXReinterpretCastExpr>(
            o))
      return false;
    clang::QualType t = o->getType();
    if (!t->isScalarType() || t.isVolatileQualified()) return false;
    const clang::Expr *op = o->getSubExpr()->IgnoreParenImpCasts();
    clang::QualType ot = op->getType();
    if (ot->isArrayType()) ot = ctx.getArrayDecayedType(ot);
    if (ot->isDependentType() || !ctx.hasSameUnqualifiedType(ot, t)) return false;
    if (!decaysAtOnce(o) && !initializes(o)) return false;
    return replaceByOperand(o, op, "the cast of `%s` to its own type");
  }

  // Whether `e` (through parentheses and implicit casts) initializes a variable of a scalar type.
  bool initializes(const clang::Expr *e) {
    const clang::Stmt *self = e;
    auto *v = valueParent(self).get<clang::VarDecl>();
    return v && v->getInit() && !v->getType()->isReferenceType() &&
           !v->getType()->getContainedAutoType();
  }

  // The first parent of `self` that is neither parentheses nor an implicit cast (an empty node
  // when there is none); `self` becomes the child under it.
  clang::DynTypedNode valueParent(const clang::Stmt *&self) {
    for (;;) {
      auto ps = ctx.getParents(*self);
      if (ps.empty()) return {};
      const clang::Stmt *par = ps[0].get<clang::Stmt>();
      if (!par || !llvm::isa<clang::ParenExpr, clang::ImplicitCastExpr>(par)) return ps[0];
      self = par;
    }
  }

  // `reinterpret_cast<T *>(reinterpret_cast<unsigned long>(p) + n)` -> `reinterpret_cast<T *>(p +
  // n)` for a pointer p to bytes (char, signed or unsigned): the same address, counted by the
  // pointer.
  bool byteAddressSum(const clang::ExplicitCastExpr *o) {
    auto *sum = llvm::dyn_cast<clang::BinaryOperator>(o->getSubExpr()->IgnoreParenImpCasts());
    if (!sum || (sum->getOpcode() != clang::BO_Add && sum->getOpcode() != clang::BO_Sub))
      return false;
    auto *in = llvm::dyn_cast<clang::ExplicitCastExpr>(sum->getLHS()->IgnoreParenImpCasts());
    if (!in || !llvm::isa<clang::CStyleCastExpr, clang::CXXReinterpretCastExpr>(in)) return false;
    clang::QualType mid = in->getType();
    if (!mid->isIntegerType() || mid->isEnumeralType() || mid->isBooleanType() ||
        ctx.getTypeSize(mid) < ctx.getTypeSize(o->getType()) ||
        !sum->getRHS()->getType()->isIntegerType())
      return false;
    const clang::Expr *op = in->getSubExpr()->IgnoreParenImpCasts();
    clang::QualType ot = op->getType();
    if (ot->isArrayType()) ot = ctx.getArrayDecayedType(ot);
    if (!ot->isPointerType() || !ot->getPointeeType()->isCharType()) return false;
    return replaceByOperand(in, op, "the address of `%s` counted by the pointer");
  }

  // `(const float *)reinterpret_cast<float *>(p)` -> `(const float *)p`: of two pointer casts in a
  // row, the outer alone says where the pointer goes (no class pointee: its casts move addresses;
  // a reinterpret_cast keeps its const, so the operand's must not be more than the outer's).
  bool castOfACast(const clang::ExplicitCastExpr *o, const clang::ExplicitCastExpr *in) {
    if (!llvm::isa<clang::CStyleCastExpr, clang::CXXReinterpretCastExpr>(o)) return false;
    if (!llvm::isa<clang::CStyleCastExpr, clang::CXXReinterpretCastExpr, clang::CXXStaticCastExpr>(
            in))
      return false;
    if (!in->getType()->isPointerType()) return false;
    const clang::Expr *op = in->getSubExpr()->IgnoreParenImpCasts();
    clang::QualType ot = op->getType();
    if (ot->isArrayType()) ot = ctx.getArrayDecayedType(ot);
    if (!ot->isPointerType() || ctx.hasSameType(ot, o->getType()))
      return false;  // the same type: the round trip's
    clang::QualType op_pointee = ot->getPointeeType(), to = o->getType()->getPointeeType();
    if (op_pointee->isRecordType() || to->isRecordType() ||
        in->getType()->getPointeeType()->isRecordType())
      return false;
    if (op_pointee->isFunctionType() || to->isFunctionType()) return false;
    if (llvm::isa<clang::CXXReinterpretCastExpr>(o) && !to.isAtLeastAsQualifiedAs(op_pointee, ctx))
      return false;
    return replaceByOperand(in, op, "the inner of two pointer casts around `%s`");
  }

  // A site that puts `op`'s text where `e` stands, in parentheses unless it is primary; `what`
  // is the note, with `%s` for the beginning of that text. False when either has no place in the
  // user's text.
  bool replaceByOperand(const clang::Expr *e, const clang::Expr *op, const char *what) {
    auto whole = mainFileRange(ctx, e->getSourceRange()),
         part = mainFileRange(ctx, op->getSourceRange());
    if (!whole || !part || part->size() == 0) return false;
    std::string text = src.text.substr(part->begin, part->size());
    if (!isPrimary(op)) text = "(" + text + ")";
    std::string note = what;
    note.replace(note.find("%s"), 2, text.substr(0, 40));
    out.push_back(replaceSite("tidy", src, *whole, text,
                              note + " at line " + std::to_string(lineOf(src.text, whole->begin))));
    return true;
  }

  bool decaysAtOnce(const clang::Expr *e) {
    const clang::Stmt *self = e;
    const clang::Stmt *par = valueParent(self).get<clang::Stmt>();
    if (!par) return false;
    if (auto *b = llvm::dyn_cast<clang::BinaryOperator>(par))
      return b->isAdditiveOp() || b->isComparisonOp();
    if (auto *a = llvm::dyn_cast<clang::ArraySubscriptExpr>(par)) return a->getBase() == self;
    if (auto *c = llvm::dyn_cast<clang::CallExpr>(par)) {
      const clang::FunctionDecl *f = c->getDirectCallee();
      return f && c->getCallee() != self && !f->getPrimaryTemplate() &&
             !f->isTemplateInstantiation() && !llvm::isa<clang::CXXOperatorCallExpr>(c);
    }
    return llvm::isa<clang::ExplicitCastExpr, clang::GCCAsmStmt>(par);
  }

  // `&p[0]` -> `p`, for a pointer p (an array's `&a[0]` is not `a`: sizeof and templates see
  // the array).
  bool VisitUnaryOperator(clang::UnaryOperator *u) {
    if (u->getOpcode() != clang::UO_AddrOf) return true;
    auto *sub = llvm::dyn_cast<clang::ArraySubscriptExpr>(u->getSubExpr()->IgnoreParens());
    if (!sub || !isInt(sub->getIdx(), 0)) return true;
    const clang::Expr *base = sub->getBase();
    if (auto *ic = llvm::dyn_cast<clang::ImplicitCastExpr>(base))
      if (ic->getCastKind() == clang::CK_ArrayToPointerDecay) return true;
    if (!base->getType()->isPointerType() || !ctx.hasSameType(base->getType(), u->getType()))
      return true;
    auto whole = mainFileRange(ctx, u->getSourceRange()),
         part = mainFileRange(ctx, base->getSourceRange());
    if (!whole || !part || part->size() == 0) return true;
    std::string text = src.text.substr(part->begin, part->size());
    out.push_back(replaceSite("tidy", src, *whole, text,
                              "`&...[0]` -> `" + text.substr(0, 40) + "` at line " +
                                  std::to_string(lineOf(src.text, whole->begin))));
    return true;
  }

  static bool isInt(const clang::Expr *e, uint64_t v) {
    auto *i = llvm::dyn_cast<clang::IntegerLiteral>(e->IgnoreParenImpCasts());
    return i && i->getValue() == v;
  }

  bool VisitBinaryOperator(clang::BinaryOperator *b) {
    using BO = clang::BinaryOperatorKind;
    const clang::Expr *keep = nullptr;
    const clang::Expr *L = b->getLHS(), *R = b->getRHS();
    switch (b->getOpcode()) {
      case BO::BO_Add:
      case BO::BO_Or:
      case BO::BO_Xor:
        keep = isInt(R, 0) ? L : isInt(L, 0) ? R : nullptr;
        break;
      case BO::BO_Sub:
      case BO::BO_Shl:
      case BO::BO_Shr:
        keep = isInt(R, 0) ? L : nullptr;
        break;
      case BO::BO_Mul:
        keep = isInt(R, 1) ? L : isInt(L, 1) ? R : nullptr;
        break;
      case BO::BO_Div:
        keep = isInt(R, 1) ? L : nullptr;
        break;
      default:
        break;
    }
    if (!keep || b->getType()->isDependentType()) return true;
    // The operand's own type, before the conversions the operator gave it (`0u + 3` is no `3`);
    // an array stays a pointer where it decays at once (`(smem_raw + 0) + 64u`, not sizeof's).
    const clang::Expr *own = keep;
    while (auto *ic = llvm::dyn_cast<clang::ImplicitCastExpr>(own)) {
      if (ic->getCastKind() == clang::CK_ArrayToPointerDecay) {
        if (!decaysAtOnce(b)) return true;
        break;
      }
      own = ic->getSubExpr();
    }
    if (!ctx.hasSameUnqualifiedType(own->getType(), b->getType())) return true;
    auto whole = mainFileRange(ctx, b->getSourceRange());
    auto part = mainFileRange(ctx, keep->getSourceRange());
    if (!whole || !part || part->size() == 0) return true;
    std::string text = src.text.substr(part->begin, part->size());
    out.push_back(replaceSite(
        "tidy", src, *whole, text,
        "`" + src.text.substr(whole->begin, std::min<unsigned>(whole->size(), 40)) + "` -> `" +
            text.substr(0, 40) + "` at line " + std::to_string(lineOf(src.text, whole->begin))));
    return true;
  }

  // Whether `s` names one of `vars` (and, with `calls`, whether it calls anything or names
  // anything else: an increment that only steps the loop's own counter).
  static void scan(const clang::Stmt *s, const std::set<const clang::Decl *> &vars, bool &named,
                   bool &other) {
    struct Refs : clang::RecursiveASTVisitor<Refs> {
      const std::set<const clang::Decl *> &vars;
      bool &named, &other;
      Refs(const std::set<const clang::Decl *> &v, bool &n, bool &o)
          : vars(v), named(n), other(o) {}
      bool VisitDeclRefExpr(clang::DeclRefExpr *d) {
        (vars.count(d->getDecl()) ? named : other) = true;
        return true;
      }
      bool VisitCallExpr(clang::CallExpr *) {
        other = true;
        return true;
      }
    } refs(vars, named, other);
    if (s) refs.TraverseStmt(const_cast<clang::Stmt *>(s));
  }

  // A for loop that runs its body once, or never, with constants a search left
  // (`for (int j = 0; j < COLS_PER_LANE; ++j)`, COLS_PER_LANE 1): the body, its reads of the
  // counter replaced by the counter's value; or nothing. Only for a counter declared in the loop
  // with a constant start, a condition `<`, `<=` or `!=` against a constant, a step of one, a
  // body that only reads the counter and holds no break, continue or goto; a `#pragma unroll`
  // on the lines right before the loop goes with it.
  bool singleTrip(clang::ForStmt *f) {
    auto *init = llvm::dyn_cast_or_null<clang::DeclStmt>(f->getInit());
    if (!init || !init->isSingleDecl() || !f->getCond() || !f->getInc() || !f->getBody())
      return false;
    auto *v = llvm::dyn_cast<clang::VarDecl>(init->getSingleDecl());
    if (!v || !v->getInit() || !v->getType()->isIntegerType() || v->getType()->isDependentType())
      return false;
    clang::Expr::EvalResult start, bound;
    if (!v->getInit()->EvaluateAsInt(start, ctx)) return false;
    auto *cond = llvm::dyn_cast<clang::BinaryOperator>(f->getCond()->IgnoreParenImpCasts());
    if (!cond || !refersTo(cond->getLHS(), v) || !cond->getRHS()->EvaluateAsInt(bound, ctx))
      return false;
    const clang::Expr *inc = f->getInc()->IgnoreParens();
    bool stepOne = false;
    if (auto *u = llvm::dyn_cast<clang::UnaryOperator>(inc))
      stepOne = u->isIncrementOp() && refersTo(u->getSubExpr(), v);
    if (auto *a = llvm::dyn_cast<clang::CompoundAssignOperator>(inc))
      stepOne = a->getOpcode() == clang::BO_AddAssign && refersTo(a->getLHS(), v) &&
                isInt(a->getRHS(), 1);
    if (!stepOne) return false;
    const llvm::APSInt &a = start.Val.getInt(), &b = bound.Val.getInt();
    if (!a.isRepresentableByInt64() || !b.isRepresentableByInt64()) return false;
    int64_t lo = a.getExtValue(), hi = b.getExtValue();
    if (lo < -(1LL << 40) || lo > (1LL << 40) || hi < -(1LL << 40) || hi > (1LL << 40))
      return false;
    int trips;
    switch (cond->getOpcode()) {
      case clang::BO_LT:
        trips = lo < hi ? (lo + 1 == hi ? 1 : 2) : 0;
        break;
      case clang::BO_LE:
        trips = lo <= hi ? (lo == hi ? 1 : 2) : 0;
        break;
      case clang::BO_NE:
        trips = lo + 1 == hi ? 1 : 2;
        break;
      default:
        return false;
    }
    if (trips > 1) return false;
    // The body: no jump out of it, and the counter only read.
    struct Body : clang::RecursiveASTVisitor<Body> {
      const clang::VarDecl *v;
      clang::ASTContext &ctx;
      std::vector<const clang::DeclRefExpr *> reads;
      bool bad = false;
      Body(const clang::VarDecl *var, clang::ASTContext &c) : v(var), ctx(c) {}
      bool VisitBreakStmt(clang::BreakStmt *) { return !(bad = true); }
      bool VisitContinueStmt(clang::ContinueStmt *) { return !(bad = true); }
      bool VisitGotoStmt(clang::GotoStmt *) { return !(bad = true); }
      bool VisitLabelStmt(clang::LabelStmt *) { return !(bad = true); }
      bool VisitDeclRefExpr(clang::DeclRefExpr *d) {
        if (d->getDecl() != v) return true;
        auto ps = ctx.getParents(*d);
        auto *ic = ps.empty() ? nullptr : ps[0].get<clang::ImplicitCastExpr>();
        if (!ic || ic->getCastKind() != clang::CK_LValueToRValue) return !(bad = true);
        reads.push_back(d);
        return true;
      }
    } body(v, ctx);
    body.TraverseStmt(f->getBody());
    if (body.bad) return false;
    std::string value;
    if (trips == 1 && !body.reads.empty()) {
      value = integerLiteralOf(v->getType(), start.Val.getInt());
      if (value.empty()) return false;
    }
    auto forAt = offsetOf(f->getForLoc());
    auto whole = mainFileRangeWithSemi(ctx, f->getSourceRange());
    auto br = mainFileRangeWithSemi(ctx, f->getBody()->getSourceRange());
    if (!forAt || !whole || !br || whole->begin != *forAt || br->end != whole->end) return false;
    Range r{whole->begin, whole->end};
    // `#pragma unroll` lines right above the loop.
    const std::string &t = src.text;
    for (;;) {
      unsigned ls = r.begin;
      while (ls > 0 && (t[ls - 1] == ' ' || t[ls - 1] == '\t')) --ls;
      if (ls == 0 || t[ls - 1] != '\n') break;
      unsigned pe = ls - 1, ps = pe;
      while (ps > 0 && t[ps - 1] != '\n') --ps;
      std::string prev = t.substr(ps, pe - ps);
      size_t a = prev.find_first_not_of(" \t");
      if (a == std::string::npos || prev.compare(a, 7, "#pragma") != 0 ||
          prev.find("unroll") == std::string::npos)
        break;
      r.begin = ps + (unsigned)a;
    }
    if (trips == 0) {
      out.push_back(
          replaceSite("tidy", src, widenToLines(t, r), "",
                      "the loop that never runs at line " + std::to_string(lineOf(t, *forAt))));
      return true;
    }
    // The body's text with its reads of the counter replaced; a block's braces go when it
    // declares nothing.
    std::vector<Edit> edits;
    for (auto *d : body.reads) {
      auto dr = mainFileRange(ctx, d->getSourceRange());
      if (!dr || dr->begin < br->begin || dr->end > br->end) return false;
      edits.push_back({dr->begin, dr->size(), value});
    }
    std::string text = rewritten(t, *br, edits);
    if (auto *cs = llvm::dyn_cast<clang::CompoundStmt>(f->getBody())) {
      bool declares = false;
      for (auto *st : cs->body()) declares = declares || llvm::isa<clang::DeclStmt>(st);
      if (!declares && text.size() >= 2 && text.front() == '{' && text.back() == '}')
        text = text.substr(1, text.size() - 2);
    } else if (llvm::isa<clang::DeclStmt>(f->getBody())) {
      return false;
    }
    out.push_back(
        replaceSite("tidy", src, r, text,
                    "the loop that runs once at line " + std::to_string(lineOf(t, *forAt))));
    return true;
  }

  static bool refersTo(const clang::Expr *e, const clang::VarDecl *v) {
    auto *d = llvm::dyn_cast<clang::DeclRefExpr>(e->IgnoreParenImpCasts());
    return d && d->getDecl() == v;
  }

  bool VisitForStmt(clang::ForStmt *f) {
    if (singleTrip(f)) return true;
    auto *init = llvm::dyn_cast_or_null<clang::DeclStmt>(f->getInit());
    if (!init) return true;  // no counter of its own (an init expression runs once: it may matter)
    std::set<const clang::Decl *> vars;
    for (auto *d : init->decls()) {
      auto *v = llvm::dyn_cast<clang::VarDecl>(d);
      if (!v || (v->getInit() && v->getInit()->HasSideEffects(ctx))) return true;
      vars.insert(v);
    }
    bool inBody = false, ignored = false, inInc = false, incOther = false;
    scan(f->getCond(), vars, inBody, ignored);
    scan(f->getBody(), vars, inBody, ignored);
    if (inBody) return true;
    scan(f->getInc(), vars, inInc, incOther);
    auto forAt = offsetOf(f->getForLoc()), lp = offsetOf(f->getLParenLoc()),
         rp = offsetOf(f->getRParenLoc());
    auto initEnd = offsetOf(init->getEndLoc());
    if (!forAt || !lp || !rp || !initEnd || *rp <= *lp) return true;
    const std::string line = " at line " + std::to_string(lineOf(src.text, *forAt));
    if (!incOther) {  // the increment steps only the counter nobody reads (or there is none)
      std::string header = "for (;;)";
      if (const clang::Expr *c = f->getCond()) {
        auto cr = mainFileRange(ctx, c->getSourceRange());
        if (!cr) return true;
        header = "while (" + src.text.substr(cr->begin, cr->size()) + ")";
      }
      out.push_back(replaceSite(
          "tidy", src, Range{*forAt, *rp + 1}, header,
          "`" + src.text.substr(*forAt, *rp + 1 - *forAt) + "` -> `" + header + "`" + line));
      return true;
    }
    if (inInc) return true;  // `for (int t = 0;; ++t, ++i)`: the counter is stepped; leave it
    // `for (int t = 0;; ++i)`: the declaration goes, its `;` stays.
    size_t semi = src.text.find(';', *initEnd);
    if (semi == std::string::npos || semi >= *rp) return true;
    out.push_back(replaceSite("tidy", src, Range{*lp + 1, (unsigned)semi}, "",
                              "the unused counter of the for" + line));
    return true;
  }
};

// Local variables nothing names (a search stopped by its budget leaves them: `CUresult r = f(...)`
// once r's check went, `bf16 *dA, *dB, *dC` once two of the three went). Only a variable of a
// type with nothing to destroy, neither volatile nor a reference nor static, declared in a
// block's statement:
//  - one with no initializer, or one without side effects, goes: its statement, or its declarator
//    when others share the statement (`bf16 *dA, *dB` -> `bf16 *dB`);
//  - the only one of its statement, a scalar with an `=` initializer that has side effects, gives
//    the initializer back as a statement (`CUresult r = f(x);` -> `f(x);`).
// One side's parse may name what the other's does not (code under __CUDA_ARCH__), so a site is
// offered only when every parse offers it, as remove-decl does.
struct Unused : clang::RecursiveASTVisitor<Unused> {
  clang::ASTContext &ctx;
  const ParsedSource &src;
  std::vector<PassSite> &out;
  Unused(clang::ASTContext &c, const ParsedSource &s, std::vector<PassSite> &o)
      : ctx(c), src(s), out(o) {}

  bool shouldVisitTemplateInstantiations() const { return false; }

  bool removable(const clang::VarDecl *v) {
    if (!v || llvm::isa<clang::DecompositionDecl>(v) || v->isImplicit() || !v->hasLocalStorage() ||
        llvm::isa<clang::ParmVarDecl>(v) || v->isReferenced() || v->isUsed(false) || v->hasAttrs())
      return false;
    clang::QualType t = v->getType();
    return !t->isDependentType() && !t->isReferenceType() && !t.isVolatileQualified() &&
           t.isDestructedType() == clang::QualType::DK_none;
  }

  bool VisitCompoundStmt(clang::CompoundStmt *cs) {
    for (auto *st : cs->body()) {
      auto *ds = llvm::dyn_cast<clang::DeclStmt>(st);
      if (!ds) continue;
      std::vector<const clang::VarDecl *> vars;
      for (auto *d : ds->decls()) {
        auto *v = llvm::dyn_cast<clang::VarDecl>(d);
        if (!v) {
          vars.clear();
          break;
        }  // `struct S {} s;`: a type declared with it
        vars.push_back(v);
      }
      if (vars.empty()) continue;
      auto whole = mainFileRangeWithSemi(ctx, ds->getSourceRange());
      if (!whole) continue;
      const std::string line = " at line " + std::to_string(lineOf(src.text, whole->begin));
      // Each declarator's end (its name or its initializer's), in the text.
      std::vector<unsigned> ends;
      for (auto *v : vars) {
        auto r = mainFileRange(ctx, v->getSourceRange());
        if (!r || r->end > whole->end || (!ends.empty() && r->end <= ends.back())) {
          ends.clear();
          break;
        }
        ends.push_back(r->end);
      }
      if (ends.size() != vars.size()) continue;
      for (size_t i = 0; i < vars.size(); ++i) {
        const clang::VarDecl *v = vars[i];
        if (!removable(v)) continue;
        const clang::Expr *init = v->getInit();
        const std::string name = v->getNameAsString();
        bool effects = init && init->HasSideEffects(ctx);
        if (!effects) {
          std::optional<Range> r;
          if (vars.size() == 1) {
            r = widenToLines(src.text, *whole);
          } else if (i > 0) {  // `, *dB`: from the end of the one before
            r = Range{ends[i - 1], ends[i]};
          } else if (auto b = declaratorBegin(v)) {  // `*dA, `: up to the next declarator
            unsigned e = ends[0];
            while (e < whole->end && std::isspace((unsigned char)src.text[e])) ++e;
            if (e >= whole->end || src.text[e] != ',') continue;
            ++e;
            while (e < whole->end && std::isspace((unsigned char)src.text[e])) ++e;
            r = Range{*b, e};
          }
          if (!r) continue;
          out.push_back(replaceSite("tidy", src, *r, "", "the unused variable " + name + line));
          continue;
        }
        if (vars.size() != 1 || v->getInitStyle() != clang::VarDecl::CInit ||
            !v->getType()->isScalarType())
          continue;
        auto ir = mainFileRange(ctx, init->getSourceRange());
        if (!ir || ir->begin <= whole->begin || ir->end > whole->end) continue;
        out.push_back(replaceSite("tidy", src, Range{whole->begin, ir->begin}, "",
                                  "`" + src.text.substr(whole->begin, ir->begin - whole->begin) +
                                      "` dropped: " + name + " is never read" + line));
      }
    }
    return true;
  }

  // Where the first declarator's own part begins: the `*` or `&` before its name, else the name
  // (`bf16 *dA` -> at `*`). Nothing else may stand between the type and the name.
  std::optional<unsigned> declaratorBegin(const clang::VarDecl *v) {
    auto at = mainFileRange(ctx, clang::SourceRange(v->getLocation(), v->getLocation()));
    if (!at) return std::nullopt;
    unsigned b = at->begin;
    while (b > 0 && std::strchr(" \t*&", src.text[b - 1])) --b;
    while (b < at->begin && std::isspace((unsigned char)src.text[b])) ++b;
    if (b == 0 || !(std::isalnum((unsigned char)src.text[b - 1]) || src.text[b - 1] == '_' ||
                    src.text[b - 1] == ' ' || src.text[b - 1] == '>'))
      return std::nullopt;
    return b;
  }
};

}  // namespace

std::vector<PassSite> tidySites(const ParsedSource &src) {
  std::vector<PassSite> sites = visitorSites<Visitor>(src);
  auto unused = sitesEverySideOffers(src, [&](const ParsedSide &side, std::vector<PassSite> &mine) {
    Unused u(side.ast->getASTContext(), src, mine);
    forEachMainFileDecl(side.ast->getASTContext(), [&](clang::Decl *d) { u.TraverseDecl(d); });
    macroSites(*side.ast, src, "tidy", mine);
  });
  for (auto &s : unused) sites.push_back(std::move(s));
  dedupeAndOrder(sites);
  return sites;
}

// The rounds of tidyProgram and tidyProgramJudged. A round's sites all at once first; when the
// text is not acceptable, one by one (a cheap check) or by halves (a judge that builds and runs).
static std::string tidyRounds(const std::string &text, const std::string &path,
                              const ParseOptions &opt, int rounds,
                              const std::function<bool(const std::string &)> &acceptable,
                              bool by_halves, int *left_out) {
  std::string cur = text, prev = text;
  if (left_out) *left_out = 0;
  for (int i = 0; i <= rounds; ++i) {
    auto parsed = parseSource(cur, path, opt);
    if (!parsed->ok()) return prev;  // the last round's result does not parse: the one before it
    if (i == rounds) break;
    auto sites = tidySites(*parsed);
    // Every site alone keeps the meaning; of two that overlap (`x + (0)`: the sum and the
    // parentheses inside it) the first listed goes first and the other waits for the next round.
    std::vector<const Site *> all;
    for (auto &s : sites) all.push_back(&s);
    std::string next = applySites(cur, all);
    if (acceptable && next != cur && !acceptable(next)) {
      std::vector<const Site *>
          taken;  // kept in the sites' order: applySites resolves overlaps by it
      int refused = 0;
      if (!by_halves) {
        for (auto *s : all) {
          taken.push_back(s);
          if (!acceptable(applySites(cur, taken))) taken.pop_back(), ++refused;
        }
      } else {
        // Each half is taken whole when the text with it is acceptable, else split again: one
        // refused site among n costs about 2 log2(n) judgments. `part` was refused as a whole.
        std::function<void(std::vector<const Site *>)> split = [&](std::vector<const Site *> part) {
          if (part.size() == 1) {
            ++refused;
            return;
          }
          size_t h = part.size() / 2;
          for (auto half : {std::vector<const Site *>(part.begin(), part.begin() + (long)h),
                            std::vector<const Site *>(part.begin() + (long)h, part.end())}) {
            auto trial = taken;
            trial.insert(trial.end(), half.begin(), half.end());
            std::string t = applySites(cur, trial);
            if (t == applySites(cur, taken)) continue;  // overlaps a site taken before: next round
            if (acceptable(t))
              taken = std::move(trial);
            else
              split(std::move(half));
          }
        };
        split(all);
      }
      if (left_out) *left_out = refused;
      next = applySites(cur, taken);
    }
    if (next == cur) break;
    prev = std::move(cur);
    cur = std::move(next);
  }
  return cur;
}

std::string tidyProgram(const std::string &text, const std::string &path, const ParseOptions &opt,
                        int rounds, const std::function<bool(const std::string &)> &acceptable) {
  return tidyRounds(text, path, opt, rounds, acceptable, false, nullptr);
}

std::string tidyProgramJudged(const std::string &text, const std::string &path,
                              const ParseOptions &opt, int rounds,
                              const std::function<bool(const std::string &)> &judge,
                              int *left_out) {
  return tidyRounds(text, path, opt, rounds, judge, true, left_out);
}

}  // namespace wsr
