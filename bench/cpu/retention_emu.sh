#!/usr/bin/env bash
# Issue 6 on a machine without a GPU: ground-truth retention of deeper reductions, judged on the CPU
# emulator. One mutant of each listed injector on the TMA pipeline kernel (the first site, wsfuzz
# --max-mutants 1 per injector, one database), each detected one reduced with --reduce-budget.
#   INJECTORS="arrival-count expect-tx-bytes k-loop-off-by-one cta-sync-in-role-branch" BUDGET=300
#   OUT=bench/results/<date>-cpu-s7 (retention_emu.log, the report and the reduced programs)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/retention-emu}
BUDGET=${BUDGET:-300}
INJECTORS=${INJECTORS:-"arrival-count expect-tx-bytes k-loop-off-by-one cta-sync-in-role-branch"}
D=$(mktemp -d /tmp/retention-emu.XXXX)
mkdir -p "$OUT"
{
  echo "== retention on the emulator $(date -u +%FT%TZ) cores=$(nproc) budget=${BUDGET}s injectors=[$INJECTORS]"
  for inj in $INJECTORS; do
    build/fuzzer/wsfuzz --kernels kernels/tma_pipeline_sm90.cu --injectors $inj --backend emu --repeat 1 -j $(nproc) \
      --max-mutants 1 --db $D/r.sqlite --corpus $D/corpus --reduce --reduce-budget $BUDGET 2>&1 | grep -E "^wsfuzz: (\[|reduced)"
  done
  build/fuzzer/wsfuzz report $D/r.sqlite -o $D/report > /dev/null 2>&1
  sed -n '/## Reductions/,/## Time spent/p' $D/report.md
} 2>&1 | tee "$OUT/retention_emu.log"
mkdir -p "$OUT/retention_emu"
dest=$(cd "$OUT/retention_emu" && pwd)
(cd $D/corpus && find . \( -name '*.min.cu' -o -name '*.meta.json' \) -exec cp --parents {} "$dest/" \;)
cp $D/report.md "$OUT/retention_emu/report.md"
