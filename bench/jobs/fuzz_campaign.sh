#!/usr/bin/env bash
# Issue 6 on the H200: a wsfuzz campaign over the Hopper reference kernels, every injector,
# within a wall-clock budget (an interrupted campaign resumes: the same command goes on),
# then the report. DB and report come back in $OUT/campaign.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
BUDGET=${BUDGET:-240}
REPEAT=${REPEAT:-3}
KERNELS=${KERNELS:-"kernels/tma_pipeline_sm90.cu kernels/ws_gemm_sm90.cu kernels/ws_attention_sm90.cu"}
D=/tmp/campaign; mkdir -p $D
t0=$(date +%s)
timeout -s INT $BUDGET wsfuzz --kernels "$(echo $KERNELS | tr ' ' ',')" --injectors all --repeat $REPEAT -j 16 --gpus 1 \
  --timeout 10 --db $D/campaign.sqlite --corpus $D/corpus --no-sanitizer 2>&1 | tail -40
echo "FUZZ campaign wall_s=$(( $(date +%s) - t0 )) (budget $BUDGET s; resumable)"
wsfuzz report $D/campaign.sqlite -o $D/fuzz-report 2>&1 | tail -5
head -120 $D/fuzz-report.md
tar -C $D -czf "$OUT/campaign.tgz" campaign.sqlite fuzz-report.md fuzz-report.html corpus 2>/dev/null
