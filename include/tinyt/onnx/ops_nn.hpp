// The ONNX ops of neural networks: convolutions and pools (their windows from ONNX's attributes,
// auto_pad resolved against the input), the normalizations, the losses and Attention. Each is
// tinyt's own op (conv2d, max_pool2d, layernorm ..) after ONNX's attributes are read, in the
// table of onnx/ops.hpp.
#pragma once

#include <array>
#include <tuple>

#include "ops_math.hpp"

namespace tinyt::inline v0 {
namespace onnx {
namespace detail {

// the dims from `from` on (a conv's or a pool's spatial dims)
inline std::vector<int64_t> dims_from(const Tensor& t, size_t from) {
  const std::vector<int64_t> s = t.shape().to_vector();
  return {s.begin() + static_cast<std::ptrdiff_t>(std::min(from, s.size())), s.end()};
}
inline std::vector<int> axes_from(size_t from, size_t rank) {
  std::vector<int> axes;
  for (size_t i = from; i < rank; ++i) axes.push_back(static_cast<int>(i));
  return axes;
}

// A conv's or a pool's window over the spatial dims: kernel, strides, dilations, and pads before
// and after each dim, auto_pad resolved against the input's dims
struct Window {
  std::vector<int64_t> kernel, strides, dilations, begin, end;
  // as tinyt's conv2d and pools take it: (before, after) per dim, the last dim first
  IntOrVec padding() const {
    std::vector<int64_t> p;
    for (size_t j = kernel.size(); j-- > 0;) p.insert(p.end(), {begin[j], end[j]});
    return p;
  }
  int64_t span(size_t j) const { return dilations[j] * (kernel[j] - 1) + 1; }
};

// The window of node `c` over the spatial dims `in` with `kernel` (the weight's, or the
// kernel_shape attribute's): SAME_UPPER and SAME_LOWER pad so that out = ceil(in / stride), the
// odd element after (UPPER) or before (LOWER); VALID pads nothing; NOTSET reads `pads`
inline Window window_of(const OpCall& c, const std::vector<int64_t>& in, std::vector<int64_t> kernel) {
  const size_t dims = in.size();
  auto per_dim = [&](const char* name, int64_t fallback) {
    std::vector<int64_t> v = c.ints_attr(name);
    if (v.empty()) v.assign(dims, fallback);
    if (v.size() != dims)
      throw ShapeError(tinyt::detail::cat("onnx: ", c.node.op_type, " node '", c.node.name, "': ", name, " has ", v.size(), " values for ", dims, " spatial dims"));
    return v;
  };
  if (kernel.empty()) kernel = per_dim("kernel_shape", 1);
  Window w{kernel, per_dim("strides", 1), per_dim("dilations", 1), std::vector<int64_t>(dims, 0), std::vector<int64_t>(dims, 0)};
  const std::string auto_pad = c.string_attr("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t j = 0; j < dims; ++j) {
      const int64_t out = (in[j] + w.strides[j] - 1) / w.strides[j];
      const int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[j] + w.span(j) - in[j]);
      w.begin[j] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.end[j] = total - w.begin[j];
    }
  } else if (auto_pad != "VALID") {
    const std::vector<int64_t> pads = c.ints_attr("pads", std::vector<int64_t>(2 * dims, 0));
    if (pads.size() != 2 * dims)
      throw ShapeError(tinyt::detail::cat("onnx: ", c.node.op_type, " node '", c.node.name, "': pads has ", pads.size(), " values for ", dims, " spatial dims"));
    for (size_t j = 0; j < dims; ++j) w.begin[j] = pads[j], w.end[j] = pads[dims + j];
  }
  return w;
}

// Conv: conv2d over however many spatial dims the weight has
inline Tensor conv(const OpCall& c) {
  const Tensor &x = c.in(0), &w = c.in(1);
  const Window win = window_of(c, dims_from(x, 2), dims_from(w, 2));
  return x.conv2d(w, c.has(2) ? c.in(2) : Tensor{}, c.int_attr("group", 1), win.strides, win.dilations, win.padding());
}

// ConvTranspose: conv_transpose2d, its pads from output_shape (or auto_pad SAME: in * stride)
// when given: the total padding split as ONNX splits it (the odd element before, except SAME_UPPER)
inline Tensor conv_transpose(const OpCall& c) {
  const Tensor &x = c.in(0), &w = c.in(1);
  const std::vector<int64_t> in = dims_from(x, 2);
  const size_t dims = in.size();
  Window win = window_of(c, in, dims_from(w, 2));
  std::vector<int64_t> output_padding = c.ints_attr("output_padding", std::vector<int64_t>(dims, 0));
  output_padding.resize(dims);
  std::vector<int64_t> out = c.ints_attr("output_shape");
  const std::string auto_pad = c.string_attr("auto_pad", "NOTSET");
  if (out.size() > dims) out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(dims));  // (N, C, ...) given whole
  if (out.empty() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER"))
    for (size_t j = 0; j < dims; ++j) out.push_back(in[j] * win.strides[j]);
  if (!out.empty()) {
    for (size_t j = 0; j < dims; ++j) {
      const int64_t total = win.strides[j] * (in[j] - 1) + output_padding[j] + win.span(j) - out[j];
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor, as Python's //
      win.begin[j] = auto_pad == "SAME_UPPER" ? half : total - half;
      win.end[j] = total - win.begin[j];
    }
  }
  return x.conv_transpose2d(w, c.has(2) ? c.in(2) : Tensor{}, c.int_attr("group", 1), win.strides, win.dilations, win.padding(),
                            output_padding);
}

// A pool over 1 spatial dim runs as one over 2, the first of size 1
inline Tensor pool_1d_as_2d(const Tensor& x, Window& w) {
  for (auto* v : {&w.kernel, &w.strides, &w.dilations}) v->insert(v->begin(), 1);
  w.begin.insert(w.begin.begin(), 0), w.end.insert(w.end.begin(), 0);
  return x.unsqueeze(-2);
}

// MaxPool, AveragePool: tinyt's pools (ceil_mode, count_include_pad as PyTorch's); MaxPool's
// optional second output the flat index of each maximum in the whole input (row-major, or with
// storage_order 1 column-major within each plane)
inline std::vector<Tensor> pool(const OpCall& c, bool is_max) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> in = dims_from(x, 2);
  Window w = window_of(c, in, {});
  const bool one_dim = in.size() == 1;
  const Tensor x2 = one_dim ? pool_1d_as_2d(x, w) : x;
  const bool ceil = c.int_attr("ceil_mode", 0) != 0;
  const bool indices = is_max && c.node.outputs.size() > 1 && !c.node.outputs[1].empty();
  Tensor y, at;
  if (indices) {
    std::tie(y, at) = x2.max_pool2d_with_indices(w.kernel, w.strides, w.dilations, w.padding(), ceil);
  } else {
    y = is_max ? x2.max_pool2d(w.kernel, w.strides, w.dilations, w.padding(), ceil)
               : x2.avg_pool2d(w.kernel, w.strides, w.dilations, w.padding(), c.int_attr("count_include_pad", 0) != 0, ceil);
  }
  if (one_dim) y = y.squeeze(-2);
  y = y.cast(x.dtype());
  if (!indices) return {y};
  if (one_dim) at = at.squeeze(-2);
  const std::vector<int64_t> s = x.shape().to_vector();
  int64_t plane = 1;
  for (const int64_t d : in) plane *= d;
  if (c.int_attr("storage_order", 0) && in.size() == 2) {  // (h, w) at h + w·H
    const Tensor width = Tensor::full(Shape{}, in[1], dtypes::int64);
    at = at.floordiv(width) + at.mod(width) * in[0];
  }
  std::vector<int64_t> per_plane(s.size(), 1);
  per_plane[0] = s[0], per_plane[1] = s[1];
  const Tensor first = (Tensor::arange(s[0] * s[1]).cast(dtypes::int64) * plane).reshape(Shape(per_plane));
  return {y, at + first};
}

