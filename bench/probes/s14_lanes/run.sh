#!/usr/bin/env bash
# Session 14, for the next device call (through scripts/device-run.sh): tests/fixtures/gpu/
# mbarrier_hang.cu (a count-2 mbarrier, thread 0 arrives once) with more lanes of one warp arriving
# at one instruction than the phase's pending count (lanes32: 32 lanes), exactly as many (lanes2),
# and one lane of each of two warps (warps2). The emulator (since c6ca445) calls the first
# ub/over-arrival and passes the other two; this asks the GPU.
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/out}
W=$(mktemp -d)
cp tests/fixtures/gpu/common.h $W/
one='if (threadIdx.x == 0) asm volatile("mbarrier.arrive'
for v in "lanes32:threadIdx.x < 32" "lanes2:threadIdx.x < 2" "warps2:threadIdx.x % 32 == 0 \&\& threadIdx.x < 64"; do
  sed "s/if (threadIdx.x == 0) asm volatile(\"mbarrier.arrive/if (${v#*:}) asm volatile(\"mbarrier.arrive/" \
    tests/fixtures/gpu/mbarrier_hang.cu > $W/${v%%:*}.cu
  cmp -s tests/fixtures/gpu/mbarrier_hang.cu $W/${v%%:*}.cu && echo "${v%%:*}: the edit changed nothing" >&2
done
for f in lanes32 lanes2 warps2; do
  echo "== $f.cu on the GPU"
  wsoracle $W/$f.cu --timeout 10 2>&1 | grep -E "^(verdict|signature|timings):"
  echo "== $f.cu on the emulator"
  wsoracle $W/$f.cu --backend emu --timeout 10 2>&1 | grep -E "^(verdict|signature):"
done 2>&1 | tee "$OUT/s14_lanes.log"
rm -rf "$W"
