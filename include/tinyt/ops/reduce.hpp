// Reductions: sum, prod, max over axes with REDUCE_AXIS; min, mean, any, all built on them.
#pragma once

#include "../expr.hpp"
#include "elementwise.hpp"

namespace tinyt::inline v0 {

namespace detail {
// The dtype a sum accumulates in (tinygrad's): small ints widen to the default int, unsigned
// to uint32, half floats to float32.
inline DType sum_acc_dtype(DType dt) {
  if (dt.is_unsigned()) return least_upper_dtype({dt, dtypes::uint32});
  if (dt.is_int() || dt.is_bool()) return least_upper_dtype({dt, dtypes::default_int});
  return least_upper_dtype({dt, dtypes::float32});
}
// max and min have no identity: reducing a dim of size 0 is an error, as in PyTorch (other
// dims may be 0: the result is then empty)
inline void check_nonempty_reduce(const Tensor& t, const std::vector<int>& axes, const char* op) {
  const auto s = t.shape().to_vector();
  for (int a : axes)
    if (!s.empty() && s[static_cast<size_t>(normalize_axis(a, s.size(), op))] == 0)
      throw ShapeError(cat(op, ": cannot reduce dim ", a, " of size 0 in shape ", t.shape()));
}
inline std::vector<int> all_axes(size_t n) {
  std::vector<int> axes(n);
  for (size_t i = 0; i < n; ++i) axes[i] = static_cast<int>(i);
  return axes;
}

// A reduction of many elements into few runs as two (tinygrad's split_reduceop): the first
// reduces contiguous chunks of its largest axis into parts, which threads can share, and the
// second reduces the parts. Off with SPLIT_REDUCEOP=0.
inline UOp split_reduce(const Tensor& x, Ops op, const std::vector<int64_t>& axes) {
  const std::vector<int64_t> s = graph::concrete_shape(x.uop());
  int64_t in = 1, reduced = 1;
  for (int64_t d : s) in *= d;
  for (int64_t a : axes) reduced *= s[static_cast<size_t>(a)];
  if (reduced < 32768 || in == 0 || !getenv_int("SPLIT_REDUCEOP", 1)) return graph::reduce(x.uop(), op, axes);
  const int64_t a = *std::max_element(axes.begin(), axes.end(), [&](int64_t p, int64_t q) { return s[size_t(p)] < s[size_t(q)]; });
  int64_t parts = 0;
  for (int64_t d = 256; d >= 8 && !parts; d /= 2)
    if (s[size_t(a)] % d == 0 && s[size_t(a)] / d >= 256) parts = d;
  // a reduction that reads no memory (an arange) is counted, not looped: splitting would hide that
  const auto nodes = toposort(x.uop());
  const bool reads_memory = std::any_of(nodes.begin(), nodes.end(), [](const UOp& u) { return u.op() == Ops::BUFFER; });
  if (!parts || !reads_memory) return graph::reduce(x.uop(), op, axes);
  // axis a becomes (parts, chunk); the first reduction keeps the parts
  std::vector<int64_t> split_shape(s.begin(), s.begin() + a), first_axes;
  split_shape.insert(split_shape.end(), {parts, s[size_t(a)] / parts});
  split_shape.insert(split_shape.end(), s.begin() + a + 1, s.end());
  for (int64_t b : axes) first_axes.push_back(b < a ? b : b + 1);
  const Tensor chunks(graph::reduce(x.reshape(Shape(split_shape)).uop(), op, first_axes));
  std::vector<int64_t> out = s;
  for (int64_t b : axes) out[size_t(b)] = 1;
  return Tensor(graph::reduce(chunks.contiguous().uop(), op, {a})).reshape(Shape(out)).uop();
}
}  // namespace detail

inline Tensor Tensor::reduce(Ops op, std::vector<int> axes, bool keepdim, const char* name) const {
  const auto s = cshape();
  std::vector<int64_t> ax;
  for (int a : axes) {
    const int64_t n = normalize_axis(a, s.size(), name);
    if (std::find(ax.begin(), ax.end(), n) != ax.end()) throw IndexError(detail::cat(name, ": axis ", a, " repeats"));
    if (!s.empty()) ax.push_back(n);
  }
  std::sort(ax.begin(), ax.end());
  Tensor r(detail::split_reduce(*this, op, ax));
  if (keepdim) return r;
  std::vector<int64_t> out;
  for (size_t i = 0; i < s.size(); ++i)
    if (std::find(ax.begin(), ax.end(), static_cast<int64_t>(i)) == ax.end()) out.push_back(s[i]);
  return r.reshape(Shape(out));
}

inline Tensor Tensor::sum(std::vector<int> axes, bool keepdim) const {
  const DType acc = detail::sum_acc_dtype(dtype());
  Tensor r = cast(acc).reduce(Ops::ADD, std::move(axes), keepdim, "sum");
  return dtype() == dtypes::float16 || dtype() == dtypes::bfloat16 ? r.cast(dtype()) : r;
}
inline Tensor Tensor::sum(int axis, bool keepdim) const { return sum(std::vector<int>{axis}, keepdim); }
inline Tensor Tensor::sum() const { return sum(detail::all_axes(ndim()), false); }

inline Tensor Tensor::prod(std::vector<int> axes, bool keepdim) const {
  return cast(detail::sum_acc_dtype(dtype())).reduce(Ops::MUL, std::move(axes), keepdim, "prod");
}
inline Tensor Tensor::prod(int axis, bool keepdim) const { return prod(std::vector<int>{axis}, keepdim); }
inline Tensor Tensor::prod() const { return prod(detail::all_axes(ndim()), false); }

inline Tensor Tensor::max(std::vector<int> axes, bool keepdim) const {
  detail::check_nonempty_reduce(*this, axes, "max");
  return reduce(Ops::MAX, std::move(axes), keepdim, "max");
}
inline Tensor Tensor::max(int axis, bool keepdim) const { return max(std::vector<int>{axis}, keepdim); }
inline Tensor Tensor::max() const { return max(detail::all_axes(ndim()), false); }

inline Tensor Tensor::min(std::vector<int> axes, bool keepdim) const {
  detail::check_nonempty_reduce(*this, axes, "min");
  if (dtype().is_float()) return neg().reduce(Ops::MAX, std::move(axes), keepdim, "min").neg();
  return bitwise_not().reduce(Ops::MAX, std::move(axes), keepdim, "min").bitwise_not();
}
inline Tensor Tensor::min(int axis, bool keepdim) const { return min(std::vector<int>{axis}, keepdim); }
inline Tensor Tensor::min() const { return min(detail::all_axes(ndim()), false); }

inline Tensor Tensor::mean(std::vector<int> axes, bool keepdim) const {
  const auto s = cshape();
  int64_t n = 1;
  for (int a : axes) n *= s.empty() ? 1 : s[static_cast<size_t>(normalize_axis(a, s.size(), "mean"))];
  Tensor total = cast(least_upper_float(dtype())).sum(std::move(axes), keepdim);
  // an empty mean is NaN, as 0/0
  return total.div(Tensor(graph::const_(total.dtype(), static_cast<double>(n), device())));
}
inline Tensor Tensor::mean(int axis, bool keepdim) const { return mean(std::vector<int>{axis}, keepdim); }
inline Tensor Tensor::mean() const { return mean(detail::all_axes(ndim()), false); }

inline Tensor Tensor::any(int axis, bool keepdim) const { return cast(dtypes::bool_).reduce(Ops::MAX, {axis}, keepdim, "any"); }
inline Tensor Tensor::any() const { return cast(dtypes::bool_).reduce(Ops::MAX, detail::all_axes(ndim()), false, "any"); }
inline Tensor Tensor::all(int axis, bool keepdim) const { return logical_not().any(axis, keepdim).logical_not(); }
inline Tensor Tensor::all() const { return logical_not().any().logical_not(); }

/// Running sums along an axis: a sliding window of the input padded with n-1 zeros in front,
/// taken as a view (no copy) and summed, so it is one kernel.
inline Tensor Tensor::cumsum(int axis) const {
  if (ndim() == 0) return *this;
  const int ax = normalize_axis(axis, ndim(), "cumsum");
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(ndim()); ++i)
    if (i != ax) order.push_back(i);
  order.push_back(ax);
  Tensor x = permute(order);
  const auto s = x.cshape();
  const int64_t n = s.back(), rows = numel() / std::max<int64_t>(n, 1), L = 2 * n - 1;
  if (n <= 1) return *this;
  // W[i][k] = xp[i + k] for xp = x padded in front by n-1: repeat xp n times, flatten, pad each
  // row by one element, and row i starts i further in
  Tensor xp = x.reshape({rows, n}).pad({{0, 0}, {n - 1, 0}});
  Tensor w = xp.unsqueeze(1).expand({rows, n, L}).reshape({rows, n * L}).pad({{0, 0}, {0, n}}).reshape({rows, n, L + 1}).shrink({{0, rows}, {0, n}, {0, n}});
  std::vector<int64_t> out = s;
  Tensor summed = w.sum(2).reshape(Shape(out));
  std::vector<int> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[static_cast<size_t>(order[i])] = static_cast<int>(i);
  return summed.permute(inverse);
}

}  // namespace tinyt::inline v0
