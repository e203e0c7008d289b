#!/usr/bin/env bash
# Issue 3's proof on the H200: every sm_90a reference kernel passes at >= 3 shapes (its default,
# a single-tile shape, a non-square one; the GEMM also at BLOCK_N=256), 20 fresh runs each with
# fresh random inputs; then compute-sanitizer memcheck / racecheck / synccheck on each kernel at
# its smallest shape. Run through scripts/device-run.sh (wsoracle on PATH, $OUT set):
#   bash scripts/device-run.sh bench/jobs/kernels_proof.sh
# Writes $OUT/kernels_proof.log. About 5 minutes of GPU time.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
REPEAT=${REPEAT:-20}
TIMEOUT=${TIMEOUT:-20}
BUDGET_S=${BUDGET_S:-450}  # no sanitizer run starts after this: the device allows 600 s a command
BIN=/tmp/kernels_proof
mkdir -p "$OUT" "$BIN"
F="-std=c++17 -O2 -lineinfo -gencode=arch=compute_90a,code=sm_90a -I oracle/include"

now_ns() { date +%s%N; }
secs() { local d=$(( $2 - $1 )); printf "%d.%d" $(( d / 1000000000 )) $(( d / 100000000 % 10 )); }  # no bc there
T_START=$(now_ns)

# kernel|defines (space-separated NAME=VALUE; "default" for none)
CONFIGS=(
  "ws_gemm_sm90|default"
  "ws_gemm_sm90|GEMM_M=128 GEMM_N=128 GEMM_K=64"
  "ws_gemm_sm90|GEMM_M=384 GEMM_N=1280 GEMM_K=192"
  "ws_gemm_sm90|BLOCK_N=256"
  "tma_pipeline_sm90|default"
  "tma_pipeline_sm90|PIPE_ROWS=32"
  "tma_pipeline_sm90|PIPE_ROWS=96 PIPE_COLS=128 TILE_ROWS=16"
  "tma_pipeline_sm90|PIPE_ROWS=64 STAGES=1 STORE_BUFS=1 PIPE_GRID=1"
  "ws_attention_sm90|default"
  "ws_attention_sm90|ATT_BATCH=1 ATT_HEADS=1 ATT_SEQ=128"
  "ws_attention_sm90|ATT_BATCH=3 ATT_HEADS=5 ATT_SEQ=384 BLOCK_N=64 STAGES=3"
  "ws_attention_sm90|STAGES=1"
)
# The smallest shape of each kernel, for compute-sanitizer.
SMALLEST=(
  "ws_gemm_sm90|GEMM_M=128 GEMM_N=128 GEMM_K=64"
  "tma_pipeline_sm90|PIPE_ROWS=32"
  "ws_attention_sm90|ATT_BATCH=1 ATT_HEADS=1 ATT_SEQ=128"
)

dflags() { [ "$1" = default ] && return; for x in $1; do printf -- "-D%s " "$x"; done; }

{
echo "== kernels_proof $(date -u +%FT%TZ) repeat=$REPEAT timeout=${TIMEOUT}s"
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
nvcc --version | tail -1
compute-sanitizer --version | head -2 | tail -1

# ---- 1. every build at once (16 cores): wsoracle's cache for the runs, nvcc for the sanitizer ----
# The warm pass hides the GPU (CUDA_VISIBLE_DEVICES empty): it only fills $WSREDUCE_CACHE, so no
# two programs ever share the GPU and no run below pays for a compile.
for c in "${CONFIGS[@]}"; do
  k=${c%%|*}; d=${c#*|}
  wsoracle kernels/$k.cu --repeat 1 --timeout 60 --env CUDA_VISIBLE_DEVICES= $(dflags "$d") >/dev/null 2>&1 &
done
for c in "${SMALLEST[@]}"; do
  k=${c%%|*}; d=${c#*|}
  nvcc $F $(dflags "$d") kernels/$k.cu -o $BIN/$k.small >$BIN/$k.small.buildlog 2>&1 &
done
wait
echo "== builds done in $(secs $T_START $(now_ns)) s"

# ---- 2. REPEAT fresh runs per (kernel, shape), one at a time on the GPU ----
n_pass=0; n_fail=0
for c in "${CONFIGS[@]}"; do
  k=${c%%|*}; d=${c#*|}
  t0=$(now_ns)
  out=$(wsoracle kernels/$k.cu --repeat $REPEAT --timeout $TIMEOUT $(dflags "$d") 2>&1)
  t1=$(now_ns)
  v=$(sed -n 's/^verdict: *//p' <<<"$out" | head -1)
  # every run's outcome, in order: "  #3 pass  512 ms" -> pass
  runs=$(sed -n 's/^  #[0-9]* \([^ ]*\) .*/\1/p' <<<"$out" | paste -sd, -)
  npass=$(grep -c '^  #[0-9]* pass ' <<<"$out")
  build=$(sed -n 's/^timings: *build \([0-9]* ms\( (cached)\)\?\).*/\1/p' <<<"$out")
  printf "KERNEL %-18s %-55s verdict=%-12s pass=%d/%d build=%s wall_s=%s\n" "$k" "$d" "${v:-none}" "$npass" "$REPEAT" \
    "${build:-?}" "$(secs $t0 $t1)"
  echo "    runs: ${runs:-none}"
  case "$v" in
    pass) n_pass=$((n_pass + 1)) ;;
    *) n_fail=$((n_fail + 1)); echo "$out" | head -40 | sed 's/^/    | /' ;;
  esac
done
echo "KERNELS summary: $n_pass of ${#CONFIGS[@]} (kernel, shape) pairs passed $REPEAT/$REPEAT, $n_fail did not"
echo "== runs done at $(secs $T_START $(now_ns)) s"

# ---- 3. compute-sanitizer on the smallest shape (evidence: TMA and named barriers give known false positives) ----
for c in "${SMALLEST[@]}"; do
  k=${c%%|*}; d=${c#*|}
  if [ ! -x $BIN/$k.small ]; then
    echo "SANITIZER $k ($d): the build failed"; tail -20 $BIN/$k.small.buildlog | sed 's/^/    | /'; continue
  fi
  for tool in memcheck racecheck synccheck; do
    if (( ($(now_ns) - T_START) / 1000000000 > BUDGET_S )); then
      echo "SANITIZER $k $tool: SKIPPED, the job is past its ${BUDGET_S} s budget"; continue
    fi
    t0=$(now_ns)
    log=$BIN/$k.$tool.log
    timeout -s KILL 90 compute-sanitizer --tool $tool --print-limit 20 $BIN/$k.small >$log 2>&1
    rc=$?
    t1=$(now_ns)
    summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $log | tail -1)
    printf "SANITIZER %-18s %-10s rc=%d %s wall_s=%s (%s)\n" "$k" "$tool" $rc "${summary:-no summary line}" \
      "$(secs $t0 $t1)" "$d"
    tail -40 $log | sed 's/^/    | /'
  done
done
echo "== kernels_proof done in $(secs $T_START $(now_ns)) s"
} 2>&1 | tee "$OUT/kernels_proof.log"
