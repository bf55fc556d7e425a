// A LLaMA-architecture language model built from a GGUF file (llama.cpp's "llama" architecture):
// RMSNorm, rotary position embeddings on adjacent pairs, grouped-query attention, SwiGLU. Not part
// of tinyt.hpp: include <tinyt/models/llama.hpp>. Quantized weights stay packed (nn/gguf.hpp).
#pragma once

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "../../tinyt.hpp"

namespace tinyt::inline v0::models {

/// A LLaMA model over the tensors and metadata of a GGUF file.
class Llama {
 public:
  /// The sizes GGUF's "llama.*" metadata gives.
  struct Config {
    int64_t vocab = 0, dim = 0, layers = 0, heads = 0, kv_heads = 0, hidden = 0, context = 0;
    double theta = 10000.0, eps = 1e-5;
  };

  /// The model of `file` (general.architecture must be "llama"). Error naming a missing key or
  /// tensor, ShapeError when the sizes disagree.
  explicit Llama(nn::state::GGUFFile file) : file_(std::move(file)) {
    auto meta = [&](const std::string& key) -> const nn::state::GGUFValue& {
      const auto it = file_.metadata.find(key);
      if (it == file_.metadata.end()) throw Error("Llama: the GGUF has no '" + key + "'");
      return it->second;
    };
    if (meta("general.architecture").as_string() != "llama")
      throw Error("Llama: the GGUF's architecture is '" + meta("general.architecture").as_string() + "', not 'llama'");
    c_.dim = meta("llama.embedding_length").as_int();
    c_.layers = meta("llama.block_count").as_int();
    c_.hidden = meta("llama.feed_forward_length").as_int();
    c_.heads = meta("llama.attention.head_count").as_int();
    c_.kv_heads = file_.metadata.count("llama.attention.head_count_kv") ? meta("llama.attention.head_count_kv").as_int() : c_.heads;
    c_.context = meta("llama.context_length").as_int();
    if (file_.metadata.count("llama.rope.freq_base")) c_.theta = meta("llama.rope.freq_base").as_float();
    c_.eps = meta("llama.attention.layer_norm_rms_epsilon").as_float();
    // the vocabulary: the metadata's where it says, else the tokenizer's, else the embedding's rows
    if (file_.metadata.count("llama.vocab_size")) c_.vocab = meta("llama.vocab_size").as_int();
    else if (file_.metadata.count("tokenizer.ggml.tokens")) c_.vocab = static_cast<int64_t>(meta("tokenizer.ggml.tokens").as_array().size());
    else c_.vocab = weight("token_embd.weight").shape()[0].as_int();
    if (c_.heads <= 0 || c_.kv_heads <= 0 || c_.dim % c_.heads != 0 || c_.heads % c_.kv_heads != 0)
      throw ShapeError(::tinyt::detail::cat("Llama: ", c_.heads, " heads, ", c_.kv_heads, " key/value heads and width ", c_.dim, " do not fit"));
    check_weights();
  }

  const Config& config() const { return c_; }

  /// One decoding step with a KV cache: the logits (1, vocab) after `token` (a 1-element int
  /// tensor) at position `pos`, a bound Variable in [0, context) (`Variable("pos", 0, context - 1)
  /// .bind(p)`), having seen the tokens of the steps at positions 0..p-1. Every kernel takes the
  /// position as an argument, so a step under TinyJit compiles once for every position.
  Tensor step(const Tensor& token, const UOp& pos) {
    const int64_t head = c_.dim / c_.heads;
    if (caches_.empty()) {  // (kv heads, context, head) per layer, keys then values
      for (int64_t i = 0; i < 2 * c_.layers; ++i) caches_.push_back(Tensor::zeros({c_.kv_heads, c_.context, head}).contiguous());
      realize_tensors(caches_);
      std::tie(cos_, sin_) = rotations(c_.context, head);
      realize_tensors({cos_, sin_});
    }
    const sint p = sint(pos);
    const Tensor cos = cos_[{Slice(p, p + 1)}], sin = sin_[{Slice(p, p + 1)}];  // (1, 1, head/2)
    Tensor x = embed(token);
    for (int64_t i = 0; i < c_.layers; ++i) {
      const std::string n = layer(i);
      Tensor& keys = caches_[static_cast<size_t>(2 * i)];
      Tensor& values = caches_[static_cast<size_t>(2 * i + 1)];
      const Attention qkv = project(x, n, cos, sin);
      keys[{Slice(), Slice(p, p + 1)}] = qkv.k;
      values[{Slice(), Slice(p, p + 1)}] = qkv.v;
      // the query attends to every position so far (no mask: none comes after it), p + 1 of them
      const Tensor a = qkv.q.scaled_dot_product_attention(shared(keys[{Slice(), Slice(0, p + 1)}]), shared(values[{Slice(), Slice(0, p + 1)}]));
      x = finish_layer(x, a, n);
    }
    return logits(x);
  }

