#!/usr/bin/env bash
# Session 19 (issue 4), on nvidia-h200 through scripts/device-run.sh: the GPU's verdict on
# reduced programs made on the CPU with the emulator judge, RUNS times each (default 3):
#   bash scripts/device-run.sh bench/jobs/h200_s19_judge.sh FILE.cu...
# Log: $OUT/s19_judge.log. The files' harness headers are inlined (wsreduce's output stands alone).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
RUNS=${RUNS:-3}
[ $# -gt 0 ] || { echo "h200_s19_judge: name the .cu files to judge" >&2; exit 2; }
for f in "$@"; do [ -r "$f" ] || { echo "h200_s19_judge: cannot read $f" >&2; exit 2; }; done
{
  for f in "$@"; do
    for i in $(seq 1 "$RUNS"); do
      echo "== $f run $i"
      wsoracle "$f" --timeout 10 --no-cache 2>&1 | grep -E "^(verdict|signature):|WSCHECK"
    done
  done
} 2>&1 | tee "$OUT/s19_judge.log"
