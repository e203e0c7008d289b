// The emulator's translator (emu/translate.*) and the emu backend: inline-PTX mapping, the rewrite
// of each construct, and real programs judged end to end on the CPU (translate + g++ + run +
// classify).
#include "translate.h"

#include "oracle.h"
#include "parse_check.h"
#include "pass.h"
#include "report.h"
#include "tester.h"
#include "watchdog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace fs = std::filesystem;
using wsr::emu::AsmOperand;

namespace {

std::string repo() { return WSREDUCE_SOURCE_DIR; }
std::string fixture(const std::string &f) { return std::string(WSR_FIXTURES) + "/gpu/" + f; }

// Through the oracle as the tools call it: backend emu, the emulator's build hook, the policies.
wsr::Verdict judgeEmu(const std::string &path, std::vector<std::string> defines = {},
                      std::vector<std::string> policies = {"eager"}) {
  wsr::OracleOptions o;
  o.backend = "emu";
  o.emu_build = wsr::emu::emuBuilder();
  o.policies = std::move(policies);
  o.build.cache_dir = std::string(WSR_BUILD_DIR) + "/emu-test-cache";
  o.build.defines = std::move(defines);
  o.run.timeout_s = 120;
  o.program_args = {"1"};  // a fixed seed for the kernels that take one
  wsr::Verdict v = wsr::judge(path, o);
  EXPECT_EQ(v.backend, "emu");
  return v;
}

bool evidenceHas(const wsr::Verdict &v, const std::string &s) {
  for (auto &e : v.evidence)
    if (e.find(s) != std::string::npos) return true;
  return false;
}

std::string dump(const wsr::Verdict &v) {
  std::string s = v.symptom + " " + v.detail + " " + v.signature + "\n";
  for (auto &e : v.evidence) s += "  " + e + "\n";
  return s;
}

// A Tester's options for reducing `path` for `symptom` on the emulator (the tests' shared cache).
wsr::TestOptions onTheEmulator(const std::string &symptom, const std::string &path) {
  wsr::TestOptions t;
  t.symptom = symptom;
  t.original_path = path;
  t.oracle.backend = "emu";
  t.oracle.emu_build = wsr::emu::emuBuilder();
  t.oracle.build.cache_dir = std::string(WSR_BUILD_DIR) + "/emu-test-cache";
  t.oracle.run.timeout_s = 60;
  return t;
}

}  // namespace

// ---- inline PTX -> wsemu::ptx ----

TEST(EmuAsm, MbarrierInitBindsItsOperands) {
  std::string out, unk;
  ASSERT_TRUE(wsr::emu::translateAsm("mbarrier.init.shared::cta.b64 [%0], %1;\n",
                                     {{"r", "smem_u32(bar)"}, {"r", "count"}}, 1, &out, &unk));
  EXPECT_NE(
      out.find(
          "::wsemu::ptx::mbarrier_init((uint32_t)(smem_u32(bar)), (uint32_t)(count), WSEMU_HERE)"),
      std::string::npos)
      << out;
}

TEST(EmuAsm, TryWaitWithScopedPredicateAndSelp) {
  std::string out, unk;
  ASSERT_TRUE(
      wsr::emu::translateAsm("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, "
                             "[%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n",
                             {{"=r", "done"}, {"r", "a"}, {"r", "phase"}}, 7, &out, &unk));
  EXPECT_NE(out.find("bool wsemu_r7_p{}"), std::string::npos) << out;
  EXPECT_NE(out.find("mbarrier_try_wait_parity((uint32_t)(a), (uint32_t)(phase), WSEMU_HERE)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("(done) = (wsemu_r7_p) ? (1u) : (0u);"), std::string::npos) << out;
}

TEST(EmuAsm, LabelsAndPredicatedBranchesBecomeGotos) {
  std::string out, unk;
  ASSERT_TRUE(
      wsr::emu::translateAsm("{ .reg .pred P1; LAB_WAIT: mbarrier.try_wait.parity.shared::cta.b64 "
                             "P1, [%0], %1; @P1 bra DONE; bra LAB_WAIT; "
                             "DONE: }",
                             {{"r", "a"}, {"r", "ph"}}, 3, &out, &unk));
  EXPECT_NE(out.find("wsemu_L3_LAB_WAIT: ;"), std::string::npos) << out;
  EXPECT_NE(out.find("if (wsemu_r3_P1) { goto wsemu_L3_DONE; }"), std::string::npos) << out;
}

TEST(EmuAsm, TmaLoadStoreAndBulkGroups) {
  std::string out, unk;
  ASSERT_TRUE(wsr::emu::translateAsm(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, "
      "%4}], [%2];",
      {{"r", "d"}, {"l", "m"}, {"r", "b"}, {"r", "c0"}, {"r", "c1"}}, 1, &out, &unk));
  EXPECT_NE(out.find("::wsemu::ptx::tma_load(2, (uint32_t)(d), "
                     "::wsemu_shim::mapOperand((uint64_t)(m)), wsemu_c, (uint32_t)(b)"),
            std::string::npos)
      << out;
  ASSERT_TRUE(wsr::emu::translateAsm(
      "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];",
      {{"l", "m"}, {"r", "s"}, {"r", "c0"}, {"r", "c1"}}, 2, &out, &unk));
  EXPECT_NE(out.find("::wsemu::ptx::tma_store(2,"), std::string::npos) << out;
  ASSERT_TRUE(
      wsr::emu::translateAsm("cp.async.bulk.wait_group.read %0;\n", {{"n", "N"}}, 3, &out, &unk));
  EXPECT_NE(out.find("bulk_wait_group((int)(N), true, WSEMU_HERE)"), std::string::npos) << out;
}

TEST(EmuAsm, WgmmaWithAccumulatorListAndScalePredicate) {
  std::vector<AsmOperand> ops;
  std::string list;
  for (int i = 0; i < 32; ++i) {
    ops.push_back({"+f", "d[" + std::to_string(i) + "]"});
    list += (i ? ", %" : "%") + std::to_string(i);
  }
  ops.push_back({"l", "desc_a"});
  ops.push_back({"l", "desc_b"});
  ops.push_back({"r", "scale_d"});
  std::string out, unk;
  ASSERT_TRUE(
      wsr::emu::translateAsm("{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"
                             " wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" +
                                 list + "}, %32, %33, p, 1, 1, 0, 0;\n}\n",
                             ops, 4, &out, &unk));
  EXPECT_NE(out.find("wgmma_ss(64, ::wsemu::ptx::WgType::BF16, wsemu_d, (uint64_t)(desc_a), "
                     "(uint64_t)(desc_b), (bool)wsemu_r4_p"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("&(d[31])"), std::string::npos);
}

TEST(EmuAsm, UnknownInstructionIsNamedNeverANoOp) {
  std::string out, unk;
  EXPECT_FALSE(
      wsr::emu::translateAsm("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 128;",
                             {{"r", "dst"}}, 1, &out, &unk));
  EXPECT_NE(unk.find("tcgen05.alloc"), std::string::npos);
  EXPECT_NE(out.find("::wsemu::ptx::unknown_instruction(\"tcgen05.alloc"), std::string::npos)
      << out;
  EXPECT_FALSE(wsr::emu::translateAsm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0}, {%1}, {%2}, {%3};",
      {{"=f", "a"}, {"r", "b"}, {"r", "c"}, {"f", "d"}}, 2, &out, &unk));
}

// ---- the rewrite ----

// A device local left without an initializer is filled when the program runs (the pattern, or
// zero under WSEMU_LOCALS=zero): the reducer's zeroed-locals judgement runs the same build again.
TEST(EmuTranslate, UninitialisedDeviceLocalsAreFilledAtRunTime) {
  const std::string text =
      "#include <cstdint>\n"
      "struct Pod { int a; float b[2]; };\n"
      "struct Ctor { int a; __device__ Ctor() : a(1) {} };\n"
      "__global__ void k(float *out) {\n"
      "  float acc[4]; int i, j = 2; Pod p; Ctor c; const int n = 3; __shared__ float s[4]; Pod q "
      "= p;\n"
      "  for (int t; ;) { break; }\n"
      "  out[0] = acc[0] + i + j + p.a + c.a + n + s[0] + q.a;\n"
      "}\n"
      "int main() { int host_local; (void)host_local; k<<<1, 1>>>(nullptr); return 0; }\n";
  wsr::emu::TranslateOptions o;
  auto r = wsr::emu::translate(text, "/tmp/uninit.cu", o);
  ASSERT_TRUE(r.ok) << r.error;
  auto has = [&](const std::string &s) { return r.text.find(s) != std::string::npos; };
  EXPECT_TRUE(has("::wsemu::uninit(__builtin_addressof(acc), sizeof acc);")) << r.text;
  EXPECT_TRUE(has("::wsemu::uninit(__builtin_addressof(i), sizeof i);")) << r.text;
  EXPECT_TRUE(has("::wsemu::uninit(__builtin_addressof(p), sizeof p);")) << r.text;
  EXPECT_FALSE(has("__builtin_addressof(j)")) << "initialized";
  EXPECT_FALSE(has("__builtin_addressof(q)"))
      << "a copy is an initialization (a tensor map copied so kept its bytes)";
  EXPECT_FALSE(has("__builtin_addressof(c)")) << "a constructor sets it";
  EXPECT_FALSE(has("__builtin_addressof(n)"));
  EXPECT_FALSE(has("__builtin_addressof(s)")) << "__shared__";
  EXPECT_FALSE(has("__builtin_addressof(t)")) << "a for's init is no statement of a block";
  EXPECT_FALSE(has("__builtin_addressof(host_local)")) << "host code keeps the compiler's pattern";
  auto count = [](const std::string &s) { return std::count(s.begin(), s.end(), '\n'); };
  EXPECT_EQ(count(r.text), count(text) + 3);
}

// A non-constant narrowing in a braced initializer is a warning to nvcc's host compiler, which
// builds the program, and an error by default to Clang. The reducer's strict parse took it and
// the emulator's parse refused the result (an H200 reduction of the missing proxy
// fence, `const cuuint64_t dims[2] = {cols, rows};`): both now take what nvcc builds.
TEST(EmuTranslate, ANonConstantNarrowingParsesAsNvccBuildsIt) {
  const std::string text =
      "__global__ void k(unsigned long *out) { out[0] = 1; }\n"
      "int main(int argc, char **) {\n"
      "  int cols = argc * 32;\n"
      "  const unsigned long dims[2] = {cols, cols};\n"
      "  k<<<1, 1>>>(nullptr);\n"
      "  return (int)dims[1] - 32 * argc;\n"
      "}\n";
  std::string dir = wsr::makeTempDir("wsr-narrow.");
  std::string path = dir + "/narrow.cu";
  ASSERT_TRUE(wsr::writeFileAtomic(path, text));
  wsr::emu::TranslateOptions o;
  auto r = wsr::emu::translate(text, path, o);
  EXPECT_TRUE(r.ok) << r.error;
  wsr::ParseOptions strict;
  strict.strict_return = true;
  auto p = wsr::parseSource(text, path, strict);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->ok()) << p->firstError();
  wsr::BuildOptions bo;
  bo.cache_dir = dir + "/cache";
  auto b = wsr::buildProgram(path, bo);
  EXPECT_TRUE(b.ok) << "nvcc builds it\n" << b.log;
  wsr::removeTree(dir);
}

