#!/usr/bin/env bash
# The Shi et al. 2016 benchmark (kiln issue 5): one training step (forward, backward, SGD update)
# per mini-batch of each of the seven networks, timed in kiln (`kiln bench --train`, compiled cpu
# backend) and in PyTorch (scripts/bench_shi2016_torch.py, the same networks) one after the other
# in the same run, both on BENCH_THREADS threads; prints a table with the ratio kiln / PyTorch
# (below 1: kiln is faster).
#
# usage: scripts/bench_shi2016.sh [NAME...]     (no NAME: all seven, in the paper's order)
#
# Environment:
#   BUILD_DIR      the build with kiln and kiln_write_models (default: build)
#   BENCH_SMALL=1  batch sizes divided by 8 (at least 1), for a quick run; BENCH_BATCH_DIV=N
#                  divides by N instead
#   BENCH_ITERS    timed steps per network (default 5), after BENCH_WARMUP (default 1) untimed
#                  ones; the first step (kiln: compilation included) is reported apart
#   BENCH_THREADS  threads for both (default 2)
#   BENCH_BACKEND  kiln's backend (default cpu)
#   BENCH_PRECISION fp32 (default) or bf16: kiln bench --precision bf16 against PyTorch's
#                  torch.autocast("cpu", dtype=torch.bfloat16) around the forward pass and loss
#   BENCH_TIMEOUT  seconds allowed per network and framework (default 3600)
#   BENCH_OUT      where the models and each run's full output go (default: a temp dir)
#   PYTHON         the interpreter with torch (default /usr/bin/python3)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
kiln=$build/tools/kiln
write_models=$build/models/kiln_write_models
python=${PYTHON:-/usr/bin/python3}
iters=${BENCH_ITERS:-5}
warmup=${BENCH_WARMUP:-1}
threads=${BENCH_THREADS:-2}
backend=${BENCH_BACKEND:-cpu}
precision=${BENCH_PRECISION:-fp32}
[[ $precision == fp32 || $precision == bf16 ]] || { echo "bench_shi2016.sh: BENCH_PRECISION must be fp32 or bf16" >&2; exit 2; }
limit=${BENCH_TIMEOUT:-3600}
div=${BENCH_BATCH_DIV:-1}
[[ ${BENCH_SMALL:-0} == 1 && -z ${BENCH_BATCH_DIV:-} ]] && div=8
out=${BENCH_OUT:-$(mktemp -d /tmp/kiln_bench_shi2016.XXXXXX)}
mkdir -p "$out"
for f in "$kiln" "$write_models"; do
  [[ -x $f ]] || { echo "bench_shi2016.sh: $f not found (build it: scripts/build.sh $build -- kiln kiln_write_models)" >&2; exit 1; }
done

source scripts/shi2016_networks.sh
names=("$@")
((${#names[@]})) || names=("${shi_networks[@]}")
for name in "${names[@]}"; do
  [[ -n ${shi_batch[$name]:-} ]] || { echo "bench_shi2016.sh: unknown network '$name' (known: ${shi_networks[*]})" >&2; exit 2; }
done

field() { sed -n "s/^$1: \([^ ]*\).*/\1/p" "$2" | head -1; }

"$write_models" "$out" "${names[@]}" >"$out/write_models.txt" || { cat "$out/write_models.txt"; exit 1; }
echo "# kiln vs PyTorch, Shi et al. 2016 networks, one training step (fwd + bwd + SGD) per batch"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $threads threads each, kiln backend $backend, precision $precision, median of $iters steps after $warmup warmup, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# outputs in $out"
printf '| %-9s | %5s | %11s | %14s | %11s | %6s | %-22s |\n' network batch "kiln ms" "PyTorch ms" "kiln first" ratio "kiln steps (k/lib/ref)"
printf '|%s|%s|%s|%s|%s|%s|%s|\n' ----------- ------- ------------- ---------------- ------------- -------- ------------------------
for name in "${names[@]}"; do
  n=$(( shi_batch[$name] / div )); ((n >= 1)) || n=1
  mapfile -t feeds < <(shi_input_flags "$name" "$n")
  kiln_log=$out/$name.kiln.txt torch_log=$out/$name.torch.txt
  timeout "$limit" "$kiln" bench "$out/$name.kgraph" --train --loss loss --optimizer sgd --lr 0.01 \
    "${feeds[@]}" --iters "$iters" \
    --warmup "$warmup" --threads "$threads" --backend "$backend" --precision "$precision" \
    >"$kiln_log" 2>&1
  kiln_rc=$?
  timeout "$limit" "$python" scripts/bench_shi2016_torch.py "$name" --batch "$n" --iters "$iters" \
    --warmup "$warmup" --threads "$threads" --lr 0.01 --precision "$precision" >"$torch_log" 2>&1
  torch_rc=$?
  kiln_ms=$(field median_ms "$kiln_log") torch_ms=$(field median_ms "$torch_log")
  first=$(field compile_ms "$kiln_log")
  steps=$(sed -n 's/^steps: \([0-9]*\) (generated kernels \([0-9]*\), library calls \([0-9]*\), reference steps \([0-9]*\))/\1 (\2\/\3\/\4)/p' "$kiln_log")
  ((kiln_rc == 124)) && kiln_ms="timeout"
  ((torch_rc == 124)) && torch_ms="timeout"
  [[ -n $kiln_ms ]] || kiln_ms="failed"
  [[ -n $torch_ms ]] || torch_ms="failed"
  ratio="-"
  if [[ $kiln_ms =~ ^[0-9.]+$ && $torch_ms =~ ^[0-9.]+$ ]]; then
    ratio=$(awk -v a="$kiln_ms" -v b="$torch_ms" 'BEGIN { printf "%.2f", a / b }')
  fi
  printf '| %-9s | %5s | %11s | %14s | %11s | %6s | %-22s |\n' "$name" "$n" "$kiln_ms" "$torch_ms" "${first:--}" "$ratio" "${steps:--}"
  if [[ $kiln_ms == failed ]]; then sed 's/^/#   kiln: /' "$kiln_log" | tail -3; fi
  if [[ $torch_ms == failed ]]; then sed 's/^/#   torch: /' "$torch_log" | tail -3; fi
done
echo "# ratio = kiln ms / PyTorch ms (below 1: kiln faster); kiln first = first step, compile included"
