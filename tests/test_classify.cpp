// The classifier is a pure function: what a build and its runs produced -> a Verdict.
// Each test is a recorded or synthetic run, the verdict it must get, and why.
#include "classify.h"
#include "oracle.h"
#include "process.h"

#include <gtest/gtest.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <csignal>
#include <filesystem>
#include <fstream>

using namespace wsr;
namespace fs = std::filesystem;

namespace {
BuildRecord built() {
  BuildRecord b;
  b.ok = true;
  return b;
}
BuildRecord failedBuild(const std::string &log, int code = 1) {
  BuildRecord b;
  b.ok = false;
  b.exit_code = code;
  b.log = log;
  return b;
}
RunRecord exited(int code, const std::string &out = "", const std::string &err = "") {
  RunRecord r;
  r.exit_code = code;
  r.out = out;
  r.err = err;
  r.wall_ms = 12;
  return r;
}
Verdict one(const RunRecord &r, ClassifyOptions o = {}) { return classify(built(), {r}, o); }
}  // namespace

// ---- build failures ------------------------------------------------------------------

TEST(ClassifyBuild, MissingCompilerIsInfraNotAProgramFailure) {
  BuildRecord b;
  b.tool_missing = true;
  b.tool_error = "nvcc was not found";
  auto v = classify(b, {}, {});
  EXPECT_EQ(v.symptom, "infra-error");
  EXPECT_EQ(v.detail, "infra-error/compiler-missing");
}

// A compiler the tool killed (a cancelled candidate, Ctrl-C during the finish) reported nothing
// about the program: never a compile-error/ice, which is what its SIGKILL looks like.
TEST(ClassifyBuild, ACompilerTheToolKilledIsCancelledNotAnInternalError) {
  BuildRecord b;
  b.cancelled = b.timed_out = true;
  b.log = "nvcc: killed";
  Verdict v = classify(b, {}, {});
  EXPECT_EQ(v.symptom, "infra-error");
  EXPECT_EQ(v.detail, "infra-error/cancelled");
  b.cancelled = false;
  EXPECT_EQ(classify(b, {}, {}).detail, "compile-error/ice") << "the control: a compiler timeout";
}

TEST(ClassifyRun, ARunTheToolKilledIsCancelledNotAHang) {
  BuildRecord b;
  b.ok = true;
  RunRecord r;
  r.timed_out = r.cancelled = true;
  EXPECT_EQ(classify(b, {r}, {}).detail, "infra-error/cancelled");
  r.cancelled = false;
  EXPECT_EQ(classify(b, {r}, {}).detail, "hang/unknown") << "the control: a timeout of our own";
}

TEST(ClassifyBuild, FrontendErrorSignatureIgnoresPathAndLine) {
  // A reducer deletes lines above the error: the signature must not move with them.
  auto a = classify(
      failedBuild("/tmp/cand1/kernel.cu(212): error: expected a \";\"\n1 error detected"), {}, {});
  auto b = classify(failedBuild("/tmp/cand9/kernel.cu(7): error: expected a \";\"\n"), {}, {});
  EXPECT_EQ(a.detail, "compile-error/frontend");
  EXPECT_EQ(a.signature, "compile-error:frontend:error: expected a \";\"");
  EXPECT_EQ(a.signature, b.signature);
}

TEST(ClassifyBuild, ClangStyleLocationsAreNormalisedToo) {
  auto v = classify(failedBuild("x.cu:12:5: error: use of undeclared identifier 'foo'"), {}, {});
  EXPECT_EQ(v.signature, "compile-error:frontend:error: use of undeclared identifier 'foo'");
}

TEST(ClassifyBuild, PtxasErrorIsItsOwnClass) {
  // What nvcc 13 prints for wgmma built for plain sm_90 (wrong build: docs/methodology.md step 2).
  auto v = classify(
      failedBuild("ptxas /tmp/tmpxft_0001a2b3_00000000-6_k.ptx, line 31; error   : Instruction "
                  "'wgmma.fence' not supported on .target 'sm_90'\n"
                  "ptxas fatal   : Ptx assembly aborted due to errors\n"),
      {}, {});
  EXPECT_EQ(v.detail, "compile-error/ptxas");
  EXPECT_EQ(v.signature,
            "compile-error:ptxas:ptxas error : Instruction 'wgmma.fence' not supported on .target "
            "'sm_90'");
}