// MaxUnpool: each value placed at its index (MaxPool's, over the whole tensor) in zeros of the
// shape the pool's window gives, (in - 1)·stride + kernel - pads; with output_shape (input 2)
// that is the top-left corner of zeros of that shape, as ONNX's reference
inline Tensor max_unpool(const OpCall& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> s = x.shape().to_vector(), in = dims_from(x, 2);
  const Window w = window_of(c, in, {});
  std::vector<int64_t> inferred{s[0], s[1]};
  for (size_t j = 0; j < in.size(); ++j) inferred.push_back((in[j] - 1) * w.strides[j] + w.kernel[j] - w.begin[j] - w.end[j]);
  int64_t total = 1;
  for (const int64_t d : inferred) total *= d;
  const Tensor y = Tensor::zeros({total}, x.dtype()).scatter(0, c.in(1).cast(dtypes::int64).reshape({-1}), x.reshape({-1})).reshape(Shape(inferred));
  if (!c.has(2)) return y;
  const std::vector<int64_t> out = c.host_ints(2);
  std::vector<std::pair<sint, sint>> grow;
  for (size_t i = 0; i < out.size() && i < inferred.size(); ++i) grow.emplace_back(0, std::max<int64_t>(0, out[i] - inferred[i]));
  return y.pad(grow);
}

// LpPool: (sum of |x|^p over each window)^(1/p), the padding zeros that add nothing
inline Tensor lp_pool(const OpCall& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> in = dims_from(x, 2);
  Window w = window_of(c, in, {});
  const bool one_dim = in.size() == 1;
  const float p = static_cast<float>(c.int_attr("p", 2));
  const Tensor powered = x.abs().pow(Tensor::full(Shape{}, p, x.dtype()));
  Tensor x2 = one_dim ? pool_1d_as_2d(powered, w) : powered;
  // padded here, not by the pool: a sum is a mean over the whole kernel times its size
  std::vector<std::pair<sint, sint>> pads(x2.ndim() - w.kernel.size(), {0, 0});
  int64_t kernel_size = 1;
  for (size_t j = 0; j < w.kernel.size(); ++j) pads.emplace_back(w.begin[j], w.end[j]), kernel_size *= w.kernel[j];
  Tensor y = x2.pad(pads).avg_pool2d(w.kernel, w.strides, w.dilations, 0, true, c.int_attr("ceil_mode", 0) != 0) * static_cast<float>(kernel_size);
  if (one_dim) y = y.squeeze(-2);
  return y.pow(Tensor::full(Shape{}, 1.0f / p, x.dtype())).cast(x.dtype());
}

