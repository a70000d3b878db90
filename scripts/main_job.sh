#!/usr/bin/env bash
# kiln's main job, end to end on a fresh machine: set up, build, then
#   1. build the digits CNN with the C++ API, save it, load it back and run it (kiln_example);
#   2. the same model through the command line: inspect, run, draw.
# Everything it writes goes to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build -- kiln kiln_example
mkdir -p out
kiln=build/tools/kiln

echo; echo "== 1. C++ API: build, save, load, run"
build/models/kiln_example out data/digits.csv.gz

echo; echo "== 2. kiln inspect out/digits_cnn.kgraph"
$kiln inspect out/digits_cnn.kgraph

echo; echo "== 3. kiln run out/digits_cnn.kgraph --input images=out/digits_images.npy --out out/run"
$kiln run out/digits_cnn.kgraph --input images=out/digits_images.npy --out out/run

echo; echo "== 4. kiln dot out/digits_cnn.kgraph -o out/digits_cnn.svg"
$kiln dot out/digits_cnn.kgraph -o out/digits_cnn.svg
echo; echo "main job done: see out/"
