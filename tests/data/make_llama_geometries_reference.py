"""What PyTorch computes in float64 with make_llama_geometries.py's models, for
tests/models/test_llama_geometries.cpp:

  tests/data/llama_geometries_reference.safetensors
      prompt                    the 6 token ids fed to every model
      <geometry>.columns        1024 vocabulary ids, evenly spaced: the logits kept
      <file>.logits             (6, 1024) the logits of those ids after each prompt token
      <file>.argmax, .max       each row's most likely token over the whole vocabulary, its logit,
      .margin, .rms             its lead over the second, and the root mean square of the row
  tests/data/llama_geometries.sha256
      the sha256 of each GGUF file the logits were computed from (sha256sum's format), so that the
      test can say when the file it regenerated is not that one

where <file> is <geometry>_<layers>l_<type> (SmolLM's geometry with 2 layers, TinyLlama's with 1,
each in F16, Q8_0 and Q4_0). The weights are what the gguf package's dequantization makes of each
file's tensors (exact float32 values), widened to float64; the whole forward pass is float64.

  python3 -m venv /tmp/gv && /tmp/gv/bin/pip install torch numpy gguf==0.19.0
  /tmp/gv/bin/python tests/data/make_llama_geometries_reference.py [--keep DIR]

The model is Meta's LLaMA as make_llama_reference.py writes it (RMSNorm, rotary embeddings on
adjacent pairs, grouped-query attention, SwiGLU), in plain PyTorch.
"""
import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch

import make_llama_geometries as geo
import safetensors_file

HERE = Path(__file__).parent
PROMPT = [1, 2718, 28, 31337, 9001, 404]
MODELS = [("smollm", 2, tag) for tag in geo.TYPES] + [("tinyllama", 1, tag) for tag in geo.TYPES]
COLUMNS = 1024


def forward(w, c, tokens):
    """Logits (tokens, vocab) of the whole sequence, causal, in float64."""
    head, n = c["dim"] // c["heads"], len(tokens)
    rms = lambda x, g: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + c["eps"]) * g
    freqs = 1.0 / c["theta"] ** (torch.arange(0, head, 2).double() / head)
    angles = torch.outer(torch.arange(n).double(), freqs)
    cos, sin = angles.cos(), angles.sin()

    def rope(x):  # (n, heads, head): each adjacent pair (2i, 2i+1) turned by position * freq_i
        a, b = x[..., 0::2], x[..., 1::2]
        ca, sa = cos[:, None, :], sin[:, None, :]
        return torch.stack([a * ca - b * sa, a * sa + b * ca], -1).flatten(-2)

    x = w["token_embd.weight"][torch.tensor(tokens)]
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    for i in range(c["layers"]):
        p = f"blk.{i}."
        h = rms(x, w[p + "attn_norm.weight"])
        q = rope((h @ w[p + "attn_q.weight"].T).view(n, c["heads"], head))
        k = rope((h @ w[p + "attn_k.weight"].T).view(n, c["kv_heads"], head))
        v = (h @ w[p + "attn_v.weight"].T).view(n, c["kv_heads"], head)
        k = k.repeat_interleave(c["heads"] // c["kv_heads"], 1)
        v = v.repeat_interleave(c["heads"] // c["kv_heads"], 1)
        scores = torch.einsum("qhd,khd->hqk", q, k) / head ** 0.5
        a = torch.einsum("hqk,khd->qhd", scores.masked_fill(~causal, float("-inf")).softmax(-1), v).reshape(n, -1)
        x = x + a @ w[p + "attn_output.weight"].T
        h = rms(x, w[p + "ffn_norm.weight"])
        x = x + (torch.nn.functional.silu(h @ w[p + "ffn_gate.weight"].T) * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
    out = w["token_embd.weight"] if c["tied"] else w["output.weight"]
    return rms(x, w["output_norm.weight"]) @ out.T


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--keep", type=Path, help="write the GGUF files here and keep them (default: a temporary folder)")
    args = p.parse_args()
    reference = {"prompt": np.array(PROMPT, dtype=np.int64)}
    sums = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for geometry, layers, tag in MODELS:
            c = geo.config(geometry, layers)
            columns = np.arange(0, c["vocab"], c["vocab"] // COLUMNS)[:COLUMNS]
            reference[f"{geometry}.columns"] = columns.astype(np.int64)
            w = {}
            keep = lambda name, raw, kind, shape: w.__setitem__(name, torch.from_numpy(geo.dequantized(raw, kind, shape)).double())
            path = folder / geo.file_name(geometry, layers, tag)
            geo.write(path, c, tag, keep)
            sums.append(f"{geo.sha256(path)}  {path.name}")
            with torch.no_grad():
                logits = forward(w, c, PROMPT)
            top = logits.topk(2, -1).values
            key = path.stem
            reference[key + ".logits"] = logits[:, torch.from_numpy(columns)].float().numpy()
            reference[key + ".argmax"] = logits.argmax(-1).numpy().astype(np.int64)
            reference[key + ".max"] = top[:, 0].float().numpy()
            reference[key + ".margin"] = (top[:, 0] - top[:, 1]).float().numpy()
            reference[key + ".rms"] = logits.pow(2).mean(-1).sqrt().float().numpy()
            print(f"{key}: logits rms {reference[key + '.rms'].mean():.3f}, max {top[:, 0].max():.3f}, "
                  f"smallest margin {reference[key + '.margin'].min():.4f}", flush=True)
            del w
    safetensors_file.write(HERE / "llama_geometries_reference.safetensors", reference)
    (HERE / "llama_geometries.sha256").write_text("\n".join(sums) + "\n")


if __name__ == "__main__":
    main()
