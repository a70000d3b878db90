#!/usr/bin/env bash
# Data at its width and memory speed: a Tile then a ReduceMax over a large tensor, on the cpu and
# the reference backend, with the time and the peak resident memory `kiln bench` reports (the
# process's, against its resident memory before the first run). u8: 2^20 elements tiled 256
# times (2^28 bytes); f32: 2^20 elements tiled 2048 times (2^31 elements, 8 GiB; set
# BENCH_MEMORY_F32=0 to skip it on a machine with less than about 12 GiB free).
# Usage: scripts/bench_memory.sh   (builds what it needs)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh build -- kiln >/dev/null 2>&1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# tile_max DTYPE MULTIPLES: x[2^20] tiled MULTIPLES times, then the maximum, as a kiln text graph.
tile_max() {
  cat <<GRAPH
format_version: 1
nodes { name: "x" op: "Placeholder"
  attrs { key: "dtype" value { dtype: $1 } }
  attrs { key: "shape" value { shape { dims: 1048576 } } } }
nodes { name: "tiled" op: "Tile" inputs: "x"
  attrs { key: "multiples" value { ints { values: $2 } } } }
nodes { name: "max" op: "Max" inputs: "tiled"
  attrs { key: "axes" value { ints { } } }
  attrs { key: "keepdims" value { b: false } } }
inputs: "x"
outputs { name: "y" tensor: "max:0" }
GRAPH
}
tile_max DT_U8 256 >"$dir/u8.kgraph.txt"
tile_max DT_F32 2048 >"$dir/f32.kgraph.txt"

printf '%-5s %-10s %12s %12s %14s %14s\n' dtype backend first_ms median_ms peak_rss before_run
for dtype in u8 f32; do
  [[ $dtype == f32 && ${BENCH_MEMORY_F32:-1} == 0 ]] && continue
  for backend in cpu reference; do
    out=$(build/tools/kiln bench "$dir/$dtype.kgraph.txt" --backend "$backend" --iters 1 \
          --warmup 0 --input x=1048576)
    first=$(sed -n 's/^compile_ms: \([0-9.]*\).*/\1/p' <<<"$out")
    median=$(sed -n 's/^median_ms: //p' <<<"$out")
    peak=$(sed -n 's/^peak_rss: \(.*\) (before.*/\1/p' <<<"$out")
    before=$(sed -n 's/^peak_rss: .*(before the first run: \(.*\))/\1/p' <<<"$out")
    printf '%-5s %-10s %12s %12s %14s %14s\n' "$dtype" "$backend" "$first" "$median" "$peak" \
      "$before"
  done
done
