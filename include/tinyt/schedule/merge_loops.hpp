// Merging adjacent output loops: two loops whose index math only ever combines them as
// outer*B + inner (a contiguous store, an elementwise read of the same layout, a 1x1
// convolution's image rows and columns) become one loop of A*B iterations. Vector and cache
// tiles then see one long axis instead of a short one (a 46x46 image is 2116 pixels, not rows
// of 46), and the kernel does less loop bookkeeping.
#pragma once

#include <algorithm>

#include "lower.hpp"

namespace tinyt::inline v0 {
namespace schedule {

namespace detail {
inline size_t count_divmod(const UOp& ast) {
  size_t n = 0;
  for (const UOp& u : toposort(ast)) n += u.op() == Ops::IDIV || u.op() == Ops::MOD;
  return n;
}
}  // namespace detail

/// The kernel with adjacent output loops merged, innermost pairs first: loops `outer` (size A)
/// and `inner` (size B) become one loop R of A*B, outer = R // B and inner = R % B, kept when
/// after `rules` simplify the kernel has no more divisions and remainders than before (the
/// index math folded them away). Loops of symbolic size stay as they are, and no merged loop runs
/// past `max_merged` (2^24) iterations: a GPU launches an output loop along one dimension, whose
/// work-groups WebGPU caps at 65535 (of at most 256 work-items).
inline constexpr int64_t max_merged = int64_t{1} << 24;
inline UOp merge_adjacent_loops(UOp ast, const PatternMatcher& rules) {
  std::vector<UOp> loops;  // constant-size output loops, outermost first
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::RANGE && u.arg()[1].as_int() == static_cast<int64_t>(RangeKind::loop) && u.src(0).is_const())
      loops.push_back(u);
  std::sort(loops.begin(), loops.end(), [](const UOp& a, const UOp& b) { return a.arg()[0].as_int() < b.arg()[0].as_int(); });
  size_t divmod = detail::count_divmod(ast);
  for (size_t i = loops.size(); i-- > 1;) {
    const UOp &outer = loops[i - 1], &inner = loops[i];
    const UOp size = inner.src(0);
    if (outer.src(0).const_int() * size.const_int() > max_merged) continue;
    const UOp merged = range(outer.src(0).const_int() * size.const_int(), outer.arg()[0].as_int(), RangeKind::loop);
    const UOp candidate = graph_rewrite(substitute(ast, {{outer.get(), merged.idiv(size)}, {inner.get(), merged % size}}), rules);
    const size_t candidate_divmod = detail::count_divmod(candidate);
    if (candidate_divmod > divmod) continue;
    ast = candidate, divmod = candidate_divmod;
    loops[i - 1] = merged;  // it may merge with the loop outside it next
  }
  return ast;
}

}  // namespace schedule
}  // namespace tinyt::inline v0
