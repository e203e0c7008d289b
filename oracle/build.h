// The build stage: nvcc on a copy-free path, binaries cached by a content hash of the
// source, its local headers, the flags and the compiler's version. A failed compile is a
// BuildRecord with ok=false (the classifier makes it a verdict), never an exception.
#pragma once

#include "verdict.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace wsr {

struct BuildOptions {
  std::string nvcc;                   // empty: `nvcc` in PATH, then /usr/local/cuda/bin/nvcc
  std::string arch = "sm_90a";        // -gencode=arch=compute_X,code=sm_X
  std::vector<std::string> flags;     // passed through (--nvcc-flag)
  std::vector<std::string> includes;  // -I
  std::vector<std::string> defines;   // -D (NAME or NAME=VALUE)
  std::vector<std::string> libs;      // -l
  std::string cache_dir;              // empty: defaultCacheDir()
  double timeout_s = 600;
  bool use_cache = true;
  // The hang watchdog: when on and `instrument` is set, the program compiled is
  // instrument(text, path), written to the private build dir (the user's file is never changed),
  // with -DWSWATCH_DEFAULT_MS=watchdog_ms. The hook keeps Clang out of wsr_oracle: the tools set
  // it to the Clang rewrite (oracle/watchdog/watchdog.h). An empty result means "could not
  // instrument": the original is built. A copy that fails to compile falls back to the original
  // too.
  bool watchdog = false;
  double watchdog_ms = 200;
  std::function<std::string(const std::string &text, const std::string &path)> instrument;
};

std::string defaultCacheDir();
// The directory holding wscheck.h for this installation or build tree.
std::string harnessIncludeDir();
// The directory of the running executable (install trees are found relative to it).
std::string selfDir();
// Checks that the cache dir can be created and written, and that its size limit
// (WSREDUCE_CACHE_MAX) reads; a sentence when not.
bool prepareCacheDir(const std::string &dir, std::string *err);
// nvcc's path, or empty when it cannot be found.
std::string findNvcc(const std::string &hint);

// The nvcc command line (without the source and -o), as the build runs it.
std::vector<std::string> nvccArgs(const BuildOptions &o);
// For a copy of the program compiled elsewhere: the program's own directory goes before the other
// -I directories of `args`, so its quoted includes resolve as they do from the program itself.
void putSourceDirFirst(std::vector<std::string> &args, const std::string &source_path);

BuildRecord buildProgram(const std::string &source_path, const BuildOptions &o);

// The headers `text` (a file in `dir`) names directly, each where it was found: a quoted
// #include beside it or under `dirs`, an angled one under `dirs`; one found nowhere (a toolkit
// or C++ library header) is left out.
std::vector<std::string> directIncludes(const std::string &text, const std::string &dir,
                                        const std::vector<std::string> &dirs);

// Every header `source_path` reaches, transitively, through a quoted #include beside it or under
// `dirs`, or an angled one under `dirs` (a library such as CUTLASS; the toolkit's stay out), each
// with its path (the program's folder as <srcdir>) and text: what a build cache's key must hold
// besides the program, so that an edited header is a new build.
std::string reachedHeaders(const std::string &source_path, const std::vector<std::string> &dirs);

// The header an `#include "name"` or `#include <name>` line names (`*angled` says which), or ""
// for any other line. Text only: a directive inside a comment or an #if not taken counts too.
std::string includedName(std::string_view line, bool *angled);

}  // namespace wsr
