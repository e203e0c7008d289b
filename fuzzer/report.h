// The campaign report, from the store alone: Markdown and one self-contained HTML page with
// the confusion matrix (expected class x observed class), detection rates per injector and
// per kernel, the disagreements to explain, latent mutants and what the sanitizer saw,
// flaky mutants, sites never executed, the Blackwell static checks, the reducer's
// ground-truth retention, and the time spent.
#pragma once

#include "store.h"

#include <string>

namespace wsr::fuzz {

struct ReportText {
  std::string markdown, html;
};

ReportText buildReport(Store &store, const std::string &title);

// Writes <prefix>.md and <prefix>.html; false with a sentence in *err.
bool writeReport(const std::string &db, const std::string &prefix, std::string *err);

// The class an expectation or a verdict detail belongs to: "hang/mbarrier" -> "hang".
std::string classOf(const std::string &detail);

}  // namespace wsr::fuzz
