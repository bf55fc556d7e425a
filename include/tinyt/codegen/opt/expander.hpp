// The expander: register ranges (UPCAST and UNROLL) are not loops; each becomes copies of the
// code that uses it, one per value. An upcast store becomes one store per value, so a reduction
// below it gets one accumulator per output (a register tile); an unrolled reduction becomes one
// accumulator per value, combined after the loop. The copies are scalar code in a row, which the
// compiler's vectorizer turns into SIMD.
//
// Streaming stores: where a kernel fills a buffer bigger than the caches hold (`stream_bytes`),
// the copies of its store along a contiguous upcast range become whole aligned vectors, one
// STORE of a VECTORIZE each, marked to bypass the caches (non-temporal): a plain store first
// reads the line it writes, a third of an elementwise kernel's memory traffic.
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

// The lanes of a streaming vector a store of `upcast` ranges (the fastest-varying last) may be
// cut into: a buffer of at least `stream_bytes`, written ungated along a last range of stride 1,
// in a dtype stored as is (no bool, no narrow float), in whole 64-byte cache lines (the
// allocators align buffers to 64); 0 when none. A part of a line written past the cache costs
// more than a plain store: the CNN's conv 1, rows of 24 floats in vectors of 8, ran at half speed.
inline int64_t stream_lanes(const UOp& store, const std::vector<UOp>& upcast, int64_t stream_bytes) {
  const UOp& idx = store.src(0);
  if (stream_bytes <= 0 || upcast.empty() || idx.src(0).op() != Ops::DEFINE_GLOBAL || idx.src().size() > 2) return 0;
  const DType dt = idx.src(0).dtype().base();
  if (dt.count() != 1 || dt.scalar().is_bool() || dt.itemsize() < 4 || !(dt.scalar().is_float() || dt.scalar().is_int()))
    return 0;
  if (idx.src(0).dtype().size() * dt.itemsize() < stream_bytes || stride_of(idx.src(1), upcast.back(), all_ranges(store)) != 1)
    return 0;
  const int64_t n = 64 / dt.itemsize();
  return range_size(upcast.back()) % n == 0 ? n : 0;
}

// The copies of a store, one per lane; runs of `n` lanes that write consecutive elements from a
// multiple of n on become one streaming STORE of their VECTORIZE.
inline std::vector<UOp> stream_runs(std::vector<UOp> copies, int64_t n) {
  std::vector<UOp> out;
  for (size_t i = 0; i + static_cast<size_t>(n) <= copies.size(); i += static_cast<size_t>(n)) {
    const UOp base = simplify(copies[i].src(0).src(1));
    bool whole = linear_form(base).divisible_by(n);
    std::vector<UOp> values;
    for (int64_t k = 0; k < n && whole; ++k) {
      const UOp& c = copies[i + static_cast<size_t>(k)];
      const UOp step = simplify(c.src(0).src(1) - base);
      whole = step.is_const() && step.const_int() == k;
      values.push_back(c.src(1));
    }
    if (!whole) {
      out.insert(out.end(), copies.begin() + static_cast<std::ptrdiff_t>(i), copies.begin() + static_cast<std::ptrdiff_t>(i) + n);
      continue;
    }
    const UOp& idx = copies[i].src(0);
    out.push_back(UOp(Ops::STORE, dtypes::void_,
                      {idx.replace({idx.src(0), base}), UOp(Ops::VECTORIZE, values[0].dtype().vec(static_cast<int>(n)), values)},
                      "stream"));
  }
  return out;
}
}  // namespace detail

/// The kernel AST with its UPCAST and UNROLL ranges expanded into copies; stores that fill a
/// buffer of `stream_bytes` or more (0: none) along a contiguous upcast range stream.
inline UOp expand_registers(const UOp& ast, int64_t stream_bytes = 0) {
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
    std::vector<UOp> copies;
    for (const auto& lane : detail::lanes(upcast)) copies.push_back(substitute(store, lane));
    if (const int64_t n = detail::stream_lanes(store, upcast, stream_bytes); n > 1) copies = detail::stream_runs(std::move(copies), n);
    stores.insert(stores.end(), copies.begin(), copies.end());
  }
  return graph_rewrite(UOp(Ops::SINK, dtypes::void_, std::move(stores)), kernel_rules());
}

}  // namespace codegen
}  // namespace tinyt::inline v0
