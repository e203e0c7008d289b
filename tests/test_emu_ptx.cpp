// The PTX path of the CPU emulator (emu/ptx, emu/host) on real programs: nvcc builds each with
// the real CUDA headers and `-cudart none`, the emulator runs its PTX. No GPU is needed.
#include "process.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <map>
#include <string>
#include <vector>

using namespace wsr;

namespace {
std::string fixture(const std::string &rel) { return std::string(WSR_FIXTURES) + "/ptx/" + rel; }
std::string outside(const std::string &name) {
  return std::string(WSREDUCE_SOURCE_DIR) + "/corpus/outside/" + name;
}

RunRecord wsemuPtx(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), std::string(WSR_BUILD_DIR) + "/emu/wsemu-ptx");
  RunOptions o;
  o.timeout_s = 300;
  o.env_set = env;
  o.env_set["WSREDUCE_CACHE"] = std::string(WSR_BUILD_DIR) + "/test-cache";
  return runProcess(args, o);
}
bool has(const std::string &s, const std::string &needle) {
  return s.find(needle) != std::string::npos;
}
}  // namespace

TEST(EmuPtx, AVectorAddWithALoopAndABranchPasses) {
  auto r = wsemuPtx({fixture("vadd.cu")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "vadd: 0 of 10000 wrong")) << r.out << r.err;
}

TEST(EmuPtx, ABrokenVectorAddIsWrong) {
  // -DBROKEN skips the 103 elements with i % 97 == 96; they stay 0, which is the right value
  // for two of them (i = 4655 and 8632, where a[i] + b[i] = 1): 101 wrong.
  auto r = wsemuPtx({fixture("vadd.cu"), "-DBROKEN"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "vadd: 101 of 10000 wrong")) << r.out << r.err;
}

// Integer, float and double arithmetic, conversions with their rounding modes, f16/bf16,
// shuffles, votes, local and shared memory and atomics, each checked by the program against the
// host's own computation, bit for bit.
TEST(EmuPtx, ManyInstructionsMatchTheHostsComputation) {
  auto r = wsemuPtx({fixture("isa.cu")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "isa: 0 mismatches")) << r.out << r.err;
}

// Calls of device functions with arguments and a return value, and device printf, whose output
// comes out at the host's synchronizing call.
TEST(EmuPtx, CallsAndDevicePrintfRun) {
  auto r = wsemuPtx({fixture("calls.cu")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "thread 3 v=7 half=3.50 wide=7696581394432 name=calls\ncalls: 0 wrong\n")
      << r.err;
}

// The injected bug: WG0 waits on named barrier 1 for 288 threads; WG1's bar.arrive brings 128,
// WG0 128, the producer warp never comes. The runtime's named-barrier hang names it.
TEST(EmuPtx, RownormBugHangsOnNamedBarrierOne) {
  auto r = wsemuPtx({outside("rownorm_nb_bug.cu"), "-lcuda"});
  EXPECT_EQ(r.exit_code, 86) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "WSEMU verdict=hang/barrier")) << r.err;
  EXPECT_TRUE(has(r.err,
                  "WSEMU parked warpgroup 0, 4 warps (warp 0,1,2,3; 128 threads), parked at "
                  "rownorm_nb_bug.cu:162>rownorm_nb_bug.cu:93 bar.sync 1 (256 of 288 "
                  "threads arrived, warp-granular)"))
      << r.err;
  EXPECT_FALSE(has(r.out, "TIMEOUT")) << "the hang is the emulator's verdict, not the program's "
                                         "own watchdog\n"
                                      << r.out;
}

// The signature names a counted named barrier and how much of its count arrived, as the GPU
// watchdog's does. With the parked roles alone, a CPU reduction of this hang kept the roles and
// dropped warpgroup 1's bar.arrive (tests/fixtures/ptx/rownorm_slip.cu): 128 of 288 then
// arrive, not 256, and the signature now says so, so a reduction refuses that step.
TEST(EmuPtx, RownormBugKeepsItsNamedBarrierCountsInTheSignature) {
  auto bug = wsemuPtx({outside("rownorm_nb_bug.cu"), "-lcuda"});
  EXPECT_TRUE(has(bug.err, "rownorm_nb_bug.cu:93,warpgroup0,iter64,arrivals=named1:256/288"))
      << bug.err;
  auto slip = wsemuPtx({fixture("rownorm_slip.cu"), "-lcuda"});
  EXPECT_EQ(slip.exit_code, 86) << slip.out << slip.err;
  EXPECT_TRUE(has(slip.err, "arrivals=named1:128/288")) << slip.err;
  EXPECT_FALSE(has(slip.err, "named1:256/288")) << slip.err;
}

// On the H200 this program fails its own check on 84 of 1024 rows (corpus/outside/expected.tsv).
// The emulator runs the same fma.rn.f32 and sqrt.rn.f32 the GPU does, and every row comes out
// within 5e-7 of the double reference. The H200's errors (up to 1.8e-3) are the size of one
// 16-float chunk of a row read from the wrong tile, not of fp32 rounding: a race of the GPU's
// timing the emulator does not model (emu/README.md, "The PTX path").
TEST(EmuPtx, RownormOkPassesOnTheEmulatorWhereTheH200FailsByARace) {
  auto r = wsemuPtx({outside("rownorm_nb_ok.cu"), "-lcuda"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "check norms   : 1024/1024")) << r.out;
  EXPECT_TRUE(has(r.out, "[rownorm] PASS")) << r.out;
}

TEST(EmuPtx, TmaXformOkPasses) {
  auto r = wsemuPtx({outside("tma_xform_ok.cu"), "-lcuda"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "mismatches=0/2097152  => PASSED")) << r.out;
  EXPECT_FALSE(has(r.err, "proxy-unfenced")) << r.err;
}

// The bug version drops the fence.proxy.async between the staging buffer's generic stores and the
// TMA store. The runtime's async proxy then stores what it last saw (emu/README.md): the latent
// bug shows as a wrong result with the note, where the H200 passed.
TEST(EmuPtx, TmaXformBugShowsTheMissingProxyFence) {
  auto r = wsemuPtx({outside("tma_xform_bug.cu"), "-lcuda"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "=> FAILED")) << r.out;
  EXPECT_TRUE(has(r.err, "WSEMU note proxy-unfenced=")) << r.err;
}

// wgmma through the runtime's wgmma.cpp: m64n256k16 bf16 from SW128 K-major tiles.
TEST(EmuPtx, GemmWsOkPasses) {
  auto r = wsemuPtx({outside("gemm_ws_ok.cu"), "-lcuda"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "RESULT OK")) << r.out;
}

// The bug releases a stage after wgmma.wait_group 1, with the stage's wgmma still in flight. The
// eager policy reads its operands at issue and hides it; with the wgmma's reads at completion
// and a random schedule the producer's refill lands first, and the rows go wrong as on the H200
// (BADROWS 0-255). The correct version passes under the same schedule.
TEST(EmuPtx, GemmWsBugIsWrongWhenTheWgmmaReadsLate) {
  const std::map<std::string, std::string> late = {
      {"WSEMU_POLICY", "reads-late"}, {"WSEMU_ORDER", "random"}, {"WSEMU_SEED", "1"}};
  auto bug = wsemuPtx({outside("gemm_ws_bug.cu"), "-lcuda"}, late);
  EXPECT_EQ(bug.exit_code, 1) << bug.out << bug.err;
  EXPECT_TRUE(has(bug.out, "RESULT FAIL")) << bug.out;
  EXPECT_TRUE(has(bug.out, "BADROWS 0-255")) << bug.out;
  auto ok = wsemuPtx({outside("gemm_ws_ok.cu"), "-lcuda"}, late);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
}

TEST(EmuPtx, PersistentGemmOkPasses) {
  auto r = wsemuPtx({outside("persistent_gemm_ok.cu"), "-lcuda"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "verdict: PASS (0 mismatching elements, 0 bad tiles)")) << r.out;
}

