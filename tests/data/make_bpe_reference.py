"""Writes tests/data/bpe_tiny.gguf (a GGUF holding only a tokenizer: tokenizer.ggml.model "gpt2",
its tokens and merges) and bpe_reference.txt (texts and the ids Hugging Face's `tokenizers`
gives them with that vocabulary), for the byte-level BPE tokenizer of nn/text.hpp.

  /tmp/stvenv/bin/pip install tokenizers gguf==0.19.0 numpy
  /tmp/stvenv/bin/python tests/data/make_bpe_reference.py

The vocabulary is trained here on a few sentences (GPT-2's byte-level BPE: GPT-2's
pre-tokenizing regex, no prefix space, the 256 byte characters first).
"""
from pathlib import Path

import gguf
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

HERE = Path(__file__).parent
CORPUS = [
    "The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs!",
    "tinyt compiles tensors into fused kernels. It's fast, isn't it? We'll see: 123 + 4567 = 4690.",
    "Tokenizers split text into pieces: words, numbers, punctuation and spaces.\n\nNew lines too.",
    "Unicode works as bytes: café, naïve, Ünïcödé, 北京, emoji 🚀 and tabs\tinside.",
] * 3
TEXTS = [
    "The quick brown fox.",
    "It's the dog's bone; they'll see, we've won, I'm here, you'd go.",
    "  leading spaces,   several   spaces and trailing  ",
    "numbers 1234567 and 3.14159, mixed a1b2c3",
    "line one\nline two\n\n\ttabbed",
    "café naïve 北京 🚀 zébra",
    "unseen words: xylophone quizzically",
    "",
]


def main():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    vocab = tok.get_vocab()
    tokens = sorted(vocab, key=vocab.get)
    assert [vocab[t] for t in tokens] == list(range(len(tokens)))
    merges = [" ".join(m) if isinstance(m, tuple) else m for m in tok.model.get_merges()] if hasattr(tok.model, "get_merges") else None
    if merges is None:  # older tokenizers: read them from the serialized model
        import json
        merges = [" ".join(m) if isinstance(m, list) else m for m in json.loads(tok.to_str())["model"]["merges"]]

    w = gguf.GGUFWriter(HERE / "bpe_tiny.gguf", arch="llama")
    w.add_tokenizer_model("gpt2")
    w.add_token_list(tokens)
    w.add_token_merges(merges)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    lines = []
    for t in TEXTS:
        lines.append("text " + t.encode("utf-8").hex())
        lines.append("ids " + " ".join(map(str, tok.encode(t).ids)))
    (HERE / "bpe_reference.txt").write_text("\n".join(lines) + "\n")
    print(len(tokens), "tokens,", len(merges), "merges")


if __name__ == "__main__":
    main()
