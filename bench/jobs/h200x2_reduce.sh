#!/usr/bin/env bash
# Session 3, command 2, on nvidia-h200-x2 (32 cores, 2 GPUs). Run through scripts/device-run.sh.
# Two things at once, each on half the machine:
#  1. issue 4: the 548-line GEMM with a wrong arrival count reduced on the GPU (-j 16, BUDGET s)
#  2. issue 6: `wsfuzz --reduce` on the detected tma_pipeline mutants of command 1's campaign
#     (its database, carried in the working tree), 4 reductions at a time (2 per GPU), -j 4 each,
#     for the same budget; an interrupted reduction is recorded with its best program so far.
# Logs: $OUT/reduce_gpu.log, $OUT/fuzz_reduce.log; files in $OUT/reduced.tgz, $OUT/fuzz_reduce.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
BUDGET=${BUDGET:-500}
DB=${DB:-bench/results/2026-11-29-h200-session3/campaign/A.sqlite}
R=/tmp/fr; rm -rf $R; mkdir -p $R
cp "$DB" $R/A.sqlite
( ONLY=gemm_arrival_count BUDGET=$BUDGET JOBS=16 bash bench/jobs/reduce_gpu.sh > /dev/null 2>&1 ) &
P1=$!
t0=$(date +%s)
timeout -s INT $BUDGET wsfuzz --kernels kernels/tma_pipeline_sm90.cu --injectors all --repeat 3 -j 16 --gpus 0,0,1,1 \
  --db $R/A.sqlite --corpus $R/corpus --no-sanitizer --reduce --reduce-jobs 4 > $R/fuzz_reduce.log 2>&1
echo "fuzz --reduce rc=$? wall_s=$(( $(date +%s) - t0 ))" >> $R/fuzz_reduce.log
wsfuzz report $R/A.sqlite -o $R/A-report >> $R/fuzz_reduce.log 2>&1
sed -n '/retention/,/^## /p' $R/A-report.md >> $R/fuzz_reduce.log
wait $P1
cp $R/fuzz_reduce.log "$OUT/"
tar -C $R -czf "$OUT/fuzz_reduce.tgz" A.sqlite A-report.md corpus 2>/dev/null
echo done