  /// The logits (tokens, vocab) of `tokens` (a 1-d int tensor) at positions 0, 1, ...: each
  /// position sees itself and the ones before it.
  Tensor operator()(const Tensor& tokens) const {
    const auto [cos, sin] = rotations(tokens.shape()[0].as_int(), c_.dim / c_.heads);
    Tensor x = embed(tokens);
    for (int64_t i = 0; i < c_.layers; ++i) {
      const Attention qkv = project(x, layer(i), cos, sin);
      x = finish_layer(x, qkv.q.scaled_dot_product_attention(shared(qkv.k), shared(qkv.v), {}, true), layer(i));
    }
    return logits(x);
  }

 private:
  const Tensor& weight(const std::string& name) const {
    const auto it = file_.tensors.find(name);
    if (it == file_.tensors.end()) throw Error("Llama: the GGUF has no tensor '" + name + "'");
    return it->second;
  }
  /// Each weight's shape against the metadata's sizes, so a file whose tensors disagree with its
  /// metadata fails here, naming the tensor, and not as a bare reshape deep in the first step.
  void check_weights() const {
    const int64_t kv = c_.kv_heads * (c_.dim / c_.heads);  // the keys' and values' width
    auto expect = [&](const std::string& name, const Shape& want) {
      if (const Shape got = weight(name).shape(); got != want)
        throw ShapeError(::tinyt::detail::cat("Llama: tensor '", name, "' has shape ", got, "; the metadata (width ", c_.dim,
                                              ", ", c_.heads, " heads, ", c_.kv_heads, " key/value heads, feed-forward ",
                                              c_.hidden, ", vocabulary ", c_.vocab, ") gives ", want));
    };
    expect("token_embd.weight", {c_.vocab, c_.dim});
    expect("output_norm.weight", {c_.dim});
    if (file_.tensors.count("output.weight")) expect("output.weight", {c_.vocab, c_.dim});
    for (int64_t i = 0; i < c_.layers; ++i) {
      const std::string p = layer(i);
      for (const char* norm : {"attn_norm.weight", "ffn_norm.weight"}) expect(p + norm, {c_.dim});
      expect(p + "attn_q.weight", {c_.dim, c_.dim});
      expect(p + "attn_k.weight", {kv, c_.dim});
      expect(p + "attn_v.weight", {kv, c_.dim});
      expect(p + "attn_output.weight", {c_.dim, c_.dim});
      expect(p + "ffn_gate.weight", {c_.hidden, c_.dim});
      expect(p + "ffn_up.weight", {c_.hidden, c_.dim});
      expect(p + "ffn_down.weight", {c_.dim, c_.hidden});
    }
  }
  /// x W^T: GGUF keeps PyTorch's (out, in) layout.
  Tensor linear(const Tensor& x, const std::string& name) const { return x.matmul(weight(name).cast(x.dtype()).T()); }
  Tensor rms_norm(const Tensor& x, const std::string& name) const {
    return x * (x * x).mean(-1, true).add(c_.eps).rsqrt() * weight(name);
  }
  /// cos and sin of position * theta^(-2i/head) for positions 0..n-1, (n, 1, head/2), computed in
  /// double as the reference computes them.
  std::pair<Tensor, Tensor> rotations(int64_t n, int64_t head) const {
    std::vector<float> cos, sin;
    for (int64_t t = 0; t < n; ++t)
      for (int64_t i = 0; i < head / 2; ++i) {
        const double angle = static_cast<double>(t) / std::pow(c_.theta, static_cast<double>(2 * i) / static_cast<double>(head));
        cos.push_back(static_cast<float>(std::cos(angle))), sin.push_back(static_cast<float>(std::sin(angle)));
      }
    return {Tensor::from_vector(cos, {n, 1, head / 2}), Tensor::from_vector(sin, {n, 1, head / 2})};
  }
  /// Each adjacent pair (2i, 2i+1) of the last dim turned by its angle.
  static Tensor rotate(const Tensor& x, const Tensor& cos, const Tensor& sin) {
    const auto s = x.shape().to_vector();
    const Tensor pairs = x.reshape({s[0], s[1], s[2] / 2, 2});
    const Tensor a = pairs.shrink({{0, s[0]}, {0, s[1]}, {0, s[2] / 2}, {0, 1}}).reshape({s[0], s[1], s[2] / 2});
    const Tensor b = pairs.shrink({{0, s[0]}, {0, s[1]}, {0, s[2] / 2}, {1, 2}}).reshape({s[0], s[1], s[2] / 2});
    return Tensor::stack({a * cos - b * sin, a * sin + b * cos}, -1).reshape({s[0], s[1], s[2]});
  }
  static std::string layer(int64_t i) { return "blk." + std::to_string(i) + "."; }
  Tensor embed(const Tensor& tokens) const { return weight("token_embd.weight")[{tokens}].cast(dtypes::float32); }
  Tensor logits(const Tensor& x) const {
    return linear(rms_norm(x, "output_norm.weight"), file_.tensors.count("output.weight") ? "output.weight" : "token_embd.weight");
  }
  /// A layer's queries (heads, rows, head) and keys and values (kv heads, rows, head) of `x`
  /// (rows, dim), turned by `cos` and `sin` of the rows' positions.
  struct Attention {
    Tensor q, k, v;
  };
  Attention project(const Tensor& x, const std::string& p, const Tensor& cos, const Tensor& sin) const {
    const int64_t rows = x.shape()[0].as_int(), head = c_.dim / c_.heads;
    const Tensor h = rms_norm(x, p + "attn_norm.weight");
    auto heads = [&](const char* name, int64_t count) { return linear(h, p + name).reshape({rows, count, head}); };
    return {rotate(heads("attn_q.weight", c_.heads), cos, sin).permute({1, 0, 2}),
            rotate(heads("attn_k.weight", c_.kv_heads), cos, sin).permute({1, 0, 2}),
            heads("attn_v.weight", c_.kv_heads).permute({1, 0, 2})};
  }
  /// x (rows, dim) after the layer's attention output `a` (heads, rows, head) and its SwiGLU block.
  Tensor finish_layer(const Tensor& x, const Tensor& a, const std::string& p) const {
    const Tensor y = x + linear(a.permute({1, 0, 2}).reshape({x.shape()[0], c_.dim}), p + "attn_output.weight");
    const Tensor f = rms_norm(y, p + "ffn_norm.weight");
    return y + linear(linear(f, p + "ffn_gate.weight").silu() * linear(f, p + "ffn_up.weight"), p + "ffn_down.weight");
  }
  /// Key/value rows (kv, t, d) shared by the query heads of each: (heads, t, d).
  Tensor shared(const Tensor& x) const {
    const Shape s = x.shape();
    const int64_t group = c_.heads / c_.kv_heads;
    return x.reshape({s[0], 1, s[1], s[2]}).expand({s[0], group, s[1], s[2]}).reshape({c_.heads, s[1], s[2]});
  }

  nn::state::GGUFFile file_;
  Config c_;
  std::vector<Tensor> caches_;
  Tensor cos_, sin_;
};

}  // namespace tinyt::inline v0::models
