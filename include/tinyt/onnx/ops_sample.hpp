// The ONNX ops that sample an input at positions computed from data: GridSample (at a grid of
// coordinates, nearest, linear or cubic, with ONNX's padding modes) and AffineGrid (the grid of
// an affine map). The positions are tensors, so each tap is a gather whose indices the graph
// computes, not the host.
#pragma once

#include "ops_rnn.hpp"

namespace tinyt::inline v0 {
namespace onnx {
namespace detail {

// A coordinate reflected off x_lo and x_hi until it lies between them (as ONNX's reference:
// by whole ranges, then once more from the nearer side where the count is odd)
inline Tensor reflected(const Tensor& x, double x_lo, double x_hi) {
  const double range = x_hi - x_lo;
  auto fold = [&](const Tensor& past, double from, double sign_even) {  // past: the distance beyond `from`
    const Tensor n = (past / range).floor(), rest = past - n * range;
    const Tensor odd = (n - (n / 2.0).floor() * 2.0).ne(Tensor::zeros_like(n));
    const Tensor even_at = rest * sign_even + from, odd_at = rest * -sign_even + (from + sign_even * range);
    return odd.where(odd_at, even_at);
  };
  const Tensor lo = Tensor::full(Shape{}, x_lo, x.dtype()), hi = Tensor::full(Shape{}, x_hi, x.dtype());
  return x.lt(lo).where(fold(lo - x, x_lo, 1.0), x.gt(hi).where(fold(x - hi, x_hi, -1.0), x));
}

// GridSample: for each grid point (N, out..., r; coordinates in [-1, 1], the last dim's first),
// the input's (N, C, in...) value there, interpolated; padding_mode zeros, border or reflection
// says what lies outside
inline Tensor grid_sample(const OpCall& c) {
  using tinyt::detail::cat;
  const Tensor& x = c.in(0);
  const std::vector<int64_t> xs = x.shape().to_vector(), gs = c.in(1).shape().to_vector();
  const size_t dims = xs.size() - 2;
  if (xs.size() < 3 || gs.size() != xs.size() || gs.back() != static_cast<int64_t>(dims) || gs[0] != xs[0])
    throw ShapeError(cat("onnx: GridSample node '", c.node.name, "': input ", x.shape(), " and grid ", c.in(1).shape()));
  std::string mode = c.string_attr("mode", c.opset >= 20 ? "linear" : "bilinear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  const std::string padding = c.string_attr("padding_mode", "zeros");
  const bool corners = c.int_attr("align_corners", 0) != 0;
  const DType acc = x.dtype() == dtypes::float64 ? dtypes::float64 : dtypes::float32;
  const Tensor grid = c.in(1).cast(acc);
  const int64_t n = xs[0], channels = xs[1];
  int64_t points = 1;
  for (size_t i = 1; i + 1 < gs.size(); ++i) points *= gs[i];
  // per input dim: its coordinate at each grid point (N, points), and the taps: index and weight
  std::vector<std::vector<std::pair<Tensor, Tensor>>> taps(dims);
  for (size_t d = 0; d < dims; ++d) {
    const double size = static_cast<double>(xs[2 + d]);
    Tensor at = grid[{Ellipsis, static_cast<int64_t>(dims - 1 - d)}].reshape({n, points});
    at = corners ? Tensor((at + 1.0) / 2.0 * (size - 1)) : Tensor(((at + 1.0) * size - 1) / 2.0);
    if (mode == "nearest") at = at.round();
    const double lo = corners ? 0.0 : -0.5, hi = corners ? size - 1 : size - 0.5;
    const Tensor outside = at.lt(Tensor::full_like(at, lo)).logical_or(at.gt(Tensor::full_like(at, hi)));
    if (padding == "border") at = outside.where(at.maximum(Tensor::zeros_like(at)).minimum(Tensor::full_like(at, size - 1)), at);
    if (padding == "reflection") at = reflected(at, lo, hi);
    // a tap's index as the padding mode reads it, and whether it reads the input at all
    auto tap = [&](const Tensor& index, const Tensor& weight) {
      Tensor i = index;
      Tensor w = weight;
      if (padding == "zeros") w = (i.ge(Tensor::zeros_like(i)).logical_and(i.lt(Tensor::full_like(i, size)))).where(w, Tensor::zeros_like(w));
      if (padding == "reflection") i = reflected(i, lo, hi).trunc();
      i = i.maximum(Tensor::zeros_like(i)).minimum(Tensor::full_like(i, size - 1));
      taps[d].emplace_back(i.cast(dtypes::int64), w);
    };
    if (mode == "nearest") {
      tap(at, Tensor::ones_like(at));
      continue;
    }
    const Tensor left = at.floor(), t = at - left;
    if (mode == "linear") {
      tap(left, 1.0f - t), tap(left + 1.0, t);
    } else if (mode == "cubic") {
      const double a = -0.75;
      auto near = [a](const Tensor& s) { return ((s * (a + 2) - (a + 3)) * s * s + 1.0); };
      auto far = [a](const Tensor& s) { return ((s * a - 5 * a) * s + 8 * a) * s - 4 * a; };
      tap(left - 1.0, far(t + 1.0)), tap(left, near(t)), tap(left + 1.0, near(1.0f - t)), tap(left + 2.0, far(2.0f - t));
    } else {
      throw UnsupportedError(cat("onnx: GridSample node '", c.node.name, "': mode '", mode, "'"));
    }
  }
  // every combination of one tap per dim: the flat index into the input's plane, the weights' product
  const Tensor plane = x.cast(acc).reshape({n, channels, -1});
  Tensor y = Tensor::zeros({n, channels, points}, acc);
  std::vector<size_t> pick(dims, 0);
  while (true) {
    Tensor index = Tensor::zeros({n, points}, dtypes::int64), weight = Tensor::ones({n, points}, acc);
    for (size_t d = 0; d < dims; ++d) {
      index = index * xs[2 + d] + taps[d][pick[d]].first;
      weight = weight * taps[d][pick[d]].second;
    }
    y = y + plane.gather(2, index.unsqueeze(1).expand({n, channels, points})) * weight.unsqueeze(1);
    size_t d = dims;
    while (d > 0 && ++pick[d - 1] == taps[d - 1].size()) pick[--d] = 0;
    if (d == 0) break;
  }
  std::vector<int64_t> out{n, channels};
  out.insert(out.end(), gs.begin() + 1, gs.end() - 1);
  return y.reshape(Shape(out)).cast(x.dtype());
}

// AffineGrid: theta (N, r, r + 1) applied to the grid of size (N, C, sizes...)'s positions in
// [-1, 1] (pixel centres, or the corners with align_corners): (N, sizes..., r), x first
inline Tensor affine_grid(const OpCall& c) {
  const Tensor& theta = c.in(0);
  const std::vector<int64_t> size = c.host_ints(1);
  const size_t dims = size.size() - 2;
  const bool corners = c.int_attr("align_corners", 0) != 0;
  const DType dt = theta.dtype();
  int64_t points = 1;
  for (size_t d = 0; d < dims; ++d) points *= size[2 + d];
  // the homogeneous positions (points, r + 1): x (the last dim) first, then y (, z), then 1
  std::vector<Tensor> columns;
  for (size_t j = 0; j < dims; ++j) {
    const size_t d = dims - 1 - j;  // x is the last dim
    const auto steps = static_cast<double>(size[2 + d]);
    Tensor along = Tensor::arange(size[2 + d]).cast(dtypes::float64);
    along = corners ? (steps > 1 ? along * (2.0 / (steps - 1)) - 1.0 : Tensor(along * 0.0)) : (along * 2.0 + 1.0) / steps - 1.0;
    std::vector<int64_t> shape(dims, 1), full(size.begin() + 2, size.end());
    shape[d] = size[2 + d];
    columns.push_back(along.reshape(Shape(shape)).expand(Shape(full)).reshape({points}));
  }
  columns.push_back(Tensor::ones({points}, dtypes::float64));
  const Tensor base = Tensor::stack(columns, 1).cast(dt);  // (points, r + 1)
  std::vector<int64_t> out{size[0]};
  out.insert(out.end(), size.begin() + 2, size.end());
  out.push_back(static_cast<int64_t>(dims));
  return base.matmul(theta.transpose(-1, -2)).reshape(Shape(out));  // (N, points, r)
}

}  // namespace detail
}  // namespace onnx
}  // namespace tinyt::inline v0
