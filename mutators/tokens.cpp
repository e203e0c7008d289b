// tokens: the language-blind fallback below lines (C-Reduce's token passes): delete one
// token, or a whole balanced (...), [...] or {...} group from its opening bracket (a lone
// bracket never parses). Tokens come from Clang's raw lexer over the main file, so
// literals and comments are never cut in half; preprocessor lines are left to lines and
// remove-decl. The level is the bracket depth: whole groups go before what is inside them.
// Two tokens are never offered alone: an inline asm's `volatile` and a "memory" clobber. The
// emulator runs every asm statement where it stands, but nvcc may hoist, merge or delete an asm
// with outputs that is not volatile, and move memory accesses across one without the clobber. (On
// the H200 a reduction took both from the mbarrier.try_wait loop and the GPU
// passed its result; another edit proved to be the cause, but these two are out of the
// emulator's reach all the same.)
#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/Frontend/ASTUnit.h>

#include <cctype>

namespace wsr {

std::vector<PassSite> tokenSites(const ParsedSource &src) {
  const ParsedSide *side = nullptr;
  for (auto &s : src.sides)
    if (s.ast) {
      side = &s;
      break;
    }
  if (!side) return {};
  std::vector<RawToken> toks;
  bool directive = false;
  for (auto &t : rawTokens(src.text, side->ast->getASTContext())) {
    if (t.line_start) directive = t.kind == clang::tok::hash;
    if (!directive) toks.push_back(std::move(t));
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
  auto kept = [&](size_t i) {
    if (text.compare(toks[i].begin, toks[i].end - toks[i].begin, "\"memory\"") == 0) return true;
    if (i == 0 || (toks[i].id != "volatile" && toks[i].id != "__volatile__")) return false;
    const std::string &before = toks[i - 1].id;
    return before == "asm" || before == "__asm__" || before == "__asm";
  };
  std::vector<PassSite> sites;
  for (size_t i = 0; i < toks.size(); ++i) {
    if (kept(i)) continue;
    auto k = toks[i].kind;
    bool opening =
        k == clang::tok::l_paren || k == clang::tok::l_square || k == clang::tok::l_brace;
    bool closing =
        k == clang::tok::r_paren || k == clang::tok::r_square || k == clang::tok::r_brace;
    if (closing || (opening && match[i] < 0)) continue;
    Range r{toks[i].begin, opening ? toks[(size_t)match[i]].end : toks[i].end};
    // Two tokens that would touch once this one is gone keep a blank between them.
    bool before = r.begin > 0 && !std::isspace((unsigned char)text[r.begin - 1]);
    bool after = r.end < text.size() && !std::isspace((unsigned char)text[r.end]);
    std::string what =
        opening ? "remove group " + text.substr(r.begin, 1) + "..." + text.substr(r.end - 1, 1)
                : "remove token `" + text.substr(r.begin, r.size()) + "`";
    sites.push_back(replaceSite("tokens", src, r, before && after ? " " : "",
                                what + " at line " + std::to_string(lineOf(text, r.begin)),
                                depth[i]));
  }
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
