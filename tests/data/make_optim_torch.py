#!/usr/bin/env python3
"""Writes optim_torch.txt: several steps of torch.optim on fixed params and grads.

tests/test_optim.cpp sets the same grads by hand (no backward) and checks that tinyt's
optimizers give the params torch.optim gives after every step. Run from anywhere:
    python3 tests/data/make_optim_torch.py
Format: one array per line, "name count v1 ... vn" (float32 values, exact with %.9g).
"""
import math
import os

import torch

STEPS = 5
SHAPES = [(2, 3), (4,)]

def init(k, n):
    return [math.cos(0.5 * j + k) for j in range(n)]

def grad(s, k, n):
    return [math.sin(0.37 * j + 1.1 * k + 0.71 * s) * (1 + s) for j in range(n)]

CONFIGS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
    "sgd_nesterov_wd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, weight_decay=0.1, nesterov=True),
    "sgd_wd": lambda p: torch.optim.SGD(p, lr=0.1, weight_decay=0.3),
    "adam": lambda p: torch.optim.Adam(p, lr=0.01),
    "adam_wd": lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    "adamw": lambda p: torch.optim.AdamW(p, lr=0.01),
    "adamw_wd": lambda p: torch.optim.AdamW(p, lr=0.02, betas=(0.85, 0.995), eps=1e-7, weight_decay=0.5),
}

def main():
    torch.manual_seed(0)
    lines = []
    def put(name, values):
        lines.append(f"{name} {len(values)} " + " ".join("%.9g" % v for v in values))
    sizes = [math.prod(s) for s in SHAPES]
    inits = [torch.tensor(init(k, n), dtype=torch.float32) for k, n in enumerate(sizes)]
    grads = [[torch.tensor(grad(s, k, n), dtype=torch.float32) for k, n in enumerate(sizes)] for s in range(STEPS)]
    for k, t in enumerate(inits):
        put(f"init.{k}", t.tolist())
    for s in range(STEPS):
        for k, g in enumerate(grads[s]):
            put(f"grad.{s}.{k}", g.tolist())
    for name, make in CONFIGS.items():
        params = [t.clone().reshape(shape).requires_grad_() for t, shape in zip(inits, SHAPES)]
        opt = make(params)
        for s in range(STEPS):
            opt.zero_grad()
            for p, g in zip(params, grads[s]):
                p.grad = g.clone().reshape(p.shape)
            opt.step()
            for k, p in enumerate(params):
                put(f"{name}.{s}.{k}", p.detach().flatten().tolist())
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optim_torch.txt")
    with open(out, "w") as f:
        f.write(f"# written by make_optim_torch.py with torch {torch.__version__}\n")
        f.write("\n".join(lines) + "\n")

if __name__ == "__main__":
    main()