// BatchNormalization: per channel (dim 1), with the running statistics; in training mode
// (opset 14's training_mode) with the batch's, the running ones updated as its extra outputs
inline std::vector<Tensor> batch_normalization(const OpCall& c) {
  const Tensor &x = c.in(0), &scale = c.in(1), &bias = c.in(2);
  const float eps = c.float_attr("epsilon", 1e-5f);
  const size_t rank = x.shape().to_vector().size();
  std::vector<int64_t> per_channel(rank, 1);
  if (rank > 1) per_channel[1] = x.shape().to_vector()[1];
  auto channel = [&](const Tensor& t) { return t.reshape(Shape(per_channel)); };
  if (!c.int_attr("training_mode", 0)) {
    const Tensor inv_std = (c.in(4) + eps).rsqrt();
    return {((x - channel(c.in(3))) * channel(inv_std * scale) + channel(bias)).cast(x.dtype())};
  }
  std::vector<int> axes{0};
  for (size_t i = 2; i < rank; ++i) axes.push_back(static_cast<int>(i));
  const Tensor mean = x.mean(axes), var = x.var(axes, false, 0);
  const float momentum = c.float_attr("momentum", 0.9f);
  const Tensor y = (x - channel(mean)) * channel((var + eps).rsqrt() * scale) + channel(bias);
  return {y.cast(x.dtype()), c.in(3) * momentum + mean * (1 - momentum), c.in(4) * momentum + var * (1 - momentum)};
}

// (batch, heads, ...) with each head repeated for q_heads / heads query heads in a row, as
// grouped-query attention shares keys and values (as it is where the counts match or do not divide)
inline Tensor grouped_heads(const Tensor& t, int64_t q_heads) {
  std::vector<int64_t> s = t.shape().to_vector(), wide = s;
  if (s.size() < 2 || s[1] == q_heads || s[1] <= 0 || q_heads % s[1]) return t;
  wide.insert(wide.begin() + 2, q_heads / s[1]);
  s[1] = q_heads;
  return t.unsqueeze(2).expand(Shape(wide)).reshape(Shape(s));
}

// the input normalized over `axes` (mean 0, variance 1 + eps), in float32 for narrower inputs
inline Tensor standardized(const Tensor& x, const std::vector<int>& axes, float eps) {
  const Tensor xf = widened(x);
  const Tensor centered = xf - xf.mean(axes, true);
  return centered * ((centered * centered).mean(axes, true) + eps).rsqrt();
}

// InstanceNormalization: each (batch, channel) over its spatial dims, scaled and shifted per channel
inline Tensor instance_normalization(const OpCall& c) {
  const Tensor& x = c.in(0);
  const size_t rank = x.shape().to_vector().size();
  std::vector<int64_t> per_channel(rank, 1);
  per_channel[1] = x.shape().to_vector()[1];
  const Tensor y = standardized(x, axes_from(2, rank), c.float_attr("epsilon", 1e-5f)).cast(x.dtype());
  return y * c.in(1).reshape(Shape(per_channel)) + c.in(2).reshape(Shape(per_channel));
}

// GroupNormalization: the channels in num_groups groups, each normalized over its channels and
// spatial dims; scale and bias per channel (opset 21), or per group before
inline Tensor group_normalization(const OpCall& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> s = x.shape().to_vector();
  const int64_t groups = c.int_attr("num_groups", 1);
  if (s.size() < 2 || groups < 1 || s[1] % groups)
    throw ShapeError(tinyt::detail::cat("onnx: GroupNormalization node '", c.node.name, "': ", s.size() < 2 ? 0 : s[1], " channels in ", groups, " groups"));
  std::vector<int64_t> grouped{s[0], groups, -1};
  const Tensor y = standardized(x.reshape(Shape(grouped)), {2}, c.float_attr("epsilon", 1e-5f)).cast(x.dtype());
  const bool per_group = c.in(1).numel() == groups && groups != s[1];
  std::vector<int64_t> channel_shape(s.size(), 1), group_shape{1, groups, 1};
  channel_shape[1] = s[1];
  if (per_group) return (y * c.in(1).reshape(Shape(group_shape)) + c.in(2).reshape(Shape(group_shape))).reshape(x.shape());
  return y.reshape(x.shape()) * c.in(1).reshape(Shape(channel_shape)) + c.in(2).reshape(Shape(channel_shape));
}

// RMSNormalization: x / sqrt(mean(x^2) + eps) over the dims from `axis`, in float32 for
// narrower inputs (stash_type 1), scaled
inline Tensor rms_normalization(const OpCall& c) {
  const Tensor& x = c.in(0);
  const size_t rank = x.shape().to_vector().size();
  const std::vector<int> axes = axes_from(static_cast<size_t>(c.axis(-1)), rank);
  const Tensor xf = widened(x);
  const Tensor inv_rms = ((xf * xf).mean(axes, true) + c.float_attr("epsilon", 1e-5f)).rsqrt();
  return (xf * inv_rms).cast(x.dtype()) * c.in(1);
}

// MeanVarianceNormalization: (x - mean) / sqrt(var) over `axes` (default the batch and spatial dims)
inline Tensor mean_variance_normalization(const OpCall& c) {
  const Tensor& x = c.in(0);
  std::vector<int> axes;
  for (const int64_t a : c.ints_attr("axes", {0, 2, 3})) axes.push_back(static_cast<int>(a));
  return standardized(x, axes, 1e-9f).cast(x.dtype());
}

// LpNormalization: x divided by its L1 or L2 norm along `axis`, zero where the norm is
inline Tensor lp_normalization(const OpCall& c) {
  const Tensor& x = c.in(0);
  const int axis = static_cast<int>(c.axis(-1));
  const Tensor norm = c.int_attr("p", 2) == 1 ? x.abs().sum(axis, true) : (x * x).sum(axis, true).sqrt();
  const Tensor zero = Tensor::zeros_like(norm);
  return norm.eq(zero).where(zero, x / norm).cast(x.dtype());  // (a zero vector stays zero)
}

