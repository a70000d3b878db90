#!/usr/bin/env bash
# Sets up the machine, builds kiln and runs the whole test suite:
#   1. the unit, op and CLI tests (g++ build), ONNX export checked by onnx.checker and ONNX
#      Runtime (scripts/check_onnx_export.sh, in a Python environment of its own), and the
#      installed package built against by a consumer project (scripts/check_install.sh),
#   2. the same tests under AddressSanitizer + UndefinedBehaviorSanitizer (clang build, without
#      compiler/: this is also the runtime-only build, whose tests run on the reference backend),
#   3. a short seeded run of every libFuzzer target (clang build),
#   4. the GPU bundle (scripts/gpu_bundle.sh, whose kilnrt is built without oneDNN and OpenBLAS)
#      run on the simulated device, and that kilnrt refusing a cpu module that needs oneDNN.
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
scripts/build.sh build -DKILN_WERROR=ON
echo "== tests"
ctest --test-dir build --output-on-failure -j "$jobs" -LE slow
echo "== ONNX export against onnx.checker and ONNX Runtime"
scripts/check_onnx_export.sh build
echo "== the installed package, used by a project outside the tree"
scripts/check_install.sh build
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

echo "== the GPU bundle on the simulated device"
bundle=$(mktemp -d)
trap 'rm -rf "$bundle"' EXIT
KILN_BUNDLE_ELEMENTS=1048576 KILN_BUNDLE_GEMM=256 KILN_BUNDLE_TRAIN_DIV=64 KILN_BUNDLE_CHECK_BATCH=1 \
  KILN_BUNDLE_INFER_BATCH=1 \
  scripts/gpu_bundle.sh "$bundle/out"
# The timing sections run for a few models only (the simulator's ResNet-50 runs take seconds each).
if ! KILN_BUNDLE_BACKEND=cuda-sim KILN_BUNDLE_RUNS=1 \
  KILN_BUNDLE_TIMED='^(resnet|gemm_bench|train_fcn_r_fp32|train_lstm_bf16|resnet_50_bf16_bench)$' \
  "$bundle/out/run.sh" >"$bundle/log" 2>&1; then
  cat "$bundle/log"
  exit 1
fi
sed '/^$/q' "$bundle/log"  # the checks (the timings after them say nothing on a simulator)
build/tools/kiln compile tests/data/onnx/resnet/model.onnx --input x=2x3x64x64 \
  -o "$bundle/cpu.kmod" >/dev/null
rc=0
"$bundle/out/bin/kilnrt" "$bundle/cpu.kmod" --input x=tests/data/onnx/resnet/x.npy \
  2>"$bundle/err" >/dev/null || rc=$?
if [[ $rc -ne 1 ]] || ! grep -q "needs oneDNN or OpenBLAS, and this runtime was built without" \
  "$bundle/err"; then
  echo "kilnrt without oneDNN: expected exit 1 naming a library step, got $rc:" >&2
  cat "$bundle/err" >&2
  exit 1
fi
echo "kilnrt without oneDNN refuses a cpu module that needs it: $(cat "$bundle/err")"
