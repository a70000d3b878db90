#!/usr/bin/env bash
# The installed package, used as another project would: `cmake --install BUILD --prefix P`, then
# tests/consumer (copied out of the tree) configured with -DCMAKE_PREFIX_PATH=P and built:
# cube_plugin (kiln::headers) is a plugin with the op "Cube"; train_step (kiln::kiln) loads it,
# trains a small classifier using it and freezes it; P/bin/kiln --plugin compiles the frozen
# graph into a module; run_module (kiln::runtime, C++) and run_module_c (the C API, through
# pkg-config's kiln-runtime) load the plugin and run the module and must print the same numbers
# as P/bin/kiln run, and the runtime-only consumers must link no LLVM, MLIR or compiler code
# (ldd, nm).
#   scripts/check_install.sh [BUILD_DIR]     (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
cp -r tests/consumer "$work/src"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/build" >/dev/null
bin=$work/build
plugin=$bin/libcube_plugin.so
"$bin/train_step" "$plugin" "$work/model.kgraph"
"$prefix/bin/kiln" --plugin "$plugin" compile "$work/model.kgraph" --input x=5x4 \
  -o "$work/model.kmod" >/dev/null
"$bin/run_module" "$plugin" "$work/model.kmod" "$work/x.npy" >"$work/cpp.txt"
"$bin/run_module_c" "$plugin" "$work/model.kmod" >"$work/c.txt"
cmp "$work/cpp.txt" "$work/c.txt"
"$prefix/bin/kiln" --plugin "$plugin" run "$work/model.kgraph" --input x="$work/x.npy" \
  --out "$work/run" >/dev/null
python3 - "$work" <<'PY'
import struct, sys
work = sys.argv[1]
data = open(f"{work}/run/logits.npy", "rb").read()
header_len = struct.unpack("<H", data[8:10])[0]
floats = struct.unpack(f"<{(len(data) - 10 - header_len) // 4}f", data[10 + header_len:])
want = [float(line) for line in open(f"{work}/cpp.txt")]
assert len(want) == len(floats), (len(want), len(floats))
for a, b in zip(want, floats):
    assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), (a, b)
print(f"installed package: a consumer built a plugin, trained a model using it, compiled and ran "
      f"the module ({len(want)} logits equal from C++, C and kiln run)")
PY
for exe in run_module run_module_c; do
  if ldd "$bin/$exe" | grep -Ei 'LLVM|MLIR'; then
    echo "check_install: $exe links LLVM or MLIR" >&2
    exit 1
  fi
  if nm -C "$bin/$exe" | grep -E ' [TtWw] (mlir::|llvm::|kiln::CpuCompiler|kiln::PlanExecutable)' | head -3 | grep .; then
    echo "check_install: $exe contains compiler code" >&2
    exit 1
  fi
done
echo "runtime-only consumers link no LLVM, MLIR or compiler code"