// The producer's phase is not toggled at the ring's wrap: the consumers wait on a full barrier
// that never completes its phase. On the H200 the program's own %globaltimer watchdog turns this
// into a trap (crash); the emulator parks the spinning waiters first and names the deadlock.
TEST(EmuPtx, PersistentGemmBugHangsOnTheFullBarrier) {
  auto r = wsemuPtx({outside("persistent_gemm_bug.cu"), "-lcuda"});
  EXPECT_EQ(r.exit_code, 86) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "WSEMU verdict=hang/mbarrier")) << r.err;
  EXPECT_TRUE(has(r.err, "WSEMU parked warpgroup 0, 4 warps")) << r.err;
  EXPECT_TRUE(has(r.err, "WSEMU parked warpgroup 1, 4 warps")) << r.err;
}

// A program the emulator was not written against (corpus/outside/NEW_PROGRAMS.md, E, not yet
// run on a GPU): its author expects the correct version to pass and the bug version, whose
// arrive.expect_tx announces 128 bytes more than the TMA brings, to hang with every consumer
// waiting on its first full barrier. setmaxnreg, which it uses, runs on the runtime's
// warpgroup rendezvous.
TEST(EmuPtx, TheUnseenExpectTxGemmPassesAndItsBugHangsWithBytesMissing) {
  auto ok = wsemuPtx({outside("expect_tx_gemm_ok.cu"), "-lcuda"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_TRUE(has(ok.out, "GEMM OK")) << ok.out << ok.err;
  auto bug = wsemuPtx({outside("expect_tx_gemm_bug.cu"), "-lcuda"});
  EXPECT_EQ(bug.exit_code, 86) << bug.out << bug.err;
  EXPECT_TRUE(has(bug.err, "WSEMU verdict=hang/mbarrier")) << bug.err;
  EXPECT_TRUE(has(bug.err, "pending 0 of 1, tx 128")) << bug.err;
}

// activemask (which lanes execute together, which the emulator does not model) is refused.
TEST(EmuPtx, AnUnsupportedInstructionIsRefusedWithItsNameAndLine) {
  auto r = wsemuPtx({fixture("alu_ops.cu"), "-arch=sm_90a", "-DACTIVEMASK"});
  EXPECT_EQ(r.exit_code, 88) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "WSEMU verdict=infra-error/unsupported")) << r.err;
  EXPECT_TRUE(has(r.err, "unsupported: `activemask.b32` at ")) << r.err;
  EXPECT_TRUE(r.out.empty()) << "the kernel never ran: " << r.out;
}

// Clusters of two CTAs (__cluster_dims__(2, 1, 1), grid 4) run together: the cluster special
// registers, DSMEM through mapa.shared::cluster + st/ld.shared::cluster and through
// cluster.map_shared_rank (mapa.u64, generic stores and atomics), a remote mbarrier arrive that
// completes the peer's barrier, barrier.cluster arrive/wait. The kernel checks every value itself.
TEST(EmuPtx, AClusterOfTwoCtasRunsWithDistributedSharedMemory) {
  for (const std::map<std::string, std::string> &env :
       {std::map<std::string, std::string>{},
        std::map<std::string, std::string>{
            {"WSEMU_POLICY", "reads-late"}, {"WSEMU_ORDER", "random"}, {"WSEMU_SEED", "3"}}}) {
    auto r = wsemuPtx({fixture("cluster.cu")}, env);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(has(r.out, "cluster: no error, 0 wrong in the kernel, 0 wrong outputs\n"))
        << r.out << r.err;
  }
}

// Launches the GPU refuses are not run: a grid that is not a whole number of clusters, a cluster
// of 16 CTAs without cudaFuncAttributeNonPortableClusterSizeAllowed. A cluster of 8 runs.
TEST(EmuPtx, AClusterLaunchOutsideTheRulesIsRefusedAsOnTheGpu) {
  auto r = wsemuPtx({fixture("cluster.cu")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "grid 3 with __cluster_dims__(2,1,1): invalid cluster size\n")) << r.out;
  EXPECT_TRUE(has(r.out,
                  "cluster of 16: invalid cluster size\ncluster of 8: no error\nsync: no "
                  "error\n"))
      << r.out;
  EXPECT_TRUE(has(r.err, "the grid is not a whole number of clusters")) << r.err;
  EXPECT_TRUE(has(r.err, "more than the portable 8 CTAs")) << r.err;
}

// Thread 0 of CTA rank 1 never reaches barrier.cluster.arrive (it waits on an mbarrier nobody
// arrives at): the hang names the parked threads of both CTAs of the cluster.
TEST(EmuPtx, AClusterBarrierThatNeverCompletesIsAHangOverBothCtas) {
  auto r = wsemuPtx({fixture("cluster_hang.cu")});
  EXPECT_EQ(r.exit_code, 86) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "WSEMU verdict=hang/barrier")) << r.err;
  EXPECT_TRUE(has(r.err,
                  "WSEMU parked warpgroup 0, 2 warps (warp 0,1; 64 threads), parked at "
                  "cluster_hang.cu:28 in CTA rank 0: barrier.cluster.wait (127 of 128 non-exited "
                  "threads of the cluster's 2 CTAs arrived)"))
      << r.err;
  EXPECT_TRUE(has(r.err, "parked at cluster_hang.cu:24 in CTA rank 1: mbarrier")) << r.err;
  EXPECT_TRUE(has(r.err, "cluster_hang.cu:28,cta1,warpgroup0,iter0")) << r.err;
}

// tests/fixtures/ptx/remote_arrive_scope.cu: each thread of a CTA stores into its peer's buffer
// through distributed shared memory, then arrives on the peer's mbarrier. With .release.cluster
// the stores reach the peer's waiters and it passes under every policy. With .cta scope the
// arrive does not release them to the peer: ub/remote-arrive-cta-scope under every policy, named
// at the arrive with the store's line. A .cta arrive that follows reads only (CUTLASS's consumer
// release), or stores that a cluster barrier already released, is clean.
TEST(EmuPtx, ARemoteArriveAfterDsmemStoresMustReleaseAtClusterScope) {
  for (const std::string policy : {"eager", "reads-late", "completions-late"}) {
    auto ok = wsemuPtx({fixture("remote_arrive_scope.cu")}, {{"WSEMU_POLICY", policy}});
    EXPECT_EQ(ok.exit_code, 0) << policy << "\n" << ok.out << ok.err;
    EXPECT_EQ(ok.out, "handoff: no error, 0 wrong\n") << policy << "\n" << ok.err;
    auto bug =
        wsemuPtx({fixture("remote_arrive_scope.cu"), "-DCTA_SCOPE"}, {{"WSEMU_POLICY", policy}});
    EXPECT_EQ(bug.exit_code, 87) << policy << "\n" << bug.out << bug.err;
    EXPECT_EQ(bug.out, "handoff: unspecified launch failure, -1 wrong\n") << policy << "\n"
                                                                          << bug.err;
    EXPECT_TRUE(has(bug.err, "WSEMU verdict=ub/remote-arrive-cta-scope symptom=ub"))
        << policy << "\n"
        << bug.err;
    EXPECT_TRUE(has(bug.err, "signature=remote_arrive_scope.cu:61,warpgroup0")) << policy << "\n"
                                                                                << bug.err;
    EXPECT_TRUE(
        has(bug.err, "the mbarrier.arrive at remote_arrive_scope.cu:61 on a barrier of CTA rank "))
        << policy << "\n"
        << bug.err;
    EXPECT_TRUE(has(bug.err,
                    " of the cluster at remote_arrive_scope.cu:54, which no release at "
                    "cluster scope has covered since"))
        << policy << "\n"
        << bug.err;
  }
  for (const char *clean : {"-DREAD_ONLY", "-DCLUSTER_BARRIER"}) {
    auto r = wsemuPtx({fixture("remote_arrive_scope.cu"), clean});
    EXPECT_EQ(r.exit_code, 0) << clean << "\n" << r.out << r.err;
    EXPECT_EQ(r.out, "handoff: no error, 0 wrong\n") << clean << "\n" << r.err;
    EXPECT_FALSE(has(r.err, "WSEMU verdict=")) << clean << "\n" << r.err;
  }
}

