"""The peers' side of scripts/bench_peers.sh: builds the benchmark models with torch.nn and
torchvision, exports them to ONNX (opset 17), and times them in ONNX Runtime, OpenVINO, PyTorch
eager and torch.compile on the CPU.

usage: bench_peers.py export DIR               writes DIR/NAME.onnx and DIR/NAME.inputs for every
                                               model (the inputs as kiln bench's --input flags)
       bench_peers.py infer NAME DIR [--iters N] [--warmup N] [--threads N]
       bench_peers.py train NAME [--iters N] [--warmup N] [--threads N]

`infer` times inference of DIR/NAME.onnx in ONNX Runtime (all graph optimizations) and OpenVINO
(f32 inference precision, latency hint) and of the same torch.nn module in eager mode and under
torch.compile; `train` times training steps (forward, loss, backward, SGD update) in eager mode
and under torch.compile. Each prints one line per peer, `PEER_ms: MEDIAN` (or `PEER_ms: failed`
with the reason on stderr), every peer on --threads threads, the same seeded inputs as kiln gets
(shapes from NAME.inputs; the values do not change the work).
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "data", "onnx"))
from bench_shi2016_torch import sigmoid_mlp  # noqa: E402  (FCN-R of Shi et al., as models/)
from make_models import GptBlock  # noqa: E402  (the GPT-2 block of the ONNX fixtures)

OPSET = 17


class BertLayer(nn.Module):
    """A BERT-base encoder layer (post-LayerNorm self-attention and GELU MLP, both residual), as
    nn.TransformerEncoderLayer(d, heads, 4 d, activation="gelu"), whose ONNX export fails in
    torch 2.11."""

    def __init__(self, d, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln1 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d)
        self.ln2 = nn.LayerNorm(d)

    def forward(self, x):
        x = self.ln1(x + self.attn(x, x, x, need_weights=False)[0])
        return self.ln2(x + self.proj(F.gelu(self.fc(x))))


class SmallGpt(nn.Module):
    """Token and position embeddings, `layers` GPT blocks, a final LayerNorm, the vocabulary
    head and the mean cross-entropy of the next tokens: a language model's training step."""

    def __init__(self, vocab, d, heads, seq, layers):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d)
        self.positions = nn.Parameter(torch.randn(seq, d) * 0.02)
        self.blocks = nn.Sequential(*[GptBlock(d, heads, seq) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens, labels):
        h = self.blocks(self.tokens(tokens) + self.positions)
        logits = self.head(self.ln(h))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


class WithLoss(nn.Module):
    """model(x) followed by the mean cross-entropy against integer labels."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, labels):
        return F.cross_entropy(self.model(x), labels)


def inference_models():
    import torchvision.models as tv
    return {
        # name: (module, [(input name, shape, dtype)])
        "bert_layer": (lambda: BertLayer(768, 12), [("x", (8, 128, 768), torch.float32)]),
        "gpt2_block": (lambda: GptBlock(768, 12, 256), [("x", (4, 256, 768), torch.float32)]),
        "mobilenet_v2": (lambda: tv.mobilenet_v2(), [("x", (8, 3, 224, 224), torch.float32)]),
        "resnet18": (lambda: tv.resnet18(), [("x", (8, 3, 224, 224), torch.float32)]),
        "resnet50": (lambda: tv.resnet50(), [("x", (1, 3, 224, 224), torch.float32)]),
    }


def training_models():
    import torchvision.models as tv
    return {
        "resnet18_train": (lambda: WithLoss(tv.resnet18(num_classes=10)),
                           [("x", (32, 3, 32, 32), torch.float32), ("labels", (32,), torch.int64)],
                           10),
        "mlp_train": (lambda: WithLoss(sigmoid_mlp(784, [2048, 2048, 2048], 10)),
                      [("x", (256, 784), torch.float32), ("labels", (256,), torch.int64)], 10),
        "gpt_train": (lambda: SmallGpt(vocab=4096, d=256, heads=8, seq=128, layers=2),
                      [("tokens", (8, 128), torch.int64), ("labels", (8, 128), torch.int64)],
                      4096),
    }


def make_inputs(specs, classes=2):
    gen = torch.Generator().manual_seed(1)
    out = []
    for _, shape, dtype in specs:
        if dtype.is_floating_point:
            out.append(torch.randn(*shape, generator=gen, dtype=dtype))
        else:
            out.append(torch.randint(0, classes, shape, generator=gen, dtype=dtype))
    return out


def input_flags(specs):
    return " ".join(f"--input {name}={'x'.join(str(d) for d in shape)}"
                    for name, shape, _ in specs)


def export(folder):
    os.makedirs(folder, exist_ok=True)
    # The fused "fast path" of nn.MultiheadAttention in inference has no ONNX export; eager
    # timing keeps it (it is what PyTorch users get).
    torch.backends.mha.set_fastpath_enabled(False)
    torch.manual_seed(2026)
    for name, (make, specs) in inference_models().items():
        model = make().eval()
        inputs = make_inputs(specs)
        with torch.no_grad():
            torch.onnx.export(model, tuple(inputs), os.path.join(folder, name + ".onnx"),
                              opset_version=OPSET, input_names=[s[0] for s in specs],
                              output_names=["y"], dynamo=False)
        with open(os.path.join(folder, name + ".inputs"), "w") as f:
            f.write(input_flags(specs) + "\n")
    for name, (make, specs, classes) in training_models().items():
        model = make().train()
        inputs = make_inputs(specs, classes)
        # Training mode: BatchNorm normalizes with the batch's statistics, nothing is folded.
        torch.onnx.export(model, tuple(inputs), os.path.join(folder, name + ".onnx"),
                          opset_version=OPSET, input_names=[s[0] for s in specs],
                          output_names=["loss"], training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, dynamo=False)
        with open(os.path.join(folder, name + ".inputs"), "w") as f:
            f.write(f"{input_flags(specs)} --classes {classes}\n")


def timed(step, iters, warmup):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def report(peer, run):
    try:
        ms = run()
        print(f"{peer}_ms: {ms:.2f}", flush=True)
    except Exception as e:  # a peer that cannot run a model is reported, not fatal
        print(f"{peer}_ms: failed", flush=True)
        print(f"{peer}: {type(e).__name__}: {str(e)[:300]}", file=sys.stderr)


def infer(name, folder, iters, warmup, threads):
    make, specs = inference_models()[name]
    torch.manual_seed(2026)
    model = make().eval()
    inputs = make_inputs(specs)
    path = os.path.join(folder, name + ".onnx")
    feeds = {s[0]: t.numpy() for s, t in zip(specs, inputs)}

    def ort():
        import onnxruntime as rt
        opts = rt.SessionOptions()
        opts.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        sess = rt.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        return timed(lambda: sess.run(None, feeds), iters, warmup)

    def openvino():
        import openvino as ov
        core = ov.Core()
        compiled = core.compile_model(core.read_model(path), "CPU", {
            "INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": threads,
            "PERFORMANCE_HINT": "LATENCY"})
        request = compiled.create_infer_request()
        return timed(lambda: request.infer(feeds), iters, warmup)

    def eager():
        with torch.no_grad():
            return timed(lambda: model(*inputs), iters, warmup)

    def compiled():
        fn = torch.compile(model)
        with torch.no_grad():
            return timed(lambda: fn(*inputs), iters, max(warmup, 2))

    report("ort", ort)
    report("openvino", openvino)
    report("eager", eager)
    report("compile", compiled)


def train(name, iters, warmup, threads):
    make, specs, classes = training_models()[name]

    def run(compile_it):
        torch.manual_seed(2026)
        model = make().train()
        inputs = make_inputs(specs, classes)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        fn = torch.compile(model) if compile_it else model

        def step():
            opt.zero_grad(set_to_none=True)
            loss = fn(*inputs)
            loss.backward()
            opt.step()
        return timed(step, iters, max(warmup, 2) if compile_it else warmup)

    report("eager", lambda: run(False))
    report("compile", lambda: run(True))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=["export", "infer", "train"])
    p.add_argument("args", nargs="+")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    if a.mode == "export":
        export(a.args[0])
    elif a.mode == "infer":
        infer(a.args[0], a.args[1], a.iters, a.warmup, a.threads)
    else:
        train(a.args[0], a.iters, a.warmup, a.threads)


if __name__ == "__main__":
    main()