// Each by-value kernel parameter of class type is registered at the kernel's entry, with whether
// it is __grid_constant__ (the TMA's check of where its map lies); a template kernel's parameter
// of a dependent type too, since the pattern is what is rewritten.
TEST(EmuTranslate, KernelParametersAreRegisteredForTheTensorMapCheck) {
  const std::string text =
      "#include <cuda.h>\n"
      "struct Params { CUtensorMap a; int n; };\n"
      "__global__ void k(const __grid_constant__ CUtensorMap gc, const CUtensorMap copy, int n) "
      "{}\n"
      "template <class P> __global__ void t(const __grid_constant__ P p) {}\n"
      "int main() { t<Params><<<1, 1>>>(Params{}); return 0; }\n";
  wsr::emu::TranslateOptions o;
  auto r = wsr::emu::translate(text, "/tmp/params.cu", o);
  ASSERT_TRUE(r.ok) << r.error;
  auto has = [&](const std::string &s) { return r.text.find(s) != std::string::npos; };
  EXPECT_TRUE(has("::wsemu::ptx::kernelParam(__builtin_addressof(gc), sizeof(gc), \"gc\", true);"))
      << r.text;
  EXPECT_TRUE(
      has("::wsemu::ptx::kernelParam(__builtin_addressof(copy), sizeof(copy), \"copy\", false);"))
      << r.text;
  EXPECT_TRUE(has("::wsemu::ptx::kernelParam(__builtin_addressof(p), sizeof(p), \"p\", true);"))
      << r.text;
  EXPECT_FALSE(has("__builtin_addressof(n)")) << "a scalar holds no map";
}

TEST(EmuTranslate, FixtureConstructsAreRewrittenAndLinesKept) {
  std::ifstream in(fixture("mbarrier_hang.cu"));
  std::string text((std::istreambuf_iterator<char>(in)), {});
  wsr::emu::TranslateOptions o;
  auto r = wsr::emu::translate(text, fixture("mbarrier_hang.cu"), o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.asm_statements, 3u);
  EXPECT_EQ(r.asm_unknown, 0u);
  EXPECT_EQ(r.launches, 1u);
  EXPECT_EQ(r.shared_vars, 1u);
  EXPECT_EQ(r.text.find("<<<"), std::string::npos);
  EXPECT_EQ(r.text.find("asm volatile"), std::string::npos);
  EXPECT_NE(r.text.find("auto &bar = ::wsemu_shim::sharedVar<uint64_t>(\"bar\");"),
            std::string::npos);
  EXPECT_NE(r.text.find("::wsemu::at(&(out)[threadIdx.x], WSEMU_HERE) = 1;"), std::string::npos);
  // the kernel's one mbarrier.init is declared to the runtime (what a use before init is told)
  EXPECT_EQ(r.init_sites, 1u);
  EXPECT_NE(r.text.find("::wsemu::ptx::declareInitSites(1);"), std::string::npos);
  // the user's line count is kept after the three-line prologue (#include, the init sites, #line 1)
  auto count = [](const std::string &s) { return std::count(s.begin(), s.end(), '\n'); };
  EXPECT_EQ(count(r.text), count(text) + 3);
  // a device loop's body in braces counts toward the launch's operation limit; a host loop's does
  // not
  std::string loops = text;
  loops.replace(loops.find("  while (!done)\n"), std::string("  while (!done)\n").size(),
                "  while (!done) {}\n  if (0)\n");
  loops.replace(loops.find("int main() {\n"), std::string("int main() {\n").size(),
                "int main() {\n  for (int i = 0; i < 2; ++i) {}\n");
  auto l = wsr::emu::translate(loops, fixture("mbarrier_hang.cu"), o);
  ASSERT_TRUE(l.ok) << l.error;
  EXPECT_NE(l.text.find("while (!done) { ::wsemu::loopTick(WSEMU_HERE);}"), std::string::npos)
      << l.text;
  EXPECT_NE(l.text.find("for (int i = 0; i < 2; ++i) {}"), std::string::npos) << l.text;
  EXPECT_EQ(count(l.text), count(loops) + 3);
}

// ---- end to end on the emu backend ----

TEST(EmuBackend, MbarrierHangIsNamedAtItsLine) {
  auto v = judgeEmu(fixture("mbarrier_hang.cu"));
  EXPECT_EQ(v.detail, "hang/mbarrier") << dump(v);
  // roles and how far the barrier's phase got (one of two arrivals), no lines: lines move under
  // reduction
  EXPECT_EQ(v.signature, "hang:mbarrier:warpgroup0(partial,first)") << dump(v);
  EXPECT_TRUE(evidenceHas(v, "mbarrier_hang.cu:13")) << dump(v);
}

// The same parked role for another cause is another hang: without its one arrival the barrier
// waits for arrivals nobody makes. A reducer holding the signature keeps the arrival, so its
// result still shows the bug (an init count above the arrivals), as reductions without it did
// not (kernel_hang reduced to an init of 1 and no arrive).
TEST(EmuBackend, AHangWithNoArrivalIsNotTheSameHangAsOneWithTooFew) {
  std::string text = *wsr::readFile(fixture("mbarrier_hang.cu"));
  const std::string arrive = "  if (threadIdx.x == 0) asm volatile(\"mbarrier.arrive";
  size_t at = text.find(arrive);
  ASSERT_NE(at, std::string::npos);
  text.erase(at, text.find('\n', at) + 1 - at);
  std::string dir = wsr::makeTempDir("wsr-emu-noarrive.");
  wsr::writeFileAtomic(dir + "/mbarrier_hang.cu", text);
  wsr::writeFileAtomic(dir + "/common.h", *wsr::readFile(fixture("common.h")));
  auto v = judgeEmu(dir + "/mbarrier_hang.cu");
  wsr::removeTree(dir);
  EXPECT_EQ(v.detail, "hang/mbarrier") << dump(v);
  EXPECT_EQ(v.signature, "hang:mbarrier:warpgroup0(none,first)") << dump(v);
  EXPECT_NE(v.signature, judgeEmu(fixture("mbarrier_hang.cu")).signature);
}

TEST(EmuBackend, PassStripesNan) {
  EXPECT_EQ(judgeEmu(fixture("pass.cu")).symptom, "pass");
  auto s = judgeEmu(fixture("stripes.cu"));
  EXPECT_EQ(s.detail, "wrong/row-stripe") << dump(s);
  auto n = judgeEmu(fixture("nan.cu"));
  EXPECT_EQ(n.detail, "wrong/nan") << dump(n);
}

TEST(EmuBackend, OutOfBoundsStoreIsUbAtItsLine) {
  auto v = judgeEmu(fixture("oob_store.cu"));
  EXPECT_EQ(v.detail, "crash/ub-out-of-bounds-global") << dump(v);
  EXPECT_EQ(v.signature.rfind("crash:ub-out-of-bounds-global:", 0), 0u) << dump(v);
  EXPECT_EQ(v.signature.find("oob_store.cu"), std::string::npos) << dump(v);
  EXPECT_TRUE(evidenceHas(v, "oob_store.cu:4")) << dump(v);
}

TEST(EmuBackend, UnknownInstructionIsInfraError) {
  fs::path dir = fs::path(WSR_BUILD_DIR) / "emu-test-src";
  fs::create_directories(dir);
  fs::path f = dir / "tcgen05.cu";
  std::ofstream(f) << "#include <cstdint>\n__global__ void k(uint32_t *p) {\n"
                      "  asm volatile(\"tcgen05.fence::before_thread_sync;\" ::: \"memory\");\n}\n"
                      "int main() { k<<<1, 32>>>(nullptr); cudaDeviceSynchronize(); return 0; }\n";
  auto v = judgeEmu(f.string());
  EXPECT_EQ(v.detail, "infra-error/unknown-instruction") << dump(v);
  bool named = false;
  for (auto &e : v.evidence) named = named || e.find("tcgen05.fence") != std::string::npos;
  EXPECT_TRUE(named) << dump(v);
}

// More than 48 KiB of dynamic shared memory needs the opt-in, as on the GPU: without
// cudaFuncSetAttribute the launch is refused ("invalid argument") and the kernel never runs.
// (A reduction judged on the emulator once dropped the opt-in and the H200 then ran nothing.)
TEST(EmuBackend, DynamicSharedMemoryOver48KiBNeedsTheOptIn) {
  fs::path dir = fs::path(WSR_BUILD_DIR) / "emu-test-src";
  fs::create_directories(dir);
  fs::path f = dir / "smem_optin.cu";
  std::ofstream(f)
      << "#include <cstdio>\n#include <cstdint>\n"
         "__global__ void k(int *out) { extern __shared__ uint8_t s[]; s[threadIdx.x] = 1; "
         "out[threadIdx.x] = s[threadIdx.x]; }\n"
         "int main() {\n  int *d = nullptr;\n  cudaMalloc(&d, 32 * sizeof(int));\n"
         "#ifdef OPTIN\n  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 "
         "* 1024);\n#endif\n"
         "  k<<<1, 32, 64 * 1024>>>(d);\n  cudaError_t e = cudaGetLastError();\n"
         "  int h[32] = {};\n  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);\n"
         "  std::printf(\"CUDA launch: %s, out[31] = %d\\n\", cudaGetErrorString(e), h[31]);\n"
         "  return e == cudaSuccess && h[31] == 1 ? 0 : 3;\n}\n";
  auto with = judgeEmu(f.string(), {"OPTIN"});
  EXPECT_EQ(with.symptom, "pass") << dump(with);
  auto without = judgeEmu(f.string());
  EXPECT_EQ(without.detail, "crash/invalid-argument")
      << dump(without);  // what the GPU says of the same program
  EXPECT_TRUE(evidenceHas(without, "48 KiB")) << dump(without);
}

