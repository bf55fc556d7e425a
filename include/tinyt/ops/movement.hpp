// Movement: views that never copy. Each checks its arguments against the shape and builds one
// of the six movement UOps (or none, when it would change nothing).
#pragma once

#include "../expr.hpp"
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

namespace detail {
/// `u` broadcast to `shape`, unchecked: a reshape adding leading 1s, an expand.
inline UOp broadcast_uop(const UOp& u, const Shape& shape) {
  const Shape& old = graph::shape_of(u);
  if (old == shape) return u;
  std::vector<sint> s(shape.size() - old.size(), 1);
  s.insert(s.end(), old.begin(), old.end());
  return graph::expand(graph::reshape(u, Shape(s)), shape);
}
// The checks of broadcasting `old` to `shape` (a reshape adding leading 1s, then an expand).
inline void check_broadcast_to(const Shape& old, const Shape& shape) {
  bool ok = old.size() <= shape.size();
  for (size_t i = 0; ok && i < old.size(); ++i) {
    const sint& d = old[i];
    ok = d == shape[i + shape.size() - old.size()] || d == 1;
  }
  if (!ok) throw ShapeError(cat("expand: cannot broadcast ", old, " to ", shape));
}
// permute's order, checked and with negative axes resolved
inline std::vector<int64_t> checked_order(const Shape& s, const std::vector<int>& order) {
  if (order.size() != s.size()) throw ShapeError(cat("permute: ", order.size(), " axes for shape ", s));
  std::vector<int64_t> perm;
  std::vector<bool> seen(s.size(), false);
  for (int a : order) {
    const int ax = normalize_axis(a, s.size(), "permute");
    if (seen[static_cast<size_t>(ax)]) throw ShapeError(cat("permute: axis ", a, " repeats in the order for shape ", s));
    seen[static_cast<size_t>(ax)] = true;
    perm.push_back(ax);
  }
  return perm;
}
inline std::vector<bool> checked_flips(const Shape& s, const std::vector<int>& axes) {
  std::vector<bool> f(s.size(), false);
  for (int a : axes) {
    const auto ax = static_cast<size_t>(normalize_axis(a, s.size(), "flip"));
    if (f[ax]) throw ShapeError(cat("flip: axis ", a, " repeats among the axes for shape ", s));
    f[ax] = true;
  }
  return f;
}
inline bool is_concrete_padding(const Shape& s, const ew::Pairs& padding) {
  return s.is_concrete() && std::all_of(padding.begin(), padding.end(), [](const auto& p) { return p.first.is_int() && p.second.is_int(); });
}
// A pad that only grows (every amount non-negative; any may be symbolic).
inline void check_growth(const Shape& s, const ew::Pairs& padding) {
  if (padding.size() != s.size()) throw ShapeError(cat("pad: ", padding.size(), " (before, after) pairs for shape ", s));
  for (const auto& [b, a] : padding)
    if (b.vmin() < 0 || a.vmin() < 0)
      throw ShapeError(cat("pad: padding (", b, ", ", a, ") of shape ", s, " may be negative; a symbolic pad only grows"));
}
// A pad with concrete amounts, any of them negative (which crops, as PyTorch's): the crop, and
// what grows after it.
struct ConcretePad {
  std::vector<std::pair<int64_t, int64_t>> cut, widen;
  bool crops = false;
};
inline ConcretePad concrete_pad(const Shape& shape, const ew::Pairs& padding) {
  const std::vector<int64_t> s = shape.to_vector();
  if (padding.size() != s.size()) throw ShapeError(cat("pad: ", padding.size(), " (before, after) pairs for shape ", shape));
  ConcretePad p;
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t b = padding[i].first.as_int(), a = padding[i].second.as_int();
    if (b + a + s[i] < 0) throw ShapeError(cat("pad: padding (", b, ", ", a, ") removes more than dim ", i, " of ", shape, " has"));
    p.crops |= b < 0 || a < 0;
    p.widen.emplace_back(std::max<int64_t>(b, 0), std::max<int64_t>(a, 0));
    p.cut.emplace_back(-std::min<int64_t>(b, 0), s[i] + std::min<int64_t>(a, 0));
  }
  return p;
}
}  // namespace detail

