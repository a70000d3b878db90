#!/usr/bin/env bash
# Time to first result of ResNet-50 inference (batch 1, 224x224): the JIT session against a module
# compiled ahead of time. Prints, in milliseconds:
#   jit_first_run_ms   kiln bench's first run: the session compiles the plan (MLIR/LLVM JIT,
#                      oneDNN primitives) and runs it once (in-process, model already loaded)
#   jit_steady_ms      the median of later runs of the same session
#   kiln_run_first_ms  kiln run, the whole process: start, load the model, initialize the
#                      variables, compile (JIT), run once, write the output
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
/usr/bin/python3 scripts/write_npy.py "$out/x.npy" f32 1x3x224x224
ms() { local start=$1 end; end=$(date +%s%N); echo $(((end - start) / 1000000)); }

bench=$(build/tools/kiln bench "$out/resnet-50.kgraph" --input x=1x3x224x224 --input labels=1 \
  --fetch logits \
  --iters 3 --warmup 0)
echo "$bench" | sed -n 's/^compile_ms: /jit_first_run_ms: /p; s/^median_ms: /jit_steady_ms: /p'

start=$(date +%s%N)
build/tools/kiln run "$out/resnet-50.kgraph" --input x="$out/x.npy" --fetch logits \
  --out "$out/jit" >/dev/null
echo "kiln_run_first_ms: $(ms "$start")"
start=$(date +%s%N)
build/tools/kiln compile "$out/resnet-50.kgraph" --input x=1x3x224x224 --fetch logits \
  -o "$out/resnet-50.kmod" >/dev/null
echo "aot_compile_ms: $(ms "$start")"
start=$(date +%s%N)
build/tools/kilnrt "$out/resnet-50.kmod" --input x="$out/x.npy" --out "$out/kilnrt" >/dev/null
echo "kilnrt_first_ms: $(ms "$start")"
echo "module_bytes: $(stat -c %s "$out/resnet-50.kmod")"
cmp "$out/kilnrt/logits.npy" "$out/jit/logits.npy" && echo "kilnrt's logits are bitwise kiln run's"