// tests/fixtures/gpu/mbarrier_hang.cu (and the common.h it includes) written into the emulator
// tests' source folder as `name`, with `piece` replaced by `by` (unchanged when piece is empty).
static std::string hangVariant(const std::string &name, const std::string &piece = "",
                               const std::string &by = "") {
  auto text = wsr::readFile(repo() + "/tests/fixtures/gpu/mbarrier_hang.cu");
  EXPECT_TRUE(text);
  fs::path dir = fs::path(WSR_BUILD_DIR) / "emu-test-src";
  fs::create_directories(dir);
  fs::copy_file(repo() + "/tests/fixtures/gpu/common.h", dir / "common.h",
                fs::copy_options::overwrite_existing);
  std::string t = text ? *text : "";
  if (!piece.empty()) {
    auto at = t.find(piece);
    EXPECT_NE(at, std::string::npos) << piece;
    if (at != std::string::npos) t.replace(at, piece.size(), by);
  }
  std::ofstream(dir / name) << t;
  return (dir / name).string();
}

// A launch is asynchronous: its hang shows at the host's next synchronizing call. A program that
// exits without one is not seen to hang on the GPU (the kernel is abandoned at exit), so not here
// either: the verdict is the program's, with a note saying what was left running.
TEST(EmuBackend, HangIsSeenOnlyWhenTheHostSynchronizes) {
  auto v = judgeEmu(hangVariant("hang_nosync.cu", "  CHECK(cudaDeviceSynchronize());\n", ""));
  EXPECT_EQ(v.symptom, "pass") << dump(v);
  EXPECT_TRUE(evidenceHas(v, "never synchronized")) << dump(v);
  EXPECT_EQ(judgeEmu(hangVariant("hang_sync.cu")).detail, "hang/mbarrier");
  // A copy of no bytes, or cudaFree(nullptr), does not wait for the device (the H200 passed such
  // a reduction; bench/probes/sync_points.cu times each call there).
  auto zero =
      judgeEmu(hangVariant("hang_memcpy0.cu", "  CHECK(cudaDeviceSynchronize());\n",
                           "  CHECK(cudaMemcpy(nullptr, nullptr, 0, cudaMemcpyDeviceToHost));\n"));
  EXPECT_EQ(zero.symptom, "pass") << dump(zero);
  EXPECT_TRUE(evidenceHas(zero, "never synchronized")) << dump(zero);
  auto null1 =
      judgeEmu(hangVariant("hang_memcpy_null.cu", "  CHECK(cudaDeviceSynchronize());\n",
                           "  cudaMemcpy(nullptr, nullptr, 1, cudaMemcpyDeviceToHost);\n"));
  EXPECT_EQ(null1.symptom, "pass") << dump(null1);
  // cudaMalloc of 0 bytes gives a null pointer, and a copy from it is refused without waiting.
  auto malloc0 = judgeEmu(
      hangVariant("hang_malloc0.cu", "  CHECK(cudaDeviceSynchronize());\n",
                  "  int *z = nullptr, h = 0;\n  CHECK(cudaMalloc(&z, 0));\n"
                  "  if (z) return 7;\n  cudaMemcpy(&h, z, 1, cudaMemcpyDeviceToHost);\n"));
  EXPECT_EQ(malloc0.symptom, "pass") << dump(malloc0);
  // Nor a copy "device to host" from host memory, nor cudaFree of what is not an allocation.
  auto hostsrc = judgeEmu(hangVariant(
      "hang_memcpy_hostsrc.cu", "  CHECK(cudaDeviceSynchronize());\n",
      "  int a = 1, h = 0;\n  cudaMemcpy(&h, &a, sizeof h, cudaMemcpyDeviceToHost);\n"));
  EXPECT_EQ(hostsrc.symptom, "pass") << dump(hostsrc);
  auto freebad =
      judgeEmu(hangVariant("hang_free_bad.cu", "  CHECK(cudaDeviceSynchronize());\n",
                           "  if (cudaFree(d + 1) != cudaErrorInvalidValue) return 7;\n"));
  EXPECT_EQ(freebad.symptom, "pass") << dump(freebad);
  auto free0 = judgeEmu(hangVariant("hang_free0.cu", "  CHECK(cudaDeviceSynchronize());\n",
                                    "  CHECK(cudaFree(nullptr));\n"));
  EXPECT_EQ(free0.symptom, "pass") << dump(free0);
  auto one = judgeEmu(
      hangVariant("hang_memcpy1.cu", "  CHECK(cudaDeviceSynchronize());\n",
                  "  int h = 0;\n  CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));\n"));
  EXPECT_EQ(one.detail, "hang/mbarrier") << dump(one);
}

// The lanes of a warp that reach one arrive instruction together arrive as one operation on the
// GPU, and more of them than the phase's pending count fail the launch there: on the H200
// (bench/probes/s14_volatile) 127 threads arriving once each on a count-1 mbarrier gave
// "unspecified launch failure", one thread the hang. Arriving lane after lane, the emulator had
// completed a phase per lane and called it a hang, and a reduction's result passed on the GPU.
TEST(EmuBackend, AWarpArrivingTogetherBeyondThePendingCountIsAnOverArrival) {
  const std::string one = "if (threadIdx.x == 0) asm volatile(\"mbarrier.arrive";
  auto lanes = judgeEmu(
      hangVariant("arrive_lanes.cu", one, "if (threadIdx.x < 32) asm volatile(\"mbarrier.arrive"));
  EXPECT_EQ(lanes.detail, "crash/ub-over-arrival") << dump(lanes);
  EXPECT_TRUE(evidenceHas(lanes, "arrive here together")) << dump(lanes);
  auto two = judgeEmu(hangVariant("arrive_two_lanes.cu", one,
                                  "if (threadIdx.x < 2) asm volatile(\"mbarrier.arrive"));
  EXPECT_EQ(two.symptom, "pass") << dump(two);  // two lanes, two pending: the phase completes
  auto warps = judgeEmu(
      hangVariant("arrive_two_warps.cu", one,
                  "if (threadIdx.x % 32 == 0 && threadIdx.x < 64) asm volatile(\"mbarrier.arrive"));
  EXPECT_EQ(warps.symptom, "pass") << dump(warps);  // one lane of each of two warps
  EXPECT_EQ(judgeEmu(hangVariant("arrive_one.cu")).detail, "hang/mbarrier");
}

// A launch outside the GPU's limits never runs ("invalid configuration argument"), and a grid
// computed from an uninitialised local is such a launch on the emulator every time (locals get a
// pattern, not stack luck). A reduction judged on the emulator once dropped
// cudaGetDeviceProperties(&prop) but kept min(prop.multiProcessorCount, tiles) as the grid: the
// emulator's stack gave a positive count and the hang, the H200 ran nothing and passed.
TEST(EmuBackend, ALaunchOutsideTheLimitsOrFromGarbageNeverRuns) {
  const std::string launch = "  k<<<1, 128>>>(d);\n  CHECK(cudaGetLastError());\n";
  auto zero = judgeEmu(
      hangVariant("grid0.cu", launch, "  k<<<0, 128>>>(d);\n  CHECK(cudaGetLastError());\n"));
  EXPECT_EQ(zero.detail, "crash/invalid-configuration")
      << dump(zero);  // CHECK exits with the GPU's error
  EXPECT_TRUE(evidenceHas(zero, "outside the GPU's limits")) << dump(zero);
  auto big = judgeEmu(
      hangVariant("block2048.cu", launch, "  k<<<1, 2048>>>(d);\n  CHECK(cudaGetLastError());\n"));
  EXPECT_EQ(big.detail, "crash/invalid-configuration") << dump(big);
  auto garbage =
      judgeEmu(hangVariant("grid_garbage.cu", launch,
                           "  cudaDeviceProp prop;\n  int grid = prop.multiProcessorCount < 1 ? "
                           "prop.multiProcessorCount : 1;\n"
                           "  k<<<grid, 128>>>(d);\n"));
  EXPECT_EQ(garbage.symptom, "pass") << dump(garbage);  // nothing ran, nothing checked the launch
  auto pattern = judgeEmu(hangVariant(
      "pattern.cu", launch,
      "  cudaDeviceProp prop;\n  if (prop.multiProcessorCount != (int)0xFEFEFEFE) return 5;\n"));
  EXPECT_EQ(pattern.symptom, "pass") << dump(pattern);  // the same value every time, not stack luck
  auto fine =
      judgeEmu(hangVariant("grid1.cu", launch, "  int grid = 1;\n  k<<<grid, 128>>>(d);\n"));
  EXPECT_EQ(fine.detail, "hang/mbarrier") << dump(fine);
}

// A program's text judged on the emulator (written to a scratch folder as `name`).
wsr::Verdict judgeEmuText(const std::string &text, std::vector<std::string> defines,
                          const std::string &name = "edited.cu") {
  std::string dir = wsr::makeTempDir("wsr-emu-edit.");
  wsr::writeFileAtomic(dir + "/" + name, text);
  auto v = judgeEmu(dir + "/" + name, std::move(defines));
  wsr::removeTree(dir);
  return v;
}

// A fault is what the GPU returns to the synchronizing call, "unspecified launch failure", and to
// every call after it; what is seen is what the program does with it. One that never looks at it
// exits normally on the GPU: a reduction of pipeline_init_in_role that had dropped its CHECK passed
// on the H200 while the emulator called it a crash.
TEST(EmuBackend, AFaultIsSeenOnlyWhenTheProgramReportsIt) {
  std::string text = *wsr::readFile(fixture("oob_store.cu"));
  auto edit = [&](const std::string &with) {
    std::string t = text;
    const std::string sync = "  CHECK(cudaDeviceSynchronize());\n";
    t.replace(t.find(sync), sync.size(), with);
    return t;
  };
  std::string dir = wsr::makeTempDir("wsr-emu-fault.");
  wsr::writeFileAtomic(dir + "/common.h", *wsr::readFile(fixture("common.h")));
  auto judgeVariant = [&](const std::string &name, const std::string &t) {
    wsr::writeFileAtomic(dir + "/" + name, t);
    return judgeEmu(dir + "/" + name);
  };
  auto checked = judgeVariant("checked.cu", text);
  auto ignored = judgeVariant("ignored.cu", edit("  cudaDeviceSynchronize();\n"));
  // sticky: the copy after the failed sync fails too, and its check reports it
  auto later =
      judgeVariant("later.cu", edit("  cudaDeviceSynchronize();\n  float h;\n  "
                                    "CHECK(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost));\n"));
  auto exits =
      judgeVariant("exits.cu", edit("  if (cudaDeviceSynchronize() != cudaSuccess) return 3;\n"));
  wsr::removeTree(dir);
  EXPECT_EQ(checked.detail, "crash/ub-out-of-bounds-global") << dump(checked);
  EXPECT_EQ(later.detail, "crash/ub-out-of-bounds-global") << dump(later);
  EXPECT_EQ(ignored.symptom, "pass") << dump(ignored);
  EXPECT_TRUE(evidenceHas(ignored, "without reporting it")) << dump(ignored);
  // noticed but not reported: the exit status is all the GPU would show
  EXPECT_EQ(exits.detail, "wrong/unspecified") << dump(exits);
}

