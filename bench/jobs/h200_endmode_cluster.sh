#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh), one call: the watchdog's end modes at 1, 4 and 8
# concurrent judgments (h200_watchdog_end.sh), the cluster + PDL reference kernel and its
# injectors' mutants (h200_cluster_pdl.sh), then, in the time left, the remade corpus pair
# pipeline_init_in_role reduced on the PTX path and judged on the GPU (h200_ptx_emu_reduce.sh).
# Carry .device/wsreduce.txz.
#   bash scripts/device-run.sh bench/jobs/h200_endmode_cluster.sh
# Settings: LIMIT (seconds the whole job may take, default 570), M, NS, BUDGET as in
# h200_watchdog_end.sh (defaults here 12, "1 4 8", 280).
# Writes $OUT/endmode/, $OUT/cpdl/, $OUT/ptxemu/ (each job's own files) and a log per job.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
LIMIT=${LIMIT:-570}
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
mkdir -p $OUT/endmode $OUT/cpdl $OUT/ptxemu
OUT=$OUT/endmode M=${M:-12} NS=${NS:-"1 4 8"} BUDGET=${BUDGET:-280} \
  bash bench/jobs/h200_watchdog_end.sh > $OUT/endmode.log 2>&1
echo "endmode done at $(( $(date +%s) - T0 )) s"
OUT=$OUT/cpdl timeout $(( $(left) > 200 ? 200 : $(left) )) bash bench/jobs/h200_cluster_pdl.sh 5 \
  > $OUT/cpdl.log 2>&1
echo "cluster_pdl done at $(( $(date +%s) - T0 )) s"
if [ $(left) -gt 150 ]; then
  OUT=$OUT/ptxemu timeout $(( $(left) - 5 )) bash bench/jobs/h200_ptx_emu_reduce.sh \
    pipeline_init_in_role crash $(( $(left) - 90 )) > $OUT/ptxemu.log 2>&1
  echo "ptx_emu_reduce done at $(( $(date +%s) - T0 )) s"
else
  echo "ptx_emu_reduce skipped: $(left) s left" | tee $OUT/ptxemu.log
fi
cat $OUT/endmode/summary.md 2>/dev/null
grep -E '^(verdict|signature):' $OUT/cpdl/oracle.txt 2>/dev/null
cat $OUT/cpdl/verdicts.txt 2>/dev/null
tail -5 $OUT/ptxemu.log
