#!/usr/bin/env bash
# One command for a fresh Debian 12 machine: install every package the project needs from
# Debian's registry, configure and build. Re-running it is cheap (apt and ninja no-op).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build git
  clang-22 libclang-22-dev llvm-22-dev                   # LibTooling that parses CUDA 13 headers (and clang-format, linked in)
  libboost1.81-dev libboost-context1.81-dev               # Boost.Process v2, Boost.Context fibers
  librange-v3-dev libgtest-dev libgmock-dev libsqlite3-dev
  libzstd-dev zlib1g-dev libedit-dev libxml2-dev libffi-dev libncurses-dev  # static LLVM link
  xz-utils cvise
  ccache                                                  # a fresh clone reuses the objects built here (CMakeLists.txt)
  slurm-wlm slurm-client munge                            # `wsfuzz slurm` and its test's private cluster (scripts/slurm-local.sh)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: nvcc was not found (expected the CUDA 13 toolkit at /usr/local/cuda); the oracle needs it" >&2
  exit 1
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build
echo "setup: built into build/ (tools: build/oracle/wsoracle)"
