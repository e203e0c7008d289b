// One reduction: the original judged, the search, the finish, the report and the confirmation on
// another oracle. wsreduce runs it on a user's program, wsfuzz --reduce on each detected mutant;
// both get the same result for the same input and options.
#pragma once

#include "flatten.h"
#include "search.h"
#include "tester.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace wsr {

struct ReduceRequest {
  // The program on disk: every candidate keeps its file name, its folder stays on -I.
  std::string input_path;
  std::string text;  // its text, as read once by the caller
  // The judge: the symptom (or a --test script), the oracle's options, the parse, kept regions.
  TestOptions test;
  // The search: jobs, schedule, algorithm, budget. best_path and trace_path are set here.
  SearchOptions search;
  // The result; <stem>.state.json (what the result is of, for a resume), <stem>.trace.jsonl (one
  // line per judged candidate) and <stem>.md (the report) go beside it.
  std::string out_path;
  bool resume = false;  // go on from out_path when its state says it is of this input
  // The budget counts the search time of the runs resumed (wsfuzz: a reduction's budget in all)
  // instead of this run's alone (wsreduce --budget: this run).
  bool budget_includes_resumed = false;
  bool write_report = true;
  // Seconds the finish may take after the search (0: no bound); the steps it has no time for are
  // left out, and the notes say which.
  double finish_budget_s = 0;
  // Ctrl-C (or SIGTERM) during the search finishes and reports the best program so far, as a
  // spent budget does (wsreduce); a second one, or one during the finish, stops the finish and
  // the result is written as far as it got. Off (wsfuzz): an interrupted reduction is left on
  // disk unfinished, for the same command to go on with.
  bool finish_when_interrupted = false;
  double timeout_cap_s = 10;  // --timeout: the most a calibrated candidate timeout can be
  bool calibrate = true;      // the candidates' timeout from the original's own run
  // Where the candidates run when this machine has a GPU: a context held open on each device for
  // the whole reduction (every candidate's process starts sooner).
  bool keepers = false;
  // The program's headers inlined before the search (frontend/flatten.h), so that the passes can
  // edit code that lives in them and the result is one file; unset: the program as it is. The
  // flattened program must get the original's verdict and signature from the same judge, else
  // nothing is reduced.
  std::optional<FlattenOptions> flatten;
  // The original judged on this oracle when test.oracle does not reproduce it, and the reduction
  // run there (wsfuzz --reduce-backend emu: a mutant the emulator judges otherwise). It is used
  // as given: its timeout is not calibrated again.
  std::optional<OracleOptions> fallback;
  // The result (and, unless confirm_original says, the original) judged again on this oracle:
  // wsreduce --confirm gpu; wsfuzz, the campaign's oracle when the reduction ran on another.
  std::optional<OracleOptions> confirm;
  std::optional<Verdict> confirm_original;
  std::string confirm_missing;  // why there is no confirmation although one was asked for
  std::string command;          // for the report
  std::function<void(const std::string &)> say;  // one line for the user
  std::function<void(const SearchStats &, const std::string &)> progress;
};

struct ReduceOutcome {
  enum class Status {
    Reduced,         // the best program, finished, written and reported
    NotInteresting,  // the original does not show the symptom
    Infra,           // the oracle could not judge the original
    Interrupted,     // Ctrl-C: the best program so far is on disk, --resume goes on
    Stopped,         // the search stopped (infra errors in a row); the best so far is on disk
    Error,           // the result could not be written
  };
  Status status = Status::Error;
  std::string message;  // one sentence, when not Reduced
  std::string best;     // the result as written
  // Its non-blank lines, like with like: an inlined harness header counted as the #include line
  // the input has.
  unsigned best_lines = 0;
  std::string searched;  // the search's result, before the finish
  // What the search started from: the input, or the input flattened (then `flattened` says how
  // much: "flattened N headers, L lines -> M lines").
  std::string input_text;
  std::string flattened;
  Verdict original, reduced;
  std::string backend;    // where the candidates ran: gpu | emu
  std::string fell_back;  // when the fallback oracle reduced it, why
  std::optional<Verdict> confirmed, confirmed_original;
  bool confirm_differs = false;  // the confirming oracle shows another class than both
  bool budget_spent = false;
  bool interrupted =
      false;  // Ctrl-C came: the result is the best so far, finished as far as it got
  std::vector<std::string> finish_notes;  // what the judge refused of the finish
  std::vector<std::string> run_notes;     // how the run ended when not at a fixpoint
  SearchStats stats;
  long tests = 0;
  double spent_s = 0;    // search seconds, the runs resumed included
  double resumed_s = 0;  // of which the runs resumed
  std::string report_path;

  // 0 reduced, 1 not interesting, 2 cannot write, 3 infra, 4 confirmed otherwise, 130 interrupted
  // (whether or not the best program so far was finished).
  int exitCode() const;
};

ReduceOutcome reduce(ReduceRequest req);

// <dir>/<stem>.min<ext> beside the input.
std::string defaultOutputPath(const std::string &input_path);

}  // namespace wsr
