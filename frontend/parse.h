// Parsing a .cu with Clang 22 and the real CUDA headers, host side and device side, and
// mapping AST ranges back to byte offsets in the user's text. Everything that reads or
// rewrites CUDA source goes through here.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace clang {
class ASTUnit;
class ASTContext;
class SourceRange;
class SourceLocation;
class Stmt;
class Decl;
}  // namespace clang

namespace wsr {

struct ParseOptions {
  std::string cuda_path;  // empty: detected from nvcc
  std::string arch = "sm_90a";
  std::vector<std::string> includes;  // -I
  std::vector<std::string> defines;   // -D
  std::vector<std::string> extra;     // any other clang flag
  // Treat a non-void function that falls off its end as an error: the undefined behaviour
  // a reducer creates by deleting a `return`, which can turn into a different hang or crash.
  bool strict_return = false;
};

// The CUDA installation nvcc belongs to (realpath(nvcc)/../..), or /usr/local/cuda.
std::string detectCudaPath();
// Clang's builtin headers: <exe>/../lib/clang/22 in an install tree, else the system one.
std::string clangResourceDir();

// Whether `path` is a header this file's parses put on the include path themselves (the cuda.h
// that keeps the driver API out of sight, parse.cpp): never a header of the program.
bool isParseShim(const std::string &path);

struct ParsedSide {
  ParsedSide();
  ~ParsedSide();  // out of line: ASTUnit is complete only in parse.cpp
  ParsedSide(ParsedSide &&);
  ParsedSide &operator=(ParsedSide &&);
  // What `ast` reads from and must outlive it (a shared precompiled preamble, parse_check.cpp).
  std::shared_ptr<const void> keep;
  std::unique_ptr<clang::ASTUnit> ast;
  std::vector<std::string> errors;  // "line:col: message", at most a few
  bool device = false;
};

// One program, parsed once per side it has: a .cu gets a host parse and a device parse
// (each sees its own __CUDA_ARCH__ branches); a .cpp/.cc/.c gets the host parse only.
struct ParsedSource {
  ParsedSource();
  ~ParsedSource();
  std::string path;  // absolute path of the original file (relative includes resolve there)
  std::string text;
  std::vector<ParsedSide> sides;
  bool ok() const;
  std::string firstError() const;
};

std::unique_ptr<ParsedSource> parseSource(const std::string &text, const std::string &path,
                                          const ParseOptions &opt);

// A parse of one text lent, for the lifetime of the loan, to later stages on the same thread.
// The reducer's parse check keeps its ASTs while the candidate is judged, so that the stages
// after it that would parse the same text again (the emulator's translation, the watchdog's
// instrumentation) borrow them instead: a full parse of the GEMM is ~1.3 s of its ~4 s emulator
// candidate. The lender vouches that its parse options are the borrowers' (same includes,
// defines and target; warning flags may differ). Loans nest; the innermost is seen.
class ParseLoan {
 public:
  explicit ParseLoan(const ParsedSource &p);
  ~ParseLoan();
  ParseLoan(const ParseLoan &) = delete;
  ParseLoan &operator=(const ParseLoan &) = delete;

 private:
  const ParsedSource *prev_;
};

// The lent parse when one is lent on this thread for exactly `text`, else parseSource(). Borrowed
// ASTs are read-only; `path` is not looked at for a borrowed parse (its ASTs name the lender's
// file): callers that print a path use their own.
std::shared_ptr<const ParsedSource> parseOnce(const std::string &text, const std::string &path,
                                              const ParseOptions &opt);

// A half-open byte range [begin, end) in the main file.
struct Range {
  unsigned begin = 0, end = 0;
  unsigned size() const { return end - begin; }
};

// The main-file text range covered by `r` (token range); nullopt when any part of it comes
// from a macro expansion or another file, so an edit there could not be expressed.
std::optional<Range> mainFileRange(const clang::ASTContext &ctx, clang::SourceRange r);
// Same, extended over a `;` that directly follows (a statement or declaration's own).
std::optional<Range> mainFileRangeWithSemi(const clang::ASTContext &ctx, clang::SourceRange r);
std::optional<unsigned> mainFileOffset(const clang::ASTContext &ctx, clang::SourceLocation l);

}  // namespace wsr
