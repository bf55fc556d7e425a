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
    throw DTypeError(cat("cast: cannot cast to ", dt.name()));
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
/// t converted to `dt` as an op converts its operands (a C++ double from its own value), no
/// longer weak.
inline Tensor promoted(const Tensor& t, DType dt) { return to_tensor({promote_operand(operand_of(t), dt).u, false}); }

inline UOp broadcast_uop(const UOp& u, const Shape& shape) {
  const Shape& old = graph::shape_of(u);
  if (old == shape) return u;
  std::vector<sint> s(shape.size() - old.size(), 1);
  s.insert(s.end(), old.begin(), old.end());
  return graph::expand(graph::reshape(u, Shape(s)), shape);
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
TINYT_INLINE Operand negate(const Operand& x) {
  const DType dt = x.u.dtype();
  if (dt.is_bool()) throw DTypeError("sub: subtracting bool tensors is not supported; use logical_xor");
  if (x.u.op() == Ops::CONST) {
    const UOp value = -UOp(Ops::CONST, dt, {}, x.u.arg());
    return {UOp(Ops::CONST, dt, x.u.src(), value.arg()), x.weak, x.exact ? UOp::const_(dtypes::float64, -x.exact.const_float()) : UOp()};
  }
  const UOp minus_one = graph::const_(dt, -1, graph::device_of(x.u));
  return {x.u.alu(Ops::MUL, {broadcast_uop(minus_one, graph::shape_of(x.u))}), x.weak};
}
}  // namespace detail

// an explicit cast converts the value the tensor holds (a C++ double is float32 by then)
TINYT_INLINE Tensor Tensor::cast(DType dt) const { return detail::to_tensor(detail::cast_operand({uop(), weak()}, dt)); }

TINYT_INLINE Tensor Tensor::bitcast(DType dt) const {
  if (dt.itemsize() != dtype().itemsize())
    throw DTypeError(detail::cat("bitcast: ", dtype().name(), " and ", dt.name(), " differ in size"));
  return Tensor(uop().bitcast(dt));
}

TINYT_INLINE Tensor Tensor::binary(Ops op, const Tensor& o, const char* name, bool to_float) const {
  return detail::to_tensor(detail::binary_operand(op, detail::operand_of(*this), detail::operand_of(o), name, to_float));
}

TINYT_INLINE Tensor Tensor::unary(Ops op) const {
  Tensor x = cast(least_upper_float(dtype()));
  return Tensor(x.uop().alu(op));
}

TINYT_INLINE Tensor Tensor::add(const Tensor& o) const { return binary(Ops::ADD, o, "add"); }
TINYT_INLINE Tensor Tensor::mul(const Tensor& o) const { return binary(Ops::MUL, o, "mul"); }
TINYT_INLINE Tensor Tensor::sub(const Tensor& o) const {
  return detail::to_tensor(detail::binary_operand(Ops::ADD, detail::operand_of(*this), detail::negate(detail::operand_of(o)), "sub", false));
}
TINYT_INLINE Tensor Tensor::neg() const {
  if (dtype().is_bool()) return logical_not();
  return detail::to_tensor(detail::negate(detail::operand_of(*this)));  // -scalar stays a weak scalar
}
/// True division: integers divide as the default float.
TINYT_INLINE Tensor Tensor::div(const Tensor& o) const { return binary(Ops::FDIV, o, "div", true); }
TINYT_INLINE Tensor Tensor::maximum(const Tensor& o) const { return binary(Ops::MAX, o, "maximum"); }
TINYT_INLINE Tensor Tensor::minimum(const Tensor& o) const {
  // min(a, b) = -max(-a, -b); integers use ~, which reverses order without overflow
  if (dtype().is_float() || o.dtype().is_float()) return neg().maximum(o.neg()).neg();
  return bitwise_not().maximum(o.bitwise_not()).bitwise_not();
}
TINYT_INLINE Tensor Tensor::eq(const Tensor& o) const { return binary(Ops::CMPEQ, o, "eq"); }
TINYT_INLINE Tensor Tensor::ne(const Tensor& o) const { return binary(Ops::CMPNE, o, "ne"); }
TINYT_INLINE Tensor Tensor::lt(const Tensor& o) const { return binary(Ops::CMPLT, o, "lt"); }
TINYT_INLINE Tensor Tensor::gt(const Tensor& o) const { return o.binary(Ops::CMPLT, *this, "gt"); }
TINYT_INLINE Tensor Tensor::le(const Tensor& o) const { return lt(o).logical_or(eq(o)); }  // false with NaN
TINYT_INLINE Tensor Tensor::ge(const Tensor& o) const { return gt(o).logical_or(eq(o)); }

