#!/usr/bin/env python3
"""Writes grad_identity_torch.txt: PyTorch's gradients through non-differentiable paths, and a
few training steps of equal-initialized parameters used differently.

tests/test_grad_identity.cpp builds the same inputs (the formulas below) and checks tinyt against
these values. Run from anywhere:
    python3 tests/data/make_grad_identity_torch.py
Format: one array per line, "name count v1 ... vn" (float32 values, exact with %.9g).
"""
import math
import os

import torch
import torch.nn.functional as F


def vals(n, k):
    """The inputs: n values of cos(0.7 j + k) * 2 (tests/test_grad_identity.cpp's `vals`)."""
    return torch.tensor([math.cos(0.7 * j + k) * 2 for j in range(n)], dtype=torch.float32)


def grads(loss, inputs):
    # zeros, not None, for inputs the loss does not depend on differentiably (tinyt's API)
    return torch.autograd.grad(loss, inputs, allow_unused=True, materialize_grads=True)


def non_differentiable(put):
    # sparse cross entropy against labels cast from y and detached: d/dy is zero
    x = vals(20, 1).reshape(4, 5).requires_grad_()
    y = torch.tensor([1.2, 3.7, 0.0, 4.1], requires_grad=True)
    loss = F.cross_entropy(x, y.to(torch.int32).detach().long())
    gx, gy = grads(loss, [x, y])
    put("sce.loss", [loss.item()]), put("sce.gx", gx.flatten().tolist()), put("sce.gy", gy.tolist())

    # a differentiable path and cast paths to int and bool: only the first counts
    w = vals(6, 2).requires_grad_()
    c = vals(6, 3)
    loss = (w.sin() * c).sum() + (w.to(torch.int32) * 2).float().sum() + w.to(torch.bool).float().sum()
    put("mixed.gw", grads(loss, [w])[0].tolist())

    # comparisons: x > y selects, x * mask flows to x, nothing to y
    x = vals(6, 4).requires_grad_()
    y = vals(6, 5).requires_grad_()
    loss = (x.gt(y).float() * x.square()).sum() + (x <= y).float().sum()
    gx, gy = grads(loss, [x, y])
    put("cmp.gx", gx.tolist()), put("cmp.gy", gy.tolist())

    # argmax as a weight: (argmax + 1) * row sums
    x = vals(12, 6).reshape(3, 4).requires_grad_()
    loss = ((x.argmax(dim=1).float() + 1) * x.sum(1)).sum()
    put("argmax.gx", grads(loss, [x])[0].flatten().tolist())

    # where: the condition (from y) gets nothing, the branches their part
    x = vals(6, 7).requires_grad_()
    y = vals(6, 8).requires_grad_()
    loss = torch.where(y > 0, x * 2, x.exp()).sum() + torch.where(y.sin() > 0.5, 1.0, 0.0).sum()
    gx, gy = grads(loss, [x, y])
    put("where.gx", gx.tolist()), put("where.gy", gy.tolist())


STEPS = 3
OPTIMIZERS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "adam": lambda p: torch.optim.Adam(p, lr=0.05),
}


def training(put):
    # two Linear layers and two bare vectors, equal-initialized in pairs, used differently
    x1, x2 = vals(12, 9).reshape(4, 3), vals(12, 10).reshape(4, 3)
    t, v, u = vals(8, 11).reshape(4, 2), vals(3, 12), vals(3, 13)
    for name, make in OPTIMIZERS.items():
        params = [torch.full((2, 3), 0.25), torch.full((2, 3), 0.25), torch.zeros(2), torch.zeros(2),
                  torch.zeros(3), torch.zeros(3)]
        for p in params:
            p.requires_grad_()
        w1, w2, b1, b2, w3, w4 = params
        opt = make(params)
        for s in range(STEPS):
            opt.zero_grad()
            y1, y2 = F.linear(x1, w1, b1), F.linear(x2, w2, b2)
            loss = ((y1 - t) ** 2).mean() + (y2.tanh() * 0.5).sum() + (w3 * v).sum() + (w4 * w4 + w4 * u).sum()
            loss.backward()
            put(f"{name}.loss.{s}", [loss.item()])
            for k, p in enumerate(params):
                put(f"{name}.grad.{s}.{k}", p.grad.flatten().tolist())
            opt.step()
            for k, p in enumerate(params):
                put(f"{name}.param.{s}.{k}", p.detach().flatten().tolist())


def main():
    lines = []

    def put(name, values):
        lines.append(f"{name} {len(values)} " + " ".join("%.9g" % v for v in values))

    non_differentiable(put)
    training(put)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grad_identity_torch.txt")
    with open(out, "w") as f:
        f.write(f"# written by make_grad_identity_torch.py with torch {torch.__version__}\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
