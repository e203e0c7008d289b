#!/usr/bin/env bash
# Session 25's A/B: the same compile-error reduction with a wsreduce from before the build-only
# change (BEFORE=path, e.g. one built at 4f913e9; it made the watchdog's copy, then built the plain
# file) and the tree's build/reducer/wsreduce, alternating, each with a fresh cache. Appends to
# stdout; the traces and results are written beside this script.
set -u
OUT=$(cd "$(dirname "$0")" && pwd)
R=$(cd "$OUT/../../.." && pwd)
AFTER=$R/build/reducer/wsreduce
BEFORE=${BEFORE:-}
if [ -z "$BEFORE" ] || [ ! -x "$BEFORE" ]; then echo "ab.sh: set BEFORE to an executable wsreduce built before the change (got '${BEFORE}')" >&2; exit 2; fi
if [ ! -x "$AFTER" ]; then echo "ab.sh: $AFTER is missing: build the tree first (bash scripts/setup.sh)" >&2; exit 2; fi
tokens() { grep -o -E '[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[^[:space:][:alnum:]_]' "$1" | wc -l; }
nb() { grep -c '[^[:space:]]' "$1"; }
for which in before after before after; do
  bin=$BEFORE; [ $which = after ] && bin=$AFTER
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
