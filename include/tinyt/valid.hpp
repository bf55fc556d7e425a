// Simplification under a validity mask. A padded load reads `valid ? buf[idx] : 0`; inside it,
// idx only needs to be right where `valid` holds, so the bounds that valid's clauses put on
// variables (and on whole sub-expressions) let idx simplify further, and clauses that other
// clauses imply can be dropped.
#pragma once

#include <map>

#include "symbolic.hpp"

namespace tinyt::inline v0 {

namespace detail {
/// The clauses of an AND chain.
inline std::vector<UOp> and_clauses(const UOp& valid) {
  std::vector<UOp> out, stack{valid};
  while (!stack.empty()) {
    UOp c = stack.back();
    stack.pop_back();
    if (c.op() == Ops::AND && c.dtype().is_bool())
      stack.push_back(c.src(1)), stack.push_back(c.src(0));
    else
      out.push_back(c);
  }
  return out;
}

// Reads one clause as a bound on an integer expression: e < c, c < e, and their negations
// (a negation is `clause != true`, how logical_not is built).
inline bool clause_bound(const UOp& clause, UOp& e, Bounds& b) {
  bool negated = false;
  UOp cmp = clause;
  if (cmp.op() == Ops::CMPNE && cmp.src(1).is_const() && cmp.src(1).dtype().is_bool() &&
      cmp.src(1).const_int() == 1)
    cmp = cmp.src(0), negated = true;
  if (cmp.op() != Ops::CMPLT || !cmp.src(0).dtype().scalar().is_int()) return false;
  const UOp &l = cmp.src(0), &r = cmp.src(1);
  const Bounds full{dtypes::min_int(l.dtype()), dtypes::max_int(l.dtype())};
  if (r.is_const() && !l.is_const()) {  // l < c  (negated: l >= c)
    e = l, b = negated ? Bounds{r.const_int(), full.hi} : Bounds{full.lo, r.const_int() - 1};
    return true;
  }
  if (l.is_const() && !r.is_const()) {  // c < r  (negated: r <= c)
    e = r, b = negated ? Bounds{full.lo, l.const_int()} : Bounds{l.const_int() + 1, full.hi};
    return true;
  }
  return false;
}

// Bounds the clauses imply, on whole expressions and on the atoms of linear ones.
inline std::vector<std::pair<UOp, Bounds>> implied_bounds(const std::vector<UOp>& clauses) {
  std::map<const UOpNode*, std::pair<UOp, Bounds>> found;
  auto tighten = [&](const UOp& e, Bounds b) {
    auto [it, fresh] = found.try_emplace(e.get(), e, bounds(e));
    Bounds& cur = it->second.second;
    cur = {std::max(cur.lo, b.lo), std::min(cur.hi, b.hi)};
  };
  for (const UOp& c : clauses) {
    UOp e;
    Bounds b{};
    if (!clause_bound(c, e, b)) continue;
    tighten(e, b);
    // lo <= sum(a*t) + k <= hi bounds each atom t by what the other terms can reach
    const Linear L = linear_form(e);
    if (L.terms.size() < 2 && (L.terms.empty() || L.terms[0].atom == e)) continue;
    const Bounds eb = found.at(e.get()).second;
    for (size_t i = 0; i < L.terms.size(); ++i) {
      i128 others_lo = L.constant, others_hi = L.constant;
      bool unbounded = false;
      for (size_t j = 0; j < L.terms.size(); ++j) {
        if (j == i) continue;
        const Bounds tb = bounds(L.terms[j].atom);
        unbounded |= !small(tb);
        const i128 a = L.terms[j].coef;
        others_lo += std::min(a * tb.lo, a * tb.hi), others_hi += std::max(a * tb.lo, a * tb.hi);
      }
      const i128 a = L.terms[i].coef, up = eb.hi - others_lo,
                 down = eb.lo - others_hi;  // down <= a*t <= up
      const Bounds full{dtypes::min_int(e.dtype()), dtypes::max_int(e.dtype())};
      if (unbounded || (eb.hi == full.hi && eb.lo == full.lo)) continue;
      Bounds tb = bounds(L.terms[i].atom);
      if (a > 0) {
        if (eb.hi != full.hi) tb.hi = std::min(tb.hi, floordiv128(up, a));
        if (eb.lo != full.lo) tb.lo = std::max(tb.lo, -floordiv128(-down, a));
      } else {
        if (eb.hi != full.hi) tb.lo = std::max(tb.lo, -floordiv128(up, -a));
        if (eb.lo != full.lo) tb.hi = std::min(tb.hi, floordiv128(-down, -a));
      }
      tighten(L.terms[i].atom, tb);
    }
  }
  std::vector<std::pair<UOp, Bounds>> out;
  for (auto& [k, v] : found) out.push_back(v);
  return out;
}

inline std::atomic<uint64_t>& valid_var_counter() {
  static std::atomic<uint64_t> n{0};
  return n;
}
}  // namespace detail

/// `x` simplified where `valid` holds: the value is unchanged wherever valid is true. An
/// impossible valid (a clause can never hold) returns x unchanged.
inline UOp uop_given_valid(const UOp& valid, const UOp& x_in) {
  const UOp x = simplify(x_in);
  std::unordered_map<const UOpNode*, UOp> to_var, to_expr;
  for (auto& [e, b] : detail::implied_bounds(detail::and_clauses(valid))) {
    if (b.lo > b.hi) return x;
    const Bounds cur = bounds(e);
    if (b.lo <= cur.lo && b.hi >= cur.hi) continue;  // nothing learned
    // a fresh variable with the tighter range stands in for e while x simplifies
    const std::string name = "__valid" + std::to_string(detail::valid_var_counter()++);
    UOp v = UOp::variable(name, static_cast<int64_t>(b.lo), static_cast<int64_t>(b.hi), e.dtype());
    to_var[e.get()] = v;
    to_expr[v.get()] = e;
  }
  if (to_var.empty()) return x;
  // a sum that contains a bounded sum e (times some k) as a part is rewritten as k*e + the
  // rest, so the bounds of e reach it: 7*r1 + 7*r4 + r2 - 8 with 1 <= r1 + r4 is 7*(r1 + r4) + ...
  std::unordered_map<const UOpNode*, UOp> map = to_var;
  for (const UOp& u : toposort(x)) {
    if (u.op() != Ops::ADD || map.count(u.get())) continue;
    Linear rest = linear_form(u);
    UOp parts;
    for (const auto& [e_node, v] : to_var) {
      const UOp e = to_expr.at(v.get());
      if (e.op() != Ops::ADD || e == u) continue;
      const Linear le = linear_form(e);
      auto find = [&](const UOp& atom) {
        return std::find_if(rest.terms.begin(), rest.terms.end(), [&](const auto& t) { return t.atom == atom; });
      };
      auto first = find(le.terms[0].atom);
      if (first == rest.terms.end() || first->coef % le.terms[0].coef != 0) continue;
      const i128 k = first->coef / le.terms[0].coef;
      const bool contains = std::all_of(le.terms.begin(), le.terms.end(), [&](const auto& t) {
        auto it = find(t.atom);
        return it != rest.terms.end() && it->coef == k * t.coef;
      });
      if (!contains) continue;
      for (const auto& t : le.terms) rest.terms.erase(find(t.atom));
      rest.constant -= k * le.constant;
      const UOp part = k == 1 ? v : v * v.const_like(k);
      parts = parts ? parts + part : part;
    }
    if (parts) map[u.get()] = parts + rest.build();
  }
  return simplify(substitute(simplify(substitute(x, map)), to_expr));
}

/// A validity mask with the clauses that the others imply removed (false when one can never hold).
inline UOp simplify_valid(const UOp& valid) {
  std::vector<UOp> clauses = detail::and_clauses(simplify(valid));
  for (size_t i = 0; i < clauses.size();) {
    UOp others;
    for (size_t j = 0; j < clauses.size(); ++j)
      if (j != i) others = others ? (others & clauses[j]) : clauses[j];
    UOp c = others ? uop_given_valid(others, clauses[i]) : simplify(clauses[i]);
    if (c.is_const() && !c.const_int()) return c;
    if (c.is_const())
      clauses.erase(clauses.begin() + static_cast<std::ptrdiff_t>(i));
    else
      clauses[i++] = c;
  }
  if (clauses.empty()) return UOp::const_(valid.dtype(), true);
  UOp out = clauses[0];
  for (size_t i = 1; i < clauses.size(); ++i) out = out & clauses[i];
  return out;
}

}  // namespace tinyt::inline v0
