#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh): the same wsfuzz campaign (the Hopper reference
# kernels, every injector, --repeat 3, -j16, one GPU) with --runs-per-gpu 1 and then 4, each with
# its own empty build cache so that both pay for their builds; then `wsfuzz compare` of the two
# databases (the same mutants: do the verdicts agree?).
#   bash scripts/device-run.sh bench/jobs/h200_fuzz_runs_per_gpu.sh
# Each campaign stops at 240 s (SIGINT; its rate is then what it judged by then). Writes
# $OUT/fuzz-rpg/{r1,r4}.log, compare.txt and summary.tsv (runs per GPU, mutants, wall, rate).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}/fuzz-rpg
mkdir -p $OUT
RUNS=${RUNS:-"1 4"}
K=kernels/tma_pipeline_sm90.cu,kernels/ws_gemm_sm90.cu,kernels/ws_attention_sm90.cu,kernels/ws_cluster_pdl_sm90.cu
printf 'runs_per_gpu\tmutants\twall_s\tmutants_per_min\n' > $OUT/summary.tsv
for r in $RUNS; do
  D=/tmp/fuzz-r$r; rm -rf $D; mkdir -p $D
  s=$(date +%s)
  timeout -s INT 240 wsfuzz --kernels $K --injectors all --repeat 3 -j 16 --gpus 1 --runs-per-gpu $r \
    --db $D/c.sqlite --cache-dir $D/cache --no-sanitizer > $OUT/r$r.log 2>&1
  w=$(( $(date +%s) - s ))
  n=$(python3 -c "import sqlite3;print(sqlite3.connect('$D/c.sqlite').execute('select count(*) from verdicts').fetchone()[0])")
  printf '%s\t%s\t%s\t%s\n' $r $n $w $(python3 -c "print(round($n*60/$w,1))") >> $OUT/summary.tsv
  tail -3 $OUT/r$r.log
done
set -- $RUNS
wsfuzz compare /tmp/fuzz-r$1/c.sqlite /tmp/fuzz-r$2/c.sqlite --labels r$1,r$2 > $OUT/compare.txt 2>&1
head -60 $OUT/compare.txt
cat $OUT/summary.tsv
