#!/usr/bin/env bash
# Session 10, on nvidia-h200-x2 through scripts/device-run.sh.
#  P (issue 8): why each run is ~18% slower when two GPUs judge at once (sessions 8 and 10, CPU
#    idle): bench/probes/ctx_start.cu started N times one after the other on GPU 0 alone, then on
#    GPU 0 and GPU 1 at once (two loops), each process timed from outside, its context creation
#    and first kernel from inside.
#  R (issue 4): the GEMM hang (corpus/examples/gemm_arrival_count.cu) and the README's demo
#    (pipeline_arrival_count.cu), each on half the machine (16 cores, one GPU), -j16, judged on
#    the emulator, --budget 280 (the result finished and formatted), then judged on the GPU
#    (h200x2_s6_reduce.sh). Logs: $OUT/s10_probe.log, $OUT/s6_reduce_s10.log and .tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
N=${N:-25}
P=/tmp/p10; rm -rf $P; mkdir -p $P
nvcc -O2 -arch=sm_90a -o $P/ctx_start bench/probes/ctx_start.cu
loop() {  # gpu tag
  for i in $(seq $N); do
    local t=$(date +%s%N)
    local o=$(CUDA_VISIBLE_DEVICES=$1 $P/ctx_start)
    echo "$2 gpu=$1 wall_ms=$(( ($(date +%s%N) - t) / 1000000 )) $o"
  done
}
stats() {  # tag: medians and p90 of the process wall and the context time (no gawk there: sort)
  local w c n
  w=$(awk -v t="$1" '$1==t {split($3,a,"="); print a[2]}' $P/all.txt | sort -n); n=$(echo "$w" | grep -c .)
  c=$(awk -v t="$1" '$1==t {split($4,a,"="); print a[2]}' $P/all.txt | sort -n)
  echo "$1: $n processes, wall median $(echo "$w" | sed -n "$(( (n+1)/2 ))p") ms p90 $(echo "$w" | sed -n "$(( n*9/10 ))p") ms, context median $(echo "$c" | sed -n "$(( (n+1)/2 ))p") ms p90 $(echo "$c" | sed -n "$(( n*9/10 ))p") ms"
}
{
echo "== s10_probe $(date -u +%FT%TZ) N=$N"
nvidia-smi --query-gpu=index,name,persistence_mode,driver_version --format=csv,noheader
loop 0 warmup > /dev/null
loop 0 alone > $P/all.txt
loop 0 pair0 > $P/pair0.txt & loop 1 pair1 > $P/pair1.txt & wait
cat $P/pair0.txt $P/pair1.txt >> $P/all.txt
loop 1 alone1 >> $P/all.txt
for t in alone pair0 pair1 alone1; do stats $t; done
} 2>&1 | tee "$OUT/s10_probe.log"
cp $P/all.txt "$OUT/s10_probe_runs.txt"
BUDGET=300 NAME=s10 HALF0="A:gemm_arrival_count:emu:hang:--budget,280" HALF1="B:pipeline_arrival_count:emu:hang:--budget,280" \
  OUT=$OUT bash bench/jobs/h200x2_s6_reduce.sh > /dev/null 2>&1
grep -E "^(==|RESULT)|verdict:|signature:" "$OUT/s6_reduce_s10.log" | head -40