// kernels/ws_cluster_pdl_sm90.cu: a primary grid in clusters of two CTAs (a TMA ring per CTA, row
// sums handed to the peer through distributed shared memory and a remote arrive, barrier.cluster
// after the inits and before exit), then a dependent grid launched with programmatic stream
// serialization that waits in griddepcontrol.wait before it reads the primary's output. Both
// outputs match the host's reference under every policy, and no rule of the emulator fires.
TEST(EmuPtx, TheClusterPdlReferenceKernelPassesUnderEveryPolicy) {
  const std::string kernel = std::string(WSREDUCE_SOURCE_DIR) + "/kernels/ws_cluster_pdl_sm90.cu";
  const std::string inc = std::string(WSREDUCE_SOURCE_DIR) + "/oracle/include";
  for (const std::string policy : {"eager", "reads-late", "completions-late"}) {
    auto r = wsemuPtx({kernel, "-I" + inc}, {{"WSEMU_POLICY", policy}});
    EXPECT_EQ(r.exit_code, 0) << policy << "\n" << r.out << r.err;
    EXPECT_TRUE(has(r.out, "WSCHECK name=Y rows=64 cols=128 bad=0 nan=0")) << policy << "\n"
                                                                           << r.out;
    EXPECT_TRUE(has(r.out, "WSCHECK name=Z rows=64 cols=128 bad=0 nan=0")) << policy << "\n"
                                                                           << r.out;
    EXPECT_FALSE(has(r.err, "WSEMU verdict=")) << policy << "\n" << r.err;
    EXPECT_FALSE(has(r.err, "WSEMU note")) << policy << "\n" << r.err;
  }
}

// A cluster instruction the emulator does not implement (a bulk copy into a peer CTA's shared
// memory) is refused by name before the kernel runs.
TEST(EmuPtx, AnUnimplementedClusterInstructionIsRefusedByName) {
  auto r = wsemuPtx({fixture("cluster_unsupported.cu")});
  EXPECT_EQ(r.exit_code, 88) << r.out << r.err;
  EXPECT_TRUE(has(r.err,
                  "unsupported: `cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::"
                  "bytes` at cluster_unsupported.cu:22"))
      << r.err;
  EXPECT_TRUE(r.out.empty()) << "the kernel never ran: " << r.out;
}

// corpus/outside/NEW_PROGRAMS.md, F: 4 clusters of 2 CTAs, a multicast TMA ring (each producer's
// box lands in both CTAs and signals both full barriers), remote empty arrivals through mapa, a
// DSMEM reduction at the end. Passes on the H200; passes here.
TEST(EmuPtx, ClusterMcOkPasses) {
  auto r = wsemuPtx({outside("cluster_mc_ok.cu"), "-lcuda"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "rowsum 256/256 exact, per-CTA partials 512/512 exact, first bad row -1 "
                  "-> CLUSTER EXCHANGE OK"))
      << r.out << r.err;
}

// The bug gives CTA rank 1's empty barriers a count of 3 where 2 arrivals come (one local, one
// remote). As the program's author predicted and the H200 showed (a hang): CTA 1's producer waits
// on empty[0] at tile 3 with 2 of 3 arrivals, CTA 0's consumers wait on full[0] for the 8 KiB
// CTA 1 never multicasts, CTA 1's consumers for their producer's arrival, and CTA 0's producer at
// tile 6. The warp's other lanes wait at the __syncwarp after the producer's loop.
TEST(EmuPtx, ClusterMcBugHangsAcrossBothCtasOfTheCluster) {
  auto r = wsemuPtx({outside("cluster_mc_bug.cu"), "-lcuda"});
  EXPECT_EQ(r.exit_code, 86) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "WSEMU verdict=hang/mbarrier")) << r.err;
  EXPECT_TRUE(has(r.err,
                  "parked at cluster_mc_bug.cu:178>cluster_mc_bug.cu:113 in CTA rank 1: mbarrier "
                  "smem+0xc518 waiting for parity 0 (phase 0 parity 0, pending 1 of 3, tx 0) "
                  "iteration 3"))
      << r.err;
  EXPECT_TRUE(has(r.err,
                  "WSEMU parked warpgroup 0, 4 warps (warp 0,1,2,3; 128 threads), parked at "
                  "cluster_mc_bug.cu:193>cluster_mc_bug.cu:113 in CTA rank 0: mbarrier "
                  "smem+0xc500 waiting for parity 1 (phase 1 parity 1, pending 0 of 1, tx 8192)"))
      << r.err;
  EXPECT_TRUE(has(r.err,
                  "parked at cluster_mc_bug.cu:193>cluster_mc_bug.cu:113 in CTA rank 1: mbarrier "
                  "smem+0xc500 waiting for parity 1 (phase 1 parity 1, pending 1 of 1, tx -8192)"))
      << r.err;
  EXPECT_TRUE(has(r.err,
                  "parked at cluster_mc_bug.cu:178>cluster_mc_bug.cu:113 in CTA rank 0: mbarrier "
                  "smem+0xc518 waiting for parity 1 (phase 1 parity 1, pending 2 of 2, tx 0) "
                  "iteration 6"))
      << r.err;
  EXPECT_FALSE(has(r.out, "TIMEOUT")) << r.out;
}

TEST(EmuPtx, AnUnimplementedRuntimeEntryPointIsRefusedByName) {
  auto r = wsemuPtx({fixture("missing_entry.cu")});
  EXPECT_EQ(r.exit_code, 88) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "unsupported: the CUDA entry point `cudaMemGetInfo`")) << r.err;
}

// CUTLASS's device adapters ask for the kernel's attributes and occupancy before they launch
// (cudaFuncGetAttributes, cudaOccupancyMaxActiveBlocksPerMultiprocessor,
// cudaOccupancyMaxActiveClusters). The answers are the emulated H200's: 4096 static bytes; six
// CTAs of 4 KiB + 32 KiB + the reserved 1 KiB fit in 228 KiB; 132 SMs x 6 / 2 clusters.
TEST(EmuPtx, ALaunchSizedByTheKernelsAttributesAndOccupancyRuns) {
  auto r = wsemuPtx({fixture("func_attrs.cu")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "static 4096 max-threads 1024 per-sm 6 clusters 396\nscale: 0 wrong\n") << r.err;
}

// A failed device assert() prints the GPU's line and fails the launch with the GPU's error
// (device-side assert triggered); a breakpoint instruction with no debugger fails it too. Both
// are what CUTLASS's debug builds compile to.
TEST(EmuPtx, ADeviceAssertAndABreakpointEndTheLaunchAsOnTheGpu) {
  auto a = wsemuPtx({fixture("device_assert.cu")});
  EXPECT_EQ(a.exit_code, 87) << a.out << a.err;
  EXPECT_EQ(a.out, "device-side assert triggered\n") << a.err;
  EXPECT_TRUE(
      has(a.err, "block: [0,0,0], thread: [5,0,0] Assertion `p[threadIdx.x] < 100` failed."))
      << a.err;
  EXPECT_TRUE(has(a.err, "WSEMU verdict=crash/device-assert")) << a.err;
  auto b = wsemuPtx({fixture("device_assert.cu"), "-DBRKPT"});
  EXPECT_EQ(b.exit_code, 87) << b.out << b.err;
  EXPECT_EQ(b.out, "unspecified launch failure\n") << b.err;
  EXPECT_TRUE(has(b.err, "WSEMU verdict=crash/launch-failure")) << b.err;
  EXPECT_TRUE(has(b.err, "brkpt: the kernel reached a breakpoint")) << b.err;
}

// CUTLASS's example 48 (tf32 wgmma, clusters of 4x2 CTAs, multicast TMA, a warp-specialized
// pipeline), unmodified and at a small problem of its own options: its own check passes. With
// the TMA pipeline told to expect 16 more bytes than its loads bring, in a copy of the CUTLASS
// header that the -I order puts first (bench/cutlass/inject_tx.sh's bug): both consumer
// warpgroups of the CTAs park in ClusterBarrier::wait under consumer_wait, every arrival in and
// the 16 bytes missing, as the GPU names it (bench/results/2026-12-05-cpu-ex48-emu).
TEST(EmuPtx, CutlassExample48PassesAndItsHeaderBugHangsWithTheBytesMissing) {
  namespace fs = std::filesystem;
  const std::string c = WSREDUCE_CUTLASS_DIR;
  const std::string ex =
      c + "/examples/48_hopper_warp_specialized_gemm/48_hopper_warp_specialized_gemm.cu";
  const std::string hdr = c + "/include/cutlass/pipeline/sm90_pipeline.hpp";
  if (!fs::exists(ex) || !fs::exists(hdr))
    GTEST_SKIP() << "CUTLASS 4.2.0.0 is not at " << c << " (bash scripts/setup.sh fetches it)";
  const std::vector<std::string> flags = {"-I" + c + "/include", "-I" + c + "/tools/util/include",
                                          "-I" + c + "/examples/common",
                                          "--expt-relaxed-constexpr"};
  // The smallest problem of one tile: the example's allocations are objects of static duration
  // that free device memory after main returns, which once corrupted the emulator's heap at
  // this shape (the allocation map was gone by then).
  const std::vector<std::string> args = {"--", "--m=128", "--n=128", "--k=64", "--iterations=0"};
  std::vector<std::string> ok = {ex};
  ok.insert(ok.end(), flags.begin(), flags.end());
  ok.insert(ok.end(), args.begin(), args.end());
  auto r = wsemuPtx(ok);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "Disposition: Passed")) << r.out << r.err;

  // The whole of cutlass/pipeline/ is copied: its headers include each other by bare names too.
  const fs::path overlay = fs::temp_directory_path() /
                           ("wsr-ex48-bug-" + std::to_string(::getpid())) / "cutlass" / "pipeline";
  fs::create_directories(overlay.parent_path());
  fs::copy(fs::path(hdr).parent_path(), overlay, fs::copy_options::recursive);
  std::ifstream in(hdr);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bug = std::regex_replace(
      ss.str(), std::regex(R"(arrive_and_expect_tx\(params_\.transaction_bytes\))"),
      "arrive_and_expect_tx(params_.transaction_bytes + 16)");
  ASSERT_NE(bug, ss.str());
  std::ofstream(overlay / "sm90_pipeline.hpp") << bug;
  std::vector<std::string> b = {ex, "-I" + overlay.parent_path().parent_path().string()};
  b.insert(b.end(), flags.begin(), flags.end());
  b.insert(b.end(), args.begin(), args.end());
  auto h = wsemuPtx(b);
  fs::remove_all(overlay.parent_path().parent_path());
  EXPECT_EQ(h.exit_code, 86) << h.out << h.err;
  EXPECT_TRUE(has(h.err, "WSEMU verdict=hang/mbarrier")) << h.err;
  EXPECT_TRUE(has(h.err,
                  "sm90_pipeline.hpp:621>barrier.h:371>barrier.h:424 in CTA rank 0: "
                  "mbarrier smem+0x400 waiting for parity 0 (phase 0 parity 0, pending 0 "
                  "of 1, tx 16)"))
      << h.err;
}

