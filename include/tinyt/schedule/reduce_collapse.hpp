// Reduce collapse: sums over a range that can be counted instead of looped. A sum of a value
// that does not depend on the range is value * length; a sum of `where(bounds on r, x, 0)` is x
// times the number of r inside the bounds; a sum of `where(r == e, x(r), 0)` is x(e) where e is
// in range. This is what makes arange (a cumulative sum of ones) and one-hot gathers O(n).
#pragma once

#include "../valid.hpp"
#include "lower.hpp"

namespace tinyt::inline v0 {
namespace schedule {

namespace detail {

// clause as `coef*r + rest (<, ==) 0`, with coef +-1; false if it is not of that form
struct RangeClause {
  Ops cmp;
  bool negated;
  i128 coef;
  UOp rest;
};
inline std::optional<RangeClause> read_clause(UOp clause, const UOp& r) {
  bool negated = false;
  if (clause.op() == Ops::CMPNE && clause.src(1).is_const() && clause.src(1).dtype().is_bool() && clause.src(1).const_int() == 1)
    clause = clause.src(0), negated = true;
  if (clause.op() != Ops::CMPLT && clause.op() != Ops::CMPEQ) return std::nullopt;
  // an integer comparison with the range cast to the integer's dtype (an index tensor compared
  // with an arange) compares the same numbers as index values, when the cast cannot wrap
  std::function<UOp(const UOp&)> as_index = [&](const UOp& v) -> UOp {
    if (v.dtype().is_index()) return v;
    if (!v.dtype().is_int() || v.dtype().is_bool() || v.dtype().count() != 1) return {};
    if (!depends_on(v, r)) return v.cast(dtypes::index);
    if (v.op() != Ops::CAST) return {};
    const UOp& x = v.src(0);
    if (x.dtype().is_index())  // index -> int: exact when every value fits
      return vmin(x) >= dtypes::min_int(v.dtype()) && vmax(x) <= dtypes::max_int(v.dtype()) ? x : UOp{};
    const bool widening = x.dtype().is_int() && !x.dtype().is_bool() && dtypes::min_int(x.dtype()) >= dtypes::min_int(v.dtype()) &&
                          dtypes::max_int(x.dtype()) <= dtypes::max_int(v.dtype());
    return widening ? as_index(x) : UOp{};
  };
  const UOp lhs = as_index(clause.src(0)), rhs = as_index(clause.src(1));
  if (!lhs || !rhs) return std::nullopt;
  Linear L = linear_form(lhs - rhs);
  i128 coef = 0;
  Linear rest = L;
  rest.terms.clear();
  for (const auto& t : L.terms) {
    if (t.atom == r) coef = t.coef;
    else if (depends_on(t.atom, r)) return std::nullopt;
    else rest.terms.push_back(t);
  }
  if (coef != 1 && coef != -1) return std::nullopt;
  return RangeClause{clause.op(), negated, coef, rest.build()};
}

// The reduce with range r removed, or empty when r cannot be counted away.
inline UOp collapse_range(const UOp& value, const UOp& r) {
  const UOp end = r.src(0);
  if (!depends_on(value, r)) return value * end.cast(value.dtype());
  // sums distribute: over a + b, and over c * x or where(c, x, 0) with c free of r
  if (value.op() == Ops::ADD) {
    UOp a = collapse_range(value.src(0), r), b = a ? collapse_range(value.src(1), r) : UOp{};
    return a && b ? a + b : UOp{};
  }
  if (value.op() == Ops::MUL)
    for (int i = 0; i < 2; ++i)
      if (!depends_on(value.src(i), r))
        if (UOp rest = collapse_range(value.src(1 - i), r)) return value.src(i) * rest;
  // cast(where(c, x, 0)) is where(c, cast(x), 0): a gather of small ints summed in a wider int
  if (value.op() == Ops::CAST && value.src(0).op() == Ops::WHERE) {
    const UOp& w = value.src(0);
    auto cast = [&](const UOp& x) { return x.is_const() ? UOp::const_(value.dtype(), x.const_float()) : x.cast(value.dtype()); };
    return collapse_range(w.src(0).where(cast(w.src(1)), cast(w.src(2))), r);
  }
  if (value.op() != Ops::WHERE) return {};
  if (!depends_on(value.src(0), r) && value.src(2).is_const() && value.src(2).const_float() == 0)
    if (UOp inner = collapse_range(value.src(1), r)) return value.src(0).where(inner, value.src(2));
  const bool then_zero = value.src(1).is_const() && value.src(1).const_float() == 0;
  const bool else_zero = value.src(2).is_const() && value.src(2).const_float() == 0;
  if (!then_zero && !else_zero) return {};
  const UOp x = else_zero ? value.src(1) : value.src(2);
  std::vector<UOp> clauses = tinyt::detail::and_clauses(value.src(0));
  if (then_zero) {  // where(c, 0, x) is where(!c, x, 0): only a single clause negates simply
    if (clauses.size() != 1) return {};
    clauses[0] = clauses[0].logical_not();
  }
  UOp keep = UOp::const_(dtypes::bool_, true), lo = schedule::index_const(0), hi = end - 1;
  std::optional<UOp> equal_to;
  for (const UOp& c : clauses) {
    if (!depends_on(c, r)) { keep = keep & c; continue; }
    auto rc = read_clause(c, r);
    if (!rc) return {};
    // coef*r + rest (<, ==) 0 bounds r by b = -rest (coef 1) or rest (coef -1):
    //   r + rest < 0: r <= b-1     -r + rest < 0: r >= b+1
    //   !(r + rest < 0): r >= b    !(-r + rest < 0): r <= b       ==: r == b
    const UOp b = rc->coef == 1 ? -rc->rest : rc->rest;
    if (rc->cmp == Ops::CMPEQ) {
      if (rc->negated || equal_to) return {};
      equal_to = b;
    } else if (rc->coef == 1 && !rc->negated) {
      hi = hi.minimum(b - 1);
    } else if (rc->coef == -1 && rc->negated) {
      hi = hi.minimum(b);
    } else if (rc->coef == -1) {
      lo = lo.maximum(b + 1);
    } else {
      lo = lo.maximum(b);
    }
  }
  if (equal_to) {
    const UOp e = *equal_to;
    const UOp inside = keep & e.lt(lo).logical_not() & e.lt(hi + 1);
    // x read at e: every load whose address moves with r is gated by `inside` too, so an index
    // outside the range (or an empty table) reads nothing, not memory past the buffer
    std::unordered_map<const UOpNode*, UOp> at_e{{r.get(), e}};
    for (const UOp& u : toposort(x)) {
      if (u.op() != Ops::INDEX || !depends_on(u, r)) continue;
      UOp gate = u.src().size() > 2 ? substitute(u.src(2), {{r.get(), e}}) & inside : inside;
      at_e[u.get()] = UOp(Ops::INDEX, u.dtype(), {u.src(0), substitute(u.src(1), {{r.get(), e}}), gate}, u.arg());
    }
    return inside.where(substitute(x, at_e), UOp::const_(x.dtype(), 0));
  }
  if (depends_on(x, r)) return {};
  const UOp count = (hi - lo + 1).maximum(0);
  return keep.where(x * count.cast(x.dtype()), UOp::const_(x.dtype(), 0));
}
}  // namespace detail

/// Rules that remove countable ranges from ADD reductions.
inline const PatternMatcher& reduce_collapse() {
  static const PatternMatcher pm{{
      {UPat(Ops::REDUCE).named("red"),
       [](auto& m) {
         const UOp& red = m["red"];
         if (red.arg().template get<Ops>() != Ops::ADD) return UOp{};
         // a sum over an empty range is 0: its value must not be read (a load there is out of
         // bounds, and 0 * NaN is not 0)
         for (size_t i = 1; i < red.src().size(); ++i)
           if (red.src(i).src(0).is_const() && red.src(i).src(0).const_int() == 0) return UOp::const_(red.dtype(), 0);
         UOp value = red.src(0);
         std::vector<UOp> left;
         for (size_t i = 1; i < red.src().size(); ++i) {
           if (UOp c = detail::collapse_range(value, red.src(i))) value = simplify(c);
           else left.push_back(red.src(i));
         }
         if (left.size() + 1 == red.src().size()) return UOp{};
         if (left.empty()) return value;
         left.insert(left.begin(), value);
         return UOp(Ops::REDUCE, red.dtype(), std::move(left), red.arg());
       }},
  }};
  return pm;
}

}  // namespace schedule
}  // namespace tinyt::inline v0
