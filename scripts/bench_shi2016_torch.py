#!/usr/bin/python3
"""The PyTorch side of scripts/bench_shi2016.sh: times training steps (forward, backward, SGD
update) of one of the seven Shi et al. 2016 networks, defined here layer for layer as
models/shi2016.cc and models/shi2016_cnn.cc define them for kiln (same layers, shapes, loss and
optimizer; initial weights differ, which does not change the work done).

usage: bench_shi2016_torch.py MODEL --batch N [--iters 10] [--warmup 1] [--threads 2] [--lr 0.01]
                              [--precision fp32|bf16] [--device cpu|cuda] [--compile]

Prints, like `kiln bench`: first_ms (the first step), median_ms, min_ms, max_ms, loss. On a GPU
(--device cuda, as the GPU bundle runs it) each step is timed to the end of its device work
(torch.cuda.synchronize), TF32 is off (kiln's f32 is exact f32), and --compile times the
torch.compile'd model after its compiling first steps.
"""
import argparse
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def sigmoid_mlp(inputs, hidden, classes):
    layers, width = [], inputs
    for h in hidden:
        layers += [nn.Linear(width, h), nn.Sigmoid()]
        width = h
    layers.append(nn.Linear(width, classes))
    return nn.Sequential(*layers)


def alexnet_s():
    # 224 -> conv 11/4 pad 2: 55 -> pool: 27 -> conv 5 pad 2 -> pool: 13 -> 3 x conv 3 -> pool: 6.
    return nn.Sequential(
        nn.Conv2d(3, 96, 11, stride=4, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(96, 256, 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(256, 384, 3, padding=1), nn.ReLU(),
        nn.Conv2d(384, 384, 3, padding=1), nn.ReLU(),
        nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Flatten(),
        nn.Linear(256 * 6 * 6, 4096), nn.ReLU(),
        nn.Linear(4096, 4096), nn.ReLU(),
        nn.Linear(4096, 1000))


def alexnet_r():
    # cuda-convnet "18%" net without LRN: 32 -> pool 15 -> pool 7 -> pool 3; 64 * 3 * 3 = 576.
    return nn.Sequential(
        nn.Conv2d(3, 32, 5, padding=2), nn.MaxPool2d(3, 2), nn.ReLU(),
        nn.Conv2d(32, 32, 5, padding=2), nn.ReLU(), nn.AvgPool2d(3, 2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.AvgPool2d(3, 2),
        nn.Flatten(),
        nn.Linear(576, 10))


def conv_bn(cin, cout, kernel, stride, relu=True):
    """conv (no bias, padding kernel // 2) -> training-mode BatchNorm [-> relu], as ConvBn."""
    # kiln's BatchNorm: epsilon 1e-5, running = 0.9 running + 0.1 batch (PyTorch momentum 0.1).
    layers = [nn.Conv2d(cin, cout, kernel, stride=stride, padding=kernel // 2, bias=False),
              nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)]
    if relu:
        layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Bottleneck(nn.Module):
    """torchvision's Bottleneck (v1.5: stride on the 3x3), 1x1 conv + BN projection shortcut."""

    def __init__(self, cin, width, stride):
        super().__init__()
        out = 4 * width
        self.a = conv_bn(cin, width, 1, 1)
        self.b = conv_bn(width, width, 3, stride)
        self.c = conv_bn(width, out, 1, 1, relu=False)
        self.proj = conv_bn(cin, out, 1, stride, relu=False) if stride != 1 or cin != out else None

    def forward(self, x):
        h = self.c(self.b(self.a(x)))
        return F.relu(h + (self.proj(x) if self.proj is not None else x))


class BasicBlockA(nn.Module):
    """He et al.'s CIFAR basic block, option A shortcut: subsample by 2, zero-pad channels."""

    def __init__(self, cin, filters, stride):
        super().__init__()
        self.a = conv_bn(cin, filters, 3, stride)
        self.b = conv_bn(filters, filters, 3, 1, relu=False)
        self.stride, self.pad = stride, (filters - cin) // 2
        self.project = stride != 1 or cin != filters

    def forward(self, x):
        h = self.b(self.a(x))
        shortcut = x
        if self.project:
            shortcut = x[:, :, ::self.stride, ::self.stride]
            shortcut = F.pad(shortcut, (0, 0, 0, 0, self.pad, self.pad))
        return F.relu(h + shortcut)


def resnet_50():
    layers = [conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, padding=1)]
    cin = 64
    for stage, blocks in enumerate([3, 4, 6, 3]):
        width = 64 << stage
        for b in range(blocks):
            layers.append(Bottleneck(cin, width, 2 if b == 0 and stage > 0 else 1))
            cin = 4 * width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000)]
    return nn.Sequential(*layers)


