#!/usr/bin/env bash
# Session 9: why 16 reductions at once ran 6-8x slower per candidate than one alone (call a:
# emulator build 1.0 s for the first candidate, 6-8 s under load; parse 1.2 s -> 4-10 s).
# The machine's CPUs and disk, the cost of a durable small write, then call a's job again for
# LIMIT s (FROM= its results: the interrupted reductions go on) while a sampler records, every 5 s,
# the CPU split from /proc/stat (user/sys/iowait), the load, wsfuzz's RSS and threads, the g++ count.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
{
echo "== s9_probe $(date -u +%FT%TZ)"
lscpu | grep -E "^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node\(s\))"
cat /sys/fs/cgroup/cpu.max 2>/dev/null | sed 's/^/cgroup cpu.max: /'
df -hT /tmp | tail -1 | sed 's/^/tmp: /'
t=$(date +%s.%N); for i in $(seq 50); do dd if=/dev/zero of=/tmp/fs.$i bs=4k count=1 oflag=dsync status=none; done
echo "50 durable 4k writes one after another: $(awk -v a=$(date +%s.%N) -v b=$t 'BEGIN{printf "%.3f", a-b}') s"
t=$(date +%s.%N); for j in $(seq 32); do ( for i in $(seq 10); do dd if=/dev/zero of=/tmp/fs.$j.$i bs=4k count=1 oflag=dsync status=none; done ) & done; wait
echo "32 x 10 durable 4k writes at once: $(awk -v a=$(date +%s.%N) -v b=$t 'BEGIN{printf "%.3f", a-b}') s"
rm -f /tmp/fs.*
} 2>&1 | tee "$OUT/s9_probe.log"
sample() {
  read -r _ u n s i w _ < /proc/stat; local pu=$u pn=$n ps=$s pi=$i pw=$w
  while sleep 5; do
    read -r _ u n s i w _ < /proc/stat
    local du=$((u+n-pu-pn)) ds=$((s-ps)) di=$((i-pi)) dw=$((w-pw)); local tot=$((du+ds+di+dw)); [ $tot -gt 0 ] || tot=1
    local p=$(pgrep -x wsfuzz | head -1)
    echo "$(date +%T) user=$((100*du/tot))% sys=$((100*ds/tot))% idle=$((100*di/tot))% iowait=$((100*dw/tot))% load=$(cut -d' ' -f1 /proc/loadavg) wsfuzz_rss=$( [ -n "$p" ] && awk '/VmRSS/{print $2/1048576 " GiB"}' /proc/$p/status) threads=$( [ -n "$p" ] && awk '/Threads/{print $2}' /proc/$p/status) gxx=$(pgrep -c cc1plus) progs=$(pgrep -c -x prog)"
    pu=$u; pn=$n; ps=$s; pi=$i; pw=$w
  done
}
sample > "$OUT/s9_sample.log" 2>&1 &
SP=$!
( sleep 70; top -b -n1 -w 200 | head -45 > "$OUT/s9_top.txt" ) &
OUT=$OUT bash bench/jobs/h200x2_s9_reduce.sh
kill $SP
cat "$OUT/s9_sample.log"
