// Out-of-line parts of shape.hpp: a symbolic size is simplified when it is made.
#pragma once

#include "shape.hpp"
#include "symbolic.hpp"

namespace tinyt::inline v0 {

TINYT_INLINE sint::sint(const UOp& u) {
  if (!u.dtype().scalar().is_int())
    throw DTypeError(detail::cat("sint: ", u.dtype().name(), " is not an integer"));
  UOp s = simplify(u.cast(dtypes::index));
  if (s.is_const())
    v_ = static_cast<int64_t>(s.const_int());
  else
    v_ = s;
}

}  // namespace tinyt::inline v0
