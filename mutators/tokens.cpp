// tokens: the language-blind fallback below lines (C-Reduce's token passes): delete one
// token, or a whole balanced (...), [...] or {...} group from its opening bracket (a lone
// bracket never parses). Tokens come from Clang's raw lexer over the main file, so
// literals and comments are never cut in half; preprocessor lines are left to lines and
// remove-decl. The level is the bracket depth: whole groups go before what is inside them.
// Two tokens are never offered alone: an inline asm's `volatile` and a "memory" clobber. The
// emulator runs every asm statement where it stands, but nvcc may hoist, merge or delete an asm
// with outputs that is not volatile, and move memory accesses across one without the clobber: on
// the H200 (session 14, call d) a reduction judged on the emulator took `volatile` from the
// mbarrier.try_wait loop's asm and "memory" from its clobbers, and the GPU then passed the program
// the emulator still saw hang.
#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/ASTUnit.h>
#include <clang/Lex/Lexer.h>

#include <cctype>

namespace wsr {

std::vector<PassSite> tokenSites(const ParsedSource &src) {
  const ParsedSide *side = nullptr;
  for (auto &s : src.sides)
    if (s.ast) { side = &s; break; }
  if (!side) return {};
  auto &sm = side->ast->getSourceManager();
  auto fid = sm.getMainFileID();
  clang::Lexer lex(fid, sm.getBufferOrFake(fid), sm, side->ast->getLangOpts());

  struct Tok { unsigned begin, end; clang::tok::TokenKind kind; };
  std::vector<Tok> toks;
  clang::Token t;
  bool directive = false;
  for (;;) {
    lex.LexFromRawLexer(t);
    if (t.is(clang::tok::eof)) break;
    if (t.isAtStartOfLine()) directive = t.is(clang::tok::hash);
    if (directive) continue;
    unsigned b = sm.getFileOffset(t.getLocation());
    toks.push_back({b, b + t.getLength(), t.getKind()});
  }

  // Matching brackets: match[i] is the index of the closing token for an opening one.
  std::vector<int> match(toks.size(), -1), depth(toks.size(), 0);
  std::vector<size_t> open;
  auto closes = [](clang::tok::TokenKind o, clang::tok::TokenKind c) {
    return (o == clang::tok::l_paren && c == clang::tok::r_paren) ||
           (o == clang::tok::l_square && c == clang::tok::r_square) ||
           (o == clang::tok::l_brace && c == clang::tok::r_brace);
  };
  for (size_t i = 0; i < toks.size(); ++i) {
    auto k = toks[i].kind;
    depth[i] = (int)open.size();
    if (k == clang::tok::l_paren || k == clang::tok::l_square || k == clang::tok::l_brace) {
      open.push_back(i);
    } else if (k == clang::tok::r_paren || k == clang::tok::r_square || k == clang::tok::r_brace) {
      if (!open.empty() && closes(toks[open.back()].kind, k)) {
        match[open.back()] = (int)i;
        open.pop_back();
        depth[i] = (int)open.size();
      }
    }
  }

  const std::string &text = src.text;
  auto spelled = [&](size_t i) { return llvm::StringRef(text).substr(toks[i].begin, toks[i].end - toks[i].begin); };
  auto kept = [&](size_t i) {
    llvm::StringRef s = spelled(i);
    if (s == "\"memory\"") return true;
    return (s == "volatile" || s == "__volatile__") && i > 0 &&
           (spelled(i - 1) == "asm" || spelled(i - 1) == "__asm__" || spelled(i - 1) == "__asm");
  };
  std::vector<PassSite> sites;
  for (size_t i = 0; i < toks.size(); ++i) {
    if (kept(i)) continue;
    auto k = toks[i].kind;
    bool opening = k == clang::tok::l_paren || k == clang::tok::l_square || k == clang::tok::l_brace;
    bool closing = k == clang::tok::r_paren || k == clang::tok::r_square || k == clang::tok::r_brace;
    if (closing || (opening && match[i] < 0)) continue;
    Range r{toks[i].begin, opening ? toks[(size_t)match[i]].end : toks[i].end};
    // Two tokens that would touch once this one is gone keep a blank between them.
    bool before = r.begin > 0 && !std::isspace((unsigned char)text[r.begin - 1]);
    bool after = r.end < text.size() && !std::isspace((unsigned char)text[r.end]);
    std::string what = opening ? "remove group " + text.substr(r.begin, 1) + "..." + text.substr(r.end - 1, 1)
                               : "remove token `" + text.substr(r.begin, r.size()) + "`";
    sites.push_back(replaceSite("tokens", src, r, before && after ? " " : "",
                                what + " at line " + std::to_string(lineOf(text, r.begin)), depth[i]));
  }
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
