#!/usr/bin/env bash
# wsoracle on the small GPU programs of tests/fixtures/gpu, each with its expected verdict;
# every raw run is recorded ($OUT/recorded.tgz) to become a classifier fixture.
set -uo pipefail
declare -A expect=([pass]=pass [mbarrier_hang]=hang/unknown [oob_store]=crash/illegal-address
                   [trap]=crash/launch-failure [stripes]=wrong/row-stripe [nan]=wrong/nan)
rec=/tmp/recorded; rm -rf $rec; mkdir -p $rec
ok=0; bad=0
for c in pass mbarrier_hang oob_store trap stripes nan; do
  t0=$(date +%s%N)
  wsoracle tests/fixtures/gpu/$c.cu --timeout 5 --record $rec/$c --json > $rec/$c.verdict.json
  rc=$?
  t1=$(date +%s%N)
  got=$(grep -m1 '"detail"' $rec/$c.verdict.json | sed 's/.*: "\(.*\)".*/\1/')
  echo "${expect[$c]}" > $rec/$c/expect
  if [ "$got" = "${expect[$c]}" ]; then r=OK; ok=$((ok+1)); else r=MISMATCH; bad=$((bad+1)); fi
  printf "ORACLE %-14s expected=%-22s got=%-22s exit=%d wall_s=%.2f %s\n" $c "${expect[$c]}" "$got" $rc "$(( (t1 - t0) / 1000000 ))e-3" $r
done
echo "ORACLE summary: $ok as expected, $bad mismatched"
# no process of a hung or crashed run may be left behind
echo "leftover fixture processes: $(pgrep -fc '/tmp/wsr-cache/build/' || true)"
tar -C /tmp -czf "$OUT/recorded.tgz" recorded
