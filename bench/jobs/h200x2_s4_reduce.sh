#!/usr/bin/env bash
# Session 4, on nvidia-h200-x2 cut in two halves, each the size of the nvidia-h200 machine issue 4
# names (16 cores and one GPU), run side by side: the 548-line GEMM with a wrong arrival count
# (corpus/examples/gemm_arrival_count.cu, 494 non-blank lines) reduced with --symptom hang
#   A. judged on the GPU:               cores 0-15,  GPU 0: wsreduce -j 16 --backend gpu
#   B. judged on the emulator, then confirmed on the GPU (C: the same for the 327-line pipeline example):
#                                       cores 16-31, GPU 1: wsreduce -j 16 --backend emu --confirm gpu
# each under a wall-clock budget (timeout -s INT: an interrupted reduction keeps its best program
# and says so), then the reduced program judged on the GPU by wsoracle.
# Run through scripts/device-run.sh. Results: $OUT/s4_reduce.log, $OUT/s4_reduce.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
BUDGET=${BUDGET:-300}
RUNS=${RUNS:-AB}                # A and B as above; C: B's command on the 327-line pipeline example
nb() { grep -c '[^[:space:]]' "$1"; }
one() {  # tag cores gpu example extra-args...
  local tag=$1 cores=$2 gpu=$3 NAME=$4; shift 4
  local W=/tmp/s4/$tag; rm -rf $W; mkdir -p $W
  cp corpus/examples/$NAME.cu $W/
  local t0=$(date +%s%N)
  CUDA_VISIBLE_DEVICES=$gpu WSREDUCE_CACHE=/tmp/wsr-cache-$tag timeout -s INT $BUDGET \
    taskset -c $cores wsreduce $W/$NAME.cu --symptom hang -j16 --timeout 10 "$@" > $W/$NAME.log 2>&1
  local rc=$? t1=$(date +%s%N)
  {
    echo "== $tag: wsreduce $NAME.cu --symptom hang -j16 --timeout 10 $* (cores $cores, GPU $gpu, budget ${BUDGET}s)"
    echo "RESULT $tag rc=$rc lines=$(nb $W/$NAME.cu)->$(nb $W/$NAME.min.cu) $(grep -o 'tests [0-9]* ([^)]*)' $W/$NAME.log | tail -1) wall_s=$(( (t1 - t0) / 1000000000 ))"
    grep -E "original verdict|candidate timeout|stopped|interrupted|confirm|does not|reduced" $W/$NAME.log | head -8 | sed 's/^/    /'
    echo "    the reduced program on GPU $gpu:"
    CUDA_VISIBLE_DEVICES=$gpu wsoracle $W/$NAME.min.cu --timeout 10 2>&1 | grep -E "^(verdict|signature):" | sed 's/^/      /'
  } > $W/summary.txt
}
{
  echo "== h200x2_s4_reduce $(date -u +%FT%TZ) budget=${BUDGET}s"
  nproc
  [[ $RUNS == *A* ]] && one A 0-15 0 gemm_arrival_count --backend gpu &
  [[ $RUNS == *C* ]] && one C 0-15 0 pipeline_arrival_count --backend emu --confirm gpu &
  [[ $RUNS == *B* ]] && one B 16-31 1 gemm_arrival_count --backend emu --confirm gpu &
  wait
  for t in A B C; do [ -f /tmp/s4/$t/summary.txt ] && cat /tmp/s4/$t/summary.txt; done
  for t in A B C; do [ -d /tmp/s4/$t ] && { echo "== $t: the reduced program"; cat /tmp/s4/$t/*.min.cu; }; done
} 2>&1 | tee "$OUT/s4_reduce_$RUNS.log"
tar -C /tmp/s4 -czf "$OUT/s4_reduce_$RUNS.tgz" $(cd /tmp/s4 && ls -d A B C 2>/dev/null)
