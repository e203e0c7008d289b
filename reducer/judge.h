// The judge: the one contract between the search and the world (C-Reduce's interestingness
// test). The search hands it candidate texts and lists sites from its parses; it never knows
// whether a candidate was built by nvcc, run on a GPU or emulated, or judged by a user's script.
// The Tester (tester.h) is the judge of every reduction; the search's unit tests drive it with a
// predicate on the text.
#pragma once

#include "parse.h"

#include <memory>
#include <string>

namespace wsr {

struct TestResult {
  bool interesting = false;
  bool cached = false;
  bool parse_failed = false;
  bool infra = false;
  bool cancelled = false;  // the search stopped needing it before it finished: says nothing
  std::string detail, signature, note;  // the verdict's (or "script exit N")
  double ms = 0;
  double parse_ms = 0, build_ms = 0, run_ms = 0;  // the parse check, the oracle's build and runs
  std::string gpu;  // the CUDA_VISIBLE_DEVICES it ran with, when TestOptions::gpus spread them
};

// Parses of the best program, from which the search lists the passes' sites; a parse is handed
// back when the program it is of has been replaced.
class SiteParser {
 public:
  virtual ~SiteParser() = default;
  virtual std::unique_ptr<ParsedSource> parse(const std::string &text) = 0;
  virtual void giveBack(std::unique_ptr<ParsedSource> p) {}
};

// A parse that holds only the text: for passes that read nothing else (lines, tokens, cleanup).
class TextOnlyParser : public SiteParser {
 public:
  std::unique_ptr<ParsedSource> parse(const std::string &text) override {
    auto p = std::make_unique<ParsedSource>();
    p->text = text;
    return p;
  }
};

// The key of a judged text (SHA-256 of it): the judge's cache, the trace, the resume state.
std::string contentHash(const std::string &text);

struct JudgeCounts {
  long tests = 0, cache_hits = 0, parse_skips = 0, cancelled = 0;
};

class Judge {
 public:
  virtual ~Judge() = default;
  // Whether `text` fails the way the original does. Called from the search's slots at once, each
  // on its own thread; a thread's cancel flag (process.h) says that its verdict is not needed.
  virtual TestResult test(const std::string &text) = 0;
  virtual std::unique_ptr<SiteParser> siteParser() const = 0;
  // Called after an accepted step changed the program's #include lines: work the next tests of
  // programs with these lines share (a precompiled preamble) may start now.
  virtual void warm(const std::string &text) {}
  virtual JudgeCounts counts() const = 0;
};

}  // namespace wsr
