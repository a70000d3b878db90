#!/usr/bin/env python3
"""PyTorch CUDA timings of the GPU bundle's models, measured the way kilnrt --repeat measures kiln:
from host input to host output (upload, forward, download), median of N runs after a warm-up, in
eager mode and with torch.compile. The architectures match the bundle's models (weights are random:
only the time is compared; correctness is checked against kiln's reference executor).

usage: bench_torch.py MODEL SHAPE [--runs N]
  (MODEL: elementwise, gemm, gemm_bf16, transformer, lstm, resnet, resnet_50_bf16: the Shi et al.
  ResNet-50 of bench_shi2016_torch.py in eval mode under bf16 autocast, channels-last)
Prints one line "eager_ms X compile_ms Y" ("-" where that mode is unavailable), or "skip: why".

usage: bench_torch.py conv_rate SHAPE [--runs N]
cuDNN alone on the convolutions of that ResNet-50 for an input of SHAPE: each convolution run by
itself (F.conv2d, bf16, channels-last, cudnn.benchmark), timed with CUDA events (mean of N runs
after a warm-up). Prints "conv_gflop G conv_ms T conv_tflops R" (the FLOPs of all of them, the
sum of their times, and the rate), or "skip: why".

usage: bench_torch.py rates ELEMENTS N [--runs R]
The peers of kiln's device rates, timed on the device with CUDA events as KILN_PROFILE times kiln's
steps (mean over R runs after a warm-up):
  copy_gbs          a device-to-device copy of ELEMENTS floats (bytes read + written per second):
                    the HBM bandwidth a memory-bound kernel can reach on this GPU;
  gemm_tflops       torch.matmul of two f32 NxN matrices (TF32 off, as kiln's f32 gemm);
  gemm_tf32_tflops  the same with TF32 allowed (as kiln's f32 gemm compiled with --tf32);
  gemm_bf16_tflops  the same in bf16 (f32 accumulation, as cuBLASLt does for both).
Prints one line "copy_gbs X gemm_tflops Y gemm_tf32_tflops T gemm_bf16_tflops Z", or
"skip: why".
"""
import os
import statistics
import sys
import time


