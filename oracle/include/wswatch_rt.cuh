// The hang watchdog's runtime. The oracle's instrumentation (oracle/watchdog/watchdog.cpp)
// includes this at the top of an instrumented COPY of the user's program; the user's file is
// never changed. Every mbarrier wait loop of the copy calls
//   __wsw_tick(state)            before each attempt: true once the wait made no progress for
//                                the bound (%globaltimer), or another warp fired and this one
//                                has been parked for more than 1 ms;
//   __wsw_fire(...)              on expiry: the leading lane of the parked (part of the) warp writes
//                                one record into host-visible memory, waits a grace period so the
//                                other parked warps record too, then ends (__wsw_grace_and_end:
//                                __trap(), error 719, or in exit mode the warp leaves the kernel);
//   __wsw_done(site, &iter)      after the wait completed: the per-thread iteration counter and
//                                the site's "ran" flag (what the fuzzer reads: the site executed).
// The host side (__wsw_ensure, called before the first kernel launch) maps the buffer:
//   WSWATCH_FILE set: a file mapped MAP_SHARED and cudaHostRegister'ed (mode "file"): the records
//     are in the file even when the process is killed; if the registration fails, a pinned
//     buffer plus a thread copying it to the file every 10 ms (mode "poll").
//   WSWATCH_FILE unset: a pinned mapped buffer (mode "pinned").
// At exit (atexit: also after the harness printed a CUDA error and called exit(1)) the records
// are printed to stderr as WSWATCH lines. Knobs: WSWATCH_MS (env) or -DWSWATCH_DEFAULT_MS (the
// bound, default 200 ms), WSWATCH_MODE=file|poll|pinned (env), WSWATCH_QUIET=1 (no stderr lines),
// WSWATCH_GRACE_MS (how long the first expiring warp waits for the others before the end),
// WSWATCH_END=trap|exit (how a fired kernel ends; default trap).
//
// The exit mode. A trap costs a hang about 0.3 s more than the kernel's end (the exception and
// the teardown of the lost context), and a trapped context can outlive its process's next steps
// while other contexts share the GPU. In exit mode nothing traps while the host is there:
//   - after the grace every parked warp leaves the kernel (PTX exit) except the first one that
//     fired, the sentinel, which first publishes `ended` in the buffer (the records are final);
//   - from the end of the grace on (__wsw_over), a warp that reaches any instrumented point (a
//     fired wait, a CTA barrier's bracket, the first completion of a site) leaves at once without
//     writing: the records, the warps inside CTA barriers and the sites that ran stay what a trap
//     at that moment would have left. A warp released from __syncthreads because the parked warps
//     exited (exited warps no longer count there) leaves at the bracket after it, its slot still
//     marking it inside, as the trap would have found it;
//   - a host thread (__wsw_watch) sees `ended`, prints the WSWATCH lines as the exit path does,
//     sets `taken` and ends the process with _exit(WSWATCH_END_STATUS): the program never goes on
//     computing on the hung kernel's output or launches more work. The sentinel leaves on
//     `taken`; until then the kernel cannot end, so the program's own threads stay in their
//     synchronisation while the records are printed;
//   - no `taken` within the drain (max(bound / 2, 50 ms)) after `ended`: no host thread is taking
//     the records (none was started, or it cannot run), and the sentinel traps as the trap mode
//     does, which also ends any warp the exits could not reach;
//   - what the exits cannot end (a warp in a user loop the copy does not bound, or in a hardware
//     barrier that waits for one) dies with the process: the host runtime's _exit does not wait
//     for the kernel, and the driver reclaims the context as for a process killed at a timeout;
//     the oracle's fallback (RunOptions::over) ends a process that outlives its records.
// Without a host buffer nothing can be recorded or taken, and the exit mode traps as well.
#pragma once

#include "wswatch_abi.h"

#include <cuda_runtime.h>

#ifndef WSWATCH_DEFAULT_MS
#define WSWATCH_DEFAULT_MS 200
#endif

__device__ wswatch_buf_t *__wsw_buf = nullptr;
__device__ unsigned long long __wsw_bound_ns = (unsigned long long)(WSWATCH_DEFAULT_MS * 1000000.0);
__device__ unsigned int __wsw_slot = 0;
__device__ unsigned int __wsw_seen[WSWATCH_MAX_SITES];
__device__ unsigned long long __wsw_fire_t = 0;
__device__ unsigned long long __wsw_grace_ns = 0;  // 0: max(bound / 4, 20 ms); env WSWATCH_GRACE_MS
__device__ unsigned int __wsw_end_exit = 0;        // 1: WSWATCH_END=exit (__wsw_grace_and_end)

