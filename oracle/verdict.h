// The oracle's verdict schema (docs/design.md "Core types"): what a reducer, a fuzzer and a
// person read. Serialisable to JSON; the classifier is the only thing that makes one.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace llvm::json {
class Value;
}

namespace wsr {

// One finished run of a candidate program, as the run stage captured it.
struct RunRecord {
  int exit_code = 0;       // valid when !signaled && !timed_out
  int signal = 0;          // terminating signal, 0 if none
  bool timed_out = false;  // killed by the oracle at its timeout
  bool cancelled = false;  // killed because the caller no longer needed it (timed_out is set too)
  bool spawn_failed = false;  // could not start the program at all (infra)
  std::string spawn_error;
  double wall_ms = 0;
  std::string out, err;  // bounded captures (head + tail)
  bool out_truncated = false, err_truncated = false;
  long long out_bytes = 0, err_bytes = 0;  // total bytes the program wrote
  std::string watch;      // the watchdog's records (WSWATCH lines decoded from its file), if any
  std::string forensics;  // what a timeout hook (cuda-gdb) printed before the kill
  // Killed by the oracle after the hang watchdog had fired and recorded the parked warps
  // (RunOptions::over): the run's verdict is in its records, its end was ours.
  bool ended_after_watchdog = false;
  double timeout_s = 0;   // the timeout this run had
};

// What the build stage produced.
struct BuildRecord {
  bool ok = false;
  bool cache_hit = false;
  bool tool_missing = false;  // nvcc (or the host compiler) could not be started
  std::string tool_error;
  int exit_code = 0;
  int signal = 0;
  bool timed_out = false;
  bool cancelled = false;  // the compiler was killed by the tool (a cancel, Ctrl-C): no verdict
  std::string log;         // compiler stdout+stderr
  std::string binary;      // path of the built program when ok
  std::string key;         // content hash of source + flags
  double wall_ms = 0;
  bool instrumented = false;    // the hang watchdog's copy was built (BuildOptions::watchdog)
  std::string backend = "gpu";  // gpu (nvcc) | emu (translated C++ against the CPU emulator)
  // The emulator's build was nvcc compiling the program as the user builds it (the PTX path):
  // its errors are the program's compile errors, except the entry points the emulator lacks.
  bool emu_by_nvcc = false;
};

struct Timings {
  double build_ms = 0;
  bool build_cached = false;
  std::vector<double> run_ms;
  double total_ms = 0;
};

struct RunSummary {  // one run's own classification, kept for --repeat and flaky
  std::string symptom, detail, signature;
  int exit_code = 0, signal = 0;
  bool timed_out = false;
  double wall_ms = 0;
};

struct Verdict {
  std::string symptom;  // pass | compile-error | hang | crash | wrong | slow | flaky | infra-error
  std::string detail;   // e.g. wrong/row-stripe, crash/illegal-address
  std::string signature;              // what must stay equal for "the same bug"
  std::vector<std::string> evidence;  // the lines that made the call, most telling first
  Timings timings;
  std::vector<RunSummary> runs;
  bool matched = false;                          // the user's --match REGEX matched the output
  std::string sanitizer_tool, sanitizer_output;  // evidence only, never the verdict
  std::string backend;  // gpu | emu: where the runs happened ("" for a verdict made before any run)
  struct PolicyVerdict {  // emu: what each async timing policy showed (the policy matrix)
    std::string policy, detail, signature;
  };
  std::vector<PolicyVerdict> policies;
  // gpu: the plain build's verdict replaced the watchdog's instrumented build's, which said this
  // (OracleOptions::confirm_plain); empty when the two agreed or only one build ran.
  std::string instrumented_said;

  bool is(const std::string &s) const { return symptom == s; }
};

llvm::json::Value toJSON(const Verdict &v);
std::optional<Verdict> verdictFromJSON(const std::string &text, std::string *err = nullptr);
llvm::json::Value toJSON(const RunRecord &r);
std::optional<RunRecord> runRecordFromJSON(const std::string &text, std::string *err = nullptr);

// The human form: class, detail, signature, evidence, timings.
std::string renderHuman(const Verdict &v);

}  // namespace wsr
