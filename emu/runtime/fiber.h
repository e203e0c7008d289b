// Fibers for emulated CUDA threads: Boost.Context fcontext fibers on pooled 64 KB stacks
// with a guard page (a stack overflow faults instead of corrupting a neighbour).
#pragma once

#include <boost/context/fiber.hpp>

#include <cstddef>
#include <functional>
#include <vector>

namespace wsemu {

class StackPool {
 public:
  explicit StackPool(size_t bytes = 64 * 1024);
  ~StackPool();
  StackPool(const StackPool &) = delete;
  StackPool &operator=(const StackPool &) = delete;
  boost::context::stack_context allocate();
  void deallocate(boost::context::stack_context &sc) noexcept;
  size_t stackBytes() const { return bytes_; }

 private:
  size_t bytes_;
  std::vector<void *> free_;  // mapping bases (guard page first)
};

// One resumable body. resume() runs it until it calls yield() or returns.
class Fiber {
 public:
  Fiber() = default;
  Fiber(const Fiber &) = delete;
  Fiber &operator=(const Fiber &) = delete;
  ~Fiber() { reset(); }
  void start(StackPool &pool, std::function<void()> body);
  void resume();
  void yield();  // only from inside the body
  bool finished() const { return finished_; }
  bool started() const { return started_; }
  void reset();  // an unfinished body is unwound (its destructors run)
  // Whether `p` lies in this fiber's stack: the thread's local memory as the GPU has it (a kernel
  // parameter copied there, a local variable).
  bool onStack(const void *p) const {
    auto a = reinterpret_cast<const char *>(p), top = static_cast<const char *>(stack_.sp);
    return started_ && a < top && a >= top - stack_.size;
  }

 private:
  boost::context::fiber self_, sink_;
  boost::context::stack_context stack_{};
  std::function<void()> body_;
  bool finished_ = false, started_ = false;
};

// Resume+yield round trip over `fibers` fibers, `rounds` times each; returns ns per switch pair.
double measureFiberSwitchNs(int fibers, int rounds, size_t stack_bytes = 64 * 1024);

}  // namespace wsemu
