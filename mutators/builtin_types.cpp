// builtin-types: the fixed-width integer types spelled as the builtin types they are where nvcc
// builds (Linux, LP64, host and device alike): uint32_t -> unsigned, uint64_t -> unsigned long,
// int64_t -> long, ... Every use at once, one site, so that remove-decl can then take
// `#include <cstdint>`, which nvcc needs while the program names one of them: that include was a
// line of every H200 result of the GEMM hang (its 40-line best was 41 with it). A two-word spelling
// cannot be a functional cast (`unsigned long(x)`): a program that casts so is not offered it.
#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/Frontend/ASTUnit.h>

#include <map>

namespace wsr {

std::vector<PassSite> builtinTypeSites(const ParsedSource &src) {
  const clang::ASTContext *ctx = nullptr;
  for (auto &s : src.sides)
    if (s.ast) {
      ctx = &s.ast->getASTContext();
      break;
    }
  if (!ctx) return {};
  const auto &spelled = fixedWidthTypes();
  auto toks = rawTokens(src.text, *ctx);
  PassSite site;
  site.pass = "builtin-types";
  std::map<std::string, int> count;
  for (size_t i = 0; i < toks.size(); ++i) {
    auto it = spelled.find(toks[i].id);
    if (it == spelled.end()) continue;
    unsigned b = toks[i].begin;
    if (i >= 1 && toks[i - 1].kind == clang::tok::coloncolon) {
      if (i >= 2 && toks[i - 2].id == "std")
        b = toks[i - 2].begin;  // std::uint32_t: the qualifier goes too
      else
        return {};  // ::uint32_t, ns::uint32_t: left alone
    }
    bool two_words = it->second.find(' ') != std::string::npos;
    if (two_words && i + 1 < toks.size() &&
        (toks[i + 1].kind == clang::tok::l_paren || toks[i + 1].kind == clang::tok::l_brace))
      return {};
    site.edits.push_back(Edit{b, toks[i].end - b, it->second});
    ++count[it->first];
  }
  if (site.edits.empty()) return {};
  std::string what;
  for (auto &[name, n] : count)
    what += (what.empty() ? "" : ", ") + name + " -> " + spelled.at(name);
  site.note = "spell " + what;
  if (!sealSite(site, src.text)) return {};
  return {site};
}

}  // namespace wsr
