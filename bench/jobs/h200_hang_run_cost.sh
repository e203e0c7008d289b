#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh): where one run of a hanging candidate spends its
# time. An outside hang is built once with the watchdog (wsoracle's cache), then its binary is
# run alone, five times at each watchdog bound (WSWATCH_MS), and the passing twin five times:
# the wall of a run is process start, context, the wait until the bound, the grace, the trap
# and the teardown.
#   bash scripts/device-run.sh bench/jobs/h200_hang_run_cost.sh [HANG_NAME] [PASS_NAME]
# Writes $OUT/hang_run_cost.tsv (program, WSWATCH_MS, run, wall_ms, exit).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
HANG=${1:-rownorm_nb_bug}; PASS=${2:-gemm_ws_ok}
C=/tmp/hang-run-cost; rm -rf $C; mkdir -p $C
progOf() {  # the binary wsoracle built for corpus/outside/$1.cu
  wsoracle corpus/outside/$1.cu --timeout 20 --cache-dir $C/$1 > $OUT/$1.verdict.txt 2>&1
  ls -t $C/$1/build/*/prog | head -1
}
ms() { date +%s%N | cut -c1-13; }
printf 'program\twswatch_ms\trun\twall_ms\texit\n' > $OUT/hang_run_cost.tsv
h=$(progOf $HANG); p=$(progOf $PASS)
for bound in 200 100 50 25; do
  for i in 1 2 3 4 5; do
    s=$(ms); WSWATCH_MS=$bound WSWATCH_QUIET=1 timeout 20 $h > /dev/null 2>&1; rc=$?; e=$(ms)
    printf '%s\t%s\t%s\t%s\t%s\n' $HANG $bound $i $((e - s)) $rc >> $OUT/hang_run_cost.tsv
  done
done
for i in 1 2 3 4 5; do
  s=$(ms); WSWATCH_QUIET=1 timeout 20 $p > /dev/null 2>&1; rc=$?; e=$(ms)
  printf '%s\t%s\t%s\t%s\t%s\n' $PASS 200 $i $((e - s)) $rc >> $OUT/hang_run_cost.tsv
done
cat $OUT/hang_run_cost.tsv
