#!/usr/bin/env bash
# How close kiln's fused elementwise kernels come to the memory bandwidth: y = relu(a * b + c) *
# 0.5 + a over three f32 inputs of N elements (16 bytes moved per element), compiled by kiln into
# one kernel, against an OpenMP triad loop (the bandwidth a streaming loop gets on this machine)
# and against PyTorch eager (Debian python3-torch; one kernel per op, each a pass over memory,
# with fresh outputs, and again into one preallocated tensor), all on BENCH_THREADS threads in
# the same run. GB/s counts the 16 bytes per element for
# every framework, so PyTorch's extra passes show as a lower number (a write to memory that is
# not read first also costs a read for ownership, so 16 useful bytes move about 20).
# Usage: scripts/bench_elementwise.sh   (env: BENCH_ELEMENTS, default 2^25; BENCH_ITERS, default
# 20; BENCH_THREADS, default 2; builds what it needs)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${BENCH_ELEMENTS:-33554432}
iters=${BENCH_ITERS:-20}
threads=${BENCH_THREADS:-2}
scripts/build.sh build -- kiln_bench_elementwise >/dev/null 2>&1
build/models/kiln_bench_elementwise --elements "$n" --iters "$iters" --threads "$threads"
/usr/bin/python3 - "$n" "$iters" "$threads" <<'PY'
import sys, time, statistics
import torch
n, iters, threads = (int(v) for v in sys.argv[1:4])
torch.set_num_threads(threads)
base = (torch.arange(n, dtype=torch.float32) % 1000) / 500 - 1
a, b, c = base.clone(), base.clone(), base.clone()
times = []
with torch.no_grad():
    for i in range(iters + 1):
        start = time.perf_counter()
        y = torch.relu(a * b + c) * 0.5 + a
        if i:
            times.append((time.perf_counter() - start) * 1e3)
ms = statistics.median(times)
print(f"PyTorch eager:     {ms:.3f} ms  {16 * n / ms / 1e6:.1f} GB/s")
# The same ops into one preallocated tensor (no allocation, page faults or frees per op).
t = torch.empty(n)
times = []
with torch.no_grad():
    for i in range(iters + 1):
        start = time.perf_counter()
        torch.mul(a, b, out=t).add_(c).relu_().mul_(0.5).add_(a)
        if i:
            times.append((time.perf_counter() - start) * 1e3)
ms = statistics.median(times)
print(f"PyTorch in place:  {ms:.3f} ms  {16 * n / ms / 1e6:.1f} GB/s")
PY
