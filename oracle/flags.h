// The oracle's flags, defined once for wsoracle, wsreduce and wsfuzz: how a program is built
// (nvcc, its flags, -I, -D, -l, the cache), run (the timeout) and judged (the backend, the
// emulator's timing policies, the hang watchdog). Each tool shows them under "oracle options"
// beside its own.
#pragma once

#include "flatten.h"
#include "oracle.h"
#include "parse.h"

#include <llvm/Support/CommandLine.h>

#include <string>

namespace wsr {

llvm::cl::OptionCategory &oracleFlagCategory();

// The flags' values, checked, put into `o`: build (nvcc, flags, includes, defines, libs, cache
// directory, the watchdog's switch and bound), run.timeout_s, the watchdog's end mode (WSWATCH_END
// in the runs' environment), backend, policies and, when the tool has the emulator built in, its
// build stage. The arch and the watchdog's instrumenter are the tool's to set (installWatchdog).
// Returns "" or one sentence naming the flag that is wrong.
std::string applyOracleFlags(OracleOptions &o);

// The program a tool was given, read: "" or the one sentence that says why it cannot be judged
// (missing, a folder, unreadable, empty, binary, too large to be a program).
std::string readProgram(const std::string &path, std::string *text);

// The backend flag as given (auto | gpu | emu).
const std::string &backendFlag();

// How Clang parses a program judged with `o` (the watchdog's instrumenter, the reducer's parse
// check and listing): o.build's arch (the default when empty), -I (then the program's folder
// when `source_path` is given, and the harness header's), -D.
ParseOptions parseOptionsFor(const BuildOptions &b, const std::string &source_path = "");

// The watchdog's instrumenter for programs parsed as parseOptionsFor says, installed into `o`;
// the watchdog stays off for a file that is not CUDA source (.cu/.cuh).
void installWatchdog(OracleOptions &o, const std::string &source_path = "");

// How a tool flattens a program judged with `b` (frontend/flatten.h): parsed as parseOptionsFor
// says, the headers under the folders the --flatten value names inlined (`all`: the program's
// folder and every -I), the harness header's left to the reducer. "" or the one sentence that says
// what is wrong with the value.
std::string flattenOptionsFor(const BuildOptions &b, const std::string &source_path,
                              const std::string &flag, FlattenOptions *fo);

}  // namespace wsr
