#!/usr/bin/env bash
# A/B: the same compile-error reduction with the binary before (watchdog copy + plain build) and after
set -u
R=/work/main; OUT=$R/bench/results/2026-12-03-cpu-s25
tokens() { grep -o -E '[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[^[:space:][:alnum:]_]' "$1" | wc -l; }
nb() { grep -c '[^[:space:]]' "$1"; }
for which in before after before after; do
  bin=/tmp/wsreduce.before; [ $which = after ] && bin=$R/build/reducer/wsreduce
  W=$(mktemp -d /tmp/wsr-ab.XXXX); cp $R/tests/fixtures/reduce/ptxas_error.cu $W/
  export WSREDUCE_CACHE=$W/cache
  t0=$(date +%s.%N)
  $bin $W/ptxas_error.cu --symptom compile-error -j2 > $W/out.log 2>&1; rc=$?
  t1=$(date +%s.%N)
  tests=$(wc -l < $W/ptxas_error.min.trace.jsonl)
  printf "%-7s rc=%d wall=%.0fs lines %d->%d tokens %d->%d trace_lines=%d\n" $which $rc $(echo "$t1 - $t0" | bc) $(nb $W/ptxas_error.cu) $(nb $W/ptxas_error.min.cu) $(tokens $W/ptxas_error.cu) $(tokens $W/ptxas_error.min.cu) $tests
  tail -3 $W/out.log | sed 's/^/    /'
  cp $W/ptxas_error.min.trace.jsonl $OUT/ptxas_error_$which.$(date +%H%M%S).trace.jsonl
  cp $W/ptxas_error.min.cu $OUT/ptxas_error_$which.min.cu
  rm -rf $W
done
