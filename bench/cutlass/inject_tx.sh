#!/usr/bin/env bash
# One handoff bug in a CUTLASS header: the Hopper TMA pipeline's producer announces 16 more
# transaction bytes than its TMA loads bring (cutlass/pipeline/sm90_pipeline.hpp, both
# producer_acquire paths), so every consumer_wait on a full barrier waits forever.
#   bash bench/cutlass/inject_tx.sh CUTLASS_INCLUDE_DIR OUT_INCLUDE_DIR
# Copies the include tree and changes the copy; exits non-zero unless exactly two lines changed.
set -euo pipefail
src=${1:?CUTLASS include dir}; dst=${2:?output include dir}
rm -rf "$dst"; mkdir -p "$(dirname "$dst")"; cp -r "$src" "$dst"
f=$dst/cutlass/pipeline/sm90_pipeline.hpp
sed -i 's/arrive_and_expect_tx(params_\.transaction_bytes);/arrive_and_expect_tx(params_.transaction_bytes + 16);/' "$f"
n=$(diff "$src/cutlass/pipeline/sm90_pipeline.hpp" "$f" | grep -c '^>' || true)
[ "$n" = 2 ] || { echo "inject_tx: expected 2 changed lines in $f, got $n" >&2; exit 1; }