struct __wsw_state {
  unsigned int n;
  unsigned long long t0;
};

__device__ __forceinline__ unsigned long long __wsw_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Called before every attempt of a wait; cheap on the first two (no timer read).
__device__ __forceinline__ bool __wsw_tick(__wsw_state &s) {
  if (s.n < 2) {
    if (s.n == 1) s.t0 = __wsw_now();
    ++s.n;
    return false;
  }
  unsigned long long dt = __wsw_now() - s.t0;
  if (dt > __wsw_bound_ns) return true;
  if (dt > 1000000ull && *(volatile unsigned long long *)&__wsw_fire_t != 0) return true;
  return false;
}

__device__ __forceinline__ unsigned long long __wsw_waited(const __wsw_state &s) {
  return s.n >= 2 ? __wsw_now() - s.t0 : 0;
}

__device__ __forceinline__ void __wsw_sh_record(volatile wswatch_rec_t *r, unsigned smem);

// A shared-window address from an asm operand: `shared` when the instruction names .shared (the
// operand is already one), else a generic pointer (0 when it is not in shared memory).
__device__ __forceinline__ unsigned __wsw_smem(unsigned long long a, int shared) {
  if (shared) return (unsigned)a;
  unsigned is_shared = 0;
  asm volatile("{ .reg .pred p; isspacep.shared p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(is_shared) : "l"(a));
  if (!is_shared) return 0;
  unsigned long long s;
  asm volatile("cvta.to.shared.u64 %0, %1;" : "=l"(s) : "l"(a));
  return (unsigned)s;
}
// The record of the calling (part of a) warp, written by its leading lane: a free slot with the
// fields every record has, or nullptr (no buffer, or every slot taken: counted as dropped).
// __wsw_commit_rec publishes it and marks the buffer fired; then __wsw_grace_and_end.
__device__ __forceinline__ volatile wswatch_rec_t *__wsw_new_rec(unsigned site, unsigned iter, int idx,
                                                                unsigned wait_line, unsigned long long waited,
                                                                unsigned lane, unsigned mask) {
  wswatch_buf_t *b = *(wswatch_buf_t *volatile *)&__wsw_buf;
  if (!b) return nullptr;
  unsigned slot = atomicAdd(&__wsw_slot, 1u);
  volatile wswatch_buf_t *vb = b;
  if (slot >= WSWATCH_MAX_RECS) {
    vb->dropped = slot + 1 - WSWATCH_MAX_RECS;
    return nullptr;
  }
  volatile wswatch_rec_t *r = &vb->recs[slot];
  unsigned tid = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
  r->site = site;
  r->block[0] = blockIdx.x;
  r->block[1] = blockIdx.y;
  r->block[2] = blockIdx.z;
  r->warp = tid / 32;
  r->lane = lane;
  r->lanes = __popc(mask);
  r->iter = iter;
  r->idx = idx;
  r->wait_line = wait_line;
  r->waited_ns = waited;
  return r;
}
__device__ __forceinline__ void __wsw_commit_rec(volatile wswatch_rec_t *r) {
  wswatch_buf_t *b = *(wswatch_buf_t *volatile *)&__wsw_buf;
  if (!b) return;
  if (r) {
    __threadfence_system();
    r->valid = WSWATCH_REC_VALID;
  }
  ((volatile wswatch_buf_t *)b)->fired = 1;
  __threadfence_system();
}
__device__ __forceinline__ unsigned long long __wsw_grace() {
  unsigned long long grace = __wsw_grace_ns ? __wsw_grace_ns : __wsw_bound_ns / 4;
  if (grace < 20000000ull) grace = 20000000ull;
  return grace;
}
// Exit mode: true once the grace after the first expiry is over. What a warp would write from
// then on, a trap at that moment would have prevented; the caller leaves instead (__wsw_leave).
__device__ __forceinline__ bool __wsw_over() {
  if (!__wsw_end_exit) return false;
  unsigned long long t0 = *(volatile unsigned long long *)&__wsw_fire_t;
  return t0 != 0 && __wsw_now() >= t0 + __wsw_grace();
}
// The calling thread leaves the kernel. Every lane of a warp that reaches an end point calls it:
// the warp leaves whole, and a hardware barrier no longer waits for it.
__device__ __forceinline__ void __wsw_leave() { asm volatile("exit;" ::: "memory"); }
// For the asm-loop form: in exit mode the address of __wsw_fire_t, which the loop reads to leave
// at the end of the grace; 0 in trap mode (the loop waits for its own bound, as it always did).
__device__ __forceinline__ unsigned long long __wsw_end_watch() {
  return __wsw_end_exit ? (unsigned long long)(const void *)&__wsw_fire_t : 0ull;
}
// Grace: the other parked warps see __wsw_fire_t and record within about 1 ms; then the end.
// Trap mode: the trap. Exit mode (the file's header says why): every warp leaves but the first
// that fired (`first` in any lane of `mask`), which publishes `ended`, waits for the host's
// `taken` and leaves, or traps when no host took the records within the drain.
__device__ __forceinline__ void __wsw_grace_and_end(unsigned mask, bool first) {
  unsigned long long t0 = *(volatile unsigned long long *)&__wsw_fire_t;
  unsigned long long grace = __wsw_grace();
  while (__wsw_now() - t0 < grace) __nanosleep(100000);
  if (!__wsw_end_exit) __trap();
  wswatch_buf_t *b = *(wswatch_buf_t *volatile *)&__wsw_buf;
  if (!b) __trap();  // nothing recorded, no host to end the process: only the trap ends it
  if (!__any_sync(mask, first)) __wsw_leave();
  volatile wswatch_buf_t *vb = b;
  // A warp that fired just before the grace ended is still writing its record (microseconds).
  unsigned long long t1 = __wsw_now();
  while (__wsw_now() - t1 < 1000000ull) __nanosleep(100000);
  __threadfence_system();
  vb->ended = 1;
  __threadfence_system();
  unsigned long long drain = __wsw_bound_ns / 2;
  if (drain < 50000000ull) drain = 50000000ull;
  t1 = __wsw_now();
  while (!vb->taken) {
    if (__wsw_now() - t1 >= drain) __trap();
    __nanosleep(20000);
  }
  __wsw_leave();
}

// Records the warp parked on an mbarrier wait and traps. `addr` is a shared-window address when
// addr_is_shared, else a generic pointer value (0: unknown).
__device__ __forceinline__ void __wsw_fire(unsigned site, unsigned iter, int idx, unsigned long long addr,
                                        int addr_is_shared, unsigned parity, unsigned wait_line,
                                        unsigned long long waited) {
  if (__wsw_over()) __wsw_leave();
  unsigned mask = __activemask();
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  bool first = atomicCAS(&__wsw_fire_t, 0ull, __wsw_now()) == 0ull;
  if (lane == (unsigned)(__ffs(mask) - 1)) {
    unsigned smem = addr ? __wsw_smem(addr, addr_is_shared) : 0;
    unsigned long long gen = addr;
    if (addr_is_shared) asm volatile("cvta.shared.u64 %0, %1;" : "=l"(gen) : "l"((unsigned long long)smem));
    volatile wswatch_rec_t *r = __wsw_new_rec(site, iter, idx, wait_line, waited, lane, mask);
    if (r) {
      r->kind = WSWATCH_REC_MBARRIER;
      r->bar_smem = smem;
      r->bar_generic = gen;
      r->parity = parity;
      __wsw_sh_record(r, smem);
    }
    __wsw_commit_rec(r);
  }
  __wsw_grace_and_end(mask, first);
}

__device__ __forceinline__ void __wsw_done(unsigned site, unsigned *it) {
  if (it) ++*it;
  if (site < WSWATCH_MAX_SITES && __wsw_seen[site] == 0) {
    if (__wsw_over()) __wsw_leave();
    __wsw_seen[site] = 1;
    wswatch_buf_t *b = *(wswatch_buf_t *volatile *)&__wsw_buf;
    if (b) ((volatile unsigned *)b->ran)[site] = 1;
  }
}

// CTA barriers (bar.sync, barrier.sync, __syncthreads) cannot be bounded; the copy brackets each
// with these so that a warp still inside one when the watchdog fires, or when the host kills the
// program, shows where that role stopped (hang/barrier). The leading lane of the warp writes its
// slot: plain stores into host-visible memory, posted, no round trip.
__device__ __forceinline__ volatile wswatch_bar_t *__wsw_bar_slot() {
  wswatch_buf_t *b = *(wswatch_buf_t *volatile *)&__wsw_buf;
  if (!b) return nullptr;
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  if (lane != (unsigned)(__ffs(__activemask()) - 1)) return nullptr;
  unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned blk = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned wpb = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;
  return &b->in_bar[(blk * wpb + tid / 32) % WSWATCH_MAX_BAR_SLOTS];
}
__device__ __forceinline__ void __wsw_bar_enter(unsigned line) {
  if (__wsw_over()) __wsw_leave();
  if (volatile wswatch_bar_t *e = __wsw_bar_slot()) {
    e->block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    e->warp = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) / 32;
    e->line = WSWATCH_IN_BAR | line;
  }
}
__device__ __forceinline__ void __wsw_bar_leave() {
  if (__wsw_over()) __wsw_leave();  // released by exited warps: still inside when the grace ended
  if (volatile wswatch_bar_t *e = __wsw_bar_slot()) e->line = 0;
}