def resnet_56():
    layers = [conv_bn(3, 16, 3, 1)]
    cin = 16
    for stage in range(3):
        filters = 16 << stage
        for b in range(9):
            layers.append(BasicBlockA(cin, filters, 2 if b == 0 and stage > 0 else 1))
            cin = filters
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    return nn.Sequential(*layers)


class Lstm(nn.Module):
    """PTB LSTM unrolled exactly as models/shi2016.cc builds it: embedding 10000x256, 2 layers of
    256 with weights wx [256, 1024], wh [256, 1024], b [1024] (gates i, f, g, o), zero initial state
    whose terms are left out at step 0, 32 steps, a 10000-way dense layer on every step's output."""
    STEPS, VOCAB, HIDDEN, LAYERS = 32, 10000, 256, 2

    def __init__(self):
        super().__init__()
        H = self.HIDDEN
        self.embedding = nn.Parameter(torch.empty(self.VOCAB, H).uniform_(-0.1, 0.1))
        self.wx = nn.ParameterList()
        self.wh = nn.ParameterList()
        self.b = nn.ParameterList()
        for _ in range(self.LAYERS):
            self.wx.append(nn.Parameter(nn.init.xavier_uniform_(torch.empty(H, 4 * H))))
            self.wh.append(nn.Parameter(nn.init.xavier_uniform_(torch.empty(H, 4 * H))))
            self.b.append(nn.Parameter(torch.zeros(4 * H)))
        self.softmax = nn.Linear(H, self.VOCAB)

    def forward(self, tokens):
        embedded = F.embedding(tokens, self.embedding)  # [N, T, H]
        steps = [s.reshape(-1, self.HIDDEN) for s in embedded.split(1, dim=1)]
        for layer in range(self.LAYERS):
            wx, wh, b = self.wx[layer], self.wh[layer], self.b[layer]
            h = c = None
            for t, x in enumerate(steps):
                pre = x @ wx + b
                if h is not None:
                    pre = pre + h @ wh
                i, f, g, o = pre.chunk(4, dim=1)
                new_c = torch.sigmoid(i) * torch.tanh(g)
                if c is not None:
                    new_c = torch.sigmoid(f) * c + new_c
                c = new_c
                h = torch.sigmoid(o) * torch.tanh(c)
                steps[t] = h
        outputs = torch.cat(steps, dim=1).reshape(-1, self.HIDDEN)  # (example, step) rows
        return self.softmax(outputs)


MODELS = {
    # name: (builder, input shape without the batch dim, classes)
    "fcn-s": (lambda: sigmoid_mlp(26752, [2048, 2048, 2048], 26752), (26752,), 26752),
    "alexnet-s": (alexnet_s, (3, 224, 224), 1000),
    "resnet-50": (resnet_50, (3, 224, 224), 1000),
    "fcn-r": (lambda: sigmoid_mlp(784, [2048, 4096, 1024], 10), (784,), 10),
    "alexnet-r": (alexnet_r, (3, 32, 32), 10),
    "resnet-56": (resnet_56, (3, 32, 32), 10),
    "lstm": (Lstm, None, 10000),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", choices=list(MODELS))
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                        help="bf16: torch.autocast around the forward pass and loss")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--compile", action="store_true", help="time torch.compile(model)")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    device = torch.device(args.device)
    if args.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
    build, shape, classes = MODELS[args.model]
    model = build().to(device)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    if args.compile:
        model = torch.compile(model)
    n = args.batch
    if args.model == "lstm":
        x = torch.randint(0, Lstm.VOCAB, (n, Lstm.STEPS), device=device)
        labels = torch.randint(0, classes, (n * Lstm.STEPS,), device=device)
    else:
        x = torch.randn(n, *shape, device=device)
        labels = torch.randint(0, classes, (n,), device=device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(args.device, dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = F.cross_entropy(model(x), labels)
        loss.backward()
        optimizer.step()
        return loss.item()  # waits for the step's device work

    start = time.perf_counter()
    first_loss = step()
    print(f"first_ms: {(time.perf_counter() - start) * 1e3:.3f}")
    for _ in range(args.warmup + (2 if args.compile else 0)):  # compiles settle in a few steps
        step()
    times = []
    loss = first_loss
    for _ in range(args.iters):
        start = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - start) * 1e3)
    print(f"torch: {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"iters: {len(times)} (after {args.warmup} warmup)")
    print(f"median_ms: {statistics.median(times):.3f}")
    print(f"min_ms: {min(times):.3f}")
    print(f"max_ms: {max(times):.3f}")
    print(f"loss: {loss:.6g} (first step {first_loss:.6g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
