#!/usr/bin/env bash
# Issue 4 on the H200: reduce the hand-injected bugs of corpus/examples/ with the symptom
# the oracle saw. Per example: the original's verdict, then wsreduce with a wall-clock budget
# (timeout -s INT: an interrupted reduction still leaves its best program), lines and tests
# before/after, and the reduced program's own verdict. Results: $OUT/reduce_gpu.log and
# $OUT/reduced.tgz (the .min.cu/.min.md pairs). Run through scripts/device-run.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
BUDGET=${BUDGET:-110}          # seconds per reduction
JOBS=${JOBS:-16}
ONLY=${ONLY:-}
W=/tmp/reduce; rm -rf $W; mkdir -p $W
now_ns() { date +%s%N; }
nb() { grep -c '[^[:space:]]' "$1"; }
{
echo "== reduce_gpu $(date -u +%FT%TZ) budget=${BUDGET}s -j$JOBS"
for src in corpus/examples/*.cu; do
  name=$(basename $src .cu)
  [ -n "$ONLY" ] && [[ ! " $ONLY " == *" $name "* ]] && continue
  cp $src $W/
  v=$(wsoracle $W/$name.cu --timeout 10 2>&1)
  detail=$(sed -n 's/^verdict: *\([a-z-]*\).*/\1/p' <<<"$v" | head -1)
  echo "ORIGINAL $name lines=$(nb $W/$name.cu) verdict=$(sed -n 's/^verdict: *//p' <<<"$v" | head -1)"
  echo "    $(sed -n 's/^signature: *//p' <<<"$v")"
  if [ "$detail" = pass ] || [ "$detail" = infra-error ]; then
    echo "SKIP $name: nothing to reduce (the bug is latent here: $detail)"; continue
  fi
  t0=$(now_ns)
  timeout -s INT $BUDGET wsreduce $W/$name.cu --symptom $detail -j$JOBS --timeout 10 > $W/$name.log 2>&1
  rc=$?
  t1=$(now_ns)
  tests=$(grep -o 'tests [0-9]*' $W/$name.log | tail -1)
  echo "REDUCED $name rc=$rc lines=$(nb $W/$name.cu)->$(nb $W/$name.min.cu) $tests wall_s=$(( (t1 - t0) / 1000000000 ))"
  grep -E "stopped|interrupted|does not show" $W/$name.log | head -2 | sed 's/^/    /'
  rv=$(wsoracle $W/$name.min.cu --timeout 10 2>&1)
  echo "    reduced verdict: $(sed -n 's/^verdict: *//p' <<<"$rv" | head -1); $(sed -n 's/^signature: *//p' <<<"$rv")"
done
} 2>&1 | tee "$OUT/reduce_gpu.log"
tar -C $W -czf "$OUT/reduced.tgz" $(cd $W && ls *.min.cu *.min.md *.log *.trace.jsonl 2>/dev/null)
