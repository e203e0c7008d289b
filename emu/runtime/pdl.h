// Programmatic dependent launch (CUDA programming guide, "Programmatic Dependent Launch and
// Synchronization"; PTX ISA, griddepcontrol): the grids of one chain, each launched after the one
// before it in the same stream with programmatic stream serialization, run in one scheduler
// (sched.cpp, launchDependent). Internal to the runtime, like state.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "emu/runtime/state.h"

namespace wsemu {

enum class Access : uint8_t { Read, Write, Atomic };

// Bytes of global memory a grid accessed, each word with the access that first touched it (for
// the report). Byte-exact: a race is two accesses to one byte.
class Footprint {
 public:
  struct Who {
    uint32_t site = 0;    // index into the chain's sites (pdl.cpp)
    uint32_t thread = 0;  // the CTA's linear index << 10 | the thread's (~0: too many CTAs to say)
  };
  void add(uintptr_t a, size_t n, Who w);
  // The lowest byte of [a, a + n) in the set: its address and the access that first touched its
  // word.
  bool find(uintptr_t a, size_t n, uintptr_t *at, Who *w) const;
  bool empty() const { return pages_.empty(); }

 private:
  static constexpr uintptr_t kPage = 4096;
  struct Page {
    uint64_t bits[kPage / 64] = {};
    Who who[kPage / 4];
  };
  Page *page(uintptr_t key, bool make) const;
  mutable std::unordered_map<uintptr_t, std::unique_ptr<Page>> pages_;
  mutable uintptr_t last_key_ = ~uintptr_t(0);
  mutable Page *last_ = nullptr;
};

// One grid of a chain. Grid i + 1 may begin once every CTA of grid i has executed
// griddepcontrol.launch_dependents or exited (under the completions-late policy: once grid i has
// completed); its griddepcontrol.wait returns once every earlier grid of the chain has completed.
struct GridDep {
  GridDep *prev = nullptr, *next = nullptr;  // the grid it depends on; the grid depending on it
  size_t index = 0;
  std::string name;  // the kernel, as the launch named it
  Dim3 grid, block;
  uint64_t ctas = 0, released = 0;  // CTAs; those that executed launch_dependents or exited
  bool started = false;
  bool complete = false;            // every CTA ran to its end, and its stores landed
  bool prerequisites_done = false;  // every earlier grid completed: griddepcontrol.wait returns
  bool blamed = false;              // the launch's verdict is a race this grid's access made
  std::vector<Thread *> waiters;    // at griddepcontrol.wait
  std::string wait_what;            // what a parked waiter waits on, for a hang's report
  // Kept while a grid depends on this one: every global access of this grid, by kind.
  Footprint all[3];
  // Kept for a grid that depends on another: the accesses its threads made before they knew the
  // grids before it had completed (Thread::dep_known), by kind.
  Footprint early[3];
  struct Chain *chain = nullptr;
};

// What the grids of a chain share: the sites their accesses name.
struct Chain {
  std::vector<SrcLoc> sites;
  std::map<std::pair<const char *, int>, uint32_t> site_ids;
};

// A global access of the running thread (by an instruction, or by the async copy it issued): in a
// chain, an access that races with one of the grid it depends on, or of the grid that depends on
// it, is UB (ub/pdl-read-before-wait, ub/pdl-write-before-wait). `p` outside every global
// allocation (a generic pointer to local or shared memory) is not tracked.
void pdlAccess(const void *p, size_t n, Access a, SrcLoc loc);
inline bool pdlTracked() { return inKernel() && cta().dep != nullptr; }
// The CTA executed griddepcontrol.launch_dependents, or its threads have all exited.
void pdlRelease(Cta &c);
void pdlThreadExit(Thread &t);

}  // namespace wsemu
