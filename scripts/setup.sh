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
  python3-pip                                             # pip download of CUTLASS's C++ tree (below): no install
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

# CUTLASS's C++ tree (include/, tools/util/include/, examples/), for the tests that flatten a real
# library program: the nvidia-cutlass wheel from PyPI, pinned and hash-checked by pip, downloaded
# (nothing is installed) and unpacked into the build tree. The wheel keeps the tree under
# cutlass_library/source/. Without a network the CUTLASS tests skip and say why.
CUTLASS_VERSION=4.2.0.0
CUTLASS_SHA256=f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6
CUTLASS_DIR=build/third_party/cutlass-$CUTLASS_VERSION
if [ ! -f "$CUTLASS_DIR/include/cutlass/cutlass.h" ]; then
  tmp=$(mktemp -d build-cutlass.XXXXXX)
  echo "nvidia-cutlass==$CUTLASS_VERSION --hash=sha256:$CUTLASS_SHA256" >"$tmp/req.txt"
  if python3 -m pip download -q --no-deps --only-binary=:all: --require-hashes -r "$tmp/req.txt" \
       -d "$tmp" && python3 -m zipfile -e "$tmp"/nvidia_cutlass-$CUTLASS_VERSION-*.whl "$tmp/whl"; then
    mkdir -p build/third_party
    rm -rf "$CUTLASS_DIR"
    mv "$tmp/whl/cutlass_library/source" "$CUTLASS_DIR"
    echo "setup: CUTLASS $CUTLASS_VERSION's C++ tree in $CUTLASS_DIR"
  else
    echo "setup: could not download nvidia-cutlass $CUTLASS_VERSION from PyPI; the CUTLASS tests will skip" >&2
  fi
  rm -rf "$tmp"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build
echo "setup: built into build/ (tools: build/oracle/wsoracle)"
