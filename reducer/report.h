// What a reduction leaves for an upstream issue: a standalone program (the project's
// harness header inlined) and a Markdown report with the environment, the command, the
// verdict, the minimal shape and the PTX landmarks.
#pragma once

#include "keep.h"

#include "oracle.h"

#include <optional>
#include <string>
#include <vector>

namespace wsr {

// Replaces `#include "wscheck.h"` with the header's text so plain nvcc builds the file.
std::string inlineHarness(const std::string &text);
// The inverse, for a program that comes back to the search (--resume from a finished result, a
// .min.cu reduced again): the inlined header becomes `#include "wscheck.h"` once more, so that no
// pass edits the judge's own comparison. A resumed H200 reduction of gemm_k_loop_short made
// compare() print a row-stripe line for any output.
std::string uninlineHarness(const std::string &text);
// "N lines, M tokens" of `text` with its inlined header back as the include (the original's way
// of having it, so the sizes compare); empty when the header is not inlined.
std::string sizeWithoutInlinedHarness(const std::string &text);
// The program without the harness when all it still uses is `wscheck::exit_code()` (read as 0):
// the include line goes and the calls become 0. Unchanged text when it uses more of it (a
// compare that a wrong result needs) or does not include it.
std::string dropHarness(const std::string &text);

// Formats the text with Clang's formatter (LLVM style, includes left in their order); returns it
// unchanged if it cannot. `columns` 0: no line is broken for its length (ColumnLimit: 0).
std::string formatCuda(const std::string &text, int columns = 100);

struct ReportInput {
  std::string original_path, reduced_path, command;
  std::string original_text, reduced_text;
  Verdict original, reduced;
  BuildOptions build;
  std::vector<std::string> program_args;  // what the program is run with (wsreduce -- ARGS)
  double wall_s = 0;
  long tests = 0, cache_hits = 0, parse_skips = 0;
  std::vector<KeptRegion> kept;               // regions no candidate could change (keep.h)
  long keep_skips = 0;                        // candidates skipped for changing one
  std::string backend;                        // where the candidates ran: gpu | emu
  std::vector<std::string> policies;          // emu: the async timing policies judged
  std::optional<Verdict> confirmed;           // --confirm gpu: the final program judged on the GPU
  std::optional<Verdict> confirmed_original;  // --confirm gpu: the original judged on the GPU
  std::string confirm_note;                   // why there is no confirmation, or what it showed
  std::vector<std::string>
      finish_notes;  // what the judge refused of the finish (tidy, formatting, ...)
  std::vector<std::string> run_notes;  // how the run ended when not at a fixpoint (Ctrl-C, time)
};

std::string writeReport(const ReportInput &in);

// The integer knobs of a program, "NAME = VALUE" (for the report's minimal shape).
std::vector<std::string> knobValues(const std::string &text);

}  // namespace wsr