// Counted named barriers (bar.sync / barrier.sync / bar.arrive with a thread count) run in the copy
// as a software barrier with the hardware's counting, so that a wait there is bounded like an
// mbarrier wait and a hang is named with the barrier id, the count it waits for and the threads
// that arrived. The hardware counts a warp's arrival once all its non-exited threads reached the
// barrier (.aligned: the warp is converged there), in units of the warp size; here the leading
// lane of the converged warp adds 32. One 32-bit word per id holds (phase << 16) | arrived, so the
// arrival and the phase it belongs to are read in one atomic, and the completing arrival moves to
// the next phase and takes the count off in one more (arrivals beyond the count stay counted for
// the next phase, as in the hardware). Barriers without a count (__syncthreads, bar.sync 0) stay
// hardware barriers, bracketed below: with early-exited threads the hardware counts only the
// others, which a software count cannot know. The state lives in static shared memory, zeroed at
// each kernel's entry (__wsw_kernel_init below).
struct __wsw_nbar_t {
  unsigned word;   // (phase << 16) | threads arrived in the current phase
  unsigned count;  // the count of the latest arrival
};
__device__ __forceinline__ __wsw_nbar_t *__wsw_nbars() {
  __shared__ __wsw_nbar_t bars[WSWATCH_NBARS];
  return bars;
}

