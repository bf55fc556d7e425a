"""Writes a small random LLaMA-architecture model as GGUF files, and what PyTorch computes with it,
for tests/test_llama.cpp and examples/llm.cpp:

  tests/data/llama_tiny_{f32,f16,q8_0,q4_0}.gguf   the same weights, stored four ways (gguf package),
                                                    with bpe_tiny.gguf's tokenizer (make_bpe_reference.py)
  tests/data/llama_tiny_reference.safetensors      the weights each file dequantizes to (gguf's
                                                    dequantization), the logits of a prompt under
                                                    each, and 16 greedy tokens after it (F32),
                                                    computed by the model below

  python3 -m venv --system-site-packages /tmp/stvenv    # a python that has torch
  /tmp/stvenv/bin/pip install gguf==0.19.0 numpy
  /tmp/stvenv/bin/python tests/data/make_llama_reference.py

The model is Meta's LLaMA (RMSNorm, rotary embeddings on adjacent pairs, grouped-query attention,
SwiGLU), written here in plain PyTorch; GGUF's "llama" architecture stores it as it is.
"""
from pathlib import Path

import gguf
import numpy as np
import torch
from gguf import GGMLQuantizationType as T

import safetensors_file

HERE = Path(__file__).parent
CONFIG = dict(vocab=400, dim=64, layers=2, heads=4, kv_heads=2, hidden=128, context=64, theta=10000.0, eps=1e-5)
PROMPT = [1, 17, 342, 5, 88, 230, 61, 399]


def random_weights(c):
    g = torch.Generator().manual_seed(18)
    r = lambda *s, scale=0.15: (torch.randn(*s, generator=g) * scale).float()
    head = c["dim"] // c["heads"]
    w = {"token_embd.weight": r(c["vocab"], c["dim"], scale=0.5), "output_norm.weight": 1 + r(c["dim"], scale=0.1),
         "output.weight": r(c["vocab"], c["dim"])}
    for i in range(c["layers"]):
        p = f"blk.{i}."
        w[p + "attn_norm.weight"] = 1 + r(c["dim"], scale=0.1)
        w[p + "attn_q.weight"] = r(c["dim"], c["dim"])
        w[p + "attn_k.weight"] = r(c["kv_heads"] * head, c["dim"])
        w[p + "attn_v.weight"] = r(c["kv_heads"] * head, c["dim"])
        w[p + "attn_output.weight"] = r(c["dim"], c["dim"])
        w[p + "ffn_norm.weight"] = 1 + r(c["dim"], scale=0.1)
        w[p + "ffn_gate.weight"] = r(c["hidden"], c["dim"])
        w[p + "ffn_up.weight"] = r(c["hidden"], c["dim"])
        w[p + "ffn_down.weight"] = r(c["dim"], c["hidden"])
    return w


def forward(w, c, tokens):
    """Logits (tokens, vocab) of the whole sequence, causal."""
    head, n = c["dim"] // c["heads"], len(tokens)
    rms = lambda x, g: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + c["eps"]) * g
    freqs = 1.0 / c["theta"] ** (torch.arange(0, head, 2).double() / head)
    angles = torch.outer(torch.arange(n).double(), freqs)
    cos, sin = angles.cos().float(), angles.sin().float()

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
    return rms(x, w["output_norm.weight"]) @ w["output.weight"].T


def bpe_vocabulary():
    r = gguf.GGUFReader(HERE / "bpe_tiny.gguf")
    strings = lambda key: [bytes(r.fields[key].parts[i]).decode() for i in r.fields[key].data]
    return strings("tokenizer.ggml.tokens"), strings("tokenizer.ggml.merges")


def write_gguf(path, w, c, qtype):
    out = gguf.GGUFWriter(path, arch="llama")
    out.add_context_length(c["context"])
    out.add_embedding_length(c["dim"])
    out.add_block_count(c["layers"])
    out.add_feed_forward_length(c["hidden"])
    out.add_head_count(c["heads"])
    out.add_head_count_kv(c["kv_heads"])
    out.add_rope_freq_base(c["theta"])
    out.add_layer_norm_rms_eps(c["eps"])
    out.add_rope_dimension_count(c["dim"] // c["heads"])
    # the byte-level BPE vocabulary of make_bpe_reference.py (bpe_tiny.gguf): 400 tokens
    tokens, merges = bpe_vocabulary()
    assert len(tokens) == c["vocab"]
    out.add_tokenizer_model("gpt2")
    out.add_token_list(tokens)
    out.add_token_merges(merges)
    out.add_bos_token_id(0)
    out.add_eos_token_id(1)
    stored = {}
    for name, t in w.items():
        a = t.numpy()
        if a.ndim == 1 or qtype == T.F32:  # norms stay float32, as llama.cpp's converter keeps them
            raw, kind = a.astype(np.float32), T.F32
        elif qtype == T.F16:
            raw, kind = a.astype(np.float16), T.F16
        else:
            raw, kind = gguf.quants.quantize(a, qtype), qtype
        out.add_tensor(name, raw, raw_dtype=None if kind in (T.F32, T.F16) else kind)
        stored[name] = torch.from_numpy(np.asarray(gguf.quants.dequantize(raw, kind), dtype=np.float32).reshape(a.shape))
    out.write_header_to_file()
    out.write_kv_data_to_file()
    out.write_tensors_to_file()
    out.close()
    return stored


def main():
    w = random_weights(CONFIG)
    reference = {"prompt": torch.tensor(PROMPT, dtype=torch.int64)}
    for tag, qtype in (("f32", T.F32), ("f16", T.F16), ("q8_0", T.Q8_0), ("q4_0", T.Q4_0)):
        stored = write_gguf(HERE / f"llama_tiny_{tag}.gguf", w, CONFIG, qtype)
        reference[f"{tag}.logits"] = forward(stored, CONFIG, PROMPT)
        if tag == "f32":  # greedy continuation: 16 tokens, each the argmax after all before it
            tokens = list(PROMPT)
            for _ in range(16):
                tokens.append(int(forward(stored, CONFIG, tokens)[-1].argmax()))
            reference["f32.greedy"] = torch.tensor(tokens[len(PROMPT):], dtype=torch.int64)
        if tag != "f32":
            for name in ("blk.0.attn_q.weight", "blk.1.ffn_down.weight"):
                reference[f"{tag}.{name}"] = stored[name]
    safetensors_file.write(HERE / "llama_tiny_reference.safetensors", {k: v.contiguous().numpy() for k, v in reference.items()})

if __name__ == "__main__":
    main()
