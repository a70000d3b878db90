#!/usr/bin/env bash
# Reads a kiln train --logdir folder with TensorBoard's own reader (EventAccumulator) and prints
# each scalar tag's points (step, value), the last three of the per-step ones, and the graph's
# node count: a check that TensorBoard reads what kiln writes. The first run makes out/tb-venv
# with TensorBoard from the package index (a checking tool only; kiln does not need it).
#   scripts/check_tensorboard.sh out/logs/digits
set -euo pipefail
cd "$(dirname "$0")/.."
logdir=${1:?usage: scripts/check_tensorboard.sh LOGDIR}
venv=out/tb-venv
if [[ ! -x $venv/bin/python ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q tensorboard
fi
"$venv/bin/python" - "$logdir" <<'PY'
import sys

from tensorboard.backend.event_processing import event_accumulator

acc = event_accumulator.EventAccumulator(sys.argv[1])
acc.Reload()
for tag in acc.Tags()["scalars"]:
    points = [(e.step, round(e.value, 5)) for e in acc.Scalars(tag)]
    shown = points if len(points) <= 12 else points[-3:]
    print(f"{tag}: {len(points)} points{'' if shown is points else ', the last 3'}: {shown}")
if acc.Tags()["graph"]:
    print(f"graph: {len(acc.Graph().node)} nodes")
PY
