// remove-decl: declarations nothing uses, each a site: `#include` lines, `#define`s never
// expanded (with the `#ifndef NAME` / `#endif` that guard a -D default), types (records,
// enums, typedefs and usings) no declaration names, and variables (local or global) no
// expression references. Only what every parse (host and device) finds unused is offered.
// An #include line is offered when no declaration the program names (a function, a variable,
// an enumerator, a type, a template) comes from it or from what it includes; a header used only
// for its macros is offered too, and the parse check rejects it. (Offered unconditionally, the
// include lines were 72 of the pass's 96 tests on the H200 GEMM, all parse failures.) <cstdint>
// (and its kin) stays while the program names a fixed-width integer type: see namesFixedWidthTypes.
#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/TypeLoc.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/ASTUnit.h>
#include <clang/Lex/Lexer.h>
#include <clang/Lex/MacroInfo.h>
#include <clang/Lex/Preprocessor.h>

#include <algorithm>
#include <regex>
#include <set>

namespace wsr {
namespace {

// Types named anywhere in the main file's declarations (Decl::isReferenced is not set
// for every use of a type name, so the pass looks for itself).
struct TypeUses : clang::RecursiveASTVisitor<TypeUses> {
  std::set<const clang::Decl *> used;
  bool VisitTagTypeLoc(clang::TagTypeLoc tl) {
    if (!tl.isDefinition()) used.insert(tl.getDecl()->getCanonicalDecl());
    return true;
  }
  bool VisitTypedefTypeLoc(clang::TypedefTypeLoc tl) {
    used.insert(tl.getDecl()->getCanonicalDecl());
    return true;
  }
  bool VisitUsingTypeLoc(clang::UsingTypeLoc tl) {
    used.insert(tl.getDecl()->getCanonicalDecl());
    return true;
  }
  bool VisitDeclRefExpr(clang::DeclRefExpr *e) {  // an enumerator names its enum
    if (auto *ec = llvm::dyn_cast<clang::EnumConstantDecl>(e->getDecl()))
      used.insert(llvm::cast<clang::Decl>(ec->getDeclContext())->getCanonicalDecl());
    return true;
  }
};

struct Collector : clang::RecursiveASTVisitor<Collector> {
  clang::ASTContext &ctx;
  const ParsedSource &src;
  const std::set<const clang::Decl *> &typeUses;
  std::vector<PassSite> &out;
  Collector(clang::ASTContext &c, const ParsedSource &s, const std::set<const clang::Decl *> &t,
            std::vector<PassSite> &o)
      : ctx(c), src(s), typeUses(t), out(o) {}

