// The expander: register ranges (UPCAST and UNROLL) are not loops; each becomes copies of the
// code that uses it, one per value. An upcast store becomes one store per value, so a reduction
// below it gets one accumulator per output (a register tile); an unrolled reduction becomes one
// accumulator per value, combined after the loop. The copies are scalar code in a row, which the
// compiler's vectorizer turns into SIMD.
#pragma once

#include <numeric>

#include "opt.hpp"

namespace tinyt::inline v0 {
namespace codegen {

namespace detail {
// every assignment of values to `ranges`, the last range varying fastest
inline std::vector<std::unordered_map<const UOpNode*, UOp>> lanes(const std::vector<UOp>& ranges) {
  std::vector<std::unordered_map<const UOpNode*, UOp>> out(1);
  for (const UOp& r : ranges) {
    std::vector<std::unordered_map<const UOpNode*, UOp>> next;
    for (const auto& lane : out)
      for (int64_t v = 0; v < range_size(r); ++v) {
        next.push_back(lane);
        next.back()[r.get()] = schedule::index_const(v);
      }
    out = std::move(next);
  }
  return out;
}

inline std::vector<UOp> ranges_of_kind(const std::vector<UOp>& nodes, RangeKind kind) {
  std::vector<UOp> out;
  for (const UOp& u : nodes)
    if (u.op() == Ops::RANGE && range_kind(u) == kind) out.push_back(u);
  std::sort(out.begin(), out.end(), range_before);
  return out;
}
}  // namespace detail

/// The kernel AST with its UPCAST and UNROLL ranges expanded into copies.
inline UOp expand_registers(const UOp& ast) {
  // unrolled reductions first, bottom up: REDUCE(x, r, u) → op over values c of REDUCE(x[u=c], r)
  std::unordered_map<const UOpNode*, UOp> done;
  for (const UOp& u : toposort(ast)) {
    std::vector<UOp> src;
    for (const UOp& s : u.src()) src.push_back(done.at(s.get()));
    UOp out = u.replace(std::move(src));
    if (u.op() == Ops::REDUCE) {
      std::vector<UOp> unrolled, kept;
      for (size_t i = 1; i < out.src().size(); ++i)
        (range_kind(out.src(i)) == RangeKind::unroll ? unrolled : kept).push_back(out.src(i));
      if (!unrolled.empty()) {
        UOp combined;
        for (const auto& lane : detail::lanes(unrolled)) {
          UOp value = substitute(out.src(0), lane);
          if (!kept.empty()) {
            std::vector<UOp> rsrc{value};
            rsrc.insert(rsrc.end(), kept.begin(), kept.end());
            value = UOp(Ops::REDUCE, out.dtype(), std::move(rsrc), out.arg());
          }
          combined = combined ? combined.alu(out.arg().get<Ops>(), {value}) : value;
        }
        out = combined;
      }
    }
    done[u.get()] = out;
  }
  // then upcast stores: one store per value of the upcast ranges it depends on
  std::vector<UOp> stores;
  for (const UOp& store : done.at(ast.get()).src()) {
    std::vector<UOp> upcast = detail::ranges_of_kind(toposort(store), RangeKind::upcast);
    // the copies go in address order (the range with the smallest stride varies fastest), which
    // is the order a vectorizer looks for
    const std::vector<UOp> every = all_ranges(store);
    std::vector<int64_t> strides;
    for (const UOp& r : upcast) strides.push_back(detail::stride_of(store.src(0).src(1), r, every).value_or(INT64_MAX));
    std::vector<size_t> order(upcast.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return strides[a] > strides[b]; });
    std::vector<UOp> sorted;
    for (size_t i : order) sorted.push_back(upcast[i]);
    upcast = std::move(sorted);
    if (upcast.empty()) {
      stores.push_back(store);
      continue;
    }
    for (const auto& lane : detail::lanes(upcast)) stores.push_back(substitute(store, lane));
  }
  return graph_rewrite(UOp(Ops::SINK, dtypes::void_, std::move(stores)), kernel_rules());
}

}  // namespace codegen
}  // namespace tinyt::inline v0
