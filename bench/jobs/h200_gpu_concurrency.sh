#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh): how many candidate runs one GPU sustains at once
# before each slows down, and where a candidate's time goes. One program (the outside
# named-barrier hang, its build cached after the first) is judged by N wsoracle processes at once,
# N = 1, 2, 4, 8, 16; then the outside programs that need the driver library, judged with -l cuda.
#   bash scripts/device-run.sh bench/jobs/h200_gpu_concurrency.sh
# Writes $OUT/concurrency.tsv (N, median and max wall of one judgment, judgments/s) and
# $OUT/oracle.tgz (each wsoracle output).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
W=/tmp/conc; rm -rf $W; mkdir -p $W/o
cp corpus/outside/rownorm_nb_bug.cu $W/
(cd $W && wsoracle rownorm_nb_bug.cu --timeout 20 > o/warm.txt 2>&1)  # builds once, cached
printf 'n\tmedian_s\tmax_s\tjudgments_per_s\n' > $OUT/concurrency.tsv
for n in 1 2 4 8 16; do
  s=$(date +%s.%N)
  for i in $(seq 1 $n); do
    ( a=$(date +%s.%N); cd $W && wsoracle rownorm_nb_bug.cu --timeout 20 > o/c$n.$i.txt 2>&1
      b=$(date +%s.%N); awk "BEGIN{printf \"%.2f\n\", $b - $a}" > o/c$n.$i.wall ) &
  done
  wait
  e=$(date +%s.%N)
  cat $W/o/c$n.*.wall | sort -n > $W/o/w$n
  med=$(awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}' $W/o/w$n); mx=$(tail -1 $W/o/w$n)
  printf '%s\t%s\t%s\t%s\n' $n $med $mx "$(awk "BEGIN{printf \"%.2f\", $n / ($e - $s)}")" >> $OUT/concurrency.tsv
done
cat $OUT/concurrency.tsv
grep -E "^(verdict|signature|timings)" $W/o/c1.1.txt
for p in gemm_ws_bug persistent_gemm_bug tma_xform_bug tma_xform_ok persistent_gemm_ok; do
  mkdir -p $W/$p && cp corpus/outside/$p.cu $W/$p/
  (cd $W/$p && wsoracle $p.cu --timeout 20 -l cuda > ../o/$p.txt 2>&1)
  echo "$p: $(grep -E '^(verdict|signature)' $W/o/$p.txt | tr '\n' ' ')"
done
tar -C $W -czf $OUT/oracle.tgz o
