#!/usr/bin/env bash
# wsreduce against C-Vise on one input: the same judge, the same machine, the same jobs, the
# same wall time, one after the other.
#
#   bash bench/duel.sh FILE.cu --symptom S [--backend gpu|emu] [-j N] [--budget SECONDS]
#                      [--out DIR] [--same-script] [-- FLAG...]
#
#   --symptom S     compile-error | hang | crash | wrong | slow | flaky | pass (required)
#   --backend B     passed to wsoracle and wsreduce (default: theirs, auto)
#   -j N            parallel tests for each tool: wsreduce -jN, cvise -n N (default: nproc)
#   --budget S      seconds for each tool (default 300); see "Wall time" below
#   --out DIR       where everything goes (default $OUT/duel-<stem> when $OUT is set, as on the
#                   GPU machine, else ./duel-<stem>-<UTC time>)
#   --same-script   wsreduce is driven by the duel's test script (--test) instead of its own
#                   oracle: the two tools then differ in the search alone
#   --only TOOL     wsreduce or cvise: run that side alone (the GPU machine's carry limit holds
#                   C-Vise or wsreduce, not both); C-Vise alone gets --budget as its limit. Join
#                   two such halves with `python3 bench/duel/report.py DIR --join OTHER_DIR`.
#   -- FLAG...      further oracle flags (--timeout 10, -DN=64, --policy matrix, ...) given to
#                   wsoracle and wsreduce alike
#
# Environment: WSR (an install tree: $WSR/bin is searched first), CVISE_TIMEOUT (C-Vise's
# --timeout per test, default 120), WSREDUCE_FLAGS (further flags for wsreduce alone, e.g.
# "--runs-per-gpu 4": its search, not the judge both tools share).
#
# Examples:
#   bash bench/duel.sh tests/fixtures/reduce/ptxas_error.cu --symptom compile-error -j 2 --budget 90
#   bash bench/duel.sh corpus/examples/gemm_arrival_count.cu --symptom hang --backend emu \
#        -j 16 --budget 270 -- --timeout 10
#
# The judge. The original is judged once with wsoracle (the given backend and flags); a program
# that does not show S is refused. DIR/test.sh is then the one judge of both tools: wsoracle on
# the candidate with the same flags, interesting iff the verdict's symptom is S (for
# compile-error, also the original's detail, e.g. compile-error/ptxas) and the signature is the
# original's. That is wsreduce's own rule for --symptom S, so wsreduce runs on its oracle by
# default; C-Vise runs the script (no argument: the candidate is ./<name> in its folder, as
# C-Vise wants; wsreduce --test passes the path as $1).
#
# Wall time. wsreduce runs first with --budget S: its search stops S seconds after the
# original's judgment and the best program is then finished (at most 60 s more). C-Vise then
# gets max(S, wsreduce's whole wall time) and is stopped with SIGINT (timeout -s INT): C-Vise
# copies each smaller variant over its input as it goes, so the file holds its best so far
# (C-Vise keeps <name>.orig). The two never run at the same time. Each tool starts from its own
# copy of a build cache that holds only the original's judgment, so neither inherits the
# other's builds nor a warmer cache than the other.
#
# Sizes over time: every 5 s the best program so far (wsreduce's <stem>.min.cu, the input until
# the first accepted step; C-Vise's file in place) is counted in non-blank lines and tokens
# (the token regex of bench/cpu/cvise_vs_wsreduce.sh), plus one row when the tool ends.
# At the end each result is judged once more by test.sh with a cache of neither tool's builds.
#
# DIR holds: summary.md (the table, the sizes at 60 s, 120 s, ...), sizes.tsv (tool, t_s, lines,
# tokens), plot.svg (tokens over time, log y), results.tsv, duel.txt (the run's settings),
# test.sh, original.verdict.txt, <stem>.wsreduce.cu and <stem>.cvise.cu (the results) with
# their *.final-verdict.txt, wsreduce.log and cvise.log, and the folders wsreduce/ and cvise/
# where the tools ran (wsreduce's report and trace, C-Vise's .orig).
# `python3 bench/duel/report.py DIR [--linear]` draws summary.md and plot.svg again.
# Exit status: 0 when the duel ran (whoever won), 2 on bad input or a refused original, 130
# when interrupted (the running tool is stopped first, as a Ctrl-C stops it).
set -uo pipefail
R=$(cd "$(dirname "$0")/.." && pwd)
me=duel
die() { echo "$me: $*" >&2; exit 2; }

