#!/usr/bin/env bash
# Session 7: two jobs side by side on nvidia-h200-x2, one per half (16 cores + 1 GPU each):
# HALF0's reductions (h200x2_s6_reduce.sh: HALF0, BUDGET, NAME) on cores 0-15 / GPU 0, and issue 6's
# retention sample (h200x2_s7_retention.sh: SHARD, RBUDGET, LIMIT) on cores 16-31 / GPU 1.
set -uo pipefail
cd "$(dirname "$0")/../.."
HALF1=" " bash bench/jobs/h200x2_s6_reduce.sh > /dev/null 2>&1 &
BUDGET=${RBUDGET:-100} GPUS=1 VISIBLE=1 CORES=16-31 JOBS=16 RJOBS=16 SHARD=${SHARD:-1/4} REDUCE_BACKEND=none \
  bash bench/jobs/h200x2_s7_retention.sh > /dev/null 2>&1 &
wait
echo "== done $(date -u +%FT%TZ)"
