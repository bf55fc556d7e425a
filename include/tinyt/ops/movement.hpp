// Movement: views that never copy. Each checks its arguments against the shape and builds one
// of the six movement UOps (or none, when it would change nothing).
#pragma once

#include "../graph.hpp"
#include "../tensor_impl.hpp"

namespace tinyt::inline v0 {

namespace detail {
inline std::string shape_str(const std::vector<int64_t>& s) { return to_string(Shape(s)); }
}  // namespace detail

TINYT_INLINE std::vector<int64_t> Tensor::broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                                    const char* op) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      throw ShapeError(detail::cat(op, ": cannot broadcast ", detail::shape_str(a), " with ", detail::shape_str(b)));
    out[i] = x == 1 ? y : x;
  }
  return out;
}

/// `t` broadcast to `shape` (which it must broadcast to): a reshape adding leading 1s, an expand.
TINYT_INLINE Tensor broadcast_to(const Tensor& t, const std::vector<int64_t>& shape) {
  std::vector<int64_t> s = t.cshape();
  if (s == shape) return t;
  if (s.size() > shape.size())
    throw ShapeError(detail::cat("expand: cannot broadcast ", detail::shape_str(s), " to ", detail::shape_str(shape)));
  s.insert(s.begin(), shape.size() - s.size(), 1);
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != shape[i] && s[i] != 1)
      throw ShapeError(detail::cat("expand: cannot broadcast ", detail::shape_str(t.cshape()), " to ", detail::shape_str(shape)));
  return Tensor(graph::expand(graph::reshape(t.uop(), s), shape));
}

TINYT_INLINE Tensor Tensor::reshape(Shape shape) const {
  const std::vector<int64_t> old = cshape();
  std::vector<int64_t> s;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = shape[i].as_int();
    if (d == -1) {
      if (infer >= 0) throw ShapeError(detail::cat("reshape: more than one -1 in ", shape));
      infer = static_cast<int64_t>(i);
    } else if (d < 0) {
      throw ShapeError(detail::cat("reshape: negative size in ", shape));
    } else {
      known *= d;
    }
    s.push_back(d);
  }
  const int64_t n = numel();
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      throw ShapeError(detail::cat("reshape: cannot reshape ", detail::shape_str(old), " to ", shape));
    s[static_cast<size_t>(infer)] = n / known;
  } else if (known != n) {
    throw ShapeError(detail::cat("reshape: cannot reshape ", detail::shape_str(old), " (", n, " elements) to ", shape));
  }
  return Tensor(graph::reshape(uop(), s));
}

TINYT_INLINE Tensor Tensor::permute(std::vector<int> order) const {
  const std::vector<int64_t> s = cshape();
  if (order.size() != s.size())
    throw ShapeError(detail::cat("permute: ", order.size(), " axes for shape ", detail::shape_str(s)));
  std::vector<int64_t> perm;
  std::vector<bool> seen(s.size(), false);
  for (int a : order) {
    const int ax = normalize_axis(a, s.size(), "permute");
    if (seen[static_cast<size_t>(ax)]) throw ShapeError(detail::cat("permute: axis ", a, " repeats"));
    seen[static_cast<size_t>(ax)] = true;
    perm.push_back(ax);
  }
  return Tensor(graph::permute(uop(), perm));
}

TINYT_INLINE Tensor Tensor::expand(Shape shape) const {
  std::vector<int64_t> target;
  const std::vector<int64_t> s = cshape();
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i].as_int();
    // -1 keeps the size of the matching dim (aligned from the right)
    if (d == -1 && i + s.size() >= shape.size()) d = s[i + s.size() - shape.size()];
    target.push_back(d);
  }
  return broadcast_to(*this, target);
}

TINYT_INLINE Tensor Tensor::pad(std::vector<std::pair<sint, sint>> padding, double value) const {
  const std::vector<int64_t> s = cshape();
  if (padding.size() != s.size())
    throw ShapeError(detail::cat("pad: ", padding.size(), " (before, after) pairs for shape ", detail::shape_str(s)));
  std::vector<std::pair<int64_t, int64_t>> grow, cut;
  bool negative = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t b = padding[i].first.as_int(), a = padding[i].second.as_int();
    if (b + a + s[i] < 0) throw ShapeError(detail::cat("pad: padding (", b, ", ", a, ") removes more than dim ", i, " has"));
    negative |= b < 0 || a < 0;
    grow.emplace_back(std::max<int64_t>(b, 0), std::max<int64_t>(a, 0));
    cut.emplace_back(-std::min<int64_t>(b, 0), s[i] + std::min<int64_t>(a, 0));
  }
  // negative padding crops (as PyTorch's)
  Tensor x = negative ? Tensor(graph::shrink(uop(), cut)) : *this;
  Tensor padded(graph::pad(x.uop(), grow));
  if (value == 0.0) return padded;
  // pads fill with 0: a non-zero value is selected where a padded mask of ones is false
  Tensor mask(graph::pad(graph::expand(graph::reshape(graph::const_(dtypes::bool_, true, device()), std::vector<int64_t>(s.size(), 1)), x.cshape()), grow));
  return mask.where(padded, Tensor::full(Shape(padded.cshape()), value, dtype(), device()));
}

