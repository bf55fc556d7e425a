// BERT's encoder as Hugging Face's BertModel lays out its weights (a safetensors state dict:
// "embeddings.word_embeddings.weight", "encoder.layer.0.attention.self.query.weight", ...), and
// sentence-transformers' mean pooling. Not part of tinyt.hpp: include <tinyt/models/bert.hpp>.
// The sizes come from the weights; the number of attention heads, which the weights do not say,
// from the caller (the model's config.json).
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "../../tinyt.hpp"

namespace tinyt::inline v0::models {

/// BERT's encoder: token ids in, one hidden vector per token out.
class Bert {
 public:
  /// The model of `weights` (BertModel's names; a "bert." prefix is not expected), with `heads`
  /// attention heads and LayerNorm's `eps`. Error naming a missing weight.
  Bert(std::map<std::string, Tensor> weights, int64_t heads, double eps = 1e-12) : w_(std::move(weights)), heads_(heads), eps_(eps) {
    // checked first: 0 heads would divide by zero below, and a bad count is the caller's, not the file's
    if (heads_ <= 0) throw ShapeError(::tinyt::detail::cat("Bert: heads must be positive, got ", heads_));
    while (w_.count(layer_name(layers_, "attention.self.query.weight"))) ++layers_;
    if (layers_ == 0)
      throw Error(::tinyt::detail::cat("Bert: none of the ", w_.size(), " weights is '", layer_name(0, "attention.self.query.weight"),
                                     "' (BertModel's names, without a 'bert.' prefix)"));
    hidden_ = weight("embeddings.word_embeddings.weight").shape()[1].as_int();
    if (hidden_ % heads_ != 0) throw ShapeError(::tinyt::detail::cat("Bert: ", heads_, " heads do not divide the width ", hidden_));
  }

  int64_t layers() const { return layers_; }
  int64_t hidden() const { return hidden_; }

  /// The last hidden states (batch, tokens, hidden) of `ids` (batch, tokens; int), where `mask`
  /// (batch, tokens) is 1 for a token and 0 for padding, which no token attends to.
  Tensor operator()(const Tensor& ids, const Tensor& mask) const {
    if (ids.ndim() != 2)
      throw ShapeError(::tinyt::detail::cat("Bert: ids must be 2-d (batch, tokens), got shape ", ids.shape()));
    if (mask.shape() != ids.shape())
      throw ShapeError(::tinyt::detail::cat("Bert: mask shape ", mask.shape(), " differs from ids shape ", ids.shape()));
    const auto shape = ids.shape().to_vector();
    const int64_t batch = shape[0], tokens = shape[1];
    Tensor x = weight("embeddings.word_embeddings.weight")[{ids}] +
               weight("embeddings.position_embeddings.weight").shrink({{0, tokens}, {0, hidden_}}) +
               weight("embeddings.token_type_embeddings.weight")[{0}];
    x = layernorm(x, "embeddings.LayerNorm");
    // padding is left out of every softmax: -inf added to its scores, as a (batch, 1, 1, tokens) mask
    const Tensor keep = mask.reshape({batch, 1, 1, tokens}).ne(0);
    for (int64_t i = 0; i < layers_; ++i) {
      auto heads = [&](const char* name) {  // (batch, heads, tokens, head width)
        return dense(x, layer_name(i, std::string("attention.self.") + name)).reshape({batch, tokens, heads_, hidden_ / heads_}).permute({0, 2, 1, 3});
      };
      const Tensor attended = heads("query").scaled_dot_product_attention(heads("key"), heads("value"), keep)
                                  .permute({0, 2, 1, 3})
                                  .reshape({batch, tokens, hidden_});
      x = layernorm(dense(attended, layer_name(i, "attention.output.dense")) + x, layer_name(i, "attention.output.LayerNorm"));
      const Tensor inner = dense(x, layer_name(i, "intermediate.dense")).gelu();
      x = layernorm(dense(inner, layer_name(i, "output.dense")) + x, layer_name(i, "output.LayerNorm"));
    }
    return x;
  }

 private:
  static std::string layer_name(int64_t i, const std::string& rest) { return "encoder.layer." + std::to_string(i) + "." + rest; }
  const Tensor& weight(const std::string& name) const {
    const auto it = w_.find(name);
    if (it == w_.end()) throw Error("Bert: no weight '" + name + "'");
    return it->second;
  }
  /// x W^T + b, PyTorch's Linear (W is (out, in) as in the file: codegen copies panels of it).
  Tensor dense(const Tensor& x, const std::string& name) const { return x.matmul(weight(name + ".weight").T()) + weight(name + ".bias"); }
  Tensor layernorm(const Tensor& x, const std::string& name) const {
    return x.layernorm(-1, eps_) * weight(name + ".weight") + weight(name + ".bias");
  }

  std::map<std::string, Tensor> w_;
  int64_t heads_, layers_ = 0, hidden_ = 0;
  double eps_;
};

/// Token id lists as a batch: the ids (batch, longest) padded with [PAD] (id 0), int32, and the
/// mask (batch, longest), 1 for a token and 0 for padding, float32.
inline std::pair<Tensor, Tensor> padded_batch(const std::vector<std::vector<int64_t>>& ids) {
  size_t longest = 0;
  for (const auto& s : ids) longest = std::max(longest, s.size());
  std::vector<int32_t> flat;
  std::vector<float> mask;
  for (const auto& s : ids)
    for (size_t i = 0; i < longest; ++i) {
      flat.push_back(i < s.size() ? static_cast<int32_t>(s[i]) : 0);
      mask.push_back(i < s.size() ? 1.f : 0.f);
    }
  const Shape shape{static_cast<int64_t>(ids.size()), static_cast<int64_t>(longest)};
  return {Tensor::from_vector(flat, shape), Tensor::from_vector(mask, shape)};
}

/// sentence-transformers' sentence embedding: the mean of the hidden states of the tokens `mask`
/// keeps (batch, tokens, hidden) -> (batch, hidden), scaled to length 1.
inline Tensor mean_pooled_unit(const Tensor& hidden, const Tensor& mask) {
  const Tensor m = mask.cast(hidden.dtype()).unsqueeze(-1);
  const Tensor mean = (hidden * m).sum(1) / m.sum(1).maximum(1e-9);
  return mean / (mean * mean).sum(-1, true).sqrt().maximum(1e-12);
}

}  // namespace tinyt::inline v0::models
