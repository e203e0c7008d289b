#include "emu/runtime/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace wsemu {

namespace ctx = boost::context;

static size_t pageBytes() {
  static size_t p = (size_t)sysconf(_SC_PAGESIZE);
  return p;
}

StackPool::StackPool(size_t bytes)
    : bytes_((bytes + pageBytes() - 1) / pageBytes() * pageBytes()) {}

StackPool::~StackPool() {
  for (void *p : free_) munmap(p, bytes_ + pageBytes());
}

ctx::stack_context StackPool::allocate() {
  void *base;
  if (!free_.empty()) {
    base = free_.back();
    free_.pop_back();
  } else {
    base = mmap(nullptr, bytes_ + pageBytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                -1, 0);
    if (base == MAP_FAILED) {
      std::fprintf(stderr,
                   "WSEMU verdict=infra-error/out-of-memory message=fiber-stack-mmap-failed\n");
      std::abort();
    }
    mprotect(base, pageBytes(), PROT_NONE);  // guard page below the stack
  }
  ctx::stack_context sc;
  sc.size = bytes_;
  sc.sp = static_cast<char *>(base) + pageBytes() + bytes_;
  return sc;
}

void StackPool::deallocate(ctx::stack_context &sc) noexcept {
  free_.push_back(static_cast<char *>(sc.sp) - bytes_ - pageBytes());
}

namespace {
struct PoolAlloc {  // Boost.Context StackAllocator concept over a StackPool
  StackPool *pool;
  ctx::stack_context *given;  // the fiber's record of its stack
  ctx::stack_context allocate() { return *given = pool->allocate(); }
  void deallocate(ctx::stack_context &sc) noexcept { pool->deallocate(sc); }
};
}  // namespace

void Fiber::start(StackPool &pool, std::function<void()> body) {
  reset();
  body_ = std::move(body);
  finished_ = false;
  started_ = true;
  self_ = ctx::fiber(std::allocator_arg, PoolAlloc{&pool, &stack_}, [this](ctx::fiber &&sink) {
    sink_ = std::move(sink);
    body_();
    finished_ = true;
    return std::move(sink_);
  });
}

void Fiber::resume() { self_ = std::move(self_).resume(); }

void Fiber::yield() { sink_ = std::move(sink_).resume(); }

void Fiber::reset() {
  self_ = ctx::fiber();  // unwinds an unfinished body (forced_unwind through its frames)
  sink_ = ctx::fiber();
  body_ = nullptr;
  started_ = false;
  stack_ = {};
}

double measureFiberSwitchNs(int fibers, int rounds, size_t stack_bytes) {
  StackPool pool(stack_bytes);
  std::vector<std::unique_ptr<Fiber>> fs;
  for (int i = 0; i < fibers; ++i) {
    fs.push_back(std::make_unique<Fiber>());
    Fiber *f = fs.back().get();
    f->start(pool, [f, rounds] {
      for (int r = 0; r < rounds; ++r) f->yield();
    });
  }
  for (auto &f : fs) f->resume();  // first entry, not timed
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r)
    for (auto &f : fs) f->resume();
  auto t1 = std::chrono::steady_clock::now();
  double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  for (auto &f : fs) f->reset();
  return ns / ((double)fibers * rounds);
}

}  // namespace wsemu
