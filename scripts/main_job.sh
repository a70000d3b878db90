#!/usr/bin/env bash
# kiln's main job, end to end on a fresh machine: set up, build, then
#   1. the C++ API: build the digits CNN, save it, load it back, run it (kiln_example);
#   2. the CLI on that model: inspect, run, draw;
#   3. train the digits CNN (training graph + seeded 80/20 split, Adam, checkpoint every epoch,
#      the held-out 20%'s loss and accuracy after every epoch, TensorBoard logs in out/logs/digits:
#      scripts/check_tensorboard.sh reads them with TensorBoard), freeze it with the checkpoint, and
#      evaluate the frozen graph on the held-out 20% (the same accuracy as the last epoch's);
#   3b. the same training in mixed precision (--precision bf16), evaluated in bf16 (docs/mixed_precision.md:
#      within half a point of step 3 is the goal);
#   3c. the same training on the simulated CUDA device (--backend cuda-sim), evaluated;
#   4. compile the frozen model ahead of time into out/digits.kmod and run that artifact with
#      kilnrt (the runtime alone: no compiler), checking it gives bitwise the JIT session's logits,
#      then with kiln_digits_deploy (a program linking only the runtime, through the C API) on
#      the whole held-out set.
# Everything it writes goes to out/. The last line is "deployed module accuracy: 0.NNNN", which
# equals the "test accuracy" of step 3.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build -- kiln kilnrt kiln_example kiln_digits kiln_digits_deploy
mkdir -p out
kiln=build/tools/kiln
step() { echo; echo "== $*"; }

step "1. C++ API: build, save, load, run"
build/models/kiln_example out data/digits.csv.gz

step "2. kiln inspect / run / dot on out/digits_cnn.kgraph"
$kiln inspect out/digits_cnn.kgraph
$kiln run out/digits_cnn.kgraph --input images=out/digits_images.npy --out out/run
$kiln dot out/digits_cnn.kgraph -o out/digits_cnn.svg

step "3. train, checkpoint, freeze, evaluate"
build/models/kiln_digits prepare out data/digits.csv.gz
rm -rf out/logs/digits  # this run's TensorBoard events alone
$kiln train out/digits_train.kgraph --loss loss --data images=out/train_images.npy \
  --data labels=out/train_labels.npy --optimizer adam --lr 0.003 --batch 32 --epochs 10 \
  --checkpoint out/digits.kckpt --val images=out/test_images.npy --val labels=out/test_labels.npy \
  --accuracy logits --logdir out/logs/digits
$kiln freeze out/digits_train.kgraph --checkpoint out/digits.kckpt --fetch logits -o out/digits_infer.kgraph
build/models/kiln_digits evaluate out/digits_infer.kgraph out/test_images.npy out/test_labels.npy

step "3b. the same training in mixed precision (bf16), evaluated in bf16"
$kiln train out/digits_train.kgraph --loss loss --data images=out/train_images.npy \
  --data labels=out/train_labels.npy --optimizer adam --lr 0.003 --batch 32 --epochs 10 \
  --checkpoint out/digits_bf16.kckpt --precision bf16
$kiln freeze out/digits_train.kgraph --checkpoint out/digits_bf16.kckpt --fetch logits \
  -o out/digits_bf16_infer.kgraph
build/models/kiln_digits evaluate out/digits_bf16_infer.kgraph out/test_images.npy \
  out/test_labels.npy bf16

step "3c. the same training on the simulated CUDA device (cuda-sim), and where its steps run"
$kiln inspect out/digits_train.kgraph --train --loss loss --optimizer adam --placement \
  --backend cuda --input images=32x1x8x8 --input labels=32 | tail -n 2
$kiln train out/digits_train.kgraph --loss loss --data images=out/train_images.npy \
  --data labels=out/train_labels.npy --optimizer adam --lr 0.003 --batch 32 --epochs 10 \
  --checkpoint out/digits_cuda_sim.kckpt --backend cuda-sim
$kiln freeze out/digits_train.kgraph --checkpoint out/digits_cuda_sim.kckpt --fetch logits \
  -o out/digits_cuda_sim_infer.kgraph
build/models/kiln_digits evaluate out/digits_cuda_sim_infer.kgraph out/test_images.npy \
  out/test_labels.npy

step "4. compile ahead of time, run the artifact with the runtime alone"
$kiln compile out/digits_infer.kgraph --input images=64x1x8x8 -o out/digits.kmod
build/tools/kilnrt out/digits.kmod --describe
build/tools/kilnrt out/digits.kmod --input images=out/test_batch_images.npy --out out/kilnrt
$kiln run out/digits_infer.kgraph --input images=out/test_batch_images.npy --out out/jit
cmp out/kilnrt/logits.npy out/jit/logits.npy
echo "kilnrt's logits are bitwise those of the JIT session (kiln run)"
$kiln compile out/digits_infer.kgraph --target cuda --input images=64x1x8x8 -o out/digits_cuda.kmod
build/tools/kilnrt out/digits_cuda.kmod --backend cuda-sim --input images=out/test_batch_images.npy \
  --out out/kilnrt_cuda_sim
$kiln run out/digits_infer.kgraph --backend cuda-sim --input images=out/test_batch_images.npy \
  --out out/jit_cuda_sim
cmp out/kilnrt_cuda_sim/logits.npy out/jit_cuda_sim/logits.npy
echo "the cuda module on cuda-sim gives bitwise the logits of kiln run --backend cuda-sim"
build/models/kiln_digits_deploy out/digits.kmod out/test_images.npy out/test_labels.npy
