// Interval bounds of integer (and bool, and index) values: vmin(u) <= u <= vmax(u) for every
// value of the variables. The rules of symbolic.hpp decide with these, so they must be sound:
// where an op may overflow its dtype, the bounds are the dtype's whole range.
#pragma once

#include <algorithm>
#include <cstdlib>

#include "uop.hpp"

namespace tinyt::inline v0 {

/// A closed interval of integers.
struct Bounds {
  i128 lo, hi;
  bool is_const() const { return lo == hi; }
};

namespace detail {
inline i128 abs128(i128 v) { return v < 0 ? -v : v; }
inline Bounds dtype_range(DType d) { return {dtypes::min_int(d), dtypes::max_int(d)}; }
inline Bounds hull(std::initializer_list<i128> vs) { return {std::min(vs), std::max(vs)}; }

// smallest 2^k - 1 that is >= v (v >= 0): an upper bound for OR/XOR of values <= v
inline i128 all_ones_above(i128 v) {
  i128 m = 0;
  while (m < v) m = m * 2 + 1;
  return m;
}

inline Bounds trunc_div_bounds(Bounds a, Bounds b) {
  if (b.lo <= 0 && b.hi >= 0) {
    // the divisor may be zero (undefined in C) or change sign; |a / b| <= |a| holds either way
    const i128 m = std::max(abs128(a.lo), abs128(a.hi));
    return {-m, m};
  }
  // trunc(a / b) is monotone in a, and in b on one side of zero: the corners are the extremes
  return hull({a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi});
}

inline Bounds trunc_mod_bounds(Bounds a, Bounds b) {
  const i128 dmax = std::max(abs128(b.lo), abs128(b.hi)), dmin = b.lo > 0   ? b.lo
                                                                 : b.hi < 0 ? -b.hi
                                                                            : 0;
  if (dmax == 0) return {0, 0};
  if (a.lo >= 0 && a.hi < dmin) return a;  // the mod never wraps
  const i128 m = dmax - 1;                 // C's remainder has the sign of the dividend
  return {a.lo >= 0 ? 0 : std::max(a.lo, -m), a.hi <= 0 ? 0 : std::min(a.hi, m)};
}

// |x| < 2^63 at both ends, so products of two and shifts below 64 stay inside 128 bits
inline bool small(Bounds b) {
  const i128 lim = static_cast<i128>(1) << 63;
  return b.lo > -lim && b.hi < lim;
}

inline Bounds compute_bounds(const UOp& u, const std::vector<Bounds>& s) {
  const DType dt = u.dtype();
  switch (u.op()) {
    case Ops::CONST:
      return {u.const_int(), u.const_int()};
    case Ops::DEFINE_VAR:
      return {u.arg()[1].as_int(), u.arg()[2].as_int()};
    case Ops::BIND:
      return s[0];
    case Ops::RANGE:
      return {0, std::max<i128>(s[0].hi - 1, 0)};
    case Ops::SPECIAL:
      return {0, std::max<i128>(s.empty() ? 0 : s[0].hi - 1, 0)};
    case Ops::NEG:
      return {-s[0].hi, -s[0].lo};
    case Ops::ADD:
      return {s[0].lo + s[1].lo, s[0].hi + s[1].hi};
    case Ops::SUB:
      return {s[0].lo - s[1].hi, s[0].hi - s[1].lo};
    case Ops::MUL:
      if (!small(s[0]) || !small(s[1])) break;  // the products could pass 2^127
      return hull({s[0].lo * s[1].lo, s[0].lo * s[1].hi, s[0].hi * s[1].lo, s[0].hi * s[1].hi});
    case Ops::IDIV:
      return trunc_div_bounds(s[0], s[1]);
    case Ops::MOD:
      return trunc_mod_bounds(s[0], s[1]);
    case Ops::MAX:
      return {std::max(s[0].lo, s[1].lo), std::max(s[0].hi, s[1].hi)};
    case Ops::CMPLT:
      if (s[0].hi < s[1].lo) return {1, 1};
      if (s[0].lo >= s[1].hi) return {0, 0};
      return {0, 1};
    case Ops::CMPNE:
    case Ops::CMPEQ: {
      const bool differ = s[0].hi < s[1].lo || s[1].hi < s[0].lo;
      const bool same = s[0].is_const() && s[1].is_const() && s[0].lo == s[1].lo;
      const i128 ne = differ ? 1 : same ? 0 : -1;
      if (ne < 0) return {0, 1};
      return u.op() == Ops::CMPNE ? Bounds{ne, ne} : Bounds{1 - ne, 1 - ne};
    }
    case Ops::AND:
      if (dt.scalar().is_bool()) return {s[0].lo & s[1].lo, s[0].hi & s[1].hi};
      if (s[0].lo >= 0 && s[1].lo >= 0) return {0, std::min(s[0].hi, s[1].hi)};
      if (s[0].lo >= 0 || s[1].lo >= 0) return {0, s[0].lo >= 0 ? s[0].hi : s[1].hi};
      break;
    case Ops::OR:
    case Ops::XOR:
      if (dt.scalar().is_bool())
        return u.op() == Ops::OR ? Bounds{s[0].lo | s[1].lo, s[0].hi | s[1].hi} : Bounds{0, 1};
      if (s[0].lo >= 0 && s[1].lo >= 0)
        return {u.op() == Ops::OR ? std::max(s[0].lo, s[1].lo) : 0,
                all_ones_above(std::max(s[0].hi, s[1].hi))};
      break;
    case Ops::SHL:
      if (s[1].is_const() && s[1].lo >= 0 && s[1].lo < 64 && small(s[0]))
        return {s[0].lo << static_cast<int>(s[1].lo), s[0].hi << static_cast<int>(s[1].lo)};
      break;
    case Ops::SHR:
      if (s[1].lo >= 0 && s[1].hi < 128)
        return hull({s[0].lo >> static_cast<int>(s[1].lo), s[0].lo >> static_cast<int>(s[1].hi),
                     s[0].hi >> static_cast<int>(s[1].lo), s[0].hi >> static_cast<int>(s[1].hi)});
      break;
    case Ops::WHERE:
      if (s[0].is_const()) return s[0].lo ? s[1] : s[2];
      return {std::min(s[1].lo, s[2].lo), std::max(s[1].hi, s[2].hi)};
    case Ops::CAST:
      if (!u.src(0).dtype().scalar().is_float()) return s[0];  // out of range wraps: clamped below
      break;
    default:
      break;
  }
  return dtype_range(dt);
}
}  // namespace detail

/// True when vmin/vmax apply: integer, bool and index values (scalars or vectors).
inline bool has_bounds(const UOp& u) {
  const DType s = u.dtype().scalar();
  return !u.dtype().is_ptr() && (s.is_int() || s.is_bool());
}

namespace detail {
inline void fill_bounds(const UOp& u) {
  std::vector<Bounds> s;
  bool all_bounded = true;
  for (const UOp& x : u.src()) {
    all_bounded &= has_bounds(x);
    if (all_bounded) s.push_back({x->cache_vmin, x->cache_vmax});
  }
  // a float source (a comparison of floats, a float cast to int) can give anything in the dtype
  const Bounds full = dtype_range(u.dtype());
  Bounds b = all_bounded ? compute_bounds(u, s) : full;
  // an interval past the dtype means the op may wrap: then it may be anything in the dtype
  if (b.lo < full.lo || b.hi > full.hi || b.lo > b.hi) b = full;
  static std::mutex write_mu;  // two threads may reach the same node; one writes it
  std::lock_guard lock(write_mu);
  if (u->cache_bounds_ready.load(std::memory_order_relaxed)) return;
  u->cache_vmin = b.lo, u->cache_vmax = b.hi;
  u->cache_bounds_ready.store(true, std::memory_order_release);
}
}  // namespace detail

/// Bounds of an integer/bool/index UOp, computed once per node and cached on it. The walk stops
/// at nodes already known and uses no recursion, so deep graphs are fine.
inline Bounds bounds(const UOp& root) {
  if (!has_bounds(root))
    throw InternalError(detail::cat("bounds: ", root.dtype().name(), " has no integer bounds"));
  auto known = [](const UOp& u) {
    return !has_bounds(u) || u->cache_bounds_ready.load(std::memory_order_acquire);
  };
  std::vector<const UOp*> stack{&root};
  while (!stack.empty()) {
    const UOp& u = *stack.back();
    if (known(u)) {
      stack.pop_back();
      continue;
    }
    const size_t before = stack.size();
    for (const UOp& x : u.src())
      if (!known(x)) stack.push_back(&x);
    if (stack.size() == before) {
      detail::fill_bounds(u);
      stack.pop_back();
    }
  }
  return {root->cache_vmin, root->cache_vmax};
}
inline i128 vmin(const UOp& u) { return bounds(u).lo; }
inline i128 vmax(const UOp& u) { return bounds(u).hi; }

}  // namespace tinyt::inline v0
