// isolate-asm: replace the whole program by one kernel that holds the inline PTX its kernels
// reach, and an empty main. ptxas judges the PTX that a program's asm statements become; a
// compile error it reports in a program with a library inlined (CUTLASS's example 48: 43,000
// lines of CuTe and CUTLASS that its kernel reaches) needs those statements and none of the
// template machinery that leads to them, which statement-by-statement deletion inside
// instantiated templates cannot take (the parse check refuses nine of ten such candidates).
//
// The walk runs on the device side's AST from every kernel that is compiled (a kernel that is no
// template, or an instantiation of one), through every call and constructor to the instantiated
// definition it names, in the order the calls appear; the discarded arm of an `if constexpr` is
// not walked (nvcc emits nothing of it). Each asm statement is kept once (the same text,
// constraints and constant operands), in the order the walk meets it:
//   - a register operand becomes a local of the constraint's type (h, r, l, f, d), set to the
//     operand's value when that is a constant, else 0;
//   - an immediate (`n`, `i`) keeps its value, evaluated in the instantiation (a template
//     argument such as a register count);
//   - a tied operand (`"0"`) and the clobbers are kept; every statement is `volatile`, so that
//     an asm whose outputs nothing reads still reaches ptxas.
// A statement with an operand of another kind, or with a constant that does not evaluate, is left
// out. ptxas reports the first error in its order, which a merged list need not keep, so the
// alternatives are: every statement, then each distinct statement alone (at most
// kMaxAlone), most aggressive first. Offered only for compile-error reductions (the schedule's
// build-only passes), and only when the isolated program is smaller than the program.
#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/Stmt.h>
#include <clang/Frontend/ASTUnit.h>
#include <clang/AST/Attr.h>

#include <set>

namespace wsr {

namespace {

constexpr size_t kMaxAlone = 32;

// An operand of the isolated statement: its constraint and either a local of the statement
// (a register) or an immediate.
struct IsolatedOperand {
  std::string constraint;  // as a string literal
  int local = -1;          // index into Isolated::locals, or -1 for an immediate
  std::string immediate;
};

// One asm statement, rewritten to stand alone: its declarations of locals and the statement.
struct Isolated {
  std::string key;                  // text, constraints and constants: what makes two the same
  std::vector<std::string> locals;  // "unsigned" per register operand, in order
  std::vector<std::string> inits;   // their initial values
  std::string asm_text;             // the string literal, escaped
  std::vector<IsolatedOperand> outputs, inputs;
  std::vector<std::string> clobbers;  // as string literals
  std::string origin;                 // function it came from
};

std::string literal(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\%03o", c);
          out += buf;
        } else {
          out += (char)c;
        }
    }
  }
  return out + "\"";
}

// The C type of a register operand's constraint (NVPTX's letters), or "" for another kind.
std::string registerType(const std::string &constraint) {
  for (char c : constraint) switch (c) {
      case 'h': return "unsigned short";
      case 'r': return "unsigned";
      case 'l': return "unsigned long long";
      case 'f': return "float";
      case 'd': return "double";
      case '=': case '+': case '&': case '%': case '*': continue;
      default: return "";
    }
  return "";
}

bool isImmediate(const std::string &constraint) {
  return constraint.find_first_of("ni") != std::string::npos &&
         constraint.find_first_of("hrlfd") == std::string::npos;
}

bool isTied(const std::string &constraint) {
  return !constraint.empty() && std::isdigit((unsigned char)constraint[0]);
}

std::optional<Isolated> isolate(clang::GCCAsmStmt *a, clang::ASTContext &ctx,
                                const std::string &origin) {
  if (a->isAsmGoto()) return std::nullopt;
  Isolated s;
  s.origin = origin;
  std::string text = a->getAsmString();
  s.asm_text = literal(text);
  s.key = text;
  auto local = [&](const std::string &type, const clang::Expr *e) {
    std::string init = "0";
    if (e && !e->isValueDependent()) {
      clang::Expr::EvalResult r;
      if (type.find("float") == std::string::npos && type.find("double") == std::string::npos &&
          e->EvaluateAsInt(r, ctx))
        init = llvm::toString(r.Val.getInt(), 10) + (type == "unsigned long long" ? "ull" : "u");
    }
    s.locals.push_back(type);
    s.inits.push_back(init);
    return (int)s.locals.size() - 1;
  };
  for (unsigned i = 0; i < a->getNumOutputs(); ++i) {
    std::string c = a->getOutputConstraint(i), t = registerType(c);
    if (t.empty()) return std::nullopt;
    s.outputs.push_back({literal(c), local(t, nullptr), ""});
    s.key += "|o" + c;
  }
  for (unsigned i = 0; i < a->getNumInputs(); ++i) {
    std::string c = a->getInputConstraint(i);
    const clang::Expr *e = a->getInputExpr(i);
    if (isImmediate(c)) {
      clang::Expr::EvalResult r;
      if (e->isValueDependent() || !e->EvaluateAsInt(r, ctx)) return std::nullopt;
      std::string v = llvm::toString(r.Val.getInt(), 10);
      s.inputs.push_back({literal(c), -1, v});
      s.key += "|i" + c + "=" + v;
      continue;
    }
    std::string t;
    if (isTied(c)) {
      unsigned o = (unsigned)std::atoi(c.c_str());
      if (o >= a->getNumOutputs()) return std::nullopt;
      t = registerType(a->getOutputConstraint(o));
    } else {
      t = registerType(c);
    }
    if (t.empty()) return std::nullopt;
    s.inputs.push_back({literal(c), local(t, e), ""});
    s.key += "|i" + c + "=" + s.inits.back();
  }
  for (unsigned i = 0; i < a->getNumClobbers(); ++i) {
    s.clobbers.push_back(literal(a->getClobber(i)));
    s.key += "|c" + a->getClobber(i);
  }
  return s;
}

