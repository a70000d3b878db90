#!/usr/bin/env bash
# Builds the GPU bundle: a self-contained folder that checks and benchmarks kiln on a GPU machine
# that has a driver but no compiler, no network and no kiln build (see README, "GPU bundle").
#   scripts/gpu_bundle.sh OUT        then, on the GPU machine: OUT/run.sh
# OUT holds kilnrt (the runtime alone, built without oneDNN and OpenBLAS: every library step of
# the bundled models runs on the device; stripped), the shared libraries it needs beyond the C/C++
# runtime (xz-compressed: protobuf and its friends), the test models compiled with `kiln compile
# --target cuda` (PTX and cubins for sm_80 and sm_90) with their inputs, the reference executor's
# outputs and, for PyTorch exports, PyTorch's outputs, training-step modules of two Shi et al.
# 2016 networks, and the scripts run.sh uses. KILN_BUNDLE_ELEMENTS sets the elementwise
# benchmark's input size (default 2^26 floats), KILN_BUNDLE_GEMM the GEMM benchmarks' N (N x N
# times N x N, default 4096); their inputs are generated on the GPU machine;
# KILN_BUNDLE_TRAIN_DIV divides the training steps' batch of 128 (the simulator's runs want small
# ones). At most 48 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu_bundle.sh OUT}
elements=${KILN_BUNDLE_ELEMENTS:-67108864}
gemm=${KILN_BUNDLE_GEMM:-4096}
scripts/setup.sh >/dev/null
scripts/build.sh build -- kiln kiln_write_models >/dev/null
scripts/build.sh build-gpu-runtime -DKILN_BUILD_COMPILER=OFF -DKILN_HOST_LIBRARIES=OFF -- kilnrt \
  >/dev/null
kiln=build/tools/kiln
kilnrt=build-gpu-runtime/tools/kilnrt
rm -rf "$out"
mkdir -p "$out/bin" "$out/models"
cp scripts/gpu_bundle/run.sh scripts/gpu_bundle/compare.py scripts/gpu_bundle/bench_torch.py \
  scripts/gpu_bundle/write_input.py scripts/write_npy.py scripts/bench_shi2016_torch.py "$out/"
git describe --always --dirty >"$out/VERSION" 2>/dev/null || echo unknown >"$out/VERSION"
cp "$kilnrt" "$out/bin/kilnrt"
strip "$out/bin/kilnrt"

# The libraries kilnrt loads beyond glibc and the C++ runtime, which every Linux has.
libs=()
while read -r path; do
  case $(basename "$path") in
    libc.so* | libm.so* | libstdc++.so* | libgcc_s.so* | ld-linux* | libpthread.so* | libdl.so* | \
      librt.so*) ;;
    *) libs+=("$path") ;;
  esac
done < <(ldd "$kilnrt" | awk '$3 ~ /^\// {print $3}')
if printf '%s\n' "${libs[@]}" | grep -Eq 'dnnl|openblas'; then
  echo "gpu_bundle: $kilnrt links oneDNN or OpenBLAS" >&2
  exit 1
fi
staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
for lib in "${libs[@]}"; do cp -L "$lib" "$staging/"; done
tar -cJf "$out/lib.tar.xz" -C "$staging" .

