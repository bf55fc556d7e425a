// Combining and splitting: cat, stack, split, chunk, repeat, and linspace. Each is a view or a
// sum of padded views, so it fuses into whatever consumes it.
#pragma once

#include "creation.hpp"

namespace tinyt::inline v0 {

namespace detail {
// The promoted dtype of several tensors, which must all be defined.
inline DType common_dtype(const std::vector<Tensor>& ts) {
  DType dt = ts[0].dtype();
  for (const Tensor& t : ts) dt = least_upper_dtype({dt, t.dtype()});
  return dt;
}
inline std::string shapes_str(const std::vector<Tensor>& ts) {
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + to_string(ts[i].shape());
  return s;
}
inline void check_tensors(const std::vector<Tensor>& ts, const char* op) {
  if (ts.empty()) throw Error(cat(op, ": needs at least one tensor"));
  for (size_t i = 0; i < ts.size(); ++i)
    if (!ts[i].defined()) throw Error(cat(op, ": tensor ", i, " is the empty Tensor() handle"));
  for (const Tensor& t : ts)
    if (t.device() != ts[0].device())
      throw DeviceError(cat(op, ": tensors are on ", ts[0].device(), " and ", t.device()));
}
}  // namespace detail

/// Joins tensors along `dim`: each is padded to the full length there, and each position selects
/// the piece whose range holds it (one kernel). A select rather than a sum of the padded pieces
/// keeps -0.0 and works for bools; the kernels are the same size.
TINYT_INLINE Tensor Tensor::cat(const std::vector<Tensor>& tensors, int dim) {
  detail::check_tensors(tensors, "cat");
  const Shape s0 = tensors[0].shape();
  if (s0.empty())
    throw ShapeError(
        "cat: zero-dimensional tensors cannot be concatenated (unsqueeze them or use stack)");
  const auto d = static_cast<size_t>(normalize_axis(dim, s0.size(), "cat"));
  sint total = 0;
  for (const Tensor& t : tensors) {
    const Shape s = t.shape();
    bool fits = s.size() == s0.size();
    for (size_t i = 0; fits && i < s.size(); ++i) fits = i == d || s[i] == s0[i];
    if (!fits)
      throw ShapeError(
          detail::cat("cat: shapes ", detail::shapes_str(tensors), " differ outside dim ", dim));
    total = total + s[d];
  }
  const DType dt = detail::common_dtype(tensors);
  if (tensors.size() == 1) return tensors[0].cast(dt);
  Tensor out;
  sint offset = 0;
  for (const Tensor& t : tensors) {
    const sint n = t.shape()[d];
    std::vector<std::pair<sint, sint>> p(s0.size(), {0, 0});
    p[d] = {offset, total - offset - n};
    offset = offset + n;
    Tensor piece = t.cast(dt).pad(p);
    Tensor mask = Tensor::full(t.shape(), true, dtypes::bool_, t.device()).pad(p);
    out = !out.defined() ? piece : mask.where(piece, out);
  }
  return out;
}

/// Joins equally shaped tensors along a new axis `dim`.
TINYT_INLINE Tensor Tensor::stack(const std::vector<Tensor>& tensors, int dim) {
  detail::check_tensors(tensors, "stack");
  for (const Tensor& t : tensors)
    if (!(t.shape() == tensors[0].shape()))
      throw ShapeError(detail::cat("stack: every tensor must have the same shape, got ",
                                   detail::shapes_str(tensors)));
  const int d = normalize_axis(dim, tensors[0].ndim() + 1, "stack");
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) parts.push_back(t.unsqueeze(d));
  return cat(parts, d);
}

/// Views of consecutive pieces of `dim` with the given lengths (which must add up to its size).
TINYT_INLINE std::vector<Tensor> Tensor::split(std::vector<int64_t> sizes, int dim) const {
  const auto s = cshape();
  if (s.empty()) throw ShapeError("split: a zero-dimensional tensor cannot be split");
  const auto d = static_cast<size_t>(normalize_axis(dim, s.size(), "split"));
  int64_t total = 0;
  for (int64_t n : sizes) {
    if (n < 0)
      throw ShapeError(detail::cat("split: negative size ", n, " in ", to_string(Shape(sizes))));
    total += n;
  }
  if (total != s[d])
    throw ShapeError(detail::cat("split: sizes ", to_string(Shape(sizes)), " add up to ", total,
                                 ", not to size ", s[d], " of dim ", dim, " in shape ",
                                 detail::shape_str(s)));
  std::vector<Tensor> out;
  int64_t offset = 0;
  for (int64_t n : sizes) {
    std::vector<std::pair<sint, sint>> b;
    for (int64_t x : s) b.emplace_back(0, x);
    b[d] = {offset, offset + n};
    offset += n;
    out.push_back(shrink(b));
  }
  return out;
}

