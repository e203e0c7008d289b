#!/usr/bin/env bash
# The whole test suite, as CI runs it: set up (idempotent), build, then every CTest test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export WSREDUCE_CACHE="${WSREDUCE_CACHE:-$PWD/build/test-cache}"
ctest --test-dir build --output-on-failure -j2 "$@"
