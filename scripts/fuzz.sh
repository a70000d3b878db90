#!/usr/bin/env bash
# Runs kiln's libFuzzer targets (tests/fuzz/) under ASan+UBSan, each for SECONDS over its committed
# seeds, and prints one line per target: runs, executions a second, coverage, and the finding (a
# crash, leak or timeout file, also kept) or "no finding". New inputs go to
# build-asan/tests/fuzz/new_inputs/TARGET (never into the committed corpus).
# Usage: scripts/fuzz.sh SECONDS [TARGET...]        (default: every target)
#        RUNS=10000000 scripts/fuzz.sh 0 TARGET    (a run of that many executions, no time limit)
#        MAX_LEN=8192 ...                          (inputs of at most that many bytes; libFuzzer's
#                                                  default is the largest seed's size)
#        JOBS=2 RUNS=10000000 scripts/fuzz.sh 0 TARGET   (that many executions in all, over JOBS
#                                                  workers sharing the new inputs; random seeds)
# libFuzzer's entropic schedule is off (-entropic=0): with clang 14 it spent most of the time of
# the targets with large feature sets updating its frequencies (docs/fuzzing.md).
# scripts/test.sh runs each target for 20 s through CTest; docs/fuzzing.md records long runs.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: scripts/fuzz.sh SECONDS [TARGET...]}
shift
scripts/setup.sh >/dev/null
CC=clang-14 CXX=clang++-14 scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON \
  -DKILN_FUZZ=ON -DKILN_BUILD_COMPILER=OFF >/dev/null
# target -> its seed folder (tests/fuzz/CMakeLists.txt)
declare -A corpus=([fuzz_graph_loader]=graph [fuzz_onnx_import]=onnx [fuzz_onnx_run]=onnx
                   [fuzz_module_reader]=module [fuzz_module_run]=module_run
                   [fuzz_checkpoint_reader]=checkpoint [fuzz_npy_reader]=npy)
targets=("$@")
((${#targets[@]})) || targets=(fuzz_graph_loader fuzz_onnx_import fuzz_onnx_run fuzz_module_reader
                              fuzz_module_run fuzz_checkpoint_reader fuzz_npy_reader)
jobs=${JOBS:-1}
limits=(-timeout=10 -rss_limit_mb=4096 -entropic=0)
if ((jobs > 1)); then limits+=(-jobs="$jobs" -workers="$jobs"); else limits+=(-seed=7); fi
if [[ -n ${RUNS:-} ]]; then limits+=(-runs="$(((RUNS + jobs - 1) / jobs))"); fi
if [[ -n ${MAX_LEN:-} ]]; then limits+=(-max_len="$MAX_LEN"); fi
if ((seconds > 0)); then limits+=(-max_total_time="$seconds"); fi
findings=0
for target in "${targets[@]}"; do
  [[ -n ${corpus[$target]:-} ]] || { echo "fuzz.sh: unknown target $target" >&2; exit 2; }
  ninja -C build-asan "$target" >/dev/null
  new=build-asan/tests/fuzz/new_inputs/$target artifacts=build-asan/tests/fuzz/findings/$target/
  mkdir -p "$new" "$artifacts"
  # With JOBS, libFuzzer writes each worker's output to fuzz-N.log in its working folder (and
  # copies it into its own output when the worker ends).
  logs=$(mktemp -d)
  start=$(date +%s)
  rc=0
  (cd "$logs" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$OLDPWD/build-asan/tests/fuzz/$target" "${limits[@]}" -artifact_prefix="$OLDPWD/$artifacts" \
    "$OLDPWD/$new" "$OLDPWD/tests/fuzz/corpus/${corpus[$target]}" >driver.log 2>&1) || rc=$?
  elapsed=$(($(date +%s) - start))
  log=$(mktemp)
  workers=("$logs"/fuzz-*.log)  # none when a run fails before its workers start
  if ((jobs > 1)) && [[ -f ${workers[0]} ]]; then
    cat "${workers[@]}" >"$log"
  else
    cat "$logs/driver.log" >"$log"
  fi
  # The runs of every worker, and the most edges any one of them covered.
  runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | awk '{ s += $1 } END { print s }')
  coverage=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | sed -n 's/.* cov: \([0-9]*\).*/\1/p' |
    sort -n | tail -n 1 || true)
  if ((rc == 0)); then
    echo "$target: ${runs:-?} runs in ${elapsed} s ($(( ${runs:-0} / (elapsed > 0 ? elapsed : 1) ))/s), coverage ${coverage:-?} edges, no finding"
  else
    findings=$((findings + 1))
    echo "$target: FINDING after ${elapsed} s (exit $rc): $(ls "$artifacts" | head -n 3 | tr '\n' ' ')"
    grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -n 5 || true
  fi
  rm -rf "$logs" "$log"
done
((findings == 0))
