"""Writes LLaMA models with random weights at the geometry of two real ones, as GGUF files (issue 35):

  smollm     SmolLM-135M's:   30 layers, width 576,  9 heads / 3 key-value heads, FFN 1536,
             vocabulary 49152, output tied to the embedding (no output.weight), as SmolLM's
  tinyllama  TinyLlama-1.1B's: 22 layers, width 2048, 32 heads / 4 key-value heads, FFN 5632,
             vocabulary 32000, its own output.weight

each in F16, Q8_0 and Q4_0 (the gguf package's Python quantizer; gguf 0.19.0 cannot write Q4_K or
Q6_K: its quantize() raises NotImplementedError for them). Context 2048, rope theta 10000, RMSNorm
eps 1e-5, as both models have. A file is named <geometry>_<layers>l_<type>.gguf, and its sha256 is
written next to it (<file>.sha256, sha256sum's format).

  python3 -m venv /tmp/gv && /tmp/gv/bin/pip install numpy gguf==0.19.0
  /tmp/gv/bin/python tests/data/make_llama_geometries.py OUT_DIR [--geometry smollm,tinyllama]
                     [--layers N] [--types f16,q8_0,q4_0]

--layers keeps the first N layers (default: all of the geometry's). The tests take 2 layers
(tests/models/test_llama_geometries.cpp), benchmarks/vs_llamacpp the whole models; a layer's
weights do not depend on how many there are, so a reduced model is the whole model's first layers.

The weights are not NumPy's random streams (which NumPy may change): each tensor's values are
splitmix64 of a counter, keyed by a 64-bit FNV-1a hash of the tensor's name, computed in uint64
arithmetic and mapped exactly to a float64 uniform in [-1, 1), so any NumPy on any machine makes
the same float32 values, and the same gguf version writes the same bytes. Matrices are uniform with
a standard deviation of 1/sqrt(fan-in) (each projection keeps its input's scale; the logits of the
normalized last state have a standard deviation near 1), norm weights 1 + a uniform of std 0.1.
The tokenizer is a SentencePiece-style ("llama") vocabulary of dummy tokens: <unk>, <s>, </s>, the
256 byte tokens, then "▁t<i>", with scores and types, which llama.cpp needs to load a file; the
models here are fed token ids, never text.
"""
import argparse
import hashlib
import math
import sys
from pathlib import Path

import numpy as np

import gguf
from gguf import GGMLQuantizationType as T

GEOMETRIES = {
    "smollm": dict(vocab=49152, dim=576, layers=30, heads=9, kv_heads=3, hidden=1536, context=2048, theta=10000.0,
                   eps=1e-5, tied=True),
    "tinyllama": dict(vocab=32000, dim=2048, layers=22, heads=32, kv_heads=4, hidden=5632, context=2048,
                      theta=10000.0, eps=1e-5, tied=False),
}
TYPES = {"f16": T.F16, "q8_0": T.Q8_0, "q4_0": T.Q4_0}
FILE_TYPES = {"f16": gguf.LlamaFileType.MOSTLY_F16, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
              "q4_0": gguf.LlamaFileType.MOSTLY_Q4_0}
U64 = np.uint64
GOLDEN = U64(0x9E3779B97F4A7C15)
CHUNK = 1 << 22


def fnv1a(text):
    h = 0xCBF29CE484222325
    for byte in text.encode():
        h = ((h ^ byte) * 0x100000001B3) % (1 << 64)
    return h


def splitmix64(z):
    z = (z ^ (z >> U64(30))) * U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> U64(27))) * U64(0x94D049BB133111EB)
    return z ^ (z >> U64(31))


def uniform(name, shape, std, mean=0.0):
    """float32 values mean + U(-a, a), a = sqrt(3) std: splitmix64 of counters 1, 2, ... keyed by the name."""
    n, key = math.prod(shape), U64(fnv1a(name))
    a = math.sqrt(3.0) * std
    out = np.empty(n, np.float32)
    with np.errstate(over="ignore"):
        for start in range(0, n, CHUNK):
            counter = np.arange(start + 1, min(n, start + CHUNK) + 1, dtype=np.uint64)
            bits = splitmix64(counter * GOLDEN + key) >> U64(11)  # 53 bits
            u = bits.astype(np.float64) * 2.0**-52 - 1.0  # exact: [-1, 1)
            out[start:start + len(u)] = (mean + u * a).astype(np.float32)
    return out.reshape(shape)


