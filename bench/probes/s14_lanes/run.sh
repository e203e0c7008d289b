#!/usr/bin/env bash
# Session 14 call f (through scripts/device-run.sh): tests/fixtures/gpu/mbarrier_hang.cu (a count-2
# mbarrier) with more lanes of one warp arriving at one instruction than the phase's pending count
# (lanes32: 32 lanes), exactly as many (lanes2), and one lane of each of two warps (warps2). The
# emulator (since this session) calls the first ub/over-arrival and passes the other two.
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/out}
for f in lanes32 lanes2 warps2; do
  echo "== $f.cu on the GPU"
  wsoracle $f.cu --timeout 10 2>&1 | grep -E "^(verdict|signature|timings):|^  .*(error|failure)"
done 2>&1 | tee "$OUT/s14_lanes.log"