TINYT_INLINE Tensor Tensor::shrink(std::vector<std::pair<sint, sint>> bounds) const {
  const std::vector<int64_t> s = cshape();
  if (bounds.size() != s.size())
    throw ShapeError(detail::cat("shrink: ", bounds.size(), " (start, end) pairs for shape ", detail::shape_str(s)));
  std::vector<std::pair<int64_t, int64_t>> p;
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t b = bounds[i].first.as_int(), e = bounds[i].second.as_int();
    if (b < 0 || e < b || e > s[i])
      throw ShapeError(detail::cat("shrink: (", b, ", ", e, ") is outside dim ", i, " of shape ", detail::shape_str(s)));
    p.emplace_back(b, e);
  }
  return Tensor(graph::shrink(uop(), p));
}

TINYT_INLINE Tensor Tensor::flip(std::vector<int> axes) const {
  std::vector<bool> f(ndim(), false);
  for (int a : axes) {
    const auto ax = static_cast<size_t>(normalize_axis(a, ndim(), "flip"));
    if (f[ax]) throw ShapeError(detail::cat("flip: axis ", a, " repeats"));
    f[ax] = true;
  }
  return Tensor(graph::flip(uop(), f));
}

TINYT_INLINE Tensor Tensor::transpose(int d0, int d1) const {
  std::vector<int> order(ndim());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::swap(order[static_cast<size_t>(normalize_axis(d0, ndim(), "transpose"))],
            order[static_cast<size_t>(normalize_axis(d1, ndim(), "transpose"))]);
  return permute(order);
}

TINYT_INLINE Tensor Tensor::flatten(int start, int end) const {
  if (ndim() == 0) return reshape({1});
  const auto s = cshape();
  const auto a = static_cast<size_t>(normalize_axis(start, s.size(), "flatten"));
  const auto b = static_cast<size_t>(normalize_axis(end, s.size(), "flatten"));
  if (a > b) throw ShapeError(detail::cat("flatten: start ", start, " comes after end ", end));
  std::vector<int64_t> out(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(a));
  int64_t n = 1;
  for (size_t i = a; i <= b; ++i) n *= s[i];
  out.push_back(n);
  out.insert(out.end(), s.begin() + static_cast<std::ptrdiff_t>(b) + 1, s.end());
  return reshape(Shape(out));
}

TINYT_INLINE Tensor Tensor::unflatten(int dim, Shape sizes) const {
  auto s = cshape();
  const auto d = static_cast<size_t>(normalize_axis(dim, s.size(), "unflatten"));
  std::vector<sint> out(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(d));
  for (const sint& x : sizes) out.push_back(x);
  out.insert(out.end(), s.begin() + static_cast<std::ptrdiff_t>(d) + 1, s.end());
  return reshape(Shape(out));
}

TINYT_INLINE Tensor Tensor::squeeze(int dim) const {
  auto s = cshape();
  if (s.empty()) return *this;
  const auto d = static_cast<size_t>(normalize_axis(dim, s.size(), "squeeze"));
  if (s[d] != 1) return *this;
  s.erase(s.begin() + static_cast<std::ptrdiff_t>(d));
  return reshape(Shape(s));
}
TINYT_INLINE Tensor Tensor::squeeze() const {
  auto s = cshape();
  std::erase(s, 1);
  return reshape(Shape(s));
}
TINYT_INLINE Tensor Tensor::unsqueeze(int dim) const {
  auto s = cshape();
  const auto d = static_cast<size_t>(normalize_axis(dim, s.size() + 1, "unsqueeze"));
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(d), 1);
  return reshape(Shape(s));
}

TINYT_INLINE Tensor Tensor::to(const std::string& device) const {
  const std::string d = Device::canonicalize(device);
  if (d == this->device()) return *this;
  return Tensor(UOp(Ops::COPY, dtype(), {uop(), graph::device_uop(d)}));
}
TINYT_INLINE Tensor Tensor::contiguous() const { return Tensor(UOp(Ops::CONTIGUOUS, dtype(), {uop()})); }
TINYT_INLINE Tensor Tensor::contiguous_backward() const { return Tensor(UOp(Ops::CONTIGUOUS_BACKWARD, dtype(), {uop()})); }
TINYT_INLINE Tensor Tensor::detach() const { return Tensor(UOp(Ops::DETACH, dtype(), {uop()})); }

}  // namespace tinyt::inline v0
