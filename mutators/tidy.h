// tidy under a judge that builds and runs (the reducer's finishing step, reducer/wsreduce.cpp).
// tidyProgram (pass.h) takes a round's sites one by one when the whole round is refused, which
// is right for a cheap check and costs a build and a run per site under a judge. Here a refused
// round is split in halves instead, each half taken whole when the judge accepts the text with
// it: one rewrite the judge refuses among n costs about 2 log2(n) judgments, and the rest are kept.
#pragma once

#include "parse.h"

#include <functional>
#include <string>

namespace wsr {

// As tidyProgram, with `judge` in place of `acceptable`. `left_out`, when given, gets how many of
// the last refused round's sites were left out (0 when the judge accepted every round whole).
std::string tidyProgramJudged(const std::string &text, const std::string &path,
                              const ParseOptions &opt, int rounds,
                              const std::function<bool(const std::string &)> &judge,
                              int *left_out = nullptr);

}  // namespace wsr
