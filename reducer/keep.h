// Kept regions: code the reduction must not change. A wrong result is judged against the
// program's own reference (a host GEMM, say); a reducer free to edit that reference can make
// the comparison fail against nothing the kernel computes. Mark it in the source:
//
//   // wsreduce: keep begin
//   ... the reference computation and its compare() ...
//   // wsreduce: keep end
//
// and every candidate must still contain each region's code, compared without comments and
// with spaces only where they separate two words (so clang-format and the comment cleanup do
// not count as changes). Names the region uses (GEMM_K) can still shrink where they are defined.
#pragma once

#include <string>
#include <vector>

namespace wsr {

struct KeptRegion {
  int first_line = 0, last_line = 0;  // of the markers, 1-based, in the original
  std::string code;                   // normalizeCode() of the text between them
};

// The regions marked in `text`; false with one sentence in *err when the markers do not pair
// (an end before its begin, a begin never ended, a begin inside a region, an empty region).
bool findKeptRegions(const std::string &text, std::vector<KeptRegion> *out, std::string *err);

// `text` without comments, with runs of white space removed except one space between two
// characters that would otherwise join into one word (identifiers, numbers). String and
// character literals are kept as written.
std::string normalizeCode(const std::string &text);

// The index of the first region `candidate` no longer contains, or -1 when it keeps them all.
// `normalized` is normalizeCode(candidate), computed once by the caller when it has it.
int lostKeptRegion(const std::string &normalized, const std::vector<KeptRegion> &regions);

}  // namespace wsr