// LRN: x / (bias + alpha / size * the sum of squares over `size` neighbouring channels)^beta
inline Tensor lrn(const OpCall& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> s = x.shape().to_vector();
  const int64_t size = c.int_attr("size", 1);
  std::vector<std::pair<sint, sint>> pads(s.size(), {0, 0});
  pads[1] = {(size - 1) / 2, size - 1 - (size - 1) / 2};
  // the channels' squares as (N, 1, C, rest) windows of (size, 1)
  const Tensor squares = (x * x).pad(pads).reshape({s[0], 1, s[1] + size - 1, -1});
  const Tensor sums = squares.avg_pool2d(IntOrVec{size, 1}, IntOrVec{1, 1}) * static_cast<float>(size);
  const Tensor base = sums.reshape(x.shape()) * (c.float_attr("alpha", 1e-4f) / static_cast<float>(size)) + c.float_attr("bias", 1.0f);
  return x / base.pow(Tensor::full(Shape{}, c.float_attr("beta", 0.75f), x.dtype()));
}

// NegativeLogLikelihoodLoss on log-probabilities (N, C, d...) and classes (N, d...): -x[n, t, d]
// times the class's weight, none where the class is ignore_index; reduced by `reduction` (mean:
// over the weights of the classes that count)
inline Tensor nll_loss(const OpCall& c, const Tensor& log_prob, const Tensor& target, const Tensor* weight) {
  const Tensor t = target.cast(dtypes::int64);
  const Attribute* ignore_attr = c.attribute("ignore_index");
  const Tensor counts = ignore_attr ? t.ne(Tensor::full(Shape{}, ignore_attr->i, dtypes::int64)) : Tensor::ones_like(t).cast(dtypes::bool_);
  // the ignored class may be out of range: gather reads 0 there, and its weight counts 0
  const Tensor safe = counts.where(t, Tensor::zeros_like(t));
  Tensor picked = -log_prob.gather(1, safe.unsqueeze(1)).squeeze(1);
  Tensor w = counts.cast(log_prob.dtype());
  if (weight) w = w * weight->gather(0, safe.flatten()).reshape(t.shape());
  picked = picked * w;
  const std::string reduction = c.string_attr("reduction", "mean");
  if (reduction == "none") return picked;
  if (reduction == "sum") return picked.sum();
  return picked.sum() / w.sum();
}

// SoftmaxCrossEntropyLoss: the NLL loss of log_softmax over the classes (dim 1); its optional
// second output the log-probabilities
inline std::vector<Tensor> softmax_cross_entropy_loss(const OpCall& c) {
  const Tensor& scores = c.in(0);
  const Tensor log_prob = scores.log_softmax(1);
  const Tensor weight = c.has(2) ? c.in(2) : Tensor{};
  return {nll_loss(c, log_prob, c.in(1), c.has(2) ? &weight : nullptr), log_prob};
}