namespace detail {
inline void require_int_or_bool(const Tensor& t, const char* op) {
  if (t.dtype().is_float()) throw DTypeError(cat(op, ": needs integer or bool tensors, not ", t.dtype().name()));
}
}  // namespace detail
TINYT_INLINE Tensor Tensor::bitwise_and(const Tensor& o) const { detail::require_int_or_bool(*this, "bitwise_and"), detail::require_int_or_bool(o, "bitwise_and"); return binary(Ops::AND, o, "bitwise_and"); }
TINYT_INLINE Tensor Tensor::bitwise_or(const Tensor& o) const { detail::require_int_or_bool(*this, "bitwise_or"), detail::require_int_or_bool(o, "bitwise_or"); return binary(Ops::OR, o, "bitwise_or"); }
TINYT_INLINE Tensor Tensor::bitwise_xor(const Tensor& o) const { detail::require_int_or_bool(*this, "bitwise_xor"), detail::require_int_or_bool(o, "bitwise_xor"); return binary(Ops::XOR, o, "bitwise_xor"); }
namespace detail {
// Shifts as PyTorch defines them: by a negative amount or by the width or more, every bit is
// shifted out (<< gives 0, >> gives 0 or, for a negative signed value, -1). The kernel only ever
// shifts by less than the width: C and LLVM leave wider shifts undefined.
struct ShiftOperands {
  Tensor x, amount, in_range;  // in the promoted dtype; whether 0 <= amount < bits
  int64_t bits;
};
inline ShiftOperands shift_operands(const Tensor& x, const Tensor& amount, const char* op) {
  require_int_or_bool(x, op);
  const DType dt = x.add(amount).dtype();
  const Tensor a = promoted(to_tensor(scalar_on(operand_of(amount), x.device())), dt);
  const int64_t bits = dt.is_bool() ? 1 : 8 * dt.itemsize();
  return {x.cast(dt), a, a.ge(0).logical_and(a.lt(bits)), bits};
}
}  // namespace detail
TINYT_INLINE Tensor Tensor::lshift(const Tensor& o) const {
  const auto [x, amount, in_range, bits] = detail::shift_operands(*this, o, "lshift");
  if (x.dtype().is_bool()) return x.logical_and(in_range);  // one bit: kept by a shift of 0 only
  return in_range.where(x.binary(Ops::SHL, amount.bitwise_and(bits - 1), "lshift"), 0);
}
TINYT_INLINE Tensor Tensor::rshift(const Tensor& o) const {
  const auto [x, amount, in_range, bits] = detail::shift_operands(*this, o, "rshift");
  if (x.dtype().is_bool()) return x.logical_and(in_range);
  if (x.dtype().is_unsigned()) return in_range.where(x.binary(Ops::SHR, amount.bitwise_and(bits - 1), "rshift"), 0);
  return x.binary(Ops::SHR, in_range.where(amount, bits - 1), "rshift");  // the sign fills every bit
}
TINYT_INLINE Tensor Tensor::bitwise_not() const {
  detail::require_int_or_bool(*this, "bitwise_not");
  if (dtype().is_bool()) return logical_not();
  if (weak() && uop().op() == Ops::CONST) {  // ~scalar stays a weak scalar, so min(int8, 5) stays int8
    const UOp c(Ops::CONST, dtype(), {}, uop().arg());
    return detail::to_tensor({UOp(Ops::CONST, dtype(), uop().src(), fold_constants(Ops::XOR, dtype(), {c, c.const_like(-1)}).arg()), true});
  }
  return bitwise_xor(Tensor(graph::const_(dtype(), -1, device())));
}
TINYT_INLINE Tensor Tensor::logical_not() const { return cast(dtypes::bool_).ne(Tensor(true)); }
TINYT_INLINE Tensor Tensor::logical_and(const Tensor& o) const { return cast(dtypes::bool_).binary(Ops::AND, o.cast(dtypes::bool_), "logical_and"); }
TINYT_INLINE Tensor Tensor::logical_or(const Tensor& o) const { return cast(dtypes::bool_).binary(Ops::OR, o.cast(dtypes::bool_), "logical_or"); }
TINYT_INLINE Tensor Tensor::logical_xor(const Tensor& o) const { return cast(dtypes::bool_).binary(Ops::XOR, o.cast(dtypes::bool_), "logical_xor"); }

TINYT_INLINE Tensor Tensor::where(const Tensor& a, const Tensor& b) const {
  // the branches promote together; the condition is any dtype read as bool
  DType dt = a.weak() && !b.weak()   ? weak_promote(b.dtype(), a.dtype())
             : b.weak() && !a.weak() ? weak_promote(a.dtype(), b.dtype())
                                     : least_upper_dtype({a.dtype(), b.dtype()});
  Tensor c = cast(dtypes::bool_);
  Tensor x = detail::promoted(a, dt), y = detail::promoted(b, dt);
  const Shape shape = broadcast_shape(broadcast_shape(c.shape(), x.shape(), "where"), y.shape(), "where");
  return Tensor(broadcast_to(c, shape).uop().where(broadcast_to(x, shape).uop(), broadcast_to(y, shape).uop()));
}

