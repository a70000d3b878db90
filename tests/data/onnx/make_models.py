#!/usr/bin/env python3
"""Exports the real PyTorch models of tests/ir/onnx_torch_models_test.cc to ONNX (opset 17).

Each model goes in a folder next to this script with
  model.onnx            torch.onnx.export of the model (opset 17, fixed seeds, float32)
  <input name>.npy      every graph input
  <output name>.npy     PyTorch's outputs for those inputs (computed in float32, as exported)
  other/                for models exported with dynamic axes: inputs of other sizes on those axes
                        and PyTorch's outputs for them
and for the loss model also grad_<name>.npy, torch autograd's gradient of the loss with respect to
some initializers and the input.

Models (small on purpose, so the committed fixtures stay far under 2 MB each):
  resnet/       torchvision.models.resnet.ResNet with BasicBlock and layers [2, 2, 2, 2] (resnet18's
                structure) at 1/8 of resnet18's width (8, 16, 32, 64 channels), 10 classes, eval
                mode with random BatchNorm statistics (folded into the convolutions by the
                exporter); input [2, 3, 64, 64], dynamic batch dim; other/: batch 1.
  transformer/  nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                batch_first=True), eval mode; input [2, 5, 32] (batch 2, sequence 5), dynamic batch
                and sequence dims (the attention reshapes then depend on run-time sizes); other/:
                [3, 4, 32].
  lstm/         nn.LSTM(input_size=6, hidden_size=8, num_layers=2, batch_first=True) with a linear
                head on the outputs; input [2, 7, 6] (batch 2, sequence 7), dynamic batch dim
                (the initial states are zeros of a run-time shape); a fixed sequence length (kiln
                unrolls recurrent layers at import); outputs y, h_n, c_n; other/: [3, 7, 6].
  cnn_loss/     conv 3x3 -> ReLU -> max pool 2 -> flatten -> linear -> cross-entropy against an
                int64 label input; a scalar output "loss", for `kiln grad`.
  cnn_bn_loss/  conv 3x3 -> BatchNorm (training mode: batch statistics) -> ReLU -> max pool 2 ->
                conv 3x3 -> average pool 2 -> linear -> cross-entropy; exported in training mode;
                the loss and the float64 autograd gradients of every parameter and of x.
  mlp/          Linear(20, 64) -> ReLU -> Linear(64, 64) -> Tanh -> Linear(64, 10); input [4, 20],
                dynamic batch dim; other/: [7, 20].
  mobilenet/    torchvision.models.mobilenet_v2(width_mult=0.25, num_classes=10) (depthwise
                convolutions, ReLU6 as Clip, inverted residuals), eval mode with random BatchNorm
                statistics; input [1, 3, 32, 32].
  loop_rnn_loss/ a recurrent classifier written as a Python loop over the fed sequence and an
                `if` on a computed value, scripted (torch.jit.script) so that the export holds an
                ONNX Loop whose trip count is the input's length and an If: h = tanh(inp(x[t]) +
                rec(h)) for every step, then h * 2 or h - 1 by the sign of sum(h), then linear ->
                cross-entropy; input x [5, 3, 4] (steps, batch, features, the steps dynamic), label
                [3]; the loss and the float64 autograd gradients of every parameter and of x;
                other/: 7 steps (the loss only).
  while_stop/   a scripted `while` loop whose stop depends on the data (scale x by 1.5 and add 0.1
                until sum |x| reaches 100, at most 50 times): an ONNX Loop with a computed
                condition; outputs y and the iteration count; input [3, 4]; other/: another x
                (another count).
  fed_reshape/  a scripted reshape of x [2, 6] to the shape fed as an int64 input [2] (then
                times 2): an ONNX Reshape whose target is computed from a fed tensor; other/: the
                shape [4, 3] instead of [3, 4].
  grid_sample_loss/ grid_sample of x [2, 3, 6, 7] at a grid of [2, 4, 5] points (a fixed base
                plus trainable offsets "offset", reaching past the image) in four modes:
                bilinear/zeros, bilinear/border with align_corners, bicubic/reflection,
                nearest/reflection with align_corners; the loss weighs each output by fixed random
                weights; the loss and the float64 autograd gradients of offset and x.
  gpt_block/    a GPT-2 style pre-norm decoder block: LayerNorm -> causal multi-head
                self-attention (4 heads, d_model 32, the mask a constant) -> residual -> LayerNorm
                -> Linear(32, 128) -> exact GELU (Erf) -> Linear(128, 32) -> residual; input
                [2, 6, 32].

Run with Debian's python3-torch and python3-torchvision (NAME...: only those models):
  /usr/bin/python3 tests/data/onnx/make_models.py [NAME...]
"""
import sys
import os

