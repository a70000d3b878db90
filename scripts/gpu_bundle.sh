#!/usr/bin/env bash
# Builds the GPU bundle: a self-contained folder that checks and benchmarks kiln on a GPU machine
# that has a driver but no compiler, no network and no kiln build (see docs/cuda.md, "GPU bundle").
#   scripts/gpu_bundle.sh OUT        then, on the GPU machine: OUT/run.sh
# OUT holds kilnrt (the runtime alone, built without oneDNN and OpenBLAS: every library step of
# the bundled models runs on the device; stripped), the shared libraries it needs beyond the C/C++
# runtime (xz-compressed: protobuf and its friends), the test models compiled with `kiln compile
# --target cuda` (PTX and cubins for sm_80 and sm_90; xz-compressed) with their inputs, the
# reference executor's outputs and, for PyTorch exports, PyTorch's outputs, training-step modules
# of the seven Shi et al. 2016 networks, ResNet-50 inference in bf16, and the scripts run.sh uses.
# Inputs too large to ship are generated there (models/NAME/GENERATE). KILN_BUNDLE_ELEMENTS sets
# the elementwise benchmark's input size (default 2^26 floats), KILN_BUNDLE_GEMM the GEMM
# benchmarks' N (N x N times N x N, default 4096); KILN_BUNDLE_TRAIN_DIV divides the training
# steps' batches, KILN_BUNDLE_CHECK_BATCH (default 2) is the batch at which the large networks are
# checked against the reference executor, KILN_BUNDLE_INFER_BATCH (default 64) ResNet-50's
# inference batch (the simulator's runs want small ones). At most 48 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu_bundle.sh OUT}
elements=${KILN_BUNDLE_ELEMENTS:-67108864}
gemm=${KILN_BUNDLE_GEMM:-4096}
# Quiet unless a step fails: then its output, and this script's exit status.
quietly() {
  local log rc=0
  log=$(mktemp)
  "$@" >"$log" 2>&1 || rc=$?
  if ((rc)); then
    tail -n 40 "$log" >&2
    echo "gpu_bundle.sh: failed (exit $rc): $*" >&2
  fi
  rm -f "$log"
  return "$rc"
}
quietly scripts/setup.sh
quietly scripts/build.sh build -- kiln kiln_write_models
quietly scripts/build.sh build-gpu-runtime -DKILN_BUILD_COMPILER=OFF -DKILN_HOST_LIBRARIES=OFF \
  -- kilnrt
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

