// cleanup: cosmetics for the report: comments out, runs of blank lines collapsed.
// (clang-format runs once on the final program, outside the search.)
#include "pass.h"

#include <cctype>

namespace wsr {

std::vector<PassSite> cleanupSites(const ParsedSource &src) {
  std::vector<PassSite> sites;
  const std::string &t = src.text;
  size_t i = 0;
  // Blank lines before the first line of text.
  while (i < t.size() && std::isspace((unsigned char)t[i])) ++i;
  while (i > 0 && t[i - 1] != '\n') --i;
  if (i > 0)
    sites.push_back(
        replaceSite("cleanup", src, Range{0, (unsigned)i}, "", "remove leading blank lines"));
  while (i < t.size()) {
    char c = t[i];
    if (c == '"' || c == '\'') {  // skip literals: "//" inside a string is not a comment
      char q = c;
      ++i;
      while (i < t.size() && t[i] != q && t[i] != '\n') {
        if (t[i] == '\\') ++i;
        ++i;
      }
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < t.size() && (t[i + 1] == '/' || t[i + 1] == '*')) {
      size_t e = t[i + 1] == '/' ? t.find('\n', i) : t.find("*/", i + 2);
      e = e == std::string::npos ? t.size() : (t[i + 1] == '/' ? e : e + 2);
      Range r{(unsigned)i, (unsigned)e}, w = widenToLines(t, r);
      // A block comment inside a line leaves a blank (`a/**/b` must not become `ab`).
      bool inLine = w.begin == r.begin && w.end == r.end;
      sites.push_back(
          replaceSite("cleanup", src, w, t[i + 1] == '*' && inLine ? " " : "",
                      "remove comment at line " + std::to_string(lineOf(t, (unsigned)i))));
      i = e;
      continue;
    }
    if (c == '\n') {  // a run of 2+ blank lines -> one
      size_t j = i + 1, blanks = 0, last = i;
      while (j < t.size()) {
        size_t k = j;
        while (k < t.size() && (t[k] == ' ' || t[k] == '\t')) ++k;
        if (k < t.size() && t[k] == '\n') {
          ++blanks;
          last = k;
          j = k + 1;
        } else
          break;
      }
      if (blanks >= 2)
        sites.push_back(replaceSite("cleanup", src, Range{(unsigned)i + 1, (unsigned)last}, "",
                                    "collapse blank lines"));
      i = j;
      continue;
    }
    ++i;
  }
  return sites;
}

}  // namespace wsr
