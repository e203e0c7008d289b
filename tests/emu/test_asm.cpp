// An instruction the emulator does not implement is an infra-error naming it, never a no-op.
#include "emu_test.h"

using namespace emutest;

TEST(Unknown, InstructionIsInfraErrorNamingIt) {
  Verdict v = launch(Dim3(1), Dim3(32), 0, [] {
    if (threadIdx().x == 0)
      ptx::unknown_instruction("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32", WSEMU_HERE);
  }, cfgOf());
  EXPECT_EQ(v.detail, "infra-error/unknown-instruction") << dump(v);
  EXPECT_EQ(v.exitStatus(), kExitInfra);
  EXPECT_NE(v.message.find("tcgen05.alloc"), std::string::npos);
}

TEST(Verdict, LinesAreWhatTheOracleParses) {
  Verdict v = launch(Dim3(1), Dim3(64), 64, [] {
    auto *bar = reinterpret_cast<uint64_t *>(dynamicShared());
    nameShared(bar, 8, 8, "full");
    if (threadIdx().x == 0) ptx::mbarrier_init(smemAddr(bar), 2, WSEMU_HERE);
    ptx::syncthreads(WSEMU_HERE);
    if (threadIdx().x >= 32) while (!ptx::mbarrier_try_wait_parity(smemAddr(bar), 0, WSEMU_HERE)) {}
  }, cfgOf());
  auto lines = v.lines();
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("WSEMU verdict=hang/mbarrier symptom=hang block=0,0,0 signature=test_asm.cpp:", 0), 0u)
      << lines[0];
  EXPECT_NE(lines[1].find("WSEMU parked warpgroup 0, 1 warp (warp 1; 32 threads), parked at test_asm.cpp:"),
            std::string::npos)
      << lines[1];
  EXPECT_NE(lines[1].find("mbarrier full waiting for parity 0 (phase 0 parity 0, pending 2 of 2, tx 0) iteration 0"),
            std::string::npos)
      << lines[1];
}
