#!/usr/bin/env bash
# Session 6, issue 6: a ground-truth retention sample on the H200 in bounded time. One shard of the
# tma_pipeline campaign (every injector, 1 repeat, both GPUs), then --reduce on its detected mutants
# with --reduce-budget: each reduction (-j 16 on one GPU) stops at the budget with its best program,
# and the report says whether the injected edit is still in it. Run through scripts/device-run.sh.
#   SHARD=0/3 BUDGET=150 (seconds per reduction) LIMIT=480 (seconds for the whole wsfuzz run, then SIGINT)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
SHARD=${SHARD:-0/3}
BUDGET=${BUDGET:-150}
D=/tmp/r6; rm -rf $D; mkdir -p $D
{
  echo "== retention $(date -u +%FT%TZ) cores=$(nproc) shard=$SHARD budget=${BUDGET}s"
  t0=$(date +%s)
  timeout -s INT ${LIMIT:-480} wsfuzz --kernels kernels/tma_pipeline_sm90.cu --injectors all --repeat 1 -j 32 --gpus 2 --timeout 10 --shard $SHARD \
    --db $D/r.sqlite --corpus $D/corpus --no-sanitizer --reduce --reduce-budget $BUDGET > $D/r.log 2>&1
  echo "wsfuzz rc=$? wall_s=$(( $(date +%s) - t0 ))"
  grep -E "planned|baseline|reducing|reduced|stopped" $D/r.log | head -40
  wsfuzz report $D/r.sqlite -o $D/report > /dev/null 2>&1
  sed -n '/## Reductions/,/## Time spent/p' $D/report.md
} 2>&1 | tee "$OUT/s6_retention.log"
tar -C $D -czf "$OUT/s6_retention.tgz" r.sqlite r.log report.md report.html corpus 2>/dev/null
