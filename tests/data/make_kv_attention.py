#!/usr/bin/env python3
"""Writes kv_attention.bin: a one-layer causal self-attention language model, its weights, a
token sequence and PyTorch's logits for it.

A C++ test runs the same model with tinyt (full forward, or incrementally with a KV cache) and
compares its logits with these. Run from anywhere:
    python3 tests/data/make_kv_attention.py
Model (float32 weights; the forward is computed in float64 and stored rounded to float32):
    V=48 vocab, D=32 model dim, H=4 heads of HD=8, L=12 tokens.
    x = tok_emb[tokens]                                    (L, D)
    q, k, v = x @ wq, x @ wk, x @ wv -> (L, H, HD) -> (H, L, HD)
    scores = q @ k^T / sqrt(HD), -inf where key position > query position (causal)
    att = softmax(scores, -1) @ v -> (H, L, HD) -> (L, H, HD) -> (L, D)
    h = x + att @ wo
    logits = h @ lm_head                                   (L, V)
Weights are (in, out), tinyt's layout (y = x @ w). After torch.manual_seed(0) they are drawn in
this order: tok_emb = randn(V, D); wq, wk, wv, wo = randn(D, D) * 0.2 each; lm_head =
randn(D, V) * 0.2; then tokens = randint(0, V, (L,)).
As a self-check the logits are recomputed position by position with a KV cache and must match
the full forward to 1e-10 (float64).
Format: the ASCII line "tinyt-kv-attention V=48 D=32 H=4 L=12\\n", then raw little-endian
arrays, row-major, with no padding:
    tokens  int32[L]
    tok_emb float32[V*D]
    wq      float32[D*D]
    wk      float32[D*D]
    wv      float32[D*D]
    wo      float32[D*D]
    lm_head float32[D*V]
    logits  float32[L*V]
i.e. len(header) + 4 * (L + V*D + 4*D*D + D*V + L*V) bytes in all.
"""
import math
import os
import struct

import torch

V, D, H, HD, L = 48, 32, 4, 8, 12
HEADER = f"tinyt-kv-attention V={V} D={D} H={H} L={L}\n"


def make_inputs():
    torch.manual_seed(0)
    params = {"tok_emb": torch.randn(V, D)}
    for name in ("wq", "wk", "wv", "wo"):
        params[name] = torch.randn(D, D) * 0.2
    params["lm_head"] = torch.randn(D, V) * 0.2
    tokens = torch.randint(0, V, (L,))
    return tokens, params


def heads(t):
    # (n, D) -> (H, n, HD)
    return t.reshape(t.shape[0], H, HD).transpose(0, 1)


def full_forward(tokens, p):
    x = p["tok_emb"][tokens]
    q, k, v = heads(x @ p["wq"]), heads(x @ p["wk"]), heads(x @ p["wv"])
    scores = q @ k.transpose(-1, -2) / math.sqrt(HD)
    future = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
    scores = scores.masked_fill(future, float("-inf"))
    att = (scores.softmax(-1) @ v).transpose(0, 1).reshape(L, D)
    return (x + att @ p["wo"]) @ p["lm_head"]


def cached_forward(tokens, p):
    k_cache, v_cache, out = [], [], []
    for pos in range(L):
        x = p["tok_emb"][tokens[pos : pos + 1]]  # (1, D)
        q = heads(x @ p["wq"])  # (H, 1, HD)
        k_cache.append(heads(x @ p["wk"]))
        v_cache.append(heads(x @ p["wv"]))
        k, v = torch.cat(k_cache, 1), torch.cat(v_cache, 1)  # (H, pos+1, HD)
        scores = q @ k.transpose(-1, -2) / math.sqrt(HD)  # no mask: the cache holds only the past
        att = (scores.softmax(-1) @ v).transpose(0, 1).reshape(1, D)
        out.append((x + att @ p["wo"]) @ p["lm_head"])
    return torch.cat(out, 0)


def floats(t):
    t = t.to(torch.float32).flatten().tolist()
    return struct.pack(f"<{len(t)}f", *t)


def main():
    tokens, params = make_inputs()
    p64 = {k: t.double() for k, t in params.items()}
    logits = full_forward(tokens, p64)
    diff = (logits - cached_forward(tokens, p64)).abs().max().item()
    assert diff < 1e-10, f"KV-cache forward differs from the full forward by {diff}"

    data = HEADER.encode("ascii") + struct.pack(f"<{L}i", *tokens.tolist())
    for name in ("tok_emb", "wq", "wk", "wv", "wo", "lm_head"):
        data += floats(params[name])
    data += floats(logits)
    expected = len(HEADER) + 4 * (L + V * D + 4 * D * D + D * V + L * V)
    assert len(data) == expected, (len(data), expected)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kv_attention.bin")
    with open(out, "wb") as f:
        f.write(data)
    print(f"wrote {out} ({len(data)} bytes) with torch {torch.__version__}")
    print(f"tokens {tokens.tolist()}")
    print(f"full vs KV-cache max abs diff {diff:.3e}")
    print("logits[L-1][:4] " + " ".join("%.9g" % v for v in logits[-1, :4].float().tolist()))


if __name__ == "__main__":
    main()