// ---- Programmatic dependent launch (emu/runtime/pdl.cpp) ----
// tests/fixtures/ptx/pdl.cu: a primary of 4 CTAs x 128 threads lets its dependent begin
// (cudaTriggerProgrammaticLaunchCompletion, or the PTX instruction with -DASM_TRIGGER) and then
// writes its output; the secondary, launched with cudaLaunchKernelEx and
// cudaLaunchAttributeProgrammaticStreamSerialization, runs a prologue, waits in
// cudaGridDependencySynchronize and reads that output. Both count the primary's finished threads
// atomically, so the program says how far the primary had got when the secondary's prologue ran.

// The two grids run together: under the eager and reads-late policies the secondary begins once
// the primary's last CTA has executed griddepcontrol.launch_dependents (its thread 0 ran to its
// end first: 3 x 128 + 1 of 512 finished), under completions-late once the primary has
// completed. Its wait returns once the primary has completed, and every result is right under
// every policy and a random order, with the trigger's API call or its PTX instruction.
TEST(EmuPtx, APdlSecondaryThatWaitsBeforeReadingPasses) {
  const std::map<std::string, std::string> seen = {{"eager", "saw 385 of 512"},
                                                   {"reads-late", "saw 385 of 512"},
                                                   {"completions-late", "saw 512 of 512"}};
  for (auto &[policy, saw] : seen) {
    auto r = wsemuPtx({fixture("pdl.cu")}, {{"WSEMU_POLICY", policy}});
    EXPECT_EQ(r.exit_code, 0) << policy << "\n" << r.out << r.err;
    EXPECT_TRUE(has(r.out, "pdl: 0 of 512 wrong;")) << policy << "\n" << r.out << r.err;
    EXPECT_TRUE(has(r.out, saw)) << policy << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "PASS")) << policy << "\n" << r.out;
  }
  auto random = wsemuPtx({fixture("pdl.cu")}, {{"WSEMU_ORDER", "random"}, {"WSEMU_SEED", "2"}});
  EXPECT_EQ(random.exit_code, 0) << random.out << random.err;
  EXPECT_TRUE(has(random.out, "pdl: 0 of 512 wrong;")) << random.out << random.err;
  auto asm_trigger = wsemuPtx({fixture("pdl.cu"), "-DASM_TRIGGER"});
  EXPECT_EQ(asm_trigger.exit_code, 0) << asm_trigger.out << asm_trigger.err;
  EXPECT_TRUE(has(asm_trigger.out,
                  "pdl: 0 of 512 wrong; before its wait the secondary's block 0 "
                  "saw 385 of 512"))
      << asm_trigger.out << asm_trigger.err;
}

// Only thread 0 of each secondary CTA waits; the __syncthreads after its wait orders the other
// threads' reads after it too, so they are no race.
TEST(EmuPtx, APdlSecondaryWhoseOneThreadWaitsBeforeABarrierPasses) {
  auto r = wsemuPtx({fixture("pdl.cu"), "-DONE_WAITS"}, {{"WSEMU_POLICY", "reads-late"}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "pdl: 0 of 512 wrong;")) << r.out << r.err;
  EXPECT_FALSE(has(r.err, "WSEMU verdict=")) << r.err;
}

// -DEARLY_READ: the secondary reads the primary's output before its wait. Under every policy the
// read is ub/pdl-read-before-wait, named at the secondary's line with the primary's write, whether
// the value was there yet (completions-late: the primary had completed) or not.
TEST(EmuPtx, APdlSecondaryThatReadsBeforeItsWaitIsANamedRace) {
  for (const std::string policy : {"eager", "reads-late", "completions-late"}) {
    auto r = wsemuPtx({fixture("pdl.cu"), "-DEARLY_READ"}, {{"WSEMU_POLICY", policy}});
    EXPECT_EQ(r.exit_code, 87) << policy << "\n" << r.out << r.err;
    EXPECT_EQ(r.out, "pdl: unspecified launch failure\n") << policy << "\n" << r.err;
    EXPECT_TRUE(has(r.err,
                    "WSEMU verdict=ub/pdl-read-before-wait symptom=ub block=0,0,0 "
                    "signature=pdl.cu:37,warpgroup0"))
        << policy << "\n"
        << r.err;
    EXPECT_TRUE(has(r.err,
                    "by thread 0 (warp 0, warpgroup 0) of block (0,0,0) of "
                    "_Z9secondaryPKfPfS0_S1_Pj: it reads the global byte at offset 0 of "
                    "the allocation of 2048 bytes"))
        << policy << "\n"
        << r.err;
    EXPECT_TRUE(has(r.err,
                    "_Z7primaryPKfPf, the grid it depends on (the kernel launched before "
                    "it in the stream), writes that byte at pdl.cu:27"))
        << policy << "\n"
        << r.err;
  }
}

// -DEARLY_WRITE: the secondary's prologue overwrites the primary's input, which the primary reads
// (its own buffer in the next step of a ping-pong): ub/pdl-write-before-wait.
TEST(EmuPtx, APdlSecondaryThatWritesWhatThePrimaryReadsBeforeItsWaitIsANamedRace) {
  auto r = wsemuPtx({fixture("pdl.cu"), "-DEARLY_WRITE"});
  EXPECT_EQ(r.exit_code, 87) << r.out << r.err;
  EXPECT_TRUE(has(r.err,
                  "WSEMU verdict=ub/pdl-write-before-wait symptom=ub block=0,0,0 "
                  "signature=pdl.cu:40,warpgroup0"))
      << r.err;
  EXPECT_TRUE(has(r.err, "reads that byte at pdl.cu:27")) << r.err;
}

