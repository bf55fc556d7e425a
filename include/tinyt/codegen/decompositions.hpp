// Decompositions: EXP2, LOG2 and SIN rewritten into ALU ops, bit casts and integer shifts, so a
// kernel that uses them has no libm call left and the C compiler can vectorize it.
//
// The algorithms are the classic ones (as in SLEEF, fdlibm and tinygrad's transcendental.py):
//   exp2  x = q + r with q = rint(x), |r| <= 1/2; 2^r by a polynomial; times 2^q built from its
//         exponent bits, in two steps so the denormal range rounds once and correctly.
//   log2  x = 2^e * m with m in [sqrt(1/2), sqrt(2)) read from the bits; log(m) from s = f/(2+f)
//         (f = m-1) as fdlibm does, its leading part split by a bit mask so the scaling by 1/ln2
//         and the sum with e lose nothing.
//   sin   computed in float64 for every dtype: x = q*pi/2 + r by Cody-Waite with a 4-part pi/2
//         (the first three parts have 32 bits, so q*part is exact for |q| < 2^21), the tail of r
//         kept for float64; a sin or cos polynomial on |r| <= pi/4 by quadrant.
// float32 and float64 compute in their own dtype (sin: in float64); float16 and bfloat16 compute
// in float32 and round once at the end (the C renderer would round bfloat16 after every op).
//
// Accuracy against long double libm. tests/test_decompositions.cpp checks 2 ulp on every run over
// 2^20 bit patterns spread over each float32 and float64 domain plus dense ranges (denormals, the
// edges of overflow, next to 1, next to multiples of pi/2). tools/measure_decompositions.cpp
// measures float32 by hand, over all 2^32 inputs or a spread subset. With the polynomials fused
// (both CPU backends give the same bits), over 2^28 inputs (one in every 16 bit patterns): exp2
// within 0.858 ulp (at x = -0.4967), log2 within 0.784 (at 1.38396), sin within 0.508 for
// |x| <= 3.2e6 (2^21 * pi/2); 2 minutes in all on one core. (Before the polynomials were fused,
// over all 2^32 inputs: log2 0.841 ulp, sin 0.509; exp2 0.86 on 2^28.) Past |x| = 3.2e6 sin's
// products q*part round and the absolute error grows up to about |x| * 2^-53; from |x| >= 2^50
// on sin is NaN, since rint(x*2/pi) is no longer exact there (a Payne-Hanek reduction would be
// needed). Special values are libm's: exp2(-inf) = 0,
// exp2(inf) = inf, log2(0) = -inf, log2(x < 0) = NaN, log2(inf) = inf, sin(+-inf) = NaN, sin(-0.0)
// = -0.0, NaN in NaN out.
//
// Polynomials are evaluated with fused multiply-adds (MULACC), one instruction and one rounding
// on every device (the elementwise benchmark's chain, which ends in exp2: 39 -> 44 GB/s with
// exp2's NaN passed through its clamp instead of added back). Every other step stays correct
// whether or not a compiler contracts a*b+c into an FMA (the renderers ask for no contraction):
// exact splits are made with bit masks or by products that are exact anyway, never by Veltkamp
// splitting. Rounding to an integer adds 1.5*2^mantissa (no TRUNC, which is a libm call), and
// integer work is unsigned so nothing can overflow into undefined behaviour in C. A WHERE never
// chooses between two float computations: C's `?:` only evaluates one arm, and GCC will not
// if-convert (so not vectorize) an arm that may raise a float exception; special values are added
// to the result, a choice of results is a bit mask.
#pragma once

#include <cmath>
#include <initializer_list>

#include "../bounds.hpp"
#include "../pattern.hpp"

