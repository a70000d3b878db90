#!/usr/bin/env bash
# Data-parallel training on one machine: `kiln train` on FCN-R and ResNet-56 (Shi et al. 2016,
# models/shi2016.cc) as 1 process x 2 threads and as 2 MPI ranks x 1 thread (mpirun -n 2,
# --distributed mpi), the same global batch, the same seeded random data; prints examples per
# second of each and, for the ranks, what the gradients' all-reduces cost per step: the bytes each
# rank sends into them, their time in flight (in MPI, much of it behind backward) and the bandwidth
# that makes, and the time the step waited for them.
#
# usage: scripts/bench_distributed.sh [NAME...]       (no NAME: fcn-r resnet-56)
#
# Environment:
#   BUILD_DIR     the build with kiln, libkiln_mpi.so and kiln_write_models (default: build)
#   BENCH_STEPS   global batches per epoch (default 4); two epochs run and the second is reported
#                 (the first compiles)
#   BENCH_BATCH_DIV  divides the paper's batch sizes (default 1)
#   BENCH_OUT     where models, data and full outputs go (default: a temp dir)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
kiln=$build/tools/kiln
write_models=$build/models/kiln_write_models
steps=${BENCH_STEPS:-4}
div=${BENCH_BATCH_DIV:-1}
out=${BENCH_OUT:-$(mktemp -d /tmp/kiln_bench_distributed.XXXXXX)}
mkdir -p "$out"
for f in "$kiln" "$write_models" "$build/lib/kiln/libkiln_mpi.so"; do
  [[ -e $f ]] || { echo "bench_distributed.sh: $f not found (scripts/setup.sh, then scripts/build.sh $build)" >&2; exit 1; }
done
command -v mpirun >/dev/null || { echo "bench_distributed.sh: mpirun not found (scripts/setup.sh installs OpenMPI)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

source scripts/shi2016_networks.sh
names=("$@")
((${#names[@]})) || names=(fcn-r resnet-56)
"$write_models" "$out" "${names[@]}" >"$out/write_models.txt" || { cat "$out/write_models.txt"; exit 1; }

echo "# kiln train, 1 process x 2 threads against 2 MPI ranks x 1 thread (mpirun -n 2 --distributed mpi)"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(mpirun --version | head -1), second of two epochs of $steps global batches, SGD, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| %-9s | %5s | %9s | %9s | %6s | %8s | %12s | %6s | %10s |\n' network batch "1x2 ex/s" "2x1 ex/s" ratio "MB/step" "in flight ms" "GB/s" "waited ms"
printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' ----------- ------- ----------- ----------- -------- ---------- -------------- -------- ------------
# "epoch 2: mean loss ..., N examples/s[; all-reduce A MB a step, B ms in flight (C GB/s), D ms waited]"
epoch2() { grep '^epoch 2:' "$1" | head -1; }
for name in "${names[@]}"; do
  n=$(( shi_batch[$name] / div )); ((n >= 2)) || n=2
  n=$(( n / 2 * 2 ))
  rows=$(( n * steps ))
  spec=${shi_input[$name]}
  python3 scripts/write_npy.py "$out/$name.x.npy" f32 "${rows}x${spec#*:}" --seed 1
  python3 scripts/write_npy.py "$out/$name.labels.npy" i64 "$rows" --max "${shi_classes[$name]}" --seed 2
  common=("$out/$name.kgraph" --loss loss --data "x=$out/$name.x.npy" --data "labels=$out/$name.labels.npy"
          --optimizer sgd --lr 0.01 --batch "$n" --epochs 2)
  "$kiln" train "${common[@]}" --threads 2 >"$out/$name.1x2.txt" 2>&1
  mpirun -n 2 --oversubscribe --bind-to none "$kiln" train "${common[@]}" --threads 1 --distributed mpi \
    >"$out/$name.2x1.txt" 2>&1
  one=$(epoch2 "$out/$name.1x2.txt" | sed -n 's/.*, \([0-9.]*\) examples\/s.*/\1/p')
  two=$(epoch2 "$out/$name.2x1.txt" | sed -n 's/.*, \([0-9.]*\) examples\/s.*/\1/p')
  read -r mb flight gbs waited < <(epoch2 "$out/$name.2x1.txt" |
    sed -n 's/.*all-reduce \([0-9.]*\) MB a step, \([0-9.]*\) ms in flight (\([0-9.]*\) GB\/s), \([0-9.]*\) ms waited.*/\1 \2 \3 \4/p')
  ratio=$(awk -v a="${one:-0}" -v b="${two:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", b / a; else print "-" }')
  printf '| %-9s | %5s | %9s | %9s | %6s | %8s | %12s | %6s | %10s |\n' "$name" "$n" "${one:-failed}" "${two:-failed}" "$ratio" "${mb:--}" "${flight:--}" "${gbs:--}" "${waited:--}"
done
echo "# ratio: the ranks' examples/s over the one process's (above 1: the two ranks are faster); outputs in $out"
