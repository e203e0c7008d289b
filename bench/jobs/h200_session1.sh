#!/usr/bin/env bash
# Session 1 on the H200: oracle fixtures, reference kernels, SASS and speed.
set -uo pipefail
cd "$(dirname "$0")/../.."
bash bench/jobs/oracle_fixtures.sh 2>&1 | tee "$OUT/oracle_fixtures.log"
REPEAT=${REPEAT:-3} bash bench/jobs/kernels.sh 2>&1 | tee "$OUT/kernels.log"
bash bench/jobs/sass_and_speed.sh 2>&1 | tee "$OUT/sass_and_speed.log"
