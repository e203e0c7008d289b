#!/usr/bin/env bash
# Every sm_90a reference kernel at several shapes (a single tile, a non-square one),
# REPEAT fresh runs each with fresh random inputs; the sm_100a kernel must skip.
set -uo pipefail
REPEAT=${REPEAT:-20}
run() {  # kernel arch defines...
  local k=$1 arch=$2; shift 2
  local d=(); for x in "$@"; do d+=("-D$x"); done
  local t0=$(date +%s%N)
  local out; out=$(wsoracle kernels/$k.cu --arch $arch --repeat $REPEAT --timeout ${TIMEOUT:-10} "${d[@]}" 2>&1)
  local t1=$(date +%s%N)
  local v; v=$(echo "$out" | sed -n 's/^verdict: *//p' | head -1)
  printf "KERNEL %-18s %-60s runs=%d verdict=%s wall_s=%.1f\n" $k "${*:-default}" $REPEAT "$v" "$(( (t1 - t0) / 1000000 ))e-3"
  case "$v" in pass*) ;; *) echo "$out" | head -20 | sed 's/^/    /';; esac
}
run ws_gemm_sm90 sm_90a
run ws_gemm_sm90 sm_90a GEMM_M=128 GEMM_N=128 GEMM_K=64
run ws_gemm_sm90 sm_90a GEMM_M=384 GEMM_N=1280 GEMM_K=192
run ws_gemm_sm90 sm_90a BLOCK_N=256
run tma_pipeline_sm90 sm_90a
run tma_pipeline_sm90 sm_90a PIPE_ROWS=32
run tma_pipeline_sm90 sm_90a PIPE_ROWS=96 PIPE_COLS=128 TILE_ROWS=16
run tma_pipeline_sm90 sm_90a PIPE_ROWS=64 STAGES=1 STORE_BUFS=1 PIPE_GRID=1
run ws_attention_sm90 sm_90a
run ws_attention_sm90 sm_90a ATT_BATCH=1 ATT_HEADS=1 ATT_SEQ=128
run ws_attention_sm90 sm_90a ATT_BATCH=3 ATT_HEADS=5 ATT_SEQ=384 BLOCK_N=64 STAGES=3
run ws_attention_sm90 sm_90a STAGES=1
REPEAT=1 run ws_gemm_sm100 sm_100a
