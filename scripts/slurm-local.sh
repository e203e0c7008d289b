#!/usr/bin/env bash
# A private Slurm cluster on this machine, for trying and testing `wsfuzz slurm`: munged with its
# own key and socket, slurmctld, and two slurmd on localhost (nodes n1 and n2, one CPU each, on
# their own ports) in one partition `cpu`, every file under DIR. No accounting storage: sacct does
# not work there, squeue, scontrol and the shard databases do.
#
#   scripts/slurm-local.sh start DIR    # prints `export SLURM_CONF=DIR/slurm.conf` when it is up
#   scripts/slurm-local.sh status DIR   # sinfo and squeue of that cluster
#   scripts/slurm-local.sh stop DIR     # cancels its jobs, stops its daemons, none left behind
#   scripts/slurm-local.sh env DIR      # the export line again
#
# Exit status of start: 0 up; 77 it cannot start on this machine (Slurm or munge not installed,
# not root: the daemons run as root here), the reason in one line on stderr; 1 the daemons were
# started and did not come up (the reason and the logs' last lines on stderr; nothing is left
# running). Slurm 22.05 (Debian 12's slurm-wlm) reads the configuration written here.
set -uo pipefail

cmd="${1:-}"
dir="${2:-}"
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: $0 start|stop|status|env DIR" >&2
  exit 2
fi
mkdir -p "$dir" 2>/dev/null
dir="$(cd "$dir" 2>/dev/null && pwd)" || { echo "slurm-local: cannot use $2" >&2; exit 2; }
conf="$dir/slurm.conf"
export SLURM_CONF="$conf"

say() { echo "slurm-local: $*" >&2; }