  bool unused(const clang::Decl *d) {
    if (d->isImplicit() || d->isReferenced() || d->isUsed(false)) return false;
    if (llvm::isa<clang::TypeDecl>(d) && typeUses.count(d->getCanonicalDecl())) return false;
    if (auto *ed = llvm::dyn_cast<clang::EnumDecl>(d))
      for (auto *e : ed->enumerators())
        if (e->isReferenced()) return false;
    return true;
  }
  // The declaration's bytes with its own `;`, widened to whole lines.
  std::optional<Range> declRange(const clang::Decl *d) {
    auto r = mainFileRange(ctx, d->getSourceRange());
    if (!r) return r;
    unsigned i = r->end;
    while (i < src.text.size() && (src.text[i] == ' ' || src.text[i] == '\t')) ++i;
    if (i < src.text.size() && src.text[i] == ';') r->end = i + 1;
    return widenToLines(src.text, *r);
  }
  void offer(const clang::Decl *d, Range r, const char *what) {
    std::string name;
    if (auto *nd = llvm::dyn_cast<clang::NamedDecl>(d)) name = nd->getNameAsString();
    out.push_back(replaceSite("remove-decl", src, r, "",
                              std::string("remove unused ") + what + " " + name + " at line " +
                                  std::to_string(lineOf(src.text, r.begin))));
  }
  // A file- or namespace-scope declaration; several declared in one statement
  // (`struct S {...} s;`, `int a, b;`) share a begin and are left alone.
  void scopeDecls(clang::DeclContext *dc) {
    std::vector<clang::Decl *> ds(dc->decls_begin(), dc->decls_end());
    for (size_t i = 0; i < ds.size(); ++i) {
      clang::Decl *d = ds[i];
      if (auto *ns = llvm::dyn_cast<clang::NamespaceDecl>(d)) {
        scopeDecls(ns);
        continue;
      }
      if (d->isImplicit() || !isMainFileLoc(ctx, d->getBeginLoc())) continue;
      auto shares = [&](size_t j) {
        return j < ds.size() && ds[j]->getBeginLoc() == d->getBeginLoc();
      };
      if (shares(i + 1) || (i > 0 && shares(i - 1))) continue;
      const char *what = nullptr;
      if (auto *v = llvm::dyn_cast<clang::VarDecl>(d)) {
        if (!llvm::isa<clang::ParmVarDecl>(v) && !v->getDescribedVarTemplate()) what = "global";
      } else if (auto *t = llvm::dyn_cast<clang::TagDecl>(d)) {
        if (!(llvm::isa<clang::CXXRecordDecl>(t) &&
              llvm::cast<clang::CXXRecordDecl>(t)->getDescribedClassTemplate()))
          what = llvm::isa<clang::EnumDecl>(t) ? "enum" : "type";
      } else if (llvm::isa<clang::TypedefNameDecl>(d)) {
        what = "type alias";
      } else if (llvm::isa<clang::StaticAssertDecl>(d)) {
        // A check, not code: it only keeps the shape pass inside the kernel's valid shapes (it
        // runs first, with them) and then holds the constants it names.
        if (auto r = declRange(d))
          out.push_back(replaceSite(
              "remove-decl", src, *r, "",
              "remove static_assert at line " + std::to_string(lineOf(src.text, r->begin))));
        continue;
      }
      if (!what || !unused(d)) continue;
      if (auto r = declRange(d)) offer(d, *r, what);
    }
  }
  // A local variable declared alone in a statement of a block.
  bool VisitCompoundStmt(clang::CompoundStmt *cs) {
    for (auto *st : cs->body()) {
      auto *ds = llvm::dyn_cast<clang::DeclStmt>(st);
      if (!ds || !ds->isSingleDecl()) continue;
      auto *v = llvm::dyn_cast<clang::VarDecl>(ds->getSingleDecl());
      if (!v || llvm::isa<clang::DecompositionDecl>(v) || !unused(v)) continue;
      if (auto r = mainFileRange(ctx, ds->getSourceRange()))
        offer(v, widenToLines(src.text, *r), "variable");
    }
    return true;
  }
};

}  // namespace

void macroSites(clang::ASTUnit &ast, const ParsedSource &src, const char *pass,
                std::vector<PassSite> &out) {
  auto &pp = ast.getPreprocessor();
  auto &sm = ast.getSourceManager();
  const std::string &t = src.text;
  auto lineStart = [&](unsigned o) {
    while (o > 0 && t[o - 1] != '\n') --o;
    return o;
  };
  auto lineEnd = [&](unsigned o) {  // just past the '\n', over backslash continuations
    while (o < t.size() && t[o] != '\n') ++o;
    while (o < t.size() && o > 0 && t[o - 1] == '\\' && t[o] == '\n') {
      ++o;
      while (o < t.size() && t[o] != '\n') ++o;
    }
    return o < t.size() ? o + 1 : o;
  };
  auto lineText = [&](unsigned b) {
    unsigned e = b;
    while (e < t.size() && t[e] != '\n') ++e;
    std::string s = t.substr(b, e - b);
    auto c = s.find("//");
    if (c != std::string::npos) s.resize(c);
    std::string n;  // blanks squeezed: "# ifndef  X" reads "#ifndef X"
    for (char ch : s)
      if (ch != ' ' && ch != '\t')
        n += ch;
      else if (!n.empty() && n.back() != ' ' && n != "#")
        n += ' ';
    while (!n.empty() && n.back() == ' ') n.pop_back();
    return n;
  };
  for (auto it = pp.macro_begin(); it != pp.macro_end(); ++it) {
    auto *md = pp.getLocalMacroDirective(it->first);
    if (!md || md->getPrevious()) continue;  // redefined or undefined: leave it
    auto *mi = md->getMacroInfo();
    if (!mi || mi->isBuiltinMacro() || mi->isUsed()) continue;
    auto loc = mi->getDefinitionLoc();
    if (!isUserFileLoc(ast.getASTContext(), loc)) continue;
    unsigned b = lineStart(sm.getFileOffset(loc));
    unsigned e = lineEnd(sm.getFileOffset(mi->getDefinitionEndLoc()));
    std::string name = it->first->getName().str();
    if (b > 0) {
      unsigned pb = lineStart(b - 1);
      if (lineText(pb) == "#ifndef " + name && e < t.size() && lineText(e) == "#endif") {
        b = pb;
        e = lineEnd(e);
      }
    }
    out.push_back(
        replaceSite(pass, src, Range{b, e}, "",
                    "remove unused macro " + name + " at line " + std::to_string(lineOf(t, b))));
  }
}

namespace {

// The main-file offsets of the #include directives through which the program's references reach
// their declarations.
struct IncludeUses : clang::RecursiveASTVisitor<IncludeUses> {
  clang::ASTContext &ctx;
  std::set<unsigned> &used;
  IncludeUses(clang::ASTContext &c, std::set<unsigned> &u) : ctx(c), used(u) {}
  void from(const clang::Decl *d) {
    if (!d) return;
    auto &sm = ctx.getSourceManager();
    clang::FileID fid = sm.getFileID(sm.getExpansionLoc(d->getLocation()));
    for (int guard = 0; guard < 64 && fid.isValid() && fid != sm.getMainFileID(); ++guard) {
      clang::SourceLocation inc = sm.getIncludeLoc(fid);
      if (inc.isInvalid()) return;
      inc = sm.getExpansionLoc(inc);
      if (sm.getFileID(inc) == sm.getMainFileID() ||
          isPreambleCopyOfMainFile(sm, sm.getFileID(inc))) {
        used.insert(sm.getFileOffset(inc));
        return;
      }
      fid = sm.getFileID(inc);
    }
  }
  bool VisitDeclRefExpr(clang::DeclRefExpr *e) {
    from(e->getDecl());
    return true;
  }
  bool VisitMemberExpr(clang::MemberExpr *e) {
    from(e->getMemberDecl());
    return true;
  }
  bool VisitCXXConstructExpr(clang::CXXConstructExpr *e) {
    from(e->getConstructor());
    return true;
  }
  bool VisitOverloadExpr(clang::OverloadExpr *e) {
    for (auto *d : e->decls()) from(d);
    return true;
  }
  bool VisitTagTypeLoc(clang::TagTypeLoc tl) {
    from(tl.getDecl());
    return true;
  }
  bool VisitTypedefTypeLoc(clang::TypedefTypeLoc tl) {
    from(tl.getDecl());
    return true;
  }
  bool VisitUsingTypeLoc(clang::UsingTypeLoc tl) {
    from(tl.getDecl());
    return true;
  }
  bool VisitTemplateSpecializationTypeLoc(clang::TemplateSpecializationTypeLoc tl) {
    if (auto *td = tl.getTypePtr()->getTemplateName().getAsTemplateDecl()) from(td);
    return true;
  }
};

// Clang's CUDA headers declare uint64_t & co. before the program's own #include <cstdint>, so
// that include looks unused to IncludeUses and the parse check passes without it; nvcc's implicit
// headers do not declare them ("identifier uint64_t is undefined": the GEMM hang's reduced
// programs built only through the watchdog's instrumented copy). Kept while the text names one.
static bool namesFixedWidthTypes(const std::string &t) {
  static const std::regex re = [] {
    std::string names;
    for (auto &[name, builtin] : fixedWidthTypes()) names += (names.empty() ? "" : "|") + name;
    return std::regex("\\b(" + names + ")\\b");
  }();
  return std::regex_search(t, re);
}
static bool isStdintHeader(const std::string &line) {
  for (const char *h : {"<cstdint>", "<stdint.h>", "<cinttypes>", "<inttypes.h>"})
    if (line.find(h) != std::string::npos) return true;
  return false;
}

// Each `#include` line of the main file, found by the raw lexer, that none of the offsets in
// `used` falls in.
void includeSites(clang::ASTUnit &ast, const ParsedSource &src, const std::set<unsigned> &used,
                  std::vector<PassSite> &out) {
  auto &sm = ast.getSourceManager();
  auto fid = sm.getMainFileID();
  clang::Lexer lex(fid, sm.getBufferOrFake(fid), sm, ast.getLangOpts());
  clang::Token tok;
  bool hash = false;
  for (;;) {
    lex.LexFromRawLexer(tok);
    if (tok.is(clang::tok::eof)) break;
    if (tok.is(clang::tok::hash) && tok.isAtStartOfLine()) {
      hash = true;
      continue;
    }
    if (hash && tok.is(clang::tok::raw_identifier) &&
        (tok.getRawIdentifier() == "include" || tok.getRawIdentifier() == "include_next")) {
      unsigned o = sm.getFileOffset(tok.getLocation());
      unsigned b = o, e = o;
      while (b > 0 && src.text[b - 1] != '\n') --b;
      while (e < src.text.size() && src.text[e] != '\n') ++e;
      if (e < src.text.size()) ++e;
      std::string line = src.text.substr(b, e - b);
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      if (auto u = used.lower_bound(b); u != used.end() && *u < e) {
        hash = false;
        continue;
      }
      if (namesFixedWidthTypes(src.text) && isStdintHeader(line)) {
        hash = false;
        continue;
      }
      out.push_back(replaceSite("remove-decl", src, Range{b, e}, "", "remove `" + line + "`"));
    }
    hash = false;
  }
}

}  // namespace

std::vector<PassSite> removeDeclSites(const ParsedSource &src) {
  std::set<unsigned> includes_used;  // by either side
  std::vector<PassSite> sites =
      sitesEverySideOffers(src, [&](const ParsedSide &side, std::vector<PassSite> &mine) {
        auto &ctx = side.ast->getASTContext();
        TypeUses uses;
        forEachMainFileDecl(ctx, [&](clang::Decl *d) { uses.TraverseDecl(d); });
        IncludeUses iu(ctx, includes_used);
        forEachMainFileDecl(ctx, [&](clang::Decl *d) { iu.TraverseDecl(d); });
        Collector c(ctx, src, uses.used, mine);
        c.scopeDecls(ctx.getTranslationUnitDecl());
        forEachMainFileDecl(ctx, [&](clang::Decl *d) { c.TraverseDecl(d); });
        macroSites(*side.ast, src, "remove-decl", mine);
      });
  for (auto &side : src.sides)
    if (side.ast) {
      includeSites(*side.ast, src, includes_used, sites);
      break;
    }
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
