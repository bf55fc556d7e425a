// Constant folding: what every ALU op computes on constants, exactly as a kernel would.
//
// Integers are computed in 128 bits and wrapped to their dtype, so overflow gives the two's
// complement result the generated code gives (and never C++ undefined behaviour here). Floats
// are computed in double and rounded to their dtype. Operations that are undefined in C (a
// division by zero, a shift past the width) do not fold: they return nothing.
#pragma once

#include <cmath>
#include <optional>

#include "uop.hpp"

namespace tinyt::inline v0 {

namespace detail {
inline double float_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
}

inline std::optional<i128> fold_int(Ops op, DType dt, const std::vector<i128>& v) {
  const DType s = dt.scalar();
  const int bits = s.is_index() ? 64 : 8 * s.itemsize();
  switch (op) {
    case Ops::NEG:
      return wrap_int(-v[0], s);
    case Ops::ADD:
      return wrap_int(v[0] + v[1], s);
    case Ops::SUB:
      return wrap_int(v[0] - v[1], s);
    // modular product: only the low bits survive wrap_int, and u128 cannot overflow into UB
    case Ops::MUL:
      return wrap_int(static_cast<i128>(static_cast<u128>(v[0]) * static_cast<u128>(v[1])), s);
    case Ops::IDIV:
      if (v[1] == 0) return std::nullopt;
      return wrap_int(v[0] / v[1], s);
    case Ops::MOD:
      if (v[1] == 0) return std::nullopt;
      return wrap_int(v[0] % v[1], s);
    case Ops::MAX:
      return std::max(v[0], v[1]);
    case Ops::CMPLT:
      return v[0] < v[1];
    case Ops::CMPNE:
      return v[0] != v[1];
    case Ops::CMPEQ:
      return v[0] == v[1];
    case Ops::AND:
      return wrap_int(v[0] & v[1], s);
    case Ops::OR:
      return wrap_int(v[0] | v[1], s);
    case Ops::XOR:
      return wrap_int(v[0] ^ v[1], s);
    case Ops::SHL:
      if (v[1] < 0 || v[1] >= bits) return std::nullopt;
      return wrap_int(static_cast<i128>(static_cast<u128>(v[0]) << static_cast<int>(v[1])), s);
    case Ops::SHR:
      if (v[1] < 0 || v[1] >= bits) return std::nullopt;
      return wrap_int(v[0] >> static_cast<int>(v[1]), s);
    case Ops::WHERE:
      return v[0] ? v[1] : v[2];
    default:
      return std::nullopt;
  }
}

inline std::optional<double> fold_float(Ops op, const std::vector<double>& v) {
  switch (op) {
    case Ops::NEG:
      return -v[0];
    case Ops::EXP2:
      return std::exp2(v[0]);
    case Ops::LOG2:
      return std::log2(v[0]);
    case Ops::SIN:
      return std::sin(v[0]);
    case Ops::SQRT:
      return std::sqrt(v[0]);
    case Ops::RECIPROCAL:
      return 1.0 / v[0];
    case Ops::TRUNC:
      return std::trunc(v[0]);
    case Ops::ADD:
      return v[0] + v[1];
    case Ops::SUB:
      return v[0] - v[1];
    case Ops::MUL:
      return v[0] * v[1];
    case Ops::FDIV:
      return v[0] / v[1];
    case Ops::POW:
      return std::pow(v[0], v[1]);
    case Ops::MAX:
      return float_max(v[0], v[1]);
    case Ops::CMPLT:
      return v[0] < v[1];
    case Ops::CMPNE:
      return v[0] != v[1];
    case Ops::CMPEQ:
      return v[0] == v[1];
    case Ops::WHERE:
      return v[0] != 0 ? v[1] : v[2];
    default:
      return std::nullopt;
  }
}

// The bits of a constant as stored in memory (little end first), for BITCAST.
inline uint64_t const_bits(const UOp& c) {
  const DType s = c.dtype().scalar();
  if (!s.is_float()) return static_cast<uint64_t>(c.const_int());
  const double d = c.const_float();
  switch (s.scalar_type()) {
    case ScalarType::float16:
      return std::bit_cast<uint16_t>(half_t(static_cast<float>(d)));
    case ScalarType::bfloat16:
      return bfloat16_t(static_cast<float>(d)).bits;
    case ScalarType::float32:
      return std::bit_cast<uint32_t>(static_cast<float>(d));
    default:
      return std::bit_cast<uint64_t>(d);
  }
}
inline UOp const_from_bits(DType dt, uint64_t bits) {
  const DType s = dt.scalar();
  switch (s.scalar_type()) {
    case ScalarType::float16:
      return UOp::const_(dt, static_cast<double>(static_cast<float>(
                                 std::bit_cast<half_t>(static_cast<uint16_t>(bits)))));
    case ScalarType::bfloat16: {
      bfloat16_t b;
      b.bits = static_cast<uint16_t>(bits);
      return UOp::const_(dt, static_cast<double>(static_cast<float>(b)));
    }
    case ScalarType::float32:
      return UOp::const_(dt,
                         static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits))));
    case ScalarType::float64:
      return UOp::const_(dt, std::bit_cast<double>(bits));
    default:
      return UOp::const_(dt, static_cast<i128>(bits));
  }
}
}  // namespace detail

