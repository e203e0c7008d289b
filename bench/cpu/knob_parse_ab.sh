#!/usr/bin/env bash
# The parse check's include-only preamble (session 8), A/B on this machine: the shape passes alone
# on the 548-line GEMM hang, emulator judge, -j2, a fixed budget; OLD= a wsreduce built before
# commit 75e1cf5, NEW= the current one. Compares the tests run and each test's parse time from the
# traces. Usage: OLD=/tmp/wsreduce_old NEW=build/reducer/wsreduce BUDGET=150 bash bench/cpu/knob_parse_ab.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
BUDGET=${BUDGET:-150}
for side in OLD NEW; do
  bin=${!side}
  d=$(mktemp -d /tmp/knob_ab.XXXX)
  cp corpus/examples/gemm_arrival_count.cu $d/
  t0=$(date +%s)
  WSREDUCE_CACHE=$d/cache $bin $d/gemm_arrival_count.cu --symptom hang --backend emu -j2 --passes shape,loop-trips \
    --budget $BUDGET > $d/log 2>&1
  echo "$side rc=$? wall_s=$(( $(date +%s) - t0 )) $(grep -E 'non-blank|tests' $d/log | tail -2 | tr '\n' ' ')"
  python3 - "$d/gemm_arrival_count.min.trace.jsonl" <<'PY'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
p = [r["parse_ms"] for r in rows if "parse_ms" in r]          # checks that passed: time to the loan
e = [r["ms"] for r in rows if r["detail"] == "parse-error"]    # refused by the check: the whole test
m = lambda v: statistics.mean(v) if v else 0
print(f"    tests={len(rows)} interesting={sum(r['interesting'] for r in rows)} parse-error={len(e)}"
      f" parse_ms (passed) median={statistics.median(p) if p else 0:.0f} mean={m(p):.0f}; refused mean={m(e):.0f} ms;"
      f" build_ms mean={m([r['build_ms'] for r in rows if 'build_ms' in r]):.0f}")
PY
  rm -rf $d
done