/// `t` broadcast to `shape` (which it must broadcast to): a reshape adding leading 1s, an expand.
TINYT_INLINE Tensor broadcast_to(const Tensor& t, const Shape& shape) {
  detail::check_broadcast_to(t.shape(), shape);
  return Tensor(detail::broadcast_uop(t.uop(), shape));
}

namespace detail::ew {
// -- the shape each movement op gives, its arguments checked ---------------------------------------
TINYT_INLINE Shape reshaped(const Shape& old, const Shape& shape) {
  if (!shape.is_concrete() || !old.is_concrete()) {
    // a symbolic size: the element counts must be the same expression
    for (const sint& d : shape)
      if (d == -1 || d.vmin() < 0)
        throw ShapeError(cat("reshape: ", shape, " has a -1 or a negative size (a symbolic reshape names every size)"));
    if (!same_size(shape.numel(), old.numel()))
      throw ShapeError(cat("reshape: cannot reshape ", old, " to ", shape, ": ", old.numel(), " and ", shape.numel(), " elements"));
    return shape;
  }
  std::vector<int64_t> s;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = shape[i].as_int();
    if (d == -1) {
      if (infer >= 0) throw ShapeError(cat("reshape: more than one -1 in ", shape));
      infer = static_cast<int64_t>(i);
    } else if (d < 0) {
      throw ShapeError(cat("reshape: negative size in ", shape));
    } else {
      known *= d;
    }
    s.push_back(d);
  }
  const int64_t n = old.numel().value();
  if (infer >= 0) {
    if (known == 0 || n % known != 0) throw ShapeError(cat("reshape: cannot reshape ", old, " to ", shape));
    s[static_cast<size_t>(infer)] = n / known;
  } else if (known != n) {
    throw ShapeError(cat("reshape: cannot reshape ", old, " (", n, " elements) to ", shape));
  }
  return Shape(s);
}
TINYT_INLINE Shape permuted(const Shape& s, const std::vector<int>& order) {
  std::vector<sint> out;
  for (int64_t ax : checked_order(s, order)) out.push_back(s[static_cast<size_t>(ax)]);
  return Shape(std::move(out));
}
TINYT_INLINE Shape expanded(const Shape& s, const Shape& shape) {
  std::vector<sint> target;
  for (size_t i = 0; i < shape.size(); ++i) {
    sint d = shape[i];
    // -1 keeps the size of the matching dim (aligned from the right)
    if (d == -1 && i + s.size() >= shape.size()) d = s[i + s.size() - shape.size()];
    target.push_back(d);
  }
  Shape out(std::move(target));
  check_broadcast_to(s, out);
  return out;
}
TINYT_INLINE Shape padded(const Shape& s, const Pairs& padding, double) {
  if (is_concrete_padding(s, padding)) concrete_pad(s, padding);
  else check_growth(s, padding);
  std::vector<sint> out;
  for (size_t i = 0; i < s.size(); ++i) out.push_back(s[i] + padding[i].first + padding[i].second);
  return Shape(std::move(out));
}
TINYT_INLINE Shape shrunk(const Shape& s, const Pairs& bounds) {
  if (bounds.size() != s.size()) throw ShapeError(cat("shrink: ", bounds.size(), " (start, end) pairs for shape ", s));
  std::vector<sint> out;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto& [b, e] = bounds[i];
    // a symbolic bound is checked over its variables' ranges; the size it ends at, at its largest
    if (b.vmin() < 0 || (e - b).vmin() < 0 || e.vmax() > s[i].vmax())
      throw ShapeError(cat("shrink: (", b, ", ", e, ") is outside dim ", i, " of shape ", s));
    out.push_back(e - b);
  }
  return Shape(std::move(out));
}
TINYT_INLINE Shape flipped(const Shape& s, const std::vector<int>& axes) {
  checked_flips(s, axes);
  return s;
}
TINYT_INLINE std::vector<int> transposed_order(const Shape& s, int d0, int d1) {
  std::vector<int> order(s.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::swap(order[static_cast<size_t>(normalize_axis(d0, s.size(), "transpose"))],
            order[static_cast<size_t>(normalize_axis(d1, s.size(), "transpose"))]);
  return order;
}
TINYT_INLINE Shape flattened(const Shape& s, int start, int end) {
  if (s.size() == 0) return Shape{1};
  const auto a = static_cast<size_t>(normalize_axis(start, s.size(), "flatten"));
  const auto b = static_cast<size_t>(normalize_axis(end, s.size(), "flatten"));
  if (a > b) throw ShapeError(cat("flatten: start ", start, " comes after end ", end, " for shape ", s));
  std::vector<sint> out(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(a));
  sint n = 1;
  for (size_t i = a; i <= b; ++i) n = n * s[i];
  out.push_back(n);
  out.insert(out.end(), s.begin() + static_cast<std::ptrdiff_t>(b) + 1, s.end());
  return Shape(std::move(out));
}
TINYT_INLINE Shape unflattened(const Shape& s, int dim, const Shape& sizes) {
  const auto d = static_cast<size_t>(normalize_axis(dim, s.size(), "unflatten"));
  std::vector<sint> out(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(d));
  for (const sint& x : sizes) out.push_back(x);
  out.insert(out.end(), s.begin() + static_cast<std::ptrdiff_t>(d) + 1, s.end());
  return Shape(std::move(out));
}
TINYT_INLINE Shape squeezed(const Shape& s, int dim) {
  if (s.size() == 0) return s;
  std::vector<sint> out = s.dims();
  const auto d = static_cast<size_t>(normalize_axis(dim, s.size(), "squeeze"));
  if (out[d] == 1) out.erase(out.begin() + static_cast<std::ptrdiff_t>(d));
  return Shape(std::move(out));
}
TINYT_INLINE Shape squeezed_all(const Shape& s) {
  std::vector<sint> out;
  for (const sint& d : s)
    if (!(d == 1)) out.push_back(d);
  return Shape(std::move(out));
}
TINYT_INLINE Shape unsqueezed(const Shape& s, int dim) {
  std::vector<sint> out = s.dims();
  const auto d = static_cast<size_t>(normalize_axis(dim, s.size() + 1, "unsqueeze"));
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(d), 1);
  return Shape(std::move(out));
}

