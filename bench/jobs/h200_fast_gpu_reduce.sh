#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh), one call: wsreduce with several candidates on the
# GPU at once (--runs-per-gpu R) and the watchdog's end mode E, on two hangs of corpus/outside/:
#   1. wsreduce's side of the duel on rownorm_nb_bug (named barrier), -j16, budget D_BUDGET;
#      C-Vise's side on the same card kind is joined here with bench/duel/report.py --join;
#   2. expect_tx_gemm_bug (368 lines, an oversized expect_tx), wsreduce --symptom hang -j16
#      --budget G_BUDGET, then its result judged on the GPU once more and its bug's construct listed.
# Carry .device/wsreduce.txz.
#   R=4 E=exit bash scripts/device-run.sh bench/jobs/h200_fast_gpu_reduce.sh
# Settings: R (default 4), E (default exit), D_BUDGET (default 230), G_BUDGET (default 230),
# PARTS (default "duel gemm").
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
R=${R:-4}; E=${E:-exit}; D_BUDGET=${D_BUDGET:-230}; G_BUDGET=${G_BUDGET:-230}
PARTS=${PARTS:-"duel gemm"}
T0=$(date +%s)
for part in $PARTS; do
  case $part in
  duel)
    WSREDUCE_FLAGS="--runs-per-gpu $R" timeout 330 bash bench/jobs/h200_duel_half.sh wsreduce \
      rownorm_nb_bug hang $D_BUDGET --watchdog-end=$E > $OUT/duel.log 2>&1
    echo "duel done at $(( $(date +%s) - T0 )) s"
    ;;
  gemm)
    D=/tmp/fast-gemm; rm -rf $D; mkdir -p $D $OUT/gemm
    cp corpus/outside/expect_tx_gemm_bug.cu $D/
    s=$(date +%s)
    (cd $D && timeout 330 wsreduce expect_tx_gemm_bug.cu --symptom hang -j16 --budget $G_BUDGET \
       --runs-per-gpu $R --watchdog-end=$E -l cuda) > $OUT/gemm/wsreduce.log 2>&1
    echo "rc=$? wall_s=$(( $(date +%s) - s ))" >> $OUT/gemm/wsreduce.log
    cp $D/expect_tx_gemm_bug.min.cu $D/expect_tx_gemm_bug.min.md $OUT/gemm/ 2>/dev/null
    if [ -f $D/expect_tx_gemm_bug.min.cu ]; then
      f=$D/expect_tx_gemm_bug.min.cu
      echo "non-blank lines: $(grep -c '[^[:space:]]' $f)" > $OUT/gemm/result.txt
      timeout 60 wsoracle $f --backend gpu --timeout 20 -l cuda >> $OUT/gemm/result.txt 2>&1
      grep -n -E "expect_tx|cp\.async\.bulk|mbarrier\.init|try_wait" $f > $OUT/gemm/construct.txt
    fi
    echo "gemm done at $(( $(date +%s) - T0 )) s"
    tail -3 $OUT/gemm/wsreduce.log; cat $OUT/gemm/result.txt 2>/dev/null | grep -E '^(non-blank|verdict|signature)'
    ;;
  esac
done
grep -E '^\|' $OUT/duel-rownorm_nb_bug-wsreduce/summary.md 2>/dev/null | head -8
