// Flattening: a program and the headers it reaches through its own folder and its -I folders
// (its own and a library's, such as CUTLASS) made into one file, so that a reduction can edit
// code that lives in a header. The toolkit's, the compiler's and the C++ library's headers stay
// #include lines. Clang's preprocessor says which directive reached which file, on the host side
// and on the device side of a .cu, with the flags the parse check uses (parse.h).
#pragma once

#include "parse.h"

#include <memory>
#include <string>
#include <vector>

namespace wsr {

struct FlattenOptions {
  // How the program is preprocessed: the same includes, defines, target and CUDA path the parse
  // check uses for it.
  ParseOptions parse;
  // Folders whose headers are inlined (a header under one of them, reached as a user header, not
  // through -isystem or the toolkit); empty: none.
  std::vector<std::string> dirs;
  // Folders never inlined even under `dirs` (the harness header's: the reducer inlines wscheck.h
  // its own way at the end).
  std::vector<std::string> keep_dirs;
};

struct FlattenResult {
  std::string error;  // one sentence when the program cannot be flattened; then nothing else is set
  std::string text;   // the program with its headers inlined
  unsigned headers = 0;  // distinct headers inlined
  bool ok() const { return error.empty(); }
};

// The headers a --flatten value names, resolved: `all` (the program's folder and every -I),
// `none`, or a comma list of folders (each must exist). "" or the one sentence that says what is
// wrong with the value.
std::string flattenDirsFromFlag(const std::string &value, const std::string &program_path,
                                const std::vector<std::string> &includes,
                                std::vector<std::string> *dirs);

// One program preprocessed once per side; its flattenings (all of it, or the first top-level
// header trees only) need no further preprocessing.
class Flattener {
 public:
  ~Flattener();
  // nullptr with `error` set (one sentence: a header not found, an include cycle) when the
  // program cannot be flattened.
  static std::unique_ptr<Flattener> preprocess(const std::string &text, const std::string &path,
                                               const FlattenOptions &opt, std::string *error);
  // Every header under the options' folders inlined.
  FlattenResult flatten() const;
  // The top-level header trees: each #include line of the program that flatten() replaces, with
  // the headers first inlined under it. Their names are the headers' as the program spells them.
  size_t trees() const { return trees_.size(); }
  const std::string &treeName(size_t i) const { return trees_[i].name; }
  // Only the headers of the first `k` trees inlined (the others stay #include lines, and so does
  // any header one of those reaches): how the reducer finds the header whose flattening changes a
  // program's verdict.
  FlattenResult flattenFirstTrees(size_t k) const;

  struct Trace;  // one side's record (flatten.cpp)

 private:
  Flattener() = default;
  FlattenResult emit(const std::vector<std::string> &allowed, bool record_trees) const;
  struct Tree {
    std::string name;
    std::vector<std::string> files;
  };
  std::string path_, text_;
  FlattenOptions opt_;
  std::vector<std::unique_ptr<Trace>> sides_;
  mutable std::vector<Tree> trees_;
};

// What a flattening did, for the user: "flattened N headers, L lines -> M lines" (non-blank
// lines, of `before` and of the result).
std::string flattenSummary(const std::string &before, const FlattenResult &r);

// flatten() of a Flattener made for `text`; the error when it cannot be made.
FlattenResult flattenProgram(const std::string &text, const std::string &path,
                             const FlattenOptions &opt);

}  // namespace wsr
