#!/usr/bin/env bash
# bash bench/probes/s16_uninit/run.sh  (on the GPU machine): every mode x fill, one process each.
set -uo pipefail
cd "$(dirname "$0")"
B=/tmp/s16_uninit; mkdir -p $B
nvcc -O2 -arch=sm_90a -o $B/uninit uninit.cu || exit 1
echo "== s16 uninitialised-mbarrier probe $(date -u +%FT%TZ)"
for m in ${MODES:-wait1 waitloop arrive expecttx bulk bulkwait wait1p1}; do
  for f in zero ones none; do timeout 10 $B/uninit $m $f; echo "  exit $?"; done
done