# model NAME MODEL_FILE INPUT_SPEC INPUT.npy [PYTORCH_OUTPUTS_DIR]
model() {
  local name=$1 file=$2 spec=$3 input=$4 torch=${5:-} dir="$out/models/$1"
  mkdir -p "$dir/inputs" "$dir/torch"
  $kiln compile "$file" --target cuda --input "$spec" -o "$out/models/$name.kmod" >/dev/null
  cp "$input" "$dir/inputs/x.npy"
  $kiln run "$file" --backend reference --input "x=$input" --out "$dir/expected" >/dev/null
  if [[ -n $torch ]]; then
    for f in "$dir"/expected/*.npy; do cp "$torch/$(basename "$f")" "$dir/torch/"; done
  fi
  echo "$name" >>"$out/models/LIST"
}
data=tests/data/onnx
model resnet $data/resnet/model.onnx x=2x3x64x64 $data/resnet/x.npy $data/resnet
model transformer $data/transformer/model.onnx x=2x5x32 $data/transformer/x.npy $data/transformer
model lstm $data/lstm/model.onnx x=2x7x6 $data/lstm/x.npy $data/lstm
model mlp $data/mlp/model.onnx x=4x20 $data/mlp/x.npy $data/mlp
model mobilenet $data/mobilenet/model.onnx x=1x3x32x32 $data/mobilenet/x.npy $data/mobilenet
model gpt_block $data/gpt_block/model.onnx x=2x6x32 $data/gpt_block/x.npy $data/gpt_block
python3 scripts/write_npy.py "$staging/ew.npy" f32 4096
model elementwise scripts/gpu_bundle/elementwise.kgraph.txt x=4096 "$staging/ew.npy"
$kiln compile scripts/gpu_bundle/elementwise.kgraph.txt --target cuda --input "x=$elements" \
  -o "$out/models/elementwise_bench.kmod" >/dev/null
echo "$elements" >"$out/models/ELEMENTS"
python3 scripts/write_npy.py "$staging/gemm.npy" f32 64x64
for name in gemm gemm_bf16; do
  model $name scripts/gpu_bundle/$name.kgraph.txt x=64x64 "$staging/gemm.npy"
  $kiln compile scripts/gpu_bundle/$name.kgraph.txt --target cuda --input "x=${gemm}x$gemm" \
    -o "$out/models/${name}_bench.kmod" >/dev/null
done
$kiln compile scripts/gpu_bundle/gemm.kgraph.txt --target cuda --tf32 --input "x=${gemm}x$gemm" \
  -o "$out/models/gemm_tf32_bench.kmod" >/dev/null
echo "$gemm" >"$out/models/GEMM"

# A plan no GPU holds: x[2^20] f32, then 20 outputs, x * i tiled 2048 times (8 GiB each, 160 GiB
# in all). run.sh checks that it is refused at load, before any device allocation.
too_big_graph() {
  echo 'format_version: 1'
  echo 'nodes { name: "x" op: "Placeholder" attrs { key: "dtype" value { dtype: DT_F32 } }'
  echo '  attrs { key: "shape" value { shape { dims: 1048576 } } } }'
  local previous=x
  for ((i = 1; i <= 20; i++)); do
    echo "nodes { name: \"a$i\" op: \"Add\" inputs: \"$previous\" inputs: \"x\" }"
    echo "nodes { name: \"t$i\" op: \"Tile\" inputs: \"a$i\""
    echo "  attrs { key: \"multiples\" value { ints { values: 2048 } } } }"
    previous=a$i
  done
  echo 'inputs: "x"'
  for ((i = 1; i <= 20; i++)); do echo "outputs { name: \"y$i\" tensor: \"t$i:0\" }"; done
}
too_big_graph >"$staging/too_big.kgraph.txt"
$kiln compile "$staging/too_big.kgraph.txt" --target cuda -o "$out/models/too_big.kmod" >/dev/null

# Training steps (one SGD step per run of the module, which keeps the weights) of Shi et al.
# networks at batch 128: ResNet-56 in bf16, AlexNet-R and FCN-R in fp32 and bf16, the LSTM in
# bf16. The modules hold no weights (--no-variables: each starts from its seeded initializers on
# the GPU machine); AlexNet-S, FCN-S and ResNet-50 are left out for their 224x224 or 26752-wide
# inputs (over 10 MB a batch) and, for ResNet-50, its code. Each is checked by its first step's
# loss against the reference executor's, and run.sh times it against the same network in PyTorch
# CUDA.
train_div=${KILN_BUNDLE_TRAIN_DIV:-1}
mkdir -p "$staging/shi"
build/models/kiln_write_models "$staging/shi" resnet-56 alexnet-r fcn-r lstm >/dev/null
# train_model NETWORK PRECISION INPUT DTYPE DIMS LABEL_DIMS CLASSES (dims after the batch's)
train_model() {
  local network=$1 precision=$2 input=$3 dtype=$4 dims=$5 label_dims=$6 classes=$7
  local n=$((128 / train_div)) name="train_${1//-/_}_$2"
  ((n >= 1)) || n=1
  local dir="$out/models/$name" graph="$staging/shi/$network.kgraph"
  mkdir -p "$dir/inputs"
  python3 scripts/write_npy.py "$dir/inputs/$input.npy" "$dtype" "$n$dims" --max "$classes" \
    >/dev/null
  python3 scripts/write_npy.py "$dir/inputs/labels.npy" i64 "$n$label_dims" --max "$classes" \
    >/dev/null
  $kiln compile "$graph" --train --loss loss --optimizer sgd --lr 0.01 --precision "$precision" \
    --target cuda --no-variables --input "$input=$n$dims" --input "labels=$n$label_dims" \
    -o "$out/models/$name.kmod" >/dev/null
  $kiln run "$graph" --backend reference --precision "$precision" --fetch loss:0 \
    --input "$input=$dir/inputs/$input.npy" --input "labels=$dir/inputs/labels.npy" \
    --out "$dir/expected" >/dev/null
  if [[ $precision == bf16 ]]; then echo 2e-2 >"$dir/RTOL"; fi  # bf16 rounds per op differently
  echo "$name" >>"$out/models/LIST"
  echo "$name:$network:$precision:$n" >>"$out/models/TRAIN"
}
train_model resnet-56 bf16 x f32 x3x32x32 "" 10
train_model alexnet-r fp32 x f32 x3x32x32 "" 10
train_model alexnet-r bf16 x f32 x3x32x32 "" 10
train_model fcn-r fp32 x f32 x784 "" 10
train_model fcn-r bf16 x f32 x784 "" 10
train_model lstm bf16 tokens i64 x32 x32 10000
printf '%s\n' "elementwise_bench:$elements" "gemm_bench:${gemm}x$gemm" \
  "gemm_bf16_bench:${gemm}x$gemm" resnet:2x3x64x64 transformer:2x5x32 lstm:2x7x6 \
  >"$out/models/BENCH"
# The cost model's estimate of each benchmark on an H100 and an H200 (kiln inspect --cost), which
# run.sh prints beside the measured time.
estimate() {  # estimate NAME MODEL_FILE INPUT_SPEC [--tf32]
  local line=$1
  for chip in h100 h200; do
    line+=" $($kiln inspect "$2" --input "$3" --cost $chip ${4:-} | sed -n 's/^estimated_ms: //p')"
  done
  echo "$line" >>"$out/models/ESTIMATES"
}
estimate elementwise_bench scripts/gpu_bundle/elementwise.kgraph.txt "x=$elements"
estimate gemm_bench scripts/gpu_bundle/gemm.kgraph.txt "x=${gemm}x$gemm"
estimate gemm_bf16_bench scripts/gpu_bundle/gemm_bf16.kgraph.txt "x=${gemm}x$gemm"
estimate resnet $data/resnet/model.onnx x=2x3x64x64
estimate transformer $data/transformer/model.onnx x=2x5x32
estimate lstm $data/lstm/model.onnx x=2x7x6

size=$(du -sb "$out" | cut -f1)
echo "wrote $out: $((size / 1024)) KiB (limit 48 MiB); run it with $out/run.sh"
if ((size > 48 * 1024 * 1024)); then
  echo "gpu_bundle: $out is over 48 MiB" >&2
  exit 1
fi