import numpy as np
import torch
import torch.nn as nn
import torchvision.models.resnet as tv_resnet

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17


class NarrowResNet(tv_resnet.ResNet):
    """torchvision's ResNet (its blocks, _make_layer and forward) with narrower stages.

    torchvision fixes the stage widths at 64, 128, 256, 512; this repeats its __init__ with
    `width` for the first stage so that an 18-layer net fits in a small fixture.
    """

    def __init__(self, layers, width, num_classes):
        nn.Module.__init__(self)
        block = tv_resnet.BasicBlock
        self._norm_layer = nn.BatchNorm2d
        self.inplanes = width
        self.dilation = 1
        self.groups = 1
        self.base_width = 64
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(block, width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(block, width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8 * block.expansion, num_classes)


class LstmHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=6, hidden_size=8, num_layers=2, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.head(out), h, c


class GptBlock(nn.Module):
    def __init__(self, d=32, heads=4, seq=6):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1))

    def forward(self, x):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=self.mask, need_weights=False)
        x = x + a
        return x + self.proj(nn.functional.gelu(self.fc(self.ln2(x))))


class CnnLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, kernel_size=3, padding=1)
        self.fc = nn.Linear(4 * 3 * 3, 5)

    def forward(self, x, label):
        h = nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
        logits = self.fc(torch.flatten(h, 1))
        return nn.functional.cross_entropy(logits, label)


class CnnBnLoss(nn.Module):
    """conv -> BatchNorm (batch statistics) -> ReLU -> max pool -> conv -> average pool -> linear
    -> cross-entropy: the gradient test's model with BatchNorm and both poolings."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 4, kernel_size=3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 6, kernel_size=3, padding=1)
        self.fc = nn.Linear(6 * 2 * 2, 5)

    def forward(self, x, label):
        h = nn.functional.max_pool2d(torch.relu(self.bn(self.conv1(x))), 2)
        h = nn.functional.avg_pool2d(self.conv2(h), 2)
        return nn.functional.cross_entropy(self.fc(torch.flatten(h, 1)), label)


class LoopRnnLoss(nn.Module):
    """A recurrent classifier as a Python loop and an `if`, for torch.jit.script."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(4, 8)
        self.rec = nn.Linear(8, 8, bias=False)
        self.fc = nn.Linear(8, 3)

    def forward(self, x, label):
        h = torch.zeros(x.size(1), 8, dtype=x.dtype)
        for t in range(x.size(0)):
            h = torch.tanh(self.inp(x[t]) + self.rec(h))
        if bool(h.sum() > 0):
            h = h * 2.0
        else:
            h = h - 1.0
        return nn.functional.cross_entropy(self.fc(h), label)


class GridSampleLoss(nn.Module):
    """grid_sample of x at a learnable grid (a fixed base plus trainable offsets, reaching past
    the image), in four modes, each output weighed by fixed random weights into one loss."""

    def __init__(self, gen):
        super().__init__()
        ys, xs = torch.meshgrid(torch.linspace(-1.25, 1.2, 4), torch.linspace(-1.1, 1.35, 5),
                                indexing="ij")
        self.register_buffer("base", torch.stack([xs, ys], -1).unsqueeze(0).repeat(2, 1, 1, 1))
        self.offset = nn.Parameter(torch.rand(2, 4, 5, 2, generator=gen) * 0.3 - 0.15)
        self.register_buffer("w", torch.rand(4, 2, 3, 4, 5, generator=gen) * 2 - 1)

    def forward(self, x):
        grid = self.base + self.offset
        sample = nn.functional.grid_sample
        a = sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        b = sample(x, grid, mode="bilinear", padding_mode="border", align_corners=True)
        c = sample(x, grid, mode="bicubic", padding_mode="reflection", align_corners=False)
        d = sample(x, grid, mode="nearest", padding_mode="reflection", align_corners=True)
        return ((a * self.w[0]).sum() + (b * self.w[1]).sum() + (c * self.w[2]).sum() +
                (d * self.w[3]).sum())


class WhileStop(nn.Module):
    """A while loop that stops on a data-dependent condition, for torch.jit.script."""

    def forward(self, x):
        y = x
        n = 0
        while bool(y.abs().sum() < 100.0) and n < 50:
            y = y * 1.5 + 0.1
            n += 1
        return y, torch.tensor(n)


class FedReshape(nn.Module):
    """x reshaped to a shape fed as a tensor, for torch.jit.script."""

    def forward(self, x, shape):
        return torch.reshape(x, [int(shape[0]), int(shape[1])]) * 2.0


