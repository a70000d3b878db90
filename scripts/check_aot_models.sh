#!/usr/bin/env bash
# Checks, for every model in models/ (the Shi et al. 2016 networks and the digits CNN), that a
# module compiled ahead of time and run by kilnrt gives bitwise the logits `kiln run` gives on the
# cpu backend (same pipeline, same machine code). Batch 2, seeded random inputs, initial weights.
# Usage: scripts/check_aot_models.sh [OUT_DIR]   (default out/check_aot; builds what it needs)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/check_aot}
scripts/build.sh build -- kiln kilnrt kiln_write_models kiln_example >/dev/null 2>&1
mkdir -p "$out"
build/models/kiln_write_models "$out" >/dev/null
build/models/kiln_example "$out" data/digits.csv.gz >/dev/null  # writes digits_cnn.kgraph
declare -A input=(
  [fcn-s]="x f32 2x26752" [alexnet-s]="x f32 2x3x224x224" [resnet-50]="x f32 2x3x224x224"
  [fcn-r]="x f32 2x784" [alexnet-r]="x f32 2x3x32x32" [resnet-56]="x f32 2x3x32x32"
  [lstm]="tokens i64 2x32" [digits_cnn]="images f32 2x1x8x8")
for model in fcn-s alexnet-s resnet-50 fcn-r alexnet-r resnet-56 lstm digits_cnn; do
  read -r name dtype dims <<<"${input[$model]}"
  /usr/bin/python3 scripts/write_npy.py "$out/$model.in.npy" "$dtype" "$dims" --max 10000
  build/tools/kiln compile "$out/$model.kgraph" --input "$name=$dims" --fetch logits \
    -o "$out/$model.kmod" >/dev/null
  build/tools/kilnrt "$out/$model.kmod" --input "$name=$out/$model.in.npy" --out "$out/$model.rt" \
    >/dev/null
  build/tools/kiln run "$out/$model.kgraph" --input "$name=$out/$model.in.npy" --fetch logits \
    --backend cpu --out "$out/$model.jit" >/dev/null
  cmp "$out/$model.rt/logits.npy" "$out/$model.jit/logits.npy"
  echo "$model: kilnrt's logits are bitwise kiln run's"
done
