#!/usr/bin/env python3
"""The peers of kiln's device rates in the GPU bundle, timed on the device with CUDA events as
KILN_PROFILE times kiln's steps (mean over N runs after a warm-up):
  copy_gbs       a device-to-device copy of ELEMENTS floats (bytes read + written per second): the
                 HBM bandwidth a memory-bound kernel can reach on this GPU;
  gemm_tflops    torch.matmul of two f32 NxN matrices (TF32 off, as kiln's f32 gemm);
  gemm_bf16_tflops  the same in bf16 (f32 accumulation, as cuBLASLt does for both).
usage: device_rates.py ELEMENTS N [--runs R]
Prints one line "copy_gbs X gemm_tflops Y gemm_bf16_tflops Z", or "skip: why".
"""
import sys


def device_ms(fn, runs, torch):
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(runs):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / runs


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    elements, n = int(argv[1]), int(argv[2])
    runs = int(dict(zip(argv[3::2], argv[4::2])).get("--runs", "20"))
    try:
        import torch
    except ImportError:
        print("skip: no PyTorch")
        return 0
    if not torch.cuda.is_available():
        print("skip: PyTorch sees no CUDA device")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    src = torch.randn(elements, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = device_ms(lambda: dst.copy_(src), runs, torch)
    del src, dst
    a = torch.randn(n, n, device="cuda")
    f32_ms = device_ms(lambda: torch.matmul(a, a), runs, torch)
    b = a.bfloat16()
    bf16_ms = device_ms(lambda: torch.matmul(b, b), runs, torch)
    flops = 2.0 * n * n * n
    print("copy_gbs %.1f gemm_tflops %.2f gemm_bf16_tflops %.2f" %
          (2 * 4 * elements / copy_ms / 1e6, flops / f32_ms / 1e9, flops / bf16_ms / 1e9))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