// tests/fixtures/ptx/pdl_ws.cu: four dependent launches of a warp-specialized kernel, each writing
// what the one before it read. Only the producer thread waits, then bulk-copies its tile in; the
// consumers, ordered after its wait by the copy's mbarrier phase, write the output. No race, under
// every policy. With the producer's wait gone, its bulk copy reads what the grid before wrote.
TEST(EmuPtx, APdlChainWhoseProducerWarpAloneWaitsOrdersItsConsumersThroughTheMbarrier) {
  for (const std::string policy : {"eager", "reads-late", "completions-late"}) {
    auto r = wsemuPtx({fixture("pdl_ws.cu")}, {{"WSEMU_POLICY", policy}});
    EXPECT_EQ(r.exit_code, 0) << policy << "\n" << r.out << r.err;
    EXPECT_EQ(r.out, "pdl_ws: 0 of 512 wrong\n") << policy << "\n" << r.err;
  }
  auto bug = wsemuPtx({fixture("pdl_ws.cu"), "-DPRODUCER_NO_WAIT"});
  EXPECT_EQ(bug.exit_code, 87) << bug.out << bug.err;
  EXPECT_TRUE(has(bug.err, "WSEMU verdict=ub/pdl-read-before-wait")) << bug.err;
  EXPECT_TRUE(has(bug.err, "writes that byte at pdl_ws.cu:48, by thread 32 (warp 1, warpgroup 0)"))
      << bug.err;
}

// griddepcontrol.wait in kernels launched without the attribute (a <<<>>> launch, and
// cudaLaunchKernelEx with programmaticStreamSerializationAllowed = 0) returns at once: the
// launches are serialized by the stream, and a read before the wait is no race.
TEST(EmuPtx, AGridDependencyWaitInAKernelLaunchedWithoutTheAttributeReturnsAtOnce) {
  auto r = wsemuPtx({fixture("pdl_plain.cu")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "pdl_plain: no error, 0 of 256 wrong\n") << r.err;
  EXPECT_FALSE(has(r.err, "WSEMU verdict=")) << r.err;
}

// A primary that deadlocks after its trigger: the hang names the primary's barrier; the
// dependent's threads at griddepcontrol.wait are listed, and left out of the signature, which is
// the same whether the policy let the dependent begin or not.
TEST(EmuPtx, AHangOfAPdlPrimaryIsNamedWhileItsDependentWaits) {
  const std::string sig =
      "WSEMU verdict=hang/barrier symptom=hang block=0,0,0 "
      "signature=pdl_hang.cu:10,warpgroup0,iter0,arrivals=named1:32/64\n";
  auto eager = wsemuPtx({fixture("pdl_hang.cu")});
  EXPECT_EQ(eager.exit_code, 86) << eager.out << eager.err;
  EXPECT_TRUE(has(eager.err, sig)) << eager.err;
  EXPECT_TRUE(has(eager.err,
                  "parked at pdl_hang.cu:10 in _Z7primaryPf block (0,0,0): bar.sync 1 "
                  "(32 of 64 threads arrived, warp-granular)"))
      << eager.err;
  EXPECT_TRUE(has(eager.err,
                  "in _Z9secondaryPKfPf block (0,0,0): griddepcontrol.wait (for "
                  "_Z7primaryPf to complete)"))
      << eager.err;
  auto late = wsemuPtx({fixture("pdl_hang.cu")}, {{"WSEMU_POLICY", "completions-late"}});
  EXPECT_EQ(late.exit_code, 86) << late.out << late.err;
  EXPECT_TRUE(has(late.err, sig)) << late.err;
}

// A programmatic event (cudaLaunchAttributeProgrammaticEvent) is not implemented: refused by name.
TEST(EmuPtx, AProgrammaticEventLaunchAttributeIsRefusedByName) {
  auto r = wsemuPtx({fixture("pdl.cu"), "-DPROGRAMMATIC_EVENT"});
  EXPECT_EQ(r.exit_code, 88) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "WSEMU verdict=infra-error/unsupported")) << r.err;
  EXPECT_TRUE(
      has(r.err, "unsupported: cudaLaunchKernelEx with cudaLaunchAttributeProgrammaticEvent"))
      << r.err;
}

// ---- Blackwell: tcgen05 and tensor memory (emu/runtime/tcgen05.cpp) ----
namespace {
const std::string kGemm100 = std::string(WSREDUCE_SOURCE_DIR) + "/kernels/ws_gemm_sm100.cu";
// One CTA, eight k-tiles over the four-stage ring: the stages wrap twice.
const std::vector<std::string> kOneTile = {"-arch=sm_100a", "-DGEMM_M=128", "-DGEMM_N=128",
                                           "-DGEMM_K=512"};
const std::vector<std::string> kPolicies = {"eager", "reads-late", "completions-late"};

// kernels/ws_gemm_sm100.cu with the edits of one of the fuzzer's injectors (fuzzer/inject/), made
// here by replacing text that must occur once, so that the mutant follows the kernel. The file is
// removed with the object.
class Sm100Mutant {
 public:
  Sm100Mutant(const std::string &tag,
              const std::vector<std::pair<std::string, std::string>> &edits) {
    namespace fs = std::filesystem;
    std::ifstream in(kGemm100);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    for (auto &[from, to] : edits) {
      const size_t at = text.find(from);
      if (at == std::string::npos || text.find(from, at + 1) != std::string::npos) {
        error =
            "the kernel holds `" + from + "` " + (at == std::string::npos ? "nowhere" : "twice");
        return;
      }
      text.replace(at, from.size(), to);
    }
    dir = fs::temp_directory_path() / ("wsr-sm100-" + tag + "-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    path = (dir / ("ws_gemm_sm100_" + tag + ".cu")).string();
    std::ofstream(path) << text;
  }
  ~Sm100Mutant() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string path, error;

 private:
  std::filesystem::path dir;
};

RunRecord runSm100(const std::string &file, const std::string &policy = "eager",
                   const std::vector<std::string> &shape = kOneTile) {
  std::vector<std::string> args = {file};
  args.insert(args.end(), shape.begin(), shape.end());
  args.insert(args.end(), {"--", "1"});  // the program's seed
  return wsemuPtx(args, {{"WSEMU_POLICY", policy}});
}

// The program's own check: "WSCHECK name=C ... bad=N", N > 0 when the product is wrong.
bool productWrong(const RunRecord &r) {
  return r.exit_code == 1 && has(r.out, "WSCHECK name=C") && !has(r.out, " bad=0 ");
}
}  // namespace

// The Blackwell GEMM: TMA into a 128-byte-swizzled ring, tcgen05.alloc/relinquish/dealloc by
// warp 1, tcgen05.mma (kind::f16, bf16 from shared-memory descriptors, M=128 N=128) into tensor
// memory, tcgen05.commit to the ring's empty barriers and to accum_full, and the epilogue's
// tcgen05.ld.32x32b.x32 and wait::ld. The device says compute capability 10.0 to a program built
// for sm_100a, so the kernel runs, and passes its own check: at its own shape under the eager
// policy, and at four CTAs under each policy. No read is unordered.
TEST(EmuPtx, TheBlackwellGemmPassesWithTensorMemory) {
  auto full = runSm100(kGemm100, "eager", {"-arch=sm_100a"});
  EXPECT_EQ(full.exit_code, 0) << full.out << full.err;
  EXPECT_TRUE(has(full.out, "WSCHECK name=C rows=512 cols=768 bad=0 nan=0")) << full.out;
  for (auto &p : kPolicies) {
    auto r =
        runSm100(kGemm100, p, {"-arch=sm_100a", "-DGEMM_M=256", "-DGEMM_N=256", "-DGEMM_K=512"});
    EXPECT_EQ(r.exit_code, 0) << p << "\n" << r.out << r.err;
    EXPECT_TRUE(has(r.out, "WSCHECK name=C rows=256 cols=256 bad=0 nan=0")) << p << "\n" << r.out;
    EXPECT_FALSE(has(r.err, "WSEMU note")) << p << "\n" << r.err;
  }
}

// tmem-alloc-lane-guard: tcgen05.alloc, a whole-warp instruction, under `lane == 0`. Lane 0
// waits at the alloc while the other lanes reach tcgen05.relinquish_alloc_permit: the warp is not
// converged at a .sync.aligned instruction, which the PTX ISA leaves undefined (the fuzzer's
// catalogue expects a crash). The same for the dealloc, where the other lanes exit instead.
TEST(EmuPtx, ATcgen05AllocUnderALaneGuardIsUndefined) {
  Sm100Mutant alloc("alloc-guard", {{"    tmem_alloc(tmem_slot, TMEM_COLS);\n",
                                     "    if ((threadIdx.x % 32) == 0) { tmem_alloc(tmem_slot, "
                                     "TMEM_COLS); }\n"}});
  ASSERT_TRUE(alloc.error.empty()) << alloc.error;
  for (auto &p : kPolicies) {
    auto r = runSm100(alloc.path, p);
    EXPECT_EQ(r.exit_code, 87) << p << "\n" << r.out << r.err;
    EXPECT_TRUE(has(r.err, "WSEMU verdict=ub/tcgen05-diverged")) << p << "\n" << r.err;
    EXPECT_TRUE(has(r.err, "tcgen05.alloc at ws_gemm_sm100_alloc-guard.cu:")) << r.err;
    EXPECT_TRUE(has(r.err, "reached tcgen05.relinquish_alloc_permit")) << r.err;
  }
  Sm100Mutant dealloc("dealloc-guard", {{"    tmem_dealloc(tmem_acc, TMEM_COLS);\n",
                                         "    if ((threadIdx.x % 32) == 0) { "
                                         "tmem_dealloc(tmem_acc, TMEM_COLS); }\n"}});
  ASSERT_TRUE(dealloc.error.empty()) << dealloc.error;
  auto d = runSm100(dealloc.path);
  EXPECT_EQ(d.exit_code, 87) << d.out << d.err;
  EXPECT_TRUE(has(d.err, "WSEMU verdict=ub/tcgen05-diverged")) << d.err;
  EXPECT_TRUE(has(d.err, "tcgen05.dealloc at ws_gemm_sm100_dealloc-guard.cu:")) << d.err;
}

// dealloc-without-sync: the CTA barrier before tcgen05.dealloc deleted. Warp 1 frees the
// accumulator once its MMAs are issued; the epilogue's tcgen05.ld comes after the dealloc, and
// nothing ordered it before: a use after free, under every policy.
TEST(EmuPtx, ATcgen05DeallocWithoutTheCtaBarrierIsAUseAfterFree) {
  Sm100Mutant m("dealloc-nosync", {{"  __syncthreads();  // every role done with TMEM",
                                    "  // every role done with TMEM"}});
  ASSERT_TRUE(m.error.empty()) << m.error;
  for (auto &p : kPolicies) {
    auto r = runSm100(m.path, p);
    EXPECT_EQ(r.exit_code, 87) << p << "\n" << r.out << r.err;
    EXPECT_TRUE(has(r.err, "WSEMU verdict=ub/tmem-use-after-dealloc")) << p << "\n" << r.err;
    EXPECT_TRUE(has(r.err,
                    "tcgen05.ld on tensor-memory columns 0..31, which warp 1's "
                    "tcgen05.dealloc at ws_gemm_sm100_dealloc-nosync.cu:"))
        << r.err;
  }
  // The dealloc by an epilogue warp, after its own reads: the other epilogue warps' reads are not
  // ordered before it (no CTA barrier), whether they came first or not.
  Sm100Mutant w7("dealloc-w7", {{"  __syncthreads();  // every role done with TMEM",
                                 "  // every role done with TMEM"},
                                {"  if (warp == 1) {  // the allocating warp frees it",
                                 "  if (warp == 7) {  // the allocating warp frees it"}});
  ASSERT_TRUE(w7.error.empty()) << w7.error;
  auto r = runSm100(w7.path);
  EXPECT_EQ(r.exit_code, 87) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "WSEMU verdict=ub/tmem-dealloc-unordered")) << r.err;
  EXPECT_TRUE(has(r.err, "tcgen05.dealloc by warp 7 of columns 0..127, which warp 4 read"))
      << r.err;
}

