// The hang watchdog's shared-memory ABI: the layout of the host-visible buffer an
// instrumented program writes (oracle/include/wswatch_rt.cuh) and the oracle decodes
// (wsr::decodeWatchBuffer in oracle/classify.cpp). Plain C layout, fixed-size fields, no
// pointers: the same bytes are a cudaHostAlloc'ed buffer, or a file (WSWATCH_FILE) mapped
// MAP_SHARED and registered with cudaHostRegister, that the oracle reads after the program
// trapped, exited or was killed.
#ifndef WSWATCH_ABI_H
#define WSWATCH_ABI_H

#include <stdint.h>

#define WSWATCH_MAGIC 0x48435457u  // "WTCH"
#define WSWATCH_VERSION 4u
#define WSWATCH_MAX_SITES 256
#define WSWATCH_MAX_RECS 2048
#define WSWATCH_REC_VALID 0x52454344u  // "DCER": written last, after the record's fields
#define WSWATCH_MAX_BAR_SLOTS 4096     // warps tracked inside bar.sync / __syncthreads (slot = warp % this)
#define WSWATCH_IN_BAR 0x80000000u     // set in wswatch_bar_t.line while the warp is inside
#define WSWATCH_NBARS 16               // named barrier ids 0..15, as the hardware has
#define WSWATCH_REC_MBARRIER 0u        // wswatch_rec_t.kind: parked on an mbarrier wait
#define WSWATCH_REC_NAMED 1u           // parked in a counted named barrier (bar.sync id, count)
// How a kernel whose watchdog fired ends (WSWATCH_END): every parked warp traps after the grace
// (error 719, the context is lost), or leaves the kernel (exit) and the host runtime ends the
// process with WSWATCH_END_STATUS once it has printed the records.
#define WSWATCH_END_TRAP 0u
#define WSWATCH_END_EXIT 1u
#define WSWATCH_END_STATUS 85          // the exit status of a process the exit mode ended

// One wait site of the instrumented program, filled in by the host before the first launch.
typedef struct {
  uint32_t line;       // where the report points: the wait loop, or the call of the helper holding it
  uint32_t wait_line;  // the wait loop itself (== line unless the wait is inside a helper)
  char role[64];       // normalised role of the enclosing guard(s): "warpgroup 0 / thread 0"
  char guard[64];      // the guard's condition text, truncated
  char bar[24];        // the barrier's name when the source shows one ("full"), else ""
  char kind[16];       // loop | asm-loop | call-loop | helper-call | cuda-barrier
} wswatch_site_t;

// One parked warp (or divergent part of a warp): written by the lane that leads it.
typedef struct {
  uint32_t valid;      // WSWATCH_REC_VALID once the rest is written
  uint32_t site;
  uint32_t block[3];
  uint32_t warp;       // warp index in the CTA (threadIdx linearised / 32)
  uint32_t lane;       // leading lane
  uint32_t lanes;      // lanes of the warp parked here together
  uint32_t bar_smem;   // shared-window address of the barrier (0 when unknown)
  uint32_t parity;     // the parity waited for (0xffffffff when the wait takes a token)
  uint32_t iter;       // waits this thread had completed at this site (0xffffffff: not counted)
  int32_t idx;         // mbarrier: index into the barrier array when the source shows one, else -1;
                       // named: the barrier id
  uint32_t wait_line;  // the line of the wait loop that expired
  uint32_t kind;       // WSWATCH_REC_MBARRIER | WSWATCH_REC_NAMED
  uint64_t bar_generic;
  uint64_t waited_ns;  // how long it had waited
  uint32_t nb_count;   // named: the thread count the barrier waits for (idx is the barrier id)
  uint32_t nb_arrived; // named: the threads that had arrived in the phase it waited on
  // mbarrier: what the copy's shadow (WSWATCH_SHADOW) saw at the waited address in this CTA
  uint32_t sh_state;   // WSWATCH_SH_OFF | WSWATCH_SH_UNINIT | WSWATCH_SH_INIT
  uint32_t sh_count;   // the count of the init
  uint32_t sh_arrivals;  // arrivals since the init (each thread's, or an arrive's count)
  uint32_t sh_copies;    // bulk copies issued with complete_tx on it since the init
  uint64_t sh_tx;        // transaction bytes announced (expect_tx) since the init
} wswatch_rec_t;

#define WSWATCH_SH_OFF 0u     // no shadow: some mbarrier operation was out of the copy's sight
#define WSWATCH_SH_UNINIT 1u  // no mbarrier.init in this CTA touched the waited address
#define WSWATCH_SH_INIT 2u    // the shadow's counts are in the record
#define WSWATCH_SHADOW_SLOTS 16

// A warp inside a CTA barrier (bar.sync / barrier.sync / __syncthreads), which cannot be bounded:
// its leading lane sets the slot before the barrier and clears it after. A warp still inside when
// the watchdog fires or the host kills the program is where that role stopped.
typedef struct {
  uint32_t line;       // WSWATCH_IN_BAR | the barrier's source line while inside; 0 outside
  uint32_t block;      // linear block index
  uint32_t warp;       // warp index in the CTA
  uint32_t pad;
} wswatch_bar_t;

typedef struct {
  uint32_t magic, version;
  uint32_t nsites, cap;
  uint32_t dropped;        // records that found no free slot
  uint32_t fired;          // set by the first expiring wait
  uint64_t bound_ns;       // the bound the program ran with
  char file[128];          // the user's source file (basename)
  char mode[16];           // "file" (registered file mapping) | "poll" | "pinned"
  uint32_t ran[WSWATCH_MAX_SITES];  // 1 once a wait at the site completed (the site executed)
  wswatch_site_t sites[WSWATCH_MAX_SITES];
  wswatch_rec_t recs[WSWATCH_MAX_RECS];
  wswatch_bar_t in_bar[WSWATCH_MAX_BAR_SLOTS];  // version 2
  // Version 4: the end mode. `ended` (device -> host) is set once the grace after the first
  // expiry is over and every parked warp but one has left: the records are final. `taken` (host ->
  // device) is set once the host printed them and is ending the process: the last warp leaves.
  uint32_t end_mode;       // WSWATCH_END_TRAP | WSWATCH_END_EXIT
  uint32_t ended;
  uint32_t taken;
  uint32_t pad;
} wswatch_buf_t;

#endif  // WSWATCH_ABI_H