// `text` without the first `line` (a test failure when it has none).
std::string withoutFirst(std::string text, const std::string &line) {
  size_t at = text.find(line);
  EXPECT_NE(at, std::string::npos) << line;
  if (at != std::string::npos) text.erase(at, line.size());
  return text;
}

// tma_pipeline_sm90.cu with its first `from` replaced by `to`, judged on the emulator.
wsr::Verdict judgePipelineEdit(const std::string &from, const std::string &to,
                               std::vector<std::string> defines) {
  std::string text = *wsr::readFile(repo() + "/kernels/tma_pipeline_sm90.cu");
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at == std::string::npos) return {};
  text.replace(at, from.size(), to);
  return judgeEmuText(text, std::move(defines));
}

// The README's demo (a wrong arrival count) and a shape at which it hangs on the emulator: 8 tiles
// through 4 stages, so the producer waits on a second round of `empty`.
const char *const kDemo = "/corpus/examples/pipeline_arrival_count.cu";
const std::vector<std::string> kDemoHangs = {"PIPE_ROWS=256", "PIPE_GRID=1"};

// A producer loop one tile short parks the consumer after its other tiles went through; a
// producer that makes nothing parks it on its first wait. Both leave the consumer on `full` with
// nothing arrived, and a reduction on the H200 that held one signature for both removed
// the producer's body of a k-loop-off-by-one mutant and kept "the same" hang without the bug.
TEST(EmuBackend, AConsumerParkedOnItsFirstWaitIsNotTheSameHangAsOneParkedLater) {
  const std::string bound = "t < NUM_TILES;";  // the producer's loop comes first
  const std::vector<std::string> four = {"PIPE_ROWS=512", "PIPE_GRID=4"};  // 4 tiles per CTA
  auto short_by_one = judgePipelineEdit(bound, "t < (NUM_TILES) - 1;", four);
  auto none = judgePipelineEdit(bound, "t < 0;", four);
  EXPECT_EQ(short_by_one.detail, "hang/mbarrier") << dump(short_by_one);
  EXPECT_EQ(none.detail, "hang/mbarrier") << dump(none);
  EXPECT_EQ(short_by_one.signature, "hang:mbarrier:warpgroup1(none)") << dump(short_by_one);
  EXPECT_EQ(none.signature, "hang:mbarrier:warpgroup1(none,first)") << dump(none);
}

// A TMA store whose row coordinate is far outside the tensor is dropped by the copy engine: the
// output is never written, exactly as when the kernel issues no store at all. Only the emulator
// sees the difference, and says it in the signature: a reduction of the first (oob-coordinate on
// the H200) took the second, which no longer has the bug.
TEST(EmuBackend, AStoreClippedAtTheTensorsBoundsIsNotTheSameFailureAsNoStore) {
  const std::string store = "tma_store_2d(&y_map, out, 0, t * TILE_ROWS);";
  const std::vector<std::string> four = {"PIPE_ROWS=512", "PIPE_GRID=4"};
  auto clipped =
      judgePipelineEdit(store, "tma_store_2d(&y_map, out, 0, (t * TILE_ROWS) + (1 << 20));", four);
  auto none = judgePipelineEdit(store, ";", four);
  EXPECT_EQ(clipped.detail, "wrong/nan") << dump(clipped);
  EXPECT_EQ(none.detail, "wrong/nan") << dump(none);
  EXPECT_EQ(clipped.signature, "wrong:Y:nan(all)+tma-store-clipped") << dump(clipped);
  EXPECT_EQ(none.signature, "wrong:Y:nan(all)") << dump(none);
  EXPECT_TRUE(evidenceHas(clipped, "tma-store-clipped=")) << dump(clipped);
}

// ptxas checks setmaxnreg's count when it builds the program, whether or not the instruction runs;
// the emulator's build does the same. A reduction judged on the emulator lowered the count in a
// branch the hang never reached, and its result failed in ptxas on the H200.
TEST(EmuBackend, ASetmaxnregCountPtxasRefusesFailsTheBuildEvenWhereItNeverRuns) {
  auto v = judgePipelineEdit("warpgroup_reg_alloc<CONSUMER_REGS>();",
                             "if (gridDim.x > 1u << 30) warpgroup_reg_alloc<1>(); else "
                             "warpgroup_reg_alloc<CONSUMER_REGS>();",
                             {"PIPE_ROWS=64"});
  EXPECT_EQ(v.detail, "compile-error/ptxas") << dump(v);
  EXPECT_NE(v.signature.find("setmaxnreg.inc takes a register count of 24-256"), std::string::npos)
      << dump(v);
}

// Every thread initialising the barriers (the `threadIdx.x == 0` guard and the __syncthreads gone)
// races on the GPU: a reduction of the README's demo that took both away hung on the emulator and
// passed on the H200. The emulator calls it what it is, so a reduction cannot take it.
TEST(EmuBackend, BarriersInitialisedByEveryThreadAreARaceNotTheHang) {
  auto v = judgePipelineEdit("if (threadIdx.x == 0) {\n    for (int s = 0; s < STAGES; ++s) {",
                             "{\n    for (int s = 0; s < STAGES; ++s) {", {"PIPE_ROWS=64"});
  EXPECT_EQ(v.detail, "crash/ub-mbarrier-init-race") << dump(v);
}

// remove-tma-load's claim, on the README's demo: the kernel's TMA load and the bytes announced for
// it go together and the pipeline hangs exactly as before; the load alone does not.
TEST(EmuBackend, ALoadGoesWithItsExpectedBytesAndTheHangStaysTheSame) {
  std::string path = repo() + kDemo;
  std::string text = *wsr::readFile(path);
  wsr::ParseOptions po;
  po.includes.push_back(repo() + "/oracle/include");
  auto parsed = wsr::parseSource(text, path, po);
  ASSERT_TRUE(parsed->ok()) << parsed->firstError();
  auto sites = wsr::findPass("remove-tma-load")->sites(*parsed);
  ASSERT_EQ(sites.size(), 1u);
  auto before = judgeEmuText(text, kDemoHangs, "before.cu");
  auto pair =
      judgeEmuText(wsr::applySites(text, std::vector<wsr::Site>{sites[0]}), kDemoHangs, "pair.cu");
  wsr::Site load_only = sites[0];
  std::erase_if(load_only.edits, [](const wsr::Edit &e) { return e.replacement == "0"; });
  auto alone = judgeEmuText(wsr::applySites(text, std::vector<wsr::Site>{load_only}), kDemoHangs,
                            "alone.cu");
  EXPECT_EQ(before.detail, "hang/mbarrier") << dump(before);
  EXPECT_EQ(pair.detail, before.detail) << dump(pair);
  EXPECT_EQ(pair.signature, before.signature) << dump(pair);
  EXPECT_NE(alone.signature, before.signature) << dump(alone);
}

// Without the __syncthreads after the inits the consumers use the barriers before anything orders
// them after thread 0's init: the emulator's schedule runs the init first and the hang looks the
// same, so the note goes into its signature (a reduction of the GEMM hang dropped it).
TEST(EmuBackend, ABarrierUsedBeforeAnySyncOrdersItAfterItsInitIsNotTheSameHang) {
  std::string text = *wsr::readFile(repo() + kDemo);
  auto synced = judgeEmuText(text, kDemoHangs, "synced.cu");
  auto unsynced =
      judgeEmuText(withoutFirst(text, "  __syncthreads();\n"), kDemoHangs, "unsynced.cu");
  EXPECT_EQ(synced.signature, "hang:mbarrier:warpgroup0(partial);warpgroup1(none)") << dump(synced);
  EXPECT_EQ(unsynced.signature, synced.signature + "+mbarrier-init-unordered") << dump(unsynced);
}

// Bytes announced and short against bytes announced with no copy to deliver them: both park the
// consumers with every arrival in and bytes owed. The CPU reduction of gemm_expect_tx
// removed the TMA load and kept its expect_tx(65536): the same hang, without the bug (twice the
// bytes the load brings). The signature says whether any bytes came.
TEST(EmuBackend, BytesOwedAfterSomeCameAreNotTheSameHangAsBytesNobodySends) {
  const std::string arrive = "mbar_arrive_expect_tx(&full[s], TILE_BYTES);";
  const std::string load =
      "tma_load_2d(stage_tile + s * (TILE_ROWS * PIPE_COLS), &x_map, &full[s], 0, t * TILE_ROWS);";
  const std::vector<std::string> one = {"PIPE_ROWS=64"};
  auto doubled = judgePipelineEdit(arrive, "mbar_arrive_expect_tx(&full[s], 2 * TILE_BYTES);", one);
  auto unfed = judgePipelineEdit(arrive + "\n        " + load,
                                 "mbar_arrive_expect_tx(&full[s], 2 * TILE_BYTES);", one);
  auto over = judgePipelineEdit(arrive, "mbar_arrive_expect_tx(&full[s], TILE_BYTES / 2);", one);
  EXPECT_EQ(doubled.signature, "hang:mbarrier:warpgroup1(tx,first)") << dump(doubled);
  EXPECT_EQ(unfed.signature, "hang:mbarrier:warpgroup1(tx-none,first)") << dump(unfed);
  // half the bytes announced: the load overshoots the tx-count and the phase never completes
  EXPECT_EQ(over.signature, "hang:mbarrier:warpgroup1(tx-over,first)") << dump(over);
}