TEST(ClassifyBuild, CompilerCrashIsIce) {
  auto v = classify(
      failedBuild("nvcc error   : 'cicc' died due to signal 11 (Invalid memory reference)"), {},
      {});
  EXPECT_EQ(v.detail, "compile-error/ice");
  BuildRecord killed = failedBuild("");
  killed.signal = SIGSEGV;
  EXPECT_EQ(classify(killed, {}, {}).detail, "compile-error/ice");
}

// A failed static_assert is the program's own error, not the compiler's crash. The emulator's build
// turns what ptxas would refuse (setmaxnreg.inc 1) into one that names ptxas: the same class.
TEST(ClassifyBuild, AStaticAssertIsNotACompilerCrash) {
  auto user = classify(failedBuild("k.cu(50): error: static assertion failed with \"TILE_ROWS must "
                                   "split over the 4 consumer warps\"\n"),
                       {}, {});
  EXPECT_EQ(user.detail, "compile-error/frontend");
  auto gxx = classify(failedBuild("k.emu.cpp:50:15: error: static assertion failed: TILE_ROWS must "
                                  "split over the 4 consumer warps\n"),
                      {}, {});
  EXPECT_EQ(gxx.detail, "compile-error/frontend");
  auto emu = classify(failedBuild("k.min.cu:133:44: error: static assertion failed: ptxas: "
                                  "setmaxnreg.inc takes a register count "
                                  "of 24-256 in multiples of 8\n"),
                      {}, {});
  EXPECT_EQ(emu.detail, "compile-error/ptxas");
  EXPECT_EQ(emu.signature,
            "compile-error:ptxas:ptxas: setmaxnreg.inc takes a register count of 24-256 in "
            "multiples of 8");
}

TEST(ClassifyBuild, LinkErrorIsNotAFrontendError) {
  auto v = classify(failedBuild("/usr/bin/ld: k.o: in function `main':\nk.cu:(.text+0x1d): "
                                "undefined reference to `launch_gemm'\n"
                                "collect2: error: ld returned 1 exit status"),
                    {}, {});
  EXPECT_EQ(v.detail, "compile-error/link");
}

// ---- runs -----------------------------------------------------------------------------

TEST(ClassifyRun, TimeoutWithoutWatchdogIsHangUnknown) {
  RunRecord r;
  r.timed_out = true;
  r.wall_ms = 10000;
  auto v = one(r);
  EXPECT_EQ(v.detail, "hang/unknown");
  EXPECT_EQ(v.signature, "hang:unknown");
}

TEST(ClassifyRun, IllegalAddressIsCrashWithItsCode) {
  auto v =
      one(exited(1, "", "CUDA error: an illegal memory access was encountered (700) at k.cu:88\n"));
  EXPECT_EQ(v.detail, "crash/illegal-address");
  EXPECT_EQ(v.signature, "crash:700");
}

TEST(ClassifyRun, ThePoisonedContextRepeatsTheFirstErrorAndTheFirstWins) {
  auto v = one(exited(1, "",
                      "kernel failed: unspecified launch failure\n"
                      "cudaMemcpy failed: unspecified launch failure\n"));
  EXPECT_EQ(v.detail, "crash/launch-failure");
  EXPECT_EQ(v.signature, "crash:719");
}

TEST(ClassifyRun, MisalignedAndIllegalInstructionByName) {
  EXPECT_EQ(one(exited(1, "", "error cudaErrorMisalignedAddress\n")).detail, "crash/misaligned");
  EXPECT_EQ(one(exited(1, "", "CUDA_ERROR_ILLEGAL_INSTRUCTION\n")).detail,
            "crash/illegal-instruction");
}

TEST(ClassifyRun, NoGpuIsInfraErrorNeverCrash) {
  auto v = one(exited(
      1, "", "CUDA error: CUDA driver version is insufficient for CUDA runtime version (35)\n"));
  EXPECT_EQ(v.symptom, "infra-error");
  EXPECT_EQ(v.detail, "infra-error/no-gpu");
  EXPECT_EQ(one(exited(1, "no CUDA-capable device is detected\n")).symptom, "infra-error");
}

TEST(ClassifyRun, SkipLineWithExit77IsUnsupportedInfra) {
  auto v = one(exited(77, "WSSKIP needs sm_100a (Blackwell); this device is sm_90\n"));
  EXPECT_EQ(v.detail, "infra-error/unsupported");
}

