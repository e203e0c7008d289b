// The fiber layer: resume+yield cost (reported, not asserted) and a CTA of 384 threads.
#include "emu_test.h"
#include "emu/runtime/fiber.h"

using namespace emutest;

TEST(Fiber, SwitchCostIsReported) {
  double ns = measureFiberSwitchNs(384, 2000);
  std::printf("[ fiber    ] resume+yield: %.1f ns per switch pair over 384 fibers on 64 KiB stacks\n", ns);
  RecordProperty("ns_per_switch", std::to_string(ns));
  EXPECT_GT(ns, 0.0);
}

TEST(Fiber, Runs384ThreadsAndReportsBuiltins) {
  std::vector<int> seen(384 * 2, -1);
  Verdict v = launch(Dim3(2), Dim3(128, 3), 0, [&] {
    int lin = (int)(threadIdx().x + threadIdx().y * blockDim().x);
    seen[blockIdx().x * 384 + lin] = (int)(laneid() + 32 * warpid());
    ptx::syncthreads(WSEMU_HERE);
  }, cfgOf());
  ASSERT_TRUE(v.pass()) << dump(v);
  for (int i = 0; i < 768; ++i) EXPECT_EQ(seen[i], i % 384);
}

TEST(Fiber, DeepRecursionFitsA64KStack) {
  std::function<int(int)> f = [&](int n) { return n == 0 ? 0 : 1 + f(n - 1); };
  int r = 0;
  Verdict v = launch(Dim3(1), Dim3(32), 0, [&] { r = f(200); }, cfgOf());
  EXPECT_TRUE(v.pass());
  EXPECT_EQ(r, 200);
}
