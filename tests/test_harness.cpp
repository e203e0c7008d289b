// wscheck.h: the comparison line a harness prints, and the error shape it names
// (docs/methodology.md, class 3). Each case builds an error tensor with a known cause's shape.
#include "classify.h"
#include "wscheck.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Case {
  std::string shape;
  wscheck::Result r;
  std::vector<wsr::CheckLine> lines;
};

// Runs compare() on a 256x128 tensor whose element (r, c) is corrupted by `bug`.
Case run(std::function<float(int, int, float)> bug) {
  const int R = 256, C = 128;
  std::vector<float> ref(R * C), out(R * C);
  for (int i = 0; i < R * C; ++i) ref[i] = std::sin(0.37f * i);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) out[r * C + c] = bug(r, c, ref[r * C + c]);
  testing::internal::CaptureStdout();
  Case k;
  k.r = wscheck::compare(out.data(), ref.data(), R, C, 1e-3, 1e-3, "C");
  std::string printed = testing::internal::GetCapturedStdout();
  k.lines = wsr::parseCheckLines(printed);
  k.shape = k.r.shape;
  return k;
}

// compare() on a 64x64 output and reference: the line it prints and the signature classify()
// makes of a run that printed it and exited 1.
std::pair<std::string, std::string> lineAndSignature(const std::vector<float> &out,
                                                     const std::vector<float> &ref) {
  testing::internal::CaptureStdout();
  wscheck::compare(out.data(), ref.data(), 64, 64, 1e-3, 1e-3, "C");
  std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_EQ(wsr::parseCheckLines(printed).size(), 1u) << printed;
  wsr::BuildRecord built;
  built.ok = true;
  wsr::RunRecord run;
  run.exit_code = 1;
  run.out = printed;
  return {printed, wsr::classify(built, {run}, {}).signature};
}

}  // namespace

TEST(Harness, CorrectOutputIsNoneAndPrintsOneLine) {
  auto k = run([](int, int, float v) { return v; });
  EXPECT_EQ(k.shape, "none");
  ASSERT_EQ(k.lines.size(), 1u);
  EXPECT_EQ(k.lines[0].bad, 0);
  EXPECT_EQ(k.lines[0].badrows, "-");
}

TEST(Harness, WholeRowsInTileRunsAreRowStripes) {
  // A consumer read the wrong round's tile: rows 64-127 and 192-255 wrong end to end.
  auto k = run([](int r, int, float v) { return (r / 64) % 2 ? v + 1.0f : v; });
  EXPECT_EQ(k.shape, "row-stripe");
  ASSERT_EQ(k.lines.size(), 1u);
  EXPECT_EQ(k.lines[0].badrows, "64-127,192-255");
  EXPECT_EQ(k.lines[0].bad, 128 * 128);
}

TEST(Harness, UnwrittenPoisonedOutputIsNan) {
  auto k = run([](int r, int, float v) { return r >= 192 ? NAN : v; });
  EXPECT_EQ(k.shape, "nan");
  EXPECT_EQ(k.lines[0].nan, 64 * 128);
}

TEST(Harness, OneStaleTileIsFinitePatterned) {
  // A 64x64 tile from the wrong moment: finite, confined to a block.
  auto k = run(
      [](int r, int c, float v) { return (r >= 64 && r < 128 && c < 64) ? v * 0.5f + 0.25f : v; });
  EXPECT_EQ(k.shape, "finite-patterned");
}

TEST(Harness, PeriodicColumnsAreFinitePatterned) {
  auto k = run([](int, int c, float v) { return c % 16 == 3 ? v + 0.5f : v; });
  EXPECT_EQ(k.shape, "finite-patterned");
  EXPECT_EQ(k.lines[0].badcols, "3,19,35,51,67,83,99,115");
}

TEST(Harness, RandomIsolatedErrorsAreScattered) {
  auto k = run([](int r, int c, float v) { return ((r * 131 + c * 71) % 97 == 0) ? v + 1.0f : v; });
  EXPECT_EQ(k.shape, "scattered");
}

TEST(Harness, ToleranceIsAbsolutePlusRelative) {
  auto k = run([](int, int, float v) { return v + 5e-4f; });  // inside atol
  EXPECT_EQ(k.shape, "none");
}

