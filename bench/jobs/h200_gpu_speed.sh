#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh): what a GPU reduction's step costs, in one call.
# The run cost of a hanging candidate at several watchdog bounds (h200_hang_run_cost.sh), then
# the --gather A/B on one outside hang (h200_gather_ab.sh) under BUDGET_S per side. First, the
# GPU's own answers to the attribute and occupancy queries the PTX emulator models
# (tests/fixtures/ptx/func_attrs.cu, $OUT/func_attrs.txt).
#   bash scripts/device-run.sh bench/jobs/h200_gpu_speed.sh NAME BUDGET_S
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
NAME=${1:-rownorm_nb_bug}; BUDGET=${2:-180}
nvcc -arch=sm_90a -o /tmp/func_attrs tests/fixtures/ptx/func_attrs.cu && /tmp/func_attrs > $OUT/func_attrs.txt 2>&1
cat $OUT/func_attrs.txt
bash bench/jobs/h200_hang_run_cost.sh $NAME gemm_ws_ok
bash bench/jobs/h200_gather_ab.sh $NAME hang $BUDGET
