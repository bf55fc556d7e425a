// The ONNX signal ops: DFT (a matmul with the transform's cos and sin matrices, worked out on
// the host), STFT (framed, windowed DFTs) and the windows.
#pragma once

#include <cmath>

#include "ops_quant.hpp"

namespace tinyt::inline v0 {
namespace onnx {
namespace detail {

// HannWindow, HammingWindow, BlackmanWindow: a0 - a1·cos(2πn/N) + a2·cos(4πn/N) over n < size,
// N = size (periodic, the default) or size - 1, computed in float64 and given in output_datatype
inline Tensor window(const OpCall& c, double a0, double a1, double a2) {
  const int64_t size = c.host_ints(0).at(0);
  const double n = static_cast<double>(c.int_attr("periodic", 1) ? size : size - 1);
  const Tensor phase = Tensor::arange(size).cast(dtypes::float64) * (2 * M_PI / n);
  const Tensor w = Tensor::full(Shape{}, a0, dtypes::float64) - phase.cos() * a1 + (phase * 2.0).cos() * a2;
  return w.cast(dtype_of(c.int_attr("output_datatype", 1), c.node.op_type + " node '" + c.node.name + "'"));
}

// The DFT along `axis` of a signal (..., 1) real or (..., 2) complex: (..., 2), of `length`
// points (the signal cut or zero-padded to it), the first length / 2 + 1 where onesided, the
// inverse (e^{+iθ}, divided by length) where inverse; the inverse of a one-sided spectrum is a
// real signal (..., 1)
inline Tensor dft_along(const Tensor& x, int64_t axis, int64_t length, bool inverse, bool onesided, const std::string& where) {
  const std::vector<int64_t> s = x.shape().to_vector();
  const auto rank = static_cast<int64_t>(s.size());
  if (axis < 0) axis += rank;
  if (rank < 2 || axis >= rank - 1 || (s.back() != 1 && s.back() != 2))
    throw ShapeError(tinyt::detail::cat("onnx: ", where, ": a signal (..., 1 or 2) of shape ", x.shape(), " along axis ", axis));
  const DType acc = dtypes::float64;  // (a float32 transform leaves residues of 1e-6 where the result is 0)
  const int ax = static_cast<int>(axis), last = static_cast<int>(rank) - 2;
  // the real and imaginary parts, the transformed axis last, cut or padded to `length`
  auto part = [&](int64_t k) {
    Tensor p = x[{Ellipsis, k}].cast(acc).transpose(ax, last);
    const int64_t n = s[static_cast<size_t>(axis)];
    std::vector<std::pair<sint, sint>> fit;
    for (const sint& d : p.shape()) fit.emplace_back(0, d);
    fit.back() = {0, std::min(n, length)};
    p = p.shrink(fit);
    std::vector<std::pair<sint, sint>> pad(p.ndim(), {0, 0});
    pad.back() = {0, std::max<int64_t>(0, length - n)};
    return p.pad(pad);
  };
  if (inverse && onesided) {
    // a real signal from the first length / 2 + 1 bins of its spectrum: the others are their
    // conjugates, so each bin but the first (and the middle one, for an even length) counts twice
    const int64_t bins = length / 2 + 1, given = s[static_cast<size_t>(axis)];
    auto bin = [&](int64_t k) {
      Tensor p = x[{Ellipsis, k}].cast(acc).transpose(ax, last);
      std::vector<std::pair<sint, sint>> fit;
      for (const sint& d : p.shape()) fit.emplace_back(0, d);
      fit.back() = {0, std::min(given, bins)};
      std::vector<std::pair<sint, sint>> pad(p.ndim(), {0, 0});
      pad.back() = {0, std::max<int64_t>(0, bins - given)};
      return p.shrink(fit).pad(pad);
    };
    const Tensor re = bin(0), im = s.back() == 2 ? bin(1) : Tensor::zeros_like(re);
    std::vector<double> cosines, sines;  // (bins, length): bin k to output j
    for (int64_t k = 0; k < bins; ++k)
      for (int64_t j = 0; j < length; ++j) {
        const double twice = k == 0 || 2 * k == length ? 1.0 : 2.0;
        const double theta = 2 * M_PI * static_cast<double>((j * k) % length) / static_cast<double>(length);
        cosines.push_back(twice * std::cos(theta) / static_cast<double>(length)), sines.push_back(twice * std::sin(theta) / static_cast<double>(length));
      }
    const Tensor cs = Tensor::from_vector(cosines, {bins, length}), sn = Tensor::from_vector(sines, {bins, length});
    return (re.matmul(cs) - im.matmul(sn)).transpose(ax, last).unsqueeze(-1).cast(x.dtype());
  }
  const Tensor re = part(0), im = s.back() == 2 ? part(1) : Tensor::zeros_like(re);
  const int64_t bins = onesided ? length / 2 + 1 : length;
  std::vector<double> cosines, sines;  // (length, bins): input j to output k
  for (int64_t j = 0; j < length; ++j)
    for (int64_t k = 0; k < bins; ++k) {
      const double theta = 2 * M_PI * static_cast<double>((j * k) % length) / static_cast<double>(length);
      cosines.push_back(std::cos(theta)), sines.push_back(std::sin(theta));
    }
  const Tensor cs = Tensor::from_vector(cosines, {length, bins}).cast(acc), sn = Tensor::from_vector(sines, {length, bins}).cast(acc);
  // forward (re + i im)(cos - i sin); inverse (re + i im)(cos + i sin) / length
  const double sign = inverse ? 1.0 : -1.0;
  Tensor out_re = re.matmul(cs) - im.matmul(sn) * sign, out_im = im.matmul(cs) + re.matmul(sn) * sign;
  if (inverse) out_re = out_re / static_cast<double>(length), out_im = out_im / static_cast<double>(length);
  return Tensor::stack({out_re.transpose(ax, last), out_im.transpose(ax, last)}, -1).cast(x.dtype());
}

// DFT: the axis from input 2 (opset 20, default -2) or the attribute (default 1), the length
// from input 1 (default the axis' size)
inline Tensor dft(const OpCall& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = c.opset >= 20 ? (c.has(2) ? c.host_ints(2).at(0) : -2) : c.int_attr("axis", 1);
  const auto rank = static_cast<int64_t>(x.ndim());
  const int64_t given = x.shape().to_vector().at(static_cast<size_t>(axis < 0 ? axis + rank : axis));
  const bool inverse = c.int_attr("inverse", 0) != 0, onesided = c.int_attr("onesided", 0) != 0;
  const int64_t length = c.has(1) && c.in(1).numel() ? c.host_ints(1).at(0) : inverse && onesided ? 2 * (given - 1) : given;
  return dft_along(x, axis, length, inverse, onesided, "DFT node '" + c.node.name + "'");
}

// STFT: frames of frame_length (input 3, else the window's length) every frame_step (input 1)
// along the signal (batch, length, 1 or 2), each times the window (input 2), transformed:
// (batch, frames, bins, 2), one-sided by default
inline Tensor stft(const OpCall& c) {
  const Tensor& x = c.in(0);
  const int64_t step = c.host_ints(1).at(0);
  const int64_t frame = c.has(3) ? c.host_ints(3).at(0) : c.in(2).numel();
  const int64_t n = x.shape().to_vector().at(1);
  const int64_t frames = (n - frame) / step + 1;
  std::vector<Tensor> parts;
  for (int64_t f = 0; f < frames; ++f) parts.push_back(cut(x, 1, f * step, f * step + frame));
  Tensor framed = Tensor::stack(parts, 1);  // (batch, frames, frame, 1 or 2)
  if (c.has(2)) framed = framed * c.in(2).cast(x.dtype()).reshape({1, 1, frame, 1});
  return dft_along(framed, 2, frame, false, c.int_attr("onesided", 1) != 0, "STFT node '" + c.node.name + "'");
}

}  // namespace detail
}  // namespace onnx
}  // namespace tinyt::inline v0
