// The reference kernels (kernels/*.cu) on a CPU: docs/methodology.md steps 2 and 3 as a test.
// Step 2: each kernel compiles for its architecture (sm_90a for the Hopper three, sm_100a for the
// tcgen05 GEMM) as a whole program, at its default shape and at a single-tile shape.
// Step 3: its PTX holds the landmarks of the fast path; a kernel built for the wrong target, or
// a primitive the compiler dropped, loses them and the kernel silently becomes something else.
// The flags are the oracle's own (wsr::nvccArgs), so this is the build wsoracle runs.
#include "build.h"
#include "process.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace wsr;

namespace {

const std::string kKernels = std::string(WSREDUCE_SOURCE_DIR) + "/kernels";

// One landmark: text that must occur in the PTX, and the worksheet assumption it confirms.
struct Landmark {
  const char *text;
  const char *proves;
};

size_t countOf(const std::string &hay, const std::string &needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos;
       at = hay.find(needle, at + needle.size()))
    ++n;
  return n;
}

class Kernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (findNvcc("").empty())
      GTEST_SKIP() << "nvcc is not installed on this machine: the kernels cannot be compiled";
    dir = makeTempDir("wsr-kernels.");
    ASSERT_FALSE(dir.empty()) << "cannot create a temp dir";
  }
  void TearDown() override { removeTree(dir); }

  // nvcc with the oracle's flags for `arch`, plus `extra`, on kernels/<kernel>.cu. Returns the
  // compiler's output on failure (empty on success) through `log`.
  bool nvcc(const std::string &kernel, const std::string &arch,
            const std::vector<std::string> &defines, const std::vector<std::string> &extra,
            std::string *log) {
    BuildOptions o;
    o.arch = arch;
    o.defines = defines;
    std::vector<std::string> argv = {findNvcc("")};
    for (auto &a : nvccArgs(o)) argv.push_back(a);
    for (auto &a : extra) argv.push_back(a);
    argv.push_back(kKernels + "/" + kernel + ".cu");
    RunOptions r;
    r.timeout_s = 600;
    r.workdir = dir;
    RunRecord rec = runProcess(argv, r);
    *log = rec.spawn_failed ? rec.spawn_error : rec.out + rec.err;
    return !rec.spawn_failed && !rec.timed_out && rec.signal == 0 && rec.exit_code == 0;
  }

  std::string ptx(const std::string &kernel, const std::string &arch) {
    const std::string out = dir + "/" + kernel + ".ptx";
    std::string log;
    EXPECT_TRUE(nvcc(kernel, arch, {}, {"-ptx", "-o", out}, &log))
        << kernel << " -ptx for " << arch << ":\n"
        << log;
    return readFile(out).value_or("");
  }

  void expectLandmarks(const std::string &kernel, const std::string &ptx,
                       const std::vector<Landmark> &marks) {
    ASSERT_FALSE(ptx.empty()) << kernel << ": no PTX was produced";
    for (auto &m : marks)
      EXPECT_NE(ptx.find(m.text), std::string::npos)
          << kernel << ": PTX lacks `" << m.text << "`, which would prove: " << m.proves;
  }

  // A whole program (device code, host code, link) for `arch`, once per shape.
  void expectBuilds(const std::string &kernel, const std::string &arch,
                    const std::vector<std::vector<std::string>> &shapes) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      std::string log;
      const std::string out = dir + "/" + kernel + "." + std::to_string(i);
      std::string shape;
      for (auto &d : shapes[i]) shape += " -D" + d;
      EXPECT_TRUE(nvcc(kernel, arch, shapes[i], {"-o", out}, &log))
          << kernel << " does not build for " << arch << " at"
          << (shape.empty() ? " its default shape" : shape) << ":\n"
          << log;
    }
  }

  std::string dir;
};