/// Views of `size`-long pieces of `dim` (the last may be shorter), as PyTorch's split.
TINYT_INLINE std::vector<Tensor> Tensor::split(int64_t size, int dim) const {
  const auto s = cshape();
  if (s.empty()) throw ShapeError("split: a zero-dimensional tensor cannot be split");
  const int64_t n = s[static_cast<size_t>(normalize_axis(dim, s.size(), "split"))];
  if (size < 0 || (size == 0 && n != 0))
    throw ShapeError(detail::cat("split: piece size ", size, " must be positive (dim ", dim,
                                 " has size ", n, ")"));
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < n; at += size) sizes.push_back(std::min(size, n - at));
  if (sizes.empty()) sizes.push_back(0);  // an empty dim gives one empty piece
  return split(sizes, dim);
}

/// At most n pieces of `dim`, each ceil(size / n) long but the last (PyTorch's chunk).
TINYT_INLINE std::vector<Tensor> Tensor::chunk(int64_t n, int dim) const {
  if (n <= 0) throw Error(detail::cat("chunk: the number of chunks must be positive, got ", n));
  const auto s = cshape();
  if (s.empty()) throw ShapeError("chunk: a zero-dimensional tensor cannot be chunked");
  const int64_t size = s[static_cast<size_t>(normalize_axis(dim, s.size(), "chunk"))];
  if (size == 0)
    return split(std::vector<int64_t>(static_cast<size_t>(n), 0),
                 dim);  // n empty pieces, as PyTorch
  return split((size + n - 1) / n, dim);
}

/// Tiles the tensor `repeats[i]` times along each dim (PyTorch's Tensor.repeat); extra leading
/// repeats add dims. A view: an expand between two reshapes.
TINYT_INLINE Tensor Tensor::repeat(Shape repeats) const {
  const std::vector<int64_t> r = repeats.to_vector();
  auto s = cshape();
  if (r.size() < s.size())
    throw ShapeError(detail::cat("repeat: ", r.size(), " repeats for a tensor of shape ",
                                 detail::shape_str(s), "; need at least one per dim"));
  for (int64_t x : r)
    if (x < 0) throw ShapeError(detail::cat("repeat: negative count in ", repeats));
  s.insert(s.begin(), r.size() - s.size(), 1);
  std::vector<int64_t> unsqueezed, expanded, out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsqueezed.insert(unsqueezed.end(), {1, s[i]});
    expanded.insert(expanded.end(), {r[i], s[i]});
    out.push_back(r[i] * s[i]);
  }
  return reshape(Shape(unsqueezed)).expand(Shape(expanded)).reshape(Shape(out));
}