// Attention (opset 23): softmax(Q Kᵀ · scale + mask) V per head; 3-d inputs (batch, seq, hidden)
// split into q_num_heads and kv_num_heads; past keys and values joined before the new ones;
// fewer KV heads repeated for grouped queries; is_causal aligned to the end of the keys; a mask
// shorter than the keys padded with what hides; softcap; rows with no visible key give zeros.
// Outputs Y, the keys and values with the past, and QK at the stage qk_matmul_output_mode picks
inline std::vector<Tensor> attention(const OpCall& c) {
  using tinyt::detail::cat;
  Tensor q = c.in(0), k = c.in(1), v = c.in(2);
  const bool three_d = q.ndim() == 3;
  auto heads = [&](const Tensor& t, int64_t n) {
    const std::vector<int64_t> s = t.shape().to_vector();
    if (n < 1 || s[2] % n) throw ShapeError(cat("onnx: Attention node '", c.node.name, "': hidden size ", s[2], " in ", n, " heads"));
    return t.reshape({s[0], s[1], n, s[2] / n}).permute({0, 2, 1, 3});
  };
  if (three_d) {
    q = heads(q, c.int_attr("q_num_heads", 0));
    k = heads(k, c.int_attr("kv_num_heads", 0));
    v = heads(v, c.int_attr("kv_num_heads", 0));
  }
  if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4)
    throw ShapeError(cat("onnx: Attention node '", c.node.name, "': Q, K, V of shapes ", q.shape(), ", ", k.shape(), ", ", v.shape()));
  const DType dt = q.dtype();
  const int64_t past = c.has(4) ? c.in(4).shape().to_vector()[2] : 0;
  if (c.has(4)) k = Tensor::cat({c.in(4), k}, 2);
  if (c.has(5)) v = Tensor::cat({c.in(5), v}, 2);
  const Tensor present_k = k, present_v = v;
  const int64_t q_len = q.shape().to_vector()[2], kv_len = k.shape().to_vector()[2];
  const int64_t q_heads = q.shape().to_vector()[1];
  k = grouped_heads(k, q_heads), v = grouped_heads(v, q_heads);
  const Attribute* scale_attr = c.attribute("scale");
  const double scale = scale_attr ? scale_attr->f : 1.0 / std::sqrt(static_cast<double>(q.shape().to_vector()[3]));
  // as ONNX's reference: both operands scaled by sqrt(scale), rounded to the input's type
  const Tensor root = Tensor::full(Shape{}, std::sqrt(scale), dt);
  Tensor qk = (q * root).matmul((k * root).transpose(-1, -2));
  const float softcap = c.float_attr("softcap", 0.0f);
  if (softcap > 0) qk = (qk / softcap).tanh() * softcap;
  const Tensor neg_inf = Tensor::full(Shape{}, -INFINITY, dt), zero = Tensor::full(Shape{}, 0.0f, dt);
  // the additive bias: 0 where a key is visible, -inf where not
  Tensor bias = Tensor::zeros({q_len, kv_len}, dt);
  if (c.has(3)) {
    Tensor mask = c.in(3);
    const std::vector<int64_t> ms = mask.shape().to_vector();
    if (!ms.empty() && ms.back() < kv_len) {
      std::vector<std::pair<sint, sint>> pads(ms.size(), {0, 0});
      pads.back() = {0, kv_len - ms.back()};
      mask = mask.dtype() == dtypes::bool_ ? mask.pad(pads, 0.0) : mask.pad(pads, -INFINITY);
    }
    bias = bias + (mask.dtype() == dtypes::bool_ ? mask.where(zero, neg_inf) : mask.cast(dt));
  }
  // a query's position among the keys: i after the past keys, or (external cache) after the
  // first nonpad_kv_seqlen - q_len keys of its batch
  const Tensor i = Tensor::arange(q_len).cast(dtypes::int64).reshape({q_len, 1}), j = Tensor::arange(kv_len).cast(dtypes::int64).reshape({1, kv_len});
  const Tensor position = c.has(6) && !c.has(4) ? Tensor(i + (c.in(6).cast(dtypes::int64) - q_len).reshape({-1, 1, 1, 1})) : Tensor(i + past);
  Tensor visible = Tensor::ones({1, 1}, dtypes::bool_);
  if (c.int_attr("is_causal", 0)) visible = visible.logical_and(j.le(position));
  const int64_t left = c.int_attr("left_window_size", -1), right = c.int_attr("right_window_size", -1);
  if (left >= 0) visible = visible.logical_and((position - j).le(Tensor::full(Shape{}, left, dtypes::int64)));
  if (right >= 0) visible = visible.logical_and((j - position).le(Tensor::full(Shape{}, right, dtypes::int64)));
  bias = bias + visible.where(zero, neg_inf);
  if (c.has(6)) {  // nonpad_kv_seqlen: the keys of each batch past it are padding
    const Tensor lens = c.in(6).cast(dtypes::int64).reshape({-1, 1, 1, 1});
    bias = bias + j.reshape({1, 1, 1, kv_len}).lt(lens).where(zero, neg_inf);
  }
  Tensor with_bias = qk + bias;
  const int64_t mode = c.int_attr("qk_matmul_output_mode", 0);
  Tensor qk_out = mode == 2 ? with_bias : qk;
  const Attribute* precision = c.attribute("softmax_precision");
  const DType softmax_dtype = precision ? dtype_of(precision->i, "Attention node '" + c.node.name + "'") : dt;
  const Tensor hidden_rows = bias.max(-1, true).eq(neg_inf);
  Tensor probs = hidden_rows.where(Tensor::zeros({}, softmax_dtype), with_bias.cast(softmax_dtype).softmax(-1));
  if (mode == 3) qk_out = probs;
  Tensor y = probs.cast(dt).matmul(v);
  if (three_d) {
    const std::vector<int64_t> s = y.shape().to_vector();
    y = y.permute({0, 2, 1, 3}).reshape({s[0], s[2], s[1] * s[3]});
  }
  return {y, present_k, present_v, qk_out.cast(dt)};
}

// Resize (and Upsample, its opset-9 form): Tensor::interpolate with ONNX's attributes; the
// output size from `sizes` (kept to the aspect ratio where keep_aspect_ratio_policy says) or
// from `scales` (floored), over every dim or those of `axes`
inline Tensor resize(const OpCall& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> s = x.shape().to_vector();
  const size_t rank = s.size();
  const bool upsample = c.node.op_type == "Upsample";
  std::vector<int64_t> axes;
  for (const int64_t a : c.ints_attr("axes")) axes.push_back(a < 0 ? a + static_cast<int64_t>(rank) : a);
  if (axes.empty())
    for (size_t a = 0; a < rank; ++a) axes.push_back(static_cast<int64_t>(a));
  // inputs: (X, scales) for Upsample and opset 10, (X, roi, scales, sizes) after
  const size_t scales_at = upsample || c.opset < 11 ? 1 : 2, sizes_at = 3;
  auto host_floats = [&](size_t i) { return c.has(i) && c.in(i).numel() > 0 ? c.in(i).cast(dtypes::float64).to_vector<double>() : std::vector<double>{}; };
  const Attribute* scales_attr = c.attribute("scales");  // (Upsample before opset 9)
  const std::vector<double> given_scales =
      upsample && c.opset < 9 && scales_attr ? std::vector<double>(scales_attr->floats.begin(), scales_attr->floats.end()) : host_floats(scales_at);
  const std::vector<int64_t> given_sizes = c.has(sizes_at) && c.in(sizes_at).numel() > 0 ? c.host_ints(sizes_at) : std::vector<int64_t>{};
  const std::vector<double> roi = scales_at == 2 ? host_floats(1) : std::vector<double>{};
  std::vector<int64_t> out = s;
  std::vector<double> scales(rank, 1.0);
  if (!given_sizes.empty()) {
    if (given_sizes.size() != axes.size())
      throw ShapeError(tinyt::detail::cat("onnx: Resize node '", c.node.name, "': ", given_sizes.size(), " sizes for ", axes.size(), " axes"));
    const std::string policy = c.string_attr("keep_aspect_ratio_policy", "stretch");
    double kept = policy == "not_larger" ? INFINITY : 0.0;
    for (size_t i = 0; i < axes.size(); ++i) {
      const double r = static_cast<double>(given_sizes[i]) / static_cast<double>(s[static_cast<size_t>(axes[i])]);
      kept = policy == "not_larger" ? std::min(kept, r) : std::max(kept, r);
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      const auto a = static_cast<size_t>(axes[i]);
      if (policy == "stretch") {
        out[a] = given_sizes[i], scales[a] = static_cast<double>(out[a]) / static_cast<double>(s[a]);
      } else {
        scales[a] = kept, out[a] = static_cast<int64_t>(kept * static_cast<double>(s[a]) + 0.5);
      }
    }
  } else {
    if (given_scales.size() != axes.size())
      throw ShapeError(tinyt::detail::cat("onnx: Resize node '", c.node.name, "': ", given_scales.size(), " scales for ", axes.size(), " axes"));
    for (size_t i = 0; i < axes.size(); ++i) {
      const auto a = static_cast<size_t>(axes[i]);
      scales[a] = given_scales[i], out[a] = static_cast<int64_t>(std::floor(given_scales[i] * static_cast<double>(s[a])));
    }
  }
  Interpolation how;
  how.mode = c.string_attr("mode", "nearest");
  if (how.mode == "bilinear" || how.mode == "trilinear") how.mode = "linear";  // (opset 9's names)
  const bool old = upsample || c.opset < 11;
  how.coordinates = old ? "asymmetric" : c.string_attr("coordinate_transformation_mode", "half_pixel");
  how.nearest = old ? "floor" : c.string_attr("nearest_mode", "round_prefer_floor");
  how.cubic_a = c.float_attr("cubic_coeff_a", -0.75f);
  how.exclude_outside = c.int_attr("exclude_outside", 0) != 0;
  how.antialias = c.int_attr("antialias", 0) != 0;
  how.extrapolation_value = c.float_attr("extrapolation_value", 0.0f);
  how.scales = scales;
  if (how.coordinates == "tf_crop_and_resize") {
    how.crop.assign(rank, {0.0, 1.0});
    // roi: (starts, ends) over every dim, or over the dims of `axes`
    const size_t n = roi.size() / 2;
    for (size_t i = 0; i < axes.size(); ++i) {
      const auto a = static_cast<size_t>(axes[i]), at = n == rank ? a : i;
      if (at < n) how.crop[a] = {roi[at], roi[n + at]};
    }
  }
  return x.interpolate(Shape(out), how);
}