// The mbarrier shadow (the copy defines WSWATCH_SHADOW when every mbarrier operation of the
// program is an asm statement of the user's file it can see): each init, arrival, expect_tx and
// complete_tx bulk copy also counts into a per-CTA table in shared memory, so that a parked warp
// can say how far the barrier it waits on got, which the hardware's barrier word does not tell
// (its layout is not documented). One slot per barrier address, first come first served.
struct __wsw_shadow_t {
  unsigned addr;  // shared-window address; 0: a free slot
  unsigned count, arrivals, copies;
  unsigned long long tx;
};
__device__ __forceinline__ __wsw_shadow_t *__wsw_shadows() {
  __shared__ __wsw_shadow_t tab[WSWATCH_SHADOW_SLOTS];
  return tab;
}
__device__ __forceinline__ __wsw_shadow_t *__wsw_sh_find(unsigned smem) {
  for (unsigned i = 0; i < WSWATCH_SHADOW_SLOTS; ++i)
    if (*(volatile unsigned *)&__wsw_shadows()[i].addr == smem) return &__wsw_shadows()[i];
  return nullptr;
}
__device__ __forceinline__ void __wsw_sh_init(unsigned long long a, int shared, unsigned count) {
  unsigned smem = __wsw_smem(a, shared);
  if (!smem) return;
  __wsw_shadow_t *e = __wsw_sh_find(smem);
  for (unsigned i = 0; !e && i < WSWATCH_SHADOW_SLOTS; ++i)
    if (atomicCAS(&__wsw_shadows()[i].addr, 0u, smem) == 0u) e = &__wsw_shadows()[i];
  if (!e) return;  // more barriers than slots: the others stay unknown (uninit at a wait)
  e->count = count;
  e->arrivals = 0;
  e->copies = 0;
  e->tx = 0;
  __threadfence_block();
}
__device__ __forceinline__ void __wsw_sh_arrive(unsigned long long a, int shared, unsigned n) {
  if (__wsw_shadow_t *e = __wsw_sh_find(__wsw_smem(a, shared))) atomicAdd(&e->arrivals, n);
}
__device__ __forceinline__ void __wsw_sh_expect(unsigned long long a, int shared, unsigned bytes) {
  if (__wsw_shadow_t *e = __wsw_sh_find(__wsw_smem(a, shared))) atomicAdd(&e->tx, (unsigned long long)bytes);
}
__device__ __forceinline__ void __wsw_sh_copy(unsigned long long a, int shared) {
  if (__wsw_shadow_t *e = __wsw_sh_find(__wsw_smem(a, shared))) atomicAdd(&e->copies, 1u);
}
// What a record says of the barrier at `smem`.
__device__ __forceinline__ void __wsw_sh_record(volatile wswatch_rec_t *r, unsigned smem) {
#ifdef WSWATCH_SHADOW
  __wsw_shadow_t *e = smem ? __wsw_sh_find(smem) : nullptr;
  r->sh_state = e ? WSWATCH_SH_INIT : WSWATCH_SH_UNINIT;
  if (e) {
    r->sh_count = *(volatile unsigned *)&e->count;
    r->sh_arrivals = *(volatile unsigned *)&e->arrivals;
    r->sh_copies = *(volatile unsigned *)&e->copies;
    r->sh_tx = *(volatile unsigned long long *)&e->tx;
  }
#else
  r->sh_state = WSWATCH_SH_OFF;
#endif
}

