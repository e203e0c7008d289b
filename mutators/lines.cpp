// lines: the language-blind fallback (C-Reduce's line pass): delete one non-blank line.
// Needs no AST, so it also works where the program is full of macros.
#include "pass.h"

namespace wsr {

std::vector<PassSite> lineSites(const ParsedSource &src) {
  std::vector<PassSite> sites;
  const std::string &t = src.text;
  unsigned b = 0;
  while (b < t.size()) {
    unsigned e = (unsigned)t.find('\n', b);
    if (e == (unsigned)std::string::npos)
      e = (unsigned)t.size();
    else
      ++e;
    bool blank = true;
    for (unsigned i = b; i < e; ++i)
      if (!std::isspace((unsigned char)t[i])) blank = false;
    if (!blank)
      sites.push_back(replaceSite("lines", src, Range{b, e}, "",
                                  "remove line " + std::to_string(lineOf(t, b))));
    b = e;
  }
  return sites;
}

}  // namespace wsr
