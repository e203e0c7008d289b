// Edits on the original text and the sites that group them (docs/design.md "Core types").
// A site is what a pass offers and what the search keeps or drops; applying any subset
// of non-overlapping sites yields a candidate. No Clang here: the reducer's search and
// the fuzzer's bookkeeping use these types without parsing anything.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace wsr {

struct Edit {
  unsigned offset = 0;  // byte offset in the original text
  unsigned length = 0;  // bytes replaced
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

// The edits `applySites` chose for these sites (sorted by offset): what an accepted candidate
// changed in `text`.
std::vector<Edit> appliedEdits(const std::string &text, const std::vector<const Site *> &sites);

// Moves sites listed on `before` onto the text that `applied` (sorted, non-overlapping edits of
// `before`) produced, without parsing it again: a site that touches an applied edit is dropped,
// the others shift by what the edits ahead of them added or removed. `after` gives the new
// line numbers. The search keeps going on the rebased list after an accepted step and lists a
// pass's sites again (a full parse) only when the list runs out.
bool rebaseSite(Site &s, const std::vector<Edit> &applied,
                const std::string &after);  // false: dropped
template <class S>
std::vector<S> rebaseSites(const std::vector<S> &sites, const std::vector<Edit> &applied,
                           const std::string &after) {
  std::vector<S> out;
  for (const S &s : sites) {
    S t = s;
    if (rebaseSite(t, applied, after)) out.push_back(std::move(t));
  }
  return out;
}

// 1-based line of a byte offset.
unsigned lineOf(const std::string &text, unsigned offset);

// Simple counts a person reads in a status line.
unsigned countNonBlankLines(const std::string &text);
unsigned countTokens(const std::string &text);  // C-like tokens, comments excluded

// The C-like tokens of a text, comments and white space skipped: a word (letters, digits, '_' and
// '.'), a string or character literal whole, any other character alone. `spaced`: white space or a
// comment came before it. countTokens() counts them; keep.h's normalizeCode() joins them.
void forEachToken(const std::string &text,
                  const std::function<void(std::string_view token, bool spaced)> &f);

}  // namespace wsr
