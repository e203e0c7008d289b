// The device side of an emulated launch: built-ins, shared and global memory, checked
// accesses, and launch(). A translated kernel includes emu/runtime/ptx.h (which includes this).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "emu/runtime/core.h"

namespace wsemu {

// ---- built-ins of the current emulated thread (threadIdx.x -> wsemu::threadIdx().x) ----
const Dim3 &threadIdx();
const Dim3 &blockIdx();
const Dim3 &blockDim();
const Dim3 &gridDim();
uint32_t laneid();
uint32_t warpid();  // linear warp index in the CTA
uint32_t linearThread();
uint64_t globaltimer();  // emulated ns: advances with the scheduler, deterministic
uint64_t clock64();

// ---- shared memory: one arena per CTA; shared addresses are offsets into it ----
// `extern __shared__ T buf[]` -> T* buf = (T*)wsemu::dynamicShared();
uint8_t *dynamicShared();
// `__shared__ T name[count]` -> T* name = wsemu::sharedStatic<T>("name", count);  (same pointer for
// every thread)
void *sharedStaticBytes(const char *name, size_t bytes, size_t align, size_t elem);
template <class T>
T *sharedStatic(const char *name, size_t count = 1) {
  return static_cast<T *>(
      sharedStaticBytes(name, sizeof(T) * count, alignof(T) < 16 ? 16 : alignof(T), sizeof(T)));
}
// A name for reports: "full[1]" instead of "smem+0x1c008".
void nameShared(const void *p, size_t bytes, size_t elem_bytes, const char *name);
uint32_t smemAddr(const void *p, SrcLoc loc = {});  // __cvta_generic_to_shared; UB if not shared
void *smemPtr(uint32_t addr);                       // no check
bool isShared(const void *p);

// ---- global memory: every allocation is registered, with red zones on both sides ----
void *emuMalloc(size_t bytes, const char *name = nullptr);
void emuFree(void *p);
bool emuIsAllocation(const void *p);                       // p is where a live allocation starts
bool emuInAllocation(const void *p);                       // p is inside a live allocation
void emuMemcpy(void *dst, const void *src, size_t bytes);  // host<->device: both are host memory
void emuMemset(void *dst, int value, size_t bytes);
size_t liveAllocations();
// Where p lies, for a report: "offset 12 of the allocation of 4096 bytes at 0x...".
std::string describeGlobal(const void *p);
bool redZonesIntact(std::string *which = nullptr);

// ---- checks: out of bounds is UB, reported at `loc`, never a silent corruption ----
void checkGlobal(const void *p, size_t bytes, SrcLoc loc);
// At the top of each loop body in device code (the translation puts it there): one operation
// toward the launch's limit, so that a loop with no emulated operation in it (a spin whose asm
// is gone) ends as hang/livelock instead of running until the process is killed.
void loopTick(SrcLoc loc);
// A device function's local declared without an initializer gets its bytes here (the translator
// adds the call after the declaration): g++'s -ftrivial-auto-var-init=pattern bytes (0xFE), or
// zeros when the program runs with WSEMU_LOCALS=zero. One build serves both: the reducer judges an
// interesting candidate again with zeroed locals (reducer/tester.cpp) by running it again.
void uninit(void *p, size_t bytes);
void checkShared(uint32_t addr, size_t bytes, SrcLoc loc);
void checkAccess(const void *p, size_t bytes, SrcLoc loc);  // shared or global, by address

// `*p` / `p[i]` in device code -> wsemu::at(p, loc) / wsemu::at(p + i, loc)
template <class T>
inline T &at(T *p, SrcLoc loc) {
  checkAccess(p, sizeof(T), loc);
  return *p;
}

// The translator wraps each call of a __device__ function in a CallSite so that a parked
// thread's site reads "kernel.cu:212>kernel.cu:110" (the call, then the asm inside the helper).
class CallSite {
 public:
  explicit CallSite(SrcLoc loc);
  ~CallSite();
  CallSite(const CallSite &) = delete;
  CallSite &operator=(const CallSite &) = delete;

 private:
  bool pushed_ = false;
};
#define WSEMU_CAT2_(a, b) a##b
#define WSEMU_CAT_(a, b) WSEMU_CAT2_(a, b)
#define WSEMU_CALL ::wsemu::CallSite WSEMU_CAT_(wsemu_call_site_, __LINE__)(WSEMU_HERE)

// ---- launch: one CTA at a time, one fiber per thread ----
Config &
defaultConfig();  // what launch() uses when no Config is given (the translator's main sets it)
// `cluster`: CTAs per thread-block cluster (each dimension divides the grid's); the CTAs of one
// cluster run together, clusters one after another. `explicit_cluster`: the launch named cluster
// dimensions (%is_explicit_cluster).
Verdict launch(Dim3 grid, Dim3 block, size_t dynamic_smem, const std::function<void()> &kernel,
               const Config &cfg, SrcLoc loc = {}, Dim3 cluster = Dim3(),
               bool explicit_cluster = false);
inline Verdict launch(Dim3 grid, Dim3 block, size_t dynamic_smem,
                      const std::function<void()> &kernel) {
  return launch(grid, block, dynamic_smem, kernel, defaultConfig());
}
// One grid of a launch, as launch() takes it.
struct GridSpec {
  Dim3 grid, block;
  size_t dynamic_smem = 0;
  std::function<void()> kernel;
  SrcLoc loc;  // names the kernel (its file: the kernel's name on the PTX path)
  Dim3 cluster;
  bool explicit_cluster = false;
};
// Programmatic dependent launch: grids[0], and each grids[i + 1] launched after grids[i] in the
// same stream with programmatic stream serialization (the launch attribute
// cudaLaunchAttributeProgrammaticStreamSerialization), in one scheduler. Grid i + 1 begins once
// every CTA of grid i has executed griddepcontrol.launch_dependents or exited (under
// Policy::CompletionsLate: once grid i has completed), and runs before grid i's threads whenever it
// can; its griddepcontrol.wait returns once the grids before it have completed. One verdict for the
// chain; *failed_grid is the index of the grid it is about.
Verdict launchDependent(const std::vector<GridSpec> &grids, const Config &cfg, size_t *failed_grid);
// Configuration from the environment: WSEMU_POLICY=eager|reads-late|completions-late,
// WSEMU_ORDER=rr|random, WSEMU_SEED=N, WSEMU_TRACE=1. Sets exit_on_failure.
Config configFromEnv();

}  // namespace wsemu
