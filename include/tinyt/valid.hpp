// Simplification under a validity mask. A padded load reads `valid ? buf[idx] : 0`; inside it,
// idx only needs to be right where `valid` holds, so the bounds that valid's clauses put on
// variables (and on whole sub-expressions) let idx simplify further, and clauses that other
// clauses imply can be dropped.
#pragma once

#include <map>
#include <optional>

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

namespace detail {
// X = c*Q + R with R's range inside [lo_min, c): each coefficient of X (and its constant) is
// split as c*q + r with r either in [0, c) or in (-c, 0); the first choice whose R fits wins.
inline std::optional<std::pair<UOp, UOp>> split_wrapping(const UOp& x, i128 c, i128 lo_min) {
  const Linear L = linear_form(x);
  const size_t n = L.terms.size() + 1;  // the constant is a part too
  if (n > 8) return std::nullopt;
  for (uint32_t choice = 0; choice < (1u << n); ++choice) {
    Linear q{{}, 0, L.dtype}, r{{}, 0, L.dtype};
    auto part = [&](i128 coef, size_t bit, i128& qc, i128& rc) {
      qc = floordiv128(coef, c), rc = coef - qc * c;
      if (rc != 0 && (choice >> bit & 1)) rc -= c, qc += 1;
    };
    bool used_every_bit = true;  // a choice that flips a part with nothing to flip repeats another
    for (size_t i = 0; i < L.terms.size(); ++i) {
      i128 qc, rc;
      part(L.terms[i].coef, i, qc, rc);
      used_every_bit &= !(choice >> i & 1) || L.terms[i].coef % c != 0;
      if (qc != 0) q.terms.push_back({L.terms[i].atom, qc});
      if (rc != 0) r.terms.push_back({L.terms[i].atom, rc});
    }
    part(L.constant, n - 1, q.constant, r.constant);
    if (!used_every_bit || ((choice >> (n - 1) & 1) && L.constant % c == 0)) continue;
    const UOp rest = simplify(r.build());
    const Bounds b = bounds(rest);
    if (b.lo >= lo_min && b.hi < c) return std::pair{simplify(q.build()), rest};
  }
  return std::nullopt;
}
}  // namespace detail

/// `valid` and `x` with the modulos that `valid` unwraps taken out. A clause (X % c) < b says more
/// than a bound when X = c*Q + R with R in [b - c, c): where R < 0, X % c is R + c >= b and the
/// clause fails, so where it holds X % c is R, X // c is Q, and the clause is 0 <= R < b. The
/// overlapping windows of a pool produce these: a convolution's input gradient reads
/// (iy + 12*ky) % 13 < 8, which is 0 <= iy - ky < 8, and its address turns linear.
inline std::pair<UOp, UOp> unwrap_mod_clauses(const UOp& valid, const UOp& x) {
  struct Unwrapped {
    UOp x;
    i128 c;
    UOp q, r;
  };
  std::vector<Unwrapped> found;
  std::unordered_map<const UOpNode*, UOp> clause_map;
  for (const UOp& clause : detail::and_clauses(valid)) {
    if (clause.op() != Ops::CMPLT || clause.src(0).op() != Ops::MOD || !clause.src(0).src(1).is_const() ||
        !clause.src(1).is_const())
      continue;
    const UOp& m = clause.src(0);
    const i128 c = m.src(1).const_int(), b = clause.src(1).const_int();
    if (c <= 1 || b <= 0 || b >= c || bounds(m.src(0)).lo < 0) continue;
    auto split = detail::split_wrapping(m.src(0), c, b - c);
    if (!split || split->second == m.src(0)) continue;  // nothing wraps: plain bounds do the rest
    found.push_back({m.src(0), c, split->first, split->second});
    const UOp& r = split->second;
    clause_map[clause.get()] = r.const_like(-1).lt(r) & r.lt(r.const_like(b));
  }
  if (found.empty()) return {valid, x};
  // the modulos and divisions of an unwrapped X, and its clauses, replaced where they stand
  auto unwrap = [&](const UOp& root) {
    std::unordered_map<const UOpNode*, UOp> map = clause_map;
    for (const UOp& u : toposort(root)) {
      if ((u.op() != Ops::MOD && u.op() != Ops::IDIV) || !u.src(1).is_const()) continue;
      const i128 d = u.src(1).const_int();
      for (const Unwrapped& f : found) {
        if (u.op() == Ops::MOD && d == f.c && u.src(0) == f.x) {
          map[u.get()] = f.r;
          break;
        }
        // (m*X + S) // (m*c) is X // c when 0 <= S < m
        if (u.op() == Ops::IDIV && d % f.c == 0) {
          const i128 mult = d / f.c;
          const Bounds rest = bounds(simplify(u.src(0) - f.x * f.x.const_like(mult)));
          if (rest.lo >= 0 && rest.hi < mult) {
            map[u.get()] = f.q;
            break;
          }
        }
      }
    }
    return simplify(substitute(root, map));
  };
  return {unwrap(valid), unwrap(x)};
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