def export_scripted(name, model, inputs, input_names, output_names, other_inputs, dynamic_axes):
    """Exports torch.jit.script(model) (its Python control flow becomes ONNX Loop and If), with
    PyTorch's outputs for `inputs` and, in other/, for `other_inputs`."""
    folder = os.path.join(HERE, name)
    run_and_save(model, inputs, input_names, output_names, folder)
    run_and_save(model, other_inputs, input_names, output_names, os.path.join(folder, "other"))
    torch.onnx.export(torch.jit.script(model), tuple(inputs), os.path.join(folder, "model.onnx"),
                      opset_version=OPSET, input_names=input_names, output_names=output_names,
                      dynamic_axes=dynamic_axes)
    print(f"{name}: model.onnx {os.path.getsize(os.path.join(folder, 'model.onnx'))} bytes")


def save_gradients(folder, model64, inputs):
    """d loss / d every parameter and d x, from `model64` (a float64 copy) on `inputs`."""
    x64 = inputs[0].double().requires_grad_(True)
    loss = model64(x64, *inputs[1:])
    loss.backward()
    save(folder, "grad_x", x64.grad.float().numpy())
    for name, p in model64.named_parameters():
        save(folder, "grad_" + name, p.grad.float().numpy())


def save(folder, name, array):
    np.save(os.path.join(folder, name + ".npy"), np.asarray(array))


def run_and_save(model, inputs, input_names, output_names, folder):
    os.makedirs(folder, exist_ok=True)
    with torch.no_grad():
        outputs = model(*inputs)
    if not isinstance(outputs, tuple):
        outputs = (outputs,)
    for n, t in zip(input_names, inputs):
        save(folder, n, t.numpy())
    for n, t in zip(output_names, outputs):
        save(folder, n, t.numpy())
    return {n: tuple(t.shape) for n, t in zip(output_names, outputs)}


def export(name, model, inputs, input_names, output_names, dynamic_axes=None, other_inputs=None):
    """Exports `model` traced on `inputs`; with dynamic axes, `other_inputs` (other sizes on those
    axes) and their outputs go in the subfolder other/."""
    folder = os.path.join(HERE, name)
    model.eval()
    shapes = run_and_save(model, inputs, input_names, output_names, folder)
    torch.onnx.export(model, tuple(inputs), os.path.join(folder, "model.onnx"),
                      opset_version=OPSET, input_names=input_names, output_names=output_names,
                      dynamic_axes=dynamic_axes, do_constant_folding=True)
    if other_inputs is not None:
        other = run_and_save(model, other_inputs, input_names, output_names,
                             os.path.join(folder, "other"))
        shapes = f"{shapes}, other/: {other}"
    size = os.path.getsize(os.path.join(folder, "model.onnx"))
    print(f"{name}: model.onnx {size} bytes, outputs {shapes}")
    return folder


def randomize_batchnorm(model, gen):
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=gen) * 0.2 - 0.1)
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(m.weight.shape, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.rand(m.bias.shape, generator=gen) * 0.2 - 0.1)


def main():
    only = set(sys.argv[1:])
    if only:  # the new models only, from seeds of their own
        extra_models(only)
        return
    torch.manual_seed(2026)
    gen = torch.Generator().manual_seed(2026)

    resnet = NarrowResNet([2, 2, 2, 2], width=8, num_classes=10)
    randomize_batchnorm(resnet, gen)
    export("resnet", resnet, [torch.rand(2, 3, 64, 64, generator=gen) * 2 - 1], ["x"], ["y"],
           dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
           other_inputs=[torch.rand(1, 3, 64, 64, generator=gen) * 2 - 1])

    encoder = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.1,
                                         batch_first=True)
    seq = {0: "batch", 1: "sequence"}
    export("transformer", encoder, [torch.randn(2, 5, 32, generator=gen)], ["x"], ["y"],
           dynamic_axes={"x": seq, "y": seq}, other_inputs=[torch.randn(3, 4, 32, generator=gen)])

    # The sequence length stays fixed: kiln unrolls recurrent layers at import.
    export("lstm", LstmHead(), [torch.randn(2, 7, 6, generator=gen)], ["x"], ["y", "h_n", "c_n"],
           dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}, "h_n": {1: "batch"},
                         "c_n": {1: "batch"}},
           other_inputs=[torch.randn(3, 7, 6, generator=gen)])

    cnn = CnnLoss()
    x = torch.rand(3, 2, 6, 6, generator=gen) * 2 - 1
    label = torch.tensor([0, 3, 1], dtype=torch.int64)
    folder = export("cnn_loss", cnn, [x, label], ["x", "label"], ["loss"])
    # Gradients, in float64 from the same float32 values (tighter than what kiln is held to).
    cnn64 = CnnLoss().double()
    cnn64.load_state_dict({k: v.double() for k, v in cnn.state_dict().items()})
    save_gradients(folder, cnn64, [x, label])


