#!/usr/bin/env bash
# Session 2, part A: the 20-run kernel proof and sanitizers, the oracle's overhead.
set -uo pipefail
cd "$(dirname "$0")/../.."
bash bench/jobs/kernels_proof.sh
bash bench/jobs/oracle_overhead.sh 10 2>&1 | tee "$OUT/oracle_overhead.log"
