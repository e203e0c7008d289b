#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh): CUTLASS's example 48 with one handoff bug inside a
# CUTLASS header (bench/cutlass/inject_tx.sh), judged by wsoracle with the watchdog (the waits
# live in headers), without it, and the unmodified example for the control; then, with
# REDUCE_BUDGET set (at most about 250 s: the judgments take the rest of a call), the bug
# version reduced with `wsreduce --symptom hang`.
#   bash scripts/device-run.sh bench/jobs/h200_cutlass_header_hang.sh
# Carry .device/wsreduce.txz and .device/cutlass.txz (bench/cutlass/pack.sh). Writes
# $OUT/judge.tsv (case, verdict, signature, wall), $OUT/judge/*.txt, and $OUT/reduce/.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
T=/tmp/cutlass; rm -rf $T; mkdir -p $T $OUT/judge
tar -C $T -xJf .device/cutlass.txz
C=$T/cutlass-4.2.0.0
bash bench/cutlass/inject_tx.sh $C/include $T/bug/include || exit 2
diff -r $C/include $T/bug/include > $OUT/injected.diff
W=$T/work; mkdir -p $W
cp $C/examples/48_hopper_warp_specialized_gemm/48_hopper_warp_specialized_gemm.cu $W/ex48.cu
common=(--arch sm_90a -I $C/tools/util/include -I $C/examples/common --nvcc-flag=--expt-relaxed-constexpr)
printf 'case\tverdict\tsignature\twall_s\n' > $OUT/judge.tsv
judge() {  # NAME INCLUDE [flags...]
  local name=$1 inc=$2; shift 2
  local s=$EPOCHREALTIME
  (cd $W && wsoracle ex48.cu -I $inc "${common[@]}" "$@") > $OUT/judge/$name.txt 2>&1
  local w=$(awk -v a=$s -v b=$EPOCHREALTIME 'BEGIN { printf "%.1f", b - a }')
  printf '%s\t%s\t%s\t%s\n' $name "$(sed -n 's/^verdict: *//p' $OUT/judge/$name.txt)" \
    "$(sed -n 's/^signature: *//p' $OUT/judge/$name.txt)" $w >> $OUT/judge.tsv
}
judge ok $C/include --timeout 60
judge bug $T/bug/include --timeout 60
judge bug-no-watchdog $T/bug/include --timeout 20 --no-watchdog
cat $OUT/judge.tsv
[ -n "${REDUCE_BUDGET:-}" ] || exit 0
mkdir -p $OUT/reduce
s=$(date +%s)
(cd $W && timeout -s INT $((REDUCE_BUDGET + 120)) wsreduce ex48.cu --symptom hang -j16 \
  --budget $REDUCE_BUDGET -I $T/bug/include "${common[@]}" --timeout 60) > $OUT/reduce/ex48.log 2>&1
echo "rc=$? wall_s=$(($(date +%s) - s))" >> $OUT/reduce/ex48.log
cp $W/ex48.min.cu $W/ex48.min.md $OUT/reduce/ 2>/dev/null
gzip -c $W/ex48.min.trace.jsonl > $OUT/reduce/ex48.trace.jsonl.gz 2>/dev/null
tail -15 $OUT/reduce/ex48.log
