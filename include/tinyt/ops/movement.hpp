// Movement: views that never copy. Each checks its arguments against the shape and builds one
// of the six movement UOps (or none, when it would change nothing).
#pragma once

#include "../graph.hpp"
#include "../tensor_impl.hpp"

namespace tinyt::inline v0 {

namespace detail {
inline std::string shape_str(const std::vector<int64_t>& s) { return to_string(Shape(s)); }

// Whether two sizes are equal for every value of their variables. The symbolic engine does not
// put polynomials in one normal form (n*(2n-1)+n and 2*n*n), so sizes that differ as expressions
// are compared at every corner of the variables' ranges and at their bound values: a product of
// sizes is a polynomial of low degree in each variable, and these agree there only when equal.
inline bool same_size(const sint& a, const sint& b) {
  if (a == b) return true;
  if (a.is_int() && b.is_int()) return false;
  std::vector<UOp> vars;
  std::unordered_map<const UOpNode*, int64_t> bound;
  for (const sint* s : {&a, &b})
    if (!s->is_int())
      for (const UOp& x : toposort(s->as_uop())) {
        if (x.op() == Ops::BIND) bound[x.src(0).get()] = static_cast<int64_t>(x.src(1).const_int());
        if (x.op() == Ops::DEFINE_VAR && std::find(vars.begin(), vars.end(), x) == vars.end()) vars.push_back(x);
      }
  if (vars.size() > 6) return false;
  std::vector<std::vector<int64_t>> samples;
  for (const UOp& v : vars) {
    const int64_t lo = v.arg()[1].as_int(), hi = v.arg()[2].as_int();
    std::vector<int64_t> s{lo, hi, lo + (hi - lo) / 2, lo + (hi - lo) / 3};
    if (auto it = bound.find(v.get()); it != bound.end()) s.push_back(it->second);
    samples.push_back(s);
  }
  std::vector<size_t> at(vars.size(), 0);
  for (;;) {
    std::unordered_map<const UOpNode*, UOp> values;
    for (size_t k = 0; k < vars.size(); ++k) values[vars[k].get()] = UOp::const_(dtypes::index, samples[k][at[k]]);
    auto eval = [&](const sint& s) { return simplify(substitute(s.unbound(), values)); };
    if (!(eval(a) == eval(b))) return false;
    size_t k = 0;
    while (k < vars.size() && ++at[k] == samples[k].size()) at[k++] = 0;
    if (k == vars.size()) return true;
  }
}
}  // namespace detail

TINYT_INLINE Shape Tensor::broadcast_shape(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<sint> out(n);
  for (size_t i = 0; i < n; ++i) {
    const sint x = i < n - a.size() ? sint(1) : a[i - (n - a.size())];
    const sint y = i < n - b.size() ? sint(1) : b[i - (n - b.size())];
    if (!(x == y) && !(x == 1) && !(y == 1))
      throw ShapeError(detail::cat(op, ": cannot broadcast ", a, " with ", b));
    out[i] = x == 1 ? y : x;
  }
  return Shape(std::move(out));
}

/// `t` broadcast to `shape` (which it must broadcast to): a reshape adding leading 1s, an expand.
TINYT_INLINE Tensor broadcast_to(const Tensor& t, const Shape& shape) {
  const Shape old = t.shape();
  if (old == shape) return t;
  if (old.size() > shape.size())
    throw ShapeError(detail::cat("expand: cannot broadcast ", old, " to ", shape));
  std::vector<sint> s(shape.size() - old.size(), 1);
  s.insert(s.end(), old.begin(), old.end());
  for (size_t i = 0; i < s.size(); ++i)
    if (!(s[i] == shape[i]) && !(s[i] == 1))
      throw ShapeError(detail::cat("expand: cannot broadcast ", old, " to ", shape));
  return Tensor(graph::expand(graph::reshape(t.uop(), Shape(s)), shape));
}

TINYT_INLINE Tensor Tensor::reshape(Shape shape) const {
  if (!shape.is_concrete() || !this->shape().is_concrete()) return reshape_symbolic(shape);
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

// A reshape where a size is symbolic: the element counts must be the same expression.
TINYT_INLINE Tensor Tensor::reshape_symbolic(const Shape& shape) const {
  for (const sint& d : shape)
    if (d == -1 || d.vmin() < 0)
      throw ShapeError(detail::cat("reshape: ", shape, " has a -1 or a negative size (a symbolic reshape names every size)"));
  if (!detail::same_size(shape.numel(), this->shape().numel()))
    throw ShapeError(detail::cat("reshape: cannot reshape ", this->shape(), " to ", shape, ": ", this->shape().numel(),
                                 " and ", shape.numel(), " elements"));
  return Tensor(graph::reshape(uop(), shape));
}

TINYT_INLINE Tensor Tensor::permute(std::vector<int> order) const {
  const Shape s = shape();
  if (order.size() != s.size())
    throw ShapeError(detail::cat("permute: ", order.size(), " axes for shape ", s));
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
  std::vector<sint> target;
  const Shape s = this->shape();
  for (size_t i = 0; i < shape.size(); ++i) {
    sint d = shape[i];
    // -1 keeps the size of the matching dim (aligned from the right)
    if (d == -1 && i + s.size() >= shape.size()) d = s[i + s.size() - shape.size()];
    target.push_back(d);
  }
  return broadcast_to(*this, Shape(target));
}

TINYT_INLINE Tensor Tensor::pad(std::vector<std::pair<sint, sint>> padding, double value) const {
  if (!shape().is_concrete() || std::any_of(padding.begin(), padding.end(), [](const auto& p) { return !p.first.is_int() || !p.second.is_int(); }))
    return grow(padding, value);
  const std::vector<int64_t> s = cshape();
  if (padding.size() != s.size())
    throw ShapeError(detail::cat("pad: ", padding.size(), " (before, after) pairs for shape ", detail::shape_str(s)));
  std::vector<std::pair<int64_t, int64_t>> widen, cut;
  bool negative = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t b = padding[i].first.as_int(), a = padding[i].second.as_int();
    if (b + a + s[i] < 0) throw ShapeError(detail::cat("pad: padding (", b, ", ", a, ") removes more than dim ", i, " has"));
    negative |= b < 0 || a < 0;
    widen.emplace_back(std::max<int64_t>(b, 0), std::max<int64_t>(a, 0));
    cut.emplace_back(-std::min<int64_t>(b, 0), s[i] + std::min<int64_t>(a, 0));
  }
  // negative padding crops (as PyTorch's)
  Tensor x = negative ? Tensor(graph::shrink(uop(), cut)) : *this;
  return x.grow(graph::to_size_pairs(widen), value);
}

// A pad that only grows (every amount non-negative; any may be symbolic). Pads fill with 0: a
// non-zero value is selected where a padded mask of ones is false.
TINYT_INLINE Tensor Tensor::grow(const std::vector<std::pair<sint, sint>>& padding, double value) const {
  const Shape s = shape();
  if (padding.size() != s.size())
    throw ShapeError(detail::cat("pad: ", padding.size(), " (before, after) pairs for shape ", s));
  for (const auto& [b, a] : padding)
    if (b.vmin() < 0 || a.vmin() < 0)
      throw ShapeError(detail::cat("pad: padding (", b, ", ", a, ") may be negative; a symbolic pad only grows"));
  Tensor padded(graph::pad(uop(), padding));
  if (value == 0.0) return padded;
  Tensor mask(graph::pad(graph::expand(graph::reshape(graph::const_(dtypes::bool_, true, device()), std::vector<int64_t>(s.size(), 1)), s), padding));
  return mask.where(padded, Tensor::full(padded.shape(), value, dtype(), device()));
}

TINYT_INLINE Tensor Tensor::shrink(std::vector<std::pair<sint, sint>> bounds) const {
  const Shape s = shape();
  if (bounds.size() != s.size())
    throw ShapeError(detail::cat("shrink: ", bounds.size(), " (start, end) pairs for shape ", s));
  for (size_t i = 0; i < s.size(); ++i) {
    const auto& [b, e] = bounds[i];
    // a symbolic bound is checked over its variables' ranges; the size it ends at, at its largest
    if (b.vmin() < 0 || (e - b).vmin() < 0 || e.vmax() > s[i].vmax())
      throw ShapeError(detail::cat("shrink: (", b, ", ", e, ") is outside dim ", i, " of shape ", s));
  }
  return Tensor(graph::shrink(uop(), bounds));
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
  const Shape s = shape();
  const auto a = static_cast<size_t>(normalize_axis(start, s.size(), "flatten"));
  const auto b = static_cast<size_t>(normalize_axis(end, s.size(), "flatten"));
  if (a > b) throw ShapeError(detail::cat("flatten: start ", start, " comes after end ", end));
  std::vector<sint> out(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(a));
  sint n = 1;
  for (size_t i = a; i <= b; ++i) n = n * s[i];
  out.push_back(n);
  out.insert(out.end(), s.begin() + static_cast<std::ptrdiff_t>(b) + 1, s.end());
  return reshape(Shape(out));
}

TINYT_INLINE Tensor Tensor::unflatten(int dim, Shape sizes) const {
  const Shape s = shape();
  const auto d = static_cast<size_t>(normalize_axis(dim, s.size(), "unflatten"));
  std::vector<sint> out(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(d));
  for (const sint& x : sizes) out.push_back(x);
  out.insert(out.end(), s.begin() + static_cast<std::ptrdiff_t>(d) + 1, s.end());
  return reshape(Shape(out));
}

TINYT_INLINE Tensor Tensor::squeeze(int dim) const {
  std::vector<sint> s = shape().dims();
  if (s.empty()) return *this;
  const auto d = static_cast<size_t>(normalize_axis(dim, s.size(), "squeeze"));
  if (!(s[d] == 1)) return *this;
  s.erase(s.begin() + static_cast<std::ptrdiff_t>(d));
  return reshape(Shape(s));
}
TINYT_INLINE Tensor Tensor::squeeze() const {
  auto s = cshape();
  std::erase(s, 1);
  return reshape(Shape(s));
}
TINYT_INLINE Tensor Tensor::unsqueeze(int dim) const {
  std::vector<sint> s = shape().dims();
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
