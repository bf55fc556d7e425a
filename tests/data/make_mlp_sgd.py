#!/usr/bin/env python3
"""Writes mlp_sgd.txt: 30 steps of training a small MLP with torch.optim.SGD, in float32.

tests/test_training_parity.cpp trains the same MLP from the same start with tinyt (backward
and nn::optim::SGD) and compares the loss at every step and the final weights. Run from
anywhere:  python3 tests/data/make_mlp_sgd.py
Model: x (32, 8) -> Linear(8, 16) -> relu -> Linear(16, 4) -> cross_entropy (mean) against
integer labels; SGD(lr=0.1, momentum=0.9), full batch. Weights are stored as (in, out), the
layout of tinyt's x.linear(w, b), i.e. torch's Linear.weight transposed.
Format: one array per line, "name count v1 ... vn" (float32 values, exact with %.9g).
"""
import os

import torch

N, IN, HIDDEN, OUT, STEPS, LR, MOMENTUM = 32, 8, 16, 4, 30, 0.1, 0.9

def train(dtype):
    torch.manual_seed(1234)
    l1, l2 = torch.nn.Linear(IN, HIDDEN), torch.nn.Linear(HIDDEN, OUT)
    x = torch.randn(N, IN)
    y = torch.randint(0, OUT, (N,))
    init = {"w1": l1.weight.detach().T.clone(), "b1": l1.bias.detach().clone(),
            "w2": l2.weight.detach().T.clone(), "b2": l2.bias.detach().clone()}
    l1, l2, x = l1.to(dtype), l2.to(dtype), x.to(dtype)
    opt = torch.optim.SGD(list(l1.parameters()) + list(l2.parameters()), lr=LR, momentum=MOMENTUM)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(l2(torch.relu(l1(x))), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    final = {"w1": l1.weight.detach().T, "b1": l1.bias.detach(), "w2": l2.weight.detach().T, "b2": l2.bias.detach()}
    return x, y, init, losses, final

def main():
    torch.use_deterministic_algorithms(True)
    x, y, init, losses, final = train(torch.float32)
    # how far float32 rounding alone moves the result: the test's tolerance must be above this
    _, _, _, losses64, final64 = train(torch.float64)
    drift = max(abs(a - b) / abs(b) for a, b in zip(losses, losses64))
    for k in final:
        d = (final[k].double() - final64[k]).abs().max() / final64[k].abs().max()
        drift = max(drift, d.item())
    lines = []
    def put(name, values):
        lines.append(f"{name} {len(values)} " + " ".join("%.9g" % v for v in values))
    put("x", x.flatten().tolist())
    put("y", y.tolist())
    for k, t in init.items():
        put(f"init.{k}", t.flatten().tolist())
    put("loss", losses)
    for k, t in final.items():
        put(f"final.{k}", t.flatten().tolist())
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mlp_sgd.txt")
    with open(out, "w") as f:
        f.write(f"# written by make_mlp_sgd.py with torch {torch.__version__}; "
                f"float32 vs float64 relative drift {drift:.2e}\n")
        f.write("\n".join(lines) + "\n")
    print(f"wrote {out}; float32 vs float64 relative drift {drift:.2e}; loss {losses[0]:.4f} -> {losses[-1]:.4f}")

if __name__ == "__main__":
    main()