alive() {  # alive PIDFILE: the pid in it names a live process
  [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# The pids this cluster's daemons wrote, one a line.
daemon_pids() {
  local f
  for f in "$dir"/slurmctld.pid "$dir"/slurmd-n1.pid "$dir"/slurmd-n2.pid "$dir"/munged.pid; do
    alive "$f" && cat "$f"
  done
}

# Ends a pid: SIGTERM, then SIGKILL after 10 s.
end_pid() {
  local p="$1" i
  kill "$p" 2>/dev/null || return 0
  for i in $(seq 100); do
    kill -0 "$p" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -9 "$p" 2>/dev/null
}

stop() {
  if [ -f "$conf" ] && alive "$dir/slurmctld.pid"; then
    # Jobs first: slurmstepd and the tasks it runs outlive a slurmd that is shut down.
    scancel --partition=cpu 2>/dev/null
    local i
    for i in $(seq 150); do
      [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.2
    done
    scontrol shutdown >/dev/null 2>&1
    for i in $(seq 100); do
      alive "$dir/slurmctld.pid" || alive "$dir/slurmd-n1.pid" || alive "$dir/slurmd-n2.pid" || break
      sleep 0.1
    done
  fi
  local p
  for p in $(daemon_pids); do end_pid "$p"; done
  # A job step whose slurmd is gone: its slurmstepd names this cluster's spool folder.
  for p in $(pgrep -f "slurmstepd" 2>/dev/null); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_CONF=$conf"; then
      end_pid "$p"
    fi
  done
  if [ -s "$dir/munge.dir" ]; then
    rm -rf "$(cat "$dir/munge.dir")"
    rm -f "$dir/munge.dir"
  fi
  rm -f "$dir"/*.pid
}

port_free() {  # nothing listens on 127.0.0.1:$1
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

start() {
  local t
  for t in slurmctld slurmd munged sinfo squeue sbatch scontrol scancel; do
    if ! command -v "$t" >/dev/null 2>&1; then
      say "cannot start: $t is not installed (scripts/setup.sh installs slurm-wlm, slurm-client and munge)"
      exit 77
    fi
  done
  if [ "$(id -u)" -ne 0 ]; then
    say "cannot start: the local cluster's daemons run as root (SlurmUser=root), and this is uid $(id -u)"
    exit 77
  fi
  if alive "$dir/slurmctld.pid" && alive "$dir/slurmd-n1.pid" && alive "$dir/slurmd-n2.pid" &&
     ! sinfo -h -N -p cpu -o '%T' 2>/dev/null | grep -qvE '^(idle|mixed|allocated|completing)$'; then
    say "already running in $dir"
    echo "export SLURM_CONF=$conf"
    exit 0
  fi
  stop  # what a killed run or start left behind
  rm -rf "$dir/state" "$dir/spool" "$dir"/*.log
  mkdir -p "$dir/state" "$dir/spool/n1" "$dir/spool/n2"

  # Three free ports in a row: the controller, n1, n2.
  local base=""
  for t in $(seq 16817 10 17817); do
    if port_free "$t" && port_free $((t + 1)) && port_free $((t + 2)); then
      base=$t
      break
    fi
  done
  if [ -z "$base" ]; then
    say "cannot start: no three free ports between 16817 and 17819 on 127.0.0.1"
    exit 77
  fi

  # munged's socket path must fit a sockaddr_un (108 bytes), and munged refuses a socket in a
  # folder that some user cannot search (each folder above it needs x for all): such a DIR gets a
  # short folder of its own under /tmp.
  local mdir="$dir" p="$dir"
  while [ -n "$p" ] && [ "$p" != "/" ]; do
    case "$(stat -c %A "$p")" in
      *x) ;;
      *) mdir="" ;;
    esac
    p="$(dirname "$p")"
  done
  if [ -z "$mdir" ] || [ ${#dir} -gt 80 ]; then
    mdir="$(mktemp -d /tmp/wsfuzz-munge.XXXXXX)"
    chmod 755 "$mdir"
    echo "$mdir" >"$dir/munge.dir"
  fi
  local sock="$mdir/munge.sock"
  if [ ! -s "$dir/munge.key" ]; then
    (umask 077 && head -c 1024 /dev/urandom >"$dir/munge.key")
  fi
  chmod 600 "$dir/munge.key"
  if ! munged --socket="$sock" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
      --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" 2>"$dir/munged.err"; then
    say "cannot start: munged failed: $(tail -n 3 "$dir/munged.err" "$dir/munged.log" 2>/dev/null | tr '\n' ' ')"
    stop
    exit 1
  fi

  cat >"$conf" <<EOF
# A private two-node cluster on localhost (scripts/slurm-local.sh): every file under $dir.
ClusterName=wsfuzzlocal
SlurmctldHost=localhost
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
SlurmUser=root
SlurmdUser=root
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
KillWait=5
MinJobAge=600
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((base + 1)) CPUs=1 State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((base + 2)) CPUs=1 State=UNKNOWN
PartitionName=cpu Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
EOF

  for t in $(seq 50); do
    [ -S "$sock" ] && break
    sleep 0.1
  done
  if ! slurmctld -f "$conf" 2>"$dir/slurmctld.err" ||
     ! slurmd -f "$conf" -N n1 2>"$dir/slurmd-n1.err" ||
     ! slurmd -f "$conf" -N n2 2>"$dir/slurmd-n2.err"; then
    say "the daemons did not start: $(cat "$dir"/*.err 2>/dev/null | tail -n 3 | tr '\n' ' ')"
    stop
    exit 1
  fi
  local states=""
  for t in $(seq 150); do
    states="$(sinfo -h -N -p cpu -o '%N=%T' 2>&1 | sort -u | tr '\n' ' ')"
    [ "$states" = "n1=idle n2=idle " ] && break
    sleep 0.2
  done
  if [ "$states" != "n1=idle n2=idle " ]; then
    say "the nodes did not come up in 30 s (sinfo: $states); slurmctld.log: $(tail -n 3 "$dir/slurmctld.log" 2>/dev/null | tr '\n' ' ')"
    stop
    exit 1
  fi
  echo "export SLURM_CONF=$conf"
}

case "$cmd" in
  start) start ;;
  stop) stop; [ -z "$(daemon_pids)" ] ;;
  status)
    if alive "$dir/slurmctld.pid"; then
      sinfo
      squeue
    else
      echo "slurm-local: not running in $dir"
      exit 1
    fi
    ;;
  env) echo "export SLURM_CONF=$conf" ;;
  *) echo "usage: $0 start|stop|status|env DIR" >&2; exit 2 ;;
esac
