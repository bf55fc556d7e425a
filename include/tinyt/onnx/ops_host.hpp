// The ONNX ops whose output's shape depends on the input's values (NonZero, Compress, Unique):
// they read those values on the host (host-synchronizing: the graph before them runs first),
// then gather from the input lazily, so the values themselves never round-trip.
#pragma once

#include "ops_sample.hpp"

namespace tinyt::inline v0 {
namespace onnx {
namespace detail {

// x's slices at `picks` along `axis`, gathered lazily
inline Tensor take(const Tensor& x, int64_t axis, const std::vector<int64_t>& picks) {
  std::vector<int64_t> shape = x.shape().to_vector(), index_shape(shape.size(), 1);
  const auto a = static_cast<size_t>(axis);
  shape[a] = index_shape[a] = static_cast<int64_t>(picks.size());
  if (picks.empty()) return Tensor::zeros(Shape(shape), x.dtype());
  const Tensor at = Tensor::from_vector(picks, Shape(index_shape)).expand(Shape(shape));
  return x.gather(static_cast<int>(axis), at);
}

// NonZero: the indices of the elements that are not zero, one row per dim, in row-major order
inline Tensor non_zero(const OpCall& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> s = x.shape().to_vector();
  const std::vector<uint8_t> set = x.ne(Tensor::zeros_like(x)).cast(dtypes::uint8).reshape({-1}).to_vector<uint8_t>();
  std::vector<std::vector<int64_t>> rows(s.size());
  for (size_t flat = 0; flat < set.size(); ++flat) {
    if (!set[flat]) continue;
    auto rest = static_cast<int64_t>(flat);
    for (size_t d = s.size(); d-- > 0;) rows[d].push_back(rest % s[d]), rest /= s[d];
  }
  std::vector<int64_t> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  const auto count = static_cast<int64_t>(s.empty() ? 0 : rows[0].size());
  return Tensor::from_vector(out, {static_cast<int64_t>(s.size()), count});
}

// Compress: the slices along `axis` (none: of the flattened input) where condition holds (a
// shorter condition leaves the rest out)
inline Tensor compress(const OpCall& c) {
  const Attribute* axis_attr = c.attribute("axis");
  const Tensor x = axis_attr ? c.in(0) : c.in(0).reshape({-1});
  const int64_t axis = axis_attr ? c.axis(0) : 0;
  const std::vector<uint8_t> keep = c.in(1).cast(dtypes::uint8).reshape({-1}).to_vector<uint8_t>();
  const int64_t n = x.shape().to_vector().at(static_cast<size_t>(axis));
  std::vector<int64_t> picks;
  for (int64_t i = 0; i < n && i < static_cast<int64_t>(keep.size()); ++i)
    if (keep[static_cast<size_t>(i)]) picks.push_back(i);
  return take(x, axis, picks);
}

// Unique: the distinct elements (or slices along `axis`), sorted (default) or in the order they
// first occur; the first index of each, each input's place among them, and their counts
inline std::vector<Tensor> unique(const OpCall& c) {
  const Attribute* axis_attr = c.attribute("axis");
  const Tensor x = axis_attr ? c.in(0) : c.in(0).reshape({-1});
  const int64_t axis = axis_attr ? c.axis(0) : 0;
  // the slices as rows of doubles (or int64 for integers: exact), compared lexicographically
  const Tensor moved = x.transpose(0, static_cast<int>(axis));
  const int64_t n = moved.shape().to_vector().at(0), width = n ? moved.numel() / n : 0;
  const bool ints = !x.dtype().is_float();
  const std::vector<double> fv = ints ? std::vector<double>{} : moved.cast(dtypes::float64).reshape({-1}).to_vector<double>();
  const std::vector<int64_t> iv = ints ? moved.cast(dtypes::int64).reshape({-1}).to_vector<int64_t>() : std::vector<int64_t>{};
  auto compare = [&](int64_t a, int64_t b) {  // -1, 0, 1
    for (int64_t k = 0; k < width; ++k) {
      const auto i = static_cast<size_t>(a * width + k), j = static_cast<size_t>(b * width + k);
      if (ints ? iv[i] != iv[j] : fv[i] != fv[j]) return (ints ? iv[i] < iv[j] : fv[i] < fv[j]) ? -1 : 1;
    }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
  // groups of equal slices in sorted order: each group's first index and count
  std::vector<int64_t> first, counts, group_of(static_cast<size_t>(n));
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || compare(order[i - 1], order[i]) != 0) first.push_back(order[i]), counts.push_back(0);
    ++counts.back();
    group_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(first.size()) - 1;
  }
  std::vector<int64_t> rank(first.size());  // a group's place in the output
  std::iota(rank.begin(), rank.end(), 0);
  if (!c.int_attr("sorted", 1)) {  // in the order of first occurrence
    std::vector<int64_t> by_first(first.size());
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)]; });
    std::vector<int64_t> f2, c2;
    for (size_t r = 0; r < by_first.size(); ++r) {
      const auto g = static_cast<size_t>(by_first[r]);
      rank[g] = static_cast<int64_t>(r), f2.push_back(first[g]), c2.push_back(counts[g]);
    }
    first = f2, counts = c2;
  }
  std::vector<int64_t> inverse;
  for (const int64_t g : group_of) inverse.push_back(rank[static_cast<size_t>(g)]);
  auto vec = [](const std::vector<int64_t>& v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}); };
  return {take(x, axis, first), vec(first), vec(inverse), vec(counts)};
}

}  // namespace detail
}  // namespace onnx
}  // namespace tinyt::inline v0
