// interpolate: resizing by nearest, linear or cubic interpolation, one dim at a time. Each
// resized dim's map from input to output positions is a matrix worked out on the host (the
// sizes are known), applied as a matmul along that dim; a nearest upscale by a whole factor is
// a view (each element repeated), not a matmul.
#pragma once

#include "nn.hpp"

namespace tinyt::inline v0 {

namespace detail {
// Where output position `o` of `out` reads from among `in` inputs, as a coordinate of the input
TINYT_INLINE double source_coordinate(const Interpolation& how, int64_t o, int64_t in, int64_t out, double scale,
                                      std::pair<double, double> crop) {
  const double x = static_cast<double>(o), fin = static_cast<double>(in), fout = scale * fin;
  const std::string& m = how.coordinates;
  if (m == "align_corners") return fout == 1 ? 0.0 : x * (fin - 1) / (fout - 1);
  if (m == "asymmetric") return x / scale;
  if (m == "pytorch_half_pixel") return fout == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  if (m == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (m == "half_pixel_symmetric") {
    const double offset = fin / 2 * (1 - static_cast<double>(out) / fout);
    return offset + (x + 0.5) / scale - 0.5;
  }
  if (m == "tf_crop_and_resize")
    return (fout == 1 ? (crop.second - crop.first) * (fin - 1) / 2 : x * (crop.second - crop.first) * (fin - 1) / (fout - 1)) + crop.first * (fin - 1);
  throw ShapeError(cat("interpolate: coordinates '", m, "': they are align_corners, asymmetric, half_pixel, pytorch_half_pixel, ",
                       "half_pixel_symmetric and tf_crop_and_resize"));
}

// The weights of the taps around a coordinate whose fraction past its left neighbour is `ratio`
// (1 when it is on an input position)
TINYT_INLINE std::vector<double> tap_weights(const Interpolation& how, double ratio, double scale) {
  const double a = how.cubic_a;
  auto cubic = [a](double x) {
    x = std::abs(x);
    if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0.0;
  };
  if (how.mode == "nearest") {
    if (ratio == 1.0) return {0, 1};
    const std::string& r = how.nearest;
    if (r == "round_prefer_floor") return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    if (r == "round_prefer_ceil") return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (r == "floor") return {1, 0};
    if (r == "ceil") return {0, 1};
    throw ShapeError(cat("interpolate: nearest rounding '", r, "': it is round_prefer_floor, round_prefer_ceil, floor or ceil"));
  }
  if (how.mode != "linear" && how.mode != "cubic")
    throw ShapeError(cat("interpolate: mode '", how.mode, "': the modes are nearest, linear and cubic"));
  const bool linear = how.mode == "linear";
  if (!how.antialias || scale >= 1) {
    if (linear) return {1 - ratio, ratio};
    return {cubic(ratio + 1), cubic(ratio), cubic(1 - ratio), cubic(2 - ratio)};
  }
  // antialiased downscaling: the filter stretched by 1 / scale, its taps normalized
  const double reach = linear ? 1.0 : 2.0;
  const auto first = static_cast<int64_t>(std::floor(-reach / scale) + 1);
  std::vector<double> w;
  double total = 0;
  for (int64_t i = first; i < 2 - first; ++i) {
    const double x = (static_cast<double>(i) - ratio) * scale;
    w.push_back(linear ? std::clamp(1 - std::abs(x), 0.0, 1.0) : cubic(x));
    total += w.back();
  }
  for (double& v : w) v /= total;
  return w;
}

// The (out, in) matrix of one dim's interpolation; `outside` marks the outputs that read from
// outside a crop (tf_crop_and_resize), which take the extrapolation value
TINYT_INLINE std::vector<double> interpolation_matrix(const Interpolation& how, int64_t in, int64_t out, double scale,
                                                      std::pair<double, double> crop, std::vector<bool>& outside) {
  std::vector<double> m(static_cast<size_t>(out * in), 0.0);
  outside.assign(static_cast<size_t>(out), false);
  for (int64_t o = 0; o < out; ++o) {
    const double x = source_coordinate(how, o, in, out, scale, crop);
    if (how.coordinates == "tf_crop_and_resize" && (x < 0 || x > static_cast<double>(in - 1))) {
      outside[static_cast<size_t>(o)] = true;
      continue;
    }
    const double left = std::floor(x);
    std::vector<double> w = tap_weights(how, x == left ? 1.0 : x - left, scale);
    // the n taps nearest x (ties to the smaller index), as positions of the input padded by its
    // edge values: a tap outside reads the edge
    const auto n = static_cast<int64_t>(w.size()), pad = (n + 1) / 2;
    const double padded = x + static_cast<double>(pad), p = std::floor(padded), frac = padded - p;
    const int64_t start = static_cast<int64_t>(p) +
                          (n % 2 == 0 ? (frac == 0 ? -(n / 2) : -(n / 2) + 1) : (frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1)) - pad;
    if (how.exclude_outside) {
      double total = 0;
      for (int64_t t = 0; t < n; ++t) {
        if (start + t < 0 || start + t >= in) w[static_cast<size_t>(t)] = 0;
        total += w[static_cast<size_t>(t)];
      }
      if (total != 0)
        for (double& v : w) v /= total;
    }
    for (int64_t t = 0; t < n; ++t) m[static_cast<size_t>(o * in + std::clamp<int64_t>(start + t, 0, in - 1))] += w[static_cast<size_t>(t)];
  }
  return m;
}

// When every output o reads exactly input o / k (k = out / in, whole): the repeat factor, else 0
TINYT_INLINE int64_t whole_repeat(const std::vector<double>& m, int64_t in, int64_t out) {
  if (in == 0 || out % in != 0) return 0;
  const int64_t k = out / in;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i)
      if (m[static_cast<size_t>(o * in + i)] != (i == o / k ? 1.0 : 0.0)) return 0;
  return k;
}
}  // namespace detail

TINYT_INLINE Tensor Tensor::interpolate(Shape size, std::string_view mode, bool align_corners) const {
  Interpolation how;
  if (mode == "nearest") {
    how.mode = "nearest", how.coordinates = "asymmetric", how.nearest = "floor";
  } else if (mode == "nearest-exact") {
    how.mode = "nearest", how.coordinates = "half_pixel", how.nearest = "round_prefer_ceil";
  } else if (mode == "linear" || mode == "cubic") {
    how.mode = std::string(mode), how.coordinates = align_corners ? "align_corners" : "half_pixel";
  } else {
    throw ShapeError(detail::cat("interpolate: mode '", mode, "': the modes are nearest, nearest-exact, linear and cubic"));
  }
  return interpolate(std::move(size), how);
}

TINYT_INLINE Tensor Tensor::interpolate(Shape size, const Interpolation& how) const {
  using detail::cat;
  const std::vector<int64_t> s = cshape(), out = size.to_vector();
  if (out.size() > s.size())
    throw ShapeError(cat("interpolate: a size of ", out.size(), " dims ", size, " for shape ", shape()));
  const size_t first = s.size() - out.size();
  if (!how.scales.empty() && how.scales.size() != out.size())
    throw ShapeError(cat("interpolate: ", how.scales.size(), " scales for the ", out.size(), " dims of size ", size));
  if (!how.crop.empty() && how.crop.size() != out.size())
    throw ShapeError(cat("interpolate: ", how.crop.size(), " crops for the ", out.size(), " dims of size ", size));
  const DType acc = dtype() == dtypes::float64 ? dtypes::float64 : dtypes::float32;
  Tensor y = *this;
  for (size_t j = 0; j < out.size(); ++j) {
    const size_t axis = first + j;
    const int64_t in = s[axis], o = out[j];
    if (o < 0 || (in == 0 && o > 0)) throw ShapeError(cat("interpolate: dim ", axis, " of ", shape(), " cannot become ", o));
    const double scale = how.scales.empty() ? (in ? static_cast<double>(o) / static_cast<double>(in) : 1.0) : how.scales[j];
    if (!(scale > 0)) throw ShapeError(cat("interpolate: scale ", scale, " for dim ", axis, " of ", shape()));
    const std::pair<double, double> crop = how.crop.empty() ? std::pair{0.0, 1.0} : how.crop[j];
    if (o == in && scale == 1.0 && crop == std::pair{0.0, 1.0}) continue;
    std::vector<int64_t> to = y.cshape();
    to[axis] = o;
    if (o == 0 || in == 0) {
      y = Tensor::zeros(Shape(to), y.dtype(), y.device());
      continue;
    }
    std::vector<bool> outside;
    const std::vector<double> m = detail::interpolation_matrix(how, in, o, scale, crop, outside);
    if (const int64_t k = detail::whole_repeat(m, in, o)) {  // each element k times: a view
      std::vector<int64_t> split = y.cshape(), wide;
      split.insert(split.begin() + static_cast<std::ptrdiff_t>(axis) + 1, 1);
      wide = split;
      wide[axis + 1] = k;
      y = y.reshape(Shape(split)).expand(Shape(wide)).reshape(Shape(to));
      continue;
    }
    // the dim moved last, times the matrix's transpose (in, out), moved back
    std::vector<int> order;
    for (size_t a = 0; a < s.size(); ++a)
      if (a != axis) order.push_back(static_cast<int>(a));
    order.push_back(static_cast<int>(axis));
    std::vector<int> back(order.size());
    for (size_t a = 0; a < order.size(); ++a) back[static_cast<size_t>(order[a])] = static_cast<int>(a);
    const Tensor weights = Tensor::from_vector(m, {o, in}).cast(acc).transpose().to(y.device());
    Tensor moved = y.cast(acc).permute(order).matmul(weights);  // (the first matmul casts; later dims are in acc)
    if (std::find(outside.begin(), outside.end(), true) != outside.end()) {
      std::vector<uint8_t> mask(outside.begin(), outside.end());
      moved = Tensor::from_vector(mask, {o}).cast(dtypes::bool_).to(y.device()).where(Tensor::full(Shape{}, how.extrapolation_value, acc), moved);
    }
    y = moved.permute(back);
  }
  if (y.dtype() == dtype()) return y;
  return (dtype().is_float() ? y : y.round()).cast(dtype());  // (integers: to the nearest)
}

}  // namespace tinyt::inline v0
