#!/usr/bin/env bash
# On the GPU machine (through the device tool), in the repository root:
#   bash scripts/device-run.sh bench/jobs/<job>.sh [args...]
# Unpacks the carried install tree, puts its tools on PATH, checks the machine, runs the
# job with $OUT (the folder that comes back, as out.tgz) and $WSR (the install tree) set.
set -uo pipefail
cd "$(dirname "$0")/.."
job=${1:?usage: device-run.sh JOB [ARGS...]}
shift
# wsoracle.txz (wsoracle alone) where the carry limit leaves no room for every tool: C-Vise's
# side of a duel (bench/duel.sh --only cvise, with .device/cvise.txz).
pack=.device/wsreduce.txz
[ -f $pack ] || pack=.device/wsoracle.txz
if [ ! -f $pack ]; then
  echo "device-run: .device/wsreduce.txz is missing: run scripts/device-pack.sh and carry it" >&2
  exit 2
fi
export WSR=/tmp/wsr/wsreduce
rm -rf /tmp/wsr && mkdir -p /tmp/wsr && tar -C /tmp/wsr -xJf $pack
export PATH="$WSR/bin:/usr/local/cuda/bin:$PATH"
export WSREDUCE_CACHE=/tmp/wsr-cache
export OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
{
  echo "== device-run $(date -u +%FT%TZ) job=$job"
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -2
  echo "== tools: $(ls "$WSR/bin" | tr '\n' ' ')"
} 2>&1 | tee "$OUT/machine.txt"
bash "$job" "$@"
rc=$?
# At most 8 files come back from $OUT: everything the job wrote goes back as one archive.
tar -C "$OUT" -czf /tmp/device-run-out.tgz . && find "$OUT" -mindepth 1 -delete &&
  mv /tmp/device-run-out.tgz "$OUT/out.tgz"
exit $rc