// A barrier used before its init: the program has an init no thread runs (docs/bugs.md's init in
// a role branch thread 0 does not take), has none, or ran other barriers' inits. A reduction of
// the first (pipeline_init_in_role) removed the dead init block and kept the same verdict.
TEST(EmuBackend, AUseBeforeAnInitThatNeverRanIsNotTheSameAsAProgramWithNoInit) {
  const std::string guard = "if (threadIdx.x == 0) {\n    for (int s = 0; s < STAGES; ++s) {";
  const std::vector<std::string> one = {"PIPE_ROWS=64"};
  auto unrun = judgePipelineEdit(
      guard,
      "if (threadIdx.x == 0 && threadIdx.x / 128 == 1) {\n    for (int s = 0; s < STAGES; ++s) {",
      one);
  auto absent = judgePipelineEdit("mbar_init(&full[s], 1);                  // one",
                                  "(void)0; mbar_init(&empty[s], 0 + CONSUMER_THREADS); //", one);
  EXPECT_EQ(unrun.signature.rfind("crash:ub-use-before-init:", 0), 0u) << dump(unrun);
  EXPECT_NE(unrun.signature.find("(init-unrun)"), std::string::npos) << dump(unrun);
  EXPECT_TRUE(evidenceHas(unrun, "never ran in this CTA")) << dump(unrun);
  // full[] never initialised, empty[] is: other inits ran
  EXPECT_NE(absent.signature.find("(init-other)"), std::string::npos) << dump(absent);
  // no init anywhere in the program: the same text with the init block gone
  std::string text = *wsr::readFile(repo() + "/kernels/tma_pipeline_sm90.cu");
  size_t b = text.find(guard), e = text.find("__syncthreads();", b);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  text.erase(b, e - b);
  auto none = judgeEmuText(text, one, "noinit.cu");
  EXPECT_EQ(none.detail, "crash/ub-use-before-init") << dump(none);
  EXPECT_NE(none.signature.find("(init-absent)"), std::string::npos) << dump(none);
  // with the block gone mbar_init is still defined, but nothing calls it
  EXPECT_NE(text.find("void mbar_init("), std::string::npos);
}

TEST(EmuBackend, TmaPipelinePassesAtASmallShape) {
  auto v = judgeEmu(repo() + "/kernels/tma_pipeline_sm90.cu", {"PIPE_ROWS=64"});
  EXPECT_EQ(v.symptom, "pass") << dump(v);
}

TEST(EmuBackend, WsGemmPassesAt128x128x64) {
  auto v = judgeEmu(repo() + "/kernels/ws_gemm_sm90.cu", {"GEMM_M=128", "GEMM_N=128", "GEMM_K=64"});
  EXPECT_EQ(v.symptom, "pass") << dump(v);
}

// A TMA reads its tensor map from param, const or global memory only. A kernel parameter without
// __grid_constant__ is the thread's local copy: on the H200 the TMA with such a map is an illegal
// instruction (compute-sanitizer), and a reduction that had dropped the attribute kept
// "the same" wrong result on the emulator while the GPU's output no longer followed the reference.
TEST(EmuBackend, ATensorMapInTheThreadsLocalMemoryIsUb) {
  const std::vector<std::string> shape = {"GEMM_M=128", "GEMM_N=128", "GEMM_K=64"};
  std::string text = *wsr::readFile(repo() + "/kernels/ws_gemm_sm90.cu");
  auto edited = [&](const std::string &from, const std::string &to) {
    std::string t = text;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) t.replace(at, from.size(), to);
    return t;
  };
  auto param = judgeEmuText(
      edited("const __grid_constant__ CUtensorMap tmap_b", "const CUtensorMap tmap_b"), shape);
  EXPECT_EQ(param.detail, "crash/ub-tensor-map-space") << dump(param);
  EXPECT_TRUE(evidenceHas(param, "kernel parameter `tmap_b`, which is not __grid_constant__"))
      << dump(param);
  // a local copy of a __grid_constant__ parameter is local memory too
  auto local = judgeEmuText(
      edited("tma_load_2d(sA + stage * A_STAGE_BYTES, &tmap_a,",
             "CUtensorMap copy = tmap_a; tma_load_2d(sA + stage * A_STAGE_BYTES, &copy,"),
      shape);
  EXPECT_EQ(local.detail, "crash/ub-tensor-map-space") << dump(local);
  EXPECT_TRUE(evidenceHas(local, "local memory")) << dump(local);
  // the kernel as written (every map __grid_constant__) passes: WsGemmPassesAt128x128x64
}

// The missing wgmma.fence (docs/bugs.md: latent on the H200, UB by the PTX ISA) is named at
// the wgmma it leaves unfenced, under the reducer's eager policy: in the GEMM's K loop, and either
// of the attention kernel's two fences (QK^T after the previous P.V's full wait, and P.V after the
// softmax read the scores). A reduction of gemm_k_loop_short on the H200 had dropped the fence
// and every wgmma wait and kept "the same" wrong rows.
TEST(EmuBackend, AMissingWgmmaFenceIsUbInTheRealKernels) {
  std::string gemm = *wsr::readFile(repo() + "/kernels/ws_gemm_sm90.cu");
  auto g = judgeEmuText(withoutFirst(gemm, "        wgmma_fence();\n"),
                        {"GEMM_M=128", "GEMM_N=128", "GEMM_K=128"}, "g.cu");
  EXPECT_EQ(g.detail, "crash/ub-wgmma-unfenced") << dump(g);
  std::string att = *wsr::readFile(repo() + "/kernels/ws_attention_sm90.cu");
  const std::string fence = "      wgmma_fence();\n";
  const std::vector<std::string> shape = {"ATT_BATCH=1", "ATT_HEADS=1", "ATT_SEQ=256"};
  auto qk = judgeEmuText(withoutFirst(att, fence), shape, "qk.cu");
  std::string pv_text = att;
  size_t second = pv_text.find(fence, pv_text.find(fence) + 1);
  ASSERT_NE(second, std::string::npos);
  pv_text.erase(second, fence.size());
  auto pv = judgeEmuText(pv_text, shape, "pv.cu");
  for (auto *v : {&qk, &pv}) {
    EXPECT_EQ(v->detail, "crash/ub-wgmma-unfenced") << dump(*v);
    EXPECT_TRUE(evidenceHas(*v, "with no wgmma.fence before it")) << dump(*v);
  }
}

// A TMA store whose thread never waits for it (the GEMM's last cp.async.bulk.wait_group deleted)
// is UB once the CTA exits, under the eager policy too, which had read the tile at issue: on the
// GPU the CTA's shared memory may be gone before the store reads it.
TEST(EmuBackend, AStoreItsThreadNeverWaitedForIsUbInTheRealKernel) {
  std::string gemm = *wsr::readFile(repo() + "/kernels/ws_gemm_sm90.cu");
  auto v = judgeEmuText(withoutFirst(gemm, "    if (wg_thread == 0) tma_store_wait<0>();"),
                        {"GEMM_M=128", "GEMM_N=128", "GEMM_K=64"});
  EXPECT_EQ(v.detail, "crash/ub-exit-with-bulk-in-flight") << dump(v);
  EXPECT_TRUE(evidenceHas(v, "never waited for its cp.async.bulk.tensor (store)")) << dump(v);
}

// K = 384: six k-blocks over five stages, so the producer needs empty[0] back, which never
// completes.
TEST(EmuBackend, GemmArrivalCountHangsOnEmpty) {
  auto v = judgeEmu(repo() + "/corpus/examples/gemm_arrival_count.cu",
                    {"GEMM_M=128", "GEMM_N=128", "GEMM_K=384"});
  EXPECT_EQ(v.detail, "hang/mbarrier") << dump(v);
  // the producer on empty (2 of 256 arrivals), the consumers on full (nothing arrived)
  EXPECT_EQ(v.signature, "hang:mbarrier:warpgroup0(partial);warpgroup1(none);warpgroup2(none)")
      << dump(v);
  EXPECT_TRUE(evidenceHas(v, "gemm_arrival_count.cu:345>gemm_arrival_count.cu:131")) << dump(v);
}

// Every sm_90a reference kernel passes under every async timing policy (the matrix), at a shape
// with more than one tile per pipeline stage so the ring wraps.
struct KernelAtShape {
  const char *file;
  std::vector<std::string> defines;
};
class EmuKernelsUnderEveryPolicy : public ::testing::TestWithParam<KernelAtShape> {};
TEST_P(EmuKernelsUnderEveryPolicy, Passes) {
  auto v = judgeEmu(repo() + "/kernels/" + GetParam().file, GetParam().defines, wsr::emuPolicies());
  EXPECT_EQ(v.symptom, "pass") << dump(v);
  ASSERT_EQ(v.policies.size(), 3u) << dump(v);
  for (auto &p : v.policies) EXPECT_EQ(p.detail, "pass") << p.policy << "\n" << dump(v);
}
INSTANTIATE_TEST_SUITE_P(
    Kernels, EmuKernelsUnderEveryPolicy,
    ::testing::Values(KernelAtShape{"tma_pipeline_sm90.cu", {"PIPE_ROWS=512"}},
                      KernelAtShape{"ws_gemm_sm90.cu", {"GEMM_M=256", "GEMM_N=256", "GEMM_K=512"}},
                      KernelAtShape{"ws_attention_sm90.cu",
                                    {"ATT_BATCH=1", "ATT_HEADS=1", "ATT_SEQ=512"}}));

// The hand-made catalogue variants (corpus/examples/, docs/bugs.md) get deterministic verdicts.
TEST(EmuBackend, CatalogueExamplesGetTheirVerdicts) {
  std::vector<std::string> gemm = {"GEMM_M=128", "GEMM_N=128", "GEMM_K=384"};
  auto ex = [&](const char *f) { return repo() + "/corpus/examples/" + f; };
  auto tx = judgeEmu(ex("gemm_expect_tx.cu"), gemm);
  EXPECT_EQ(tx.detail, "hang/mbarrier");
  EXPECT_NE(tx.signature.find("(tx,first)"), std::string::npos) << dump(tx);
  auto k = judgeEmu(ex("gemm_k_loop_short.cu"), gemm);
  EXPECT_EQ(k.symptom, "wrong") << dump(k);
  auto init = judgeEmu(ex("pipeline_init_in_role.cu"), {"PIPE_ROWS=512"});
  EXPECT_EQ(init.detail, "crash/ub-use-before-init") << dump(init);
  EXPECT_NE(init.signature.find("(init-unrun)"), std::string::npos) << dump(init);
  // Latent on the H200 (every run passes); the emulator's TMA store reads what the async proxy
  // saw, and without the fence it saw none of the consumers' writes.
  auto fence = judgeEmu(ex("pipeline_missing_proxy_fence.cu"), {"PIPE_ROWS=512"});
  EXPECT_EQ(fence.symptom, "wrong") << dump(fence);
  EXPECT_NE(fence.signature.find("+proxy-unfenced"), std::string::npos) << dump(fence);
}

