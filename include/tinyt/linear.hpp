// Linear forms of integer expressions: sum(coef * atom) + constant. Sums, differences, negations
// and products by constants are flattened into one, like terms merged, and rebuilt in one
// canonical order, so equal sums become the same UOp. Div/mod folding reads coefficients here.
#pragma once

#include "bounds.hpp"
#include "uop.hpp"

namespace tinyt::inline v0 {

/// Greatest common divisor of |a| and |b| (gcd(0, b) == |b|).
inline i128 gcd128(i128 a, i128 b) {
  a = a < 0 ? -a : a, b = b < 0 ? -b : b;
  while (b != 0) a = std::exchange(b, a % b);
  return a;
}
/// Floor division of integers (C's rounds toward zero).
inline i128 floordiv128(i128 a, i128 b) {
  const i128 q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// sum(coef * atom) + constant over the integers of one dtype.
struct Linear {
  struct Term {
    UOp atom;
    i128 coef;
  };
  std::vector<Term> terms;  // distinct atoms, in structural order, no zero coefficients
  i128 constant = 0;
  DType dtype;

  /// The expression, rebuilt in canonical form: terms in order, the constant last.
  UOp build() const {
    UOp out;
    for (const Term& t : terms) {
      UOp term = t.coef == 1 ? t.atom : t.atom * t.atom.const_like(t.coef);
      out = out ? out + term : term;
    }
    if (!out) return UOp::const_(dtype, constant);
    return constant == 0 ? out : out + out.const_like(constant);
  }
  /// True when the value equals the exact integer sum: nothing in it wraps around its dtype.
  bool fits() const {
    const Bounds b = bounds(build()), full{dtypes::min_int(dtype), dtypes::max_int(dtype)};
    return !(b.lo == full.lo && b.hi == full.hi);
  }
  bool divisible_by(i128 c) const {
    if (constant % c != 0) return false;
    return std::all_of(terms.begin(), terms.end(), [&](const Term& t) { return t.coef % c == 0; });
  }
  /// Each coefficient and the constant divided by c (they must be multiples of it).
  Linear divided_by(i128 c) const {
    Linear out = *this;
    for (Term& t : out.terms) t.coef /= c;
    out.constant /= c;
    return out;
  }
  Linear negated() const {
    Linear out = *this;
    for (Term& t : out.terms) t.coef = -t.coef;
    out.constant = -out.constant;
    return out;
  }
  /// (q, r) with this == q*c + r and every coefficient and the constant of r in [0, c).
  std::pair<Linear, Linear> split_by(i128 c) const {
    Linear q{{}, floordiv128(constant, c), dtype}, r{{}, 0, dtype};
    r.constant = constant - q.constant * c;
    for (const Term& t : terms) {
      const i128 qc = floordiv128(t.coef, c), rc = t.coef - qc * c;
      if (qc != 0) q.terms.push_back({t.atom, qc});
      if (rc != 0) r.terms.push_back({t.atom, rc});
    }
    return {q, r};
  }
  /// gcd of c and every coefficient (the constant left out).
  i128 gcd_with(i128 c) const {
    for (const Term& t : terms) c = gcd128(c, t.coef);
    return c;
  }
};

namespace detail {
// a*b wrapped to the dtype (index to int64, what it is lowered to), without overflowing i128
inline i128 mul_wrap(i128 a, i128 b, DType dt) {
  const i128 p = static_cast<i128>(static_cast<u128>(a) * static_cast<u128>(b));
  return wrap_int(p, dt.scalar().is_index() ? dtypes::int64 : dt);
}

inline bool is_const_mul(const UOp& u) {
  return u.op() == Ops::MUL && (u.src(1).is_const() || u.src(0).is_const());
}

// Adds coef * u to the form, flattening through the ops that keep it linear.
inline void add_linear(Linear& L, const UOp& u, i128 coef) {
  std::vector<std::pair<const UOp*, i128>> stack{{&u, coef}};
  while (!stack.empty()) {
    auto [x, c] = stack.back();
    stack.pop_back();
    switch (x->op()) {
      case Ops::ADD:
        stack.push_back({&x->src(0), c}), stack.push_back({&x->src(1), c});
        continue;
      case Ops::SUB:
        stack.push_back({&x->src(0), c}), stack.push_back({&x->src(1), -c});
        continue;
      case Ops::NEG:
        stack.push_back({&x->src(0), -c});
        continue;
      case Ops::CONST:
        L.constant += mul_wrap(c, x->const_int(), L.dtype);
        continue;
      case Ops::MUL:
        if (x->src(1).is_const()) {
          stack.push_back({&x->src(0), mul_wrap(c, x->src(1).const_int(), L.dtype)});
          continue;
        }
        if (x->src(0).is_const()) {
          stack.push_back({&x->src(1), mul_wrap(c, x->src(0).const_int(), L.dtype)});
          continue;
        }
        break;
      default:
        break;
    }
    L.terms.push_back({*x, c});
  }
}

// Sorts the terms, merges equal atoms, wraps coefficients to the dtype and drops zeros.
inline void normalize(Linear& L) {
  std::stable_sort(
      L.terms.begin(), L.terms.end(),
      [](const Linear::Term& a, const Linear::Term& b) { return structural_less(a.atom, b.atom); });
  std::vector<Linear::Term> merged;
  for (Linear::Term& t : L.terms) {
    if (!merged.empty() && merged.back().atom == t.atom)
      merged.back().coef += t.coef;
    else
      merged.push_back(std::move(t));
  }
  L.terms.clear();
  for (Linear::Term& t : merged)
    if ((t.coef = wrap_int(t.coef, L.dtype)) != 0) L.terms.push_back(std::move(t));
  L.constant = wrap_int(L.constant, L.dtype);
}

// (x%c)*k + (x//c)*(k*c) is x*k: C guarantees x == (x/c)*c + x%c for every x.
inline bool recombine_divmod(Linear& L) {
  for (size_t i = 0; i < L.terms.size(); ++i) {
    const UOp m = L.terms[i].atom;
    if (m.op() != Ops::MOD || !m.src(1).is_const() || m.src(1).const_int() == 0) continue;
    for (size_t j = 0; j < L.terms.size(); ++j) {
      const UOp& d = L.terms[j].atom;
      if (d.op() != Ops::IDIV || !(d.src(0) == m.src(0)) || !(d.src(1) == m.src(1))) continue;
      const i128 k = L.terms[i].coef;
      if (L.terms[j].coef != k * m.src(1).const_int()) continue;
      L.terms.erase(L.terms.begin() + static_cast<std::ptrdiff_t>(std::max(i, j)));
      L.terms.erase(L.terms.begin() + static_cast<std::ptrdiff_t>(std::min(i, j)));
      add_linear(L, m.src(0), k);
      return true;
    }
  }
  return false;
}
}  // namespace detail

/// The linear form of an integer expression.
inline Linear linear_form(const UOp& u) {
  Linear L{{}, 0, u.dtype()};
  detail::add_linear(L, u, 1);
  detail::normalize(L);
  while (detail::recombine_divmod(L)) detail::normalize(L);
  return L;
}

/// An integer ADD/SUB/NEG/MUL in canonical form: a linear sum, or a product of atoms in
/// structural order times a constant.
inline UOp canonical_linear(const UOp& u) {
  if (u.op() == Ops::MUL && !detail::is_const_mul(u)) {
    std::vector<UOp> factors;
    i128 k = 1;
    std::vector<const UOp*> stack{&u};
    while (!stack.empty()) {
      const UOp* x = stack.back();
      stack.pop_back();
      if (x->op() == Ops::MUL)
        stack.push_back(&x->src(0)), stack.push_back(&x->src(1));
      else if (x->is_const())
        k = detail::mul_wrap(k, x->const_int(), u.dtype());
      else
        factors.push_back(*x);
    }
    if (factors.empty()) return u.const_like(k);
    std::stable_sort(factors.begin(), factors.end(), structural_less);
    UOp product = factors[0];
    for (size_t i = 1; i < factors.size(); ++i) product = product * factors[i];
    return k == 1 ? product : linear_form(product * product.const_like(k)).build();
  }
  return linear_form(u).build();
}

}  // namespace tinyt::inline v0
