// fold-constant: a named integer constant is replaced by its value at every use, and its
// declaration goes. Two kinds:
//   - a const (or constexpr) variable of type int, unsigned, long, unsigned long, long long or
//     unsigned long long whose initializer Clang evaluates (`constexpr uint32_t OFF_EMPTY =
//     OFF_FULL + STAGES * 8;` -> `24u` at each use: the literal has the variable's own type,
//     so `std::min(n, NUM_TILES)` still deduces one type);
//   - an object-like `#define NAME 64` whose body is one number: NAME -> 64 wherever the text
//     names it (in code, in other #define bodies, in #if lines).
// It keeps the meaning, so it is almost always interesting; what it buys is lines: a kernel's
// constant chain (K_TILES, OFF_*, SMEM_*: 25 lines of the GEMM) otherwise goes only after
// simplify-expr has cut every use of it, late in a reduction. One site folds every constant at
// once (level 0); one site per constant follows (level 1), for when some fold breaks the parse.
// Skipped: a variable whose address is taken, a macro named in #ifdef / #ifndef / #undef /
// defined(), and anything one parse (host or device) does not see with the same value.
#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/ASTUnit.h>
#include <clang/Lex/Lexer.h>
#include <clang/Lex/MacroInfo.h>
#include <clang/Lex/Preprocessor.h>

#include <algorithm>
#include <map>
#include <set>

namespace wsr {
namespace {

struct Constant {
  std::string name;
  std::string value;  // the literal that replaces each use
  Range decl;         // the declaration, widened to its lines
  std::set<std::pair<unsigned, unsigned>> uses;
};

struct Uses : clang::RecursiveASTVisitor<Uses> {
  const clang::ASTContext &ctx;
  std::map<const clang::VarDecl *, std::vector<std::pair<unsigned, unsigned>>> uses;
  std::set<const clang::VarDecl *> bad;  // a use that a literal cannot stand for
  explicit Uses(const clang::ASTContext &c) : ctx(c) {}
  bool shouldVisitTemplateInstantiations() const { return true; }

