#!/usr/bin/env bash
# Session 9: the three mutants whose injected edit the H200's whole-campaign --reduce lost (call b,
# bench/results/2026-11-30-h200-session9/b/), reduced again here with the fixes that followed
# (the clipped-TMA note in wrong results' signatures, loop-trips leaving handoff bounds to shape),
# as on the H200: the emulator, one candidate at a time, 200 s each; two at once on 2 cores.
# Usage: bash bench/cpu/s9_fixes.sh [OUTDIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
S2=bench/results/2026-11-29-h200-session2/campaign/corpus/tma_pipeline_sm90  # the same mutants (same hash)
OUT=${1:-/tmp/s9_fixes}
rm -rf "$OUT" && mkdir -p "$OUT"
BIN=${BIN:-build/reducer/wsreduce}
one() {  # file symptom injected-text
  local f=$1 s=$2 text=$3 b; b=$(basename "$f" .cu)
  cp "$f" "$OUT/$b.cu"
  /usr/bin/time -f "%e s" "$BIN" "$OUT/$b.cu" --backend emu --symptom "$s" -j 1 --budget 200 --timeout 10 \
    > "$OUT/$b.log" 2>&1
  local rc=$?
  # the search's best program (before the harness is inlined for the report): its line count
  local best; best=$(grep -o 'lines [0-9]* -> [0-9]*' "$OUT/$b.log" | tail -1)
  # the check wsfuzz makes: the injected text (spaces aside) still in the reduced program
  if tr -d ' \n' < "$OUT/$b.min.cu" | grep -qF "$(echo "$text" | tr -d ' ')"; then k=retained; else k=LOST; fi
  echo "$b: rc=$rc search $best non-blank lines, edit $k; $(grep -E 'original verdict' "$OUT/$b.log" | cut -c11-)"
}
one $S2/oob-coordinate/0c0026311abbd10f.cu wrong "(t * TILE_ROWS) + (1 << 20)" &
one $S2/k-loop-off-by-one/4d44e249c0567ef9.cu hang "(NUM_TILES) - 1" &
wait
one bench/results/2026-11-30-cpu-s9/mutants/334aeaf0bccfcbe3-ws_gemm_sm90.cu wrong "(m0 + consumer * CONSUMER_ROWS) + (1 << 20)"