TEST(ClassifyRun, HostSignalIsCrashHost) {
  RunRecord r = exited(128 + SIGSEGV);
  r.signal = SIGSEGV;
  auto v = one(r);
  EXPECT_EQ(v.detail, "crash/host");
  EXPECT_EQ(v.signature, "crash:host:SIGSEGV");
}

TEST(ClassifyRun, HarnessLineGivesTheWrongShape) {
  auto v = one(exited(1,
                      "WSCHECK name=C rows=512 cols=512 bad=16384 nan=0 max_abs=3 max_rel=1 "
                      "badrows=0-31 badcols=0-511 shape=row-stripe\n"));
  EXPECT_EQ(v.detail, "wrong/row-stripe");
  EXPECT_EQ(v.signature, "wrong:C:row-stripe");
}

TEST(ClassifyRun, SameShapeOnOtherRowsIsTheSameBug) {
  // docs/bugs.md: an early release corrupts different rows every run; the class and shape hold.
  auto a = one(exited(1,
                      "WSCHECK name=C rows=256 cols=256 bad=128 nan=0 max_abs=1 max_rel=1 "
                      "badrows=3,77 badcols=0-255 shape=row-stripe\n"));
  auto b = one(exited(1,
                      "WSCHECK name=C rows=256 cols=256 bad=128 nan=0 max_abs=1 max_rel=1 "
                      "badrows=12,200 badcols=0-255 shape=row-stripe\n"));
  EXPECT_EQ(a.signature, b.signature);
}

TEST(ClassifyRun, FirstFailingTensorDecides) {
  auto v = one(exited(1,
                      "WSCHECK name=S rows=8 cols=8 bad=0 nan=0 max_abs=0 max_rel=0 badrows=- "
                      "badcols=- shape=none\n"
                      "WSCHECK name=O rows=8 cols=8 bad=64 nan=64 max_abs=0 max_rel=0 badrows=0-7 "
                      "badcols=0-7 shape=nan\n"));
  EXPECT_EQ(v.detail, "wrong/nan");
  EXPECT_EQ(v.signature, "wrong:O:nan(all)");  // every element
}

// Some rows NaN (a consumer loop one tile short) and every element NaN (a kernel that writes
// nothing over a poisoned buffer) are one detail but two failures: a reduction must not trade
// the one for the other.
TEST(ClassifyRun, EveryElementWrongIsNotTheSameFailureAsSome) {
  auto part = one(exited(1,
                         "WSCHECK name=Y rows=512 cols=32 bad=128 nan=128 max_abs=0 max_rel=0 "
                         "badrows=508-511 badcols=0-31 shape=nan\n"));
  auto all = one(exited(1,
                        "WSCHECK name=Y rows=512 cols=32 bad=16384 nan=16384 max_abs=0 max_rel=0 "
                        "badrows=0-511 badcols=0-31 shape=nan\n"));
  EXPECT_EQ(part.detail, "wrong/nan");
  EXPECT_EQ(all.detail, "wrong/nan");
  EXPECT_EQ(part.signature, "wrong:Y:nan");
  EXPECT_EQ(all.signature, "wrong:Y:nan(all)");
}

// NaN among wrong values of another shape is said (+some-nan): on the emulator it is memory nobody
// wrote (filled with a NaN pattern), on the GPU whatever was there. An H200 reduction of
// gemm_k_loop_short kept wrong:C:row-stripe with 6144 NaN on the emulator, none on
// the GPU; the original has none. A NaN-shaped result says it in its shape already.
TEST(ClassifyRun, NaNAmongWrongValuesOfAnotherShapeIsNotTheSameFailure) {
  auto none = one(exited(1,
                         "WSCHECK name=C rows=128 cols=128 bad=16310 nan=0 max_abs=3 max_rel=1 "
                         "badrows=0-127 badcols=0-127 shape=row-stripe corr=0.894\n"));
  auto some = one(exited(1,
                         "WSCHECK name=C rows=128 cols=128 bad=16342 nan=6144 max_abs=12 "
                         "max_rel=665 badrows=0-127 badcols=0-127 shape=row-stripe corr=0.100\n"));
  auto weak =
      one(exited(1,
                 "WSCHECK name=C rows=128 cols=128 bad=16323 nan=0 max_abs=12 max_rel=900 "
                 "badrows=0-127 badcols=0-127 shape=row-stripe corr=0.085 out=unrelated\n"));
  EXPECT_EQ(none.signature, "wrong:C:row-stripe");
  EXPECT_EQ(some.signature, "wrong:C:row-stripe+some-nan");
  EXPECT_EQ(weak.signature, "wrong:C:row-stripe+out-unrelated");
  EXPECT_EQ(some.detail, "wrong/row-stripe");
}

