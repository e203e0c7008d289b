// Edits on the original text and the sites that group them (DESIGN.md "Core types").
// A site is what a pass offers and what the search keeps or drops; applying any subset
// of non-overlapping sites yields a candidate. No Clang here: the reducer's search and
// the fuzzer's bookkeeping use these types without parsing anything.
#pragma once

#include <string>
#include <vector>

namespace wsr {

struct Edit {
  unsigned offset = 0;   // byte offset in the original text
  unsigned length = 0;   // bytes replaced
  std::string replacement;
  bool operator==(const Edit &o) const {
    return offset == o.offset && length == o.length && replacement == o.replacement;
  }
  bool operator<(const Edit &o) const {
    if (offset != o.offset) return offset < o.offset;
    if (length != o.length) return length < o.length;
    return replacement < o.replacement;
  }
};

struct Site {
  std::string pass;         // the pass that offered it
  std::vector<Edit> edits;  // applied together or not at all
  std::string note;         // one line for traces and reports: "remove stmt at 212"
  unsigned line = 0;        // 1-based line of the first edit, for humans
  // Bytes this site takes away (a proxy for how much it shrinks the program).
  long gain() const;
};

// Whether two edits touch overlapping bytes (an insertion at the boundary of another
// edit counts as overlapping, so the result stays unambiguous).
bool overlaps(const Edit &a, const Edit &b);
bool overlaps(const Site &a, const Site &b);

// Applies the given sites to `text`. Sites that overlap an earlier-listed site are skipped;
// `applied`, when given, receives the indices of the sites that were applied.
std::string applySites(const std::string &text, const std::vector<const Site *> &sites,
                       std::vector<size_t> *applied = nullptr);
std::string applySites(const std::string &text, const std::vector<Site> &sites);

// 1-based line of a byte offset.
unsigned lineOf(const std::string &text, unsigned offset);

// Simple counts a person reads in a status line.
unsigned countNonBlankLines(const std::string &text);
unsigned countTokens(const std::string &text);  // C-like tokens, comments excluded

}  // namespace wsr
