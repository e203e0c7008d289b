#include "reduce.h"

#include "keeper.h"
#include "process.h"
#include "report.h"
#include "tidy.h"

#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace wsr {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string stemOf(const std::string &out) {
  return out.substr(0, out.size() - fs::path(out).extension().string().size());
}

// What the judge got for a text it refused, in the words the terminal and the report use.
std::string whatItGot(const TestResult &r) {
  return r.infra ? "could not be judged (" + r.detail + ")"
                 : "no longer fails the same way (" + r.detail +
                       (r.signature.empty() ? "" : ", signature " + r.signature) + ")";
}

// The state beside a result: what it is a reduction of, so that --resume goes on only from a
// result of the same input, and the search seconds it took.
struct State {
  std::string original;  // the input's content hash
  double spent_s = 0;
  long pid = 0;  // the run that wrote it
};

std::optional<State> readState(const std::string &path) {
  auto text = readFile(path);
  if (!text) return std::nullopt;
  auto j = llvm::json::parse(*text);
  auto *o = j ? j->getAsObject() : nullptr;
  if (!o || !o->getString("original")) return std::nullopt;
  State s;
  s.original = o->getString("original")->str();
  if (auto sp = o->getNumber("spent_s")) s.spent_s = std::max(0.0, *sp);
  if (auto pid = o->getInteger("pid")) s.pid = *pid;
  return s;
}

bool writeState(const std::string &path, const ReduceRequest &req, const std::string &hash,
                const std::string &signature, double spent_s, std::string *err) {
  llvm::json::Object s{{"original", hash},
                       {"input", fs::absolute(req.input_path).string()},
                       {"symptom", req.test.symptom},
                       {"signature", signature},
                       {"command", req.command},
                       {"spent_s", spent_s},
                       {"pid", (long)::getpid()}};
  std::string js;
  llvm::raw_string_ostream os(js);
  os << llvm::json::Value(std::move(s));
  return writeFileAtomic(path, os.str(), err);
}

// The process holding a flock on `fd`'s file, from /proc/locks (0 when it cannot be told).
long lockHolder(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return 0;
  auto locks = readFile("/proc/locks");
  if (!locks) return 0;
  char want[64];
  std::snprintf(want, sizeof want, ":%lu ", (unsigned long)st.st_ino);
  size_t at = 0;
  while (at < locks->size()) {
    size_t nl = locks->find('\n', at);
    std::string line = locks->substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? locks->size() : nl + 1;
    // "1: FLOCK  ADVISORY  WRITE 4242 fe:01:1234567 0 EOF"
    if (line.find("FLOCK") == std::string::npos || line.find(want) == std::string::npos) continue;
    long pid = 0;
    char kind[16], mode[16], rw[16];
    if (std::sscanf(line.c_str(), "%*d: %15s %15s %15s %ld", kind, mode, rw, &pid) == 4 && pid > 0)
      return pid;
  }
  return 0;
}

