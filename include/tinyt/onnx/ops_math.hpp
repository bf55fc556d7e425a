// The ONNX ops that compute (Softmax, Gemm, Div, Mod, the reductions, LayerNormalization ..)
// where a Tensor op alone does not say ONNX's semantics: their functions, in the table of
// onnx/ops.hpp.
#pragma once

#include <cmath>

#include "ops_shape.hpp"  // (the reductions read their axes as the shape ops do)

namespace tinyt::inline v0 {
namespace onnx {
namespace detail {

// Softmax and LogSoftmax (`op`): from opset 13 along one axis (default -1); before, over the
// input flattened to 2-D at `axis` (default 1), the dims from `axis` on as one
inline Tensor softmax_like(const OpCall& c, Tensor (Tensor::*op)(int) const) {
  const Tensor& x = c.in(0);
  if (c.opset >= 13) return (x.*op)(static_cast<int>(c.int_attr("axis", -1)));
  return (flattened_2d(x, c.int_attr("axis", 1)).*op)(1).reshape(x.shape());
}

// Gemm: alpha·A'·B' + beta·C, A' and B' transposed where transA, transB say
inline Tensor gemm(const OpCall& c) {
  Tensor a = c.in(0), b = c.in(1);
  if (c.int_attr("transA", 0)) a = a.transpose();
  if (c.int_attr("transB", 0)) b = b.transpose();
  const float alpha = c.float_attr("alpha", 1.0f), beta = c.float_attr("beta", 1.0f);
  Tensor y = a.matmul(b);
  if (alpha != 1.0f) y = y * alpha;
  if (c.has(2)) y = y + (beta == 1.0f ? c.in(2) : c.in(2) * beta);
  return y;
}

// a variadic op (Max, Min, Sum, Mean): its inputs folded pairwise, broadcasting
inline Tensor fold(const OpCall& c, const std::function<Tensor(const Tensor&, const Tensor&)>& f) {
  Tensor acc = c.in(0);
  for (size_t i = 1; i < c.inputs.size(); ++i) acc = f(acc, c.in(i));
  return acc;
}

// Div: of integers, the quotient truncated toward zero (C's), as ONNX defines it
inline Tensor div(const OpCall& c) {
  const Tensor &a = c.in(0), &b = c.in(1);
  if (!a.dtype().is_int()) return a.div(b);
  const Tensor floored = a.floordiv(b);
  const Tensor inexact = (a - floored * b).ne(Tensor::zeros_like(a)), opposite = a.lt(Tensor::zeros_like(a)).logical_xor(b.lt(Tensor::zeros_like(b)));
  return floored + inexact.logical_and(opposite).cast(a.dtype());
}

// What a Reduce op computes over its axes: (input, dims, keepdims) -> output
using Reduction = std::function<Tensor(const Tensor&, const std::vector<int>&, bool)>;

// the Reduction of a Tensor reduce (sum, max ..)
inline Reduction by(Tensor (Tensor::*op)(std::vector<int>, bool) const) {
  return [op](const Tensor& x, const std::vector<int>& dims, bool keep) { return (x.*op)(dims, keep); };
}

// Reduce*: over `axes` (from input 1 from opset `axes_input_from`, the attribute before; none:
// all, or none at all with noop_with_empty_axes), dims kept where keepdims (default 1), in the
// input's type
inline Tensor reduce(const OpCall& c, int64_t axes_input_from, const Reduction& op) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> axes = axes_of(c, axes_input_from, 1);
  if (axes.empty() && c.int_attr("noop_with_empty_axes", 0)) return x;
  std::vector<int> dims;
  const auto rank = static_cast<int64_t>(x.shape().to_vector().size());
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) dims.push_back(static_cast<int>(i));
  for (const int64_t a : axes) dims.push_back(static_cast<int>(a < 0 ? a + rank : a));
  return op(x, dims, c.int_attr("keepdims", 1) != 0).cast(x.dtype());
}

// ReduceMax, ReduceMin: as Tensor's, and over nothing the identity: the lowest (highest) value
// of the type (-inf, +inf for floats; false, true for bool)
inline Reduction extreme(bool largest) {
  return [largest](const Tensor& x, const std::vector<int>& dims, bool keep) {
    const std::vector<int64_t> s = x.shape().to_vector();
    const bool over_nothing = std::any_of(dims.begin(), dims.end(), [&](int d) { return s[static_cast<size_t>(d)] == 0; });
    if (!over_nothing) return largest ? x.max(dims, keep) : x.min(dims, keep);
    const DType dt = x.dtype();
    const Shape out = x.sum(dims, keep).shape();
    if (dt.is_bool()) return Tensor::full(out, !largest, dt);
    if (dt.is_float()) return Tensor::full(out, largest ? -INFINITY : INFINITY, dt);
    const Tensor lowest = Tensor::full(out, static_cast<int64_t>(dtypes::min_int(dt)), dt);  // (0 unsigned)
    return largest ? lowest : lowest.bitwise_not();  // the highest: every bit but the sign's, or all
  };
}

// ReduceLogSumExp: log(sum(exp(x - max))) + max, which neither overflows nor loses the small terms
inline Tensor log_sum_exp(const Tensor& x, const std::vector<int>& dims, bool keep) {
  if (x.numel() == 0) return x.exp().sum(dims, keep).log();  // (of nothing: log 0)
  const Tensor top = x.max(dims, true);
  const Tensor shift = top.isinf().where(Tensor::zeros_like(top), top);  // (-inf rows: log 0)
  const Tensor y = (x - shift).exp().sum(dims, true).log() + shift;
  return keep ? y : y.reshape(x.sum(dims, false).shape());
}

// Clip: bounded below and above where the bounds are given (inputs from opset 11, attributes before)
inline Tensor clip(const OpCall& c) {
  Tensor x = c.in(0);
  if (c.opset < 11) {
    if (const Attribute* lo = c.attribute("min")) x = x.maximum(Tensor::full(Shape{}, lo->f, x.dtype()));
    if (const Attribute* hi = c.attribute("max")) x = x.minimum(Tensor::full(Shape{}, hi->f, x.dtype()));
    return x;
  }
  if (c.has(1)) x = x.maximum(c.in(1));
  if (c.has(2)) x = x.minimum(c.in(2));
  return x;
}

// Mod: with fmod 0, integers' remainder takes the divisor's sign (Python's); with fmod 1, the
// dividend's (C's fmod)
inline Tensor mod(const OpCall& c) {
  const Tensor &a = c.in(0), &b = c.in(1);
  if (!c.int_attr("fmod", 0)) return a.mod(b);
  if (a.dtype().is_float()) return a - (a / b).trunc() * b;
  return a - div(c) * b;
}

// ArgMax, ArgMin: int64 indices along `axis`, dims kept where keepdims; the last of equal values
// where select_last_index (the first found in the flipped axis)
inline Tensor arg_extreme(const OpCall& c, bool largest) {
  const Tensor& x = c.in(0);
  const int64_t axis = c.axis(0);
  const bool keep = c.int_attr("keepdims", 1) != 0, last = c.int_attr("select_last_index", 0) != 0;
  const Tensor in = last ? x.flip(static_cast<int>(axis)) : x;
  Tensor idx = (largest ? in.argmax(static_cast<int>(axis), keep) : in.argmin(static_cast<int>(axis), keep)).cast(dtypes::int64);
  if (last) idx = Tensor::full(Shape{}, x.shape().to_vector().at(static_cast<size_t>(axis)) - 1, dtypes::int64) - idx;
  return idx;
}

// LayerNormalization: normalized over the dims from `axis` (default -1), in float32 (stash_type
// 1) for narrower inputs, scaled and shifted; its optional outputs the mean and 1/stddev, those
// dims kept as 1
inline std::vector<Tensor> layer_normalization(const OpCall& c) {
  const Tensor& x = c.in(0);
  const auto rank = static_cast<int64_t>(x.shape().to_vector().size());
  const int64_t axis = c.axis(-1);
  std::vector<int> dims;
  for (int64_t i = axis; i < rank; ++i) dims.push_back(static_cast<int>(i));
  const Tensor xf = widened(x);
  const Tensor mean = xf.mean(dims, true), centered = xf - mean;
  const Tensor inv_std = ((centered * centered).mean(dims, true) + c.float_attr("epsilon", 1e-5f)).rsqrt();
  Tensor y = (centered * inv_std).cast(x.dtype()) * c.in(1);
  if (c.has(2)) y = y + c.in(2);
  return {y, mean, inv_std};
}

// CumSum, CumProd (`product`): running sums or products along the axis input; exclusive leaves
// each element out of its own, reverse runs from the end
inline Tensor running(const OpCall& c, bool product) {
  const Tensor& x = c.in(0);
  const auto rank = static_cast<int64_t>(x.shape().to_vector().size());
  int64_t axis = c.host_ints(1).at(0);
  if (axis < 0) axis += rank;
  const int ax = static_cast<int>(axis);
  const bool reverse = c.int_attr("reverse", 0) != 0;
  const Tensor in = reverse ? x.flip(ax) : x;
  Tensor y = product ? in.cumprod(ax) : in.cumsum(ax);
  if (c.int_attr("exclusive", 0)) {  // the running value one step before: shifted by one, the identity first
    std::vector<std::pair<sint, sint>> shift(static_cast<size_t>(rank), {0, 0}), keep;
    shift[static_cast<size_t>(ax)] = {1, 0};
    for (const int64_t d : x.shape().to_vector()) keep.emplace_back(0, d);
    y = y.pad(shift, product ? 1.0 : 0.0).shrink(keep);
  }
  y = y.cast(x.dtype());
  return reverse ? y.flip(ax) : y;
}

// Hardmax: 1 at the first largest element along `axis` (opset 13; before, of the input
// flattened to 2-d there), 0 elsewhere
inline Tensor hardmax(const OpCall& c) {
  const Tensor& x = c.in(0);
  const Tensor x2 = c.opset >= 13 ? x : flattened_2d(x, c.int_attr("axis", 1));
  const int axis = c.opset >= 13 ? static_cast<int>(c.axis(-1)) : 1;
  const int64_t n = x2.shape().to_vector().at(static_cast<size_t>(axis < 0 ? axis + static_cast<int>(x2.ndim()) : axis));
  const Tensor first = x2.argmax(axis, true);
  std::vector<int64_t> along(x2.ndim(), 1);
  along[static_cast<size_t>(axis < 0 ? axis + static_cast<int>(x2.ndim()) : axis)] = n;
  return Tensor::arange(n).reshape(Shape(along)).eq(first).cast(x.dtype()).reshape(x.shape());
}

// Shrink: x - bias above lambd, x + bias below -lambd, 0 between
inline Tensor shrink(const OpCall& c) {
  const Tensor& x = c.in(0);
  const float lambd = c.float_attr("lambd", 0.5f), bias = c.float_attr("bias", 0.0f);
  const Tensor zero = Tensor::zeros_like(x);
  const Tensor lo = Tensor::full(Shape{}, -lambd, dtypes::float32), hi = Tensor::full(Shape{}, lambd, dtypes::float32);
  const Tensor xf = x.cast(dtypes::float32);
  return xf.lt(lo).where(xf + bias, xf.gt(hi).where(xf - bias, zero.cast(dtypes::float32))).cast(x.dtype());
}

// IsInf: +inf where detect_positive (default 1), -inf where detect_negative (default 1)
inline Tensor is_inf(const OpCall& c) {
  const Tensor& x = c.in(0);
  const Tensor zero = Tensor::zeros_like(x);
  Tensor hit = Tensor::zeros_like(x).cast(dtypes::bool_);
  if (c.int_attr("detect_positive", 1)) hit = hit.logical_or(x.isinf().logical_and(x.gt(zero)));
  if (c.int_attr("detect_negative", 1)) hit = hit.logical_or(x.isinf().logical_and(x.lt(zero)));
  return hit;
}

// Gelu: x·Φ(x), or its tanh approximation where approximate is "tanh"
inline Tensor gelu(const OpCall& c) {
  const Tensor& x = c.in(0);
  if (c.string_attr("approximate", "none") == "tanh")
    return x * 0.5f * ((x + x * x * x * 0.044715f) * 0.7978845608028654f).tanh() + x * 0.5f;
  return x * 0.5f * ((x * 0.7071067811865476f).erf() + 1.0f);
}

// Celu: max(0, x) + min(0, alpha·(exp(x / alpha) - 1))
inline Tensor celu(const OpCall& c) {
  const Tensor& x = c.in(0);
  const float alpha = c.float_attr("alpha", 1.0f);
  const Tensor zero = Tensor::zeros_like(x);
  return x.maximum(zero) + (((x / alpha).exp() - 1.0f) * alpha).minimum(zero);
}

// Dropout at inference: the input, and a mask of ones; in training with a ratio, not supported
inline std::vector<Tensor> dropout(const OpCall& c) {
  const Tensor& x = c.in(0);
  const bool training = c.has(2) && c.in(2).cast(dtypes::bool_).item<bool>();
  const float ratio = c.has(1) ? c.in(1).cast(dtypes::float32).item<float>() : c.float_attr("ratio", 0.5f);
  if (training && ratio > 0)
    throw UnsupportedError(tinyt::detail::cat("onnx: Dropout node '", c.node.name, "': training mode with ratio ", ratio, " (random masks are not supported)"));
  return {x, Tensor::ones_like(x).cast(dtypes::bool_)};
}

// Det: the determinant of each (n, n) matrix of (..., n, n), by Gaussian elimination with
// partial pivoting unrolled over the n columns (in float64): the pivots' product, its sign
// flipped by each row swap; a zero pivot column gives 0
inline Tensor det(const OpCall& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> s = x.shape().to_vector();
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2])
    throw ShapeError(tinyt::detail::cat("onnx: Det node '", c.node.name, "': needs square matrices, got shape ", x.shape()));
  const int64_t n = s.back();
  Tensor a = x.cast(dtypes::float64);
  const Tensor rows = Tensor::arange(n).cast(dtypes::int64);  // (n,)
  Tensor product = Tensor::ones(Shape(std::vector<int64_t>(s.begin(), s.end() - 2)), dtypes::float64);
  const Tensor zero = Tensor::zeros({}, dtypes::float64);
  for (int64_t k = 0; k < n; ++k) {
    const Tensor column = pick(a, -1, k);  // (..., n)
    // the largest of the rows from k on leads
    const Tensor from_k = rows.ge(Tensor::full(Shape{}, k, dtypes::int64));
    const Tensor pivot_row = from_k.where(column.abs(), Tensor::full(Shape{}, -1.0, dtypes::float64)).argmax(-1, true).cast(dtypes::int64);  // (..., 1)
    const Tensor at_k = Tensor::full(Shape{}, k, dtypes::int64);
    // row i reads row perm(i): rows k and the pivot's trade places
    const Tensor perm = rows.eq(at_k).where(pivot_row, rows.eq(pivot_row).where(at_k, rows));  // (..., n)
    a = perm.unsqueeze(-1).eq(rows).cast(dtypes::float64).matmul(a);
    const Tensor swapped = pivot_row.squeeze(-1).ne(at_k);
    const Tensor pivot = a[{Ellipsis, k, k}];
    product = product * pivot * swapped.where(Tensor::full(Shape{}, -1.0, dtypes::float64), Tensor::full(Shape{}, 1.0, dtypes::float64));
    const Tensor below = rows.gt(at_k), safe = pivot.eq(zero).where(Tensor::ones_like(pivot), pivot);
    const Tensor factor = below.where(pick(a, -1, k) / safe.unsqueeze(-1), zero);  // (..., n)
    a = a - factor.unsqueeze(-1) * pick(a, -2, k).unsqueeze(-2);
  }
  return product.cast(x.dtype());
}

}  // namespace detail
}  // namespace onnx
}  // namespace tinyt::inline v0
