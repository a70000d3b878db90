#!/usr/bin/env bash
# Runs kiln's GPU checks and benchmarks from this folder (made by scripts/gpu_bundle.sh) on a GPU
# machine: no build, no network. Prints one line per check, then "N passed, M failed", then a table
# of kiln's time (beside the cost model's estimate for this GPU, kiln inspect --cost) against
# PyTorch CUDA (eager and torch.compile) for the same models, then the same for training steps
# of the seven Shi et al. networks, then the device rates of kiln's elementwise kernel and GEMMs
# (KILN_PROFILE: CUDA events around each step) against the GPU's device-to-device copy bandwidth
# and torch.matmul's rate for the same shape, then where the time goes in four models and five
# training steps. On a GPU, compute-sanitizer's memcheck runs over three models too.
#   ./run.sh                    on the GPU (backend cuda)
#   KILN_BUNDLE_BACKEND=cuda-sim ./run.sh   the same checks on the simulated device (no GPU needed)
# Environment: KILN_BUNDLE_PYTHON (default /opt/torch/.venv/bin/python3, else python3),
# KILN_BUNDLE_RUNS (timed runs per model, default 20), KILN_BUNDLE_STEP_TIMEOUT (seconds any one
# kilnrt or PyTorch command may take before it counts as failed, default 120),
# KILN_BUNDLE_TORCH_COMPILE=0 (leave out torch.compile, whose compiling takes minutes),
# KILN_BUNDLE_TIMED (an extended regular expression: time only the models whose names match;
# default all: the simulator's runs of the ResNet-50 modules take minutes).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
backend=${KILN_BUNDLE_BACKEND:-cuda}
runs=${KILN_BUNDLE_RUNS:-20}
elements=$(cat "$here/models/ELEMENTS")  # the elementwise benchmark module's input size
gemm=$(cat "$here/models/GEMM")          # the GEMM benchmark modules' N
timed_models=${KILN_BUNDLE_TIMED:-.}
python=${KILN_BUNDLE_PYTHON:-/opt/torch/.venv/bin/python3}
[[ -x $python ]] || python=python3
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln_bundle.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lib"
tar -xJf "$here/lib.tar.xz" -C "$work/lib" 2>/dev/null ||
  "$python" -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
    "$here/lib.tar.xz" "$work/lib"
export LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The models, with their modules unpacked and the inputs GENERATE lists written (write_npy.py:
# seeded, the same bytes the bundle's reference outputs were computed from; checked by SHA-256).
models="$work/models"
cp -r "$here/models" "$models" || exit 1
tar -xJf "$here/modules.tar.xz" -C "$models" 2>/dev/null ||
  "$python" -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
    "$here/modules.tar.xz" "$models" || exit 1
for list in "$models"/*/GENERATE; do
  [[ -f $list ]] || continue
  dir=$(dirname "$list")
  mkdir -p "$dir/inputs"
  while read -r input dtype dims max sha; do
    "$python" "$here/write_npy.py" "$dir/inputs/$input.npy" "$dtype" "$dims" --max "$max"
    if [[ $(sha256sum "$dir/inputs/$input.npy" | cut -d' ' -f1) != "$sha" ]]; then
      echo "run.sh: $dir/inputs/$input.npy is not the input the bundle was made with" >&2
      exit 1
    fi
  done <"$list"
done
# cuBLASLt and cuDNN, which kiln loads at run time for matrix products and convolutions: the
# loader's or the CUDA toolkit's (/usr/local/cuda/lib64, which kiln tries itself), else the copies
# in PyTorch's nvidia wheels. (A cuDNN older than the one kiln was built against leaves the
# convolutions to kiln's generated kernels, with a warning.)
for library in libcublasLt.so.13 libcudnn.so.9; do
  [[ $backend == cuda ]] || break
  ldconfig -p 2>/dev/null | grep -q "$library " && continue
  [[ -e /usr/local/cuda/lib64/$library ]] && continue
  wheels=$("$python" -c 'import nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null)
  found=$([[ -n $wheels ]] && find "$wheels" -name "$library" 2>/dev/null | head -n 1)
  [[ -n $found ]] && export LD_LIBRARY_PATH="$(dirname "$found"):$LD_LIBRARY_PATH"
done
step_timeout=${KILN_BUNDLE_STEP_TIMEOUT:-120}
export KILN_BUNDLE_TORCH_COMPILE=${KILN_BUNDLE_TORCH_COMPILE:-1}
# kilnrt and PyTorch run under a time limit each, so that a hang fails one check, not the bundle.
kilnrt="$work/kilnrt"
printf '#!/bin/sh\nexec timeout %s "%s" "$@"\n' "$step_timeout" "$here/bin/kilnrt" >"$kilnrt"
chmod +x "$kilnrt"
torch_python="$work/python"
printf '#!/bin/sh\nexec timeout %s "%s" "$@"\n' "$step_timeout" "$python" >"$torch_python"
chmod +x "$torch_python"
echo "kiln GPU bundle $(cat "$here/VERSION") on $(hostname), backend $backend, $(date -u +%FT%TZ)"
command -v nvidia-smi >/dev/null &&
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

passed=0 failed=0
check() {  # check NAME COMMAND...: one line, PASS or FAIL with the command's last line
  local name=$1 out
  shift
  if out=$("$@" 2>&1); then
    echo "PASS $name"
    passed=$((passed + 1))
  else
    echo "FAIL $name: $(printf '%s' "$out" | tail -n 1)"
    failed=$((failed + 1))
  fi
}
# run_and_compare MODEL [KILNRT FLAGS...]: runs models/MODEL.kmod on its inputs, compares every
# output with the reference executor's (and with PyTorch's where the model came from PyTorch).
run_and_compare() {
  local model=$1 dir="$models/$1" inputs=() f out="$work/out/$1" rtol=1e-3 of_largest=0
  shift
  [[ -f $dir/RTOL ]] && rtol=$(cat "$dir/RTOL")
  [[ -f $dir/OF_LARGEST ]] && of_largest=1
  for f in "$dir"/inputs/*.npy; do inputs+=(--input "$(basename "$f" .npy)=$f"); done
  "$kilnrt" "$models/$model.kmod" --backend "$backend" "${inputs[@]}" --out "$out" "$@" ||
    return 1
  for f in "$dir"/expected/*.npy; do
    "$python" "$here/compare.py" "$out/$(basename "$f")" "$f" --rtol "$rtol" --atol 1e-4 \
      --of-largest "$of_largest" || return 1
  done
  for f in "$dir"/torch/*.npy; do
    [[ -f $f ]] || continue
    "$python" "$here/compare.py" "$out/$(basename "$f")" "$f" --rtol 1e-3 --atol 1e-4 || return 1
  done
}
refused() {  # the command must fail with exit 1 (an error, not a crash)
  "$@"
  [[ $? -eq 1 ]]
}

for model in $(cat "$models/LIST"); do
  check "$model: outputs match the reference executor (rtol $(cat "$models/$model/RTOL" \
    2>/dev/null || echo 1e-3)$([[ -f $models/$model/OF_LARGEST ]] && echo ' of the largest'))" \
    run_and_compare "$model"
done
# The outputs kilnrt --repeat 2 writes come from its third run: a replay of the CUDA graph the
# second run captured (the first warms up).
for model in mlp transformer gpt_block; do
  grep -qx "$model" "$models/LIST" || continue
  check "$model: a replayed CUDA graph's outputs match too" run_and_compare "$model" --repeat 2
done
refused_saying() {  # refused_saying TEXT COMMAND...: exit 1 with TEXT in its message
  local text=$1 message
  shift
  message=$("$@" 2>&1 >/dev/null)
  [[ $? -eq 1 && $message == *"$text"* ]] || { echo "$message"; return 1; }
}
check "a plan larger than the device is refused at load, before it allocates" refused_saying \
  "the plan's device memory needs 160.0 GiB" "$kilnrt" "$models/too_big.kmod" \
  --backend "$backend"
check "a ResNet-50 training step at batch 2048 is refused at load, before it allocates" \
  refused_saying "the plan's device memory needs" "$kilnrt" \
  "$models/train_resnet_50_too_big.kmod" --backend "$backend"
head -c 1000 "$models/transformer.kmod" >"$work/truncated.kmod"
check "a truncated module is refused with exit 1" refused "$kilnrt" "$work/truncated.kmod"
# On a GPU: NVIDIA's compute-sanitizer (memcheck: out-of-bounds and misaligned device accesses,
# API errors) over models that exercise generated kernels, block reductions and cuBLASLt.
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [[ $backend == cuda && -n $sanitizer ]]; then
  for model in transformer gpt_block gemm; do
    [[ -f $models/$model.kmod ]] || continue
    check "$model: compute-sanitizer memcheck finds no error" timeout "$step_timeout" \
      "$sanitizer" --tool memcheck --error-exitcode 1 --print-limit 10 "$here/bin/kilnrt" \
      "$models/$model.kmod" --backend cuda \
      --input "x=$models/$model/inputs/x.npy"
  done
fi
echo "$passed passed, $failed failed"

echo
echo "time per run, host input to host output (median of $runs; kiln: kilnrt --repeat)"
# The cost model's column for this GPU (an H200, or else the H100 figures).
chip_column=2
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null |
  grep -q H200 && chip_column=3
echo "(estimate_ms: kiln inspect --cost $( ((chip_column == 3)) && echo h200 || echo h100), made when the bundle was built)"
echo "(no_graph_ms: kiln with KILN_CUDA_GRAPHS=0, each device step issued on its own)"
printf '%-17s %-14s %12s %12s %12s %12s %12s %9s\n' model input kiln_ms no_graph_ms estimate_ms \
  eager_ms compile_ms kiln/eager
kiln_warnings() {  # what the last timed kilnrt warned (convolutions left to generated kernels)
  grep -h 'warning:' "$work/stderr" | cut -c1-400 | sed 's/^/  /'
}
write_input() {  # write_input OUT.npy SHAPE: numpy where it is, else pure Python
  "$python" "$here/write_input.py" "$1" "$2" 2>/dev/null || "$python" "$here/write_npy.py" "$1" f32 "$2"
}
write_input "$work/ew_x.npy" "$elements"
write_input "$work/gemm_x.npy" "${gemm}x$gemm"
for entry in $(cat "$models/BENCH"); do
  model=${entry%%:*} shape=${entry#*:}
  [[ $model =~ $timed_models ]] || continue
  input="$models/$model/inputs/x.npy"
  [[ $model == elementwise_bench ]] && input="$work/ew_x.npy"
  [[ $model == gemm*_bench ]] && input="$work/gemm_x.npy"
  if [[ ! -f $input ]]; then  # a benchmark's own input, too large to ship
    mkdir -p "$(dirname "$input")"
    write_input "$input" "$shape"
  fi
  "$kilnrt" "$models/$model.kmod" --backend "$backend" --input "x=$input" --repeat "$runs" \
    2>"$work/stderr" >/dev/null
  kiln_ms=$(sed -n 's/.*median_ms: \([0-9.]*\).*/\1/p' "$work/stderr")
  no_graph_ms=$(KILN_CUDA_GRAPHS=0 "$kilnrt" "$models/$model.kmod" --backend "$backend" \
    --input "x=$input" --repeat "$runs" 2>&1 >/dev/null | sed -n 's/.*median_ms: \([0-9.]*\).*/\1/p')
  torch_line=$("$torch_python" "$here/bench_torch.py" "${model%_bench}" "$shape" --runs "$runs" 2>/dev/null)
  eager=$(sed -n 's/^eager_ms \([0-9.]*\).*/\1/p' <<<"$torch_line")
  compiled=$(sed -n 's/.*compile_ms \([0-9.-]*\).*/\1/p' <<<"$torch_line")
  ratio=-
  [[ -n $kiln_ms && -n $eager ]] && ratio=$("$python" -c "print('%.2f' % ($kiln_ms / $eager))")
  estimate=$(awk -v m="$model" -v c="$chip_column" '$1 == m { print $c }' \
    "$models/ESTIMATES" 2>/dev/null)
  printf '%-17s %-14s %12s %12s %12s %12s %12s %9s\n' "$model" "$shape" "${kiln_ms:--}" \
    "${no_graph_ms:--}" "${estimate:--}" "${eager:--}" "${compiled:--}" "$ratio"
  [[ $torch_line == skip:* ]] && echo "  ($model: PyTorch ${torch_line#skip: })"
  kiln_warnings
done

echo
echo "training steps: one SGD step per run, host inputs in, the loss out (median of $runs; kiln:"
echo "kilnrt --repeat on the module; PyTorch: bench_shi2016_torch.py --device cuda, the same network,"
echo "optimizer, precision and batch)"
printf '%-24s %-9s %6s %12s %12s %12s %12s %9s\n' model precision batch kiln_ms no_graph_ms \
  eager_ms compile_ms kiln/eager
for entry in $(cat "$models/TRAIN"); do
  IFS=: read -r name network precision n <<<"$entry"
  [[ $name =~ $timed_models ]] || continue
  dir="$models/$name"
  args=(--backend "$backend" --repeat "$runs")
  for f in "$dir"/inputs/*.npy; do args+=(--input "$(basename "$f" .npy)=$f"); done
  "$kilnrt" "$models/$name.kmod" "${args[@]}" 2>"$work/stderr" >/dev/null
  kiln_ms=$(sed -n 's/.*median_ms: \([0-9.]*\).*/\1/p' "$work/stderr")
  no_graph_ms=$(KILN_CUDA_GRAPHS=0 "$kilnrt" "$models/$name.kmod" "${args[@]}" 2>&1 >/dev/null |
    sed -n 's/.*median_ms: \([0-9.]*\).*/\1/p')
  torch=("$torch_python" "$here/bench_shi2016_torch.py" "$network" --batch "$n" --iters "$runs"
    --device cuda --precision "$precision")
  eager=$("${torch[@]}" 2>/dev/null | sed -n 's/^median_ms: //p')
  compiled=
  [[ $KILN_BUNDLE_TORCH_COMPILE == 0 ]] ||
    compiled=$("${torch[@]}" --compile 2>/dev/null | sed -n 's/^median_ms: //p')
  ratio=-
  [[ -n $kiln_ms && -n $eager ]] && ratio=$("$python" -c "print('%.2f' % ($kiln_ms / $eager))")
  printf '%-24s %-9s %6s %12s %12s %12s %12s %9s\n' "$name" "$precision" "$n" "${kiln_ms:--}" \
    "${no_graph_ms:--}" "${eager:--}" "${compiled:--}" "$ratio"
  kiln_warnings
done

echo
echo "device rates (kiln: KILN_PROFILE, CUDA events around each step, mean of $runs runs after a"
echo "warm-up; peers: bench_torch.py rates, CUDA events the same way)"
# profiled MODULE INPUT PATTERN: the rate column of the KILN_PROFILE line matching PATTERN.
profiled() {
  KILN_PROFILE=1 "$kilnrt" "$models/$1.kmod" --backend "$backend" --input "x=$2" \
    --repeat "$runs" 2>&1 >/dev/null | grep -- "$3" | head -n 1 |
    sed -n 's/.* \([0-9.]*\) \(GB\/s\|TFLOP\/s\) .*/\1/p'
}
ew_gbs=$(profiled elementwise_bench "$work/ew_x.npy" "device kernel")
gemm_tf=$(profiled gemm_bench "$work/gemm_x.npy" "device library gemm")
gemm_tf32_tf=$(profiled gemm_tf32_bench "$work/gemm_x.npy" "device library gemm")
gemm_bf16_tf=$(profiled gemm_bf16_bench "$work/gemm_x.npy" "device library gemm")
peers=$("$torch_python" "$here/bench_torch.py" rates "$elements" "$gemm" --runs "$runs" 2>/dev/null)
copy_gbs=$(sed -n 's/.*copy_gbs \([0-9.]*\).*/\1/p' <<<"$peers")
torch_tf=$(sed -n 's/.*gemm_tflops \([0-9.]*\).*/\1/p' <<<"$peers")
torch_tf32_tf=$(sed -n 's/.*gemm_tf32_tflops \([0-9.]*\).*/\1/p' <<<"$peers")
torch_bf16_tf=$(sed -n 's/.*gemm_bf16_tflops \([0-9.]*\).*/\1/p' <<<"$peers")
share() {  # share KILN PEER: KILN as a percentage of PEER, or -
  [[ -n $1 && -n $2 ]] && "$python" -c "print('%.0f%%' % (100 * $1 / $2))" || echo -
}
printf '%-34s %14s %14s %8s  %s\n' measure kiln peer kiln/peer target
printf '%-34s %14s %14s %8s  %s\n' "elementwise relu(2x+1), $elements f32" "${ew_gbs:--} GB/s" \
  "${copy_gbs:--} GB/s" "$(share "$ew_gbs" "$copy_gbs")" ">= 70% of a device copy"
printf '%-34s %14s %14s %8s  %s\n' "gemm f32 ${gemm}^3" "${gemm_tf:--} TF/s" "${torch_tf:--} TF/s" \
  "$(share "$gemm_tf" "$torch_tf")" ">= 70% of torch.matmul (cuBLAS)"
printf '%-34s %14s %14s %8s  %s\n' "gemm f32 --tf32 ${gemm}^3" "${gemm_tf32_tf:--} TF/s" \
  "${torch_tf32_tf:--} TF/s" "$(share "$gemm_tf32_tf" "$torch_tf32_tf")" \
  ">= 70% of torch.matmul, allow_tf32"
printf '%-34s %14s %14s %8s  %s\n' "gemm bf16 ${gemm}^3" "${gemm_bf16_tf:--} TF/s" \
  "${torch_bf16_tf:--} TF/s" "$(share "$gemm_bf16_tf" "$torch_bf16_tf")" \
  ">= 70% of torch.matmul (cuBLAS)"
[[ $peers == skip:* ]] && echo "  (peers: PyTorch ${peers#skip: })"

# ResNet-50 inference in bf16: kiln's whole forward pass (device time: the sum of its steps' CUDA
# event times) against cuDNN running the same convolutions alone, each rate the convolutions'
# FLOPs over the time.
r50_shape=$(sed -n 's/^resnet_50_bf16_bench://p' "$models/BENCH")
if [[ -n $r50_shape && resnet_50_bf16_bench =~ $timed_models ]]; then
  r50_input="$models/resnet_50_bf16_bench/inputs/x.npy"  # the timing table wrote it
  r50_ms=$(KILN_PROFILE=1 "$kilnrt" "$models/resnet_50_bf16_bench.kmod" --backend "$backend" \
    --input "x=$r50_input" --repeat "$runs" 2>&1 >/dev/null |
    sed -n 's/^KILN_PROFILE: .* \([0-9.]*\) ms per run in steps.*/\1/p')
  conv=$("$torch_python" "$here/bench_torch.py" conv_rate "$r50_shape" --runs "$runs" 2>/dev/null)
  conv_gflop=$(sed -n 's/.*conv_gflop \([0-9.]*\).*/\1/p' <<<"$conv")
  cudnn_tf=$(sed -n 's/.*conv_tflops \([0-9.]*\).*/\1/p' <<<"$conv")
  kiln_tf=
  [[ -n $r50_ms && -n $conv_gflop ]] &&
    kiln_tf=$("$python" -c "print('%.1f' % ($conv_gflop / $r50_ms))")  # GFLOP per ms: TFLOP/s
  printf '%-34s %14s %14s %8s  %s\n' "resnet-50 bf16 inference $r50_shape" "${kiln_tf:--} TF/s" \
    "${cudnn_tf:--} TF/s" "$(share "$kiln_tf" "$cudnn_tf")" \
    ">= 50% of cuDNN's convolutions alone"
  echo "  (kiln: ${r50_ms:--} ms of device time per run for ${conv_gflop:--} GFLOP of convolutions;"
  echo "  the bf16 tensor-core peak is 989 TFLOP/s on an H100 or H200)"
  [[ $conv == skip:* ]] && echo "  (cuDNN: PyTorch ${conv#skip: })"
fi

echo
echo "where the time goes (KILN_PROFILE, per kind of step)"
for model in resnet transformer gpt_block train_resnet_56_bf16 train_alexnet_r_fp32 \
  train_fcn_s_bf16 train_alexnet_s_bf16 train_resnet_50_bf16 resnet_50_bf16_bench; do
  [[ -f $models/$model.kmod && $model =~ $timed_models ]] || continue
  echo "$model:"
  inputs=()
  for f in "$models/$model"/inputs/*.npy; do inputs+=(--input "$(basename "$f" .npy)=$f"); done
  KILN_PROFILE=1 "$kilnrt" "$models/$model.kmod" --backend "$backend" "${inputs[@]}" \
    --repeat "$runs" 2>&1 >/dev/null | sed -n '/^KILN_PROFILE/,$p' | head -n 12
done
[[ $failed -eq 0 ]]