// NonMaxSuppression (host-synchronizing: which boxes survive decides the output's size): per
// batch and class, the boxes by falling score (above score_threshold where given), each kept
// unless it overlaps a kept one by IoU > iou_threshold, at most max_output_boxes_per_class;
// (batch, class, box) rows of int64
inline Tensor non_max_suppression(const OpCall& c) {
  const std::vector<int64_t> bs = c.in(0).shape().to_vector(), ss = c.in(1).shape().to_vector();
  if (bs.size() != 3 || bs[2] != 4 || ss.size() != 3 || ss[0] != bs[0] || ss[2] != bs[1])
    throw ShapeError(tinyt::detail::cat("onnx: NonMaxSuppression node '", c.node.name, "': boxes ", c.in(0).shape(), " and scores ", c.in(1).shape()));
  const std::vector<double> boxes = c.in(0).cast(dtypes::float64).to_vector<double>(), scores = c.in(1).cast(dtypes::float64).to_vector<double>();
  const int64_t max_out = c.has(2) && c.in(2).numel() ? c.host_ints(2).at(0) : 0;
  const double iou_limit = c.has(3) && c.in(3).numel() ? c.in(3).cast(dtypes::float64).reshape({-1}).to_vector<double>().at(0) : 0.0;
  const bool by_score = c.has(4) && c.in(4).numel();
  const double score_limit = by_score ? c.in(4).cast(dtypes::float64).reshape({-1}).to_vector<double>().at(0) : 0.0;
  const bool centered = c.int_attr("center_point_box", 0) != 0;
  const int64_t n = bs[1];
  // a box as (y1, x1, y2, x2), corners in order
  auto corners = [&](int64_t b, int64_t i) {
    const double* v = &boxes[static_cast<size_t>((b * n + i) * 4)];
    if (centered) return std::array<double, 4>{v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2};
    return std::array<double, 4>{std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]), std::max(v[1], v[3])};
  };
  auto overlaps = [&](const std::array<double, 4>& a, const std::array<double, 4>& b) {
    const double h = std::min(a[2], b[2]) - std::max(a[0], b[0]), w = std::min(a[3], b[3]) - std::max(a[1], b[1]);
    if (h <= 0 || w <= 0) return false;
    const double inter = h * w, area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
    const double uni = area_a + area_b - inter;
    return area_a > 0 && area_b > 0 && uni > 0 && inter / uni > iou_limit;
  };
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < bs[0]; ++b)
    for (int64_t k = 0; k < ss[1]; ++k) {
      const double* score = &scores[static_cast<size_t>((b * ss[1] + k) * n)];
      std::vector<int64_t> order;
      for (int64_t i = 0; i < n; ++i)
        if (!by_score || score[i] > score_limit) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return score[x] > score[y]; });
      std::vector<std::array<double, 4>> kept;
      for (const int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        const std::array<double, 4> box = corners(b, i);
        if (std::any_of(kept.begin(), kept.end(), [&](const auto& other) { return overlaps(box, other); })) continue;
        kept.push_back(box);
        rows.insert(rows.end(), {b, k, i});
      }
    }
  return Tensor::from_vector(rows, {static_cast<int64_t>(rows.size() / 3), 3});
}

