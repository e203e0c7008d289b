#!/usr/bin/env bash
# Session 7, issue 6: a ground-truth retention sample on the H200 in bounded time. A tma_pipeline
# campaign (every injector, 1 repeat; SHARD=i/N for a part of it, empty for all of it) judged on
# the GPU, then --reduce on its detected mutants, each reduction stopped at --reduce-budget with its
# best program. REDUCE_BACKEND=emu: the reductions judge their candidates on the CPU emulator and
# each reduced program is judged on the GPU at the end (wsfuzz --reduce-backend). GPUS is wsfuzz's
# --gpus list: one reduction runs per entry at once (0,0,0,1,1,1: six, three per GPU).
# VISIBLE=1 restricts the run to that GPU (CUDA_VISIBLE_DEVICES); REDUCE_BACKEND=none reduces on the
# campaign's backend (call c2 ran an earlier form of this script, the same as GPUS=1 VISIBLE=1 CORES=16-31 JOBS=16 RJOBS=16 SHARD=1/4
# REDUCE_BACKEND=none LIMIT=470, beside a reduction on the other half).
#   GPUS=0,0,0,1,1,1 CORES=0-31 JOBS=32 RJOBS=5 BUDGET=100 LIMIT=540 SHARD= REDUCE_BACKEND=emu
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
SHARD=${SHARD:-}
BUDGET=${BUDGET:-100}
GPUS=${GPUS:-0,0,0,1,1,1}
CORES=${CORES:-0-31}
JOBS=${JOBS:-32}
RJOBS=${RJOBS:-5}
RB=${REDUCE_BACKEND:-emu}
D=/tmp/r7; rm -rf $D; mkdir -p $D
shard=(); [ -n "$SHARD" ] && shard=(--shard $SHARD)
rb=(); [ "$RB" != none ] && rb=(--reduce-backend $RB)
[ -n "${VISIBLE:-}" ] && export CUDA_VISIBLE_DEVICES=$VISIBLE
{
  echo "== retention $(date -u +%FT%TZ) cores=$CORES gpus=$GPUS shard=${SHARD:-all} budget=${BUDGET}s reduce-backend=$RB"
  t0=$(date +%s)
  WSREDUCE_CACHE=/tmp/wsr-cache-r7 timeout -s INT ${LIMIT:-540} taskset -c $CORES \
    wsfuzz --kernels kernels/tma_pipeline_sm90.cu --injectors all --repeat 1 -j $JOBS --gpus $GPUS --timeout 10 "${shard[@]}" \
    --db $D/r.sqlite --corpus $D/corpus --no-sanitizer --reduce --reduce-jobs $RJOBS --reduce-budget $BUDGET \
    "${rb[@]}" > $D/r.log 2>&1
  echo "wsfuzz rc=$? wall_s=$(( $(date +%s) - t0 ))"
  grep -E "planned|baseline|reducing|reduced|stopped" $D/r.log | head -60
  wsfuzz report $D/r.sqlite -o $D/report > /dev/null 2>&1
  sed -n '/## Reductions/,/## Time spent/p' $D/report.md
} 2>&1 | tee "$OUT/s7_retention.log"
tar -C $D -czf "$OUT/s7_retention.tgz" r.sqlite r.log report.md report.html corpus 2>/dev/null