// -- the movement ops: one UOp each (none when nothing changes) ------------------------------------
TINYT_INLINE Operand reshape(O x, const Shape& shape) { return {graph::reshape(x.u, reshaped(graph::shape_of(x.u), shape))}; }
TINYT_INLINE Operand permute(O x, const std::vector<int>& order) { return {graph::permute(x.u, checked_order(graph::shape_of(x.u), order))}; }
TINYT_INLINE Operand expand(O x, const Shape& shape) { return {broadcast_uop(x.u, expanded(graph::shape_of(x.u), shape))}; }
TINYT_INLINE Operand shrink(O x, const Pairs& bounds) {
  shrunk(graph::shape_of(x.u), bounds);
  return {graph::shrink(x.u, bounds)};
}
TINYT_INLINE Operand flip(O x, const std::vector<int>& axes) { return {graph::flip(x.u, checked_flips(graph::shape_of(x.u), axes))}; }
TINYT_INLINE Operand pad(O x, const Pairs& padding, double value) {
  const Shape s = graph::shape_of(x.u);
  UOp u = x.u;
  Pairs growth = padding;
  if (is_concrete_padding(s, padding)) {
    const ConcretePad p = concrete_pad(s, padding);
    if (p.crops) u = graph::shrink(u, p.cut);
    growth = graph::to_size_pairs(p.widen);
  } else {
    check_growth(s, padding);
  }
  // pads fill with 0: a non-zero value is selected where a padded mask of ones is false
  const UOp grown = graph::pad(u, growth);
  if (value == 0.0) return {grown};
  const Shape before = graph::shape_of(u);
  const UOp ones = broadcast_uop(graph::const_(dtypes::bool_, true, graph::device_of(u)), before);
  const UOp fill = broadcast_uop(graph::const_(u.dtype(), value, graph::device_of(u)), graph::shape_of(grown));
  return {graph::pad(ones, growth).where(grown, fill)};
}
}  // namespace detail::ew

