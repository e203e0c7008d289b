#!/usr/bin/env bash
# Session 3, command 3, on nvidia-h200-x2. Two things at once, one per GPU:
#  GPU 0 (issue 5): the one-bug variants again (now with the CTA-barrier markers: a __syncthreads
#    in a role branch should read hang/barrier), 20 runs of every passing reference kernel at its
#    largest shape with the watchdog (no false hangs), and the instrumentation overhead on the GEMM
#    and attention benches. Log: $OUT/watchdog.log.
#  GPU 1 (issue 6): the latent mutants of command 1's campaign get their second look (the
#    compute-sanitizer tool seed 000 maps to each class); log $OUT/second_look.log, db back.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
DB=${DB:-bench/results/2026-11-29-h200-session3/campaign/A.sqlite}
S=/tmp/sl; rm -rf $S; mkdir -p $S; cp "$DB" $S/A.sqlite
( timeout -s INT ${SL_BUDGET:-400} wsfuzz --kernels kernels/tma_pipeline_sm90.cu,kernels/ws_gemm_sm90.cu,kernels/ws_attention_sm90.cu \
    --injectors all --repeat 3 -j 16 --gpus 1,1,1 --db $S/A.sqlite --corpus "" > $S/second_look.log 2>&1
  echo "second look rc=$?" >> $S/second_look.log ) &
P=$!
CUDA_VISIBLE_DEVICES=0 SKIP="0" REPEAT=20 BUDGET_S=${BUDGET_S:-380} bash bench/jobs/watchdog.sh > /dev/null 2>&1
wait $P
cp $S/second_look.log "$OUT/"
cp $S/A.sqlite "$OUT/A_second_look.sqlite"
echo done
