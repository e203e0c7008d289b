#include "tester.h"

#include <algorithm>

#include <clang/AST/ASTContext.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/ASTUnit.h>
#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/SHA256.h>

#include <chrono>
#include <filesystem>

namespace fs = std::filesystem;

namespace wsr {

namespace {
// The search's listing parses: the parse checks' kind, sharing their precompiled preambles.
class ClangSiteParser : public SiteParser {
 public:
  ClangSiteParser(std::string path, ParseOptions o) : checker_(std::move(path), std::move(o)) {}
  std::unique_ptr<ParsedSource> parse(const std::string &text) override {
    return checker_.parse(text);
  }
  void giveBack(std::unique_ptr<ParsedSource> p) override { checker_.giveBack(std::move(p)); }

 private:
  ParseChecker checker_;
};
}  // namespace

std::unique_ptr<SiteParser> Tester::siteParser() const {
  return std::make_unique<ClangSiteParser>(opt_.original_path, opt_.parse);
}

std::string contentHash(const std::string &text) {
  auto h = llvm::SHA256::hash(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
  static const char *d = "0123456789abcdef";
  std::string s;
  for (auto b : h) {
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

Tester::Tester(TestOptions o) : opt_(std::move(o)) {
  std::string dir = fs::path(fs::absolute(opt_.original_path)).parent_path().string();
  opt_.oracle.build.includes.push_back(dir);
  opt_.parse.includes.push_back(dir);
  if (auto h = harnessIncludeDir(); !h.empty()) opt_.parse.includes.push_back(h);
  ParseOptions strict = opt_.parse;
  strict.strict_return = true;
  checker_ = std::make_unique<ParseCheckerPool>(opt_.original_path, strict);
}

namespace {
// Kernel launches in the user's host code: `k<<<...>>>(...)`, cudaLaunchKernel*, cuLaunchKernel*.
struct Launches : clang::RecursiveASTVisitor<Launches> {
  int n = 0;
  bool VisitCUDAKernelCallExpr(clang::CUDAKernelCallExpr *) {
    ++n;
    return true;
  }
  bool VisitCallExpr(clang::CallExpr *c) {
    if (auto *f = c->getDirectCallee())
      if (f->getIdentifier() &&
          (f->getName().starts_with("cudaLaunch") || f->getName().starts_with("cuLaunch")))
        ++n;
    return true;
  }
};
}  // namespace

int kernelLaunches(const ParsedSource &parsed) {
  for (auto &side : parsed.sides) {
    if (side.device || !side.ast) continue;
    auto &ctx = side.ast->getASTContext();
    auto &sm = ctx.getSourceManager();
    Launches v;
    for (auto *d : ctx.getTranslationUnitDecl()->decls())
      if (!d->isImplicit() &&
          sm.getFileID(sm.getExpansionLoc(d->getBeginLoc())) == sm.getMainFileID())
        v.TraverseDecl(d);
    return v.n;
  }
  return 0;
}

void Tester::calibrateParseCheck(const std::string &original) {
  if (!opt_.parse_check) return;
  bool ok = checker_->check(original, nullptr,
                            [&](const ParsedSource &p) { original_launches_ = kernelLaunches(p); });
  if (ok) return;
  checker_ = std::make_unique<ParseCheckerPool>(opt_.original_path, opt_.parse);  // lenient
  checker_->check(original, nullptr,
                  [&](const ParsedSource &p) { original_launches_ = kernelLaunches(p); });
}

void Tester::remember(const std::string &hash, const TestResult &r) {
  std::lock_guard<std::mutex> l(m_);
  cache_[hash] = r;
}

TestResult Tester::run(const std::string &text, bool check_parse) {
  auto t0 = std::chrono::steady_clock::now();
  TestResult r;
  auto done = [&] {
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return r;
  };
  // Built and judged in a private directory; with the parse check, while the check's ASTs are
  // lent (ParseLoan) to the stages that would parse the same text again: the emulator's
  // translation and the watchdog's instrumentation.
  auto judgeIt = [&] {
    // The candidate keeps the original's file name (its extension picks the language, and
    // a script may look for it) in a private directory.
    std::string dir = makeTempDir("wscand.");
    std::string file = dir + "/" + fs::path(opt_.original_path).filename().string();
    if (dir.empty() || !writeFileAtomic(file, text)) {
      r.infra = true;
      r.detail = "infra-error/tmp";
      r.note = "cannot write a candidate under $TMPDIR";
      removeTree(dir);
      return;
    }
    if (!opt_.test_script.empty()) {
      RunOptions ro;
      ro.timeout_s = opt_.script_timeout_s;
      ro.workdir = dir;
      auto rr = runProcess({opt_.test_script, file}, ro);
      if (rr.spawn_failed) {
        r.infra = true;
        r.detail = "infra-error/spawn";
        r.note = rr.spawn_error;
      } else if (rr.cancelled) {  // killed by us (Ctrl-C): the script said nothing
        r.infra = true;
        r.detail = "infra-error/cancelled";
      } else {
        r.interesting = !rr.timed_out && rr.signal == 0 && rr.exit_code == 0;
        r.detail = rr.timed_out ? "script-timeout" : "script exit " + std::to_string(rr.exit_code);
      }
    } else {
      // The device is gone: not the candidate's failure (DeviceWatch).
      auto deviceLost = [&](const std::string &note) {
        r.infra = true;
        r.interesting = false;
        r.detail = "infra-error/device-lost";
        r.signature.clear();
        r.note = note;
        removeTree(dir);
      };
      if (device_.lost()) return deviceLost("not run: " + device_.why());
      OracleOptions oo = opt_.oracle;
      oo.confirm_plain = false;
      int g = takeGpu(&oo);
      if (g >= 0) r.gpu = opt_.gpus[(size_t)g];
      Verdict v = opt_.runs_per_gpu > 0 && resolveBackend(oo) == "gpu" && gpuPresent()
                      ? runInTurn(buildFor(file, oo), oo, g)
                      : judge(file, oo);
      releaseGpu(g);
      const auto judged = DeviceWatch::Clock::now();
      r.detail = v.detail;
      r.signature = v.signature;
      // An instruction the emulator does not implement is the candidate's own (the original ran):
      // a pass that edits an asm string reaches one in candidate after candidate, and counting
      // them as infra errors stopped a resumed H200 reduction of gemm_k_loop_short after 187 s
      //. It is judged as not interesting, and the search goes on. So is a
      // candidate that skips itself (WSSKIP, exit 77: infra-error/unsupported) where the original
      // ran: a device check the search took apart (an unset cudaDeviceProp) says so, and pdd's
      // nested prefixes, which all hold the same first sites, gave three in a row and stopped an
      // H200 reduction of the GEMM hang after 137 s. A machine that cannot
      // run the kernel at all shows it as a CUDA error, which stays an infra error.
      r.infra = v.symptom == "infra-error" && v.detail != "infra-error/unknown-instruction" &&
                v.detail != "infra-error/unsupported";
      r.note = v.evidence.empty() ? "" : v.evidence.front();
      r.interesting = v.symptom == opt_.symptom &&
                      (opt_.any_signature || v.signature == opt_.signature) &&
                      (opt_.oracle.classify.match.empty() || v.matched);
      r.build_ms = v.timings.build_ms;
      for (double x : v.timings.run_ms) r.run_ms += x;
      if (!r.interesting && v.symptom != "pass" && !device_.stillThere(judged))
        return deviceLost("the device is gone (" + device_.why() + "); the run said " + v.detail);
      // The same binary run again another way (zeroed locals, a coherent proxy): the candidate
      // stays interesting only when that verdict is `expected`; the trace counts every judgement.
      auto again = [&](const OracleOptions &ao) { return judge(file, ao); };
      auto recheck = [&](const std::optional<Verdict> &w, const Verdict &expected,
                         const char *detail, const std::string &how, const std::string &after) {
        if (!w) return;
        r.build_ms += w->timings.build_ms;
        for (double x : w->timings.run_ms) r.run_ms += x;
        if (sameFailure(*w, expected)) return;
        r.interesting = false;
        r.detail = detail;
        r.note = how + " the verdict is " + w->detail + " (" + w->signature + ")" + after;
      };
      if (r.interesting && locals_off_.empty())
        recheck(withZeroedLocals(v, oo, again), v, "locals-dependent", "with zeroed locals", "");
      if (r.interesting && proxy_cf_)
        recheck(withCoherentProxy(v, oo, again), *proxy_cf_, "fence-independent",
                "with a coherent async proxy (every fence.proxy.async in place)",
                ", the original's " + proxy_cf_->detail);
    }
    removeTree(dir);
  };
  if (int lost = lostKeptRegion(normalizeCode(text), opt_.keep); lost >= 0) {
    const KeptRegion &k = opt_.keep[(size_t)lost];
    r.detail = "kept-region-changed";
    r.note = "the candidate changes the kept region at lines " + std::to_string(k.first_line) +
             "-" + std::to_string(k.last_line) + " of the original";
    ++keep_skips_;
    return done();
  }
  if (check_parse) {
    std::string err;
    bool ok = checker_->check(text, &err, [&](const ParsedSource &parsed) {
      r.parse_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!opt_.test_script.empty()) return;  // a script parses nothing of ours
      // A GPU bug's repro launches a kernel: a candidate that launches none can still "show" a
      // wrong result (the host's poisoned output buffer, never written, compares as NaN), and
      // on the H200 a reduction of an out-of-bounds TMA store kept wrong:Y:nan with no kernel.
      if (original_launches_ > 0 && opt_.symptom != "compile-error" &&
          kernelLaunches(parsed) == 0) {
        r.detail = "no-kernel-launch";
        r.note = "the candidate launches no kernel (the original launches " +
                 std::to_string(original_launches_) + ")";
        return;
      }
      ParseLoan loan(parsed);
      judgeIt();
    });
    if (!ok) {
      r.parse_failed = true;
      r.detail = "parse-error";
      r.note = err;
      ++parse_skips_;
      return done();
    }
    if (!opt_.test_script.empty()) judgeIt();
    return done();
  }
  judgeIt();
  return done();
}

// A test cut short (or never started): not a verdict, not cached.
static TestResult cancelledResult() {
  TestResult r;
  r.cancelled = true;
  r.detail = "cancelled";
  return r;
}

TestResult Tester::test(const std::string &text) {
  std::string h = contentHash(text);
  std::shared_future<TestResult> twin;
  std::promise<TestResult> mine;
  {
    std::lock_guard<std::mutex> l(m_);
    auto it = cache_.find(h);
    if (it != cache_.end()) {
      ++hits_;
      TestResult c = it->second;
      c.cached = true;
      c.ms = 0;
      return c;
    }
    if (auto f = inflight_.find(h); f != inflight_.end())
      twin = f->second;
    else
      inflight_.emplace(h, mine.get_future().share());
  }
  if (twin.valid()) {  // the same text is being judged: its verdict is this one's
    while (twin.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready)
      if (threadCancelled()) {
        ++cancelled_;
        return cancelledResult();
      }
    TestResult c = twin.get();
    if (c.cancelled || c.infra) return test(text);  // that one said nothing: judge it here
    ++hits_;
    c.cached = true;
    c.ms = 0;
    return c;
  }
  TestResult r;
  if (!threadCancelled()) {
    ++tests_;
    r = run(text, opt_.parse_check);
  }
  if (threadCancelled()) {
    ++cancelled_;
    r = cancelledResult();
  } else if (!r.infra) {
    remember(h, r);  // an infra error says nothing about the candidate
  }
  {
    std::lock_guard<std::mutex> l(m_);
    inflight_.erase(h);
  }
  mine.set_value(r);
  return r;
}

Verdict Tester::runInTurn(const BuildRecord &b, const OracleOptions &oo, int g) {
  const size_t slot = g < 0 ? 0 : (size_t)g;
  TurnGate *gate;
  {
    std::lock_guard<std::mutex> l(run_m_);
    while (gates_.size() <= slot) gates_.push_back(std::make_unique<TurnGate>(opt_.runs_per_gpu));
    gate = gates_[slot].get();
  }
  // a candidate the search no longer needs stops waiting (its runs are then cancelled at once)
  const bool entered = gate->enter();
  Verdict v = judgeBuilt(b, oo);
  if (entered) gate->leave();
  return v;
}

bool TurnGate::enter() {
  std::unique_lock<std::mutex> l(m_);
  const auto me = std::make_pair(threadTurn(), arrivals_++);
  waiting_.insert(me);
  while (!threadCancelled() && !(inside_ < width_ && *waiting_.begin() == me))
    cv_.wait_for(l, std::chrono::milliseconds(50));
  waiting_.erase(me);
  const bool in = !threadCancelled();
  if (in) ++inside_;
  cv_.notify_all();  // the next in line may be able to enter now
  return in;
}

size_t TurnGate::waiting() {
  std::lock_guard<std::mutex> l(m_);
  return waiting_.size();
}

void TurnGate::leave() {
  {
    std::lock_guard<std::mutex> l(m_);
    --inside_;
  }
  cv_.notify_all();
}

int Tester::takeGpu(OracleOptions *oo) {
  if (opt_.gpus.empty() || resolveBackend(*oo) != "gpu") return -1;
  std::lock_guard<std::mutex> l(gpu_m_);
  if (gpu_load_.size() != opt_.gpus.size()) gpu_load_.assign(opt_.gpus.size(), 0);
  size_t g = std::min_element(gpu_load_.begin(), gpu_load_.end()) - gpu_load_.begin();
  ++gpu_load_[g];
  oo->run.env_set["CUDA_VISIBLE_DEVICES"] = opt_.gpus[g];
  return (int)g;
}

void Tester::releaseGpu(int g) {
  if (g < 0) return;
  std::lock_guard<std::mutex> l(gpu_m_);
  --gpu_load_[(size_t)g];
}

std::optional<Verdict> Tester::withZeroedLocals(
    const Verdict &v, OracleOptions oo,
    const std::function<Verdict(const OracleOptions &)> &judgeWith) const {
  if (!opt_.locals_check || v.backend != "emu" || !opt_.test_script.empty()) return std::nullopt;
  // The same build, run again: the translation fills each device local declared without an
  // initializer at run time (emu/runtime/device.h, uninit). A second build with
  // -ftrivial-auto-var-init=zero doubled the cost of each accepted step; on the
  // H200 the GEMM hang then reached 61 lines in 255 s where it had reached 38.
  oo.run.env_set["WSEMU_LOCALS"] = "zero";
  return judgeWith(oo);
}

std::optional<Verdict> Tester::withCoherentProxy(
    const Verdict &v, OracleOptions oo,
    const std::function<Verdict(const OracleOptions &)> &judgeWith) const {
  if (!opt_.proxy_check || v.backend != "emu" || !opt_.test_script.empty()) return std::nullopt;
  if (v.signature.find("proxy-unfenced") == std::string::npos) return std::nullopt;
  oo.run.env_set["WSEMU_PROXY"] =
      "coherent";  // the same build (emu/runtime/core.h, Config::coherent_proxy)
  return judgeWith(oo);
}

bool Tester::sameFailure(const Verdict &a, const Verdict &b) {
  return a.symptom == b.symptom && a.signature == b.signature;
}

Verdict Tester::judgeOriginal(const std::string &text, TestResult *as_result) {
  Verdict v;
  if (!opt_.test_script.empty()) {
    TestResult r = run(text, false);
    if (as_result) *as_result = r;
    v.symptom = r.interesting ? "interesting" : "not-interesting";
    v.detail = r.detail;
    return v;
  }
  OracleOptions oo = opt_.oracle;
  // On the emulator nvcc builds the program first when nvcc is here: a program nvcc rejects is
  // nvcc's compile error, whatever g++ makes of the translation.
  oo.emu_nvcc_first = !findNvcc(oo.build.nvcc).empty();
  if (opt_.test_script.empty() && resolveBackend(oo) == "gpu" && !device_.armed())
    device_.arm();
  int g = takeGpu(&oo);
  v = judgeText(text, fs::path(opt_.original_path).filename().string(), oo);
  releaseGpu(g);
  if (v.symptom == opt_.symptom) {
    OracleOptions zo = opt_.oracle;
    zo.emu_nvcc_first = false;  // nvcc has spoken
    auto again = [&](const OracleOptions &o) {
      return judgeText(text, fs::path(opt_.original_path).filename().string(), o);
    };
    auto z = withZeroedLocals(v, zo, again);
    if (z && !sameFailure(*z, v))
      locals_off_ = "the original's own verdict is " + z->detail + " (" + z->signature +
                    ") with zeroed locals";
    proxy_cf_ = withCoherentProxy(v, zo, again);
  }
  if (as_result) {
    as_result->detail = v.detail;
    as_result->signature = v.signature;
    as_result->infra = v.symptom == "infra-error";
    as_result->interesting =
        v.symptom == opt_.symptom && (opt_.oracle.classify.match.empty() || v.matched);
  }
  return v;
}

// How many times the original's emulated operations a candidate's launch may run (at least the
// floor) before the emulator calls it a livelock.
static constexpr unsigned long long kLivelockOpsFactor = 20, kLivelockOpsFloor = 1'000'000;

// The adaptive timeout, and no retry of a candidate killed at it: a retry would give it a
// verdict ("slow", or a hang nobody named) that cannot be the original's either way. On the H200
// one such retry held a ddmin stream for 30 s with 15 of 16 slots idle; wsfuzz's reductions on the
// emulator, which had neither, spent their 90 s budgets on 10 s + 20 s retries.
std::vector<std::string> Tester::tuneFromOriginal(const Verdict &original, double cap_s,
                                                  bool calibrate, bool retry) {
  std::vector<std::string> said;
  if (!original.instrumented_said.empty()) {
    opt_.oracle.build.watchdog = false;
    said.push_back("the original's verdict shows on its plain build only (the watchdog's copy said " +
                   original.instrumented_said + "): every candidate is built plain");
  }
  double longest = 0;
  bool finished = !original.runs.empty();
  for (auto &r : original.runs) {
    longest = std::max(longest, r.wall_ms);
    finished = finished && !r.timed_out;
  }
  if (!finished) return said;
  if (!retry) {
    opt_.oracle.retry_timeout = false;
    said.push_back(
        "the original finished on its own: a candidate killed at the timeout is not retried");
  }
  if (calibrate && longest > 0 && !opt_.oracle.build_only) {
    auto &to = opt_.oracle;
    to.calibrate = true;
    to.calibrate_observed_ms = longest;
    to.calibrate_k = 10;
    to.calibrate_floor_s = 2;
    to.calibrate_cap_s = cap_s;
    char buf[160];
    std::snprintf(
        buf, sizeof buf,
        "candidate timeout %.1f s = clamp(10 x %.0f ms, 2 s, %.0f s), from the original's run",
        calibratedTimeout(longest, 10, 2, cap_s), longest, cap_s);
    said.push_back(buf);
  }
  // On the emulator a candidate that loops for ever (a wait deleted from one side of a handoff:
  // the other side spins through its phases) was killed at that timeout: 60 candidates, 2 s each,
  // of one 280-s reduction on the H200, each holding its ddmin stream's verdict. The emulator
  // counts its operations and stops such a launch with hang/livelock instead.
  unsigned long long ops = 0;
  for (auto &l : original.evidence)  // the emulator's WSEMU lines
    if (l.rfind("WSEMU ops ", 0) == 0)
      ops = std::max(ops, std::strtoull(l.c_str() + 10, nullptr, 10));
  if (calibrate && original.backend == "emu" && ops > 0) {
    opt_.oracle.emu_max_ops = std::max(kLivelockOpsFactor * ops, kLivelockOpsFloor);
    said.push_back("a candidate's launch stops at " + std::to_string(opt_.oracle.emu_max_ops) +
                   " emulated operations (hang/livelock): " + std::to_string(kLivelockOpsFactor) +
                   " x the original's " + std::to_string(ops));
  }
  return said;
}

}  // namespace wsr
