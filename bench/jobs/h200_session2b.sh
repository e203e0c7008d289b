#!/usr/bin/env bash
# Session 2, part B: the watchdog (issue 5), the oracle's overhead with the new tools, and a
# first fuzz campaign within what is left of the command's 10 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUDGET_S=${WD_BUDGET:-260} REPEAT=10 bash bench/jobs/watchdog.sh > /dev/null 2>&1
bash bench/jobs/oracle_overhead.sh 10 > "$OUT/oracle_overhead.log" 2>&1
BUDGET=${FUZZ_BUDGET:-150} REPEAT=1 bash bench/jobs/fuzz_campaign.sh > "$OUT/fuzz_campaign.log" 2>&1
echo done