// RotaryEmbedding: the first rotary_embedding_dim of each head (all by default) rotated by the
// cos and sin caches (rows picked by position_ids where given): pairs (x1, x2) of its two halves,
// or of neighbours where interleaved, become (cos·x1 - sin·x2, sin·x1 + cos·x2). Input (batch,
// seq, hidden) in num_heads heads or (batch, heads, seq, head)
inline Tensor rotary_embedding(const OpCall& c) {
  const Tensor& in = c.in(0);
  const std::vector<int64_t> s = in.shape().to_vector();
  const bool three_d = s.size() == 3;
  Tensor x = three_d ? in.reshape({s[0], s[1], c.int_attr("num_heads", 1), -1}) : in.permute({0, 2, 1, 3});  // (batch, seq, heads, head)
  const int64_t head = x.shape().to_vector()[3];
  const int64_t dim = c.int_attr("rotary_embedding_dim", 0) ? c.int_attr("rotary_embedding_dim", 0) : head, half = dim / 2;
  Tensor cosines = c.in(1), sines = c.in(2);
  if (c.has(3)) {  // rows of the caches at each position: (batch, seq, half)
    const Tensor at = c.in(3).cast(dtypes::int64);
    const std::vector<int64_t> ps = at.shape().to_vector();
    auto rows = [&](const Tensor& cache) {
      return cache.gather(0, at.reshape({-1, 1}).expand({ps[0] * ps[1], half})).reshape({ps[0], ps[1], half});
    };
    cosines = rows(cosines), sines = rows(sines);
  }
  cosines = cosines.unsqueeze(2), sines = sines.unsqueeze(2);  // (batch, seq, 1, half)
  const Tensor rotated = cut(x, -1, 0, dim), kept = cut(x, -1, dim, head);
  const bool interleaved = c.int_attr("interleaved", 0) != 0;
  std::vector<int64_t> pairs = rotated.shape().to_vector();  // (..., half, 2): neighbours side by side
  pairs.back() = half, pairs.push_back(2);
  const Tensor x1 = interleaved ? pick(rotated.reshape(Shape(pairs)), -1, 0) : cut(rotated, -1, 0, half);
  const Tensor x2 = interleaved ? pick(rotated.reshape(Shape(pairs)), -1, 1) : cut(rotated, -1, half, dim);
  const Tensor re = cosines * x1 - sines * x2, im = sines * x1 + cosines * x2;
  const Tensor turned = interleaved ? Tensor::stack({re, im}, -1).reshape(rotated.shape()) : Tensor::cat({re, im}, -1);
  const Tensor y = Tensor::cat({turned, kept}, -1);
  return three_d ? y.reshape(in.shape()) : y.permute({0, 2, 1, 3});
}

// CausalConvWithState: a depthwise conv (weight (channels, 1, k)) over the past state (default
// zeros) and the input joined, silu after where activation says; outputs it and the last k - 1
// steps as the next state
inline std::vector<Tensor> causal_conv_with_state(const OpCall& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> xs = x.shape().to_vector(), ws = c.in(1).shape().to_vector();
  if (xs.size() != 3 || ws.size() != 3)
    throw ShapeError(tinyt::detail::cat("onnx: CausalConvWithState node '", c.node.name, "': input ", x.shape(), " and weight ", c.in(1).shape()));
  const int64_t k = ws[2];
  const Tensor past = c.has(3) ? c.in(3) : Tensor::zeros({xs[0], xs[1], k - 1}, x.dtype());
  const Tensor padded = Tensor::cat({past, x}, 2);
  Tensor y = padded.conv2d(c.in(1), c.has(2) ? c.in(2) : Tensor{}, xs[1]);
  const std::string activation = c.string_attr("activation", "none");
  if (activation == "silu" || activation == "swish") y = y.cast(dtypes::float32).silu().cast(x.dtype());
  else if (activation != "none") throw UnsupportedError(tinyt::detail::cat("onnx: CausalConvWithState node '", c.node.name, "': activation '", activation, "'"));
  const int64_t n = padded.shape().to_vector()[2];
  return {y, cut(padded, 2, n - (k - 1), n)};
}

// LinearAttention: a state (batch, kv heads, d_k, d_v) updated step by step with k vᵀ (decayed by
// exp(decay) where gated, v first corrected by beta·(v - stateᵀk) where delta), each query
// reading scale · qᵀ state (KV heads shared by q_num_heads / kv_num_heads queries), in float32;
// outputs (batch, steps, q heads · d_v) and the final state
inline std::vector<Tensor> linear_attention(const OpCall& c) {
  using tinyt::detail::cat;
  const std::string rule = c.string_attr("update_rule", "gated_delta");
  const bool gated = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  if (!gated && !delta && rule != "linear") throw UnsupportedError(cat("onnx: LinearAttention node '", c.node.name, "': update_rule '", rule, "'"));
  const int64_t q_heads = c.int_attr("q_num_heads", 1), kv_heads = c.int_attr("kv_num_heads", 1);
  const std::vector<int64_t> qs = c.in(0).shape().to_vector();
  const int64_t b = qs.at(0), steps = qs.at(1), dk = qs.at(2) / q_heads, dv = c.in(2).shape().to_vector().at(2) / kv_heads;
  auto heads = [&](const Tensor& t, int64_t n) { return t.cast(dtypes::float32).reshape({b, steps, n, -1}).permute({0, 2, 1, 3}); };  // (b, h, t, d)
  const Tensor q = heads(c.in(0), q_heads), k = heads(c.in(1), kv_heads), v = heads(c.in(2), kv_heads);
  std::optional<Tensor> decay, beta;
  if (gated) decay = heads(c.in(4), kv_heads);                                   // (b, h, t, 1 or d_k)
  if (delta) beta = c.in(5).cast(dtypes::float32).reshape({b, steps, -1, 1}).permute({0, 2, 1, 3});  // (b, h or 1, t, 1)
  Tensor state = c.has(3) ? c.in(3).cast(dtypes::float32) : Tensor::zeros({b, kv_heads, dk, dv}, dtypes::float32);
  const float scale = c.float_attr("scale", 0.0f) != 0.0f ? c.float_attr("scale", 0.0f) : 1.0f / std::sqrt(static_cast<float>(dk));
  std::vector<Tensor> outputs;
  auto at = [](const Tensor& t, int64_t i) { return pick(t, 2, i); };  // step i: (b, h, d)
  for (int64_t i = 0; i < steps; ++i) {
    const Tensor k_t = at(k, i);
    Tensor v_t = at(v, i);
    if (gated) state = state * at(*decay, i).exp().unsqueeze(-1);
    if (delta) v_t = at(*beta, i) * (v_t - (state * k_t.unsqueeze(-1)).sum(2));
    state = state + k_t.unsqueeze(-1) * v_t.unsqueeze(-2);
    const Tensor read = grouped_heads(state, q_heads);
    outputs.push_back((at(q, i).unsqueeze(-1) * read).sum(2) * scale);  // (b, q heads, d_v)
  }
  const Tensor y = Tensor::stack(outputs, 1).reshape({b, steps, q_heads * dv}).cast(c.in(0).dtype());
  return {y, state.cast(c.has(3) ? c.in(3).dtype() : c.in(0).dtype())};
}