// What every Hopper kernel's pipeline is made of (docs/methodology.md's landmark table, PTX form).
const std::vector<Landmark> kHopperPipeline = {
    {"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
     "the producer's loads are TMA, completing on an mbarrier's transaction count (HANDOFF: "
     "full[s])"},
    {"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",
     "the epilogue stores by TMA from shared memory"},
    {"mbarrier.try_wait.parity", "the roles hand off through phase-parity waits on mbarriers"},
    {"fence.mbarrier_init.release.cluster",
     "the barrier inits are published before the CTA barrier"},
    {"fence.proxy.async.shared::cta",
     "generic-proxy smem writes are fenced before the TMA store reads them"},
    {"setmaxnreg.dec.sync.aligned.u32", "the producer warpgroup gives its registers back"},
    {"setmaxnreg.inc.sync.aligned.u32", "the consumer warpgroup(s) take them"},
    {"cp.async.bulk.commit_group",
     "the TMA stores are committed as a bulk group (LIFETIME: the staging smem)"},
    {"cp.async.bulk.wait_group", "and drained before the smem is reused or the CTA exits"},
};

}  // namespace

TEST_F(Kernels, GemmSm90PtxHasTheTmaRingWgmmaAndTmaStore) {
  const std::string p = ptx("ws_gemm_sm90", "sm_90a");
  expectLandmarks("ws_gemm_sm90", p, kHopperPipeline);
  expectLandmarks(
      "ws_gemm_sm90", p,
      {{"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
        "the consumers multiply on the tensor cores at the default BLOCK_N=128"},
       {"wgmma.fence.sync.aligned", "the accumulator registers are fenced before the first wgmma"},
       {"wgmma.commit_group.sync.aligned", "each k-block's wgmmas form one group"},
       {"wgmma.wait_group.sync.aligned 1",
        "empty[s] is released only after the group that read s retired"},
       {"cp.async.bulk.wait_group.read 0",
        "sC is rewritten only after the previous store has read it"},
       {"bar.sync",
        "the consumer's named barrier publishes its staging writes to the store thread"}});
}

TEST_F(Kernels, TmaPipelineSm90PtxHasTheTmaRingAndTmaStoreButNoTensorCore) {
  const std::string p = ptx("tma_pipeline_sm90", "sm_90a");
  expectLandmarks("tma_pipeline_sm90", p, kHopperPipeline);
  expectLandmarks(
      "tma_pipeline_sm90", p,
      {{"elect.sync", "exactly one lane of warp 0 is the producer"},
       {"cp.async.bulk.wait_group.read",
        "a staging buffer is reused only after its store has read it"},
       {"bar.sync", "the consumer warpgroup's named barrier releases the staging buffer"}});
  // It computes on the CUDA cores (an RMSNorm): wgmma here would mean the wrong file was built.
  EXPECT_EQ(countOf(p, "wgmma."), 0u) << "tma_pipeline_sm90 is the no-tensor-core pipeline";
}

TEST_F(Kernels, AttentionSm90PtxHasTheKvRingAndBothWgmmaForms) {
  const std::string p = ptx("ws_attention_sm90", "sm_90a");
  expectLandmarks("ws_attention_sm90", p, kHopperPipeline);
  expectLandmarks(
      "ws_attention_sm90", p,
      {{"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
        "S = Q K^T runs on the tensor cores from smem (BLOCK_N=128)"},
       {"wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
        "O += P V runs on the tensor cores with P from registers"},
       {"wgmma.wait_group.sync.aligned 0",
        "kv_empty[s] is released only after the P V group retired"},
       {"bar.sync", "each consumer's named barrier publishes its O rows to its store lane"}});
  // Q, K and V stream by TMA: at least 3 loads and the one store (the ring is unrolled, so more).
  EXPECT_GE(countOf(p, "cp.async.bulk.tensor"), 4u);
}

