// float16 and bfloat16 arithmetic, defined once for every renderer and every host: an op on
// half values is computed in float32 and rounded to the narrow type where the graph says the
// value is narrow, as PyTorch's CPU kernels compute it. These rules rewrite a kernel so that
// narrow floats appear only in memory (loads, stores), in constants and in casts; every
// arithmetic op, comparison and reduction is float32.
//
// Why here and not in the renderers: a renderer that leaves half arithmetic to its compiler
// gets whatever the host does with it. GCC on a CPU with AVX512-FP16 computes _Float16 natively
// and, with contraction allowed, fuses a rounded product and a sum into one half FMA (one
// rounding, not two), so the C path and the LLVM path disagreed by an ulp on such hosts.
//
// A narrow REDUCE becomes a float32 REDUCE rounded once at the end: the graph names only its
// result, so the running value has no narrow type to be rounded to (PyTorch's CPU reductions of
// half values accumulate in float as well).
#pragma once

#include "../pattern.hpp"

namespace tinyt::inline v0 {
namespace codegen {

namespace detail {
inline bool is_narrow_float(DType dt) {
  const DType s = dt.scalar();
  return s == dtypes::float16 || s == dtypes::bfloat16;
}
/// float32 with the lanes of `dt`.
inline DType widened(DType dt) {
  return dt.count() > 1 ? dtypes::float32.vec(dt.count()) : dtypes::float32;
}

/// `u` computed in float32 from its narrow sources widened, rounded back when its result is narrow;
/// null when neither its result nor a source is a narrow float.
inline UOp in_float32(const UOp& u) {
  bool narrow = is_narrow_float(u.dtype());
  std::vector<UOp> src;
  for (const UOp& s : u.src()) {
    narrow |= is_narrow_float(s.dtype());
    src.push_back(is_narrow_float(s.dtype()) ? s.cast(widened(s.dtype())) : s);
  }
  if (!narrow) return {};
  const DType dt = is_narrow_float(u.dtype()) ? widened(u.dtype()) : u.dtype();
  return UOp(u.op(), dt, std::move(src), u.arg()).cast(u.dtype());
}
}  // namespace detail

/// Rules that leave no float16 or bfloat16 arithmetic in a kernel (see the top of this file).
inline const PatternMatcher& narrow_float_rules() {
  static const PatternMatcher pm{{
      // an op of narrow values -> the op in float32, rounded back
      {UPat(GroupOp::ALU).named("u"), [](auto& m) { return detail::in_float32(m["u"]); }},
      // a narrow reduction -> a float32 reduction of the widened values, rounded once
      {UPat(Ops::REDUCE).named("u"),
       [](auto& m) {
         const UOp& u = m["u"];
         if (!detail::is_narrow_float(u.dtype())) return UOp{};
         std::vector<UOp> src(u.src().begin(), u.src().end());
         src[0] = src[0].cast(detail::widened(src[0].dtype()));
         return UOp(Ops::REDUCE, detail::widened(u.dtype()), std::move(src), u.arg())
             .cast(u.dtype());
       }},
      // a narrow constant widened -> the float32 constant (every narrow value is a float32 one)
      {UPat(Ops::CAST, {UPat::cvar("c")}).named("u"),
       [](auto& m) {
         const UOp &u = m["u"], &c = m["c"];
         if (!detail::is_narrow_float(c.dtype()) || u.dtype() != detail::widened(c.dtype()))
           return UOp{};
         return UOp::const_(u.dtype(), c.const_float());
       }},
  }};
  return pm;
}

/// The kernel with its narrow float arithmetic computed in float32.
inline UOp lower_narrow_floats(const UOp& ast) { return graph_rewrite(ast, narrow_float_rules()); }

}  // namespace codegen
}  // namespace tinyt::inline v0
