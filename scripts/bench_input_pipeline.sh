#!/usr/bin/env bash
# kiln train's input pipeline against its steps, trained with the batches made on the caller's
# thread (--prefetch 0, the default) and made ahead on threads of their own (--prefetch 2);
# beside them the step alone (kiln bench --train on one batch, which reads nothing): the epoch's
# time over the steps' is what reading adds, and what the pipeline can hide.
#   npy (default): a cheap model (loss = mean(x * w)) on rows of WIDTH floats (default 2048 rows
#                  of 64 KiB, batch 64) sliced from an in-memory array: slicing costs little.
#   csv:           a matrix product (loss = mean(x @ w), w [WIDTH, 512]) on rows of WIDTH numbers
#                  parsed from a CSV file (default 4096 rows of 256, batch 64): parsing a batch
#                  costs about as much as a step, so the pipeline's overlap shows. THREADS=1 (the
#                  default here) leaves the second core to the pipeline.
#   scripts/bench_input_pipeline.sh [npy|csv] [ROWS] [WIDTH]     (BATCH=N, THREADS=N for the steps)
set -euo pipefail
cd "$(dirname "$0")/.."
format=npy
if [[ ${1:-} == npy || ${1:-} == csv ]]; then format=$1; shift; fi
if [[ $format == csv ]]; then
  rows=${1:-4096} width=${2:-256} threads=${THREADS:-1}
else
  rows=${1:-2048} width=${2:-16384} threads=${THREADS:-0}
fi
batch=${BATCH:-64} epochs=4
scripts/build.sh build -- kiln >/dev/null
kiln=build/tools/kiln
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# loss = mean(x @ w), w [WIDTH, 512] (csv); loss = mean(x * w), w [WIDTH] (npy)
if [[ $format == csv ]]; then op=MatMul w_dims="dims: $width dims: 512"; else op=Mul w_dims="dims: $width"; fi
cat >"$work/model.kgraph.txt" <<MODEL
format_version: 1
nodes { name: "x" op: "Placeholder" attrs { key: "dtype" value { dtype: DT_F32 } }
  attrs { key: "shape" value { shape { dims: -1 dims: $width } } } }
nodes { name: "w" op: "Variable" attrs { key: "dtype" value { dtype: DT_F32 } }
  attrs { key: "shape" value { shape { $w_dims } } } }
nodes { name: "xw" op: "$op" inputs: "x" inputs: "w" }
nodes { name: "loss" op: "Mean" inputs: "xw" }
inputs: "x"
outputs { name: "loss" tensor: "loss:0" }
MODEL
if [[ $format == csv ]]; then
  python3 - "$work/x.csv" "$rows" "$width" <<'PY'
import random, sys
out, rows, width = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
random.seed(1)
with open(out, "w") as f:
    for _ in range(rows):
        f.write(",".join("%.6f" % random.uniform(-1, 1) for _ in range(width)) + "\n")
PY
  data="$work/x.csv"
else
  python3 - "$work/x.npy" "$rows" "$width" <<'PY'
import array, sys
out, rows, width = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, width)
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(out, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
    f.write((array.array("f", [0.001]) * (rows * width)).tobytes())
PY
  data="$work/x.npy"
fi
echo "$format: rows $rows of $width numbers, batch $batch, step threads $threads of $(nproc) cores"
step_ms=$($kiln bench "$work/model.kgraph.txt" --train --loss loss --optimizer sgd \
  --input "x=${batch}x$width" --iters 20 --threads "$threads" | sed -n 's/^median_ms: //p')
steps=$(( (rows + batch - 1) / batch ))
echo "the step alone: $step_ms ms (kiln bench --train), $steps steps an epoch: $(python3 -c \
  "print('%.1f' % ($step_ms * $steps))") ms"
for prefetch in 0 2; do
  line=$($kiln train "$work/model.kgraph.txt" --loss loss --data "x=$data" --optimizer sgd \
    --batch "$batch" --epochs "$epochs" --prefetch "$prefetch" --threads "$threads" | grep "^epoch $epochs:")
  rate=$(sed -n 's/.*, \([0-9.]*\) examples\/s.*/\1/p' <<<"$line")
  echo "--prefetch $prefetch: epoch $epochs $(python3 -c "print('%.1f' % (1000 * $rows / $rate))") ms ($rate examples/s)"
done