def build(name, torch):
    nn = torch.nn
    if name == "elementwise":
        class Elementwise(nn.Module):
            def forward(self, x):
                return torch.relu(x * 2 + 1)
        return Elementwise()
    if name in ("gemm", "gemm_bf16"):
        class Gemm(nn.Module):  # x x, as gemm.kgraph.txt (bf16: with an f32 result)
            def forward(self, x):
                if name == "gemm":
                    return torch.matmul(x, x)
                b = x.bfloat16()
                return torch.matmul(b, b).float()
        return Gemm()
    if name == "transformer":
        return nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                          batch_first=True)
    if name == "lstm":
        class LstmHead(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(input_size=6, hidden_size=8, num_layers=2, batch_first=True)
                self.head = nn.Linear(8, 3)

            def forward(self, x):
                out, (h, c) = self.lstm(x)
                return self.head(out), h, c
        return LstmHead()
    if name == "resnet":
        import torchvision.models.resnet as tv

        class NarrowResNet(tv.ResNet):  # ResNet-18's structure at 1/8 width, as the fixture
            def __init__(self, width=8):
                nn.Module.__init__(self)
                self._norm_layer, self.inplanes, self.dilation = nn.BatchNorm2d, width, 1
                self.groups, self.base_width = 1, 64
                self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
                self.bn1, self.relu = nn.BatchNorm2d(width), nn.ReLU(inplace=True)
                self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
                self.layer1 = self._make_layer(tv.BasicBlock, width, 2)
                self.layer2 = self._make_layer(tv.BasicBlock, width * 2, 2, stride=2)
                self.layer3 = self._make_layer(tv.BasicBlock, width * 4, 2, stride=2)
                self.layer4 = self._make_layer(tv.BasicBlock, width * 8, 2, stride=2)
                self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
                self.fc = nn.Linear(width * 8, 10)
        return NarrowResNet()
    if name == "resnet_50_bf16":
        from bench_shi2016_torch import resnet_50

        class Bf16ResNet50(nn.Module):  # as PyTorch runs mixed precision on tensor cores
            def __init__(self):
                super().__init__()
                self.net = resnet_50().to(memory_format=torch.channels_last)

            def forward(self, x):
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    return self.net(x.contiguous(memory_format=torch.channels_last)).float()
        return Bf16ResNet50()
    raise SystemExit("unknown model " + name)


def timed(fn, x, runs, torch):
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()
    ms = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(x)
        torch.cuda.synchronize()
        ms.append((time.perf_counter() - start) * 1e3)
    return statistics.median(ms)


def cuda_torch():
    """PyTorch with a CUDA device and TF32 off (kiln computes f32 in f32: no TF32 for the peer
    either), or None after printing why not."""
    try:
        import torch
    except ImportError:
        print("skip: no PyTorch")
        return None
    if not torch.cuda.is_available():
        print("skip: PyTorch sees no CUDA device")
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


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


def rates(elements, n, runs, torch):
    src = torch.randn(elements, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = device_ms(lambda: dst.copy_(src), runs, torch)
    del src, dst
    a = torch.randn(n, n, device="cuda")
    f32_ms = device_ms(lambda: torch.matmul(a, a), runs, torch)
    torch.backends.cuda.matmul.allow_tf32 = True
    tf32_ms = device_ms(lambda: torch.matmul(a, a), runs, torch)
    torch.backends.cuda.matmul.allow_tf32 = False
    b = a.bfloat16()
    bf16_ms = device_ms(lambda: torch.matmul(b, b), runs, torch)
    flops = 2.0 * n * n * n
    print("copy_gbs %.1f gemm_tflops %.2f gemm_tf32_tflops %.2f gemm_bf16_tflops %.2f" %
          (2 * 4 * elements / copy_ms / 1e6, flops / f32_ms / 1e9, flops / tf32_ms / 1e9,
           flops / bf16_ms / 1e9))


def conv_rate(shape, runs, torch):
    from bench_shi2016_torch import resnet_50
    nn, F = torch.nn, torch.nn.functional
    torch.backends.cudnn.benchmark = True
    model = resnet_50().cuda().eval()
    convs = []
    hooks = [m.register_forward_hook(
        lambda m, inputs, output: convs.append((m, tuple(inputs[0].shape), tuple(output.shape))))
        for m in model.modules() if isinstance(m, nn.Conv2d)]
    with torch.no_grad():
        model(torch.randn(*shape, device="cuda"))
    for hook in hooks:
        hook.remove()
    flops = total_ms = 0.0
    for m, in_shape, out_shape in convs:
        x = torch.randn(in_shape, device="cuda", dtype=torch.bfloat16)
        x = x.contiguous(memory_format=torch.channels_last)
        w = m.weight.detach().bfloat16().contiguous(memory_format=torch.channels_last)
        with torch.no_grad():
            total_ms += device_ms(
                lambda: F.conv2d(x, w, None, m.stride, m.padding, m.dilation, m.groups), runs, torch)
        n, cout, ho, wo = out_shape
        flops += 2.0 * n * cout * ho * wo * (in_shape[1] // m.groups) * m.kernel_size[0] * \
            m.kernel_size[1]
    print("conv_gflop %.2f conv_ms %.4f conv_tflops %.1f" %
          (flops / 1e9, total_ms, flops / total_ms / 1e9))


def main(argv):
    if len(argv) < 3 or (argv[1] == "rates" and len(argv) < 4):
        sys.exit(__doc__)
    rates_mode = argv[1] == "rates"
    first_flag = 4 if rates_mode else 3
    runs = int(dict(zip(argv[first_flag::2], argv[first_flag + 1::2])).get("--runs", "20"))
    torch = cuda_torch()
    if torch is None:
        return 0
    if rates_mode:
        rates(int(argv[2]), int(argv[3]), runs, torch)
        return 0
    name, shape = argv[1], [int(d) for d in argv[2].split("x")]
    if name == "conv_rate":
        conv_rate(shape, runs, torch)
        return 0
    try:
        model = build(name, torch).cuda().eval()
    except ImportError as e:
        print("skip: %s" % e)
        return 0
    host = torch.randn(*shape).numpy()

    def run_with(m):
        def fn(x):
            with torch.no_grad():
                out = m(torch.from_numpy(x).cuda())
            outs = out if isinstance(out, tuple) else (out,)
            return [o.cpu().numpy() for o in outs]
        return fn

    eager = timed(run_with(model), host, runs, torch)
    try:
        if os.environ.get("KILN_BUNDLE_TORCH_COMPILE") == "0":
            raise RuntimeError("left out (KILN_BUNDLE_TORCH_COMPILE=0)")
        compiled = timed(run_with(torch.compile(model)), host, runs, torch)
        compiled = "%.4f" % compiled
    except Exception as e:  # noqa: BLE001 (report, do not fail the bundle)
        compiled = "-"
        print("torch.compile failed: %s" % str(e).splitlines()[0], file=sys.stderr)
    print("eager_ms %.4f compile_ms %s" % (eager, compiled))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
