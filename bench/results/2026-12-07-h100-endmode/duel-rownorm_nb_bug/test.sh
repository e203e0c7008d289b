#!/usr/bin/env bash
# The duel's judge of rownorm_nb_bug.cu. Interesting (exit 0) iff wsoracle's verdict on the candidate
# has the symptom hang and its signature is the original's:
#   verdict:   hang  (hang/barrier)
#   signature: hang:barrier:warpgroup0(named1:256/288);warpgroup1;warpgroup2
# C-Vise runs it with no argument in a folder holding ./rownorm_nb_bug.cu; wsreduce --test gives the
# candidate's path as $1. DUEL_COUNT (a file) gets one line per test; DUEL_SAVE (a file)
# gets wsoracle's whole output.
oracle=(/tmp/wsr/wsreduce/bin/wsoracle --watchdog-end=exit )
want_symptom=hang
want_detail=''  # empty: any detail
want_signature=hang:barrier:warpgroup0\(named1:256/288\)\;warpgroup1\;warpgroup2
f=${1:-rownorm_nb_bug.cu}
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
