#!/usr/bin/env bash
# Configures (once) and builds kiln with ninja and ccache.
# Usage: scripts/build.sh BUILD_DIR [cmake args...] [-- ninja targets...]
# e.g.   scripts/build.sh build
#        CC=clang-14 CXX=clang++-14 scripts/build.sh build-asan -DKILN_SANITIZE=ON
#        scripts/build.sh build -- kiln kiln_example
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake_args=() targets=()
while (($#)); do
  if [[ $1 == -- ]]; then shift; targets=("$@"); break; fi
  cmake_args+=("$1"); shift
done
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
if [[ ! -f $dir/build.ninja ]]; then
  cmake -S . -B "$dir" -G Ninja "${cmake_args[@]}" >/dev/null
fi
ninja -C "$dir" "${targets[@]}"