// A wgmma that reads a tile its warpgroup never waited for: the eager policy has the bytes there,
// the GPU not yet. On the H200 a reduction of gemm_k_loop_short dropped the consumers' wait on
// `full` and kept "the same" wrong rows, which the GPU did not show. The
// late policies cannot judge it (the original is ub-exit-with-bulk-in-flight under them), so the
// read is part of the signature under every policy; the reference GEMM has none.
TEST(EmuBackend, AWgmmaReadingATileItsWarpgroupNeverWaitedForIsNotTheSameWrongResult) {
  const std::vector<std::string> gemm = {"GEMM_M=128", "GEMM_N=128", "GEMM_K=384"};
  std::string text = *wsr::readFile(repo() + "/corpus/examples/gemm_k_loop_short.cu");
  auto original = judgeEmuText(text, gemm, "k_short.cu");
  auto unwaited = judgeEmuText(withoutFirst(text, "        mbar_wait(&full[stage], phase);\n"),
                               gemm, "k_short_unwaited.cu");
  EXPECT_EQ(original.signature, "wrong:C:row-stripe") << dump(original);
  EXPECT_EQ(unwaited.symptom, "wrong") << dump(unwaited);
  EXPECT_NE(unwaited.signature.find("+smem-read-unwaited"), std::string::npos) << dump(unwaited);
  EXPECT_TRUE(evidenceHas(unwaited, "WSEMU note smem-read-unwaited=")) << dump(unwaited);
}

// corpus/reduced/: the H200 reductions of the hand-injected bugs (its README) keep their originals'
// emulator signatures under the emulator as it is now: a change to it that a reduction relied on
// shows here, and nvcc still builds each result for sm_90a.
TEST(EmuBackend, TheCorpusReductionsKeepTheirOriginalsSignatures) {
  for (const char *name : {"gemm_arrival_count", "gemm_expect_tx", "gemm_k_loop_short",
                           "pipeline_init_in_role", "pipeline_missing_proxy_fence"}) {
    auto original = judgeEmu(repo() + "/corpus/examples/" + name + ".cu");
    std::string min = repo() + "/corpus/reduced/" + name + ".min.cu";
    auto reduced = judgeEmu(min);
    EXPECT_NE(original.symptom, "pass") << name << "\n" << dump(original);
    EXPECT_EQ(reduced.signature, original.signature) << name << "\n" << dump(reduced);
    wsr::BuildOptions bo;
    bo.cache_dir = std::string(WSR_BUILD_DIR) + "/emu-test-cache";
    auto b = wsr::buildProgram(min, bo);
    EXPECT_TRUE(b.ok) << name << "\n" << b.log;
  }
}

// The emu build's cache is keyed before any parse, by content: the same program in a fresh
// directory (every reducer candidate lives in one) is a hit that costs no translation; a change is
// not, and neither is the same text under another name (its verdicts name the file: a test's copy
// of mbarrier_hang.cu, judged first, made the fixture's hang read `hang_sync.cu:13`).
TEST(EmuBackend, CacheHitsAcrossDirectoriesWithoutTranslating) {
  std::string cache = wsr::makeTempDir("wsr-emu-cache.");
  wsr::BuildOptions o;
  o.cache_dir = cache;
  std::string text = *wsr::readFile(fixture("pass.cu"));
  std::string common = *wsr::readFile(fixture("common.h"));
  std::vector<wsr::BuildRecord> bs;
  for (int i = 0; i < 4; ++i) {
    std::string dir = wsr::makeTempDir("wsr-emu-cand.");
    std::string name = i < 3 ? "/p.cu" : "/renamed.cu";
    wsr::writeFileAtomic(dir + name, i != 2 ? text : text + "\n// changed\n");
    wsr::writeFileAtomic(dir + "/common.h", common);
    bs.push_back(wsr::emu::buildEmu(dir + name, o));
    wsr::removeTree(dir);
  }
  // Each candidate's binary is kept in the cache: it carries no debug sections (the runtime
  // archive's made a GEMM candidate 5.4 MB instead of 0.3 MB).
  auto bin = wsr::readFile(bs[0].binary);
  ASSERT_TRUE(bin.has_value());
  EXPECT_EQ(bin->find(".debug_info"), std::string::npos);
  wsr::removeTree(cache);
  ASSERT_TRUE(bs[0].ok) << bs[0].log;
  EXPECT_FALSE(bs[0].cache_hit);
  EXPECT_TRUE(bs[1].cache_hit);
  EXPECT_EQ(bs[0].key, bs[1].key);
  EXPECT_LT(bs[1].wall_ms, 200) << "a hit must not parse";
  EXPECT_FALSE(bs[2].cache_hit) << "a changed program is built again";
  EXPECT_FALSE(bs[3].cache_hit) << "the same text under another name is built again";
  EXPECT_NE(bs[3].key, bs[0].key);
}

// ---- a parse lent by the reducer's parse check (frontend/parse.h ParseLoan) ----

// The reducer's parse check keeps its ASTs (a precompiled preamble, re-parsed per candidate) and
// lends them to the translation and the watchdog's instrumentation of the same candidate. What
// they make from the loan must be exactly what they make from a parse of their own: checked on
// every kernel, on the first check (no preamble yet) and on the re-parse (with the preamble).
TEST(ParseLoan, TranslationAndInstrumentationFromTheCheckersAstsAreTheFreshOnes) {
  std::vector<std::string> files = {repo() + "/corpus/examples/gemm_arrival_count.cu",
                                    fixture("mbarrier_hang.cu")};
  for (auto &e : fs::directory_iterator(repo() + "/kernels"))
    if (e.path().extension() == ".cu") files.push_back(e.path().string());
  for (auto &path : files) {
    SCOPED_TRACE(path);
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    wsr::ParseOptions po;
    po.includes = {fs::path(path).parent_path().string(), wsr::harnessIncludeDir()};
    if (path.find("sm100") != std::string::npos) po.arch = "sm_100a";
    wsr::emu::TranslateOptions to;
    to.parse = po;
    wsr::WatchOptions wo;
    wo.parse = po;
    auto fresh_t = wsr::emu::translate(text, path, to);
    auto fresh_w = wsr::instrumentWatchdog(text, path, wo);
    ASSERT_TRUE(fresh_t.ok) << fresh_t.error;
    ASSERT_TRUE(fresh_w.ok) << fresh_w.error;
    wsr::ParseOptions strict = po;
    strict.strict_return = true;
    wsr::ParseChecker checker(path, strict);
    for (int pass = 0; pass < 2; ++pass) {
      SCOPED_TRACE(pass ? "re-parse" : "first parse");
      bool lent = false;
      std::string err;
      bool ok = checker.check(text, &err, [&](const wsr::ParsedSource &ps) {
        wsr::ParseLoan loan(ps);
        lent = wsr::parseOnce(text, path, po).get() == &ps;  // borrowed, not parsed again
        auto t = wsr::emu::translate(text, path, to);
        auto w = wsr::instrumentWatchdog(text, path, wo);
        ASSERT_TRUE(t.ok) << t.error;
        ASSERT_TRUE(w.ok) << w.error;
        EXPECT_EQ(t.text, fresh_t.text);
        EXPECT_EQ(w.text, fresh_w.text);
        EXPECT_EQ(w.warnings, fresh_w.warnings);
      });
      EXPECT_TRUE(ok) << err;
      EXPECT_TRUE(lent);
    }
    // another text is never handed the loan
    checker.check(text, nullptr, [&](const wsr::ParsedSource &ps) {
      wsr::ParseLoan loan(ps);
      EXPECT_NE(wsr::parseOnce(text + "\n", path, po).get(), &ps);
    });
  }
}

// The GEMM's checker, and a variant's check: whether the stages were lent its
// ASTs, and that what the translation makes from them is a fresh parse's.
struct GemmCheck {
  std::string path = repo() + "/corpus/examples/gemm_arrival_count.cu";
  std::string text = *wsr::readFile(path);
  wsr::ParseOptions po = [&] {
    wsr::ParseOptions o;
    o.includes = {fs::path(path).parent_path().string(), wsr::harnessIncludeDir()};
    return o;
  }();
  wsr::ParseChecker checker{path, [&] {
                              wsr::ParseOptions strict = po;
                              strict.strict_return = true;
                              return strict;
                            }()};
  bool lentAsFresh(const std::string &variant) {
    wsr::emu::TranslateOptions to;
    to.parse = po;
    auto fresh = wsr::emu::translate(variant, path, to);
    EXPECT_TRUE(fresh.ok) << fresh.error;
    std::string err;
    bool lent = false;
    EXPECT_TRUE(checker.check(variant, &err, [&](const wsr::ParsedSource &ps) {
      wsr::ParseLoan loan(ps);
      lent = wsr::parseOnce(variant, path, po).get() == &ps;
      auto t = wsr::emu::translate(variant, path, to);
      EXPECT_EQ(t.text, fresh.text);
    })) << err;
    return lent;
  }
  std::string edit(const std::string &from, const std::string &to) {
    std::string t = text;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) t.replace(at, from.size(), to);
    return t;
  }
};

// A candidate that edits the leading directives before the #includes gets a preamble of its own
// lines (shared: a second checker of the same text builds nothing): its verdict and its lent ASTs
// are those of a fresh parse, and a preamble that no longer compiles still fails the check.
TEST(ParseLoan, ACandidateThatEditsThePreambleGetsAPreambleOfItsOwn) {
  GemmCheck g;
  const std::string variant = "#define WSR_LOAN_VARIANT 1\n" + g.text;
  const long built0 = wsr::sharedPreambleBuilds();
  EXPECT_TRUE(g.lentAsFresh(variant));
  EXPECT_GE(g.checker.includeOnlyParses(), 1) << "parsed from scratch";
  const long built1 = wsr::sharedPreambleBuilds();
  EXPECT_GT(built1, built0);
  GemmCheck other;
  std::string err;
  EXPECT_TRUE(other.checker.check(variant, &err)) << err;
  EXPECT_EQ(wsr::sharedPreambleBuilds(), built1)
      << "the second checker built the same preamble again";
  EXPECT_FALSE(g.checker.check("#if 1\n#error the preamble breaks\n#endif\n" + g.text, &err));
  EXPECT_NE(err.find("the preamble breaks"), std::string::npos) << err;
  EXPECT_TRUE(g.checker.check(g.text, &err)) << err;  // the base itself
}

