#!/usr/bin/env bash
# Time to first result of ResNet-50 inference (batch 1, 224x224): the JIT session against a module
# compiled ahead of time. Prints, in milliseconds:
#   jit_first_run_ms   kiln bench's first run: the session compiles the plan (MLIR/LLVM JIT,
#                      oneDNN primitives) and runs it once (in-process, model already loaded)
#   jit_steady_ms      the median of later runs of the same session
#   aot_compile_ms     kiln compile, the whole process: load the model, compile, write the .kmod
#   kilnrt_first_ms    kilnrt, the whole process: start, read + check the module, load its code,
#                      create the primitives, run once, write the output
# Usage: scripts/bench_aot.sh [OUT_DIR]   (default out/bench_aot; builds what it needs)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench_aot}
scripts/build.sh build -- kiln kilnrt kiln_write_models >/dev/null 2>&1
mkdir -p "$out"
build/models/kiln_write_models "$out" resnet-50 >/dev/null
# A random input as .npy (float32, 1x3x224x224), written without numpy.
/usr/bin/python3 - "$out/x.npy" <<'PY'
import array, random, sys
random.seed(1)
n = 1 * 3 * 224 * 224
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }"
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
    f.write(array.array("f", (random.gauss(0, 1) for _ in range(n))).tobytes())
PY
ms() { local start=$1 end; end=$(date +%s%N); echo $(((end - start) / 1000000)); }

bench=$(build/tools/kiln bench "$out/resnet-50.kgraph" --input x=1x3x224x224 --input labels=1 \
  --fetch logits \
  --iters 3 --warmup 0)
echo "$bench" | sed -n 's/^compile_ms: /jit_first_run_ms: /p; s/^median_ms: /jit_steady_ms: /p'

start=$(date +%s%N)
build/tools/kiln compile "$out/resnet-50.kgraph" --input x=1x3x224x224 --fetch logits \
  -o "$out/resnet-50.kmod" >/dev/null
echo "aot_compile_ms: $(ms "$start")"
start=$(date +%s%N)
build/tools/kilnrt "$out/resnet-50.kmod" --input x="$out/x.npy" --out "$out/kilnrt" >/dev/null
echo "kilnrt_first_ms: $(ms "$start")"
echo "module_bytes: $(stat -c %s "$out/resnet-50.kmod")"