// The statements, in one kernel, each one's locals numbered after the statements before it.
std::string program(const std::vector<const Isolated *> &stmts) {
  std::string decls, body;
  size_t next = 0;
  for (const Isolated *s : stmts) {
    auto operands = [&](const std::vector<IsolatedOperand> &ops) {
      std::string l;
      for (size_t i = 0; i < ops.size(); ++i)
        l += (i ? ", " : " ") + ops[i].constraint + "(" +
             (ops[i].local < 0 ? ops[i].immediate : "r" + std::to_string(next + ops[i].local)) +
             ")";
      return l;
    };
    std::string line = "  asm volatile(" + s->asm_text;
    if (!s->outputs.empty() || !s->inputs.empty() || !s->clobbers.empty()) {
      line += " :" + operands(s->outputs);
      if (!s->inputs.empty() || !s->clobbers.empty()) line += " :" + operands(s->inputs);
      if (!s->clobbers.empty()) {
        line += " :";
        for (size_t i = 0; i < s->clobbers.size(); ++i) line += (i ? ", " : " ") + s->clobbers[i];
      }
    }
    body += line + ");\n";
    for (size_t i = 0; i < s->locals.size(); ++i)
      decls += "  " + s->locals[i] + " r" + std::to_string(next + i) + " = " + s->inits[i] + ";\n";
    next += s->locals.size();
  }
  return "__global__ void k() {\n" + decls + body + "}\n\nint main() { return 0; }\n";
}

// The walk from the kernels through their calls, in call order.
class Reach : public clang::RecursiveASTVisitor<Reach> {
 public:
  explicit Reach(clang::ASTContext &ctx) : ctx_(ctx) {}
  bool shouldVisitTemplateInstantiations() const { return true; }
  bool shouldVisitLambdaBody() const { return true; }

  void function(const clang::FunctionDecl *fd) {
    const clang::FunctionDecl *def = fd ? fd->getDefinition() : nullptr;
    if (!def || def->isDependentContext() || !seen_.insert(def).second) return;
    std::string saved = origin_;
    origin_ = def->getQualifiedNameAsString();
    if (auto *ctor = llvm::dyn_cast<clang::CXXConstructorDecl>(def))
      for (auto *init : ctor->inits()) TraverseStmt(init->getInit());
    TraverseStmt(def->getBody());
    origin_ = saved;
  }

  bool TraverseIfStmt(clang::IfStmt *s) {
    if (s && s->isConstexpr() && !s->getCond()->isValueDependent()) {
      bool taken = false;
      if (s->getCond()->EvaluateAsBooleanCondition(taken, ctx_)) {
        TraverseStmt(s->getInit());
        TraverseStmt(taken ? s->getThen() : s->getElse());
        return true;
      }
    }
    return clang::RecursiveASTVisitor<Reach>::TraverseIfStmt(s);
  }
  bool VisitCallExpr(clang::CallExpr *c) {
    function(c->getDirectCallee());
    return true;
  }
  bool VisitCXXConstructExpr(clang::CXXConstructExpr *c) {
    function(c->getConstructor());
    return true;
  }
  bool VisitGCCAsmStmt(clang::GCCAsmStmt *a) {
    if (auto s = isolate(a, ctx_, origin_))
      if (keys_.insert(s->key).second) stmts.push_back(std::move(*s));
    return true;
  }

  std::vector<Isolated> stmts;

 private:
  clang::ASTContext &ctx_;
  std::set<const clang::FunctionDecl *> seen_;
  std::set<std::string> keys_;
  std::string origin_;
};

// The kernels nvcc compiles: __global__ definitions that are no template pattern.
class Kernels : public clang::RecursiveASTVisitor<Kernels> {
 public:
  bool shouldVisitTemplateInstantiations() const { return true; }
  bool VisitFunctionDecl(clang::FunctionDecl *fd) {
    if (fd->hasAttr<clang::CUDAGlobalAttr>() && fd->doesThisDeclarationHaveABody() &&
        !fd->isDependentContext())
      found.push_back(fd);
    return true;
  }
  std::vector<clang::FunctionDecl *> found;
};

}  // namespace

std::vector<PassSite> isolateAsmSites(const ParsedSource &src) {
  std::vector<PassSite> out;
  for (auto &side : src.sides) {
    if (!side.device || !side.ast) continue;
    clang::ASTContext &ctx = side.ast->getASTContext();
    Kernels kernels;
    kernels.TraverseDecl(ctx.getTranslationUnitDecl());
    Reach reach(ctx);
    for (auto *k : kernels.found) reach.function(k);
    if (reach.stmts.empty()) return out;
    const unsigned tokens = countTokens(src.text);
    const Range whole{0, (unsigned)src.text.size()};
    auto offer = [&](const std::vector<const Isolated *> &stmts, const std::string &note) {
      std::string text = program(stmts);
      if (countTokens(text) < tokens)
        out.push_back(replaceSite("isolate-asm", src, whole, text, note, 0, 0));
    };
    std::vector<const Isolated *> all;
    for (auto &s : reach.stmts) all.push_back(&s);
    offer(all, "the " + std::to_string(all.size()) + " asm statements the kernels reach, alone");
    if (all.size() > 1)
      for (size_t i = 0; i < all.size() && i < kMaxAlone; ++i)
        offer({all[i]}, "the asm statement of " + all[i]->origin + " alone");
    for (auto &s : out) s.place = "isolate-asm";
  }
  return out;
}

}  // namespace wsr