TEST_F(Kernels, GemmSm100PtxHasTheTcgen05PathAndTheTmemLifecycle) {
  const std::string p = ptx("ws_gemm_sm100", "sm_100a");
  expectLandmarks(
      "ws_gemm_sm100", p,
      {{"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
        "the producer's A/B loads are TMA on full[s]"},
       {"mbarrier.try_wait.parity", "producer, MMA issuer and epilogue hand off through mbarriers"},
       {"tcgen05.alloc.cta_group::1.sync.aligned", "warp 1 allocates the TMEM accumulator"},
       {"tcgen05.relinquish_alloc_permit", "and gives up the allocation permit"},
       {"tcgen05.mma.cta_group::1.kind::f16", "the MMAs are the Blackwell tensor-core form"},
       {"tcgen05.commit.cta_group::1.mbarrier::arrive::one",
        "the MMA completion releases empty[s] and accum_full"},
       {"tcgen05.ld.sync.aligned.32x32b", "the epilogue reads the accumulator out of TMEM"},
       {"tcgen05.wait::ld", "and waits for the load before using the registers"},
       {"tcgen05.dealloc.cta_group::1.sync.aligned", "the allocating warp frees TMEM at the end"}});
  EXPECT_EQ(countOf(p, "wgmma."), 0u)
      << "an sm_100a build must not fall back to the Hopper wgmma form";
}

TEST_F(Kernels, GemmSm90BuildsForSm90aAtDefaultSingleTileAndWideTile) {
  expectBuilds("ws_gemm_sm90", "sm_90a",
               {{}, {"GEMM_M=128", "GEMM_N=128", "GEMM_K=64"}, {"BLOCK_N=256"}});
}

TEST_F(Kernels, TmaPipelineSm90BuildsForSm90aAtDefaultAndSingleTile) {
  expectBuilds("tma_pipeline_sm90", "sm_90a", {{}, {"PIPE_ROWS=32"}});
}

TEST_F(Kernels, AttentionSm90BuildsForSm90aAtDefaultAndSingleTile) {
  expectBuilds("ws_attention_sm90", "sm_90a", {{}, {"ATT_BATCH=1", "ATT_HEADS=1", "ATT_SEQ=128"}});
}

TEST_F(Kernels, GemmSm100BuildsForSm100aAtDefaultAndSingleTile) {
  expectBuilds("ws_gemm_sm100", "sm_100a", {{}, {"GEMM_M=128", "GEMM_N=128", "GEMM_K=64"}});
}

TEST_F(Kernels, ClusterPdlSm90PtxHasTheClusterHandoffAndTheDependentLaunch) {
  const std::string p = ptx("ws_cluster_pdl_sm90", "sm_90a");
  expectLandmarks(
      "ws_cluster_pdl_sm90", p,
      {{"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
        "each CTA's producer loads its half-tiles by TMA on full[s]"},
       {"mbarrier.try_wait.parity.shared::cta", "the ring's roles hand off through full/empty"},
       {"fence.mbarrier_init.release.cluster",
        "the barrier inits are published to the cluster before the cluster barrier"},
       {"barrier.cluster.arrive.release",
        "the cluster barrier orders the inits before any remote use, and the exit after it"},
       {"barrier.cluster.wait.acquire", "and every CTA waits for it"},
       {"mapa.shared::cluster.u32", "the peer's exchange buffer and barrier are mapped"},
       {"st.shared::cluster.f32", "the half sums go to the peer through distributed shared memory"},
       {"mbarrier.arrive.release.cluster.shared::cluster.b64",
        "the remote arrive releases those stores at cluster scope (HANDOFF H3)"},
       {"mbarrier.try_wait.parity.acquire.cluster.shared::cta",
        "and the peer acquires them at cluster scope"},
       {"griddepcontrol.launch_dependents", "the primary lets its dependent begin"},
       {"griddepcontrol.wait", "the dependent reads Y only after the primary completed"},
       {"elect.sync", "exactly one lane of the producer warp is the producer"}});
  // The primary's cluster dimensions come from the launch, not from __cluster_dims__.
  EXPECT_EQ(countOf(p, ".reqnctapercluster"), 0u);
  EXPECT_EQ(countOf(p, "wgmma."), 0u) << "ws_cluster_pdl_sm90 computes on the CUDA cores";
}

TEST_F(Kernels, ClusterPdlSm90BuildsForSm90aAtDefaultSingleTileAndTwoClusters) {
  expectBuilds(
      "ws_cluster_pdl_sm90", "sm_90a",
      {{}, {"NORM_ROWS=16", "DEP_ROWS=16"}, {"NORM_ROWS=96", "NORM_COLS=256", "NORM_CLUSTERS=2"}});
}