// At every kernel's entry in a copy with counted named barriers or the shadow: their state zeroed,
// then a CTA barrier (every thread is there at the entry) before any thread uses it.
__device__ __forceinline__ void __wsw_kernel_init() {
  unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned n = blockDim.x * blockDim.y * blockDim.z;
  for (unsigned i = tid; i < WSWATCH_NBARS; i += n) {
    __wsw_nbars()[i].word = 0;
    __wsw_nbars()[i].count = 0;
  }
#ifdef WSWATCH_SHADOW
  for (unsigned i = tid; i < WSWATCH_SHADOW_SLOTS; i += n) __wsw_shadows()[i] = __wsw_shadow_t{0, 0, 0, 0, 0};
#endif
  __syncthreads();
}
__device__ __noinline__ void __wsw_nbar_fire(unsigned site, unsigned iter, unsigned id, unsigned count,
                                             unsigned arrived, unsigned wait_line, unsigned long long waited) {
  if (__wsw_over()) __wsw_leave();
  unsigned mask = __activemask();
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  bool first = atomicCAS(&__wsw_fire_t, 0ull, __wsw_now()) == 0ull;
  if (lane == (unsigned)(__ffs(mask) - 1)) {
    volatile wswatch_rec_t *r = __wsw_new_rec(site, iter, (int)id, wait_line, waited, lane, mask);
    if (r) {
      r->kind = WSWATCH_REC_NAMED;
      r->bar_smem = 0;
      r->bar_generic = 0;
      r->parity = 0xffffffffu;
      r->nb_count = count;
      r->nb_arrived = arrived;
      r->sh_state = WSWATCH_SH_OFF;
    }
    __wsw_commit_rec(r);
  }
  __wsw_grace_and_end(mask, first);
}
// One arrival of the calling warp at named barrier `id` for `count` threads; with `wait`, the warp
// then waits (bounded) until the phase it arrived in completes. `site` and `it` as for the waits.
__device__ __forceinline__ void __wsw_nbar(unsigned id, unsigned count, int wait, unsigned site, unsigned *it,
                                           unsigned wait_line) {
  __wsw_nbar_t *nb = &__wsw_nbars()[id % WSWATCH_NBARS];
  unsigned mask = __activemask();
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  unsigned leader = __ffs(mask) - 1;
  __threadfence_block();  // what the warp wrote before the barrier is seen after it
  unsigned old = 0;
  if (lane == leader) {
    nb->count = count;
    old = atomicAdd(&nb->word, 32u);
    unsigned before = old & 0xffffu;
    if (before < count && before + 32u >= count) atomicAdd(&nb->word, 0x10000u - count);
  }
  old = __shfl_sync(mask, old, leader);
  if (wait) {
    unsigned phase = old >> 16;
    __wsw_state s{0, 0};
    while ((*(volatile unsigned *)&nb->word >> 16) == phase) {
      if (__wsw_tick(s)) {
        unsigned w = *(volatile unsigned *)&nb->word;
        __wsw_nbar_fire(site, it ? *it : 0xffffffffu, id, count, (w >> 16) == phase ? (w & 0xffffu) : count,
                        wait_line, __wsw_waited(s));
      }
    }
    __wsw_done(site, it);
  }
  __threadfence_block();
}

// A generic pointer as the fire path wants it.
template <class T>
__device__ __forceinline__ unsigned long long __wsw_ptr(T *p) {
  return (unsigned long long)(const void *)p;
}