// commit-outside-elect: the last tcgen05.commit issued by all 32 lanes of warp 1. The 31 lanes
// that issued no MMA commit nothing and arrive on accum_full at once; the epilogue sees a phase
// complete before the MMAs wrote the accumulator, and the product is wrong under every policy.
TEST(EmuPtx, ATcgen05CommitByEveryLaneSignalsTheAccumulatorEarly) {
  Sm100Mutant m("commit-all",
                {{"    tcgen05_commit(accum_full);   // the accumulator is final once every MMA "
                  "above has completed\n  }\n",
                  "  }\n  if (warp == 1) tcgen05_commit(accum_full);  // every lane commits\n"}});
  ASSERT_TRUE(m.error.empty()) << m.error;
  for (auto &p : kPolicies) {
    auto r = runSm100(m.path, p);
    EXPECT_TRUE(productWrong(r)) << p << "\n" << r.out << r.err;
    EXPECT_FALSE(has(r.err, "WSEMU verdict=")) << p << "\n" << r.err;
  }
}

// missing-tcgen05-fence, the epilogue's site: no tcgen05.fence::after_thread_sync between the wait
// on accum_full and tcgen05.ld. The loads are not ordered after the wait: under the late policies
// they read each cell as it was before the last MMA wrote it, and the product is wrong. The eager
// policy reads what is there (the race stays latent), and the note counts the unordered reads.
TEST(EmuPtx, ATcgen05LdWithoutTheFenceAfterItsWaitReadsStaleTensorMemory) {
  Sm100Mutant m("nofence-ld",
                {{"    __syncwarp();              // tcgen05.ld is .sync.aligned: the warp must be "
                  "converged\n    tcgen05_fence_after();\n",
                  "    __syncwarp();              // tcgen05.ld is .sync.aligned: the warp must be "
                  "converged\n"}});
  ASSERT_TRUE(m.error.empty()) << m.error;
  auto eager = runSm100(m.path);
  EXPECT_EQ(eager.exit_code, 0) << eager.out << eager.err;
  EXPECT_TRUE(has(eager.err, "WSEMU note tmem-read-unordered=16384")) << eager.err;
  for (const std::string p : {"reads-late", "completions-late"}) {
    auto r = runSm100(m.path, p);
    EXPECT_TRUE(productWrong(r)) << p << "\n" << r.out << r.err;
    EXPECT_TRUE(has(r.err, "WSEMU note tmem-read-unordered=16384")) << p << "\n" << r.err;
  }
}

// missing-tcgen05-fence, the MMA's site: no fence between the wait on full[s] and the
// tcgen05.mmas. They are not ordered after the wait: under the late policies they read the stage
// as it was before its TMA load landed, and the product is wrong; smem-read-unwaited counts them.
TEST(EmuPtx, ATcgen05MmaWithoutTheFenceAfterItsWaitReadsTheStageBeforeItLanded) {
  Sm100Mutant m("nofence-mma",
                {{"      mbar_wait(&full[s], phase);  // starts on 0: blocks until the first TMA "
                  "lands\n      tcgen05_fence_after();\n",
                  "      mbar_wait(&full[s], phase);  // starts on 0: blocks until the first TMA "
                  "lands\n"}});
  ASSERT_TRUE(m.error.empty()) << m.error;
  auto eager = runSm100(m.path);
  EXPECT_EQ(eager.exit_code, 0) << eager.out << eager.err;
  EXPECT_TRUE(has(eager.err, "WSEMU note smem-read-unwaited=")) << eager.err;
  for (const std::string p : {"reads-late", "completions-late"}) {
    auto r = runSm100(m.path, p);
    EXPECT_TRUE(productWrong(r)) << p << "\n" << r.out << r.err;
    EXPECT_TRUE(has(r.err, "WSEMU note smem-read-unwaited=")) << p << "\n" << r.err;
  }
}

// A CTA whose threads all exit with tensor memory still allocated (the dealloc deleted).
TEST(EmuPtx, ACtaThatExitsWithTensorMemoryAllocatedIsUndefined) {
  Sm100Mutant m("no-dealloc", {{"    tmem_dealloc(tmem_acc, TMEM_COLS);\n", ""}});
  ASSERT_TRUE(m.error.empty()) << m.error;
  auto r = runSm100(m.path);
  EXPECT_EQ(r.exit_code, 87) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "WSEMU verdict=ub/exit-with-tmem-allocated")) << r.err;
  EXPECT_TRUE(has(r.err, "128 tensor-memory columns from column 0 (allocated by warp 1)")) << r.err;
}

