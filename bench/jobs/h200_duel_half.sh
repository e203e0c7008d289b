#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh): one side of bench/duel.sh on a program of
# corpus/outside/, for the machines whose carry limit does not hold C-Vise and wsreduce at once.
#   bash scripts/device-run.sh bench/jobs/h200_duel_half.sh wsreduce|cvise NAME SYMPTOM BUDGET_S [flags...]
# Carry .device/wsreduce.txz for the wsreduce side; .device/wsoracle.txz and .device/cvise.txz
# (bench/cvise/pack.sh) for C-Vise's. Writes $OUT/duel-NAME-SIDE/ (duel.sh's folder); join the
# two halves here with `python3 bench/duel/report.py WSREDUCE_DIR --join CVISE_DIR`.
# After the wsreduce side, the bug's construct in its result is listed ($OUT/construct.txt).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
SIDE=${1:?wsreduce|cvise}; NAME=${2:?NAME}; SYMPTOM=${3:?SYMPTOM}; BUDGET=${4:?BUDGET_S}; shift 4
bash bench/duel.sh corpus/outside/$NAME.cu --symptom $SYMPTOM -j 16 --budget $BUDGET \
  --only $SIDE --out $OUT/duel-$NAME-$SIDE ${1:+-- "$@"} 2>&1 | tee $OUT/duel-$NAME-$SIDE.txt
f=$(ls $OUT/duel-$NAME-$SIDE/$NAME.*.cu 2>/dev/null | head -1)
[ -n "$f" ] && grep -n -E "bar\.(sync|arrive)|expect_tx|cp\.async\.bulk|wgmma\.wait|fence\.proxy|phase" "$f" > $OUT/construct.txt
exit 0
