#!/usr/bin/env bash
# Sets up the machine, builds kiln and runs the whole test suite:
#   1. the unit, op and CLI tests (g++ build),
#   2. the same tests under AddressSanitizer + UndefinedBehaviorSanitizer (clang build, without
#      compiler/: this is also the runtime-only build, whose tests run on the reference backend),
#   3. a short seeded run of every libFuzzer target (clang build).
# Usage: scripts/test.sh [--slow]
#   --slow  also runs the CTest tests labelled "slow" (loss falls on the big models/ networks on the
#           reference executor, minutes each) in the g++ build; without it they are left out.
set -euo pipefail
cd "$(dirname "$0")/.."
slow=0
for arg in "$@"; do
  case $arg in
    --slow) slow=1 ;;
    *) echo "usage: scripts/test.sh [--slow]" >&2; exit 2 ;;
  esac
done
scripts/setup.sh
jobs=$(nproc)

echo "== build (g++)"
scripts/build.sh build
echo "== tests"
ctest --test-dir build --output-on-failure -j "$jobs" -LE slow
if ((slow)); then
  echo "== slow tests"
  ctest --test-dir build --output-on-failure -j "$jobs" -L slow
fi

echo "== build (clang, ASan+UBSan, libFuzzer)"
CC=clang-14 CXX=clang++-14 scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON \
  -DKILN_FUZZ=ON -DKILN_BUILD_COMPILER=OFF
echo "== tests under ASan+UBSan, and fuzzing"
# The "loss falls" model tests train real-size networks on the reference executor (about 15 s each
# optimized, many minutes under ASan in a Debug build); they run in the plain pass above.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -E "loss falls" -LE slow
