// The ONNX ops of quantized models in the integer types tinyt has: QuantizeLinear,
// DequantizeLinear and DynamicQuantizeLinear (per tensor, per axis or in blocks), and the integer
// products MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv (dequantized, computed,
// quantized again, as ONNX defines them).
#pragma once

#include "ops_host.hpp"

namespace tinyt::inline v0 {
namespace onnx {
namespace detail {

// A scale or zero point as it applies to x's elements: one value, one per index of `axis`, or
// (block_size > 0) one per block of block_size along `axis`
inline Tensor quant_param(const Tensor& p, const Tensor& x, int64_t axis, int64_t block_size) {
  const std::vector<int64_t> xs = x.shape().to_vector(), ps = p.shape().to_vector();
  if (p.numel() == 1) return p.reshape({});
  const auto a = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(xs.size()) : axis);
  if (block_size <= 0) {
    std::vector<int64_t> along(xs.size(), 1);
    along[a] = p.numel();
    return p.reshape(Shape(along));
  }
  // each value repeated block_size times along the axis, cut to x's size there
  std::vector<int64_t> split = ps, wide = ps;
  split.insert(split.begin() + static_cast<std::ptrdiff_t>(a) + 1, 1);
  wide = split;
  wide[a + 1] = block_size;
  std::vector<int64_t> joined = ps;
  joined[a] *= block_size;
  std::vector<std::pair<sint, sint>> keep;
  for (const int64_t d : xs) keep.emplace_back(0, d);
  return p.reshape(Shape(split)).expand(Shape(wide)).reshape(Shape(joined)).shrink(keep);
}

// round(x / scale) + zero point (ties to even), saturated to `dt`'s range
inline Tensor quantize(const Tensor& x, const Tensor& scale, const std::optional<Tensor>& zero_point, DType dt) {
  Tensor q = (x.cast(dtypes::float32) / scale.cast(dtypes::float32)).round();
  if (zero_point) q = q + zero_point->cast(dtypes::float32);
  const auto lo = static_cast<double>(dtypes::min_int(dt)), hi = static_cast<double>(dtypes::max_int(dt));
  return q.maximum(Tensor::full(Shape{}, lo, dtypes::float32)).minimum(Tensor::full(Shape{}, hi, dtypes::float32)).cast(dt);
}

// QuantizeLinear: into the zero point's type (or output_dtype, default uint8)
inline Tensor quantize_linear(const OpCall& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = c.int_attr("axis", 1), block = c.int_attr("block_size", 0);
  const Attribute* out = c.attribute("output_dtype");
  const DType dt = c.has(2) ? c.in(2).dtype() : out ? dtype_of(out->i, "QuantizeLinear node '" + c.node.name + "'") : dtypes::uint8;
  const std::optional<Tensor> zp = c.has(2) ? std::optional<Tensor>(quant_param(c.in(2), x, axis, block)) : std::nullopt;
  return quantize(x, quant_param(c.in(1), x, axis, block), zp, dt);
}

// DequantizeLinear: (x - zero point) · scale, in the scale's type (or output_dtype)
inline Tensor dequantize_linear(const OpCall& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = c.int_attr("axis", 1), block = c.int_attr("block_size", 0);
  Tensor d = x.cast(dtypes::float32);
  if (c.has(2)) d = d - quant_param(c.in(2), x, axis, block).cast(dtypes::float32);
  const Attribute* out = c.attribute("output_dtype");
  const DType dt = out && out->i ? dtype_of(out->i, "DequantizeLinear node '" + c.node.name + "'") : c.in(1).dtype();
  return (d * quant_param(c.in(1), x, axis, block).cast(dtypes::float32)).cast(dt);
}

// DynamicQuantizeLinear: uint8 over the range of x and 0: scale (max - min) / 255, the zero point
// where 0 lands; outputs y, scale, zero point
inline std::vector<Tensor> dynamic_quantize_linear(const OpCall& c) {
  const Tensor x = c.in(0).cast(dtypes::float32);
  const Tensor zero = Tensor::zeros({}, dtypes::float32);
  const Tensor lo = x.min().minimum(zero), hi = x.max().maximum(zero);
  const Tensor scale = (hi - lo) / 255.0f;
  const Tensor zp = quantize(zero - lo, scale, std::nullopt, dtypes::uint8);
  return {quantize(x, scale, zp, dtypes::uint8), scale, zp};
}

// the integer operand minus its zero point, in int32 (a zero point per row of A, or per column of B)
inline Tensor centred(const OpCall& c, size_t operand, size_t zero_point, bool per_row) {
  Tensor t = c.in(operand).cast(dtypes::int32);
  if (!c.has(zero_point)) return t;
  Tensor zp = c.in(zero_point).cast(dtypes::int32);
  if (zp.numel() > 1 && per_row) zp = zp.reshape({-1, 1});
  return t - zp;
}

// MatMulInteger: (A - a_zero_point)(B - b_zero_point) in int32
inline Tensor matmul_integer(const OpCall& c) { return centred(c, 0, 2, true).matmul(centred(c, 1, 3, false)); }

// ConvInteger: Conv of (x - x_zero_point) and (w - w_zero_point, per output channel) in int32
inline Tensor conv_integer(const OpCall& c) {
  const Tensor x = centred(c, 0, 2, false);
  Tensor w = c.in(1).cast(dtypes::int32);
  if (c.has(3)) {
    Tensor zp = c.in(3).cast(dtypes::int32);
    if (zp.numel() > 1) {
      std::vector<int64_t> per_channel(w.ndim(), 1);
      per_channel[0] = zp.numel();
      zp = zp.reshape(Shape(per_channel));
    }
    w = w - zp;
  }
  const Window win = window_of(c, dims_from(x, 2), dims_from(w, 2));
  return x.conv2d(w, Tensor{}, c.int_attr("group", 1), win.strides, win.dilations, win.padding());
}

// an operand of QLinearMatMul / QLinearConv dequantized: (q - zero point) · scale in float32,
// the parameters per row (A) or per output channel (B, W: `axis` 0 of W, the last of B)
inline Tensor dequantized(const Tensor& q, const Tensor& scale, const Tensor& zero_point, int64_t axis) {
  return (q.cast(dtypes::float32) - quant_param(zero_point, q, axis, 0).cast(dtypes::float32)) * quant_param(scale, q, axis, 0).cast(dtypes::float32);
}

// QLinearMatMul: A, B dequantized, multiplied, quantized to y's scale and zero point
inline Tensor qlinear_matmul(const OpCall& c) {
  const Tensor a = dequantized(c.in(0), c.in(1), c.in(2), -2), b = dequantized(c.in(3), c.in(4), c.in(5), -1);
  const Tensor y = a.matmul(b);
  return quantize(y, c.in(6).cast(dtypes::float32), c.in(7), c.in(7).dtype());
}

// QLinearConv: x and w dequantized, Conv with the int32 bias (in x_scale · w_scale units),
// quantized to y's scale and zero point
inline Tensor qlinear_conv(const OpCall& c) {
  const Tensor x = dequantized(c.in(0), c.in(1), c.in(2), 1), w = dequantized(c.in(3), c.in(4), c.in(5), 0);
  const Window win = window_of(c, dims_from(x, 2), dims_from(w, 2));
  Tensor y = x.conv2d(w, Tensor{}, c.int_attr("group", 1), win.strides, win.dilations, win.padding());
  if (c.has(8)) {
    std::vector<int64_t> per_channel(y.ndim(), 1);
    per_channel[1] = c.in(8).numel();
    const Tensor bias_scale = c.in(1).cast(dtypes::float32).reshape({-1}) * c.in(4).cast(dtypes::float32).reshape({-1});
    y = y + (c.in(8).cast(dtypes::float32) * bias_scale).reshape(Shape(per_channel));
  }
  return quantize(y, c.in(6).cast(dtypes::float32), c.in(7), c.in(7).dtype());
}

}  // namespace detail
}  // namespace onnx
}  // namespace tinyt::inline v0