// -- the Tensor methods: one path with the expressions ---------------------------------------------
TINYT_INLINE Tensor Tensor::reshape(Shape shape) const { return detail::to_tensor(detail::ew::reshape(detail::operand_of(*this), shape)); }
TINYT_INLINE Tensor Tensor::permute(std::vector<int> order) const {
  return detail::to_tensor(detail::ew::permute(detail::operand_of(*this), order));
}
TINYT_INLINE Tensor Tensor::expand(Shape shape) const { return detail::to_tensor(detail::ew::expand(detail::operand_of(*this), shape)); }
TINYT_INLINE Tensor Tensor::pad(std::vector<std::pair<sint, sint>> padding, double value) const {
  return detail::to_tensor(detail::ew::pad(detail::operand_of(*this), padding, value));
}
TINYT_INLINE Tensor Tensor::shrink(std::vector<std::pair<sint, sint>> bounds) const {
  return detail::to_tensor(detail::ew::shrink(detail::operand_of(*this), bounds));
}
TINYT_INLINE Tensor Tensor::flip(std::vector<int> axes) const { return detail::to_tensor(detail::ew::flip(detail::operand_of(*this), axes)); }
TINYT_INLINE Tensor Tensor::transpose(int d0, int d1) const { return permute(detail::ew::transposed_order(shape(), d0, d1)); }
TINYT_INLINE Tensor Tensor::flatten(int start, int end) const { return reshape(detail::ew::flattened(shape(), start, end)); }
TINYT_INLINE Tensor Tensor::unflatten(int dim, Shape sizes) const { return reshape(detail::ew::unflattened(shape(), dim, sizes)); }
TINYT_INLINE Tensor Tensor::squeeze(int dim) const { return reshape(detail::ew::squeezed(shape(), dim)); }
TINYT_INLINE Tensor Tensor::squeeze() const { return reshape(detail::ew::squeezed_all(shape())); }
TINYT_INLINE Tensor Tensor::unsqueeze(int dim) const { return reshape(detail::ew::unsqueezed(shape(), dim)); }

TINYT_INLINE Tensor Tensor::to(const std::string& device) const {
  const std::string d = Device::canonicalize(device);
  if (d == this->device()) return *this;
  Device::require_dtype(d, dtype(), "to");
  return Tensor(UOp(Ops::COPY, dtype(), {uop(), graph::device_uop(d)}));
}
TINYT_INLINE Tensor Tensor::shard(const std::vector<std::string>& devices, std::optional<int> axis) const {
  using detail::cat;
  if (devices.empty()) throw DeviceError(cat("shard: no devices for the ", shape(), " tensor"));
  std::string list;
  for (const std::string& d : devices) list += (list.empty() ? "" : ",") + (d.empty() ? Device::default_device() : d);
  const std::vector<std::string> names = Device::split(Device::canonicalize(list));
  // a tensor on several devices is gathered first, to be split anew
  const Tensor whole = Device::is_multi(device()) ? to(names[0]) : *this;
  Sharding split;
  if (axis) {
    const int rank = static_cast<int>(whole.ndim());
    if (*axis < -rank || *axis >= rank)
      throw ShapeError(cat("shard: axis ", *axis, " is out of range for a ", whole.shape(), " tensor (", rank, " dims)"));
    split.axis = *axis < 0 ? *axis + rank : *axis;
    const sint size = whole.shape()[static_cast<size_t>(split.axis)];
    if (!size.is_int()) throw ShapeError(cat("shard: axis ", split.axis, " of ", whole.shape(), " is symbolic"));
    split.sizes = shard_sizes(size.as_int(), names.size());
  }
  std::vector<UOp> parts;
  for (size_t i = 0; i < names.size(); ++i) parts.push_back(whole.shrink(split.part_range(whole.shape(), i)).to(names[i]).uop());
  return Tensor(UOp(Ops::MULTI, dtype(), std::move(parts), split.axis));
}
TINYT_INLINE Tensor Tensor::allreduce(dist::ReduceOp op) const {
  return Tensor(UOp(Ops::ALLREDUCE, dtype(), {uop()}, static_cast<int64_t>(op)));
}
TINYT_INLINE Tensor Tensor::contiguous() const { return Tensor(UOp(Ops::CONTIGUOUS, dtype(), {uop()})); }
TINYT_INLINE Tensor Tensor::contiguous_backward() const { return Tensor(UOp(Ops::CONTIGUOUS_BACKWARD, dtype(), {uop()})); }
TINYT_INLINE Tensor Tensor::detach() const { return Tensor(UOp(Ops::DETACH, dtype(), {uop()})); }

}  // namespace tinyt::inline v0