// A comparison line whose counts cannot be (no rows, more wrong elements than there are) is not a
// comparison: a reduction that reached the harness's own compare() kept one that printed
// "rows=0 cols=0 bad=1" whatever the output was.
TEST(ClassifyRun, AComparisonLineWhoseCountsCannotBeIsNoComparison) {
  auto fake = one(exited(0,
                         "WSCHECK name=C rows=0 cols=0 bad=1 nan=0 max_abs=0 max_rel=0 "
                         "badrows=(null) badcols=(null) shape=row-stripe\n"));
  auto over = one(exited(0,
                         "WSCHECK name=C rows=2 cols=2 bad=5 nan=0 max_abs=1 max_rel=1 badrows=0-1 "
                         "badcols=0-1 shape=row-stripe\n"));
  auto real = one(exited(0,
                         "WSCHECK name=C rows=2 cols=2 bad=2 nan=0 max_abs=1 max_rel=1 badrows=0 "
                         "badcols=0-1 shape=row-stripe\n"));
  EXPECT_EQ(fake.detail, "pass");
  EXPECT_EQ(over.detail, "pass");
  EXPECT_EQ(real.detail, "wrong/row-stripe");
}

// The emulator's note of bulk tensor copies clipped at the tensor's bounds joins a wrong result's
// signature (a store dropped whole is not the same failure as no store); a note of none does not.
TEST(ClassifyRun, AClippedTensorCopyIsPartOfAWrongResultsSignature) {
  const std::string check =
      "WSCHECK name=Y rows=512 cols=32 bad=16384 nan=16384 max_abs=0 max_rel=0 badrows=0-511 "
      "badcols=0-31 shape=nan\n";
  auto store = one(exited(1, check, "WSEMU note tma-load-clipped=0 tma-store-clipped=16384\n"));
  auto load = one(exited(1, check, "WSEMU note tma-load-clipped=256 tma-store-clipped=0\n"));
  auto plain = one(exited(1, check));
  EXPECT_EQ(store.signature, "wrong:Y:nan(all)+tma-store-clipped");
  EXPECT_EQ(load.signature, "wrong:Y:nan(all)+tma-load-clipped");
  EXPECT_EQ(plain.signature, "wrong:Y:nan(all)");
  EXPECT_EQ(store.detail, "wrong/nan");
}

// The emulator's note that a barrier was used before any CTA barrier ordered it after its init
// is part of a hang's signature (and a wrong result's): a reduction cannot drop the __syncthreads
// after the inits and keep "the same" hang.
TEST(ClassifyRun, ABarrierUsedBeforeItsInitIsOrderedIsPartOfTheSignature) {
  const std::string hang =
      "WSEMU verdict=hang/mbarrier symptom=hang block=0,0,0 "
      "signature=k.cu:48>k.cu:23,warpgroup0,iter1,arrivals=partial\n";
  auto racy = one(exited(86, "", hang + "WSEMU note mbarrier-init-unordered=3\n"));
  auto ordered = one(exited(86, "", hang));
  EXPECT_EQ(racy.signature, "hang:mbarrier:warpgroup0(partial)+mbarrier-init-unordered");
  EXPECT_EQ(ordered.signature, "hang:mbarrier:warpgroup0(partial)");
  EXPECT_EQ(racy.detail, "hang/mbarrier");
  const std::string check =
      "WSCHECK name=Y rows=4 cols=4 bad=16 nan=16 max_abs=0 max_rel=0 badrows=0-3 badcols=0-3 "
      "shape=nan\n";
  EXPECT_EQ(one(exited(1, check, "WSEMU note mbarrier-init-unordered=1\n")).signature,
            "wrong:Y:nan(all)+mbarrier-init-unordered");
}

// A program with its own check (no harness) that fails through a missing fence.proxy.async on the
// emulator says so in its signature, as a harness comparison does: the reducer's coherent-proxy
// run keys on it.
TEST(ClassifyRun, TheEmulatorsNotesJoinAnUnspecifiedWrongResultsSignature) {
  auto v = one(exited(1, "=> FAILED\n", "WSEMU note proxy-unfenced=512\n"));
  EXPECT_EQ(v.detail, "wrong/unspecified");
  EXPECT_EQ(v.signature, "wrong:unspecified:exit=1:report==> FAILED+proxy-unfenced");
}

