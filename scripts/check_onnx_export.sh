#!/usr/bin/env bash
# ONNX export against ONNX's own checker and ONNX Runtime: exports every network of models/
# (kiln_write_models), the PyTorch exports in tests/data/onnx (import -> export), the two
# sequence LSTMs (one a While loop, exported as an ONNX Loop) and the ONNX node suite's Loop and
# Scan with scan outputs (where ../shared/onnx-node-tests is), checks each with
# onnx.checker (full check), and compares ONNX Runtime's outputs on the exported file with
# `kiln run --inference` on the original for the same seeded random inputs
# (scripts/check_onnx_export.py). The first run makes out/onnx-venv with onnx and onnxruntime
# from the package index (checking tools only; kiln does not need them).
#   scripts/check_onnx_export.sh [BUILD_DIR]     (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
venv=out/onnx-venv
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c "import onnx, onnxruntime" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q onnx onnxruntime numpy
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/models"
"$build/models/kiln_write_models" "$work/models" >/dev/null
"$build/models/kiln_write_models" "$work/models" sequence-lstm-unrolled sequence-lstm-loop >/dev/null
models=("$work"/models/*.kgraph)
for dir in tests/data/onnx/*/; do
  [[ -f $dir/model.onnx ]] && models+=("$dir/model.onnx")
done
# Loops that stack scan outputs, from the ONNX node suite (fed its own inputs).
suite=../shared/onnx-node-tests/node
for name in test_loop11 test_scan9_sum; do
  [[ -f $suite/$name/model.onnx ]] && models+=("$suite/$name/model.onnx")
done
"$venv/bin/python" scripts/check_onnx_export.py "$build/tools/kiln" "$work/checks" "${models[@]}"