// tcgen05 forms the emulator does not implement are refused by name before the kernel runs.
TEST(EmuPtx, AnUnimplementedTcgen05FormIsRefusedByName) {
  auto ld = wsemuPtx({fixture("tcgen05_unsupported.cu"), "-arch=sm_100a"});
  EXPECT_EQ(ld.exit_code, 88) << ld.out << ld.err;
  EXPECT_TRUE(has(ld.err,
                  "unsupported: `tcgen05.ld.sync.aligned.16x256b.x1.b32` at "
                  "tcgen05_unsupported.cu:25"))
      << ld.err;
  EXPECT_TRUE(ld.out.empty()) << "the kernel never ran: " << ld.out;
  auto shift = wsemuPtx({fixture("tcgen05_unsupported.cu"), "-arch=sm_100a", "-DSHIFT"});
  EXPECT_EQ(shift.exit_code, 88) << shift.out << shift.err;
  EXPECT_TRUE(has(shift.err,
                  "unsupported: `tcgen05.shift.cta_group::1.down` at "
                  "tcgen05_unsupported.cu:20"))
      << shift.err;
}

// tcgen05.st of every data-movement shape (32x32b, 16x64b, 16x128b, 16x256b, 16x32bx2 with its
// split offset, 32x32b.unpack::16b), the 16-lane shapes in either half of each warp's 32 lanes:
// read back with tcgen05.ld.32x32b, every cell is where the PTX ISA's fragment layout puts it,
// under every policy, and no read is unordered.
TEST(EmuPtx, Tcgen05StPutsEachShapesFragmentWhereTheIsaSays) {
  for (auto &p : kPolicies) {
    auto r = wsemuPtx({fixture("tcgen05_st.cu"), "-arch=sm_100a"}, {{"WSEMU_POLICY", p}});
    EXPECT_EQ(r.exit_code, 0) << p << "\n" << r.out << r.err;
    EXPECT_EQ(r.out, "tcgen05_st: 0 wrong\n") << p << "\n" << r.err;
    EXPECT_FALSE(has(r.err, "WSEMU note")) << p << "\n" << r.err;
    EXPECT_FALSE(has(r.err, "WSEMU verdict=")) << p << "\n" << r.err;
  }
}

// -DNO_WAIT_ST: no tcgen05.wait::st between the stores and the loads of the same cells. The
// loads are not ordered after the stores: under the late policies the stores have not landed
// and every one of the 4 x 640 cells they write reads as before (zero). The eager policy lands
// them at issue (the race stays latent), and the note counts the unordered reads under every
// policy.
TEST(EmuPtx, ATcgen05LdWithoutTheWaitForItsStoresReadsTheOldCells) {
  auto eager = wsemuPtx({fixture("tcgen05_st.cu"), "-arch=sm_100a", "-DNO_WAIT_ST"},
                        {{"WSEMU_POLICY", "eager"}});
  EXPECT_EQ(eager.exit_code, 0) << eager.out << eager.err;
  EXPECT_TRUE(has(eager.err, "WSEMU note tmem-st-unwaited=2560")) << eager.err;
  for (const std::string p : {"reads-late", "completions-late"}) {
    auto r = wsemuPtx({fixture("tcgen05_st.cu"), "-arch=sm_100a", "-DNO_WAIT_ST"},
                      {{"WSEMU_POLICY", p}});
    EXPECT_EQ(r.exit_code, 1) << p << "\n" << r.out << r.err;
    EXPECT_TRUE(has(r.out, "tcgen05_st: 2560 wrong")) << p << "\n" << r.out;
    EXPECT_TRUE(has(r.err, "WSEMU note tmem-st-unwaited=2560")) << p << "\n" << r.err;
  }
}

// tcgen05.cp of every shape (128x256b, 4x256b, 128x128b, 64x128b.warpx2::02_13 and ::01_23,
// 32x128b.warpx4) from an unswizzled matrix, and 128x256b from a 128-byte-swizzled one, committed
// to an mbarrier: after the wait and tcgen05.fence::after_thread_sync each lane holds the rows the
// PTX ISA sends it, under every policy, and no read is unordered.
TEST(EmuPtx, Tcgen05CpCopiesEachShapeIntoTheLanesItNames) {
  for (auto &p : kPolicies) {
    auto r = wsemuPtx({fixture("tcgen05_cp.cu"), "-arch=sm_100a"}, {{"WSEMU_POLICY", p}});
    EXPECT_EQ(r.exit_code, 0) << p << "\n" << r.out << r.err;
    EXPECT_EQ(r.out, "tcgen05_cp: 0 of 4128 wrong\n") << p << "\n" << r.err;
    EXPECT_FALSE(has(r.err, "WSEMU note")) << p << "\n" << r.err;
    EXPECT_FALSE(has(r.err, "WSEMU verdict=")) << p << "\n" << r.err;
  }
}

// A copy is asynchronous, like an mma: its commit's barrier orders it. -DNO_WAIT reads tensor
// memory with no wait on that barrier: with completions late the copies have not landed and all
// 4128 cells read as never written; the eager policy lands them at issue, and the note counts the
// reads that nothing ordered after the copies. -DNO_FENCE waits but has no
// tcgen05.fence::after_thread_sync after the wait: under the late policies the loads read each
// cell as it was before the copy, as for an mma's accumulator.
TEST(EmuPtx, ATcgen05LdNotOrderedAfterTheCpsCommitReadsTheCellsBefore) {
  auto eager = wsemuPtx({fixture("tcgen05_cp.cu"), "-arch=sm_100a", "-DNO_WAIT"},
                        {{"WSEMU_POLICY", "eager"}});
  EXPECT_EQ(eager.exit_code, 0) << eager.out << eager.err;
  EXPECT_TRUE(has(eager.err, "WSEMU note tmem-read-unordered=4128")) << eager.err;
  auto late = wsemuPtx({fixture("tcgen05_cp.cu"), "-arch=sm_100a", "-DNO_WAIT"},
                       {{"WSEMU_POLICY", "completions-late"}});
  EXPECT_EQ(late.exit_code, 1) << late.out << late.err;
  EXPECT_TRUE(has(late.out, "tcgen05_cp: 4128 of 4128 wrong")) << late.out << late.err;
  auto nofence = wsemuPtx({fixture("tcgen05_cp.cu"), "-arch=sm_100a", "-DNO_FENCE"},
                          {{"WSEMU_POLICY", "eager"}});
  EXPECT_EQ(nofence.exit_code, 0) << nofence.out << nofence.err;
  EXPECT_TRUE(has(nofence.err, "WSEMU note tmem-read-unordered=4128")) << nofence.err;
  for (const std::string p : {"reads-late", "completions-late"}) {
    auto r = wsemuPtx({fixture("tcgen05_cp.cu"), "-arch=sm_100a", "-DNO_FENCE"},
                      {{"WSEMU_POLICY", p}});
    EXPECT_EQ(r.exit_code, 1) << p << "\n" << r.out << r.err;
    EXPECT_TRUE(has(r.out, "tcgen05_cp: 4128 of 4128 wrong")) << p << "\n" << r.out;
    EXPECT_TRUE(has(r.err, "WSEMU note tmem-read-unordered=4128")) << p << "\n" << r.err;
  }
}

// createpolicy (fractional with every priority and a literal, register or no fraction; range)
// and the .L2::cache_hint operand of ld, st, red, atom, the bulk copies and cp.async: a cache
// policy changes nothing the program computes, under every policy. createpolicy.cvt is not
// decoded: refused by name.
TEST(EmuPtx, CachePoliciesAndCacheHintOperandsRun) {
  for (auto &p : kPolicies) {
    auto r = wsemuPtx({fixture("cache_hint.cu"), "-arch=sm_90a"}, {{"WSEMU_POLICY", p}});
    EXPECT_EQ(r.exit_code, 0) << p << "\n" << r.out << r.err;
    EXPECT_EQ(r.out, "cache_hint: 0 wrong\n") << p << "\n" << r.err;
    EXPECT_FALSE(has(r.err, "WSEMU verdict=")) << p << "\n" << r.err;
  }
  auto cvt = wsemuPtx({fixture("cache_hint.cu"), "-arch=sm_90a", "-DCVT"});
  EXPECT_EQ(cvt.exit_code, 88) << cvt.out << cvt.err;
  EXPECT_TRUE(has(cvt.err, "unsupported: `createpolicy.cvt.L2.b64` at cache_hint.cu:33"))
      << cvt.err;
}

