// Reductions: sum, prod, max over axes with REDUCE_AXIS; min, mean, any, all built on them.
#pragma once

#include "../expr.hpp"
#include "elementwise.hpp"

namespace tinyt::inline v0 {

namespace detail {
// The dtype a sum or product accumulates in. Where tinygrad (small ints in the default int,
// unsigned in uint32) and PyTorch differ, this follows PyTorch: bool and every integer dtype add
// up in int64 and the result stays int64, so an int32 sum of two 2^30s does not wrap; uint64 stays
// uint64 (PyTorch returns the same bits as int64, where sums past 2^63 read as negative).
// float16 and bfloat16 add up in float32 and the result is rounded once, back to their dtype.
// On a device without 64-bit types (WEBGPU) integers add up in int32, as in tinygrad.
inline DType sum_acc_dtype(DType dt, const std::string& device) {
  if (dt == dtypes::uint64) return dt;
  if (dt.is_int() || dt.is_bool()) return Device::widest_int(device);
  return least_upper_dtype({dt, dtypes::float32});
}
// The dtype a dot product (matmul, conv) multiplies and adds up in, for a result of dtype `out`:
// float16 and bfloat16 in float32, rounded once at the end, as PyTorch's CPU kernels (a product
// of two of them is exact in float32; rounding each would lose what their sum keeps).
inline DType dot_dtype(DType out) { return out == dtypes::float16 || out == dtypes::bfloat16 ? dtypes::float32 : out; }
// The dtype a sum or product returns: a float keeps its own, an integer is its accumulator's.
inline DType sum_out_dtype(DType dt, const std::string& device) { return dt.is_float() ? dt : sum_acc_dtype(dt, device); }

// The dtype the float statistics (mean, var, softmax, logsumexp, layernorm) compute in, as
// PyTorch's CPU kernels: float32 for float16, bfloat16 and integers, float64 for float64. Their
// result is then rounded once to least_upper_float of the input.
inline DType stats_acc_dtype(DType dt) { return least_upper_dtype({least_upper_float(dt), dtypes::float32}); }
// max and min have no identity: reducing a dim of size 0 is an error, as in PyTorch (other
// dims may be 0: the result is then empty)
inline void check_nonempty_reduce(const Tensor& t, const std::vector<int>& axes, const char* op) {
  const Shape s = t.shape();
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
// second reduces the parts. Off with SPLIT_REDUCEOP=0. Chunks hold at least 16: a conv's weight
// gradient over a batch of 512 runs as 32 parts of 16 samples, so a part's output gradient is
// small enough for its kernel to copy (PACK) into a vector-friendly panel (CNN conv 2: 89 -> 32 ms).
inline UOp split_reduce(const Tensor& x, Ops op, const std::vector<int64_t>& axes) {
  if (!graph::shape_of(x.uop()).is_concrete()) return graph::reduce(x.uop(), op, axes);  // nothing to split by
  const std::vector<int64_t> s = graph::concrete_shape(x.uop());
  int64_t in = 1, reduced = 1;
  for (int64_t d : s) in *= d;
  for (int64_t a : axes) reduced *= s[static_cast<size_t>(a)];
  if (reduced < 32768 || in == 0 || !getenv_int("SPLIT_REDUCEOP", 1)) return graph::reduce(x.uop(), op, axes);
  const int64_t a = *std::max_element(axes.begin(), axes.end(), [&](int64_t p, int64_t q) { return s[size_t(p)] < s[size_t(q)]; });
  int64_t parts = 0;
  for (int64_t d = 256; d >= 8 && !parts; d /= 2)
    if (s[size_t(a)] % d == 0 && s[size_t(a)] / d >= 16) parts = d;
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

// `op` over `axes` of x (`name` in errors); split in two where split_reduce would, if `split`.
inline Tensor reduce_over(const Tensor& x, Ops op, const std::vector<int>& axes, bool keepdim, const char* name, bool split) {
  const Shape s = x.shape();
  std::vector<int64_t> ax;
  for (int a : axes) {
    const int64_t n = normalize_axis(a, s.size(), name);
    if (std::find(ax.begin(), ax.end(), n) != ax.end()) throw IndexError(cat(name, ": axis ", a, " repeats among the axes for shape ", s));
    if (!s.empty()) ax.push_back(n);
  }
  std::sort(ax.begin(), ax.end());
  Tensor r(split ? split_reduce(x, op, ax) : graph::reduce(x.uop(), op, ax));
  if (keepdim) return r;
  std::vector<sint> out;
  for (size_t i = 0; i < s.size(); ++i)
    if (std::find(ax.begin(), ax.end(), static_cast<int64_t>(i)) == ax.end()) out.push_back(s[i]);
  return r.reshape(Shape(out));
}

/// The sum over `axes` of a one-hot selection (`where(position == index, x, 0)`: one term is
/// non-zero, so the sum is exact) in x's dtype, never split in two: the scheduler's reduce
/// collapse makes the whole sum one load of x at the index, where split into parts only each
/// part's sum collapses and every part still runs (SmolLM's embedding, a selection of one of
/// 49152 rows, read its whole table at every token).
inline Tensor selected_sum(const Tensor& picked, const std::vector<int>& axes) {
  const Tensor summed = reduce_over(picked.cast(sum_acc_dtype(picked.dtype(), picked.device())), Ops::ADD, axes, false, "sum", false);
  return summed.cast(picked.dtype());
}
}  // namespace detail

TINYT_INLINE Tensor Tensor::reduce(Ops op, std::vector<int> axes, bool keepdim, const char* name) const {
  return detail::reduce_over(*this, op, axes, keepdim, name, true);
}

TINYT_INLINE Tensor Tensor::sum(std::vector<int> axes, bool keepdim) const {
  return cast(detail::sum_acc_dtype(dtype(), device())).reduce(Ops::ADD, std::move(axes), keepdim, "sum").cast(detail::sum_out_dtype(dtype(), device()));
}
TINYT_INLINE Tensor Tensor::sum(int axis, bool keepdim) const { return sum(std::vector<int>{axis}, keepdim); }
TINYT_INLINE Tensor Tensor::sum() const { return sum(detail::all_axes(ndim()), false); }

// As PyTorch: integers multiply in int64, floats in their own dtype (PyTorch's CPU prod of
// float16 rounds every step: 300 * 300 * 2^-10 is inf there, not 87.875).
TINYT_INLINE Tensor Tensor::prod(std::vector<int> axes, bool keepdim) const {
  return cast(detail::sum_out_dtype(dtype(), device())).reduce(Ops::MUL, std::move(axes), keepdim, "prod");
}
TINYT_INLINE Tensor Tensor::prod(int axis, bool keepdim) const { return prod(std::vector<int>{axis}, keepdim); }
TINYT_INLINE Tensor Tensor::prod() const { return prod(detail::all_axes(ndim()), false); }

TINYT_INLINE Tensor Tensor::max(std::vector<int> axes, bool keepdim) const {
  detail::check_nonempty_reduce(*this, axes, "max");
  return reduce(Ops::MAX, std::move(axes), keepdim, "max");
}
TINYT_INLINE Tensor Tensor::max(int axis, bool keepdim) const { return max(std::vector<int>{axis}, keepdim); }
TINYT_INLINE Tensor Tensor::max() const { return max(detail::all_axes(ndim()), false); }

TINYT_INLINE Tensor Tensor::min(std::vector<int> axes, bool keepdim) const {
  detail::check_nonempty_reduce(*this, axes, "min");
  if (dtype().is_float()) return neg().reduce(Ops::MAX, std::move(axes), keepdim, "min").neg();
  return bitwise_not().reduce(Ops::MAX, std::move(axes), keepdim, "min").bitwise_not();
}
TINYT_INLINE Tensor Tensor::min(int axis, bool keepdim) const { return min(std::vector<int>{axis}, keepdim); }
TINYT_INLINE Tensor Tensor::min() const { return min(detail::all_axes(ndim()), false); }

TINYT_INLINE Tensor Tensor::mean(std::vector<int> axes, bool keepdim) const {
  const Shape s = shape();
  sint n = 1;
  for (int a : axes) n = n * (s.empty() ? sint(1) : s[static_cast<size_t>(normalize_axis(a, s.size(), "mean"))]);
  // summed and divided in float32 for float16 (three 40000s have a float16 mean, not their sum)
  const DType acc = detail::stats_acc_dtype(dtype());
  Tensor total = cast(acc).reduce(Ops::ADD, std::move(axes), keepdim, "mean");
  // a symbolic count is a value the kernel computes from its variables (+ 0 on this device: a
  // size belongs to no device)
  const UOp on_device = graph::const_(acc, n.is_int() ? static_cast<double>(n.as_int()) : 0.0, device());
  const Tensor count(n.is_int() ? on_device : UOp(Ops::ADD, acc, {n.as_uop().cast(acc), on_device}));
  // an empty mean is NaN, as 0/0
  return total.div(count).cast(least_upper_float(dtype()));
}
TINYT_INLINE Tensor Tensor::mean(int axis, bool keepdim) const { return mean(std::vector<int>{axis}, keepdim); }
TINYT_INLINE Tensor Tensor::mean() const { return mean(detail::all_axes(ndim()), false); }

TINYT_INLINE Tensor Tensor::any(int axis, bool keepdim) const { return cast(dtypes::bool_).reduce(Ops::MAX, {axis}, keepdim, "any"); }
TINYT_INLINE Tensor Tensor::any() const { return cast(dtypes::bool_).reduce(Ops::MAX, detail::all_axes(ndim()), false, "any"); }
TINYT_INLINE Tensor Tensor::all(int axis, bool keepdim) const { return logical_not().any(axis, keepdim).logical_not(); }
TINYT_INLINE Tensor Tensor::all() const { return logical_not().any().logical_not(); }

namespace detail {
/// Running sums (op ADD) or products (MUL) along the last axis of x (rows, n), in x's own dtype:
/// a sliding window of x padded with n-1 identities in front, taken as a view (no copy) and
/// reduced, so it is one kernel.
inline Tensor running_reduce(const Tensor& x, Ops op) {
  const Shape& s = graph::shape_of(x.uop());
  const sint rows = s[0], n = s[1], L = n * 2 - 1;
  if (n.vmax() <= 1) return x;
  // W[i][k] = xp[i + k] for xp = x padded in front by n-1: repeat xp n times, flatten, pad each
  // row by one element, and row i starts i further in
  Tensor xp = x.pad({{0, 0}, {n - 1, 0}}, op == Ops::MUL ? 1.0 : 0.0);
  Tensor w = xp.unsqueeze(1).expand({rows, n, L}).reshape({rows, n * L}).pad({{0, 0}, {0, n}}).reshape({rows, n, L + 1}).shrink({{0, rows}, {0, n}, {0, n}});
  return Tensor(split_reduce(w, op, {2})).reshape({rows, n});
}

/// 0, 1, ..., n-1 of `dt` computed on `device` (the first of a list, then copied to the others),
/// as arange counts them: positions an index is compared with, made where the index is (an arange
/// of the default device would be a kernel there and a copy at each use, each embedding lookup).
inline Tensor positions_on(int64_t n, DType dt, const std::string& device) {
  const std::string first = device.substr(0, device.find(','));
  return running_reduce(Tensor::full(Shape{1, n}, 1, dt, first), Ops::ADD).reshape({n}).add(Tensor(graph::const_(dt, -1, first))).to(device);
}

/// `t`'s running reduction along `axis` (cumsum, cumprod), in the dtypes sum and prod use.
inline Tensor running_along(const Tensor& t, int axis, Ops op, const char* name) {
  if (t.ndim() == 0) return t.cast(sum_out_dtype(t.dtype(), t.device()));
  const int ax = normalize_axis(axis, t.ndim(), name);
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(t.ndim()); ++i)
    if (i != ax) order.push_back(i);
  order.push_back(ax);
  Tensor x = t.permute(order);
  const std::vector<int64_t> s = x.shape().to_vector();
  const int64_t n = s.back(), rows = t.numel() / std::max<int64_t>(n, 1);
  Tensor acc = x.reshape({rows, n}).cast(sum_acc_dtype(t.dtype(), t.device()));
  Tensor done = running_reduce(acc, op).cast(sum_out_dtype(t.dtype(), t.device())).reshape(Shape(s));
  std::vector<int> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[static_cast<size_t>(order[i])] = static_cast<int>(i);
  return done.permute(inverse);
}
}  // namespace detail

/// Running sums along an axis, accumulated and returned in the dtypes sum uses.
TINYT_INLINE Tensor Tensor::cumsum(int axis) const { return detail::running_along(*this, axis, Ops::ADD, "cumsum"); }
/// Running products along an axis, in the dtypes prod uses.
TINYT_INLINE Tensor Tensor::cumprod(int axis) const { return detail::running_along(*this, axis, Ops::MUL, "cumprod"); }

}  // namespace tinyt::inline v0
