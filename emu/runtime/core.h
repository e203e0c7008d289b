// wsemu core types: what a translated kernel and its launcher see of the CPU emulator.
// Every blocking or checked call takes a SrcLoc so a verdict can name the kernel's own line.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace wsemu {

struct SrcLoc {
  const char *file = "?";
  int line = 0;
};
#define WSEMU_HERE (::wsemu::SrcLoc{__FILE__, __LINE__})

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  Dim3() = default;
  Dim3(uint32_t x_, uint32_t y_ = 1, uint32_t z_ = 1) : x(x_), y(y_), z(z_) {}
  uint32_t count() const { return x * y * z; }
};

// When async operations (TMA, bulk stores, wgmma) read their sources and signal completion.
enum class Policy {
  Eager,            // read, write and signal at issue
  ReadsLate,        // sources read as late as legal: at the completion point
  CompletionsLate,  // sources read at issue; writes + signals only when forced (a wait_group) or
                    // when every thread is blocked
};
const char *policyName(Policy p);

enum class Order {
  RoundRobin,  // run a thread until it blocks, then the next in FIFO order
  Random,  // every emulated op is a preemption point; the next thread is drawn from a seeded RNG
};

struct Config {
  Policy policy = Policy::Eager;
  Order order = Order::RoundRobin;
  uint64_t seed = 1;
  size_t stack_bytes = 64 * 1024;
  uint64_t max_ops = 2'000'000'000ull;  // livelock guard: emulated ops in one launch
  bool exited_warps_arrive = true;  // bar.sync without a count: fully exited warps count as arrived
  bool trace = false;               // record every emulated op (determinism tests, debugging)
  bool exit_on_failure = false;     // print WSEMU lines and _Exit(86/87/88) on a non-pass verdict
  // WSEMU_PROXY=coherent: the async proxy sees every generic store at once, as if every
  // fence.proxy.async the program needs were there (the reducer's fix-makes-it-pass run, tma.cpp).
  bool coherent_proxy = false;
};

// Exit statuses of a translated program whose emulated launch failed.
constexpr int kExitHang = 86;
constexpr int kExitUB = 87;
constexpr int kExitInfra = 88;

struct ParkedGroup {  // one line of a hang report: warps of one warpgroup parked on one thing
  int warpgroup = 0;
  std::vector<int> warps;
  int threads = 0;
  std::string site;  // file:line (basename)
  std::string what;  // "mbarrier full[1] waiting for parity 0 (phase 0 pending 1 tx 16384)"
  uint64_t iteration = 0;
  uint64_t parked_at = 0;  // scheduler step at which the first of them parked for good
  std::string arrivals;    // an mbarrier's phase when it ended: none | partial | tx | tx-none |
                           // tx-over (waitArrivals)
};

struct Verdict {
  std::string symptom = "pass";  // pass | hang | ub | infra-error
  std::string detail;            // hang/mbarrier, ub/over-arrival, ...
  std::string signature;         // no spaces: site,warpgroupN,iterK;...  or  site,warpgroupN for UB
  std::string message;           // one human sentence
  std::vector<ParkedGroup> parked;
  std::vector<std::string> trace;  // Config::trace
  Dim3 block_of_failure;
  uint64_t ops = 0, switches = 0;

  bool pass() const { return symptom == "pass"; }
  int exitStatus() const;
  std::vector<std::string> lines() const;  // the WSEMU lines the oracle parses
  void print(FILE *f) const;
};

}  // namespace wsemu