// A shape knob's edit (a #define after the #includes) is parsed with the base's #include lines
// precompiled on their own, not from scratch: its verdict and its lent ASTs are those of a fresh
// parse, an edit that breaks the program still fails, and an edit of the #include lines gets the
// new lines precompiled once, and sees what they no longer declare. (On the H200, with 30 jobs on
// 32 cores, a plain parse of such a candidate took 5-7 s, most of a campaign reduction's budget;
// bench/results/2026-11-30-h200-session8.)
TEST(ParseLoan, AKnobEditIsParsedWithTheBasesIncludesPrecompiled) {
  GemmCheck g;
  std::string err;
  EXPECT_TRUE(g.checker.check(g.text, &err)) << err;
  const long built = wsr::sharedPreambleBuilds();
  const long sides = g.checker.includeOnlyParses();  // one a side
  EXPECT_GE(sides, 1) << "the base was parsed from scratch";
  EXPECT_TRUE(g.lentAsFresh(g.edit("#define GEMM_K 512", "#define GEMM_K 256")));
  EXPECT_EQ(g.checker.includeOnlyParses(), 2 * sides) << "the knob's edit was parsed from scratch";
  EXPECT_EQ(wsr::sharedPreambleBuilds(), built) << "a #define edit rebuilt the preamble";
  // a knob edit that breaks the program is still refused, through the same path
  EXPECT_FALSE(g.checker.check(g.edit("#define BLOCK_K 64", "#define BLOCK_K (64"), &err));
  EXPECT_EQ(g.checker.includeOnlyParses(), 3 * sides);
  // an edit of the #include lines: its own lines precompiled, once
  const std::string fewer = g.edit("#include <algorithm>\n", "");
  EXPECT_TRUE(g.lentAsFresh(fewer));
  EXPECT_GT(wsr::sharedPreambleBuilds(), built);
  const long built2 = wsr::sharedPreambleBuilds();
  EXPECT_TRUE(g.checker.check(fewer, &err)) << err;
  EXPECT_EQ(wsr::sharedPreambleBuilds(), built2);
  EXPECT_FALSE(
      g.checker.check(g.edit("#include <random>\n", ""), &err));  // the host code's std::mt19937
  EXPECT_NE(err.find("mt19937"), std::string::npos) << err;
  EXPECT_FALSE(
      g.checker.check(g.edit("#include <cuda_runtime.h>", "#include <no_such_header.h>"), &err));
  EXPECT_NE(err.find("no_such_header.h"), std::string::npos) << err;
}

// ---- the reducer's tester: a candidate must still launch a kernel ----

// A GPU bug's repro launches a kernel. On the H200 a reduction of an out-of-bounds TMA store
// (wrong:Y:nan) deleted the kernel and its launch and still "reproduced": the host's output buffer,
// poisoned with 0xFF and never written, compares as NaN. Such a candidate is refused from its
// parse, before anything is built.
TEST(Tester, ACandidateThatLaunchesNoKernelIsRefusedBeforeAnyBuild) {
  std::string path = fixture("mbarrier_hang.cu");
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  auto at = text.find("k<<<1, 128>>>(d);");
  ASSERT_NE(at, std::string::npos);
  std::string no_launch =
      text.substr(0, at) + text.substr(at + std::string("k<<<1, 128>>>(d);").size());
  std::string via_api =
      text.substr(0, at) +
      "{ void *args[] = {&d}; cudaLaunchKernel((const void *)k, 1, 128, args); }" +
      text.substr(at + std::string("k<<<1, 128>>>(d);").size());
  for (std::string symptom : {"hang", "compile-error"}) {
    wsr::TestOptions t = onTheEmulator(symptom, path);
    wsr::Tester tester(t);
    tester.calibrateParseCheck(text);
    auto r = tester.test(no_launch);
    if (symptom == "hang") {
      EXPECT_EQ(r.detail, "no-kernel-launch") << r.note;
      EXPECT_FALSE(r.interesting);
      EXPECT_EQ(r.build_ms, 0);         // refused from the parse: nothing built
      auto api = tester.test(via_api);  // a launch through the runtime API counts
      EXPECT_NE(api.detail, "no-kernel-launch") << api.note;
    } else {
      EXPECT_NE(r.detail, "no-kernel-launch");  // a compile error needs no launch
    }
  }
}