TEST(Harness, ManyRangesAreCutWithACount) {
  auto k = run([](int r, int, float v) { return r % 2 ? v + 1.0f : v; });  // 128 single rows
  EXPECT_NE(k.lines[0].badrows.find(",+112"), std::string::npos) << k.lines[0].badrows;
}

TEST(Harness, ExitCodeFollowsFailures) {
  // compare() calls above failed in this process, so the conventional exit code is 1.
  run([](int, int, float v) { return v + 1.0f; });
  EXPECT_EQ(wscheck::exit_code(), 1);
}

// A reference of one value everywhere is said on the line (ref=constant) and in a wrong result's
// signature: a CPU reduction of gemm_k_loop_short deleted the reference GEMM, left its zero-filled
// vector, and kept "the same" wrong rows from one constant store.
TEST(Harness, AConstantReferenceIsSaidAndIsNotTheSameWrongResult) {
  const int R = 64, C = 64;
  std::vector<float> zero(R * C, 0.f), real(R * C), out(R * C);
  for (int i = 0; i < R * C; ++i) real[i] = std::sin(0.37f * i);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) out[r * C + c] = r < 32 ? 1.f : 0.f;
  auto sig = [](const std::vector<float> &ref, const std::vector<float> &o) {
    return lineAndSignature(o, ref);
  };
  auto [zline, zsig] = sig(zero, out);
  EXPECT_NE(zline.find(" ref=constant"), std::string::npos) << zline;
  EXPECT_EQ(zsig, "wrong:C:row-stripe+ref-constant");
  std::vector<float> wrong_rows = real;
  for (int i = 0; i < 32 * C; ++i) wrong_rows[i] += 1.f;
  auto [rline, rsig] = sig(real, wrong_rows);
  EXPECT_EQ(rline.find("ref="), std::string::npos) << rline;
  EXPECT_EQ(rsig, "wrong:C:row-stripe");
}

// A wrong output that no longer follows the reference is said (out=unrelated, |correlation| < 0.3)
// and is part of the signature: a GEMM missing part of its K sum still follows its reference, a
// kernel reduced to constant stores does not, whatever rows it leaves wrong (a CPU reduction of
// gemm_k_loop_short went from the first to the second and kept wrong:C:row-stripe).
TEST(Harness, AnOutputThatNoLongerFollowsTheReferenceIsSaidAndIsNotTheSameWrongResult) {
  const int R = 64, C = 64;
  std::vector<float> half1(R * C), half2(R * C), ref(R * C);
  for (int i = 0; i < R * C; ++i) {  // two halves of a K sum, neither a function of the other
    half1[i] = std::sin(0.37f * i) + std::cos(1.3f * i * i);
    half2[i] = std::cos(0.71f * i) - std::sin(2.9f * i * i);
    ref[i] = half1[i] + half2[i];
  }
  auto line = [&](const std::vector<float> &o) { return lineAndSignature(o, ref); };
  // one half of the sum: every row wrong, still the reference's computation
  auto [pline, psig] = line(half1);
  EXPECT_EQ(pline.find("out=unrelated"), std::string::npos) << pline;
  EXPECT_NE(pline.find(" corr=0."), std::string::npos) << pline;
  EXPECT_EQ(psig, "wrong:C:row-stripe");
  // a constant store into the top rows, zeros below: the same wrong rows, nothing computed
  std::vector<float> stores(R * C, 0.f);
  for (int i = 0; i < 32 * C; ++i) stores[i] = 1.f;
  auto [sline, ssig] = line(stores);
  EXPECT_NE(sline.find(" out=unrelated"), std::string::npos) << sline;
  EXPECT_EQ(ssig, "wrong:C:row-stripe+out-unrelated");
  // nothing written at all
  auto [zline, zsig] = line(std::vector<float>(R * C, 0.f));
  EXPECT_NE(zline.find(" corr=0.000 out=unrelated"), std::string::npos) << zline;
  EXPECT_EQ(zsig, "wrong:C:row-stripe+out-unrelated");
  // a passing output says nothing of it
  auto [okline, oksig] = line(ref);
  EXPECT_EQ(okline.find("corr="), std::string::npos) << okline;
}