// ldmatrix and stmatrix, m8n8 .b16, x1/x2/x4, with and without .trans, shared and generic
// addresses: every lane's fragment as the PTX ISA lays it out, checked by the program. Rows lie
// scattered over a padded tile, so each comes from its own lane's address.
TEST(EmuPtx, LdmatrixAndStmatrixMoveEachLanesFragment) {
  auto r = wsemuPtx({fixture("ldmatrix.cu")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "ldmatrix: 0 wrong\n") << r.err;
}

// -DPARTIAL: lanes 16-31 skip the ldmatrix and exit. The instruction is .sync.aligned: the 16 lanes
// at it wait for the rest of the warp, which never comes, as at a shfl or vote of a diverged warp.
TEST(EmuPtx, AnLdmatrixByPartOfAWarpIsUndefined) {
  auto r = wsemuPtx({fixture("ldmatrix.cu"), "-DPARTIAL"});
  EXPECT_EQ(r.exit_code, 87) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "WSEMU verdict=ub/partial-collective")) << r.err;
  EXPECT_TRUE(has(r.err, "signature=ldmatrix.cu:35,warpgroup0")) << r.err;
  EXPECT_TRUE(has(r.err, "ldmatrix.x2 rendezvous (16 of 32 threads arrived")) << r.err;
}

// TMA reductions (f32 and bf16 add, s32 max, through tensor maps, one box partly outside the
// tensor) and bulk reductions (f32 add, u32 or, s32 min, f16 add.noftz, u64 add, u32 inc) from four
// CTAs into the same places: every element as the host combines it, under every policy.
TEST(EmuPtx, BulkReductionsCombineIntoGlobalMemoryUnderEveryPolicy) {
  for (const std::string policy : {"eager", "reads-late", "completions-late"}) {
    auto r = wsemuPtx({fixture("bulk_reduce.cu"), "-lcuda"}, {{"WSEMU_POLICY", policy}});
    EXPECT_EQ(r.exit_code, 0) << policy << "\n" << r.out << r.err;
    EXPECT_EQ(r.out, "bulk_reduce: 0 wrong\n") << policy << "\n" << r.err;
    EXPECT_TRUE(has(r.err, "tma-store-clipped=256")) << policy << "\n" << r.err;
    EXPECT_FALSE(has(r.err, "WSEMU verdict=")) << policy << "\n" << r.err;
  }
}

// -DNO_WAIT: the issuing thread commits its reductions and exits without a wait_group: they belong
// to its bulk group as stores do, and leaving them in flight is undefined under every policy.
TEST(EmuPtx, ABulkReductionNoWaitCoveredIsInFlightAtExit) {
  auto r = wsemuPtx({fixture("bulk_reduce.cu"), "-lcuda", "-DNO_WAIT"});
  EXPECT_EQ(r.exit_code, 87) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "WSEMU verdict=ub/exit-with-bulk-in-flight")) << r.err;
  EXPECT_TRUE(has(r.err, "cp.reduce.async.bulk.tensor (reduce)")) << r.err;
}

// Ampere cp.async of 4, 8 and 16 bytes, src-size and ignore-src zero fill,
// __pipeline_memcpy_async, commit groups with wait_group 1 and 0, and cp.async.mbarrier.arrive with
// and without .noinc: the program checks every byte, under every policy and a random order.
TEST(EmuPtx, CpAsyncCopiesLandByTheirGroupsAndMbarriers) {
  for (const std::map<std::string, std::string> &env :
       {std::map<std::string, std::string>{{"WSEMU_POLICY", "eager"}},
        std::map<std::string, std::string>{{"WSEMU_POLICY", "reads-late"}},
        std::map<std::string, std::string>{{"WSEMU_POLICY", "completions-late"}},
        std::map<std::string, std::string>{{"WSEMU_POLICY", "completions-late"},
                                           {"WSEMU_ORDER", "random"},
                                           {"WSEMU_SEED", "3"}}}) {
    auto r = wsemuPtx({fixture("cp_async.cu")}, env);
    EXPECT_EQ(r.exit_code, 0) << env.at("WSEMU_POLICY") << "\n" << r.out << r.err;
    EXPECT_EQ(r.out, "cp_async: 0 wrong\n") << env.at("WSEMU_POLICY") << "\n" << r.err;
  }
}

// A thread's cp.asyncs are asynchronous to it. -DEARLY reads the second group's destinations before
// cp.async.wait_group 0; -DNO_TRACK reads a neighbour's copy after an mbarrier phase that did not
// track it (no cp.async.mbarrier.arrive). The eager policy lands each copy at issue and hides both;
// with completions late, the reads see the old bytes: every word of the 3 x 16 bytes per thread,
// and the neighbour's 16.
TEST(EmuPtx, ACpAsyncDestinationReadBeforeItsWaitIsStaleWhenCompletionsAreLate) {
  auto early = wsemuPtx({fixture("cp_async.cu"), "-DEARLY"}, {{"WSEMU_POLICY", "eager"}});
  EXPECT_EQ(early.exit_code, 0) << early.out << early.err;
  early = wsemuPtx({fixture("cp_async.cu"), "-DEARLY"}, {{"WSEMU_POLICY", "completions-late"}});
  EXPECT_EQ(early.exit_code, 1) << early.out << early.err;
  EXPECT_EQ(early.out, "cp_async: 768 wrong\n") << early.err;
  auto untracked =
      wsemuPtx({fixture("cp_async.cu"), "-DNO_TRACK"}, {{"WSEMU_POLICY", "completions-late"}});
  EXPECT_EQ(untracked.exit_code, 1) << untracked.out << untracked.err;
  EXPECT_EQ(untracked.out, "cp_async: 256 wrong\n") << untracked.err;
}

// L2 prefetches (tensor, with and without .tile, and plain) change nothing the kernel computes.
// -DLOCAL_MAP: the map parameter is not __grid_constant__, so its address is the thread's local
// copy; a tensor prefetch checks its map as a TMA load does: ub/tensor-map-space.
TEST(EmuPtx, PrefetchesChangeNothingAndCheckTheirTensorMap) {
  auto r = wsemuPtx({fixture("prefetch.cu"), "-lcuda"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "prefetch: 0 wrong\n") << r.err;
  auto local = wsemuPtx({fixture("prefetch.cu"), "-lcuda", "-DLOCAL_MAP"});
  EXPECT_EQ(local.exit_code, 87) << local.out << local.err;
  EXPECT_TRUE(has(local.err, "WSEMU verdict=ub/tensor-map-space")) << local.err;
  EXPECT_TRUE(has(local.err, "signature=prefetch.cu:21,warpgroup0")) << local.err;
}

TEST(EmuPtx, BadInputIsOneSentence) {
  auto r = wsemuPtx({"/no/such/program.cu"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "wsemu-ptx: /no/such/program.cu cannot be read.\n");
}

// prmt (every mode), shf, dp4a/dp2a, mul24/mad24, copysign, testp, slct, isspacep, nanosleep in a
// spin between two warps, redux.sync and match.sync (full warp and even lanes), over edge values;
// the host checks each result against the PTX ISA's definition.
TEST(EmuPtx, AluOpsComputeWhatThePtxIsaDefines) {
  for (auto &p : kPolicies) {
    auto r = wsemuPtx({fixture("alu_ops.cu"), "-arch=sm_90a"}, {{"WSEMU_POLICY", p}});
    EXPECT_EQ(r.exit_code, 0) << p << "\n" << r.out << r.err;
    EXPECT_EQ(r.out, "alu_ops: 0 wrong\n") << p << "\n" << r.err;
  }
}

// Packed f16x2/bf16x2 add, sub, mul, fma, min, max, neg and abs as nvcc emits them for the
// toolkit's half-precision intrinsics, over edge values; the host rounds each exact result once.
TEST(EmuPtx, PackedHalfArithmeticIsRoundedOnceAsTheGpuDoes) {
  auto r = wsemuPtx({fixture("half2_ops.cu"), "-arch=sm_90a"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "half2_ops: 0 wrong\n") << r.err;
}