# Inputs too large to ship are generated on the GPU machine: models/NAME/GENERATE lists, one per
# line, "INPUT DTYPE DIMS MAX SHA256" for scripts/write_npy.py (seeded, pure Python, the same bytes
# everywhere), and run.sh checks each file's SHA-256 against the one written here.
# generated_input DIR INPUT DTYPE DIMS MAX: writes DIR/inputs/INPUT.npy here (for the reference
# executor) and its line in DIR/GENERATE.
generated_input() {
  local dir=$1 input=$2 dtype=$3 dims=$4 max=$5
  mkdir -p "$dir/inputs"
  python3 scripts/write_npy.py "$dir/inputs/$input.npy" "$dtype" "$dims" --max "$max" >/dev/null
  echo "$input $dtype $dims $max $(sha256sum "$dir/inputs/$input.npy" | cut -d' ' -f1)" \
    >>"$dir/GENERATE"
}
# The expected outputs of a bundled model: the reference executor's (bf16 rounds per op
# differently from the device: rtol 2e-2 of each output's largest magnitude, compare.py
# --of-largest).
expect() {  # expect DIR PRECISION MODEL_FILE KILN_RUN_FLAGS...
  local dir=$1 precision=$2 file=$3 f inputs=()
  shift 3
  for f in "$dir"/inputs/*.npy; do inputs+=(--input "$(basename "$f" .npy)=$f"); done
  $kiln run "$file" --backend reference --precision "$precision" "${inputs[@]}" \
    --out "$dir/expected" "$@" >/dev/null
  if [[ $precision == bf16 ]]; then
    echo 2e-2 >"$dir/RTOL"
    touch "$dir/OF_LARGEST"
  fi
}
# Files the bundle does not ship once GENERATE describes them.
drop_generated() { if [[ -f $1/GENERATE ]]; then rm -rf "$1/inputs"; fi; }

# The seven Shi et al. 2016 networks as models/shi2016*.cc define them (scripts/shi2016_networks.sh:
# shapes and class counts); each module starts from its seeded initializers on the GPU machine
# (--no-variables: no weights in the bundle).
source scripts/shi2016_networks.sh
train_div=${KILN_BUNDLE_TRAIN_DIV:-1}
check_batch=${KILN_BUNDLE_CHECK_BATCH:-2}
mkdir -p "$staging/shi"
build/models/kiln_write_models "$staging/shi" "${shi_networks[@]}" >/dev/null

# Training steps (one SGD step per run of the module, which keeps the weights): the four small
# networks at batch 128 (ResNet-56 in bf16, AlexNet-R and FCN-R in fp32 and bf16, the LSTM in
# bf16), FCN-S, AlexNet-S and ResNet-50 at the paper's batch sizes in bf16; KILN_BUNDLE_TRAIN_DIV
# divides every batch. A module is checked by its first step's loss against the reference
# executor's; where its batch is over CHECK (the reference executor takes minutes on a ResNet-50
# batch), a module of the same step at batch CHECK (KILN_BUNDLE_CHECK_BATCH, default 2) is checked
# instead. run.sh times each against the same network in PyTorch CUDA.
# train_model NETWORK PRECISION BATCH [CHECK]
train_model() {
  local network=$1 precision=$2 n=$(($3 / train_div)) check=${4:-}
  if ((n < 1)); then n=1; fi
  if [[ -z $check ]] || ((check > n)); then check=$n; fi
  local name="train_${network//-/_}_$precision" graph="$staging/shi/$network.kgraph"
  local input_spec=${shi_input[$network]} input_dtype=f32
  local input=${input_spec%%=*}
  if [[ $network == lstm ]]; then input_dtype=i64; fi
  local batch module dir dims label_dims
  for batch in "$n" "$check"; do
    module=$name
    if ((batch != n)); then module=${name}_check; fi
    dir="$out/models/$module"
    dims=$(shi_input_flags "$network" "$batch" | sed -n 2p)  # x=16x3x224x224
    label_dims=$(shi_input_flags "$network" "$batch" | sed -n 4p)
    dims=${dims#*=} label_dims=${label_dims#*=}
    generated_input "$dir" "$input" "$input_dtype" "$dims" "${shi_classes[$network]}"
    generated_input "$dir" labels i64 "$label_dims" "${shi_classes[$network]}"
    $kiln compile "$graph" --train --loss loss --optimizer sgd --lr 0.01 --precision "$precision" \
      --target cuda --no-variables --input "$input=$dims" --input "labels=$label_dims" \
      -o "$out/models/$module.kmod" >/dev/null
    if ((batch == check)); then
      expect "$dir" "$precision" "$graph" --fetch loss:0
      echo "$module" >>"$out/models/LIST"
    fi
    drop_generated "$dir"
    if ((batch == n)); then echo "$name:$network:$precision:$n" >>"$out/models/TRAIN"; fi
    if ((check == n)); then break; fi
  done
}
train_model resnet-56 bf16 128
train_model alexnet-r fp32 128
train_model alexnet-r bf16 128
train_model fcn-r fp32 128
train_model fcn-r bf16 128
train_model lstm bf16 128
train_model fcn-s bf16 "${shi_batch[fcn-s]}" "$check_batch"
train_model alexnet-s bf16 "${shi_batch[alexnet-s]}" "$check_batch"
train_model resnet-50 bf16 "${shi_batch[resnet-50]}" "$check_batch"

# A training step no GPU holds: ResNet-50 at batch 2048 in bf16 (about 200 GiB on the device).
# run.sh checks that kilnrt refuses it at load, naming its peak, before any device allocation.
$kiln compile "$staging/shi/resnet-50.kgraph" --train --loss loss --optimizer sgd --lr 0.01 \
  --precision bf16 --target cuda --no-variables --input x=2048x3x224x224 --input labels=2048 \
  -o "$out/models/train_resnet_50_too_big.kmod" >/dev/null

# ResNet-50 inference in bf16 (BatchNorm in inference mode: kiln compile --inference) at batch
# KILN_BUNDLE_INFER_BATCH (default 64), timed; the same at batch CHECK is checked against the
# reference executor. run.sh compares its rate with what cuDNN alone reaches on its convolutions.
infer_batch=${KILN_BUNDLE_INFER_BATCH:-64}
resnet50="$staging/shi/resnet-50.kgraph"
infer_check="$out/models/resnet_50_bf16"
generated_input "$infer_check" x f32 "${check_batch}x3x224x224" 2
$kiln compile "$resnet50" --inference --fetch logits --precision bf16 --target cuda --no-variables \
  --input "x=${check_batch}x3x224x224" -o "$out/models/resnet_50_bf16.kmod" >/dev/null
expect "$infer_check" bf16 "$resnet50" --inference --fetch logits
drop_generated "$infer_check"
echo resnet_50_bf16 >>"$out/models/LIST"
$kiln compile "$resnet50" --inference --fetch logits --precision bf16 --target cuda --no-variables \
  --input "x=${infer_batch}x3x224x224" -o "$out/models/resnet_50_bf16_bench.kmod" >/dev/null

printf '%s\n' "elementwise_bench:$elements" "gemm_bench:${gemm}x$gemm" \
  "gemm_bf16_bench:${gemm}x$gemm" resnet:2x3x64x64 transformer:2x5x32 lstm:2x7x6 \
  "resnet_50_bf16_bench:${infer_batch}x3x224x224" >"$out/models/BENCH"
# The cost model's estimate of each benchmark on an H100 and an H200 (kiln inspect --cost; a bf16
# plan's from the table's bf16 row), which run.sh prints beside the measured time.
estimate() {  # estimate NAME PRECISION MODEL_FILE KILN_INSPECT_FLAGS...
  local line=$1 precision=$2 file=$3
  shift 3
  for chip in h100 h200; do
    line+=" $($kiln inspect "$file" --cost $chip "$@" | awk -v p="$precision" '
      p == "fp32" && $1 == "estimated_ms:" { print $2 } p == "bf16" && $1 == "bf16" { print $2 }')"
  done
  echo "$line" >>"$out/models/ESTIMATES"
}
estimate elementwise_bench fp32 scripts/gpu_bundle/elementwise.kgraph.txt --input "x=$elements"
estimate gemm_bench fp32 scripts/gpu_bundle/gemm.kgraph.txt --input "x=${gemm}x$gemm"
estimate gemm_bf16_bench fp32 scripts/gpu_bundle/gemm_bf16.kgraph.txt --input "x=${gemm}x$gemm"
estimate resnet fp32 $data/resnet/model.onnx --input x=2x3x64x64
estimate transformer fp32 $data/transformer/model.onnx --input x=2x5x32
estimate lstm fp32 $data/lstm/model.onnx --input x=2x7x6
estimate resnet_50_bf16_bench bf16 "$resnet50" --inference --fetch logits \
  --input "x=${infer_batch}x3x224x224"

# The modules travel xz-compressed (their PTX and host code shrink about 30-fold); run.sh unpacks
# them.
modules=$(cd "$out/models" && ls ./*.kmod)
# shellcheck disable=SC2086  # module names are plain words
tar -C "$out/models" -cf - $modules | xz -T2 >"$out/modules.tar.xz"
rm "$out"/models/*.kmod

size=$(du -sb "$out" | cut -f1)
echo "wrote $out: $((size / 1024)) KiB (limit 48 MiB); run it with $out/run.sh"
if ((size > 48 * 1024 * 1024)); then
  echo "gpu_bundle: $out is over 48 MiB" >&2
  exit 1
fi
