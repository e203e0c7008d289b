#include "edit.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace wsr {

long Site::gain() const {
  long g = 0;
  for (auto &e : edits) g += (long)e.length - (long)e.replacement.size();
  return g;
}

bool overlaps(const Edit &a, const Edit &b) {
  unsigned ae = a.offset + a.length, be = b.offset + b.length;
  if (a.length == 0 || b.length == 0)  // insertions collide with anything touching them
    return a.offset <= be && b.offset <= ae;
  return a.offset < be && b.offset < ae;
}

bool overlaps(const Site &a, const Site &b) {
  for (auto &x : a.edits)
    for (auto &y : b.edits)
      if (overlaps(x, y)) return true;
  return false;
}

std::string applySites(const std::string &text, const std::vector<const Site *> &sites,
                       std::vector<size_t> *applied) {
  std::vector<Edit> chosen;
  // The chosen edits by offset (they never overlap, so their ends rise with their offsets): an
  // edit is checked against its neighbours only. A flattened program's first move applies tens
  // of thousands of sites at once.
  std::multimap<unsigned, unsigned> taken;  // offset -> end
  auto clashes = [&](const Edit &e) {
    const unsigned ae = e.offset + e.length;
    auto it = taken.upper_bound(ae);
    while (it != taken.begin()) {
      --it;
      if (it->second < e.offset) break;  // this one and every earlier one end before e
      if (overlaps(e, Edit{it->first, it->second - it->first, ""})) return true;
    }
    return false;
  };
  for (size_t i = 0; i < sites.size(); ++i) {
    bool clash = false;
    for (auto &e : sites[i]->edits)
      if (e.offset + e.length > text.size() || clashes(e)) {
        clash = true;
        break;
      }
    if (clash) continue;
    // Edits within one site must not overlap each other either.
    std::vector<Edit> own = sites[i]->edits;
    std::sort(own.begin(), own.end());
    bool self = false;
    for (size_t k = 1; k < own.size(); ++k)
      if (overlaps(own[k - 1], own[k])) self = true;
    if (self) continue;
    for (auto &e : own) taken.emplace(e.offset, e.offset + e.length);
    chosen.insert(chosen.end(), own.begin(), own.end());
    if (applied) applied->push_back(i);
  }
  std::sort(chosen.begin(), chosen.end());
  std::string out;
  out.reserve(text.size());
  unsigned pos = 0;
  for (auto &e : chosen) {
    out.append(text, pos, e.offset - pos);
    out += e.replacement;
    pos = e.offset + e.length;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

std::vector<Edit> appliedEdits(const std::string &text, const std::vector<const Site *> &sites) {
  std::vector<size_t> applied;
  applySites(text, sites, &applied);
  std::vector<Edit> out;
  for (size_t i : applied) out.insert(out.end(), sites[i]->edits.begin(), sites[i]->edits.end());
  std::sort(out.begin(), out.end());
  return out;
}

bool rebaseSite(Site &s, const std::vector<Edit> &applied, const std::string &after) {
  for (auto &e : s.edits) {
    long shift = 0;
    for (auto &a : applied) {
      if (overlaps(e, a)) return false;
      if (a.offset + a.length <= e.offset) shift += (long)a.replacement.size() - (long)a.length;
    }
    e.offset = (unsigned)((long)e.offset + shift);
    if (e.offset + e.length > after.size()) return false;
  }
  if (!s.edits.empty())
    s.line = lineOf(after, std::min_element(s.edits.begin(), s.edits.end())->offset);
  return true;
}

std::string applySites(const std::string &text, const std::vector<Site> &sites) {
  std::vector<const Site *> p;
  for (auto &s : sites) p.push_back(&s);
  return applySites(text, p);
}

unsigned lineOf(const std::string &text, unsigned offset) {
  offset = (unsigned)std::min<size_t>(offset, text.size());
  // A pass lists thousands of sites on a flattened program, each with its line: counting from
  // the top each time is quadratic there. Large texts keep an index of their line starts, per
  // thread, for the text last asked about (the same object, size and ends: a text is not edited
  // in place while a pass lists its sites).
  if (text.size() < (1u << 16))
    return 1 + (unsigned)std::count(text.begin(), text.begin() + offset, '\n');
  struct Index {
    const char *data = nullptr;
    size_t size = 0;
    std::string ends;
    std::vector<unsigned> newlines;
  };
  thread_local Index idx;
  std::string ends = text.substr(0, 32) + text.substr(text.size() - 32);
  if (idx.data != text.data() || idx.size != text.size() || idx.ends != ends) {
    idx.data = text.data();
    idx.size = text.size();
    idx.ends = std::move(ends);
    idx.newlines.clear();
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') idx.newlines.push_back((unsigned)i);
  }
  return 1 + (unsigned)(std::lower_bound(idx.newlines.begin(), idx.newlines.end(), offset) -
                        idx.newlines.begin());
}

unsigned countNonBlankLines(const std::string &text) {
  unsigned n = 0;
  bool blank = true;
  for (char c : text) {
    if (c == '\n') {
      n += !blank;
      blank = true;
    } else if (!std::isspace((unsigned char)c))
      blank = false;
  }
  return n + !blank;
}

void forEachToken(const std::string &t, const std::function<void(std::string_view, bool)> &f) {
  size_t i = 0, e = t.size();
  bool spaced = false;
  while (i < e) {
    char c = t[i];
    if (std::isspace((unsigned char)c)) {
      ++i;
      spaced = true;
      continue;
    }
    if (c == '/' && i + 1 < e && t[i + 1] == '/') {
      while (i < e && t[i] != '\n') ++i;
      spaced = true;
      continue;
    }
    if (c == '/' && i + 1 < e && t[i + 1] == '*') {
      size_t j = t.find("*/", i + 2);
      i = j == std::string::npos ? e : j + 2;
      spaced = true;
      continue;
    }
    size_t b = i;
    if (std::isalnum((unsigned char)c) || c == '_') {
      while (i < e && (std::isalnum((unsigned char)t[i]) || t[i] == '_' || t[i] == '.')) ++i;
    } else if (c == '"' || c == '\'') {
      char q = c;
      ++i;
      while (i < e && t[i] != q) {
        if (t[i] == '\\') ++i;
        ++i;
      }
      ++i;
    } else {
      ++i;
    }
    i = std::min(i, e);  // an unterminated literal ends with the text
    f(std::string_view(t).substr(b, i - b), spaced);
    spaced = false;
  }
}

unsigned countTokens(const std::string &t) {
  unsigned n = 0;
  forEachToken(t, [&](std::string_view, bool) { ++n; });
  return n;
}

}  // namespace wsr
