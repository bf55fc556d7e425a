// Out-of-line parts of shape.hpp: a symbolic size is simplified when it is made.
#pragma once

#include "shape.hpp"
#include "symbolic.hpp"

namespace tinyt::inline v0 {

TINYT_INLINE sint::sint(const UOp& u) {
  if (!u.dtype().scalar().is_int())
    throw DTypeError(detail::cat("sint: ", u.dtype().name(), " is not an integer"));
  UOp s = simplify(u.cast(dtypes::index));
  if (s.is_const())
    v_ = static_cast<int64_t>(s.const_int());
  else
    v_ = s;
}

namespace detail {
// `u` with each BIND replaced by its variable (`value`: by its value).
inline UOp strip_binds(const UOp& u, bool value) {
  std::unordered_map<const UOpNode*, UOp> map;
  for (const UOp& x : toposort(u))
    if (x.op() == Ops::BIND) map.emplace(x.get(), value ? x.src(1) : x.src(0));
  return map.empty() ? u : simplify(substitute(u, map));
}
}  // namespace detail

TINYT_INLINE UOp sint::unbound() const { return is_int() ? as_uop() : detail::strip_binds(std::get<UOp>(v_), false); }

TINYT_INLINE int64_t sint::value() const {
  if (is_int()) return std::get<int64_t>(v_);
  const UOp v = detail::strip_binds(std::get<UOp>(v_), true);
  if (!v.is_const()) {
    for (const UOp& x : toposort(v))
      if (x.op() == Ops::DEFINE_VAR)
        throw ShapeError(detail::cat("the size ", *this, " needs a value of Variable '", x.arg()[0].get<std::string>(),
                                     "': bind it (", x.arg()[0].get<std::string>(), ".bind(n))"));
  }
  return static_cast<int64_t>(v.const_int());
}
TINYT_INLINE int64_t sint::vmax() const { return is_int() ? as_int() : static_cast<int64_t>(bounds(as_uop()).hi); }
TINYT_INLINE int64_t sint::vmin() const { return is_int() ? as_int() : static_cast<int64_t>(bounds(as_uop()).lo); }

}  // namespace tinyt::inline v0