FILE="" SYM="" BACKEND="" J=$(nproc) BUDGET=300 DIR="" SAME=0 ONLY="" 
EXTRA=()
while [ $# -gt 0 ]; do
  case $1 in
    --symptom) SYM=${2:-}; shift 2 ;;
    --symptom=*) SYM=${1#*=}; shift ;;
    --backend) BACKEND=${2:-}; shift 2 ;;
    --backend=*) BACKEND=${1#*=}; shift ;;
    -j) J=${2:-}; shift 2 ;;
    -j*) J=${1#-j}; shift ;;
    --budget) BUDGET=${2:-}; shift 2 ;;
    --budget=*) BUDGET=${1#*=}; shift ;;
    --out) DIR=${2:-}; shift 2 ;;
    --out=*) DIR=${1#*=}; shift ;;
    --same-script) SAME=1; shift ;;
    --only) ONLY=${2:-}; shift 2 ;;
    --only=*) ONLY=${1#*=}; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; EXTRA=("$@"); break ;;
    -*) die "unknown option '$1' (oracle flags go after --)" ;;
    *) [ -z "$FILE" ] || die "one input only, not '$FILE' and '$1'"; FILE=$1; shift ;;
  esac
done
[ -n "$FILE" ] || die "usage: bash bench/duel.sh FILE.cu --symptom S [--backend gpu|emu] [-j N] [--budget SECONDS] [--out DIR] [--same-script] [-- FLAG...]"
[ -f "$FILE" ] || die "$FILE is not a file"
case $SYM in compile-error|hang|crash|wrong|slow|flaky|pass) ;;
  *) die "--symptom must be compile-error, hang, crash, wrong, slow, flaky or pass, not '$SYM'" ;; esac
case $BACKEND in ""|gpu|emu|auto) ;; *) die "--backend must be gpu, emu or auto, not '$BACKEND'" ;; esac
[[ $J =~ ^[1-9][0-9]*$ ]] || die "-j needs a positive count, not '$J'"
case $ONLY in ""|wsreduce|cvise) ;; *) die "--only must be wsreduce or cvise, not '$ONLY'" ;; esac
[[ $BUDGET =~ ^[1-9][0-9]*$ ]] || die "--budget needs whole seconds, not '$BUDGET'"
CT=${CVISE_TIMEOUT:-120}
[[ $CT =~ ^[1-9][0-9]*$ ]] || die "CVISE_TIMEOUT needs whole seconds, not '$CT'"

