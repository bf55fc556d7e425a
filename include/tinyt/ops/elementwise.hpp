// Elementwise ops: broadcasting, dtype promotion, and the math functions, each a composition of
// the ALU UOps (EXP2, LOG2, SIN, SQRT, RECIPROCAL, TRUNC, ADD, MUL, MAX, CMPLT, WHERE, ...).
#pragma once

#include <numbers>

#include "../alu.hpp"
#include "../expr.hpp"
#include "movement.hpp"

namespace tinyt::inline v0 {

/// Lets the elementwise machinery see a tensor's weak flag and build tensors from UOps.
struct TensorAccess {
  static bool weak(const Tensor& t) { return t.weak(); }
  static UOp exact(const Tensor& t) { return t.d_ ? t.d_->exact : UOp(); }
  static Tensor make(UOp u, bool weak, UOp exact) {
    Tensor t(std::move(u));
    t.d_->weak = weak;
    t.d_->exact = std::move(exact);
    return t;
  }
};

namespace detail {
TINYT_INLINE Operand operand_of(const Tensor& t) { return {t.uop(), TensorAccess::weak(t), TensorAccess::exact(t)}; }
TINYT_INLINE Tensor to_tensor(Operand o) { return TensorAccess::make(std::move(o.u), o.weak, std::move(o.exact)); }

inline Operand cast_operand(const Operand& x, DType dt) {
  if (dt == x.u.dtype()) return x;
  if (dt.is_ptr() || dt.is_void() || dt.is_index() || dt.count() != 1)
    throw DTypeError(cat("cast: cannot cast ", x.u.dtype().name(), " to ", dt.name()));
  if (x.u.op() == Ops::CONST) {  // a constant converts now (C's conversion rules)
    UOp c = x.u.arg().is<double>() ? UOp::const_(dtypes::float64, x.u.arg().get<double>())
                                   : UOp(Ops::CONST, x.u.dtype(), {}, x.u.arg());
    if (UOp folded = fold_constants(Ops::CAST, dt, {c})) return {UOp(Ops::CONST, dt, x.u.src(), folded.arg()), x.weak};
  }
  return {x.u.cast(dt), false};
}
/// x in the dtype an op computes in: a C++ double rounds from its own value, not from float32's.
inline Operand promote_operand(const Operand& x, DType dt) {
  if (x.exact && dt.is_float() && dt != x.u.dtype())
    return {UOp(Ops::CONST, dt, x.u.src(), UOp::const_(dt, x.exact.const_float()).arg()), x.weak, x.exact};
  return cast_operand(x, dt);
}

/// A C++ scalar lives where the tensor it meets lives: a weak constant moved to `device`
/// (anything else as it is).
inline Operand scalar_on(const Operand& s, const std::string& device) {
  if (!s.weak || s.u.op() != Ops::CONST || graph::device_of(s.u) == device) return s;
  return Operand{UOp(Ops::CONST, s.u.dtype(), {graph::device_uop(device)}, s.u.arg()), true, s.exact};
}

TINYT_INLINE Operand binary_operand(Ops op, Operand a, Operand b, const char* name, bool to_float) {
  const DType da = a.u.dtype(), db = b.u.dtype();
  DType dt = a.weak && !b.weak   ? weak_promote(db, da)
             : b.weak && !a.weak ? weak_promote(da, db)
                                 : least_upper_dtype({da, db});
  if (to_float) dt = least_upper_float(dt);
  a = promote_operand(a, dt), b = promote_operand(b, dt);
  a = scalar_on(a, graph::device_of(b.u)), b = scalar_on(b, graph::device_of(a.u));
  if (graph::device_of(a.u) != graph::device_of(b.u))
    throw DeviceError(cat(name, ": operands are on ", graph::device_of(a.u), " and ", graph::device_of(b.u)));
  const Shape shape = Tensor::broadcast_shape(graph::shape_of(a.u), graph::shape_of(b.u), name);
  return {broadcast_uop(a.u, shape).alu(op, {broadcast_uop(b.u, shape)}), false};
}
/// -x as x * -1 (a constant is negated now; the weak flag stays).
inline Operand negate(const Operand& x) {
  const DType dt = x.u.dtype();
  if (dt.is_bool()) throw DTypeError("sub: subtracting bool tensors is not supported; use logical_xor");
  if (x.u.op() == Ops::CONST) {
    const UOp value = -UOp(Ops::CONST, dt, {}, x.u.arg());
    return {UOp(Ops::CONST, dt, x.u.src(), value.arg()), x.weak, x.exact ? UOp::const_(dtypes::float64, -x.exact.const_float()) : UOp()};
  }
  const UOp minus_one = graph::const_(dt, -1, graph::device_of(x.u));
  return {x.u.alu(Ops::MUL, {broadcast_uop(minus_one, graph::shape_of(x.u))}), x.weak};
}

// -- the ops on Operands (expr.hpp declares them) --------------------------------------------------
TINYT_INLINE Operand Operand::scalar_operand(double v) {
  return {graph::const_(dtypes::float32, v, Device::default_device()), true, UOp::const_(dtypes::float64, v)};
}
TINYT_INLINE Operand Operand::scalar_operand(bool v) {
  return {graph::const_(dtypes::bool_, static_cast<int64_t>(v), Device::default_device()), true};
}
TINYT_INLINE Operand Operand::integer_scalar(int64_t v, DType dt) { return {graph::const_(dt, v, Device::default_device()), true}; }

namespace ew {
// helpers of the ops below
inline DType dtype(O x) { return x.u.dtype(); }
inline Operand binary(Ops op, O a, O b, const char* name, bool to_float = false) { return binary_operand(op, a, b, name, to_float); }
/// x as a float dtype (integers as the default float), no longer weak.
inline Operand as_float(O x) { return cast(x, least_upper_float(dtype(x))); }
inline Operand unary(Ops op, O x) { return {as_float(x).u.alu(op)}; }
/// `value` in x's dtype, device and shape (not weak).
template <class V> Operand full_like(O x, V value) {
  return {broadcast_uop(graph::const_(dtype(x), value, graph::device_of(x.u)), graph::shape_of(x.u))};
}
inline void require_int_or_bool(O x, const char* op) {
  if (dtype(x).is_float()) throw DTypeError(cat(op, ": needs integer or bool tensors, not ", dtype(x).name()));
}
// Shifts as PyTorch defines them: by a negative amount or by the width or more, every bit is
// shifted out (<< gives 0, >> gives 0 or, for a negative signed value, -1). The kernel only ever
// shifts by less than the width: C and LLVM leave wider shifts undefined.
struct ShiftOperands {
  Operand x, amount, in_range;  // in the promoted dtype; whether 0 <= amount < bits
  int64_t bits;
};
inline ShiftOperands shift_operands(O x, O amount, const char* op) {
  require_int_or_bool(x, op);
  const DType dt = binary(Ops::ADD, x, amount, op).u.dtype();
  const Operand a{promote_operand(scalar_on(amount, graph::device_of(x.u)), dt).u};
  const int64_t bits = dt.is_bool() ? 1 : 8 * dt.itemsize();
  return {cast(x, dt), a, logical_and(ge(a, 0), lt(a, bits)), bits};
}

// an explicit cast converts the value the tensor holds (a C++ double is float32 by then)
TINYT_INLINE Operand cast(O x, DType dt) { return cast_operand({x.u, x.weak}, dt); }
TINYT_INLINE Operand bitcast(O x, DType dt) {
  if (dt.itemsize() != dtype(x).itemsize())
    throw DTypeError(cat("bitcast: ", dtype(x).name(), " and ", dt.name(), " differ in size"));
  return {x.u.bitcast(dt)};
}

TINYT_INLINE Operand add(O a, O b) { return binary(Ops::ADD, a, b, "add"); }
TINYT_INLINE Operand mul(O a, O b) { return binary(Ops::MUL, a, b, "mul"); }
TINYT_INLINE Operand sub(O a, O b) { return binary(Ops::ADD, a, negate(b), "sub"); }
TINYT_INLINE Operand neg(O x) { return dtype(x).is_bool() ? logical_not(x) : negate(x); }  // -scalar stays a weak scalar
/// True division: integers divide as the default float.
TINYT_INLINE Operand div(O a, O b) { return binary(Ops::FDIV, a, b, "div", true); }
TINYT_INLINE Operand maximum(O a, O b) { return binary(Ops::MAX, a, b, "maximum"); }
TINYT_INLINE Operand minimum(O a, O b) {
  // min(a, b) = -max(-a, -b); integers use ~, which reverses order without overflow
  if (dtype(a).is_float() || dtype(b).is_float()) return neg(maximum(neg(a), neg(b)));
  return bitwise_not(maximum(bitwise_not(a), bitwise_not(b)));
}
TINYT_INLINE Operand eq(O a, O b) { return binary(Ops::CMPEQ, a, b, "eq"); }
TINYT_INLINE Operand ne(O a, O b) { return binary(Ops::CMPNE, a, b, "ne"); }
TINYT_INLINE Operand lt(O a, O b) { return binary(Ops::CMPLT, a, b, "lt"); }
TINYT_INLINE Operand gt(O a, O b) { return binary(Ops::CMPLT, b, a, "gt"); }
TINYT_INLINE Operand le(O a, O b) { return logical_or(lt(a, b), eq(a, b)); }  // false with NaN
TINYT_INLINE Operand ge(O a, O b) { return logical_or(gt(a, b), eq(a, b)); }

TINYT_INLINE Operand bitwise_and(O a, O b) {
  require_int_or_bool(a, "bitwise_and"), require_int_or_bool(b, "bitwise_and");
  return binary(Ops::AND, a, b, "bitwise_and");
}
TINYT_INLINE Operand bitwise_or(O a, O b) {
  require_int_or_bool(a, "bitwise_or"), require_int_or_bool(b, "bitwise_or");
  return binary(Ops::OR, a, b, "bitwise_or");
}
TINYT_INLINE Operand bitwise_xor(O a, O b) {
  require_int_or_bool(a, "bitwise_xor"), require_int_or_bool(b, "bitwise_xor");
  return binary(Ops::XOR, a, b, "bitwise_xor");
}
TINYT_INLINE Operand lshift(O a, O b) {
  const auto [x, amount, in_range, bits] = shift_operands(a, b, "lshift");
  if (dtype(x).is_bool()) return logical_and(x, in_range);  // one bit: kept by a shift of 0 only
  return where(in_range, binary(Ops::SHL, x, bitwise_and(amount, bits - 1), "lshift"), 0);
}
TINYT_INLINE Operand rshift(O a, O b) {
  const auto [x, amount, in_range, bits] = shift_operands(a, b, "rshift");
  if (dtype(x).is_bool()) return logical_and(x, in_range);
  if (dtype(x).is_unsigned()) return where(in_range, binary(Ops::SHR, x, bitwise_and(amount, bits - 1), "rshift"), 0);
  return binary(Ops::SHR, x, where(in_range, amount, bits - 1), "rshift");  // the sign fills every bit
}
TINYT_INLINE Operand bitwise_not(O x) {
  require_int_or_bool(x, "bitwise_not");
  if (dtype(x).is_bool()) return logical_not(x);
  if (x.weak && x.u.op() == Ops::CONST) {  // ~scalar stays a weak scalar, so min(int8, 5) stays int8
    const UOp c(Ops::CONST, dtype(x), {}, x.u.arg());
    return {UOp(Ops::CONST, dtype(x), x.u.src(), fold_constants(Ops::XOR, dtype(x), {c, c.const_like(-1)}).arg()), true};
  }
  return bitwise_xor(x, Operand(graph::const_(dtype(x), -1, graph::device_of(x.u))));
}
TINYT_INLINE Operand logical_not(O x) { return ne(cast(x, dtypes::bool_), true); }
TINYT_INLINE Operand logical_and(O a, O b) { return binary(Ops::AND, cast(a, dtypes::bool_), cast(b, dtypes::bool_), "logical_and"); }
TINYT_INLINE Operand logical_or(O a, O b) { return binary(Ops::OR, cast(a, dtypes::bool_), cast(b, dtypes::bool_), "logical_or"); }
TINYT_INLINE Operand logical_xor(O a, O b) { return binary(Ops::XOR, cast(a, dtypes::bool_), cast(b, dtypes::bool_), "logical_xor"); }

TINYT_INLINE Operand where(O cond, O a, O b) {
  // the branches promote together; the condition is any dtype read as bool
  const DType dt = a.weak && !b.weak   ? weak_promote(dtype(b), dtype(a))
                   : b.weak && !a.weak ? weak_promote(dtype(a), dtype(b))
                                       : least_upper_dtype({dtype(a), dtype(b)});
  Operand c_ = cast(cond, dtypes::bool_), x_ = promote_operand(a, dt), y_ = promote_operand(b, dt);
  // C++ scalars live where the tensors they meet live
  std::string device;
  for (const Operand* o : {&c_, &x_, &y_})
    if (!o->weak || o->u.op() != Ops::CONST) device = graph::device_of(o->u);
  if (!device.empty()) c_ = scalar_on(c_, device), x_ = scalar_on(x_, device), y_ = scalar_on(y_, device);
  const UOp c = c_.u, x = x_.u, y = y_.u;
  for (const UOp* u : {&x, &y})
    if (graph::device_of(*u) != graph::device_of(c))
      throw DeviceError(cat("where: operands are on ", graph::device_of(c), ", ", graph::device_of(x), " and ", graph::device_of(y)));
  const Shape shape = broadcast_all("where", graph::shape_of(c), graph::shape_of(x), graph::shape_of(y));
  return {broadcast_uop(c, shape).where(broadcast_uop(x, shape), broadcast_uop(y, shape))};
}

/// Floor division (Python's //): rounds toward negative infinity.
TINYT_INLINE Operand floordiv(O a, O b) {
  if (dtype(a).is_float() || dtype(b).is_float()) return floor(div(a, b));
  const Operand q = binary(Ops::IDIV, a, b, "floordiv"), r = binary(Ops::MOD, a, b, "floordiv");
  // C truncates: step down one where the remainder is non-zero and the signs differ
  const Operand fix = logical_and(ne(r, 0), ne(lt(r, 0), lt(b, 0)));
  return sub(q, cast(fix, dtype(q)));
}
/// Remainder with the sign of the divisor (Python's %, PyTorch's remainder).
TINYT_INLINE Operand mod(O a, O b) {
  if (dtype(a).is_float() || dtype(b).is_float()) {
    // a finite a over an infinite b is a itself where the signs agree (or a is 0), else b, as
    // PyTorch's fmod-then-fix gives; a - floor(a/b)*b would be 0*inf = NaN there
    const Operand r = sub(a, mul(floordiv(a, b), b));
    const Operand same_side = logical_or(eq(a, 0), eq(lt(a, 0), lt(b, 0)));
    return where(logical_and(isinf(b), isfinite(a)), where(same_side, a, b), r);
  }
  const Operand r = binary(Ops::MOD, a, b, "mod");
  const Operand fix = logical_and(ne(r, 0), ne(lt(r, 0), lt(b, 0)));
  return where(fix, add(r, b), r);
}
TINYT_INLINE Operand pow(O a, O b) {
  if (dtype(a).is_float() || dtype(b).is_float()) return binary(Ops::POW, a, b, "pow", true);
  // integers, as PyTorch: exact and wrapping, by squaring and multiplying over the exponent's
  // bits; a negative exponent truncates 1/x^n (1 for 1, -1 or 1 for -1, else 0)
  const DType dt = binary(Ops::ADD, a, b, "pow").u.dtype();
  const Operand base = cast(a, dt), exponent{promote_operand(b, dt).u};
  if (dt.is_bool()) return logical_or(base, logical_not(exponent));
  Operand result = full_like(base, 1), square = base;
  if (exponent.u.op() == Ops::CONST) {  // a known exponent: only its bits
    i128 e = exponent.u.const_int();
    if (e < 0) return cast(where(eq(base, 1), 1, where(eq(base, -1), e % 2 ? -1 : 1, 0)), dt);
    for (; e > 0; e >>= 1) {
      if (e & 1) result = mul(result, square);
      if (e > 1) square = mul(square, square);
    }
    return result;
  }
  const int64_t bits = 8 * dt.itemsize() - (dt.is_unsigned() ? 0 : 1);  // a negative one is below
  for (int64_t i = 0; i < bits; ++i) {
    const Operand bit_set = ne(bitwise_and(exponent, static_cast<int64_t>(uint64_t{1} << i)), 0);
    result = where(bit_set, mul(result, square), result);
    if (i + 1 < bits) square = mul(square, square);
  }
  if (dt.is_unsigned()) return result;
  const Operand odd = ne(bitwise_and(exponent, 1), 0);
  const Operand negative_power = cast(where(eq(base, 1), 1, where(eq(base, -1), where(odd, -1, 1), 0)), dt);
  return where(lt(exponent, 0), negative_power, result);
}

// -- math functions ------------------------------------------------------------------------------
TINYT_INLINE Operand exp2(O x) { return unary(Ops::EXP2, x); }
TINYT_INLINE Operand log2(O x) { return unary(Ops::LOG2, x); }
TINYT_INLINE Operand exp(O x) { return exp2(mul(as_float(x), 1.0 / std::numbers::ln2)); }
TINYT_INLINE Operand log(O x) { return mul(log2(x), std::numbers::ln2); }
TINYT_INLINE Operand sqrt(O x) { return unary(Ops::SQRT, x); }
TINYT_INLINE Operand reciprocal(O x) { return unary(Ops::RECIPROCAL, x); }
TINYT_INLINE Operand rsqrt(O x) { return reciprocal(sqrt(x)); }
TINYT_INLINE Operand sin(O x) { return unary(Ops::SIN, x); }
TINYT_INLINE Operand cos(O x) { return sin(add(neg(as_float(x)), std::numbers::pi / 2)); }
TINYT_INLINE Operand tan(O x) { return div(sin(x), cos(x)); }
TINYT_INLINE Operand square(O x) { return mul(x, x); }
TINYT_INLINE Operand abs(O x) { return dtype(x).is_bool() ? x : where(lt(x, 0), neg(x), x); }
TINYT_INLINE Operand isnan(O x);
TINYT_INLINE Operand sign(O x) {
  // NaN stays NaN, like PyTorch (chosen, not computed as s + x*0: a compiler that assumes no NaN,
  // as WebGPU's may, folds x*0 to 0)
  const Operand s = cast(where(ne(x, 0), where(lt(x, 0), -1, 1), 0), dtype(x));
  return dtype(x).is_float() ? where(isnan(x), x, s) : s;
}
TINYT_INLINE Operand trunc(O x) { return dtype(x).is_float() ? Operand(x.u.alu(Ops::TRUNC)) : x; }
TINYT_INLINE Operand floor(O x) {
  if (!dtype(x).is_float()) return x;
  const Operand t = trunc(x);
  return where(lt(x, t), sub(t, 1), t);
}
TINYT_INLINE Operand ceil(O x) {
  if (!dtype(x).is_float()) return x;
  const Operand t = trunc(x);
  return where(gt(x, t), add(t, 1), t);
}
/// Rounds half to even, like PyTorch.
TINYT_INLINE Operand round(O x) {
  if (!dtype(x).is_float()) return x;
  const Operand f = floor(x), d = sub(x, f);
  const Operand even = eq(sub(f, mul(floor(mul(f, 0.5)), 2)), 0);
  return where(gt(d, 0.5), add(f, 1), where(lt(d, 0.5), f, where(even, f, add(f, 1))));
}
TINYT_INLINE Operand isnan(O x) { return ne(x, x); }
TINYT_INLINE Operand isinf(O x) {
  return dtype(x).is_float() ? logical_or(eq(x, INFINITY), eq(x, -INFINITY)) : cast(full_like(x, false), dtypes::bool_);
}
TINYT_INLINE Operand isfinite(O x) { return logical_not(logical_or(isnan(x), isinf(x))); }

TINYT_INLINE Operand relu(O x) { return maximum(x, 0); }
TINYT_INLINE Operand relu6(O x) { return minimum(relu(x), 6); }
/// 1 / (1 + exp(-x)) through e = exp(-|x|), which never overflows: below x = -88 exp(-x) was inf
/// in float32, and the gradient there inf * 0 = NaN, where PyTorch's is 0.
TINYT_INLINE Operand sigmoid(O x_) {
  const Operand x = as_float(x_), negative = lt(x, 0);
  const Operand e = exp(neg(abs(x))), r = reciprocal(add(e, 1));
  return where(negative, mul(e, r), r);
}
TINYT_INLINE Operand logsigmoid(O x) { return neg(softplus(neg(x), 1.0)); }
/// tanh after Cody and Waite (as Cephes): x + x^3 P(x^2)/Q(x^2) below |x| = 0.625, where
/// 2 sigmoid(2x) - 1 cancels (tanh(1e-6) was off by 7%), and (1 - e)/(1 + e) with e = exp(-2|x|)
/// above, which cannot overflow. Each side is fed a value it is finite at, so the side where()
/// drops passes back zeros, not NaN.
TINYT_INLINE Operand tanh(O x_) {
  const Operand x = as_float(x_), negative = lt(x, 0), magnitude = abs(x);
  const Operand small = lt(magnitude, 0.625);
  const Operand xs = where(small, x, 0.0), z = square(xs);
  const Operand p = add(mul(add(mul(z, -9.64399179425052238628e-1), -9.92877231001918586564e1), z), -1.61468768441708447952e3);
  const Operand q = add(mul(add(mul(add(z, 1.12811678491632931402e2), z), 2.23548839060100448583e3), z), 4.84406305325125486048e3);
  const Operand near_zero = add(xs, mul(mul(xs, z), div(p, q)));
  const Operand e = exp(mul(where(small, 1.0, magnitude), -2)), far = div(sub(1, e), add(e, 1));
  return where(small, near_zero, where(negative, neg(far), far));
}
/// The exact GELU, x * Phi(x), as PyTorch's default.
TINYT_INLINE Operand gelu(O x) { return mul(mul(x, 0.5), add(erf(mul(x, 1.0 / std::numbers::sqrt2)), 1)); }
TINYT_INLINE Operand quick_gelu(O x) { return mul(x, sigmoid(mul(x, 1.702))); }
TINYT_INLINE Operand silu(O x) { return mul(x, sigmoid(x)); }
TINYT_INLINE Operand elu(O x, double alpha) { return where(gt(x, 0), x, mul(sub(exp(x), 1), alpha)); }
TINYT_INLINE Operand leaky_relu(O x, double slope) { return where(lt(x, 0), mul(x, slope), x); }
/// log(1 + y) for y >= 0, accurate where y is far below 1 and 1 + y rounds to 1 or near it:
/// log(u) * y / (u - 1) with u = 1 + y (u - 1 is exact, and the ratio corrects log(u) for the
/// rounding of u; Goldberg, "What every computer scientist should know...", theorem 4).
TINYT_INLINE Operand log1p_nonnegative(O y) {
  const Operand u = add(y, 1);
  return where(eq(u, 1), y, div(mul(log(u), y), sub(u, 1)));
}
/// log(1 + exp(beta x)) / beta, linear above beta x > 20 like PyTorch.
TINYT_INLINE Operand softplus(O x, double beta) {
  const Operand bx = mul(x, beta), positive = gt(bx, 0);
  // log1p(exp(-|bx|)) + max(bx, 0) is stable on both sides, and keeps its digits where the result
  // is tiny (softplus(-30) is 9.36e-14, not the 0 of log(1 + exp(-30))). |bx| and max(bx, 0) take
  // the same side at 0, so that their kinks cancel in the gradient too: 0.5 there, not 0.
  const Operand magnitude = where(positive, bx, neg(bx));
  const Operand stable = div(add(log1p_nonnegative(exp(neg(magnitude))), where(positive, bx, 0.0)), beta);
  return where(gt(bx, 20), x, stable);
}
TINYT_INLINE Operand mish(O x) { return mul(x, tanh(softplus(x, 1.0))); }
TINYT_INLINE Operand hardsigmoid(O x) { return div(relu6(add(x, 3)), 6); }
TINYT_INLINE Operand hardswish(O x) { return mul(x, hardsigmoid(x)); }
TINYT_INLINE Operand hardtanh(O x, double lo, double hi) { return clip(x, lo, hi); }
/// erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7).
TINYT_INLINE Operand erf(O x_) {
  const Operand x = as_float(x_);
  const Operand a = abs(x), t = reciprocal(add(mul(a, 0.3275911), 1));
  Operand poly = mul(t, 1.061405429);
  for (double c : {-1.453152027, 1.421413741, -0.284496736}) poly = mul(add(poly, c), t);
  poly = mul(add(poly, 0.254829592), t);
  const Operand y = add(neg(mul(poly, exp(neg(square(a))))), 1);
  return where(lt(x, 0), neg(y), y);
}
/// atan after Cephes: |x| reduced to [0, 0.66] (directly, by atan(1/x) = pi/2 - atan(x), or by
/// atan((x-1)/(x+1)) = atan(x) - pi/4), then t + t^3 P(t^2)/Q(t^2), a rational approximation
/// good to double precision; the sign restored.
TINYT_INLINE Operand atan(O x_) {
  const Operand x = as_float(x_), a = abs(x);
  const double tan_3pi_8 = 2.41421356237309504880, more_bits = 6.123233995736765886130e-17;
  const Operand far = gt(a, tan_3pi_8), near = le(a, 0.66);
  // the reduced argument and what its atan is added to
  const Operand t = where(far, neg(reciprocal(a)), where(near, a, div(sub(a, 1), add(a, 1))));
  const Operand base = where(far, full_like(x, std::numbers::pi / 2 + more_bits), where(near, full_like(x, 0.0), full_like(x, std::numbers::pi / 4 + 0.5 * more_bits)));
  const Operand z = square(t);
  Operand p = mul(z, -8.750608600031904122785e-1), q = add(z, 2.485846490142306297962e1);
  for (double c : {-1.615753718733365076637e1, -7.500855792314704667340e1, -1.228866684490136173410e2}) p = mul(add(p, c), z);
  p = add(p, -6.485021904942025371773e1);
  for (double c : {1.650270098316988542046e2, 4.328810604912902668951e2, 4.853903996359136964868e2}) q = add(mul(q, z), c);
  q = add(mul(q, z), 1.945506571482613964425e2);
  const Operand y = add(base, add(mul(t, div(mul(z, p), q)), t));
  return where(lt(x, 0), neg(y), y);
}
/// asin(x) = atan(x / sqrt(1 - x^2)) (+-pi/2 at +-1, NaN past them).
TINYT_INLINE Operand asin(O x_) {
  const Operand x = as_float(x_);
  return atan(div(x, sqrt(mul(sub(1, x), add(x, 1)))));
}
/// acos(x) = 2 atan(sqrt((1 - x) / (1 + x))): no cancellation near 1, pi at -1.
TINYT_INLINE Operand acos(O x_) {
  const Operand x = as_float(x_);
  return mul(atan(sqrt(div(sub(1, x), add(x, 1)))), 2);
}
TINYT_INLINE Operand clip(O x, O lo, O hi) { return minimum(maximum(x, lo), hi); }
TINYT_INLINE Operand lerp(O x, O end, O weight) { return add(x, mul(sub(end, x), weight)); }
TINYT_INLINE Operand masked_fill(O x, O mask, O value) { return where(mask, value, x); }
}  // namespace ew
}  // namespace detail

// -- the Tensor methods: one path with the expressions ---------------------------------------------
#define TINYT_TENSOR_UNARY(name) \
  TINYT_INLINE Tensor Tensor::name() const { return detail::to_tensor(detail::ew::name(detail::operand_of(*this))); }
TINYT_EW_UNARY(TINYT_TENSOR_UNARY)
#undef TINYT_TENSOR_UNARY
#define TINYT_TENSOR_BINARY(name)                                         \
  TINYT_INLINE Tensor Tensor::name(const Tensor& o) const {               \
    return detail::to_tensor(detail::ew::name(detail::operand_of(*this), detail::operand_of(o))); \
  }
TINYT_EW_BINARY(TINYT_TENSOR_BINARY)
#undef TINYT_TENSOR_BINARY
TINYT_INLINE Tensor Tensor::cast(DType dt) const {
  Device::require_dtype(device(), dt, "cast");
  return detail::to_tensor(detail::ew::cast(detail::operand_of(*this), dt));
}
TINYT_INLINE Tensor Tensor::bitcast(DType dt) const {
  Device::require_dtype(device(), dt, "bitcast");
  return detail::to_tensor(detail::ew::bitcast(detail::operand_of(*this), dt));
}
TINYT_INLINE Tensor Tensor::where(const Tensor& a, const Tensor& b) const {
  using detail::operand_of;
  return detail::to_tensor(detail::ew::where(operand_of(*this), operand_of(a), operand_of(b)));
}
TINYT_INLINE Tensor Tensor::clip(const Tensor& lo, const Tensor& hi) const {
  using detail::operand_of;
  return detail::to_tensor(detail::ew::clip(operand_of(*this), operand_of(lo), operand_of(hi)));
}
TINYT_INLINE Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const {
  using detail::operand_of;
  return detail::to_tensor(detail::ew::lerp(operand_of(*this), operand_of(end), operand_of(weight)));
}
TINYT_INLINE Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const {
  using detail::operand_of;
  return detail::to_tensor(detail::ew::masked_fill(operand_of(*this), operand_of(mask), operand_of(value)));
}
TINYT_INLINE Tensor Tensor::elu(double alpha) const { return detail::to_tensor(detail::ew::elu(detail::operand_of(*this), alpha)); }
TINYT_INLINE Tensor Tensor::leaky_relu(double slope) const {
  return detail::to_tensor(detail::ew::leaky_relu(detail::operand_of(*this), slope));
}
TINYT_INLINE Tensor Tensor::softplus(double beta) const { return detail::to_tensor(detail::ew::softplus(detail::operand_of(*this), beta)); }
TINYT_INLINE Tensor Tensor::hardtanh(double lo, double hi) const {
  return detail::to_tensor(detail::ew::hardtanh(detail::operand_of(*this), lo, hi));
}

/// Floor division, Python's `//`.
TINYT_INLINE Tensor floordiv(const Tensor& a, const Tensor& b) { return a.floordiv(b); }

}  // namespace tinyt::inline v0
