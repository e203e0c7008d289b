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

// The leading #include lines of `text` (what the parse check precompiles for it).
std::string leadingIncludes(const std::string &text);

// How many sets of leading #include lines this process has precompiled (a side each). They are
// shared: by every checker, every pool and parse(), each set built once while it is in use.
long sharedPreambleBuilds();

class ParseChecker {
 public:
  ParseChecker(std::string path, ParseOptions opt);
  ~ParseChecker();
  // True when `text` parses without errors on every side; `err` gets the first error. When it
  // does and `then` is given, `then` runs with the ASTs of this parse (valid only during the call):
  // the stages after the check borrow them (ParseLoan) instead of parsing the text again.
  bool check(const std::string &text, std::string *err = nullptr,
             const std::function<void(const ParsedSource &)> &then = {});
  // The parse of `text` (every side at once, errors included), owned by the caller until handed
  // back with giveBack(): the search lists its sites from it. With the preamble shared (or kept)
  // it costs ~0.4 s on the GEMM where a plain parse (parseSource) costs 1.3 s, after every
  // accepted step.
  std::unique_ptr<ParsedSource> parse(const std::string &text);
  // Texts parsed with their leading #include lines precompiled on their own: per side.
  long includeOnlyParses() const { return include_only_; }
  void giveBack(std::unique_ptr<ParsedSource> p);

 private:
  struct Side;
  bool parseSide(Side &s, const std::string &text, std::string *err);
  std::vector<ParsedSide> eachSide(const std::function<ParsedSide(size_t)> &one);
  std::unique_ptr<clang::ASTUnit> includeOnly(Side &s, const std::string &text,
                                              std::shared_ptr<const void> *keep);
  std::atomic<long> include_only_{0};
  std::string path_;
  ParseOptions opt_;
  std::vector<std::unique_ptr<Side>> sides_;
};

// A small pool of checkers so that -j candidates can be checked at once.
class ParseCheckerPool {
 public:
  ParseCheckerPool(std::string path, ParseOptions opt)
      : path_(std::move(path)), opt_(std::move(opt)) {}
  bool check(const std::string &text, std::string *err = nullptr,
             const std::function<void(const ParsedSource &)> &then = {});
  // The shared preamble of `text`'s leading #include lines, built now for every side at once
  // (after an #include line went, beside the search's own listing parse) unless it is there
  // already. Returns how many sides have it.
  int warm(const std::string &text);

 private:
  std::string path_;
  ParseOptions opt_;
  std::mutex m_;
  std::vector<std::unique_ptr<ParseChecker>> free_;
};

}  // namespace wsr