// libcu++ barriers (cuda::barrier / cuda::std::barrier): their blocking waits loop inside the
// library, so the instrumentation replaces the call with a bounded loop over the library's own
// single-shot try_wait_for / try_wait_parity_for (a short time hint per attempt).
template <class B, class Tok, class Dur>
__device__ __forceinline__ void __wsw_barrier_wait(B &bar, Tok &&tok, Dur hint, unsigned site, unsigned *it,
                                                   unsigned wait_line) {
  __wsw_state s{0, 0};
  auto t = tok;
  while (!bar.try_wait_for(decltype(t)(t), hint)) {
    if (__wsw_tick(s)) __wsw_fire(site, it ? *it : 0xffffffffu, -1, __wsw_ptr(&bar), 0, 0xffffffffu, wait_line, __wsw_waited(s));
  }
  __wsw_done(site, it);
}
template <class B, class Dur>
__device__ __forceinline__ void __wsw_barrier_wait_parity(B &bar, bool parity, Dur hint, unsigned site, unsigned *it,
                                                          unsigned wait_line) {
  __wsw_state s{0, 0};
  while (!bar.try_wait_parity_for(parity, hint)) {
    if (__wsw_tick(s)) __wsw_fire(site, it ? *it : 0xffffffffu, -1, __wsw_ptr(&bar), 0, parity ? 1u : 0u, wait_line, __wsw_waited(s));
  }
  __wsw_done(site, it);
}
template <class B, class Dur>
__device__ __forceinline__ void __wsw_barrier_arrive_and_wait(B &bar, Dur hint, unsigned site, unsigned *it,
                                                              unsigned wait_line) {
  __wsw_barrier_wait(bar, bar.arrive(), hint, site, it, wait_line);
}

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------
#ifndef __CUDA_ARCH__
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#endif

// Defined at the end of the instrumented copy: the site table and the user's file name.
static const wswatch_site_t *__wsw_get_sites(unsigned *n, const char **file);

#ifndef __CUDA_ARCH__
struct __wsw_host_t {
  wswatch_buf_t *h = nullptr;    // what the device writes (pinned or the registered mapping)
  wswatch_buf_t *map = nullptr;  // the file mapping (poll mode copies h into it)
  size_t map_bytes = 0;
  std::atomic<bool> stop{false};
  std::thread poller;  // poll mode: copies h into the file; exit mode: __wsw_watch
  bool started = false, end_exit = false;
  std::atomic<bool> printed{false};
};
static __wsw_host_t &__wsw_host() {
  static __wsw_host_t *g = new __wsw_host_t;  // never destroyed: used from atexit
  return *g;
}

// " nbar=1 count=160 arrived=128"; " sh=init sh_count=1 sh_arr=3 sh_copies=3 sh_tx=49152"
static std::string __wsw_named_fields(const wswatch_rec_t &r) {
  char b[160];
  if (r.kind == WSWATCH_REC_NAMED)
    std::snprintf(b, sizeof b, " nbar=%d count=%u arrived=%u", r.idx, r.nb_count, r.nb_arrived);
  else if (r.sh_state == WSWATCH_SH_UNINIT)
    std::snprintf(b, sizeof b, " sh=uninit");
  else if (r.sh_state == WSWATCH_SH_INIT)
    std::snprintf(b, sizeof b, " sh=init sh_count=%u sh_arr=%u sh_copies=%u sh_tx=%llu", r.sh_count,
                  r.sh_arrivals, r.sh_copies, (unsigned long long)r.sh_tx);
  else
    b[0] = 0;
  return b;
}

