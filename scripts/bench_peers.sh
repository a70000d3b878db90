#!/usr/bin/env bash
# kiln against its CPU peers, measured one after the other in one run on the same machine:
# inference of a BERT-base encoder layer, a GPT-2 block, MobileNetV2, ResNet-18 and ResNet-50
# (ONNX files exported from torch.nn / torchvision at opset 17) in kiln, ONNX Runtime, OpenVINO
# (f32), PyTorch eager and torch.compile; training steps (forward, loss, backward, SGD) of a
# ResNet-18 (32x32 images), an MLP (Shi et al.'s FCN-R) and a 2-layer GPT, and of the seven Shi et
# al. 2016 networks of models/ (kiln's .kgraph from kiln_write_models against the same layers in
# scripts/bench_shi2016_torch.py; batch sizes of the paper divided by BENCH_SHI_DIV, default 8),
# in kiln (fp32 and --precision bf16), PyTorch eager and torch.compile. Prints one markdown table
# per part.
#
# usage: scripts/bench_peers.sh [NAME...]   (no NAME: every model; names as in the tables)
#
# The first run makes a virtual environment (BENCH_VENV, default out/bench-venv) with ONNX
# Runtime, OpenVINO and a CPU-lean PyTorch 2.11 + torchvision from the package index, and
# exports the models to BENCH_MODELS (default out/peers); later runs reuse both.
#
# Environment: BUILD_DIR (default build), BENCH_ITERS (timed runs, default 10), BENCH_WARMUP
# (default 2), BENCH_THREADS (default 2, for every framework), BENCH_TIMEOUT (seconds per model
# and framework, default 1200), BENCH_SHI_DIV (default 8).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
kiln=$build/tools/kiln
venv=${BENCH_VENV:-out/bench-venv}
models_dir=${BENCH_MODELS:-out/peers}
iters=${BENCH_ITERS:-10}
warmup=${BENCH_WARMUP:-2}
threads=${BENCH_THREADS:-2}
limit=${BENCH_TIMEOUT:-1200}
shi_div=${BENCH_SHI_DIV:-8}
write_models=$build/models/kiln_write_models
for f in "$kiln" "$write_models"; do
  [[ -x $f ]] || { echo "bench_peers.sh: $f not found (build it: scripts/build.sh $build -- kiln kiln_write_models)" >&2; exit 1; }
done
source scripts/shi2016_networks.sh

if [[ ! -x $venv/bin/python ]]; then
  echo "# making $venv (ONNX Runtime, OpenVINO, PyTorch 2.11 CPU, torchvision)" >&2
  python3 -m venv "$venv" 2>/dev/null || { apt-get install -y python3-venv >&2 && python3 -m venv "$venv"; } || exit 1
  pip=("$venv/bin/pip" install -q)
  wheels=$(mktemp -d)
  # PyPI's torch wheel depends on the whole CUDA stack (several GB); its CPU part needs only
  # these (see ../shared/TOOLCHAIN.md).
  "${pip[@]}" onnxruntime openvino onnx numpy &&
    "$venv/bin/pip" download -q --no-deps torch==2.11.0 -d "$wheels" &&
    "${pip[@]}" --no-deps "$wheels"/torch-*.whl &&
    "${pip[@]}" nvidia-cufile nvidia-nvshmem-cu13==3.4.5 nvidia-cusparselt-cu13 filelock \
      typing-extensions sympy networkx jinja2 fsspec pillow &&
    "${pip[@]}" --no-deps torchvision==0.26.0 || { rm -rf "$venv" "$wheels"; exit 1; }
  rm -rf "$wheels"