/// Floor division (Python's //): rounds toward negative infinity.
TINYT_INLINE Tensor Tensor::floordiv(const Tensor& o) const {
  Tensor a = *this;
  if (dtype().is_float() || o.dtype().is_float()) return div(o).floor();
  Tensor q = a.binary(Ops::IDIV, o, "floordiv"), r = a.binary(Ops::MOD, o, "floordiv");
  // C truncates: step down one where the remainder is non-zero and the signs differ
  Tensor fix = r.ne(0).logical_and(r.lt(0).ne(o.lt(0)));
  return q.sub(fix.cast(q.dtype()));
}
/// Remainder with the sign of the divisor (Python's %, PyTorch's remainder).
TINYT_INLINE Tensor Tensor::mod(const Tensor& o) const {
  if (dtype().is_float() || o.dtype().is_float()) return sub(floordiv(o).mul(o));
  Tensor r = binary(Ops::MOD, o, "mod");
  Tensor fix = r.ne(0).logical_and(r.lt(0).ne(o.lt(0)));
  return fix.where(r.add(o), r);
}
TINYT_INLINE Tensor Tensor::pow(const Tensor& o) const {
  if (dtype().is_float() || o.dtype().is_float()) return binary(Ops::POW, o, "pow", true);
  // integers, as PyTorch: exact and wrapping, by squaring and multiplying over the exponent's
  // bits; a negative exponent truncates 1/x^n (1 for 1, -1 or 1 for -1, else 0)
  const DType dt = binary(Ops::ADD, o, "pow").dtype();
  const Tensor base = cast(dt), exponent = detail::promoted(o, dt);
  if (dt.is_bool()) return base.logical_or(exponent.logical_not());
  Tensor result = Tensor::full_like(base, 1), square = base;
  if (exponent.uop().op() == Ops::CONST) {  // a known exponent: only its bits
    i128 e = exponent.uop().const_int();
    if (e < 0) return base.eq(1).where(1, base.eq(-1).where(e % 2 ? -1 : 1, 0)).cast(dt);
    for (; e > 0; e >>= 1) {
      if (e & 1) result = result.mul(square);
      if (e > 1) square = square.mul(square);
    }
    return result;
  }
  const int64_t bits = 8 * dt.itemsize() - (dt.is_unsigned() ? 0 : 1);  // a negative one is below
  for (int64_t i = 0; i < bits; ++i) {
    const Tensor bit_set = exponent.bitwise_and(Tensor(static_cast<int64_t>(uint64_t{1} << i))).ne(0);
    result = bit_set.where(result.mul(square), result);
    if (i + 1 < bits) square = square.mul(square);
  }
  if (dt.is_unsigned()) return result;
  const Tensor odd = exponent.bitwise_and(1).ne(0);
  const Tensor negative_power = base.eq(1).where(1, base.eq(-1).where(odd.where(-1, 1), 0)).cast(dt);
  return exponent.lt(0).where(negative_power, result);
}