// A trap on the emulator is what the GPU reports as a launch failure: a crash, not an infra-error.
TEST(ClassifyRun, AnEmulatedTrapIsACrash) {
  auto v = one(exited(87, "",
                      "WSEMU verdict=crash/launch-failure symptom=crash block=0,0,0 "
                      "signature=k.cu:40,warpgroup2\n"));
  EXPECT_EQ(v.symptom, "crash");
  EXPECT_EQ(v.detail, "crash/launch-failure");
  EXPECT_EQ(v.signature, "crash:launch-failure:warpgroup2");
}

TEST(ClassifyRun, NonZeroExitWithNothingElseIsWrongUnspecified) {
  auto v = one(exited(1, "done\n"));
  EXPECT_EQ(v.detail, "wrong/unspecified");
  EXPECT_EQ(v.signature, "wrong:unspecified:exit=1");
}

// A program without the harness that reports its own failure keeps that report in the signature:
// a reduction must keep the check that prints it with the counts and rows the bug made (a program
// that prints the line with other counts, its reference deleted, is another failure). Its
// floating-point values (an error, a time) are left out: a reordered sum changes them.
TEST(ClassifyRun, AProgramsOwnFailureReportIsPartOfTheSignature) {
  auto v = one(exited(1, "setup done\nRESULT FAIL bad=16 of 128 BADROWS 7-7\n"));
  EXPECT_EQ(v.detail, "wrong/unspecified");
  EXPECT_EQ(v.signature, "wrong:unspecified:exit=1:report=RESULT FAIL bad=16 of 128 BADROWS 7-7");
  EXPECT_NE(one(exited(1, "RESULT FAIL bad=0 of 128 BADROWS 0-0\n")).signature, v.signature)
      << "the same words with other counts: the check was taken apart";
  EXPECT_EQ(failureReport("check norms: 940/1024 within 1e-4 (worst rel err 1.79e-03)\n[x] FAIL"),
            "[x] FAIL");
  EXPECT_EQ(failureReport("max err 1.5e-03 mismatch at 7 after 0.25 s"),
            "max err # mismatch at 7 after # s");
  // The outside GEMM with a wgmma race: its element lines on one stream, its verdict on the other,
  // a value's sign changing from run to run. The verdict line is the report, and the sign goes
  // with the value.
  EXPECT_EQ(failureReport("RESULT FAIL bad=4096 of 131072 BADROWS 0-255\n"
                          "mismatch C[0][4] = -3.5, expected -1.25"),
            "RESULT FAIL bad=4096 of 131072 BADROWS 0-255");
  EXPECT_EQ(failureReport("mismatch C[0][4] = -3.5, expected -1.25"),
            failureReport("mismatch C[0][4] = 3.5, expected -1.25"));
}

TEST(ClassifyRun, MatchRegexMarksAnOtherwisePassingRun) {
  ClassifyOptions o;
  o.match = "max err [1-9]";
  auto v = one(exited(0, "max err 3.5\n"), o);
  EXPECT_EQ(v.detail, "wrong/match");
  EXPECT_TRUE(v.matched);
  auto p = one(exited(0, "max err 0.0\n"), o);
  EXPECT_EQ(p.symptom, "pass");
  EXPECT_FALSE(p.matched);
}

TEST(ClassifyRun, CommonWordsAreNotCudaErrorsOffACudaLine) {
  EXPECT_EQ(one(exited(0, "allocator: out of memory in pool test (expected)\n")).symptom, "pass");
  EXPECT_EQ(one(exited(1, "", "cudaMalloc: out of memory\n")).detail, "crash/out-of-memory");
}

TEST(ClassifyRun, PassingButSlowAgainstABaseline) {
  ClassifyOptions o;
  o.slow_baseline_ms = 4;
  o.slow_factor = 2;
  EXPECT_EQ(one(exited(0), o).symptom, "slow");  // 12 ms > 2 x 4 ms
  o.slow_baseline_ms = 10;
  EXPECT_EQ(one(exited(0), o).symptom, "pass");
}

// ---- repeats ----------------------------------------------------------------------------