def tensors(c):
    """(name, shape, make) of every tensor, in llama.cpp's order; make() gives its float32 values."""
    head = c["dim"] // c["heads"]
    kv = c["kv_heads"] * head
    matrix = lambda name, rows, cols: (name, (rows, cols), lambda: uniform(name, (rows, cols), 1.0 / math.sqrt(cols)))
    norm = lambda name, n: (name, (n,), lambda: uniform(name, (n,), 0.1, mean=1.0))
    out = [matrix("token_embd.weight", c["vocab"], c["dim"])]
    for i in range(c["layers"]):
        p = f"blk.{i}."
        out += [norm(p + "attn_norm.weight", c["dim"]),
                matrix(p + "attn_q.weight", c["dim"], c["dim"]),
                matrix(p + "attn_k.weight", kv, c["dim"]),
                matrix(p + "attn_v.weight", kv, c["dim"]),
                matrix(p + "attn_output.weight", c["dim"], c["dim"]),
                norm(p + "ffn_norm.weight", c["dim"]),
                matrix(p + "ffn_gate.weight", c["hidden"], c["dim"]),
                matrix(p + "ffn_up.weight", c["hidden"], c["dim"]),
                matrix(p + "ffn_down.weight", c["dim"], c["hidden"])]
    out.append(norm("output_norm.weight", c["dim"]))
    if not c["tied"]:
        out.append(matrix("output.weight", c["vocab"], c["dim"]))
    return out


def config(geometry, layers=None):
    c = dict(GEOMETRIES[geometry])
    if layers is not None:
        if not 1 <= layers <= c["layers"]:
            raise SystemExit(f"--layers {layers}: {geometry} has 1 to {c['layers']} layers")
        c["layers"] = layers
    return c


def file_name(geometry, layers, tag):
    return f"{geometry}_{layers}l_{tag}.gguf"


def stored(values, tag):
    """What the file stores for a tensor (norms stay float32, as llama.cpp's converter keeps them)
    and its GGML type."""
    if values.ndim == 1:
        return values, T.F32
    if tag == "f16":
        return values.astype(np.float16), T.F16
    return gguf.quants.quantize(values, TYPES[tag]), TYPES[tag]


def dequantized(raw, kind, shape):
    """The float32 values a stored tensor stands for, as gguf dequantizes them."""
    return np.asarray(gguf.quants.dequantize(raw, kind), dtype=np.float32).reshape(shape)


def write(path, c, tag, keep=None):
    """Writes the model `c` stored as `tag` to path; `keep(name, raw, kind, shape)` sees each tensor."""
    out = gguf.GGUFWriter(str(path), arch="llama")
    out.add_name(f"random LLaMA, {c['layers']} layers, width {c['dim']}")
    out.add_context_length(c["context"])
    out.add_embedding_length(c["dim"])
    out.add_block_count(c["layers"])
    out.add_feed_forward_length(c["hidden"])
    out.add_head_count(c["heads"])
    out.add_head_count_kv(c["kv_heads"])
    out.add_rope_freq_base(c["theta"])
    out.add_layer_norm_rms_eps(c["eps"])
    out.add_rope_dimension_count(c["dim"] // c["heads"])
    out.add_vocab_size(c["vocab"])
    out.add_file_type(FILE_TYPES[tag])
    # a SentencePiece-style vocabulary: ids 0-2 special, 3-258 the bytes, then dummy pieces
    n = c["vocab"]
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += [f"\u2581t{i}" for i in range(len(tokens), n)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    types += [gguf.TokenType.NORMAL] * (n - len(types))
    out.add_tokenizer_model("llama")
    out.add_token_list(tokens)
    out.add_token_scores([0.0] * 259 + [-float(i) for i in range(n - 259)])
    out.add_token_types(types)
    out.add_unk_token_id(0)
    out.add_bos_token_id(1)
    out.add_eos_token_id(2)
    for name, shape, make in tensors(c):
        raw, kind = stored(make(), tag)
        out.add_tensor(name, raw, raw_dtype=None if kind in (T.F32, T.F16) else kind)
        if keep:
            keep(name, raw, kind, shape)
    out.write_header_to_file()
    out.write_kv_data_to_file()
    out.write_tensors_to_file()
    out.close()


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("out", type=Path, help="the folder to write into")
    p.add_argument("--geometry", default="smollm,tinyllama", help="comma-separated: " + ",".join(GEOMETRIES))
    p.add_argument("--layers", type=int, help="the first N layers only (default: all)")
    p.add_argument("--types", default="f16,q8_0,q4_0", help="comma-separated: " + ",".join(TYPES))
    p.add_argument("--force", action="store_true", help="write even a file whose sha256 file is there")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for geometry in args.geometry.split(","):
        if geometry not in GEOMETRIES:
            p.error(f"unknown geometry {geometry}")
        c = config(geometry, args.layers)
        for tag in args.types.split(","):
            if tag not in TYPES:
                p.error(f"unknown type {tag}")
            path = args.out / file_name(geometry, c["layers"], tag)
            check = path.with_name(path.name + ".sha256")
            # written before, completely (the sha256 file comes last): kept
            if not args.force and path.exists() and check.exists() and check.read_text().split()[0] == sha256(path):
                print(f"{path}: there", flush=True)
                continue
            check.unlink(missing_ok=True)
            write(path, c, tag)
            check.write_text(f"{sha256(path)}  {path.name}\n")
            print(f"{path}: {path.stat().st_size / 2**20:.1f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