namespace tinyt::inline v0 {
namespace codegen {

namespace detail {
/// The bit layout of a float dtype: the unsigned int of its size, mantissa bits, exponent bias.
struct FloatBits {
  DType u;
  int mantissa, bias;
};
inline FloatBits float_bits(DType dt) {
  return dt.scalar() == dtypes::float64 ? FloatBits{dtypes::uint64, 52, 1023}
                                        : FloatBits{dtypes::uint32, 23, 127};
}
inline UOp fconst(DType dt, double v) { return UOp::const_(dt, v); }
inline UOp uconst(DType dt, uint64_t v) { return UOp::const_(dt, static_cast<i128>(v)); }
/// The bits of a float constant, as the unsigned int of its size.
inline uint64_t bits_of(DType dt, double v) {
  return dt.scalar() == dtypes::float64 ? std::bit_cast<uint64_t>(v)
                                        : std::bit_cast<uint32_t>(static_cast<float>(v));
}
/// a*b + c rounded once (MULACC): as exact as a*b+c or more, one instruction on every device.
inline UOp fused_mul_add(const UOp& a, const UOp& b, const UOp& c) {
  return UOp(Ops::MULACC, a.dtype(), {a, b, c});
}
/// c[0]*x^(n-1) + ... + c[n-1], by Horner's rule with fused multiply-adds.
inline UOp horner(const UOp& x, std::initializer_list<double> c) {
  UOp acc = x.const_like(*c.begin());
  for (auto it = c.begin() + 1; it != c.end(); ++it) acc = fused_mul_add(acc, x, x.const_like(*it));
  return acc;
}
/// rint(x) for |x| < 2^(mantissa-1), and the sum x + 1.5*2^mantissa whose low bits hold it.
inline std::pair<UOp, UOp> round_to_int(const UOp& x) {
  const UOp magic = x.const_like(1.5 * std::ldexp(1.0, float_bits(x.dtype()).mantissa));
  const UOp t = x + magic;
  return {t - magic, t};
}
/// 2^k for the float whose biased exponent k is given as unsigned bits.
inline UOp pow2_from_biased(const UOp& k, DType dt) {
  return (k << k.const_like(float_bits(dt).mantissa)).bitcast(dt);
}

// 2^x for float32 or float64.
inline UOp xexp2(const UOp& x) {
  const DType dt = x.dtype();
  const FloatBits fb = float_bits(dt);
  const bool f64 = dt.scalar() == dtypes::float64;
  // below lo every result rounds to 0, from hi on to inf; NaN passes both comparisons and
  // stays NaN through every float step (times whatever its bits make of the scale factors)
  const double lo = -(fb.bias + fb.mantissa + 2), hi = fb.bias + 2;
  UOp xc = x.lt(x.const_like(lo)).where(x.const_like(lo), x);
  xc = x.const_like(hi).lt(xc).where(x.const_like(hi), xc);
  auto [q, t] = round_to_int(xc);
  const UOp r = xc - q;  // exact, |r| <= 1/2
  // 2^r = 1 + r*P(r): Chebyshev fits on [-1/2, 1/2], relative error 2^-27 (f32) and 2^-56 (f64)
  const UOp p = fused_mul_add(
      r,
      f64 ? horner(r,
                        {4.454964371269296789e-10, 7.072593027878996568e-9, 1.017806242697692342e-7,
                         1.321544255252229148e-6, 1.525273382986708059e-5, 1.540353044179413737e-4,
                         1.333355814641691688e-3, 9.618129107606853946e-3, 5.550410866482159437e-2,
                         2.402265069591009827e-1, 6.931471805599453094e-1})
               : horner(r, {1.545318282995974059e-4, 1.339088633210669762e-3,
                            9.618082519990466878e-3, 5.550357071152507323e-2,
                            2.402265076064580726e-1, 6.931471880352002849e-1}),
      x.const_like(1.0));
  // q + off as unsigned bits (off = 2*(bias+1) keeps it positive); 2^q = 2^q1 * 2^q2 with
  // q1 = floor(q/2), so both factors are normal and only the last product rounds. With h = qo/2
  // the biased exponents are q1 + bias = h - 1 and q2 + bias = qo - h - 1.
  const uint64_t off = 2 * static_cast<uint64_t>(fb.bias + 1);
  const UOp qo =
      t.bitcast(fb.u) - uconst(fb.u, bits_of(dt, 1.5 * std::ldexp(1.0, fb.mantissa)) - off);
  const UOp h = qo >> qo.const_like(1);
  const UOp one = qo.const_like(1);
  return p * pow2_from_biased(h - one, dt) * pow2_from_biased(qo - h - one, dt);
}

// log2(x) for float32 or float64.
inline UOp xlog2(const UOp& x) {
  const DType dt = x.dtype();
  const FloatBits fb = float_bits(dt);
  const bool f64 = dt.scalar() == dtypes::float64;
  // denormals scale up by 2^64 first
  const UOp small = x.lt(x.const_like(std::ldexp(1.0, 1 - fb.bias)));
  const UOp xs = x * small.where(x.const_like(0x1p64), x.const_like(1.0));
  // bits + (one - sqrt(1/2)) carries into the exponent exactly when the mantissa is past sqrt(2)
  const uint64_t sqrt_half = f64 ? 0x3fe6a09e667f3bcdULL : 0x3f3504f3ULL;
  const UOp ix = xs.bitcast(fb.u) + uconst(fb.u, bits_of(dt, 1.0) - sqrt_half);
  const uint64_t mant_mask = (uint64_t{1} << fb.mantissa) - 1;
  const UOp m = ((ix & uconst(fb.u, mant_mask)) + uconst(fb.u, sqrt_half)).bitcast(dt);
  // the exponent as a float without an int->float conversion: the bits of 2^M + k, minus 2^M
  const double two_m = std::ldexp(1.0, fb.mantissa);
  const UOp k = ix >> ix.const_like(fb.mantissa);
  const UOp e = (k | uconst(fb.u, bits_of(dt, two_m))).bitcast(dt) - x.const_like(two_m + fb.bias) +
                small.where(x.const_like(-64.0), x.const_like(0.0));
  // log(1+f) = f - f^2/2 + s*(f^2/2 + R), R = z*P(z), s = f/(2+f), z = s^2 (fdlibm's e_log2)
  const UOp f = m - x.const_like(1.0);
  const UOp s = f / (f + x.const_like(2.0));
  const UOp z = s * s;
  const UOp R =
      z * (f64 ? horner(z, {0.1308676700994817371, 0.1326875966856061269, 0.1538624020581347788,
                            0.1818179563088475320, 0.2222222239180046933, 0.2857142857080323001,
                            0.4000000000000087761, 0.6666666666666666646})
               : horner(z, {0.2333058193824189382, 0.2855081659971154867, 0.4000012187697200149,
                            0.6666666655445164633}));
  const UOp hfsq = x.const_like(0.5) * f * f;
  // hi keeps few enough bits that hi * ivln2_hi is exact
  const uint64_t hi_mask = f64 ? 0xffffffff00000000ULL : 0xfffff000ULL;
  const UOp hi = ((f - hfsq).bitcast(fb.u) & uconst(fb.u, hi_mask)).bitcast(dt);
  const UOp lo = ((f - hi) - hfsq) + s * (hfsq + R);
  // 1/ln2 = ivln2_hi + ivln2_lo, ivln2_hi with 32 (f64) or 12 (f32) significant bits
  const UOp ivln2_hi = x.const_like(f64 ? 0x1.71547652p+0 : 0x1.716p+0);
  const UOp ivln2_lo = x.const_like(f64 ? 0x1.705fc2eefa2p-33 : -0x1.7135a8fa03d11p-13);
  const UOp val_hi = hi * ivln2_hi;
  UOp val_lo = (lo + hi) * ivln2_lo + lo * ivln2_hi;
  // e + val_hi with its rounding error kept (|e| >= |val_hi| or e == 0: Fast2Sum is exact)
  const UOp w = e + val_hi;
  val_lo = val_lo + ((e - w) + val_hi);
  // the special values are added to the (finite) result: inf and NaN are their own log, x < 0
  // gives NaN, +-0 gives -inf
  UOp special = x.lt(x.const_like(INFINITY)).where(x.const_like(-0.0), x);
  special = x.lt(x.const_like(0.0)).where(x.const_like(NAN), special);
  special = x.ne(x.const_like(0.0)).where(special, x.const_like(-INFINITY));
  return (val_lo + w) + special;
}

// sin(x) for float64 (`f32_accuracy`: a float32 input widened, shorter polynomials suffice).
inline UOp xsin(const UOp& x, bool f32_accuracy) {
  auto [q, t] = round_to_int(x * x.const_like(0x1.45f306dc9c883p-1));  // x * 2/pi
  // r + r_lo = x - q*pi/2: the first product is exact and cancels exactly; the others are
  // subtracted with 2Sum so their rounding errors collect in r_lo (not needed for float32)
  UOp r = x - q * x.const_like(0x1.921fb544p+0), r_lo;
  for (double part : {0x1.0b4611a6p-34, 0x1.3198a2ep-69, 0x1.b839a252049c1p-104}) {
    const UOp a = -(q * x.const_like(part)), sum = r + a, bb = sum - r;
    if (!f32_accuracy) {
      const UOp err = (r - (sum - bb)) + (a - bb);
      r_lo = r_lo ? r_lo + err : err;
    }
    r = sum;
  }
  const UOp z = r * r;
  // sin(r + r_lo) = r + (r_lo + r*z*S(z)), cos(r + r_lo) = 1 - z/2 + (z^2*C(z) - r*r_lo): fits on
  // |r| <= pi/4 (z up to 0.63), errors below 2^-60 (f64) and 2^-30 (f32) of the result
  const UOp S =
      f32_accuracy
          ? horner(z, {2.724381197525810662e-6, -1.984003911301221364e-4, 8.333331785671729736e-3,
                       -0.1666666666362402284})
          : horner(z, {-7.585492507821239755e-13, 1.605851097953535054e-10,
                       -2.505210610092667318e-8, 2.755731921895673175e-6, -1.984126984126456848e-4,
                       8.333333333333331260e-3, -0.1666666666666666667});
  const UOp C =
      f32_accuracy
          ? horner(z, {2.454289633694462712e-5, -1.388827944964953710e-3, 4.166666453694609169e-2})
          : horner(z, {-1.138087694816971604e-11, 2.087612165887115877e-9, -2.755731715246703958e-7,
                       2.480158729853345501e-5, -1.388888888888724218e-3, 4.166666666666666523e-2});
  const UOp sin_r = r + (r_lo ? r_lo + r * z * S : r * z * S);
  // 1 - z/2 rounds; its error ((1 - w) - z/2) is exact and added back, as fdlibm's k_cos
  const UOp hz = x.const_like(0.5) * z, w = x.const_like(1.0) - hz;
  const UOp cos_r =
      w + (((x.const_like(1.0) - w) - hz) + (r_lo ? z * z * C - r * r_lo : z * z * C));
  // the quadrant q mod 4 is in the low bits of t; cos_r or sin_r by a bit mask, negated by
  // flipping the sign bit
  const DType u64 = dtypes::uint64;
  const UOp quadrant = t.bitcast(u64), zero = quadrant.const_like(0);
  const UOp odd = -(quadrant & quadrant.const_like(1));  // all ones or 0
  UOp bits =
      (cos_r.bitcast(u64) & odd) | (sin_r.bitcast(u64) & (odd ^ odd.const_like(~uint64_t{0})));
  bits = bits ^ ((quadrant & quadrant.const_like(2)) << quadrant.const_like(62));
  // sin(-0.0) is -0.0: a zero x lends its sign bit
  bits =
      bits | x.eq(x.const_like(0.0)).where(x.bitcast(u64) & uconst(u64, uint64_t{1} << 63), zero);
  const UOp big = x.const_like(0x1p50);
  return bits.bitcast(x.dtype()) +
         (x.lt(big) & (-big).lt(x)).where(x.const_like(-0.0), x.const_like(NAN));
}

inline UOp decompose(Ops op, const UOp& x) {
  const DType dt = x.dtype().scalar();
  if (dt == dtypes::float16 || dt == dtypes::bfloat16)  // in float32, one rounding at the end
    return UOp(op, dtypes::float32, {x.cast(dtypes::float32)}).cast(x.dtype());
  if (dt != dtypes::float32 && dt != dtypes::float64) return {};
  switch (op) {
    case Ops::EXP2:
      return xexp2(x);
    case Ops::LOG2:
      return xlog2(x);
    default: {
      const bool f32 = dt == dtypes::float32;
      const UOp out = xsin(x.cast(dtypes::float64), f32);
      return out.cast(x.dtype());
    }
  }
}
}  // namespace detail

/// Rules that rewrite scalar EXP2, LOG2 and SIN of float dtypes into ALU ops, bit casts and
/// integer shifts (no libm calls), accurate to about 1 ulp; see the top of this file.
inline const PatternMatcher& transcendental_rules() {
  static const PatternMatcher pm{{
      {UPat(OpSet{Ops::EXP2, Ops::LOG2, Ops::SIN}, {UPat::var("x")}).named("u"),
       [](auto& m) {
         const UOp& u = m["u"];
         if (u.dtype().count() != 1 || !u.dtype().is_float()) return UOp{};
         return detail::decompose(u.op(), m["x"]);
       }},
  }};
  return pm;
}

namespace detail {
/// The divisor an integer IDIV or MOD executes with: y, or 1 where y is 0 or (signed) -1.
inline UOp safe_divisor(const UOp& y, bool minus_one) {
  UOp bad = y.eq(y.const_like(0));
  if (minus_one) bad = bad | y.eq(y.const_like(-1));
  return bad.where(y.const_like(1), y);
}
}  // namespace detail

/// Integer division defined for every divisor, once for every renderer (C and LLVM IR leave
/// x / 0 undefined, and x86 traps on it and on INT_MIN / -1):
///   x / 0 == 0 and x % 0 == 0           NumPy's results (PyTorch's CPU raises, which a kernel
///                                      cannot do cheaply; tinygrad's emulator also gives 0)
///   x / -1 == -x, wrapping (INT_MIN / -1 == INT_MIN, as PyTorch), and x % -1 == 0
/// The Tensor API's floor division and remainder are built on these, so `x // 0` and `x % 0` are 0
/// there too. The instruction only ever sees a divisor that is neither 0 nor -1: where y can be
/// one, it divides by safe_divisor(y) (x % 1 is the 0 wanted) and the quotient is chosen after.
/// A divisor whose bounds exclude both (every index computation) is left as it is.
inline const PatternMatcher& division_rules() {
  static const PatternMatcher pm{{
      {UPat(OpSet{Ops::IDIV, Ops::MOD}, {UPat::var("x"), UPat::var("y")}).named("d"),
       [](auto& m) {
         const UOp &d = m["d"], &x = m["x"], &y = m["y"];
         const DType dt = d.dtype();
         if (dt.count() != 1 || !dt.is_int()) return UOp{};
         const bool sign = !dt.is_unsigned();
         const bool zero = vmin(y) <= 0 && vmax(y) >= 0, minus_one = sign && vmin(y) <= -1 && vmax(y) >= -1;
         if (!zero && !minus_one) return UOp{};
         // a divisor made safe here is matched again: leave it (UOps are interned, so this is ==)
         if (y.op() == Ops::WHERE && y == detail::safe_divisor(y.src(2), sign)) return UOp{};
         const UOp safe = detail::safe_divisor(y, sign);
         if (d.op() == Ops::MOD) return x.alu(Ops::MOD, {safe});
         UOp q = x.alu(Ops::IDIV, {safe});  // x where y is 0 or -1
         if (minus_one) q = y.eq(y.const_like(-1)).where(-x, q);
         return zero ? y.eq(y.const_like(0)).where(d.const_like(0), q) : q;
       }},
  }};
  return pm;
}

}  // namespace codegen
}  // namespace tinyt::inline v0
