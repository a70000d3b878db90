#!/usr/bin/env python3
"""Makes the PyTorch autograd fixtures for tests/passes/torch_grad_test.cc.

A small CNN (conv 3x3 pad 1 -> BatchNorm in training mode -> ReLU -> max pool 2 -> linear ->
cross-entropy), fixed weights and inputs, float64. Writes each input, weight, the loss and the
gradient of the loss with respect to every weight and the input as .npy files next to this script.
Weight layouts are kiln's: conv OIHW (as PyTorch), linear weight [in, out] (PyTorch's transposed).

Run with Debian's python3-torch: /usr/bin/python3 tests/data/torch/make_fixtures.py
"""
import os

import numpy as np
import torch

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(2026)

x = rng.uniform(-1, 1, (3, 2, 6, 6))
labels = np.array([0, 3, 1], dtype=np.int64)
conv_w = rng.uniform(-0.5, 0.5, (4, 2, 3, 3))
conv_b = rng.uniform(-0.1, 0.1, (4,))
bn_gamma = rng.uniform(0.5, 1.5, (4,))
bn_beta = rng.uniform(-0.5, 0.5, (4,))
fc_w = rng.uniform(-0.5, 0.5, (36, 5))  # [in, out]
fc_b = rng.uniform(-0.1, 0.1, (5,))

tensors = {name: torch.tensor(value, dtype=torch.float64, requires_grad=True)
           for name, value in [("x", x), ("conv_w", conv_w), ("conv_b", conv_b), ("bn_gamma", bn_gamma),
                               ("bn_beta", bn_beta), ("fc_w", fc_w), ("fc_b", fc_b)]}
t = tensors
h = torch.nn.functional.conv2d(t["x"], t["conv_w"], t["conv_b"], padding=1)
h = torch.nn.functional.batch_norm(h, None, None, t["bn_gamma"], t["bn_beta"], training=True, eps=1e-5)
h = torch.nn.functional.max_pool2d(torch.relu(h), 2)
logits = h.flatten(1) @ t["fc_w"] + t["fc_b"]
loss = torch.nn.functional.cross_entropy(logits, torch.tensor(labels))
loss.backward()

np.save(os.path.join(here, "labels.npy"), labels)
np.save(os.path.join(here, "loss.npy"), loss.detach().numpy())
for name, tensor in tensors.items():
    np.save(os.path.join(here, name + ".npy"), tensor.detach().numpy())
    np.save(os.path.join(here, "grad_" + name + ".npy"), tensor.grad.numpy())
print("loss", loss.item(), "written to", here)
