// The nn layers (tinygrad's nn): structs of Tensor handles with tinygrad's constructor arguments,
// PyTorch's initialization and numerics, each registered with TINYT_PARAMETERS so that
// get_state_dict names their tensors as PyTorch and tinygrad do ("weight", "running_mean", ...).
// A layer is const to call: its tensors are handles, so BatchNorm's running-stat update (an
// assign) reaches the layer's own tensors through copies.
#pragma once

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "../tensor.hpp"
#include "state.hpp"

namespace tinyt::inline v0::nn {

namespace layer_detail {
using tinyt::detail::cat;

inline int64_t checked_size(int64_t n, const char* layer, const char* what) {
  if (n < 0) throw ShapeError(cat(layer, ": ", what, " must not be negative, got ", n));
  return n;
}
/// Uniform in +-1/sqrt(fan_in) (PyTorch's Linear and Conv init); an empty fan gives zeros.
inline Tensor uniform_fan_in(Shape shape, int64_t fan_in) {
  const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
  return Tensor::uniform(std::move(shape), -bound, bound);
}
/// The dtype a normalization computes in: float32 at least, as PyTorch does for half inputs.
inline DType compute_dtype(const Tensor& x) {
  return least_upper_dtype({x.dtype(), dtypes::float32});
}
/// y back in x's dtype when x is floating point (PyTorch returns the input's dtype).
inline Tensor like_input(const Tensor& y, const Tensor& x) {
  return x.dtype().is_float() ? y.cast(x.dtype()) : y;
}
/// v (C,) shaped (1, C, 1, ...) to broadcast against an (N, C, ...) input of `ndim` dims.
inline Tensor per_channel(const Tensor& v, size_t ndim) {
  std::vector<int64_t> s(ndim, 1);
  s[1] = -1;
  return v.reshape(Shape(s));
}
/// The input's concrete shape, which must be (N, C, ...) with C == channels.
inline std::vector<int64_t> channels_first(const Tensor& x, int64_t channels, const char* layer) {
  const auto s = x.shape().to_vector();
  if (s.size() < 2 || s[1] != channels)
    throw ShapeError(
        cat(layer, ": input of shape ", x.shape(), " is not (N, ", channels, ", ...)"));
  return s;
}
}  // namespace layer_detail

// -- Linear ------------------------------------------------------------------------------------

/// y = x W^T + b, with W of shape (out_features, in_features) as PyTorch stores it.
struct Linear {
  Tensor weight, bias;
  /// W and b uniform in +-1/sqrt(in_features); no bias when `with_bias` is false.
  Linear(int64_t in_features, int64_t out_features, bool with_bias = true) {
    layer_detail::checked_size(in_features, "Linear", "in_features");
    layer_detail::checked_size(out_features, "Linear", "out_features");
    weight = layer_detail::uniform_fan_in({out_features, in_features}, in_features);
    if (with_bias) bias = layer_detail::uniform_fan_in({out_features}, in_features);
  }
  /// x (..., in_features) -> (..., out_features).
  Tensor operator()(const Tensor& x) const {
    const sint in = weight.shape()[1];
    if (x.ndim() == 0 || !(x.shape()[x.ndim() - 1] == in))
      throw ShapeError(layer_detail::cat("Linear: input of shape ", x.shape(),
                                         " does not end in in_features = ", in));
    return x.linear(weight.T(), bias);
  }
};
TINYT_PARAMETERS(Linear, weight, bias);

// -- Conv2d ------------------------------------------------------------------------------------

/// Cross-correlation of (N, in_channels, H, W) with out_channels kernels, as PyTorch's Conv2d.
struct Conv2d {
  Tensor weight, bias;
  std::vector<int64_t> kernel_size;
  IntOrVec stride, padding, dilation;
  int64_t groups;
  /// kernel_size is one int (square) or one per spatial dim; weight (out, in/groups, k...) and
  /// bias (out) uniform in +-1/sqrt(in/groups * prod(k)), as PyTorch.
  Conv2d(int64_t in_channels, int64_t out_channels, IntOrVec kernel_size_, IntOrVec stride_ = 1,
         IntOrVec padding_ = 0, IntOrVec dilation_ = 1, int64_t groups_ = 1, bool with_bias = true)
      : kernel_size(kernel_size_.v.size() == 1
                        ? std::vector<int64_t>{kernel_size_.v[0], kernel_size_.v[0]}
                        : kernel_size_.v),
        stride(std::move(stride_)),
        padding(std::move(padding_)),
        dilation(std::move(dilation_)),
        groups(groups_) {
    using layer_detail::cat;
    layer_detail::checked_size(in_channels, "Conv2d", "in_channels");
    layer_detail::checked_size(out_channels, "Conv2d", "out_channels");
    if (groups < 1) throw ShapeError(cat("Conv2d: groups must be positive, got ", groups));
    if (in_channels % groups || out_channels % groups)
      throw ShapeError(cat("Conv2d: in_channels (", in_channels, ") and out_channels (",
                           out_channels, ") must both divide into ", groups, " groups"));
    if (kernel_size.empty()) throw ShapeError("Conv2d: kernel_size needs at least one value");
    std::vector<int64_t> w{out_channels, in_channels / groups};
    int64_t fan_in = in_channels / groups;
    for (int64_t k : kernel_size) {
      if (k < 1) throw ShapeError(cat("Conv2d: kernel size ", k, " must be positive"));
      w.push_back(k), fan_in *= k;
    }
    weight = layer_detail::uniform_fan_in(Shape(w), fan_in);
    if (with_bias) bias = layer_detail::uniform_fan_in({out_channels}, fan_in);
  }
  /// x (N, in_channels, H, W) or unbatched (in_channels, H, W).
  Tensor operator()(const Tensor& x) const {
    return x.conv2d(weight, bias, groups, stride, dilation, padding);
  }
};
TINYT_PARAMETERS(Conv2d, weight, bias);

// -- BatchNorm ---------------------------------------------------------------------------------

/// Batch normalization over every dim but the channels (dim 1) of an (N, C, ...) input.
/// Training (Tensor::training) uses the batch's statistics and moves the running ones toward them;
/// eval uses the running ones. The update is an assign, computed when the running stats are
/// realized or read (an optimizer's step realizes them).
struct BatchNorm {
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  int64_t num_features;
  double eps, momentum;
  bool track_running_stats;
  /// weight ones and bias zeros when `affine`; running_mean zeros, running_var ones (no gradient)
  /// when `track_running_stats`; num_batches_tracked int64 zeros(1).
  BatchNorm(int64_t sz, double eps_ = 1e-5, bool affine = true, bool track_running_stats_ = true,
            double momentum_ = 0.1)
      : num_features(layer_detail::checked_size(sz, "BatchNorm", "sz")),
        eps(eps_),
        momentum(momentum_),
        track_running_stats(track_running_stats_) {
    if (affine) weight = Tensor::ones({sz}), bias = Tensor::zeros({sz});
    if (track_running_stats) {
      running_mean = Tensor::zeros({sz});
      running_var = Tensor::ones({sz});
      running_mean.requires_grad(false), running_var.requires_grad(false);
    }
    num_batches_tracked = Tensor::zeros({1}, dtypes::int64);
    num_batches_tracked.requires_grad(false);
  }
  Tensor operator()(const Tensor& x) const;
};
TINYT_PARAMETERS(BatchNorm, weight, bias, running_mean, running_var, num_batches_tracked);
/// tinygrad's names for the same layer: the statistics are over every dim but dim 1.
using BatchNorm2d = BatchNorm;
using BatchNorm3d = BatchNorm;

inline Tensor BatchNorm::operator()(const Tensor& x) const {
  using layer_detail::cat;
  const auto s = layer_detail::channels_first(x, num_features, "BatchNorm");
  Tensor xf = x.cast(layer_detail::compute_dtype(x));
  if (!Tensor::training && track_running_stats) {
    Tensor invstd = running_var.add(eps).rsqrt();
    return layer_detail::like_input(xf.batchnorm(weight, bias, running_mean, invstd), x);
  }
  // the batch's statistics: over every dim but the channels
  const int64_t n = x.numel() / std::max<int64_t>(num_features, 1);
  if (n < 2)  // as PyTorch: the unbiased variance needs two values
    throw ShapeError(cat("BatchNorm: input of shape ", x.shape(),
                         " has less than 2 values per channel to take batch statistics from"));
  std::vector<int> axes{0};
  for (int a = 2; a < static_cast<int>(s.size()); ++a) axes.push_back(a);
  Tensor mean = xf.mean(axes);
  // the mean is detached in the variance: d(var)/d(mean) is 0, so the gradient is the same and
  // its graph smaller
  Tensor var = xf.sub(layer_detail::per_channel(mean.detach(), s.size())).square().mean(axes);
  if (Tensor::training && track_running_stats) {
    // as PyTorch: the running variance is the unbiased one
    const double unbias = static_cast<double>(n) / static_cast<double>(n - 1);
    Tensor rm = running_mean, rv = running_var, count = num_batches_tracked;
    rm.assign(rm.mul(1.0 - momentum).add(mean.detach().cast(rm.dtype()).mul(momentum)));
    rv.assign(rv.mul(1.0 - momentum).add(var.detach().cast(rv.dtype()).mul(momentum * unbias)));
    count.assign(count.add(1));
  }
  return layer_detail::like_input(xf.batchnorm(weight, bias, mean, var.add(eps).rsqrt()), x);
}

// -- LayerNorm, RMSNorm, GroupNorm ---------------------------------------------------------------

/// Normalization over the last dims (normalized_shape), then an elementwise affine transform.
struct LayerNorm {
  Tensor weight, bias;
  std::vector<int64_t> normalized_shape;
  double eps;
  bool elementwise_affine;
  /// normalized_shape is one int or the trailing dims; weight ones and bias zeros of that shape.
  LayerNorm(IntOrVec normalized_shape_, double eps_ = 1e-5, bool elementwise_affine_ = true)
      : normalized_shape(std::move(normalized_shape_.v)),
        eps(eps_),
        elementwise_affine(elementwise_affine_) {
    if (normalized_shape.empty()) throw ShapeError("LayerNorm: normalized_shape is empty");
    for (int64_t d : normalized_shape)
      layer_detail::checked_size(d, "LayerNorm", "normalized_shape");
    if (elementwise_affine)
      weight = Tensor::ones(Shape(normalized_shape)), bias = Tensor::zeros(Shape(normalized_shape));
  }
  /// `LayerNorm({2, 3})`: without this, the braces could also make a LayerNorm(2, 3) to copy.
  LayerNorm(std::initializer_list<int64_t> normalized_shape_, double eps_ = 1e-5,
            bool elementwise_affine_ = true)
      : LayerNorm(IntOrVec(normalized_shape_), eps_, elementwise_affine_) {}
  Tensor operator()(const Tensor& x) const {
    const auto s = x.shape().to_vector();
    const size_t k = normalized_shape.size();
    if (s.size() < k || !std::equal(normalized_shape.begin(), normalized_shape.end(),
                                    s.end() - static_cast<std::ptrdiff_t>(k)))
      throw ShapeError(layer_detail::cat("LayerNorm: input of shape ", x.shape(),
                                         " does not end in ", Shape(normalized_shape)));
    // the trailing dims as one, so the functional layernorm (one fused kernel) does the work
    Tensor xf = x.cast(layer_detail::compute_dtype(x));
    Tensor y = xf.flatten(static_cast<int>(s.size() - k)).layernorm(-1, eps).reshape(Shape(s));
    if (elementwise_affine) y = y.mul(weight).add(bias);
    return layer_detail::like_input(y, x);
  }
};
TINYT_PARAMETERS(LayerNorm, weight, bias);

/// Root-mean-square normalization over the last dim (no centering), then a learned scale.
struct RMSNorm {
  Tensor weight;
  int64_t dim;
  double eps;
  /// weight ones(dim) when `elementwise_affine`.
  RMSNorm(int64_t dim_, double eps_ = 1e-6, bool elementwise_affine = true)
      : dim(layer_detail::checked_size(dim_, "RMSNorm", "dim")), eps(eps_) {
    if (elementwise_affine) weight = Tensor::ones({dim});
  }
  /// x / sqrt(mean(x^2) + eps) computed in float32 at least, back in x's dtype, times weight.
  Tensor operator()(const Tensor& x) const {
    if (x.ndim() == 0 || !(x.shape()[x.ndim() - 1] == dim))
      throw ShapeError(
          layer_detail::cat("RMSNorm: input of shape ", x.shape(), " does not end in dim = ", dim));
    Tensor xf = x.cast(layer_detail::compute_dtype(x));
    Tensor y = layer_detail::like_input(xf.mul(xf.square().mean(-1, true).add(eps).rsqrt()), x);
    return weight.defined() ? y.mul(weight) : y;
  }
};
TINYT_PARAMETERS(RMSNorm, weight);

/// Normalization over groups of channels of an (N, C, ...) input, then a per-channel affine.
struct GroupNorm {
  Tensor weight, bias;
  int64_t num_groups, num_channels;
  double eps;
  /// weight ones and bias zeros of (num_channels) when `affine`; the groups must divide C.
  GroupNorm(int64_t num_groups_, int64_t num_channels_, double eps_ = 1e-5, bool affine = true)
      : num_groups(num_groups_), num_channels(num_channels_), eps(eps_) {
    if (num_groups < 1 || num_channels < 0 || num_channels % num_groups)
      throw ShapeError(layer_detail::cat("GroupNorm: ", num_channels,
                                         " channels do not divide into ", num_groups, " groups"));
    if (affine) weight = Tensor::ones({num_channels}), bias = Tensor::zeros({num_channels});
  }
  Tensor operator()(const Tensor& x) const {
    const auto s = layer_detail::channels_first(x, num_channels, "GroupNorm");
    int64_t per_group = num_channels / num_groups;
    for (size_t a = 2; a < s.size(); ++a) per_group *= s[a];
    Tensor xf = x.cast(layer_detail::compute_dtype(x));
    Tensor y = xf.reshape({s[0], num_groups, per_group}).layernorm(-1, eps).reshape(Shape(s));
    if (weight.defined())
      y = y.mul(layer_detail::per_channel(weight, s.size()))
              .add(layer_detail::per_channel(bias, s.size()));
    return layer_detail::like_input(y, x);
  }
};
TINYT_PARAMETERS(GroupNorm, weight, bias);

// -- Embedding ---------------------------------------------------------------------------------

/// A table of vocab_size rows of embed_size: integer indices (...) -> rows (..., embed_size).
/// Built from differentiable ops (a comparison with arange selects the row), so the gradient
/// reaches weight. An index outside [0, vocab_size) selects no row and gives zeros, as tinygrad:
/// checking would read the indices, a sync in the middle of a lazy graph.
struct Embedding {
  Tensor weight;
  int64_t vocab_size, embed_size;
  /// weight glorot_uniform (vocab_size, embed_size).
  Embedding(int64_t vocab_size_, int64_t embed_size_)
      : vocab_size(layer_detail::checked_size(vocab_size_, "Embedding", "vocab_size")),
        embed_size(layer_detail::checked_size(embed_size_, "Embedding", "embed_size")) {
    weight = Tensor::glorot_uniform({vocab_size, embed_size});
  }
  Tensor operator()(const Tensor& idx) const {
    if (!idx.dtype().is_int())
      throw DTypeError(layer_detail::cat("Embedding: indices must be integers, not ",
                                         idx.dtype().name(), " (shape ", idx.shape(), ")"));
    auto out = idx.shape().to_vector();
    out.push_back(embed_size);
    if (idx.numel() == 0 || vocab_size == 0) return Tensor::zeros(Shape(out), weight.dtype());
    // (..., V, 1): whether index i is row v, compared in int64 so that no index type wraps;
    // where, not a multiply, so an inf in another row does not become NaN
    Tensor rows = Tensor::arange(vocab_size).cast(dtypes::int64).to(idx.device());
    Tensor hit = idx.cast(dtypes::int64).unsqueeze(-1).eq(rows).unsqueeze(-1);
    return hit.where(weight, 0.0).sum(-2).cast(weight.dtype());
  }
};
TINYT_PARAMETERS(Embedding, weight);

}  // namespace tinyt::inline v0::nn