FILE=$(cd "$(dirname "$FILE")" && pwd)/$(basename "$FILE")
NAME=$(basename "$FILE")
STEM=${NAME%.*}
EXT=${NAME##*.}
[ "$EXT" != "$NAME" ] || die "$NAME needs an extension (.cu): it picks the language"
MIN=$STEM.min.$EXT
if [ -z "$DIR" ]; then
  if [ -n "${OUT:-}" ]; then DIR=$OUT/duel-$STEM; else DIR=$PWD/duel-$STEM-$(date -u +%Y%m%dT%H%M%SZ); fi
fi
mkdir -p "$DIR" || die "cannot create $DIR"
DIR=$(cd "$DIR" && pwd)
[ -z "$(ls -A "$DIR")" ] || die "$DIR is not empty: give --out a new folder"

T=$(mktemp -d "${TMPDIR:-/tmp}/duel.XXXXXX") || die "cannot make a folder under ${TMPDIR:-/tmp}"
SAMPLER="" TOOLPID=""
cleanup() {
  [ -n "$SAMPLER" ] && kill "$SAMPLER" 2>/dev/null
  rm -rf "$T"
}
# A tool runs under timeout, in a process group of its own: a Ctrl-C here is passed on to it
# (wsreduce then finishes its best program, C-Vise leaves its best in place) before the duel ends.
interrupted() {
  [ -n "$TOOLPID" ] && kill -INT "$TOOLPID" 2>/dev/null && wait "$TOOLPID"
  exit 130
}
trap cleanup EXIT
trap interrupted INT TERM

# The tools: an install tree ($WSR/bin) first, then PATH, then this checkout's build.
find_tool() {  # NAME BUILD-PATH
  if [ -n "${WSR:-}" ] && [ -x "$WSR/bin/$1" ]; then echo "$WSR/bin/$1"
  elif command -v "$1" >/dev/null 2>&1; then command -v "$1"
  elif [ -x "$R/build/$2" ]; then echo "$R/build/$2"
  fi
}
WSORACLE=$(find_tool wsoracle oracle/wsoracle)
WSREDUCE=$(find_tool wsreduce reducer/wsreduce)
CVISE=$(find_tool cvise none)
# On the GPU machine C-Vise travels packed (bench/cvise/pack.sh): unpack it when carried.
if [ -z "$CVISE" ] && [ -f "$R/.device/cvise.txz" ]; then
  tar -C "$T" -xJf "$R/.device/cvise.txz" && CVISE=$T/cvise/bin/cvise
fi
[ -n "$WSORACLE" ] || die "wsoracle is not in \$WSR/bin, on PATH or in build/oracle/"
[ -n "$WSREDUCE" ] || [ "$ONLY" = cvise ] || die "wsreduce is not in \$WSR/bin, on PATH or in build/reducer/"
[ -n "$CVISE" ] || [ "$ONLY" = wsreduce ] || die "cvise is not on PATH (nor .device/cvise.txz in the checkout)"
command -v python3 >/dev/null || die "python3 is needed for the summary and the plot"

OFLAGS=()
[ -n "$BACKEND" ] && OFLAGS+=(--backend "$BACKEND")
OFLAGS+=("${EXTRA[@]}")

now() { date +%s.%N; }
el() { awk -v a="$(now)" -v b="$1" 'BEGIN{printf "%.1f", a-b}'; }
nb() { grep -c '[^[:space:]]' "$1"; }
tokens() { grep -o -E '[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[^[:space:][:alnum:]_]' "$1" | wc -l; }
# A copy of FILE as one whole version of it: C-Vise rewrites its file in place (not atomically).
snap() {  # FILE COPY
  for _ in 1 2 3 4 5; do
    cp "$1" "$2" 2>/dev/null && [ -s "$2" ] && cmp -s "$1" "$2" && return 0
    sleep 0.2
  done
  return 0
}
row() {  # TOOL T_S FILE: one line of sizes.tsv
  snap "$3" "$T/snap.$1"
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$(nb "$T/snap.$1")" "$(tokens "$T/snap.$1")"
}
sampler() {  # TOOL FILE FALLBACK T0: a row at 0, 5, 10, ... s after T0
  local k=0 f d
  while :; do
    f=$2; [ -s "$f" ] || f=$3
    row "$1" "$(el "$4")" "$f" >> "$DIR/sizes.tsv"
    k=$((k + 1))
    d=$(awk -v t0="$4" -v k=$k -v n="$(now)" 'BEGIN{d=t0+5*k-n; if (d<0) d=0; printf "%.2f", d}')
    sleep "$d"
  done
}
stop_sampler() { kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null; SAMPLER=""; }

# The original, judged once, in a cache of its own; each tool starts from a copy of it.
mkdir -p "$T/orig" "$T/cache-seed"
cp "$FILE" "$T/orig/$NAME"
orig_out=$(cd "$T/orig" && WSREDUCE_CACHE=$T/cache-seed "$WSORACLE" "${OFLAGS[@]}" "$NAME" 2>&1)
printf '%s\n' "$orig_out" > "$DIR/original.verdict.txt"
vline=$(grep -m1 '^verdict:' <<<"$orig_out")
sig=$(sed -n 's/^signature: //p' <<<"$orig_out" | head -1)
osym=$(awk '{print $2}' <<<"$vline")
odetail=""
[[ $vline == *"("*")"* ]] && { odetail=${vline##*(}; odetail=${odetail%%)*}; }
if [ "$osym" != "$SYM" ]; then
  echo "$me: $NAME does not show $SYM: wsoracle${OFLAGS[*]:+ ${OFLAGS[*]}} says '${vline:-$(tail -1 <<<"$orig_out")}' ($DIR/original.verdict.txt)" >&2
  exit 2
fi
want_detail=""
[ "$SYM" = compile-error ] && want_detail=$odetail

# The one judge, readable, with every value written out.
{
  echo '#!/usr/bin/env bash'
  echo "# The duel's judge of $NAME. Interesting (exit 0) iff wsoracle's verdict on the candidate"
  if [ -n "$want_detail" ]; then echo "# is $SYM ($want_detail) and its signature is the original's:"
  else echo "# has the symptom $SYM and its signature is the original's:"; fi
  echo "#   $vline"
  echo "#   signature: $sig"
  echo "# C-Vise runs it with no argument in a folder holding ./$NAME; wsreduce --test gives the"
  echo "# candidate's path as \$1. DUEL_COUNT (a file) gets one line per test; DUEL_SAVE (a file)"
  echo "# gets wsoracle's whole output."
  printf 'oracle=(%s)\n' "$(printf '%q ' "$WSORACLE" "${OFLAGS[@]}")"
  printf 'want_symptom=%q\n' "$SYM"
  printf 'want_detail=%q  # empty: any detail\n' "$want_detail"
  printf 'want_signature=%q\n' "$sig"
  printf 'f=${1:-%q}\n' "$NAME"
  cat <<'EOS'
[ -n "${DUEL_COUNT:-}" ] && echo >> "$DUEL_COUNT"
out=$("${oracle[@]}" "$f" 2>&1)
[ -n "${DUEL_SAVE:-}" ] && printf '%s\n' "$out" > "$DUEL_SAVE"
v=$(grep -m1 '^verdict:' <<<"$out")
read -r _ symptom _ <<<"$v"
[ "$symptom" = "$want_symptom" ] || exit 1
if [ -n "$want_detail" ]; then
  detail=${v##*(}; detail=${detail%%)*}
  [ "$detail" = "$want_detail" ] || exit 1
fi
grep -qxF "signature: $want_signature" <<<"$out"
EOS
} > "$DIR/test.sh"
chmod +x "$DIR/test.sh"
if ! (cd "$T/orig" && WSREDUCE_CACHE=$T/cache-seed "$DIR/test.sh"); then
  echo "$me: $DIR/test.sh refuses the original on a second judgment (is its verdict flaky?)" >&2
  exit 2
fi
cp -a "$T/cache-seed" "$T/cache-wsreduce"
cp -a "$T/cache-seed" "$T/cache-cvise"

gpu=$(command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
rev=$(git -C "$R" rev-parse --short HEAD 2>/dev/null)
{
  echo "input: $FILE"
  echo "name: $NAME"
  echo "symptom: $SYM"
  echo "backend: ${BACKEND:-auto}"
  echo "oracle flags: ${OFLAGS[*]}"
  echo "jobs: $J"
  echo "budget s: $BUDGET"
  echo "same script: $SAME"
  echo "cvise timeout s: $CT"
  echo "date: $(date -u +%FT%TZ)"
  echo "machine: $(nproc) cores, ${gpu:-no GPU}, load $(cut -d' ' -f1-3 /proc/loadavg) at the start"
  echo "wsoracle: $WSORACLE"
  echo "wsreduce: $WSREDUCE${rev:+ (checkout $rev)}${WSREDUCE_FLAGS:+, with $WSREDUCE_FLAGS}"
  [ -n "$CVISE" ] && echo "cvise: $CVISE ($("$CVISE" --version 2>&1 | head -1))"
  echo "only: ${ONLY:-both}"
  echo "original verdict: $vline"
  echo "original signature: $sig"
  echo "original lines: $(nb "$FILE")"
  echo "original tokens: $(tokens "$FILE")"
  echo "command: bash bench/duel.sh $NAME --symptom $SYM${BACKEND:+ --backend $BACKEND} -j $J --budget $BUDGET$([ $SAME = 1 ] && echo " --same-script")$([ ${#EXTRA[@]} -gt 0 ] && echo " -- ${EXTRA[*]}")"
} > "$DIR/duel.txt"
printf 'tool\tt_s\tlines\ttokens\n' > "$DIR/sizes.tsv"
echo "$me: $NAME shows $vline; duel in $DIR (-j $J, budget $BUDGET s)" >&2

# wsreduce first.
wwall=0
if [ "$ONLY" != cvise ]; then
mkdir -p "$DIR/wsreduce"
cp "$FILE" "$DIR/wsreduce/$NAME"
if [ $SAME = 1 ]; then WARGS=(--test "$DIR/test.sh"); wtool=wsreduce-test; else WARGS=(--symptom "$SYM"); wtool=wsreduce; fi
: > "$DIR/wsreduce.tests"
t0=$(now)
sampler $wtool "$DIR/wsreduce/$MIN" "$DIR/wsreduce/$NAME" "$t0" & SAMPLER=$!
# A guard only: --budget ends the search and --finish-budget the finish long before it.
(cd "$DIR/wsreduce" && exec env DUEL_COUNT="$DIR/wsreduce.tests" WSREDUCE_CACHE="$T/cache-wsreduce" \
  timeout -s INT -k 60 $((BUDGET + 600)) "$WSREDUCE" "$NAME" "${WARGS[@]}" "${OFLAGS[@]}" ${WSREDUCE_FLAGS:-} -j"$J" --budget "$BUDGET") \
  > "$DIR/wsreduce.log" 2>&1 &
TOOLPID=$!
wait $TOOLPID
wrc=$?
TOOLPID=""
wwall=$(el "$t0")
stop_sampler
if [ -s "$DIR/wsreduce/$MIN" ]; then wres=$DIR/wsreduce/$MIN; else wres=$DIR/wsreduce/$NAME; fi
row $wtool "$wwall" "$wres" >> "$DIR/sizes.tsv"
cp "$wres" "$DIR/$STEM.wsreduce.$EXT"
# wsreduce's own count (its summary line); with --test, the script's runs are counted too.
wtests=$(grep -o '[0-9]* tests' "$DIR/wsreduce.log" | tail -1 | cut -d' ' -f1)
[ $SAME = 1 ] && wtests="${wtests:-?} (script runs $(wc -l < "$DIR/wsreduce.tests"))"
[ $SAME = 1 ] || rm -f "$DIR/wsreduce.tests"
echo "$me: wsreduce rc=$wrc in $wwall s: $(nb "$wres") lines, $(tokens "$wres") tokens" >&2

fi

# Then C-Vise, for as long as wsreduce had at least.
if [ "$ONLY" != wsreduce ]; then
CLIMIT=$(awk -v b="$BUDGET" -v w="$wwall" 'BEGIN{w=int(w+0.999); print (w>b)?w:b}')
mkdir -p "$DIR/cvise"
cp "$FILE" "$DIR/cvise/$NAME"
cp "$FILE" "$DIR/cvise/$NAME.orig"
: > "$DIR/cvise.tests"
t0=$(now)
sampler cvise "$DIR/cvise/$NAME" "$DIR/cvise/$NAME" "$t0" & SAMPLER=$!
(cd "$DIR/cvise" && exec env DUEL_COUNT="$DIR/cvise.tests" WSREDUCE_CACHE="$T/cache-cvise" \
  timeout -s INT -k 30 "$CLIMIT" "$CVISE" -n "$J" --timeout "$CT" "$DIR/test.sh" "$NAME") \
  > "$DIR/cvise.log" 2>&1 &
TOOLPID=$!
wait $TOOLPID
crc=$?
TOOLPID=""
cwall=$(el "$t0")
stop_sampler
row cvise "$cwall" "$DIR/cvise/$NAME" >> "$DIR/sizes.tsv"
cp "$DIR/cvise/$NAME" "$DIR/$STEM.cvise.$EXT" && chmod a+r,u+w "$DIR/$STEM.cvise.$EXT"  # C-Vise leaves its file 0600
ctests=$(wc -l < "$DIR/cvise.tests")
rm -f "$DIR/cvise.tests"
echo "$me: cvise rc=$crc in $cwall s (limit $CLIMIT s): $(nb "$DIR/cvise/$NAME") lines, $(tokens "$DIR/cvise/$NAME") tokens" >&2

fi

# Each result judged once more, by the same judge, in a cache of neither tool's builds.
judge_final() {  # TOOL RESULT -> yes | no
  mkdir -p "$T/final-$1"
  cp "$2" "$T/final-$1/$NAME"
  if (cd "$T/final-$1" && DUEL_SAVE=$DIR/$1.final-verdict.txt WSREDUCE_CACHE=$T/cache-seed "$DIR/test.sh"); then
    echo yes
  else echo no; fi
}
[ "$ONLY" != cvise ] && wkept=$(judge_final $wtool "$DIR/$STEM.wsreduce.$EXT")
[ "$ONLY" != wsreduce ] && ckept=$(judge_final cvise "$DIR/$STEM.cvise.$EXT")
{
  printf 'tool\tlines\ttokens\twall_s\ttests\tbug_kept\trc\tlimit_s\tresult\n'
  [ "$ONLY" != cvise ] && printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' $wtool "$(nb "$DIR/$STEM.wsreduce.$EXT")" \
    "$(tokens "$DIR/$STEM.wsreduce.$EXT")" "$wwall" "${wtests:-?}" "$wkept" "$wrc" "$BUDGET" "$STEM.wsreduce.$EXT"
  [ "$ONLY" != wsreduce ] && printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' cvise "$(nb "$DIR/$STEM.cvise.$EXT")" \
    "$(tokens "$DIR/$STEM.cvise.$EXT")" "$cwall" "$ctests" "$ckept" "$crc" "$CLIMIT" "$STEM.cvise.$EXT"
  true
} > "$DIR/results.tsv"
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$DIR/duel.txt"
[ "$ONLY" = wsreduce ] || [ "$ckept" = yes ] || echo "$me: C-Vise's result slipped: it no longer shows the original's verdict and signature ($DIR/cvise.final-verdict.txt)" >&2
[ "$ONLY" = cvise ] || [ "$wkept" = yes ] || echo "$me: wsreduce's result no longer shows the original's verdict and signature ($DIR/$wtool.final-verdict.txt)" >&2
python3 "$R/bench/duel/report.py" "$DIR" || echo "$me: the report failed; the raw files are in $DIR" >&2
[ -f "$DIR/summary.md" ] && cat "$DIR/summary.md"
exit 0
