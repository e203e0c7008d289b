#!/usr/bin/env bash
# Session 6 (issue 4): session 5's job (h200x2_s5_reduce.sh) with a 5th spec field, extra wsreduce flags
# separated by commas (e.g. `C:gemm_arrival_count:emu:hang:--full-shape-first`).
# nvidia-h200-x2 cut in two halves the size of the nvidia-h200 machine (16 cores, 1 GPU each);
# each half runs its list of reductions one after the other:
#   HALF0="tag:example:backend[:symptom[:flags]] ..."  on cores 0-15, GPU 0 (symptom: default hang)
#   HALF1="tag:example:backend[:symptom[:flags]] ..."  on cores 16-31, GPU 1
# DIAG="file.cu ...": programs judged on GPU 0 first, with and without the watchdog (what the GPU
# says of a reduction the emulator called a hang).
# backend gpu: judged on the GPU; emu: judged on the emulator, --confirm gpu at the end.
# Each under BUDGET seconds of wall clock (timeout -s INT keeps the best program), then the
# reduced program judged on the GPU by wsoracle. Results: $OUT/s6_reduce_$NAME.log and .tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
BUDGET=${BUDGET:-290}
NAME=${NAME:-run}
HALF0=${HALF0:-"A:gemm_arrival_count:gpu"}
HALF1=${HALF1:-"B:gemm_arrival_count:emu"}
W0=/tmp/s6
rm -rf $W0; mkdir -p $W0
nb() { grep -c '[^[:space:]]' "$1"; }
one() {  # tag cores gpu example backend symptom flags
  local tag=$1 cores=$2 gpu=$3 ex=$4 be=$5 sym=${6:-hang} flags=${7:-}
  local W=$W0/$tag; mkdir -p $W
  cp corpus/examples/$ex.cu $W/
  local extra=(--backend $be)
  [ $be = emu ] && extra+=(--confirm gpu)
  [ -n "$flags" ] && extra+=(${flags//,/ })
  local t0=$(date +%s%N)
  CUDA_VISIBLE_DEVICES=$gpu WSREDUCE_CACHE=/tmp/wsr-cache-$tag timeout -s INT $BUDGET \
    taskset -c $cores wsreduce $W/$ex.cu --symptom $sym -j16 --timeout 10 "${extra[@]}" > $W/$ex.log 2>&1
  local rc=$? t1=$(date +%s%N)
  {
    echo "== $tag: wsreduce $ex.cu --symptom $sym -j16 --timeout 10 ${extra[*]} (cores $cores, GPU $gpu, budget ${BUDGET}s)"
    echo "RESULT $tag rc=$rc lines=$(nb $W/$ex.cu)->$(nb $W/$ex.min.cu) $(grep -o 'tests [0-9]* ([^)]*)' $W/$ex.log | tail -1) wall_s=$(( (t1 - t0) / 1000000000 ))"
    grep -E "original verdict|candidate timeout|stopped|interrupted|confirm|does not|reduced|slots" $W/$ex.log | head -10 | sed 's/^/    /'
    echo "    the reduced program on GPU $gpu:"
    CUDA_VISIBLE_DEVICES=$gpu wsoracle $W/$ex.min.cu --timeout 10 2>&1 | grep -E "^(verdict|signature):" | sed 's/^/      /'
  } > $W/summary.txt
}
half() {  # cores gpu list
  local cores=$1 gpu=$2; shift 2
  for spec in $@; do IFS=: read tag ex be sym flags <<< "$spec"; one $tag $cores $gpu $ex $be "${sym:-hang}" "$flags"; done
}
{
  echo "== h200x2_s6_reduce $(date -u +%FT%TZ) budget=${BUDGET}s half0=[$HALF0] half1=[$HALF1]"
  nproc
  for f in ${DIAG:-}; do
    echo "== diag: $f on GPU 0 (watchdog, then --no-watchdog)"
    CUDA_VISIBLE_DEVICES=0 wsoracle $f --timeout 10 2>&1 | grep -v '^\s*$' | head -30
    CUDA_VISIBLE_DEVICES=0 wsoracle $f --timeout 10 --no-watchdog 2>&1 | grep -E "^(verdict|signature)"
  done
  half 0-15 0 $HALF0 &
  half 16-31 1 $HALF1 &
  wait
  for s in $W0/*/summary.txt; do cat $s; done
  for d in $W0/*/; do echo "== $(basename $d): the reduced program"; cat $d/*.min.cu; done
} 2>&1 | tee "$OUT/s6_reduce_$NAME.log"
tar -C $W0 -czf "$OUT/s6_reduce_$NAME.tgz" $(cd $W0 && ls)