// The finish: a standalone, tidy, formatted program, each step kept only if the failure survives
// it. A program that only returns the harness's exit code (a hang, a crash: the search stopped
// before taking that return) is tried without the harness first; what still needs the harness
// gets it inlined. tidy's rewrites are for the user's code, so they come before the inlining;
// they are judged round by round (mutators/tidy.h), so that a rewrite the judge refuses is left
// out and the others are taken. Of the 100-column format and the one that never breaks a line
// for length (an asm string broken over lines), the one with fewer lines.
std::string finish(const std::string &searched, const ReduceRequest &req, Tester &tester,
                   std::vector<std::string> *notes, std::vector<std::string> *run_notes) {
  auto say = [&](const std::string &note) {
    if (req.say) req.say(note);
    notes->push_back(note);
  };
  const double deadline = req.finish_budget_s > 0 ? now_s() + req.finish_budget_s : 0;
  auto out_of_time = [&] { return deadline > 0 && now_s() > deadline; };
  const unsigned interrupts0 = interruptCount();  // Ctrl-C during the finish stops it
  ParseOptions tidy_po = req.test.parse;
  tidy_po.includes.push_back(fs::absolute(req.input_path).parent_path().string());
  if (auto h = harnessIncludeDir(); !h.empty()) tidy_po.includes.push_back(h);
  struct Step {
    const char *name;
    std::function<std::string(const std::string &)> apply;
    bool expected;  // expected to keep the failure (dropping the harness is only tried)
    // Not taken when it alone would make the program longer than the input (the layout of a
    // search its budget stopped early, an input's one-line if/else): a reduction never reports
    // growth. Like with like: the harness as an #include on both sides.
    bool never_grow = false;
  };
  const std::vector<Step> steps = {
      {"dropping the harness", dropHarness, false},
      {"tidy",
       [&](const std::string &b) {
         int left_out = 0;
         std::string why;  // what the last refused text got
         std::string tidied = tidyProgramJudged(
             b, req.input_path, tidy_po, 8,
             [&](const std::string &c) {
               if (out_of_time() || interruptCount() != interrupts0) {
                 why = "";  // not judged
                 return false;
               }
               if (!req.test.keep.empty() && lostKeptRegion(normalizeCode(c), req.test.keep) >= 0) {
                 why = "would change a region kept as written";
                 return false;
               }
               TestResult r = tester.test(c);
               if (!r.interesting) why = whatItGot(r);
               return r.interesting;
             },
             &left_out);
         if (left_out > 0 && interruptCount() == interrupts0)
           say(std::string("tidy left out ") + std::to_string(left_out) +
               (left_out == 1 ? " rewrite" : " rewrites") +
               (why.empty() ? ": the finish's time was spent before they were judged"
                            : std::string(": with ") + (left_out == 1 ? "it" : "the last") +
                                  " the program " + why));
         return tidied;
       },
       true},
      {"inlining the harness", inlineHarness, true},
      {"formatting",
       [](const std::string &b) {
         std::string formatted = formatCuda(b), unbroken = formatCuda(b, 0);
         return countNonBlankLines(unbroken) < countNonBlankLines(formatted) ? unbroken
                                                                            : formatted;
       },
       true, true}};
  std::string best = searched;
  for (auto &step : steps) {
    if (out_of_time()) {
      const std::string n = std::string("the finish's ") +
                            std::to_string((int)req.finish_budget_s) +
                            " s were spent: the result is not finished by " + step.name;
      if (req.say) req.say(n);
      run_notes->push_back(n);
      continue;
    }
    std::string next = step.apply(best);
    if (interruptCount() != interrupts0) break;
    if (next == best) continue;
    TestResult r = tester.test(next);
    if (interruptCount() != interrupts0) break;
    const auto lines = [](const std::string &t) { return countNonBlankLines(uninlineHarness(t)); };
    if (r.interesting && step.never_grow && lines(next) > lines(req.text) &&
        lines(best) <= lines(req.text))
      run_notes->push_back(std::string("not finished by ") + step.name +
                           ": it would make the program longer than the input");
    else if (r.interesting)
      best = next;
    else if (step.expected)
      say(std::string("the result is not finished by ") + step.name + ": with it the program " +
          whatItGot(r));
  }
  if (interruptCount() != interrupts0 && req.say)
    req.say("interrupted during the finish: the result is written as far as the finish got");
  return best;
}

// The flattened program in place of the input, when the judge sees the same failure in it: the
// original's verdict and signature (a script: interesting). When it does not, the header whose
// flattening changed it is found by bisection over the program's top-level #include trees (the
// first k inlined, the others kept as they are), and the one sentence that names it is returned.
std::string flattenJudged(ReduceRequest &req, Tester &tester, const Flattener &flattener,
                          ReduceOutcome &out) {
  FlattenResult all = flattener.flatten();
  if (all.headers == 0) return "";  // nothing to inline: the program is reduced as it is
  const std::string summary = flattenSummary(req.text, all);
  if (req.say) req.say(summary + "; judging the flattened program ...");
  const bool script = !req.test.test_script.empty();
  auto same = [&](const std::string &text, Verdict *got) {
    TestResult r;
    Verdict v = tester.judgeOriginal(text, &r);
    if (got) *got = v;
    return script ? r.interesting
                  : v.detail == out.original.detail && v.signature == out.original.signature;
  };
  Verdict flat;
  if (!same(all.text, &flat)) {
    size_t keeps = 0, changes = flattener.trees();  // the first `keeps` trees keep the verdict
    while (changes - keeps > 1) {
      const size_t mid = (keeps + changes) / 2;
      (same(flattener.flattenFirstTrees(mid).text, nullptr) ? keeps : changes) = mid;
    }
    const std::string what =
        script ? "makes " + req.test.test_script + " call it not interesting (" + flat.detail + ")"
               : "changes its verdict from " + out.original.detail + " (" + out.original.signature +
                     ") to " + flat.detail + " (" + flat.signature + ")";
    return "flattening the headers of " + req.input_path + " " + what +
           (changes >= 1 && changes <= flattener.trees()
                ? ", and the header whose inlining does it is " + flattener.treeName(changes - 1) +
                      " (with what it includes)"
                : std::string()) +
           "; nothing was reduced (--flatten=none reduces the program as it is, or --flatten=DIRS "
           "inlines fewer)";
  }
  out.flattened = summary;
  req.text = all.text;
  return "";
}

}  // namespace

