#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh): a corpus example reduced with the CPU emulator's PTX
# path as the judge on the machine's 16 cores, the result confirmed on the GPU, as
# corpus/reduced/README.md says its pairs are made. Carry .device/wsreduce.txz.
#   bash scripts/device-run.sh bench/jobs/h200_ptx_emu_reduce.sh NAME SYMPTOM BUDGET_S
# Writes $OUT/NAME/ (the log, NAME.min.cu, NAME.min.md) and the GPU's verdict of the result.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
NAME=${1:?NAME}; SYM=${2:?SYMPTOM}; BUDGET=${3:?BUDGET_S}
D=/tmp/ptx-emu-reduce/$NAME; rm -rf $D; mkdir -p $D $OUT/$NAME
cp corpus/examples/$NAME.cu $D/
t=$(date +%s)
(cd $D && wsreduce $NAME.cu --symptom $SYM -j16 --backend emu --confirm gpu --budget $BUDGET) \
  > $OUT/$NAME/wsreduce.log 2>&1
echo "rc=$? wall_s=$(( $(date +%s) - t ))" >> $OUT/$NAME/wsreduce.log
cp $D/$NAME.min.cu $D/$NAME.min.md $OUT/$NAME/ 2>/dev/null
[ -f $D/$NAME.min.cu ] && wsoracle $D/$NAME.min.cu --backend gpu > $OUT/$NAME/gpu.verdict.txt 2>&1
tail -3 $OUT/$NAME/wsreduce.log
cat $OUT/$NAME/gpu.verdict.txt 2>/dev/null | grep -E '^(verdict|signature)'
