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

// Reduce{Sum,Max,Min,Mean,Prod}: over `axes` (none: all, or none at all with
// noop_with_empty_axes), dims kept where keepdims (default 1), in the input's type
inline Tensor reduce(const OpCall& c, int64_t axes_input_from, Tensor (Tensor::*op)(std::vector<int>, bool) const) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> axes = axes_of(c, axes_input_from, 1);
  if (axes.empty() && c.int_attr("noop_with_empty_axes", 0)) return x;
  std::vector<int> dims;
  const auto rank = static_cast<int64_t>(x.shape().to_vector().size());
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) dims.push_back(static_cast<int>(i));
  for (const int64_t a : axes) dims.push_back(static_cast<int>(a < 0 ? a + rank : a));
  return (x.*op)(dims, c.int_attr("keepdims", 1) != 0).cast(x.dtype());
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
  const Tensor xf = x.dtype().itemsize() < 4 ? x.cast(dtypes::float32) : x;
  const Tensor mean = xf.mean(dims, true), centered = xf - mean;
  const Tensor inv_std = ((centered * centered).mean(dims, true) + c.float_attr("epsilon", 1e-5f)).rsqrt();
  Tensor y = (centered * inv_std).cast(x.dtype()) * c.in(1);
  if (c.has(2)) y = y + c.in(2);
  return {y, mean, inv_std};
}

}  // namespace detail
}  // namespace onnx
}  // namespace tinyt::inline v0
