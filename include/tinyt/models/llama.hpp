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
    c_.vocab = weight("token_embd.weight").shape()[0].as_int();
    if (c_.heads <= 0 || c_.kv_heads <= 0 || c_.dim % c_.heads != 0 || c_.heads % c_.kv_heads != 0)
      throw ShapeError(::tinyt::detail::cat("Llama: ", c_.heads, " heads, ", c_.kv_heads, " key/value heads and width ", c_.dim, " do not fit"));
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
    Tensor x = weight("token_embd.weight")[{token}].cast(dtypes::float32);     // (1, dim)
    for (int64_t i = 0; i < c_.layers; ++i) {
      const std::string n = "blk." + std::to_string(i) + ".";
      Tensor& keys = caches_[static_cast<size_t>(2 * i)];
      Tensor& values = caches_[static_cast<size_t>(2 * i + 1)];
      const Tensor h = rms_norm(x, n + "attn_norm.weight");
      const Tensor q = rotate(linear(h, n + "attn_q.weight").reshape({1, c_.heads, head}), cos, sin).permute({1, 0, 2});
      keys[{Slice(), Slice(p, p + 1)}] = rotate(linear(h, n + "attn_k.weight").reshape({1, c_.kv_heads, head}), cos, sin).permute({1, 0, 2});
      values[{Slice(), Slice(p, p + 1)}] = linear(h, n + "attn_v.weight").reshape({1, c_.kv_heads, head}).permute({1, 0, 2});
      // the query attends to every position so far (no mask), written out: the number of them is symbolic
      const Tensor seen_keys = shared_cache(keys[{Slice(), Slice(0, p + 1)}]), seen_values = shared_cache(values[{Slice(), Slice(0, p + 1)}]);
      const Tensor scores = q.matmul(seen_keys.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(head)));
      const Tensor a = scores.softmax(-1).matmul(seen_values).reshape({1, c_.dim});
      x = x + linear(a, n + "attn_output.weight");
      const Tensor f = rms_norm(x, n + "ffn_norm.weight");
      x = x + linear(linear(f, n + "ffn_gate.weight").silu() * linear(f, n + "ffn_up.weight"), n + "ffn_down.weight");
    }
    return linear(rms_norm(x, "output_norm.weight"), file_.tensors.count("output.weight") ? "output.weight" : "token_embd.weight");
  }

  /// The logits (tokens, vocab) of `tokens` (a 1-d int tensor) at positions 0, 1, ...: each
  /// position sees itself and the ones before it.
  Tensor operator()(const Tensor& tokens) const {
    const int64_t n = tokens.shape()[0].as_int(), head = c_.dim / c_.heads;
    const auto [cos, sin] = rotations(n, head);
    Tensor x = weight("token_embd.weight")[{tokens}].cast(dtypes::float32);
    for (int64_t i = 0; i < c_.layers; ++i) {
      const std::string p = "blk." + std::to_string(i) + ".";
      const Tensor h = rms_norm(x, p + "attn_norm.weight");
      const Tensor q = rotate(linear(h, p + "attn_q.weight").reshape({n, c_.heads, head}), cos, sin);
      const Tensor k = shared(rotate(linear(h, p + "attn_k.weight").reshape({n, c_.kv_heads, head}), cos, sin));
      const Tensor v = shared(linear(h, p + "attn_v.weight").reshape({n, c_.kv_heads, head}));
      const Tensor a = q.permute({1, 0, 2})
                           .scaled_dot_product_attention(k.permute({1, 0, 2}), v.permute({1, 0, 2}), {}, true)
                           .permute({1, 0, 2})
                           .reshape({n, c_.dim});
      x = x + linear(a, p + "attn_output.weight");
      const Tensor f = rms_norm(x, p + "ffn_norm.weight");
      x = x + linear(linear(f, p + "ffn_gate.weight").silu() * linear(f, p + "ffn_up.weight"), p + "ffn_down.weight");
    }
    return linear(rms_norm(x, "output_norm.weight"), file_.tensors.count("output.weight") ? "output.weight" : "token_embd.weight");
  }

 private:
  const Tensor& weight(const std::string& name) const {
    const auto it = file_.tensors.find(name);
    if (it == file_.tensors.end()) throw Error("Llama: the GGUF has no tensor '" + name + "'");
    return it->second;
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
  /// Key/value heads shared by heads / kv_heads query heads each: (n, kv, d) -> (n, heads, d).
  Tensor shared(const Tensor& x) const {
    const auto s = x.shape().to_vector();
    const int64_t group = c_.heads / c_.kv_heads;
    return x.reshape({s[0], s[1], 1, s[2]}).expand({s[0], s[1], group, s[2]}).reshape({s[0], c_.heads, s[2]});
  }

  /// A cache's rows (kv, t, d) shared by the query heads of each: (heads, t, d).
  Tensor shared_cache(const Tensor& x) const {
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