def extra_models(only):
    import torchvision.models as tv
    torch.manual_seed(2027)
    gen = torch.Generator().manual_seed(2027)
    if "mlp" in only:
        mlp = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh(),
                            nn.Linear(64, 10))
        export("mlp", mlp, [torch.randn(4, 20, generator=gen)], ["x"], ["y"],
               dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
               other_inputs=[torch.randn(7, 20, generator=gen)])
    if "mobilenet" in only:
        mobilenet = tv.mobilenet_v2(width_mult=0.25, num_classes=10)
        randomize_batchnorm(mobilenet, gen)
        export("mobilenet", mobilenet, [torch.rand(1, 3, 32, 32, generator=gen) * 2 - 1], ["x"],
               ["y"])
    if "gpt_block" in only:
        export("gpt_block", GptBlock(), [torch.randn(2, 6, 32, generator=gen)], ["x"], ["y"])
    if "while_stop" in only:
        export_scripted("while_stop", WhileStop(), [torch.randn(3, 4, generator=gen)], ["x"],
                        ["y", "count"], [torch.randn(3, 4, generator=gen) * 4], None)
    if "fed_reshape" in only:
        x = torch.arange(12, dtype=torch.float32).reshape(2, 6)
        export_scripted("fed_reshape", FedReshape(), [x, torch.tensor([3, 4])], ["x", "shape"],
                        ["y"], [x, torch.tensor([4, 3])], {"y": {0: "rows", 1: "columns"}})
    if "loop_rnn_loss" in only:
        model = LoopRnnLoss().eval()
        x = torch.randn(5, 3, 4, generator=gen)
        label = torch.tensor([2, 0, 1], dtype=torch.int64)
        folder = os.path.join(HERE, "loop_rnn_loss")
        run_and_save(model, [x, label], ["x", "label"], ["loss"], folder)
        other_x = torch.randn(7, 3, 4, generator=gen)
        run_and_save(model, [other_x, label], ["x", "label"], ["loss"],
                     os.path.join(folder, "other"))
        torch.onnx.export(torch.jit.script(model), (x, label), os.path.join(folder, "model.onnx"),
                          opset_version=OPSET, input_names=["x", "label"], output_names=["loss"],
                          dynamic_axes={"x": {0: "steps"}}, do_constant_folding=False)
        model64 = LoopRnnLoss().double()
        model64.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
        save_gradients(folder, model64, [x, label])
        size = os.path.getsize(os.path.join(folder, "model.onnx"))
        print(f"loop_rnn_loss: model.onnx {size} bytes")
    if "grid_sample_loss" in only:
        model = GridSampleLoss(gen)
        x = torch.rand(2, 3, 6, 7, generator=gen) * 2 - 1
        folder = os.path.join(HERE, "grid_sample_loss")
        run_and_save(model, [x], ["x"], ["loss"], folder)
        torch.onnx.export(model, (x,), os.path.join(folder, "model.onnx"), opset_version=OPSET,
                          input_names=["x"], output_names=["loss"], do_constant_folding=False,
                          dynamo=False)
        model64 = GridSampleLoss(gen).double()
        model64.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
        save_gradients(folder, model64, [x])
        size = os.path.getsize(os.path.join(folder, "model.onnx"))
        print(f"grid_sample_loss: model.onnx {size} bytes")
    if "cnn_bn_loss" in only:
        # Exported in training mode: BatchNorm normalizes with the batch's statistics (and the
        # exporter folds nothing into the convolution).
        model = CnnBnLoss()
        x = torch.rand(4, 2, 8, 8, generator=gen) * 2 - 1
        label = torch.tensor([0, 3, 1, 4], dtype=torch.int64)
        folder = os.path.join(HERE, "cnn_bn_loss")
        model.train()
        with torch.no_grad():
            loss = model(x, label)
        os.makedirs(folder, exist_ok=True)
        save(folder, "x", x.numpy())
        save(folder, "label", label.numpy())
        save(folder, "loss", loss.numpy())
        torch.onnx.export(model, (x, label), os.path.join(folder, "model.onnx"),
                          opset_version=OPSET, input_names=["x", "label"], output_names=["loss"],
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
        model64 = CnnBnLoss().double()
        model64.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
        model64.train()
        save_gradients(folder, model64, [x, label])
        size = os.path.getsize(os.path.join(folder, "model.onnx"))
        print(f"cnn_bn_loss: model.onnx {size} bytes")


if __name__ == "__main__":
    main()
