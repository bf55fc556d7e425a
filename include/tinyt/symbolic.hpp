// The symbolic engine: constant folding, identities, canonical sums and products, div/mod folding
// and comparison rewriting for integer (index) arithmetic, as rule tables over UOps.
//
// One division exists inside the IR: C's, truncating toward zero (IDIV, MOD). Floor division is
// built on it at the Tensor level. Every rewrite here is exact for every value of the variables,
// including wraparound in fixed-width dtypes: rules that need "no overflow" ask the bounds.
#pragma once

#include <atomic>

#include "alu.hpp"
#include "bounds.hpp"
#include "linear.hpp"
#include "pattern.hpp"

namespace tinyt::inline v0 {

namespace detail {
inline bool is_intlike(const UOp& u) { return u.dtype().scalar().is_int(); }

// x // c and x % c for x >= 0 and g dividing c: x == g*inner + rest, inner from the terms g
// divides (over g), rest the other terms and the constant. When rest stays within one multiple of
// g (k*g <= rest < (k+1)*g), x // c is (inner + k) // (c/g) and x % c is
// ((inner + k) % (c/g))*g + rest - k*g; empty when it does not.
inline UOp fold_by_part(const Linear& L, i128 c, i128 g, bool is_div) {
  Linear inner{{}, 0, L.dtype}, rest{{}, L.constant, L.dtype};
  for (const auto& t : L.terms) (t.coef % g == 0 ? inner : rest).terms.push_back(t);
  const UOp r = rest.build();
  const Bounds rb = bounds(r);
  const i128 k = floordiv128(rb.lo, g);
  if (floordiv128(rb.hi, g) != k) return {};
  inner = inner.divided_by(g);
  inner.constant = k;
  const UOp in = inner.build(), low = r + r.const_like(-k * g);
  if (g == c) return is_div ? in : low;
  const UOp parts = in.const_like(c / g);
  return is_div ? in.idiv(parts) : in.mod(parts) * in.const_like(g) + low;
}

// x // c and x % c for a constant c != 0 (C semantics).
inline UOp fold_divmod(const UOp& root) {
  const UOp& x = root.src(0);
  const bool is_div = root.op() == Ops::IDIV;
  const i128 c = root.src(1).const_int();
  if (c == 0) return {};
  if (c == 1 || c == -1) return is_div ? (c == 1 ? x : -x) : root.const_like(0);
  // trunc semantics: x / -c == -(x / c) and x % -c == x % c
  if (c < 0) return is_div ? -x.idiv(x.const_like(-c)) : x.mod(x.const_like(-c));
  const Linear L = linear_form(x);
  const bool no_wrap = L.fits();
  if (!no_wrap) return {};
  // every coefficient and the constant divisible by c: exact for any sign
  if (L.divisible_by(c)) return is_div ? L.divided_by(c).build() : root.const_like(0);
  const Bounds b = bounds(x);
  if (b.lo < 0) {
    // a value that is never positive: x / c == -((-x) / c), x % c == -((-x) % c)
    if (b.hi > 0) return {};
    UOp neg = fold_divmod(root.replace({L.negated().build(), root.src(1)}));
    return neg ? -neg : UOp{};
  }
  // from here x >= 0, where C's division is floor division
  if (!is_div && b.hi < c) return x;
  if (b.lo / c == b.hi / c)
    return is_div ? root.const_like(b.lo / c) : (x + x.const_like(-(b.lo / c) * c));
  // a part g of c that some terms share, the others staying within one multiple of g: a flipped
  // axis' (800*a + 24 - 5*b - c) // 800 is a (g = c), a max pool's (24*y + x) // 48 with x below
  // 24 is y // 2 (g = 24). (When every term shares g, the rules below go first.)
  for (const auto& t : L.terms) {
    const i128 g = gcd128(c, t.coef);
    const bool all_share = std::all_of(L.terms.begin(), L.terms.end(), [&](const auto& u) { return u.coef % g == 0; });
    if (g <= 1 || (g < c && all_share)) continue;
    if (UOp out = fold_by_part(L, c, g, is_div)) return out;
  }
  // x == q*c + r with every coefficient of r in [0, c). Only with positive coefficients: there
  // r is no larger than x, while a negative one would turn into a larger positive one.
  auto [q, r] = L.split_by(c);
  const bool positive =
      std::all_of(L.terms.begin(), L.terms.end(), [](const auto& t) { return t.coef > 0; });
  if (positive && (!q.terms.empty() || q.constant != 0)) {
    const UOp rem = r.build();
    if (bounds(rem).lo >= 0)
      return is_div ? q.build() + rem.idiv(rem.const_like(c)) : rem.mod(rem.const_like(c));
  }
  // a common factor g of c and every coefficient: divide it out (the constant's part of g too)
  if (const i128 g = L.gcd_with(c); g > 1) return fold_by_part(L, c, g, is_div);
  return {};
}

// x < c over integers: the constant moves right, a common factor divides out.
inline UOp fold_lt_const(const UOp& root) {
  const UOp& x = root.src(0);
  const Linear L = linear_form(x);
  if (!L.fits() || L.terms.empty()) return {};
  const i128 c = root.src(1).const_int() - L.constant;
  i128 g = 0;
  for (const auto& t : L.terms) g = gcd128(g, t.coef);
  if (g <= 0) return {};
  if (L.constant == 0 && g == 1) return {};
  // sum(a*t) < c  <=>  sum(a/g*t) < ceil(c/g)
  const i128 bound = c >= 0 ? (c + g - 1) / g : -((-c) / g);
  const Bounds full = dtype_range(x.dtype());
  if (bound < full.lo || bound > full.hi) return {};
  Linear lhs = L;
  lhs.constant = 0;
  return lhs.divided_by(g).build().lt(x.const_like(bound));
}

// A cast between integer dtypes that keeps every value of x (its bounds fit the target).
inline bool lossless_int_cast(const UOp& c) {
  if (c.op() != Ops::CAST || !is_intlike(c) || !is_intlike(c.src(0))) return false;
  const Bounds b = bounds(c.src(0));
  return b.lo >= dtypes::min_int(c.dtype()) && b.hi <= dtypes::max_int(c.dtype());
}
// cast(x) + c -> cast(x + c) when nothing wraps, so index math stays in one dtype
inline UOp fold_cast_add(const UOp& cast, const UOp& c) {
  if (!lossless_int_cast(cast)) return {};
  // the sum moves into x's dtype: c and every x + c must fit there as well as in the target
  const UOp& x = cast.src(0);
  const i128 k = c.const_int();
  const Bounds b = bounds(x);
  const DType from = x.dtype(), to = cast.dtype();
  const i128 lo = std::max(dtypes::min_int(from), dtypes::min_int(to)), hi = std::min(dtypes::max_int(from), dtypes::max_int(to));
  if (k < dtypes::min_int(from) || k > dtypes::max_int(from) || b.lo + k < lo || b.hi + k > hi) return {};
  return (x + x.const_like(k)).cast(to);
}
// cast(x) <cmp> c -> x <cmp> c when the cast keeps x's values and c fits x's dtype
inline UOp fold_cast_cmp(const UOp& cmp, const UOp& cast, const UOp& c) {
  if (!lossless_int_cast(cast)) return {};
  const UOp x = cast.src(0);
  const i128 v = c.const_int();
  if (v < dtypes::min_int(x.dtype()) || v > dtypes::max_int(x.dtype())) return {};
  return x.alu(cmp.op(), {x.const_like(v)});
}

inline UOp fold_max(const UOp& a, const UOp& b) {
  if (!has_bounds(a)) return {};
  if (vmin(a) >= vmax(b)) return a;
  if (vmin(b) >= vmax(a)) return b;
  return {};
}
}  // namespace detail

/// Constant folding and identities that hold for every dtype, floats included.
inline const PatternMatcher& symbolic_simple() {
  using P = UPat;
  static const PatternMatcher pm{{
      // an op on constants is a constant
      {P(GroupOp::ALU | OpSet{Ops::CAST, Ops::BITCAST}).named("x").each_src(P::cvar()),
       [](auto& m) { return fold_constants(m["x"].op(), m["x"].dtype(), m["x"].src()); }},
      // x*1 -> x, x/1 -> x (exact for floats too)
      {P::var("x") * 1, [](auto& m) { return m["x"]; }},
      {P(Ops::FDIV, {P::var("x"), P::cnst(1)}), [](auto& m) { return m["x"]; }},
      // casting to the same dtype is nothing
      {P(Ops::CAST, {P::var("x")}).named("c"),
       [](auto& m) { return m["c"].dtype() == m["x"].dtype() ? m["x"] : UOp{}; }},
      // where with a known or irrelevant condition
      {P::cvar("c").where(P::var("a"), P::var("b")),
       [](auto& m) { return m["c"].const_int() ? m["a"] : m["b"]; }},
      {P::var().where(P::var("a"), P::var("a")), [](auto& m) { return m["a"]; }},
      // where(c, where(c, a, b), d) -> where(c, a, d) and where(c, a, where(c, b, d)) -> where(c,
      // a, d)
      {P::var("c").where(P::var("c").where(P::var("a"), P::var()), P::var("d")),
       [](auto& m) { return m["c"].where(m["a"], m["d"]); }},
      {P::var("c").where(P::var("a"), P::var("c").where(P::var(), P::var("d"))),
       [](auto& m) { return m["c"].where(m["a"], m["d"]); }},
      // where(!c, a, b) -> where(c, b, a)
      {P(Ops::CMPNE, {P::var("c"), P::cnst(1)}).where(P::var("a"), P::var("b")),
       [](auto& m) { return m["c"].dtype().is_bool() ? m["c"].where(m["b"], m["a"]) : UOp{}; }},
      // boolean algebra
      {P::var("x", {dtypes::bool_}) & P::cnst(1), [](auto& m) { return m["x"]; }},
      {P::var("x", {dtypes::bool_}) & P::cnst(0), [](auto& m) { return m["x"].const_like(false); }},
      {P::var("x", {dtypes::bool_}) | P::cnst(0), [](auto& m) { return m["x"]; }},
      {P::var("x", {dtypes::bool_}) | P::cnst(1), [](auto& m) { return m["x"].const_like(true); }},
      {P::var("x", {dtypes::bool_}) ^ P::cnst(0), [](auto& m) { return m["x"]; }},
      {P::var("x") & P::var("x"), [](auto& m) { return m["x"]; }},
      {P::var("x") | P::var("x"), [](auto& m) { return m["x"]; }},
      {P::var("x", {dtypes::bool_}).ne(P::cnst(0)), [](auto& m) { return m["x"]; }},
      {P::var("x", {dtypes::bool_}).eq(P::cnst(1)), [](auto& m) { return m["x"]; }},
      {P::var("x", {dtypes::bool_}).eq(P::cnst(0)), [](auto& m) { return m["x"].logical_not(); }},
      {P::var("c").where(P::cnst(1), P::cnst(0)).dtype({dtypes::bool_}),
       [](auto& m) { return m["c"]; }},
      {P::var("c").where(P::cnst(0), P::cnst(1)).dtype({dtypes::bool_}),
       [](auto& m) { return m["c"].logical_not(); }},
      {P(Ops::CMPNE, {P(Ops::CMPNE, {P::var("x", {dtypes::bool_}), P::cnst(1)}), P::cnst(1)}),
       [](auto& m) { return m["x"]; }},
  }};
  return pm;
}

/// The integer rules: bounds, canonical sums (index math), div/mod folding, comparisons.
inline const PatternMatcher& symbolic_int() {
  using P = UPat;
  auto ints = [](const UOp& u) { return detail::is_intlike(u); };
  static const PatternMatcher pm{{
      // an integer op whose bounds pin one value is that value
      {P(GroupOp::ALU).named("x"),
       [](auto& m) {
         const UOp& x = m["x"];
         if (!has_bounds(x) || x.dtype().count() != 1) return UOp{};
         const Bounds b = bounds(x);
         return b.is_const() ? x.const_like(b.lo) : UOp{};
       }},
      // index sums, differences, negations and products by constants in canonical linear form
      // (not data: flattening a data sum would copy its shared terms into every user)
      {P(OpSet{Ops::ADD, Ops::SUB, Ops::NEG, Ops::MUL}).named("x"),
       [](auto& m) {
         return m["x"].dtype().scalar().is_index() ? canonical_linear(m["x"]) : UOp{};
       }},
      // other integers: x+0 -> x, (x+c1)+c2 -> x+(c1+c2)
      {P::var("x") + 0, [=](auto& m) { return ints(m["x"]) ? m["x"] : UOp{}; }},
      {(P::var("x") + P::cvar("c1")) + P::cvar("c2"),
       [=](auto& m) {
         if (!ints(m["x"])) return UOp{};
         return m["x"] + fold_constants(Ops::ADD, m["c1"].dtype(), {m["c1"], m["c2"]});
       }},
      // integer identities that would be wrong for floats (NaN, inf, -0.0)
      {P::var("x") * 0, [=](auto& m) { return ints(m["x"]) ? m["x"].const_like(0) : UOp{}; }},
      {P::var("x").lt(P::var("x")),
       [=](auto& m) { return ints(m["x"]) ? UOp::const_(dtypes::bool_, false) : UOp{}; }},
      {P::var("x").ne(P::var("x")),
       [=](auto& m) { return ints(m["x"]) ? UOp::const_(dtypes::bool_, false) : UOp{}; }},
      {P::var("x").eq(P::var("x")),
       [=](auto& m) { return ints(m["x"]) ? UOp::const_(dtypes::bool_, true) : UOp{}; }},
      {P::var("x").maximum(P::var("x")), [](auto& m) { return m["x"]; }},
      {P::var("a").maximum(P::var("b")), [](auto& m) { return detail::fold_max(m["a"], m["b"]); }},
      // x//x -> 1 and x%x -> 0 where x is never 0
      {P::var("x").idiv(P::var("x")),
       [=](auto& m) {
         return ints(m["x"]) && (vmin(m["x"]) > 0 || vmax(m["x"]) < 0) ? m["x"].const_like(1)
                                                                       : UOp{};
       }},
      {P(Ops::MOD, {P::var("x"), P::var("x")}),
       [=](auto& m) {
         return ints(m["x"]) && (vmin(m["x"]) > 0 || vmax(m["x"]) < 0) ? m["x"].const_like(0)
                                                                       : UOp{};
       }},
      // (x//a)//b -> x//(a*b) for a, b > 0 (C division composes)
      {P::var("x").idiv(P::cvar("a")).idiv(P::cvar("b")),
       [=](auto& m) {
         const i128 a = m["a"].const_int(), b = m["b"].const_int();
         if (!ints(m["x"]) || a <= 0 || b <= 0 || a * b > dtypes::max_int(m["x"].dtype()))
           return UOp{};
         return m["x"].idiv(m["x"].const_like(a * b));
       }},
      // (x%(a*k))%a -> x%a for a, k > 0 (C's remainder keeps the dividend's sign both times)
      {P(Ops::MOD, {P(Ops::MOD, {P::var("x"), P::cvar("ak")}), P::cvar("a")}),
       [=](auto& m) {
         const i128 ak = m["ak"].const_int(), a = m["a"].const_int();
         if (!ints(m["x"]) || a <= 0 || ak <= 0 || ak % a != 0) return UOp{};
         return m["x"].mod(m["a"]);
       }},
      // division and remainder by a constant
      {P(OpSet{Ops::IDIV, Ops::MOD}, {P::var("x"), P::cvar("c")}).named("d"),
       [=](auto& m) { return ints(m["x"]) ? detail::fold_divmod(m["d"]) : UOp{}; }},
      // integer casts that keep values move out of the way of index math
      {P::var("x").cast().named("cast") + P::cvar("c"),
       [](auto& m) { return detail::fold_cast_add(m["cast"], m["c"]); }},
      {P(GroupOp::Comparison, {P::var("x").cast().named("cast"), P::cvar("c")}).named("cmp"),
       [](auto& m) { return detail::fold_cast_cmp(m["cmp"], m["cast"], m["c"]); }},
      // comparisons against a constant in canonical form
      {P::var("x").lt(P::cvar("c")).named("cmp"),
       [=](auto& m) { return ints(m["x"]) ? detail::fold_lt_const(m["cmp"]) : UOp{}; }},
  }};
  return pm;
}

/// symbolic_simple and symbolic_int: what `simplify` runs.
inline const PatternMatcher& symbolic() {
  static const PatternMatcher pm = symbolic_simple() + symbolic_int();
  return pm;
}

/// `u` simplified to its canonical form; simplify(simplify(u)) == simplify(u).
// not recorded by VIZ: it runs on small index expressions thousands of times per schedule
inline UOp simplify(const UOp& u) { return detail::graph_rewrite_impl(u, symbolic(), false, nullptr, nullptr, nullptr); }

/// The value of an integer expression whose leaves (ranges, variables) have values in `at`:
/// constants and integer ALU ops over them.
inline int64_t evaluate(const UOp& u, const std::unordered_map<const UOpNode*, int64_t>& at) {
  if (const auto it = at.find(u.get()); it != at.end()) return it->second;
  if (u.is_const()) return static_cast<int64_t>(u.const_int());
  if (u.op() == Ops::RANGE || u.op() == Ops::DEFINE_VAR) throw InternalError(detail::cat("evaluate: no value for a ", op_name(u.op())));
  std::vector<i128> v;
  for (const UOp& s : u.src()) v.push_back(evaluate(s, at));
  const std::optional<i128> r = detail::fold_int(u.op(), u.dtype(), v);
  if (!r) throw InternalError(detail::cat("evaluate: ", op_name(u.op()), " of ", u.dtype().name(), " does not evaluate"));
  return static_cast<int64_t>(*r);
}

}  // namespace tinyt::inline v0