fi
LD_LIBRARY_PATH=$(ls -d "$PWD/$venv"/lib/python3*/site-packages/nvidia/*/lib 2>/dev/null | tr '\n' ':')/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
python=$venv/bin/python
if [[ ! -f $models_dir/gpt_train.inputs ]]; then
  echo "# exporting the models to $models_dir" >&2
  "$python" scripts/bench_peers.py export "$models_dir" >"$models_dir.export.log" 2>&1 || { tail "$models_dir.export.log"; exit 1; }
fi

inference=(bert_layer gpt2_block mobilenet_v2 resnet18 resnet50)
training=(resnet18_train mlp_train gpt_train "${shi_networks[@]}")
names=("$@")
((${#names[@]})) || names=("${inference[@]}" "${training[@]}")
logs=$(mktemp -d /tmp/kiln_bench_peers.XXXXXX)
shi_dir=$models_dir/shi2016
mkdir -p "$shi_dir"
for name in "${names[@]}"; do
  [[ -n ${shi_batch[$name]:-} && ! -f $shi_dir/$name.kgraph ]] || continue
  "$write_models" "$shi_dir" "$name" >"$logs/write_models.txt" 2>&1 || { cat "$logs/write_models.txt"; exit 1; }
done

field() { sed -n "s/^$1: \([^ ]*\).*/\1/p" "$2" | head -1; }
shi_batch_of() { local n=$(( shi_batch[$1] / shi_div )); ((n >= 1)) || n=1; echo "$n"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else printf "-" }'; }
# The smaller of the numbers among the arguments ("-" if none).
best() { printf '%s\n' "$@" | awk '/^[0-9.]+$/ { if (m == "" || $1 < m) m = $1 } END { print (m == "" ? "-" : m) }'; }
# kiln bench on one model (an exported .onnx with its .inputs, or a Shi et al. network's .kgraph
# at batch $shi_div-th of the paper's): prints "median compile_ms reference-steps"
kiln_run() {
  local name=$1 log=$2 model feeds; shift 2
  if [[ -n ${shi_batch[$name]:-} ]]; then
    model=$shi_dir/$name.kgraph
    mapfile -t feeds < <(shi_input_flags "$name" "$(shi_batch_of "$name")")
  else
    model=$models_dir/$name.onnx
    read -r -a feeds <"$models_dir/$name.inputs"
  fi
  timeout "$limit" "$kiln" bench "$model" "${feeds[@]}" \
    --iters "$iters" --warmup "$warmup" --threads "$threads" "$@" >"$log" 2>&1
  local ms; ms=$(field median_ms "$log"); [[ -n $ms ]] || ms=failed
  local refs; refs=$(sed -n 's/^steps: .*reference steps \([0-9]*\))/\1/p' "$log" | head -1)
  echo "$ms $(field compile_ms "$log") ${refs:--}"
}

echo "# kiln against ONNX Runtime, OpenVINO (f32), PyTorch eager and torch.compile, CPU"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $threads threads each, median of $iters runs after $warmup warm-up, load average $(cut -d' ' -f1-3 /proc/loadavg)"
header_done=0
for name in "${names[@]}"; do
  [[ " ${inference[*]} " == *" $name "* ]] || continue
  if ((!header_done)); then
    echo
    echo "| inference | kiln ms | ORT ms | OpenVINO ms | eager ms | compile ms | kiln / best | kiln / ORT | kiln compile ms | ref steps |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    header_done=1
  fi
  read -r kms kcompile krefs < <(kiln_run "$name" "$logs/$name.kiln.txt")
  timeout "$limit" "$python" scripts/bench_peers.py infer "$name" "$models_dir" --iters "$iters" \
    --warmup "$warmup" --threads "$threads" >"$logs/$name.peers.txt" 2>&1
  ort=$(field ort_ms "$logs/$name.peers.txt") ov=$(field openvino_ms "$logs/$name.peers.txt")
  eager=$(field eager_ms "$logs/$name.peers.txt") comp=$(field compile_ms "$logs/$name.peers.txt")
  top=$(best "$ort" "$ov" "$eager" "$comp")
  echo "| $name | $kms | ${ort:--} | ${ov:--} | ${eager:--} | ${comp:--} | $(ratio "$kms" "$top") | $(ratio "$kms" "${ort:--}") | ${kcompile:--} | $krefs |"
  [[ $kms == failed ]] && tail -3 "$logs/$name.kiln.txt" | sed 's/^/#   kiln: /'
done
header_done=0
for name in "${names[@]}"; do
  [[ " ${training[*]} " == *" $name "* ]] || continue
  if ((!header_done)); then
    echo
    echo "| training step | kiln ms | kiln bf16 ms | eager ms | compile ms | kiln / eager | kiln / compile | bf16 speed-up | ref steps (fp32/bf16) |"
    echo "|---|---|---|---|---|---|---|---|---|"
    header_done=1
  fi
  train=(--train --loss loss --optimizer sgd --lr 0.01)
  read -r kms _ krefs < <(kiln_run "$name" "$logs/$name.kiln.txt" "${train[@]}")
  read -r bms _ brefs < <(kiln_run "$name" "$logs/$name.bf16.txt" "${train[@]}" --precision bf16)
  if [[ -n ${shi_batch[$name]:-} ]]; then
    shi=(scripts/bench_shi2016_torch.py "$name" --batch "$(shi_batch_of "$name")" --iters "$iters"
         --warmup "$warmup" --threads "$threads" --lr 0.01)
    timeout "$limit" "$python" "${shi[@]}" >"$logs/$name.eager.txt" 2>&1
    timeout "$limit" "$python" "${shi[@]}" --compile >"$logs/$name.compile.txt" 2>&1
    eager=$(field median_ms "$logs/$name.eager.txt") comp=$(field median_ms "$logs/$name.compile.txt")
  else
    timeout "$limit" "$python" scripts/bench_peers.py train "$name" --iters "$iters" \
      --warmup "$warmup" --threads "$threads" >"$logs/$name.peers.txt" 2>&1
    eager=$(field eager_ms "$logs/$name.peers.txt") comp=$(field compile_ms "$logs/$name.peers.txt")
  fi
  echo "| $name | $kms | $bms | ${eager:--} | ${comp:--} | $(ratio "$kms" "$eager") | $(ratio "$kms" "$comp") | $(ratio "$kms" "$bms") | $krefs/$brefs |"
  [[ $kms == failed ]] && tail -3 "$logs/$name.kiln.txt" | sed 's/^/#   kiln: /'
  [[ $bms == failed ]] && tail -3 "$logs/$name.bf16.txt" | sed 's/^/#   kiln bf16: /'
done
echo
echo "# kiln / best: kiln's time over the fastest peer's (below 1: kiln is faster); bf16 speed-up: kiln fp32 / kiln bf16"
echo "# each framework's full output: $logs"