/// The constant an ALU op, CAST or BITCAST gives on constant sources, or the empty UOp when the
/// op does not fold (not an ALU op, or undefined in C for these values).
inline UOp fold_constants(Ops op, DType dtype, const std::vector<UOp>& src) {
  for (const UOp& s : src)
    if (s.op() != Ops::CONST) return {};
  if (src.empty()) return {};
  if (op == Ops::CAST) {
    const UOp& x = src[0];
    if (!x.dtype().scalar().is_float()) return UOp::const_(dtype, x.const_int());
    const double d = x.const_float();
    if (dtype.scalar().is_float() || dtype.scalar().is_bool()) return UOp::const_(dtype, d);
    // float -> int is undefined in C outside the target's range (and for NaN): leave it to the
    // device
    if (!(d > static_cast<double>(dtypes::min_int(dtype)) - 1 &&
          d < static_cast<double>(dtypes::max_int(dtype)) + 1))
      return {};
    return UOp::const_(dtype, d);
  }
  if (op == Ops::BITCAST) {
    if (src[0].dtype().itemsize() != dtype.itemsize()) return {};
    return detail::const_from_bits(dtype, detail::const_bits(src[0]));
  }
  if (!GroupOp::ALU.contains(op)) return {};
  // the operands' dtype (for WHERE, the branches'); comparisons produce bool
  const DType in = op == Ops::WHERE ? src[1].dtype() : src[0].dtype();
  if (in.scalar().is_float()) {
    std::vector<double> v;
    for (const UOp& s : src) v.push_back(s.const_float());
    auto r = detail::fold_float(op, v);
    return r ? UOp::const_(dtype, *r) : UOp{};
  }
  std::vector<i128> v;
  for (const UOp& s : src) v.push_back(s.const_int());
  if (in.scalar().is_bool() && (op == Ops::ADD || op == Ops::MUL))
    op = op == Ops::ADD ? Ops::OR : Ops::AND;
  auto r = detail::fold_int(op, in, v);
  return r ? UOp::const_(dtype, *r) : UOp{};
}

/// The value a reduction of nothing gives, where its accumulator starts: 0 for ADD, 1 for MUL,
/// the dtype's lowest value for MAX (-inf for floats).
inline UOp reduce_identity(Ops op, DType dt) {
  switch (op) {
    case Ops::ADD: return UOp::const_(dt, 0);
    case Ops::MUL: return UOp::const_(dt, 1);
    case Ops::MAX:
      if (dt.scalar().is_float()) return UOp::const_(dt, -INFINITY);
      return UOp::const_(dt, dtypes::min_int(dt));
    default: throw InternalError(tinyt::detail::cat("no identity element for reduce op ", op_name(op)));
  }
}

}  // namespace tinyt::inline v0