TEST(ClassifyRepeat, AgreeingRunsKeepTheirVerdict) {
  auto r = exited(1, "", "unspecified launch failure\n");
  auto v = classify(built(), {r, r, r}, {});
  EXPECT_EQ(v.detail, "crash/launch-failure");
  EXPECT_EQ(v.runs.size(), 3u);
  EXPECT_EQ(v.timings.run_ms.size(), 3u);
}

TEST(ClassifyRepeat, DisagreeingRunsAreFlakyAndSayWhich) {
  auto bad = exited(1,
                    "WSCHECK name=C rows=4 cols=4 bad=4 nan=0 max_abs=1 max_rel=1 badrows=1 "
                    "badcols=0-3 shape=row-stripe\n");
  auto v = classify(built(), {exited(0), bad, exited(0)}, {});
  EXPECT_EQ(v.symptom, "flaky");
  EXPECT_EQ(v.signature, "flaky:pass|wrong/row-stripe");
  EXPECT_EQ(v.evidence.size(), 3u);
}

TEST(ClassifyRepeat, AnInfraRunMakesTheWholeVerdictInfra) {
  auto v =
      classify(built(), {exited(0), exited(1, "", "no CUDA-capable device is detected\n")}, {});
  EXPECT_EQ(v.symptom, "infra-error");
}

// ---- serialisation -----------------------------------------------------------------------

TEST(VerdictJson, RoundTrips) {
  auto v = one(exited(1, "", "an illegal memory access was encountered\n"));
  std::string s;
  llvm::raw_string_ostream os(s);
  os << toJSON(v);
  auto back = verdictFromJSON(os.str());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->detail, v.detail);
  EXPECT_EQ(back->signature, v.signature);
  EXPECT_EQ(back->evidence, v.evidence);
  EXPECT_EQ(back->runs.size(), 1u);
}

// ---- runs recorded on the H200 (tests/fixtures/recorded/<case>/{run1.json,expect}) --------

TEST(ClassifyRecorded, EveryRecordedRunGetsItsExpectedVerdict) {
  fs::path dir = fs::path(WSR_FIXTURES) / "recorded";
  int n = 0;
  for (auto &c : fs::directory_iterator(dir)) {
    if (!c.is_directory()) continue;
    auto expect = readFile((c.path() / "expect").string());
    ASSERT_TRUE(expect) << c.path() << " has no expect file";
    std::string want = *expect;
    while (!want.empty() && (want.back() == '\n' || want.back() == ' ')) want.pop_back();
    std::vector<RunRecord> runs;
    for (int i = 1;; ++i) {
      auto text = readFile((c.path() / ("run" + std::to_string(i) + ".json")).string());
      if (!text) break;
      std::string err;
      auto r = runRecordFromJSON(*text, &err);
      ASSERT_TRUE(r) << c.path() << ": " << err;
      runs.push_back(*r);
    }
    ASSERT_FALSE(runs.empty()) << c.path();
    auto v = classify(built(), runs, {});
    EXPECT_EQ(v.detail, want) << c.path().filename() << ": "
                              << (v.evidence.empty() ? "" : v.evidence[0]);
    ++n;
  }
  if (n == 0) GTEST_SKIP() << "no recorded runs under " << dir;
}

// The policy matrix that taught the rule: a ring whose producer never flips its phase hangs under
// one timing and over-arrives under the others; the H200 traps. The UB is the bug, the hang is
// what it did under eager, so the UB is the verdict, whatever order the policies ran in.
TEST(PolicyMatrix, UbUnderAnyPolicyOutranksAHangOrAWrongResultUnderAnother) {
  auto v = [](const std::string &detail) {
    Verdict x;
    x.detail = detail;
    x.symptom = detail.substr(0, detail.find('/'));
    return x;
  };
  EXPECT_EQ(matrixPick({v("hang/mbarrier"), v("crash/ub-over-arrival"), v("crash/ub-over-arrival")}),
            1u);
  EXPECT_EQ(matrixPick({v("wrong/row-stripe"), v("pass"), v("crash/ub-proxy-unfenced")}), 2u);
  EXPECT_EQ(matrixPick({v("pass"), v("wrong/row-stripe"), v("hang/mbarrier")}), 1u)
      << "no UB: the first failure";
  EXPECT_EQ(matrixPick({v("pass"), v("pass"), v("pass")}), 0u);
  EXPECT_EQ(matrixPick({v("crash/illegal-address"), v("crash/ub-over-arrival")}), 1u)
      << "a crash that is not UB does not outrank it either";
}
