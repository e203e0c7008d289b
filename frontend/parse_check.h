// The parse check the reducer runs on every candidate before nvcc: does Clang still parse
// it, host side and device side? A full parse with the CUDA headers costs ~1 s a side; this
// keeps one ASTUnit per side with a precompiled preamble (the leading #includes), so each
// candidate re-parses only its own text. One checker serves one thread at a time.
#pragma once

#include "parse.h"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace wsr {

// The leading #include lines of `text` (what the parse check precompiles for a base).
std::string leadingIncludes(const std::string &text);

class ParseChecker {
 public:
  ParseChecker(std::string path, ParseOptions opt);
  ~ParseChecker();
  // True when `text` parses without errors on every side; `err` gets the first error. When it
  // does and `then` is given, `then` runs with the ASTs of this parse (valid only during the call):
  // the stages after the check borrow them (ParseLoan) instead of parsing the text again.
  bool check(const std::string &text, std::string *err = nullptr,
             const std::function<void(const ParsedSource &)> &then = {});
  // The program the candidates are edits of (the reducer's best so far). With a base, a
  // candidate whose leading #include lines are the base's is parsed with those lines precompiled
  // alone, once per base's #include lines: a #define edit (another knob's value, an accepted
  // shape step) invalidates nothing. Otherwise it is parsed once without a preamble. parse()
  // keeps its own preamble of every leading directive.
  void setBase(const std::string &base);
  // The parse of `text` (every side, errors included), owned by the caller until handed back with
  // giveBack(): the search lists its sites from it. Re-parsing with the preamble kept costs ~0.4 s
  // on the GEMM where a plain parse (parseSource) costs 1.3 s, after every accepted step.
  std::unique_ptr<ParsedSource> parse(const std::string &text);
  // Candidates parsed with only the base's leading #include lines precompiled (their #defines
  // edited): per side.
  long includeOnlyParses() const { return include_only_; }
  // How many times the base's #include lines were precompiled (a side each).
  long preambleBuilds() const { return preamble_builds_; }
  void giveBack(std::unique_ptr<ParsedSource> p);

 private:
  struct Side;
  bool parseSide(Side &s, const std::string &text, std::string *err);
  bool oneOff(const std::string &text, std::string *err, const std::function<void(const ParsedSource &)> &then);
  std::unique_ptr<clang::ASTUnit> includeOnly(Side &s, const std::string &text);
  std::string base_preamble_;
  std::string base_inc_;  // the base's leading #include lines
  std::atomic<long> include_only_{0};
  std::atomic<long> preamble_builds_{0};
  bool has_base_ = false;
  std::string path_;
  ParseOptions opt_;
  std::vector<std::unique_ptr<Side>> sides_;
};

// A small pool of checkers so that -j candidates can be checked at once.
class ParseCheckerPool {
 public:
  ParseCheckerPool(std::string path, ParseOptions opt) : path_(std::move(path)), opt_(std::move(opt)) {}
  bool check(const std::string &text, std::string *err = nullptr,
             const std::function<void(const ParsedSource &)> &then = {});
  void setBase(const std::string &base);  // for every checker, now and later
  // Every idle checker checks `text` at once, one thread each, and is then ready for the
  // candidates of a base with `text`'s #include lines. After an #include line went, each checker's
  // first candidate rebuilt that preamble (3-5 s on the H200) after the search's own listing parse,
  // one after the other; the search now runs the two side by side. Returns how many were warmed.
  int warm(const std::string &text);
  long preambleBuilds();  // of the idle checkers

 private:
  std::string path_;
  ParseOptions opt_;
  std::string base_;
  bool has_base_ = false;
  std::mutex m_;
  std::vector<std::unique_ptr<ParseChecker>> free_;
};

}  // namespace wsr
