#!/usr/bin/env bash
# What a campaign on Slurm costs besides judging, on this machine (2 cores), with the private
# cluster of scripts/slurm-local.sh:
#   1. submission: `wsfuzz slurm submit` of a job array of 2, 16, 64, 256 tasks (held, so that
#      none runs; then cancelled), its wall and sbatch's share; `wsfuzz slurm status` over those
#      tasks (squeue, then one shard database per task: none exists yet)
#   2. the merge: shard databases made from one real shard's rows (the real mutant text, verdict,
#      runs, judge_log), 1,000 mutants over 8 and 64 shards, 10,000 over 8 and 32 (every shard
#      holds the whole plan, as a task's database does: 10,000 x 32 is 6 GB); `wsfuzz merge` wall,
#      and `wsfuzz slurm status` over 32 finished shards
#   3. end to end: the test's small campaign (8 mutants, emulator, --repeat 2) as 2 tasks on the
#      two one-CPU nodes, submit to every shard done, then merged; the same campaign as one
#      local process with -j 2 (fresh build caches both times)
# Writes bench/results/<date>-cpu-slurm/slurm_costs.log. Run it alone on the machine.
set -uo pipefail
cd "$(dirname "$0")/../.."
R=$PWD; B=$R/build; F=$B/fuzzer/wsfuzz
OUT=${OUT:-$R/bench/results/$(date -u +%F)-cpu-slurm}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/slurmcost.XXXX)
C=$W/cluster
now() { date +%s.%N; }
sec() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", b-a}'; }
K=$R/kernels/tma_pipeline_sm90.cu
CAMPAIGN=(--kernels "$K" --injectors arrival-count,k-loop-off-by-one,expect-tx-bytes --backend emu --repeat 2 --corpus "")
{
t=$(now); bash scripts/slurm-local.sh start "$C" > $W/start.out || { echo "the local cluster did not start"; exit 1; }
s=$(sec $t $(now)); eval "$(cat $W/start.out)"
echo "== slurm costs $(date -u +%FT%TZ) on $(nproc) cores; $(sinfo --version); wsfuzz at $(git log -1 --format=%h)"
echo "CLUSTER start (munged, slurmctld, 2 slurmd, nodes idle): $s s"

for n in 2 16 64 256; do
  d=$W/submit-$n
  t=$(now); job=$($F slurm submit "${CAMPAIGN[@]}" --shards $n --dir $d --partition cpu --sbatch-arg=--hold 2>$W/submit.err); s=$(sec $t $(now))
  t=$(now); $F slurm status --dir $d > $W/status.out 2>&1; st=$(sec $t $(now))
  echo "SUBMIT $n tasks: job $job, wsfuzz slurm submit $s s ($(grep -o 'sbatch took [0-9.]* s' $W/submit.err)); status $st s ($(grep -c ' pending ' $W/status.out) pending)"
  scancel "$job"
done

# Shards from one real shard: the small campaign as one process into one database.
WSREDUCE_CACHE=$W/cache0 $F "${CAMPAIGN[@]}" --db $W/real.sqlite -j 2 > $W/real.log 2>&1
python3 - "$W" <<'EOF'
import hashlib, os, sqlite3, sys, json, shutil
w = sys.argv[1]
src = sqlite3.connect(os.path.join(w, "real.sqlite"))
m = src.execute("SELECT kernel, injector, site, note, line, edits, arch, expected, runtime, created_at, text FROM mutants LIMIT 1").fetchone()
hv = src.execute("SELECT hash FROM verdicts LIMIT 1").fetchone()[0]
v = src.execute("SELECT symptom, detail, signature, expected_match, infra, site_executed, static_check, static_why, verdict_json, gpu, build_ms, wall_ms, judged_at FROM verdicts WHERE hash = ?", (hv,)).fetchone()
runs = src.execute("SELECT idx, symptom, detail, signature, exit_code, signal, timed_out, wall_ms FROM runs WHERE hash = ?", (hv,)).fetchall()
schema = [r[0] for r in src.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
plans = src.execute("SELECT kernel, kernel_hash, injector, sites FROM plans").fetchall()
print("SYNTH from one real mutant: text %d bytes, verdict_json %d bytes, %d runs" % (len(m[10]), len(v[8]), len(runs)))
for total, shards in ((1000, (8, 64)), (10000, (8, 32))):
    hashes = [hashlib.sha256(("m%d" % k).encode()).hexdigest() for k in range(total)]
    for n in shards:
        d = os.path.join(w, "merge-%d-%d" % (total, n))
        os.makedirs(d)
        dbs = []
        for i in range(n):
            db = sqlite3.connect(os.path.join(d, "shard-%d.sqlite" % i))
            for s in schema: db.execute(s)
            db.executemany("INSERT INTO plans VALUES (?,?,?,?)", plans)
            db.execute("INSERT INTO sessions(command, pid, shard, started_at, ended_at, wall_s, judged) VALUES ('synthetic', 1, ?, '', '', 0, 0)", ("%d/%d" % (i, n),))
            dbs.append(db)
        for k, h in enumerate(hashes):
            for i, db in enumerate(dbs):  # every shard plans every mutant
                db.execute("INSERT INTO mutants VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", (h, m[0], m[1], k, m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10]))
            own = dbs[int(h[:15], 16) % n]
            own.execute("INSERT INTO verdicts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", (h,) + tuple(v))
            own.executemany("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?)", [(h,) + tuple(r) for r in runs])
            own.execute("INSERT INTO judge_log VALUES (?, 1, '')", (h,))
        for db in dbs:
            db.commit(); db.close()
        json.dump({"format": "wsfuzz-slurm-campaign-1", "job_name": "wsfuzz-synthetic", "shards": n,
                   "script": "none", "plan": [list(p[:3]) for p in plans], "jobs": []}, open(os.path.join(d, "campaign.json"), "w"))
        print("SYNTH %d mutants in %d shards: %.0f MB" % (total, n, sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) / 1e6))