// -- math functions ------------------------------------------------------------------------------
TINYT_INLINE Tensor Tensor::exp2() const { return unary(Ops::EXP2); }
TINYT_INLINE Tensor Tensor::log2() const { return unary(Ops::LOG2); }
TINYT_INLINE Tensor Tensor::exp() const { return cast(least_upper_float(dtype())).mul(1.0 / std::numbers::ln2).exp2(); }
TINYT_INLINE Tensor Tensor::log() const { return log2().mul(std::numbers::ln2); }
TINYT_INLINE Tensor Tensor::sqrt() const { return unary(Ops::SQRT); }
TINYT_INLINE Tensor Tensor::reciprocal() const { return unary(Ops::RECIPROCAL); }
TINYT_INLINE Tensor Tensor::rsqrt() const { return sqrt().reciprocal(); }
TINYT_INLINE Tensor Tensor::sin() const { return unary(Ops::SIN); }
TINYT_INLINE Tensor Tensor::cos() const { return cast(least_upper_float(dtype())).neg().add(std::numbers::pi / 2).sin(); }
TINYT_INLINE Tensor Tensor::tan() const { return sin().div(cos()); }
TINYT_INLINE Tensor Tensor::square() const { return mul(*this); }
TINYT_INLINE Tensor Tensor::abs() const { return dtype().is_bool() ? *this : lt(0).where(neg(), *this); }
TINYT_INLINE Tensor Tensor::sign() const {
  // NaN stays NaN (x*0), like PyTorch
  Tensor s = ne(0).where(lt(0).where(-1, 1), 0).cast(dtype());
  return dtype().is_float() ? s.add(mul(0)) : s;
}
TINYT_INLINE Tensor Tensor::trunc() const { return dtype().is_float() ? Tensor(uop().alu(Ops::TRUNC)) : *this; }
TINYT_INLINE Tensor Tensor::floor() const {
  if (!dtype().is_float()) return *this;
  Tensor t = trunc();
  return lt(t).where(t.sub(1), t);
}
TINYT_INLINE Tensor Tensor::ceil() const {
  if (!dtype().is_float()) return *this;
  Tensor t = trunc();
  return gt(t).where(t.add(1), t);
}
/// Rounds half to even, like PyTorch.
TINYT_INLINE Tensor Tensor::round() const {
  if (!dtype().is_float()) return *this;
  Tensor f = floor(), d = sub(f);
  Tensor even = f.sub(f.mul(0.5).floor().mul(2)).eq(0);
  return d.gt(0.5).where(f.add(1), d.lt(0.5).where(f, even.where(f, f.add(1))));
}
TINYT_INLINE Tensor Tensor::isnan() const { return ne(*this); }
TINYT_INLINE Tensor Tensor::isinf() const { return dtype().is_float() ? eq(INFINITY).logical_or(eq(-INFINITY)) : Tensor::full_like(*this, false).cast(dtypes::bool_); }
TINYT_INLINE Tensor Tensor::isfinite() const { return isnan().logical_or(isinf()).logical_not(); }

TINYT_INLINE Tensor Tensor::relu() const { return maximum(0); }
TINYT_INLINE Tensor Tensor::relu6() const { return relu().minimum(6); }
TINYT_INLINE Tensor Tensor::sigmoid() const { return neg().exp().add(1).reciprocal(); }
TINYT_INLINE Tensor Tensor::logsigmoid() const { return neg().softplus().neg(); }
TINYT_INLINE Tensor Tensor::tanh() const { return mul(2).sigmoid().mul(2).sub(1); }
/// The exact GELU, x * Phi(x), as PyTorch's default.
TINYT_INLINE Tensor Tensor::gelu() const { return mul(0.5).mul(mul(1.0 / std::numbers::sqrt2).erf().add(1)); }
TINYT_INLINE Tensor Tensor::quick_gelu() const { return mul(mul(1.702).sigmoid()); }
TINYT_INLINE Tensor Tensor::silu() const { return mul(sigmoid()); }
TINYT_INLINE Tensor Tensor::elu(double alpha) const { return gt(0).where(*this, exp().sub(1).mul(alpha)); }
TINYT_INLINE Tensor Tensor::leaky_relu(double slope) const { return lt(0).where(mul(slope), *this); }
/// log(1 + exp(beta x)) / beta, linear above beta x > 20 like PyTorch.
TINYT_INLINE Tensor Tensor::softplus(double beta) const {
  Tensor bx = mul(beta);
  // log1p(exp(-|bx|)) + max(bx, 0) is stable on both sides
  Tensor stable = bx.abs().neg().exp().add(1).log().add(bx.relu()).div(beta);
  return bx.gt(20).where(*this, stable);
}
TINYT_INLINE Tensor Tensor::mish() const { return mul(softplus().tanh()); }
TINYT_INLINE Tensor Tensor::hardsigmoid() const { return add(3).relu6().div(6); }
TINYT_INLINE Tensor Tensor::hardswish() const { return mul(hardsigmoid()); }
TINYT_INLINE Tensor Tensor::hardtanh(double lo, double hi) const { return clip(lo, hi); }
/// erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7).
TINYT_INLINE Tensor Tensor::erf() const {
  Tensor x = cast(least_upper_float(dtype()));
  Tensor a = x.abs(), t = a.mul(0.3275911).add(1).reciprocal();
  Tensor poly = t.mul(1.061405429).add(-1.453152027).mul(t).add(1.421413741).mul(t).add(-0.284496736).mul(t).add(0.254829592).mul(t);
  Tensor y = poly.mul(a.square().neg().exp()).neg().add(1);
  return x.lt(0).where(y.neg(), y);
}
TINYT_INLINE Tensor Tensor::clip(const Tensor& lo, const Tensor& hi) const { return maximum(lo).minimum(hi); }
TINYT_INLINE Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const { return add(end.sub(*this).mul(weight)); }
TINYT_INLINE Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const { return mask.where(value, *this); }

/// Floor division, Python's `//`.
TINYT_INLINE Tensor floordiv(const Tensor& a, const Tensor& b) { return a.floordiv(b); }

}  // namespace tinyt::inline v0