// The search's lookahead may still be judging a text when its pass asks for it: the second test
// waits for that verdict rather than judging the same text again (a real script, counted in a
// file).
TEST(Tester, TheSameTextAskedTwiceAtOnceIsJudgedOnce) {
  std::string dir = wsr::makeTempDir("wsr-twice.");
  std::string script = dir + "/slow_test.sh", count = dir + "/runs";
  ASSERT_TRUE(wsr::writeFileAtomic(
      script, "#!/bin/sh\necho run >> " + count + "\nsleep 1\ngrep -q keep \"$1\"\n"));
  fs::permissions(script, fs::perms::owner_all);
  wsr::TestOptions t;
  t.test_script = script;
  t.parse_check = false;
  t.original_path = dir + "/p.cu";
  wsr::Tester tester(t);
  wsr::TestResult a, b;
  std::thread first([&] { a = tester.test("int keep;\n"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  b = tester.test("int keep;\n");
  first.join();
  EXPECT_TRUE(a.interesting);
  EXPECT_TRUE(b.interesting);
  EXPECT_FALSE(a.cached);
  EXPECT_TRUE(b.cached) << "the second waited for the first's verdict";
  EXPECT_EQ(tester.tests(), 1);
  EXPECT_EQ(*wsr::readFile(count), "run\n");
  // Another text is judged on its own.
  auto c = tester.test("int drop;\n");
  EXPECT_FALSE(c.interesting);
  EXPECT_EQ(tester.tests(), 2);
  wsr::removeTree(dir);
}

// The original's own run tunes the candidates (wsreduce and wsfuzz --reduce share it): when every
// run of it finished, a candidate killed at the timeout is not retried and the timeout becomes
// clamp(10 x its longest run, 2 s, cap); an original that was itself killed at the timeout
// changes neither. wsfuzz's emulator reductions on the H200 had neither and spent their budgets
// on 10 s + 20 s retries.
TEST(Tester, TheOriginalsOwnRunSetsTheTimeoutAndStopsRetries) {
  auto tester = [] {
    wsr::TestOptions t;
    t.symptom = "hang";
    t.original_path = fixture("mbarrier_hang.cu");
    t.oracle.backend = "emu";
    t.oracle.run.timeout_s = 10;
    return std::make_unique<wsr::Tester>(t);
  };
  wsr::Verdict v = judgeEmu(fixture("mbarrier_hang.cu"));
  ASSERT_EQ(v.symptom, "hang") << dump(v);
  ASSERT_FALSE(v.runs.empty());
  auto a = tester();
  auto said = a->tuneFromOriginal(v, 10, true, false);
  EXPECT_EQ(said.size(), 3u);  // no retry, the timeout, the livelock limit
  EXPECT_FALSE(a->oracleOptions().retry_timeout);
  EXPECT_TRUE(a->oracleOptions().calibrate);
  double longest = 0;
  for (auto &r : v.runs) longest = std::max(longest, r.wall_ms);
  EXPECT_EQ(a->oracleOptions().calibrate_observed_ms, longest);
  EXPECT_EQ(wsr::calibratedTimeout(longest, 10, 2, 10), std::clamp(longest / 100.0, 2.0, 10.0));
  auto b = tester();  // retries asked for, no calibration: only what was asked
  EXPECT_EQ(b->tuneFromOriginal(v, 10, false, true).size(), 0u);
  EXPECT_TRUE(b->oracleOptions().retry_timeout);
  EXPECT_FALSE(b->oracleOptions().calibrate);
  wsr::Verdict killed = v;
  killed.runs.front().timed_out = true;
  auto c = tester();
  EXPECT_TRUE(c->tuneFromOriginal(killed, 10, true, false).empty());
  EXPECT_TRUE(c->oracleOptions().retry_timeout);
  EXPECT_FALSE(c->oracleOptions().calibrate);
}

// A candidate that loops for ever on the emulator (here thread 0 arrives for ever, and the others
// get through) stops at the operation limit the original's own count set: hang/livelock in
// milliseconds, not a kill at the timeout with a hang nobody named. On the H200 such candidates
// took 2 s each, 60 of them in one reduction.
TEST(Tester, ACandidateThatLoopsForEverIsALivelockNotATimeout) {
  wsr::Verdict v = judgeEmu(fixture("mbarrier_hang.cu"));
  ASSERT_EQ(v.symptom, "hang") << dump(v);
  unsigned long long ops = 0;
  for (auto &l : v.evidence)
    if (l.rfind("WSEMU ops ", 0) == 0) ops = std::stoull(l.substr(10));
  ASSERT_GT(ops, 0u) << dump(v);
  wsr::TestOptions t = onTheEmulator("hang", fixture("mbarrier_hang.cu"));
  wsr::Tester tester(t);
  tester.tuneFromOriginal(v, 60, true, false);
  EXPECT_EQ(tester.oracleOptions().emu_max_ops, std::max(20 * ops, 1'000'000ull));
  auto text = wsr::readFile(fixture("mbarrier_hang.cu"));
  ASSERT_TRUE(text);
  const std::string arrive = "if (threadIdx.x == 0) asm volatile(\"mbarrier.arrive";
  auto at = text->find(arrive);
  ASSERT_NE(at, std::string::npos);
  std::string forever = *text;
  forever.replace(at, arrive.size(),
                  "if (threadIdx.x == 0) for (;;) asm volatile(\"mbarrier.arrive");
  auto r = tester.test(forever);
  EXPECT_EQ(r.detail, "hang/livelock") << r.note;
  EXPECT_FALSE(r.interesting);
  EXPECT_LT(r.run_ms, 1500) << "killed at the timeout, not stopped by the limit";
  // A spin with no emulated operation in it (its try_wait asm gone, as reductions make it): the
  // translation's loopTick counts its turns (86 such candidates of one H200 reduction
  // ran until the timeout).
  std::string spin = *text;
  spin.replace(spin.find("  while (!done)\n"), std::string("  while (!done)\n").size(),
               "  while (!done) {}\n  if (0)\n");
  auto s = tester.test(spin);
  EXPECT_EQ(s.detail, "hang/livelock") << s.note;
  EXPECT_LT(s.run_ms, 1500) << "killed at the timeout, not stopped by the limit";
  EXPECT_EQ(tester.test(*text).detail, "hang/mbarrier");  // the original itself is well inside it
}

// A Tester's options for a variant of the pass.cu fixture (written into dir as p.cu) reduced for a
// wrong result on the emulator.
static wsr::TestOptions wrongOnTheEmulator(const std::string &dir, const std::string &original) {
  wsr::writeFileAtomic(dir + "/p.cu", original);
  wsr::writeFileAtomic(dir + "/common.h", *wsr::readFile(fixture("common.h")));
  wsr::TestOptions t = onTheEmulator("wrong", dir + "/p.cu");
  return t;
}

// A candidate whose failure is the value of a local nobody set is not the original's failure: the
// emulator fills such locals with a pattern, the GPU's registers often held zero. On the H200 a
// reduction of gemm_k_loop_short removed every wgmma, so the accumulator was
// never written: wrong/row-stripe on the emulator, a pass on the GPU. The Tester judges an
// interesting candidate again with zeroed locals; the original's own wrong rows stay interesting.
TEST(Tester, AFailureThatComesFromUninitialisedLocalsIsNotInteresting) {
  auto pass = wsr::readFile(fixture("pass.cu"));
  ASSERT_TRUE(pass);
  const std::string body = "if (i < n) y[i] = 2.0f * x[i] + 1.0f;";
  ASSERT_NE(pass->find(body), std::string::npos);
  auto variant = [&](const std::string &with) {
    std::string t = *pass;
    t.replace(t.find(body), body.size(), with);
    return t;
  };
  // the top half's rows off by one: the original's bug, and the same rows off by one where a
  // local left unset is not zero
  std::string original =
      variant("if (i < n) y[i] = 2.0f * x[i] + 1.0f + (i < n / 2 ? 1.0f : 0.0f);");
  std::string unset = variant(
      "int unset[1];  // an array: Clang's -Wuninitialized, which the parse check keeps, does not "
      "see it\n"
      "  if (i < n) y[i] = 2.0f * x[i] + 1.0f + (i < n / 2 && unset[0] != 0 ? 1.0f : 0.0f);");
  std::string dir = wsr::makeTempDir("wsr-locals.");
  wsr::TestOptions t = wrongOnTheEmulator(dir, original);
  wsr::Tester tester(t);
  wsr::TestResult o;
  wsr::Verdict ov = tester.judgeOriginal(original, &o);
  ASSERT_TRUE(o.interesting) << dump(ov);
  EXPECT_EQ(ov.signature, "wrong:y:row-stripe") << dump(ov);
  EXPECT_EQ(tester.localsCheckOff(), "");
  tester.setSignature(ov.signature);
  auto u = tester.test(unset);
  EXPECT_FALSE(u.interesting) << u.detail << " " << u.note;
  EXPECT_EQ(u.detail, "locals-dependent") << u.note;
  EXPECT_NE(u.note.find("pass"), std::string::npos) << u.note;
  EXPECT_TRUE(tester.test(original + "\n// the same program\n").interesting);
  // without the check the unset local's pattern is the original's wrong rows
  t.locals_check = false;
  wsr::Tester unchecked(t);
  unchecked.setSignature(ov.signature);
  EXPECT_TRUE(unchecked.test(unset).interesting);
  // an original whose own failure is an unset local: the check is off, and says why
  t.locals_check = true;
  wsr::Tester own(t);
  wsr::TestResult uo;
  own.judgeOriginal(unset, &uo);
  EXPECT_TRUE(uo.interesting);
  EXPECT_NE(own.localsCheckOff().find("with zeroed locals"), std::string::npos)
      << own.localsCheckOff();
  wsr::removeTree(dir);
}

// "The fix makes it pass": when the original's failure reads bytes the async proxy had not seen
// (proxy-unfenced), an interesting candidate is judged again with a coherent proxy (every
// fence.proxy.async in place) and must then pass as the original does. A CPU
// reduction of the missing proxy fence (tests/fixtures/gpu/proxy_fence_unset_values.cu)
// kept the stale store but left the stored values unset locals: with the fence it is still
// wrong, and on the H200 it was wrong for the unset values, not the fence.
TEST(Tester, AProxyFailureThatStaysWithTheFenceInPlaceIsNotTheMissingFence) {
  std::string path = repo() + "/corpus/examples/pipeline_missing_proxy_fence.cu";
  auto original = wsr::readFile(path);
  auto unset = wsr::readFile(fixture("proxy_fence_unset_values.cu"));
  ASSERT_TRUE(original && unset);
  wsr::TestOptions t = onTheEmulator("wrong", path);
  wsr::Tester tester(t);
  wsr::TestResult o;
  wsr::Verdict ov = tester.judgeOriginal(*original, &o);
  ASSERT_TRUE(o.interesting) << dump(ov);
  ASSERT_NE(ov.signature.find("+proxy-unfenced"), std::string::npos) << dump(ov);
  ASSERT_TRUE(tester.coherentProxyVerdict().has_value());
  EXPECT_EQ(tester.coherentProxyVerdict()->symptom, "pass") << dump(*tester.coherentProxyVerdict());
  tester.setSignature(ov.signature);
  auto u = tester.test(*unset);
  EXPECT_FALSE(u.interesting) << u.detail << " " << u.note;
  EXPECT_EQ(u.detail, "fence-independent") << u.note;
  EXPECT_NE(u.note.find("wrong"), std::string::npos) << u.note;
  // the original itself (a comment apart) still is the missing fence
  auto same = tester.test(*original + "\n// the same program\n");
  EXPECT_TRUE(same.interesting) << same.detail << " " << same.note;
  // without the check the unset values' result keeps the original's signature
  t.proxy_check = false;
  wsr::Tester unchecked(t);
  unchecked.judgeOriginal(*original);
  EXPECT_FALSE(unchecked.coherentProxyVerdict().has_value());
  unchecked.setSignature(ov.signature);
  auto uu = unchecked.test(*unset);
  EXPECT_TRUE(uu.interesting) << uu.detail << " " << uu.note << " " << uu.signature;
}

// The tester's result for `candidate(original)`, where the original is pass.cu made to fail
// (wrong on the emulator) and judged first, as wsreduce judges it before the search.
static wsr::TestResult judgedAfterTheWrongOriginal(
    const std::function<std::string(std::string)> &candidate) {
  auto pass = wsr::readFile(fixture("pass.cu"));
  EXPECT_TRUE(pass);
  if (!pass) return {};
  const std::string body = "if (i < n) y[i] = 2.0f * x[i] + 1.0f;";
  EXPECT_NE(pass->find(body), std::string::npos);
  std::string original = *pass;
  original.replace(original.find(body), body.size(),
                   "if (i < n) y[i] = 2.0f * x[i] + 1.0f + (i < n / 2 ? 1.0f : 0.0f);");
  std::string dir = wsr::makeTempDir("wsr-cand.");
  wsr::TestOptions t = wrongOnTheEmulator(dir, original);
  t.locals_check = false;
  wsr::Tester tester(t);
  wsr::TestResult o;
  wsr::Verdict ov = tester.judgeOriginal(original, &o);
  EXPECT_TRUE(o.interesting) << dump(ov);
  tester.setSignature(ov.signature);
  auto u = tester.test(candidate(original));
  wsr::removeTree(dir);
  return u;
}

// What a candidate brought on itself: named, but neither interesting nor an infra error.
static void expectTheCandidatesDoing(const wsr::TestResult &u, const std::string &detail) {
  EXPECT_EQ(u.detail, detail) << u.note;
  EXPECT_FALSE(u.infra);
  EXPECT_FALSE(u.interesting);
}

// An instruction the emulator does not implement, reached by a candidate (a pass edited an asm
// string), says the candidate cannot be judged there, not that the judge is broken: it is not
// interesting and not an infra error, so a run of them does not stop the search
// (three in a row stopped an H200 reduction after 187 s).
TEST(Tester, AnInstructionTheEmulatorLacksIsTheCandidatesNotTheJudges) {
  auto u = judgedAfterTheWrongOriginal([](std::string odd) {
    odd.replace(odd.find("if (i < n) y[i]"), 0, "asm volatile(\"no.such.instruction;\");\n  ");
    return odd;
  });
  expectTheCandidatesDoing(u, "infra-error/unknown-instruction");
  EXPECT_NE(u.note.find("unknown-instruction"), std::string::npos) << u.note;
}

// A candidate that skips itself (WSSKIP, exit 77) where the original ran is the candidate's doing
// (a device check the search took apart), not a machine that cannot run the kernel: not
// interesting, not an infra error (pdd's nested prefixes gave three in a row
// and stopped an H200 reduction after 137 s).
TEST(Tester, ACandidateThatSkipsItselfIsTheCandidatesNotTheJudges) {
  auto u = judgedAfterTheWrongOriginal([](std::string skips) {
    skips.replace(
        skips.find("int main() {"), 12,
        "int main() {\n  { std::printf(\"WSSKIP needs sm_90a (Hopper)\\n\"); return 77; }");
    return skips;
  });
  expectTheCandidatesDoing(u, "infra-error/unsupported");
}

// wsreduce's finishing step: a result that only returns the harness's exit code (the search
// stopped before taking that return, as the demo's 600 s budget did) is tried without the harness,
// which would otherwise be inlined whole (~130 lines); one that still compares keeps it.
TEST(Finish, TheHarnessIsDroppedOnlyWhenItsExitCodeIsAllThatIsUsed) {
  const std::string hang =
      "#include <cstdio>\n#include \"wscheck.h\"\nint main() {\n  return "
      "wscheck::exit_code();\n}\n";
  EXPECT_EQ(wsr::dropHarness(hang), "#include <cstdio>\nint main() {\n  return 0;\n}\n");
  const std::string wrong =
      "#include \"wscheck.h\"\nint main() {\n  float a[1] = {0}, b[1] = {1};\n"
      "  wscheck::compare(a, b, 1, 1, 0, 0);\n  return wscheck::exit_code();\n}\n";
  EXPECT_EQ(wsr::dropHarness(wrong), wrong);
  EXPECT_EQ(wsr::dropHarness("int main() { return 0; }\n"), "int main() { return 0; }\n");
  // what is dropped builds without the harness directory; what is inlined does too
  std::string inlined = wsr::inlineHarness(wrong);
  EXPECT_EQ(inlined.find("#include \"wscheck.h\""), std::string::npos);
  EXPECT_NE(inlined.find("namespace wscheck"), std::string::npos);
  // and a result that comes back to the search (--resume) gets its include back
  EXPECT_EQ(wsr::uninlineHarness(inlined), wrong);
  EXPECT_EQ(wsr::uninlineHarness(wrong), wrong);
}
