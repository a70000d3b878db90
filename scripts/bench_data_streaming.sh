#!/usr/bin/env bash
# A data set larger than what kiln train keeps in memory: ROWS x 1024 f32 features in .npy shards
# of 128 Mi each (4 GiB at the default 1 Mi rows; the values are zeros, the labels a CSV column),
# trained one epoch with a linear classifier at batch 256. Prints the data's size, the epoch's
# line and the process's peak resident memory (GNU time): the shards are read row by row as
# batches need them, so the peak stays near the model's and the batches' memory, far under the
# data's size (the page cache holds what the kernel can spare, reclaimable).
#   scripts/bench_data_streaming.sh [ROWS]      (needs about ROWS x 4 KiB of disk under $TMPDIR)
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-1048576}
kiln=${BUILD_DIR:-build}/tools/kiln
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/x"
shard=32768  # rows per shard: 128 MiB
python3 - "$work/x" "$rows" "$shard" <<'PY'
import os, struct, sys
out, rows, shard = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
zeros = bytes(1 << 20)
for i, first in enumerate(range(0, rows, shard)):
    n = min(shard, rows - first)
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 1024), }" % n
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(os.path.join(out, "part-%05d.npy" % i), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        left = n * 4096
        while left:
            f.write(zeros[: min(left, len(zeros))])
            left -= min(left, len(zeros))
PY
awk -v n="$rows" 'BEGIN { print "label"; for (i = 0; i < n; i++) print i % 10 }' >"$work/labels.csv"
cat >"$work/model.kgraph.txt" <<'TXT'
format_version: 1
nodes { name: "x" op: "Placeholder" attrs { key: "dtype" value { dtype: DT_F32 } } attrs { key: "shape" value { shape { dims: -1 dims: 1024 } } } }
nodes { name: "labels" op: "Placeholder" attrs { key: "dtype" value { dtype: DT_I64 } } attrs { key: "shape" value { shape { dims: -1 } } } }
nodes { name: "w" op: "Variable" attrs { key: "dtype" value { dtype: DT_F32 } } attrs { key: "shape" value { shape { dims: 1024 dims: 10 } } } }
nodes { name: "logits" op: "MatMul" inputs: "x" inputs: "w" }
nodes { name: "loss" op: "SoftmaxCrossEntropy" inputs: "logits" inputs: "labels" }
inputs: "x"
inputs: "labels"
outputs { name: "loss" tensor: "loss" }
TXT
echo "data: $rows rows x 1024 f32 = $(du -sh "$work/x" | cut -f1) in $(ls "$work/x" | wc -l) shards"
/usr/bin/time -f "peak resident memory: %M KiB, %e s" "$kiln" train "$work/model.kgraph.txt" \
  --loss loss --data x="$work/x" --data labels="$work/labels.csv:label:i64" --batch 256 \
  --epochs 1 --optimizer sgd --lr 0.01 --prefetch 2 --quiet