EOF
for spec in 1000:8 1000:64 10000:8 10000:32; do
    total=${spec%:*}; n=${spec#*:}
    d=$W/merge-$total-$n
    t=$(now); $F merge $W/merged-$total-$n.sqlite --dir $d > $W/merge.out 2>&1; s=$(sec $t $(now))
    echo "MERGE $total mutants from $n shards: $s s; $(grep -o 'merged .*' $W/merge.out); $(du -m $W/merged-$total-$n.sqlite | cut -f1) MB"
    rm -f $W/merged-$total-$n.sqlite
done
for spec in 1000:64 10000:32; do
  total=${spec%:*}; n=${spec#*:}
  t=$(now); $F slurm status --dir $W/merge-$total-$n > $W/status.out 2>&1; s=$(sec $t $(now))
  echo "STATUS over $n shard databases of $total mutants (squeue, then each database): $s s; $(grep -o 'summary: .*' $W/status.out)"
done
rm -rf $W/merge-*

# End to end, then the same campaign as one process.
d=$W/e2e
t=$(now)
WSREDUCE_CACHE=$W/cache1 $F slurm submit "${CAMPAIGN[@]}" --shards 2 --dir $d --partition cpu > /dev/null 2>&1
WSREDUCE_CACHE=$W/cache1 $F slurm status --dir $d --wait > $W/e2e.out 2>&1
done_s=$(sec $t $(now))
t=$(now); $F merge $W/e2e.sqlite --dir $d > $W/e2e-merge.out 2>&1; ms=$(sec $t $(now))
echo "E2E 8 mutants, 2 tasks on 2 one-CPU nodes: submit to all done $done_s s; merge $ms s; $(grep -o 'summary: .*' $W/e2e.out)"
for i in 0 1; do
  echo "    task $i: $(sqlite3 $d/shard-$i.sqlite "SELECT (SELECT COUNT(*) FROM verdicts) || ' mutants judged in ' || ROUND((SELECT SUM(wall_s) FROM sessions), 1) || ' s of session wall'")"
done
t=$(now); WSREDUCE_CACHE=$W/cache2 $F "${CAMPAIGN[@]}" --db $W/local.sqlite -j 2 > $W/local.log 2>&1; ls=$(sec $t $(now))
echo "LOCAL the same campaign, one process, -j 2: $ls s"
echo "SAME verdicts: $(sqlite3 $W/e2e.sqlite "ATTACH '$W/local.sqlite' AS l; SELECT COUNT(*) || ' of ' || (SELECT COUNT(*) FROM main.verdicts) FROM main.verdicts a JOIN l.verdicts b USING(hash) WHERE a.detail = b.detail")"

bash scripts/slurm-local.sh stop "$C" && echo "CLUSTER stopped, no daemon left"
} 2>&1 | tee "$OUT/slurm_costs.log"
rm -rf "$W"