namespace detail {
// `t` padded by (before, after) along `axis` in `mode` (reflect, replicate or circular), as
// slices of itself joined on either side; a negative amount cuts instead.
inline Tensor pad_axis_from_edges(const Tensor& t, size_t axis, int64_t before, int64_t after, std::string_view mode) {
  const int64_t n = t.shape()[axis].as_int();
  auto part = [&](int64_t lo, int64_t hi) {
    std::vector<std::pair<sint, sint>> cut;
    for (const sint& d : t.shape()) cut.emplace_back(0, d);
    cut[axis] = {lo, hi};
    return t.shrink(cut);
  };
  auto fail = [&](const std::string& why) {
    return ShapeError(cat("pad: mode ", mode, " of (", before, ", ", after, ") along dim ", axis, " of shape ", t.shape(), ": ", why));
  };
  if (n == 0 && (before > 0 || after > 0)) throw fail("the dim is empty");
  const int64_t lo = std::max<int64_t>(0, -before), hi = n - std::max<int64_t>(0, -after);
  if (lo > hi) throw fail("it cuts more than the dim holds");
  Tensor middle = part(lo, hi);
  const int64_t b = std::max<int64_t>(0, before), a = std::max<int64_t>(0, after);
  if (b == 0 && a == 0) return middle;
  const int ax = static_cast<int>(axis);
  if (mode == "circular") {
    // whole copies of the dim on either side, then cut to size: any amount wraps around
    const int64_t left = (b + n - 1) / n, right = (a + n - 1) / n;
    std::vector<int64_t> reps(t.ndim(), 1);
    reps[axis] = left + 1 + right;
    std::vector<std::pair<sint, sint>> cut;
    for (const sint& d : t.shape()) cut.emplace_back(0, d);
    cut[axis] = {left * n - b + lo, left * n + hi + a};
    return t.repeat(Shape(reps)).shrink(cut);
  }
  std::vector<Tensor> parts;
  if (mode == "replicate") {
    auto edge = [&](int64_t at, int64_t count) {
      std::vector<int64_t> to = t.shape().to_vector();
      to[axis] = count;
      return part(at, at + 1).expand(Shape(to));
    };
    if (b) parts.push_back(edge(0, b));
    parts.push_back(middle);
    if (a) parts.push_back(edge(n - 1, a));
  } else if (mode == "reflect") {
    if (b >= n || a >= n) throw fail(cat("reflect needs less padding than the dim's size ", n));
    if (b) parts.push_back(part(1, b + 1).flip(ax));
    parts.push_back(middle);
    if (a) parts.push_back(part(n - 1 - a, n - 1).flip(ax));
  } else {
    throw fail("the modes are constant, reflect, replicate and circular");
  }
  return Tensor::cat(parts, ax);
}
}  // namespace detail

/// Padding whose values come from the tensor itself (PyTorch's F.pad modes): "reflect" mirrors
/// it without repeating the edge, "replicate" repeats the edge, "circular" wraps around;
/// "constant" fills with `value`. One (before, after) pair per dim, as pad; negative cuts.
TINYT_INLINE Tensor Tensor::pad(std::vector<std::pair<sint, sint>> padding, std::string_view mode, double value) const {
  if (mode == "constant") return pad(std::move(padding), value);
  if (padding.size() != ndim())
    throw ShapeError(detail::cat("pad: ", padding.size(), " (before, after) pairs for shape ", shape(), "; need one per dim"));
  Tensor t = *this;
  for (size_t axis = 0; axis < padding.size(); ++axis) {
    const auto& [before, after] = padding[axis];
    if (!before.is_int() || !after.is_int() || !shape()[axis].is_int())
      throw ShapeError(detail::cat("pad: mode ", mode, " needs concrete sizes, got shape ", shape()));
    if (before.as_int() != 0 || after.as_int() != 0) t = detail::pad_axis_from_edges(t, axis, before.as_int(), after.as_int(), mode);
  }
  return t;
}

/// `steps` evenly spaced values from start to stop (both included). As PyTorch, the first half
/// counts up from start and the second half down from stop, so both ends are exact.
TINYT_INLINE Tensor Tensor::linspace_values(double a, double b, int64_t steps, DType dtype) {
  if (steps < 0)
    throw Error(detail::cat("linspace: the number of steps must be non-negative, got ", steps));
  if (dtype.is_bool()) throw DTypeError("linspace: bool is not supported");
  if (steps == 1) return Tensor::full(Shape{1}, a, dtype);
  // float32 and smaller floats compute in float32 (as PyTorch computes in the output type),
  // integers in float64 (float32 on a device without it)
  const bool wide = Device::holds_wide_types(Device::default_device());
  const DType acc = dtype == dtypes::float64 || (!dtype.is_float() && wide) ? dtypes::float64 : dtypes::float32;
  const double step = steps > 1 ? (b - a) / static_cast<double>(steps - 1) : 0.0;
  Tensor i = Tensor::arange(steps).cast(acc);
  auto c = [&](double v) { return Tensor::full(Shape{}, v, acc); };
  Tensor up = i.mul(c(step)).add(c(a));
  Tensor down = c(b).sub(c(static_cast<double>(steps - 1)).sub(i).mul(c(step)));
  return i.lt(c(static_cast<double>(steps / 2))).where(up, down).cast(dtype);
}

}  // namespace tinyt::inline v0
