#include "keep.h"

#include "edit.h"

#include <cctype>
#include <sstream>

namespace wsr {

namespace {
bool wordChar(char c) { return std::isalnum((unsigned char)c) || c == '_' || c == '$'; }

// "wsreduce: keep begin" / "wsreduce: keep end" in a // comment: 1 / 2; anything else 0.
int marker(const std::string &line) {
  size_t c = line.find("//");
  if (c == std::string::npos) return 0;
  std::string rest = line.substr(c + 2);
  size_t p = rest.find("wsreduce:");
  if (p == std::string::npos) return 0;
  std::istringstream words(rest.substr(p + 9));
  std::string keep, what;
  words >> keep >> what;
  if (keep != "keep") return 0;
  return what == "begin" ? 1 : what == "end" ? 2 : 0;
}
}  // namespace

bool findKeptRegions(const std::string &text, std::vector<KeptRegion> *out, std::string *err) {
  out->clear();
  std::istringstream in(text);
  std::string line, body;
  int n = 0, open = 0;
  while (std::getline(in, line)) {
    ++n;
    int m = marker(line);
    if (m == 1) {
      if (open) {
        *err = "line " + std::to_string(n) + " begins a kept region inside the one begun at line " +
               std::to_string(open);
        return false;
      }
      open = n;
      body.clear();
    } else if (m == 2) {
      if (!open) {
        *err = "line " + std::to_string(n) +
               " ends a kept region that was never begun (// wsreduce: keep begin)";
        return false;
      }
      KeptRegion r{open, n, normalizeCode(body)};
      if (r.code.empty()) {
        *err = "the kept region at lines " + std::to_string(open) + "-" + std::to_string(n) +
               " holds no code";
        return false;
      }
      out->push_back(std::move(r));
      open = 0;
    } else if (open) {
      body += line + "\n";
    }
  }
  if (open) {
    *err = "the kept region begun at line " + std::to_string(open) +
           " is never ended (// wsreduce: keep end)";
    return false;
  }
  return true;
}

std::string normalizeCode(const std::string &t) {
  std::string s;
  forEachToken(t, [&](std::string_view tok, bool spaced) {
    if (spaced && !s.empty() && wordChar(s.back()) && wordChar(tok.front())) s += ' ';
    s += tok;
  });
  return s;
}

int lostKeptRegion(const std::string &normalized, const std::vector<KeptRegion> &regions) {
  for (size_t i = 0; i < regions.size(); ++i)
    if (normalized.find(regions[i].code) == std::string::npos) return (int)i;
  return -1;
}

}  // namespace wsr
