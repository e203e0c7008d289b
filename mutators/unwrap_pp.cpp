// unwrap-pp: a preprocessor conditional (#if / #ifdef / #ifndef ... #elif / #else ... #endif)
// becomes one of its arms without the directives, or goes away. The kernels' `-D`-overridable
// defaults are `#ifndef GEMM_M / #define GEMM_M 4096 / #endif`: three lines per knob that no
// other pass can take (a line pass that drops the #ifndef alone or the #endif alone breaks the
// file), so a reduction kept them to the end. Read from the text, not the AST: the parse sees
// only the arm that is active, and the directives are not in it. Outer conditionals first.
#include "pass.h"

#include <cctype>

namespace wsr {
namespace {

struct Directive {
  unsigned begin, end;  // the directive's whole line(s), newline included
  std::string kind;     // if, ifdef, ifndef, elif, elifdef, elifndef, else, endif
};

// The conditional directives of `t`, line by line (a backslash continues a line).
std::vector<Directive> directives(const std::string &t) {
  std::vector<Directive> out;
  unsigned i = 0;
  while (i < t.size()) {
    unsigned b = i, e = i;
    for (;;) {  // the logical line
      while (e < t.size() && t[e] != '\n') ++e;
      if (e > b && e < t.size() && t[e - 1] == '\\') {
        ++e;
        continue;
      }
      break;
    }
    unsigned end = e < t.size() ? e + 1 : e;
    unsigned p = b;
    while (p < e && (t[p] == ' ' || t[p] == '\t')) ++p;
    if (p < e && t[p] == '#') {
      ++p;
      while (p < e && (t[p] == ' ' || t[p] == '\t')) ++p;
      unsigned w = p;
      while (w < e && std::isalpha((unsigned char)t[w])) ++w;
      std::string word = t.substr(p, w - p);
      if (word == "if" || word == "ifdef" || word == "ifndef" || word == "elif" ||
          word == "elifdef" || word == "elifndef" || word == "else" || word == "endif")
        out.push_back({b, end, word});
    }
    i = end;
  }
  return out;
}

}  // namespace

std::vector<PassSite> unwrapPpSites(const ParsedSource &src) {
  const std::string &t = src.text;
  auto ds = directives(t);
  std::vector<PassSite> sites;
  // Match each #if with its #elif/#else/#endif; an unbalanced file offers nothing.
  std::vector<std::vector<size_t>> open;  // per open conditional: its directives so far
  int group = 0;
  for (size_t i = 0; i < ds.size(); ++i) {
    auto &k = ds[i].kind;
    if (k == "if" || k == "ifdef" || k == "ifndef") {
      open.push_back({i});
    } else if (k == "endif") {
      if (open.empty()) return {};
      auto parts = open.back();
      open.pop_back();
      parts.push_back(i);
      Range whole{ds[parts.front()].begin, ds[parts.back()].end};
      int level = (int)open.size();
      unsigned line = lineOf(t, whole.begin);
      std::string place;  // unkeyed: the conditional is looked at again in any new form
      auto first =
          t.substr(ds[parts.front()].begin, ds[parts.front()].end - ds[parts.front()].begin);
      while (!first.empty() && (first.back() == '\n' || first.back() == ' ')) first.pop_back();
      // Alternatives, most aggressive first: nothing, then each arm in order.
      sites.push_back(replaceSite("unwrap-pp", src, whole, "",
                                  "remove `" + first + "` block at line " + std::to_string(line),
                                  level, group));
      for (size_t a = 0; a + 1 < parts.size(); ++a) {
        unsigned b = ds[parts[a]].end, e = ds[parts[a + 1]].begin;
        sites.push_back(replaceSite(
            "unwrap-pp", src, whole, t.substr(b, e - b),
            "`" + first + "` -> arm " + std::to_string(a + 1) + " at line " + std::to_string(line),
            level, group));
      }
      ++group;
    } else {  // elif, else
      if (open.empty()) return {};
      open.back().push_back(i);
    }
  }
  if (!open.empty()) return {};
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