static void __wsw_print() {
  __wsw_host_t &g = __wsw_host();
  if (!g.h || g.printed.exchange(true)) return;
  const wswatch_buf_t *b = g.h;
  if (!b->fired) return;
  if (const char *q = std::getenv("WSWATCH_QUIET"); q && *q == '1') return;
  unsigned nrec = 0;
  for (unsigned i = 0; i < WSWATCH_MAX_RECS; ++i)
    if (b->recs[i].valid == WSWATCH_REC_VALID) ++nrec;
  std::fprintf(stderr, "WSWATCH-STATUS mode=%s records=%u dropped=%u bound_ms=%.1f file=%s\n", b->mode, nrec,
               b->dropped, b->bound_ns / 1e6, b->file);
  for (unsigned i = 0; i < WSWATCH_MAX_RECS; ++i) {
    const wswatch_rec_t &r = b->recs[i];
    if (r.valid != WSWATCH_REC_VALID) continue;
    bool dup = false;  // one line per (block, warp, site): divergent parts of a warp merge
    for (unsigned j = 0; j < i && !dup; ++j) {
      const wswatch_rec_t &o = b->recs[j];
      dup = o.valid == WSWATCH_REC_VALID && o.site == r.site && o.warp == r.warp && o.block[0] == r.block[0] &&
            o.block[1] == r.block[1] && o.block[2] == r.block[2];
    }
    if (dup) continue;
    const wswatch_site_t *s = r.site < b->nsites ? &b->sites[r.site] : nullptr;
    std::fprintf(stderr,
                 "WSWATCH block=%u,%u,%u warp=%u lane=%u lanes=%u site=%u file=%s line=%u wait_line=%u role=\"%s\" "
                 "bar=0x%x gbar=0x%llx name=%s idx=%d parity=%d iter=%d waited_ms=%.1f%s\n",
                 r.block[0], r.block[1], r.block[2], r.warp, r.lane, r.lanes, r.site, b->file, s ? s->line : 0,
                 r.wait_line, s ? s->role : "", r.bar_smem, (unsigned long long)r.bar_generic,
                 s && s->bar[0] ? s->bar : "-", r.idx, (int)r.parity, (int)r.iter, r.waited_ns / 1e6,
                 __wsw_named_fields(r).c_str());
  }
  for (unsigned s = 0; s < b->nsites; ++s)
    std::fprintf(stderr, "WSWATCH-SITE site=%u file=%s line=%u wait_line=%u kind=%s ran=%u role=\"%s\"\n", s, b->file,
                 b->sites[s].line, b->sites[s].wait_line, b->sites[s].kind, b->ran[s], b->sites[s].role);
  for (unsigned i = 0; i < WSWATCH_MAX_BAR_SLOTS; ++i) {
    const volatile wswatch_bar_t *e = &b->in_bar[i];
    if (e->line & WSWATCH_IN_BAR)
      std::fprintf(stderr, "WSWATCH-BAR block=%u warp=%u line=%u file=%s\n", e->block, e->warp, e->line & ~WSWATCH_IN_BAR, b->file);
  }
  std::fflush(stderr);
}

static void __wsw_flush() {
  __wsw_host_t &g = __wsw_host();
  if (g.map && g.h && g.map != g.h) std::memcpy((void *)g.map, (const void *)g.h, sizeof(wswatch_buf_t));
}

// Exit mode: the records are final (the device set `ended`): print them, release the sentinel
// warp (`taken`) and end the process. The program's own threads are still waiting for the kernel
// while the records are printed (the sentinel holds it). Between `taken` and _exit the kernel gets
// 1 ms to end, so that the process ends with no kernel running and the driver reclaims an idle
// context. The program may wake in that millisecond; if it then returns from main or calls exit,
// the status stays this one (__wsw_atexit joins this thread first) and what it adds to stdout's
// buffer is not written. What it printed before is written now, when no other thread holds stdout.
static void __wsw_end_process() {
  __wsw_host_t &g = __wsw_host();
  volatile wswatch_buf_t *b = g.h;
  __wsw_print();
  const char *q = std::getenv("WSWATCH_QUIET");
  if (!(q && *q == '1')) {
    std::fprintf(stderr, "WSWATCH-END mode=exit status=%d file=%s\n", WSWATCH_END_STATUS, g.h->file);
    std::fflush(stderr);
  }
  if (ftrylockfile(stdout) == 0) {
    fflush_unlocked(stdout);
    funlockfile(stdout);
  }
  b->taken = 1;
  __wsw_flush();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ::_exit(WSWATCH_END_STATUS);
}

// The host thread: in poll mode it copies the buffer into the file every 10 ms; in exit mode it
// looks for `ended` every millisecond (the sentinel warp waits for it: the drain).
static void __wsw_watch() {
  __wsw_host_t &g = __wsw_host();
  const bool poll = g.map && g.h != g.map;
  auto flushed = std::chrono::steady_clock::now();
  while (!g.stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(g.end_exit ? 1 : 10));
    if (g.end_exit && ((volatile wswatch_buf_t *)g.h)->ended) __wsw_end_process();
    if (poll && std::chrono::steady_clock::now() - flushed >= std::chrono::milliseconds(10)) {
      __wsw_flush();
      flushed = std::chrono::steady_clock::now();
    }
  }
}

static void __wsw_atexit() {
  __wsw_host_t &g = __wsw_host();
  if (g.poller.joinable()) {
    g.stop = true;
    g.poller.join();
  }
  __wsw_flush();
  __wsw_print();
}

// Before cudaDeviceReset (which frees pinned memory): keep a host copy to print from.
static void __wsw_before_reset() {
  __wsw_host_t &g = __wsw_host();
  if (!g.h || g.h == g.map) return;
  if (g.poller.joinable()) {
    g.stop = true;
    g.poller.join();
  }
  __wsw_flush();
  wswatch_buf_t *copy = (wswatch_buf_t *)std::malloc(sizeof(wswatch_buf_t));
  if (copy) std::memcpy(copy, (const void *)g.h, sizeof(wswatch_buf_t));
  g.h = copy;
}