// Col2Im: the blocks (N, C·kernel, blocks) summed back into images (N, C, image...), each block's
// element at block·stride - pad + offset·dilation. A transposed conv does exactly that: the
// column of kernel offset j through a one-hot weight at j, C groups
inline Tensor col2im(const OpCall& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> image = c.host_ints(1), kernel = c.host_ints(2), xs = x.shape().to_vector();
  const size_t dims = image.size();
  Window w = window_of(c, image, kernel);
  int64_t taps = 1;
  for (const int64_t k : kernel) taps *= k;
  if (xs.size() != 3 || taps == 0 || xs[1] % taps)
    throw ShapeError(tinyt::detail::cat("onnx: Col2Im node '", c.node.name, "': input ", x.shape(), " for a kernel of ", taps, " elements"));
  const int64_t channels = xs[1] / taps;
  std::vector<int64_t> blocked{xs[0], xs[1]}, output_padding;
  for (size_t j = 0; j < dims; ++j) {
    const int64_t blocks = (image[j] + w.begin[j] + w.end[j] - w.span(j)) / w.strides[j] + 1;
    blocked.push_back(blocks);
    output_padding.push_back(image[j] - ((blocks - 1) * w.strides[j] + w.span(j) - w.begin[j] - w.end[j]));
  }
  std::vector<float> one_hot(static_cast<size_t>(xs[1] * taps), 0.0f);
  for (int64_t row = 0; row < xs[1]; ++row) one_hot[static_cast<size_t>(row * taps + row % taps)] = 1.0f;
  std::vector<int64_t> weight_shape{xs[1], 1};
  weight_shape.insert(weight_shape.end(), kernel.begin(), kernel.end());
  const Tensor weight = Tensor::from_vector(one_hot, Shape(weight_shape)).cast(x.dtype());
  return x.reshape(Shape(blocked)).conv_transpose2d(weight, Tensor{}, channels, w.strides, w.dilations, w.padding(), output_padding);
}

// FlexAttention (ai.onnx.preview): softmax(score_mod(Q Kᵀ · scale)) V, prob_mod applied to the
// probabilities, both graph attributes of one input and one output where given; in float32 for
// narrower inputs (or softmax_precision); fewer KV heads repeated for grouped queries
inline Tensor flex_attention(const OpCall& c) {
  const Tensor &q = c.in(0), &v_in = c.in(2);
  Tensor k = c.in(1), v = v_in;
  const std::vector<int64_t> qs = q.shape().to_vector(), ks = k.shape().to_vector();
  if (qs.size() != 4 || ks.size() != 4 || v.ndim() != 4)
    throw ShapeError(tinyt::detail::cat("onnx: FlexAttention node '", c.node.name, "': Q, K, V of shapes ", q.shape(), ", ", k.shape(), ", ", v.shape()));
  k = grouped_heads(k, qs[1]), v = grouped_heads(v, qs[1]);
  const Attribute* scale_attr = c.attribute("scale");
  const double scale = scale_attr ? scale_attr->f : 1.0 / std::sqrt(static_cast<double>(qs[3]));
  const Tensor root = Tensor::full(Shape{}, std::sqrt(static_cast<float>(scale)), q.dtype());
  const Attribute* precision = c.attribute("softmax_precision");
  const DType acc = precision ? dtype_of(precision->i, "FlexAttention node '" + c.node.name + "'")
                              : q.dtype().itemsize() < 4 ? dtypes::float32 : q.dtype();
  Tensor scores = (q * root).matmul((k * root).transpose(-1, -2)).cast(acc);
  auto mod = [&](const char* name, const Tensor& t) {
    const Attribute* g = c.attribute(name);
    return g && g->g ? c.run_graph(*g->g, {t}).at(0).cast(acc) : t;
  };
  scores = mod("score_mod", scores);
  const Tensor probs = mod("prob_mod", scores.softmax(-1));
  return probs.matmul(v.cast(acc)).cast(v_in.dtype());
}

}  // namespace detail
}  // namespace onnx
}  // namespace tinyt::inline v0
