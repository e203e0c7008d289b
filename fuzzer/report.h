// The campaign report, from the store alone: Markdown and one self-contained HTML page with
// the confusion matrix (expected class x observed class), detection rates per injector and
// per kernel, the disagreements to explain, latent mutants and what the sanitizer saw,
// flaky mutants, sites never executed, the Blackwell static checks, the reducer's
// ground-truth retention, and the time spent.
#pragma once

#include "store.h"

#include <optional>
#include <string>
#include <vector>

namespace wsr::fuzz {

struct ReportText {
  std::string markdown, html;
};

// Why a mutant shows something other than the catalogue predicts (a finding about the bug, or an
// oracle defect and its fix), kept with the campaign: one per line of an explanations file,
//   kernel-or-* | injector | observed detail prefix ("crash/launch-failure", "pass") | explanation
// ('#' starts a comment). The report puts the first matching one next to each disagreement and
// each latent mutant.
struct Explanation {
  std::string kernel, injector, observed, text;
};
std::vector<Explanation> parseExplanations(const std::string &text);

ReportText buildReport(Store &store, const std::string &title,
                       const std::vector<Explanation> &explanations = {});

// Writes <prefix>.md and <prefix>.html; false with a sentence in *err. The title names `db`
// unless `title` is given.
bool writeReport(const std::string &db, const std::string &prefix, std::string *err,
                 const std::string &explain_path = "", const std::string &title = "");

// `wsfuzz compare`: the mutants both databases judged, side by side (Markdown): baselines,
// agreement by class and detail, per injector, the disagreements, every mutant with the emulator's
// policy matrix where it has one. False with a sentence in *err.
bool writeComparison(const std::string &a, const std::string &b, const std::string &label_a,
                     const std::string &label_b, std::string *markdown, std::string *err);

// What a compute-sanitizer run says: true when the tool reported errors or hazards ("ERROR SUMMARY:
// N errors" of memcheck/synccheck/initcheck, "RACECHECK SUMMARY: N hazards displayed (E errors, W
// warnings)") or when the program itself failed under the tool (the slowdown exposed the bug: the
// summary says so); nothing when the output has no summary. *summary is the line(s) that decided.
std::optional<bool> sanitizerSaw(const std::string &out, std::string *summary);

// The class an expectation or a verdict detail belongs to: "hang/mbarrier" -> "hang".
std::string classOf(const std::string &detail);

}  // namespace wsr::fuzz