std::string defaultOutputPath(const std::string &input_path) {
  fs::path p(input_path);
  return (p.parent_path() / (p.stem().string() + ".min" + p.extension().string())).string();
}

int ReduceOutcome::exitCode() const {
  switch (status) {
    case Status::Reduced:
      return interrupted ? 130 : confirm_differs ? 4 : 0;
    case Status::NotInteresting:
      return 1;
    case Status::Infra:
    case Status::Stopped:
      return 3;
    case Status::Interrupted:
      return 130;
    case Status::Error:
      return 2;
  }
  return 2;
}

ReduceOutcome reduce(ReduceRequest req) {
  ReduceOutcome out;
  auto say = [&](const std::string &s) {
    if (req.say) req.say(s);
  };
  const bool script = !req.test.test_script.empty();
  const std::string stem = stemOf(req.out_path);
  const std::string state_path = stem + ".state.json", trace_path = stem + ".trace.jsonl";
  // A refusal before the search changes nothing on disk: the trace this run created goes.
  bool created_trace = false;
  auto fail = [&](ReduceOutcome::Status st, const std::string &msg) {
    out.status = st;
    out.message = msg;
    if (created_trace) ::unlink(trace_path.c_str());
    return out;
  };
  out.report_path = stem + ".md";
  req.test.original_path = fs::absolute(req.input_path).string();
  // One run per output: the trace (appended to, never replaced) holds an advisory lock for as
  // long as this run lives; the kernel drops it whatever ends the run.
  std::error_code ec;
  created_trace = !fs::exists(trace_path, ec);
  const int lock_fd = ::open(trace_path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (lock_fd < 0)
    return fail(ReduceOutcome::Status::Error,
                "cannot write " + trace_path + ": " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } lock_closer{lock_fd};
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    long pid = lockHolder(lock_fd);
    if (auto st = readState(state_path); pid == 0 && st) pid = st->pid;
    return fail(ReduceOutcome::Status::Error,
                "another run" + (pid > 0 ? " (pid " + std::to_string(pid) + ")" : std::string()) +
                    " is reducing into " + req.out_path +
                    "; wait for it to end or give another -o");
  }
  // A program whose headers cannot be followed (one not found, an include cycle) is refused
  // before anything is judged.
  std::unique_ptr<Flattener> flattener;
  if (req.flatten) {
    std::string err;
    flattener = Flattener::preprocess(req.text, req.input_path, *req.flatten, &err);
    if (!flattener) return fail(ReduceOutcome::Status::Error, err);
  }
  Tester tester(req.test);
  OracleOptions &oo = tester.oracleOptions();
  out.backend = resolveBackend(oo);

  GpuKeepers keepers;
  if (req.keepers && out.backend == "gpu" && !script && gpuPresent())
    say(keepers.start(req.test.gpus, oo.build));
  if (req.test.gpus.size() > 1 && out.backend == "gpu") {
    std::string l;
    for (auto &g : req.test.gpus) l += " " + g;
    say("candidates spread over " + std::to_string(req.test.gpus.size()) +
        " GPUs (CUDA_VISIBLE_DEVICES" + l + "), each run on the least busy");
  }

  // 1. The original must show the symptom: nothing to reduce otherwise.
  say("judging the original " + req.input_path + " ...");
  TestResult orig;
  out.original = tester.judgeOriginal(req.text, &orig);
  if (!orig.interesting && req.fallback) {
    // The backends disagree on this program (the emulator hangs where the GPU traps, say), or the
    // first cannot judge it here (no GPU): it is reduced on the fallback oracle, and the outcome
    // says so.
    out.fell_back = "reduced on " + resolveBackend(*req.fallback) + " (" + out.backend +
                    " did not reproduce it: " + out.original.detail + ")";
    say(out.fell_back);
    oo = *req.fallback;
    out.backend = resolveBackend(oo);
    req.confirm.reset();  // the fallback is the oracle the result would be confirmed on
    out.original = tester.judgeOriginal(req.text, &orig);
  }
  if (out.original.detail == "infra-error/unsupported")
    return fail(ReduceOutcome::Status::Infra,
                "the " + out.backend + " backend cannot judge the original (" +
                    (out.original.evidence.empty() ? out.original.detail
                                                   : out.original.evidence.front()) +
                    "); judge it where it can run (--backend gpu on a machine with a GPU)");
  if (orig.infra)
    return fail(ReduceOutcome::Status::Infra,
                "the oracle could not judge the original (" + out.original.detail +
                    "): " + (out.original.evidence.empty() ? "" : out.original.evidence.front()));
  if (!orig.interesting) {
    if (script)
      return fail(
          ReduceOutcome::Status::NotInteresting,
          "the original is not interesting: " + req.test.test_script + " gave " + orig.detail);
    // On the emulator a deadlock is named when every thread parks, with no kill: a kill at the
    // timeout is a program still running (a K-loop GEMM runs 9.8 s there).
    if (out.backend == "emu" && out.original.is("hang") && !out.original.runs.empty() &&
        out.original.runs.front().timed_out && req.test.symptom != "hang")
      say(llvm::formatv("the emulator was still running the original when --timeout killed it "
                        "({0:F0} s); it names the deadlocks it sees without a kill, so the "
                        "program may only be slow on this CPU: a larger --timeout tells the two "
                        "apart",
                        req.timeout_cap_s)
              .str());
    return fail(ReduceOutcome::Status::NotInteresting,
                req.input_path + " does not show the symptom " + req.test.symptom +
                    ": its verdict is " + out.original.detail + "; nothing to reduce");
  }
  // A wrong result that says nothing of itself but its exit status: any program that exits so
  // would do, and a reduction ends in `return 1`. What to keep has to be said.
  if (!script && req.test.symptom == "wrong" && !req.test.any_signature &&
      req.test.oracle.classify.match.empty() && req.test.keep.empty() &&
      out.original.detail == "wrong/unspecified" &&
      out.original.signature.find(":report=") == std::string::npos)
    return fail(ReduceOutcome::Status::Error,
                req.input_path + " fails only by its exit status and prints no failure report, so "
                "a reduction could keep any program that exits so: give --match REGEX (a line its "
                "failure prints), mark its check with // wsreduce: keep begin/end, or report with "
                "wscheck.h (--any-signature takes the risk)");
  if (flattener)
    if (std::string e = flattenJudged(req, tester, *flattener, out); !e.empty())
      return fail(ReduceOutcome::Status::Error, e);
  out.input_text = req.text;
  if (!out.flattened.empty()) say(out.flattened + ": the flattened program fails the same way");
  std::future<Verdict> confirm_original;
  if (!script) {
    tester.setSignature(out.original.signature);
    say("original verdict " + out.original.detail + ", signature " + out.original.signature +
        " (backend " + out.backend + ")");
    if (!tester.localsCheckOff().empty())
      say("candidates are not judged again with zeroed locals: " + tester.localsCheckOff());
    // The original on the confirming oracle, while the search runs (a core for a while, not wall
    // time at the end): a bug the GPU's timing hides passes there before and after.
    if (req.confirm && !req.confirm_original && resolveBackend(*req.confirm) == out.backend)
      req.confirm_original = out.original;
    if (req.confirm && !req.confirm_original && req.confirm_missing.empty()) {
      OracleOptions c = *req.confirm;
      std::string name = fs::path(req.input_path).filename().string(), text = req.text;
      confirm_original =
          std::async(std::launch::async, [c, name, text] { return judgeText(text, name, c); });
    }
    if (auto &c = tester.coherentProxyVerdict())
      say("the original reads shared bytes the async proxy had not seen; with a coherent proxy "
          "(every fence.proxy.async in place) its verdict is " +
          c->detail + ", and every candidate's must be the same");
    // A fallback oracle comes calibrated as its owner wants it.
    const bool calibrate = req.calibrate && out.fell_back.empty();
    for (auto &line : tester.tuneFromOriginal(out.original, req.timeout_cap_s, calibrate, false))
      say(line);
  }
  tester.calibrateParseCheck(req.text);

  // 2. Where the search starts: the input, or the best program of an earlier run of it.
  std::string start = req.text;
  const std::string hash = contentHash(req.text);
  double spent_before = 0;
  bool resumed = false;
  if (req.resume) {
    auto st = readState(state_path);
    auto best = readFile(req.out_path);
    if (st && best && st->original == hash) {
      start = *best;
      spent_before = st->spent_s;
      resumed = true;
      say("resuming from " + req.out_path + " (" + std::to_string(countNonBlankLines(start)) +
          " lines)");
    } else if (st && best) {
      say(req.out_path + " belongs to another input; starting over");
    } else {
      say("nothing to resume at " + req.out_path + "; starting from the input");
    }
  }
  // A finished result holds the harness inlined: it goes back to an include while the search
  // runs, so that no pass can edit the judge's own comparison, when the judge agrees.
  if (!script) {
    std::string plain = uninlineHarness(start);
    if (plain != start) {
      if (tester.test(plain).interesting) {
        start = plain;
        say("the inlined harness header is `#include \"wscheck.h\"` again while the search runs");
      } else {
        say("the program with `#include \"wscheck.h\"` for its inlined harness header does not "
            "fail the same way; the inlined copy stays and the passes may edit it");
      }
    }
  }
  // The judge may have learned since: a program to resume from that no longer fails the same
  // way is not where a search can start.
  if (start != req.text) {
    TestResult r = tester.test(start);
    if (!r.interesting && !r.infra) {
      say("the program to resume from no longer fails the same way (" + r.detail +
          (r.signature.empty() ? "" : ", signature " + r.signature) + "); starting from the input");
      start = req.text;
      spent_before = 0;
      resumed = false;
    }
  }
  if (!resumed && ::ftruncate(lock_fd, 0) != 0)  // the trace is of this reduction only
    return fail(ReduceOutcome::Status::Error,
                "cannot write " + trace_path + ": " + std::strerror(errno));
  out.resumed_s = spent_before;
  std::string err;
  if (!writeState(state_path, req, hash, out.original.signature, spent_before, &err) ||
      !writeFileAtomic(req.out_path, start, &err))
    return fail(ReduceOutcome::Status::Error, err);
  created_trace = false;  // from here on the trace is this run's record

  // 3. The search.
  SearchOptions so = req.search;
  so.best_path = req.out_path;
  so.trace_path = trace_path;
  if (req.budget_includes_resumed && so.budget_s > 0)
    so.budget_s = std::max(1.0, so.budget_s - spent_before);
  // On the GPU a run of the full problem is under a second, most of it the process's start, and
  // nvcc costs more: the shape passes' first round waits for the structure passes' (search.h).
  // A compile error is judged without a run at all. On the emulator a run's time grows with the
  // problem, and the minimum shape comes first.
  if ((out.backend == "gpu" || req.test.symptom == "compile-error") && !so.full_shape_first)
    so.shape_after_structure = true;
  if (req.test.symptom == "compile-error" && so.schedule.is_standard)
    so.schedule = Schedule::standard(/*build_symptom=*/true);
  Search search(tester, so, req.progress);
  const double t0 = now_s();
  auto spent = [&] { return spent_before + now_s() - t0; };
  try {
    out.searched = search.run(start);
  } catch (const SearchStop &stop) {
    out.stats = search.stats();
    out.interrupted = stop.reason == "interrupted";
    if (!stop.budget && !(out.interrupted && req.finish_when_interrupted)) {
      // The best program so far is on disk (the search writes it after every accepted step).
      writeState(state_path, req, hash, out.original.signature, spent(), &err);
      if (out.interrupted)
        return fail(
            ReduceOutcome::Status::Interrupted,
            "interrupted; the best program so far is in " + req.out_path + " (--resume continues)");
      return fail(ReduceOutcome::Status::Stopped,
                  "stopped: " + stop.reason + "; the best program so far is in " + req.out_path);
    }
    // The user asked for the best program this much search finds: finish it as a result.
    out.searched = search.best();
    out.budget_spent = stop.budget;
    say(out.interrupted ? "interrupted; finishing the best program so far (interrupt again to "
                          "stop the finish)"
                        : stop.reason + "; finishing the best program so far");
  }
  out.stats = search.stats();
  out.spent_s = spent();

  // 4. The finish, the result on disk, the report, the confirmation.
  const unsigned interrupts_before_finish = interruptCount();
  out.best = finish(out.searched, req, tester, &out.finish_notes, &out.run_notes);
  const bool stopped = interruptCount() != interrupts_before_finish;  // no more judging
  out.best_lines = countNonBlankLines(uninlineHarness(out.best));
  if (!writeFileAtomic(req.out_path, out.best, &err) ||
      !writeState(state_path, req, hash, out.original.signature, out.spent_s, &err))
    return fail(ReduceOutcome::Status::Error, err);
  if (script) {
    out.reduced = out.original;
  } else if (stopped) {
    out.reduced.symptom = "infra-error";
    out.reduced.detail = "infra-error/cancelled";
    out.reduced.evidence.push_back("not judged: the run was interrupted during the finish");
  } else {
    out.reduced = tester.judgeOriginal(out.best);
  }
  if (stopped) out.interrupted = true;
  if (out.interrupted)
    out.run_notes.push_back("interrupted (Ctrl-C): this is the best program the search had then" +
                            std::string(stopped ? ", written as far as the finish got" : ""));
  if (out.budget_spent)
    out.run_notes.push_back("the search stopped when its budget of " +
                            std::to_string((int)req.search.budget_s) +
                            " s was spent: this is the best program it had then");
  if (req.confirm && !script && req.confirm_missing.empty() && !stopped) {
    out.confirmed = judgeText(out.best, fs::path(req.input_path).filename().string(), *req.confirm);
    if (req.confirm_original)
      out.confirmed_original = req.confirm_original;
    else if (confirm_original.valid())
      out.confirmed_original = confirm_original.get();
    const bool same = out.confirmed->symptom == out.reduced.symptom;
    // The original's class there, when it is the result's: the reduction kept what that oracle
    // shows (a bug the GPU's timing hides passes there before and after).
    const bool as_original =
        out.confirmed_original && out.confirmed_original->symptom == out.confirmed->symptom;
    out.confirm_differs = !same && !as_original;
  }
  out.tests = tester.tests();
  if (req.write_report) {
    ReportInput ri;
    ri.original_path = req.input_path;
    ri.reduced_path = req.out_path;
    ri.command = req.command;
    ri.original_text = req.text;
    ri.reduced_text = out.best;
    ri.finish_notes = out.finish_notes;
    ri.run_notes = out.run_notes;
    if (!out.flattened.empty())
      ri.run_notes.insert(ri.run_notes.begin(),
                          out.flattened + " before the search (the program's own and its -I "
                                          "folders' headers inlined): the sizes above are of that "
                                          "one file");
    ri.original = out.original;
    ri.reduced = out.reduced;
    ri.build = oo.build;
    ri.program_args = oo.program_args;
    ri.backend = out.backend;
    if (out.backend == "emu") ri.policies = oo.policies;
    ri.confirmed = out.confirmed;
    ri.confirmed_original = out.confirmed_original;
    ri.confirm_note = req.confirm_missing;
    ri.wall_s = out.stats.elapsed_s;
    ri.tests = out.tests;
    ri.cache_hits = tester.cacheHits();
    ri.parse_skips = tester.parseSkips();
    ri.kept = req.test.keep;
    ri.keep_skips = tester.keepSkips();
    if (!writeFileAtomic(out.report_path, writeReport(ri), &err))
      return fail(ReduceOutcome::Status::Error, err);
  }
  out.status = ReduceOutcome::Status::Reduced;
  return out;
}

}  // namespace wsr