static void __wsw_ensure() {
  __wsw_host_t &g = __wsw_host();
  if (g.started) return;
  g.started = true;
  double ms = WSWATCH_DEFAULT_MS;
  if (const char *e = std::getenv("WSWATCH_MS"); e && *e) ms = std::atof(e);
  unsigned long long bound = (unsigned long long)(ms * 1e6);
  const char *end_env = std::getenv("WSWATCH_END");
  const bool end_exit = end_env && std::strcmp(end_env, "exit") == 0;
  const char *path = std::getenv("WSWATCH_FILE");
  const char *mode_env = std::getenv("WSWATCH_MODE");
  std::string mode = mode_env && *mode_env ? mode_env : (path && *path ? "file" : "pinned");
  size_t bytes = (sizeof(wswatch_buf_t) + 4095) & ~(size_t)4095;
  if (path && *path) {
    int fd = ::open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0 && ::ftruncate(fd, (off_t)bytes) == 0) {
      void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) {
        g.map = (wswatch_buf_t *)p;
        g.map_bytes = bytes;
      }
    }
    if (fd >= 0) ::close(fd);
    if (g.map && mode == "file") {
      cudaError_t e = cudaHostRegister((void *)g.map, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable);
      if (e == cudaSuccess) {
        g.h = g.map;
      } else {
        (void)cudaGetLastError();
        std::fprintf(stderr, "WSWATCH-INIT the file mapping could not be registered (code %d): polling instead\n", (int)e);
        mode = "poll";
      }
    }
    if (!g.map) mode = "pinned";
  }
  if (!g.h) {
    if (mode == "file") mode = g.map ? "poll" : "pinned";
    void *p = nullptr;
    cudaError_t e = cudaHostAlloc(&p, sizeof(wswatch_buf_t), cudaHostAllocMapped | cudaHostAllocPortable);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      std::fprintf(stderr, "WSWATCH-INIT no host buffer (code %d): waits stay bounded, nothing is recorded\n", (int)e);
      return;
    }
    g.h = (wswatch_buf_t *)p;
  }
  wswatch_buf_t *b = g.h;
  std::memset((void *)b, 0, sizeof(wswatch_buf_t));
  b->magic = WSWATCH_MAGIC;
  b->version = WSWATCH_VERSION;
  b->cap = WSWATCH_MAX_RECS;
  b->bound_ns = bound;
  std::snprintf(b->mode, sizeof b->mode, "%s", mode.c_str());
  unsigned n = 0;
  const char *file = "";
  const wswatch_site_t *sites = __wsw_get_sites(&n, &file);
  if (n > WSWATCH_MAX_SITES) n = WSWATCH_MAX_SITES;
  b->nsites = n;
  std::snprintf(b->file, sizeof b->file, "%s", file);
  for (unsigned i = 0; i < n; ++i) b->sites[i] = sites[i];
  wswatch_buf_t *d = nullptr;
  cudaError_t e = cudaHostGetDevicePointer((void **)&d, (void *)b, 0);
  if (e == cudaSuccess) e = cudaMemcpyToSymbol(__wsw_buf, &d, sizeof d);
  if (e == cudaSuccess) e = cudaMemcpyToSymbol(__wsw_bound_ns, &bound, sizeof bound);
  if (const char *g = std::getenv("WSWATCH_GRACE_MS"); g && *g && e == cudaSuccess) {
    unsigned long long grace = (unsigned long long)(std::atof(g) * 1e6);
    e = cudaMemcpyToSymbol(__wsw_grace_ns, &grace, sizeof grace);
  }
  if (e == cudaSuccess && end_exit) {
    unsigned one = 1;
    e = cudaMemcpyToSymbol(__wsw_end_exit, &one, sizeof one);
    if (e == cudaSuccess) {
      g.end_exit = true;
      b->end_mode = WSWATCH_END_EXIT;
    }
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    std::fprintf(stderr, "WSWATCH-INIT the device cannot see the buffer (code %d): nothing is recorded\n", (int)e);
  }
  __wsw_flush();
  if ((g.map && g.h != g.map) || g.end_exit) g.poller = std::thread(__wsw_watch);
  std::atexit(__wsw_atexit);
}
#else
static void __wsw_ensure() {}
static void __wsw_before_reset() {}
#endif