  bool VisitUnaryOperator(clang::UnaryOperator *u) {
    if (u->getOpcode() == clang::UO_AddrOf)
      if (auto *d = llvm::dyn_cast<clang::DeclRefExpr>(u->getSubExpr()->IgnoreParens()))
        if (auto *v = llvm::dyn_cast<clang::VarDecl>(d->getDecl()))
          bad.insert(v->getCanonicalDecl());
    return true;
  }
  bool VisitDeclRefExpr(clang::DeclRefExpr *e) {
    auto *v = llvm::dyn_cast<clang::VarDecl>(e->getDecl());
    if (!v) return true;
    v = v->getCanonicalDecl();
    auto &sm = ctx.getSourceManager();
    clang::SourceLocation loc = e->getLocation();
    if (loc.isMacroID()) loc = sm.getSpellingLoc(loc);  // named in a #define's body
    if (!isUserFileLoc(ctx, loc)) {
      bad.insert(v);
      return true;
    }
    unsigned off = sm.getFileOffset(loc);
    unsigned len = clang::Lexer::MeasureTokenLength(loc, sm, ctx.getLangOpts());
    uses[v].push_back({off, off + len});
    return true;
  }
};

// Constant variables of one parse, keyed by their declaration's first byte.
void variables(clang::ASTContext &ctx, const ParsedSource &src, std::map<unsigned, Constant> &out) {
  Uses u(ctx);
  std::vector<clang::VarDecl *> vars;
  std::map<const clang::VarDecl *, const clang::DeclStmt *>
      stmtOf;  // a local's declaration statement
  struct Vars : clang::RecursiveASTVisitor<Vars> {
    std::vector<clang::VarDecl *> *out;
    std::map<const clang::VarDecl *, const clang::DeclStmt *> *stmtOf;
    bool VisitVarDecl(clang::VarDecl *v) {
      out->push_back(v);
      return true;
    }
    bool VisitDeclStmt(clang::DeclStmt *ds) {
      if (ds->isSingleDecl())
        if (auto *v = llvm::dyn_cast<clang::VarDecl>(ds->getSingleDecl())) (*stmtOf)[v] = ds;
      return true;
    }
  } collect;
  collect.out = &vars;
  collect.stmtOf = &stmtOf;
  forEachMainFileDecl(ctx, [&](clang::Decl *d) {
    collect.TraverseDecl(d);
    u.TraverseDecl(d);
  });
  for (auto *v : vars) {
    if (llvm::isa<clang::ParmVarDecl>(v) || v->isInvalidDecl() || !v->getInit() ||
        v->hasExternalStorage())
      continue;
    if (!v->getType().isConstQualified() || !v->getType()->isIntegerType() ||
        v->getType()->isDependentType())
      continue;
    if (v->getPreviousDecl() || u.bad.count(v->getCanonicalDecl()) ||
        v->getInit()->isValueDependent())
      continue;
    const clang::APValue *val = v->evaluateValue();
    if (!val || !val->isInt()) continue;
    std::string lit = integerLiteralOf(v->getType(), val->getInt());
    if (lit.empty()) continue;
    // The whole declaration statement, alone in it (`const int a = 1, b = 2;` is left alone).
    std::optional<Range> r;
    if (v->isLocalVarDecl()) {
      auto ds = stmtOf.find(v);
      if (ds == stmtOf.end()) continue;  // one of several in a statement, or a condition's
      r = mainFileRange(ctx, ds->second->getSourceRange());
    } else {
      r = mainFileRangeWithSemi(ctx, v->getSourceRange());
    }
    if (!r) continue;
    if (r->end <= r->begin || src.text.substr(r->begin, r->size()).find(',') != std::string::npos) {
      // a comma outside the initializer may declare a second name: look closer
      auto ir = mainFileRange(ctx, v->getInit()->getSourceRange());
      if (!ir) continue;
      std::string outside = src.text.substr(r->begin, ir->begin - r->begin) +
                            src.text.substr(ir->end, r->end - ir->end);
      if (outside.find(',') != std::string::npos) continue;
    }
    Constant c;
    c.name = v->getNameAsString();
    c.value = lit;
    c.decl = widenToLines(src.text, *r);
    auto it = u.uses.find(v->getCanonicalDecl());
    if (it != u.uses.end()) c.uses.insert(it->second.begin(), it->second.end());
    out.emplace(c.decl.begin, std::move(c));
  }
}

// `#define NAME <number>` of the user's file, with every place the text names NAME.
void macros(clang::ASTUnit &ast, const ParsedSource &src, std::map<unsigned, Constant> &out) {
  auto &pp = ast.getPreprocessor();
  auto &sm = ast.getSourceManager();
  auto &ctx = ast.getASTContext();
  const std::string &t = src.text;
  std::map<std::string, Constant> found;
  for (auto it = pp.macro_begin(); it != pp.macro_end(); ++it) {
    auto *md = pp.getLocalMacroDirective(it->first);
    if (!md || md->getPrevious()) continue;  // redefined or undefined
    auto *mi = md->getMacroInfo();
    if (!mi || mi->isBuiltinMacro() || mi->isFunctionLike() || mi->getNumTokens() != 1) continue;
    const clang::Token &tok = mi->getReplacementToken(0);
    if (!tok.is(clang::tok::numeric_constant) || !isUserFileLoc(ctx, tok.getLocation())) continue;
    unsigned off = sm.getFileOffset(tok.getLocation());
    if (off + tok.getLength() > t.size()) continue;
    std::string value = t.substr(off, tok.getLength());
    if (value.find_first_of(".eEpP") != std::string::npos && value.rfind("0x", 0) != 0)
      continue;  // a float
    unsigned b = sm.getFileOffset(mi->getDefinitionLoc()),
             e = sm.getFileOffset(mi->getDefinitionEndLoc());
    while (b > 0 && t[b - 1] != '\n') --b;
    while (e < t.size() && t[e] != '\n') ++e;
    if (e < t.size()) ++e;
    Constant c;
    c.name = it->first->getName().str();
    c.value = value;
    c.decl = Range{b, e};
    found.emplace(c.name, std::move(c));
  }
  if (found.empty()) return;
  // Every identifier token of the text (comments skipped); the directive it is in, if any.
  std::set<std::string> refused;
  std::string directive;  // "" outside a directive line
  bool hash = false, name_next = false;
  for (auto &tok : rawTokens(t, ctx)) {
    if (tok.line_start) directive.clear();
    if (tok.kind == clang::tok::hash && tok.line_start) {
      hash = true;
      continue;
    }
    if (tok.kind != clang::tok::raw_identifier) {
      hash = false;
      continue;
    }
    const std::string &id = tok.id;
    if (hash) {
      directive = id;
      hash = false;
      name_next = directive == "define";
      continue;
    }
    auto f = found.find(id);
    if (name_next) {  // the name a #define defines: its own line, not a use
      name_next = false;
      continue;
    }
    if (f == found.end()) {
      if (id == "defined") directive = "defined";
      continue;
    }
    if (directive == "ifdef" || directive == "ifndef" || directive == "undef" ||
        directive == "defined") {
      refused.insert(id);
      continue;
    }
    f->second.uses.insert({tok.begin, tok.end});
  }
  for (auto &[name, c] : found)
    if (!refused.count(name)) out.emplace(c.decl.begin, std::move(c));
}

}  // namespace

std::vector<PassSite> foldConstantSites(const ParsedSource &src) {
  // The constants every parse agrees on (the same declaration, the same value); their uses from
  // every parse (code under `#ifdef __CUDA_ARCH__` is seen by one side only).
  std::map<unsigned, Constant> agreed;
  bool first = true;
  const ParsedSide *one = nullptr;
  for (auto &side : src.sides) {
    if (!side.ast) continue;
    if (!one) one = &side;
    std::map<unsigned, Constant> mine;
    variables(side.ast->getASTContext(), src, mine);
    if (first) {
      agreed = std::move(mine);
      first = false;
      continue;
    }
    for (auto it = agreed.begin(); it != agreed.end();) {
      auto m = mine.find(it->first);
      if (m == mine.end() || m->second.value != it->second.value ||
          m->second.decl.end != it->second.decl.end) {
        it = agreed.erase(it);
        continue;
      }
      it->second.uses.insert(m->second.uses.begin(), m->second.uses.end());
      ++it;
    }
  }
  if (one)
    macros(*one->ast, src, agreed);  // a macro's uses are the text's: the same for every side
  auto inside = [](std::pair<unsigned, unsigned> u, Range r) {
    return u.first >= r.begin && u.second <= r.end;
  };
  std::vector<PassSite> sites;
  auto siteOf = [&](const std::vector<const Constant *> &cs, std::string note, int level) {
    PassSite s;
    s.pass = "fold-constant";
    s.level = level;
    s.note = std::move(note);
    std::set<std::pair<unsigned, unsigned>> done;
    for (auto *c : cs) {
      s.edits.push_back(Edit{c->decl.begin, c->decl.size(), ""});
      for (auto &u : c->uses) {
        bool gone = false;  // in a declaration this site deletes
        for (auto *d : cs) gone = gone || inside(u, d->decl);
        if (gone || !done.insert(u).second) continue;
        s.edits.push_back(Edit{u.first, u.second - u.first, c->value});
      }
    }
    if (sealSite(s, src.text))
      sites.push_back(std::move(s));  // not: a use inside a deleted line of another kind
  };
  std::vector<const Constant *> all;
  for (auto &[b, c] : agreed) all.push_back(&c);
  if (all.size() > 1)
    siteOf(all, "fold the " + std::to_string(all.size()) + " constants into their uses", 0);
  for (auto *c : all)
    siteOf({c},
           "fold " + c->name + " (" + c->value + ") into its " + std::to_string(c->uses.size()) +
               " use(s)",
           all.size() > 1);
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
