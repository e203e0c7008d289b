#!/usr/bin/env bash
# The duel's judge of ex48_flat.cu. Interesting (exit 0) iff wsoracle's verdict on the candidate
# is compile-error (compile-error/ptxas) and its signature is the original's:
#   verdict:   compile-error  (compile-error/ptxas)
#   signature: compile-error:ptxas:ptxas error : Instruction 'setmaxnreg.inc' not supported on .target 'sm_90'
# C-Vise runs it with no argument in a folder holding ./ex48_flat.cu; wsreduce --test gives the
# candidate's path as $1. DUEL_COUNT (a file) gets one line per test; DUEL_SAVE (a file)
# gets wsoracle's whole output.
oracle=(/work/main/build/oracle/wsoracle --arch sm_90 -D__CUDA_ARCH_FEAT_SM90_ALL --nvcc-flag=--expt-relaxed-constexpr )
want_symptom=compile-error
want_detail=compile-error/ptxas  # empty: any detail
want_signature=compile-error:ptxas:ptxas\ error\ :\ Instruction\ \'setmaxnreg.inc\'\ not\ supported\ on\ .target\ \'sm_90\'
f=${1:-ex48_flat.cu}
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
