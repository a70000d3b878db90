#!/usr/bin/env python3
"""PyTorch CUDA timings of the GPU bundle's models, measured the way kilnrt --repeat measures kiln:
from host input to host output (upload, forward, download), median of N runs after a warm-up, in
eager mode and with torch.compile. The architectures match the bundle's models (weights are random:
only the time is compared; correctness is checked against kiln's reference executor).

usage: bench_torch.py MODEL SHAPE [--runs N]
  (MODEL: elementwise, gemm, gemm_bf16, transformer, lstm, resnet)
Prints one line "eager_ms X compile_ms Y" ("-" where that mode is unavailable), or "skip: why".
"""
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


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    name, shape = argv[1], [int(d) for d in argv[2].split("x")]
    runs = int(dict(zip(argv[3::2], argv[4::2])).get("--runs", "20"))
    try:
        import torch
    except ImportError:
        print("skip: no PyTorch")
        return 0
    if not torch.cuda.is_available():
        print("skip: PyTorch sees no CUDA device")
        return 0
    # kiln computes f32 in f32: no TF32 for the peer either.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
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
        compiled = timed(run_with(torch.compile(model)), host, runs, torch)
        compiled = "%.4f" % compiled
    except Exception as e:  # noqa: BLE001 (report, do not fail the bundle)
        compiled = "-"
        print("torch.compile failed: %s" % str(e).splitlines()[0], file=sys.stderr)
    print("eager_ms %.4f compile_ms %s" % (eager, compiled))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
