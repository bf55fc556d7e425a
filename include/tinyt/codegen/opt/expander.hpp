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

// The copies of `root` for every lane of `ranges` (the last varying fastest), what substituting
// each lane's values would give; made once per node and value of the ranges that node depends
// on, so a load no range moves stays one node, not a walk per lane (the 512 matmul's 256-lane
// tile: its copies in 0.7 ms instead of 2.9).
inline std::vector<UOp> lane_copies(const UOp& root, const std::vector<UOp>& ranges) {
  struct Copies {
    uint64_t mask = 0;     // the ranges the node depends on, by position in `ranges`
    std::vector<UOp> of;   // one per value of those, the last varying fastest
  };
  std::vector<int64_t> sizes;
  for (const UOp& r : ranges) sizes.push_back(range_size(r));
  // the copy of node `c` for the values `digits` of every range
  auto pick = [&](const Copies& c, const std::vector<int64_t>& digits) -> const UOp& {
    size_t at = 0;
    for (size_t i = 0; i < ranges.size(); ++i)
      if (c.mask >> i & 1) at = at * static_cast<size_t>(sizes[i]) + static_cast<size_t>(digits[i]);
    return c.of[at];
  };
  std::unordered_map<const UOpNode*, Copies> done;
  std::vector<int64_t> digits(ranges.size());
  for (const UOp& u : toposort(root)) {
    Copies c;
    if (const auto r = std::find(ranges.begin(), ranges.end(), u); r != ranges.end()) {
      c.mask = uint64_t{1} << (r - ranges.begin());
      for (int64_t v = 0; v < range_size(u); ++v) c.of.push_back(schedule::index_const(v));
      done.emplace(u.get(), std::move(c));
      continue;
    }
    for (const UOp& x : u.src()) c.mask |= done.at(x.get()).mask;
    if (c.mask == 0) {
      c.of.push_back(u);
      done.emplace(u.get(), std::move(c));
      continue;
    }
    size_t count = 1;
    for (size_t i = 0; i < ranges.size(); ++i)
      if (c.mask >> i & 1) count *= static_cast<size_t>(sizes[i]);
    for (size_t k = 0; k < count; ++k) {
      size_t rest = k;  // k's digits, the last range's fastest
      for (size_t i = ranges.size(); i-- > 0;)
        if (c.mask >> i & 1) digits[i] = static_cast<int64_t>(rest % static_cast<size_t>(sizes[i])), rest /= static_cast<size_t>(sizes[i]);
      std::vector<UOp> src;
      for (const UOp& x : u.src()) src.push_back(pick(done.at(x.get()), digits));
      c.of.push_back(u.replace(std::move(src)));
    }
    done.emplace(u.get(), std::move(c));
  }
  const Copies& top = done.at(root.get());
  std::vector<UOp> out;
  size_t lanes = 1;
  for (int64_t n : sizes) lanes *= static_cast<size_t>(n);
  for (size_t k = 0; k < lanes; ++k) {
    size_t rest = k;
    for (size_t i = ranges.size(); i-- > 0;) digits[i] = static_cast<int64_t>(rest % static_cast<size_t>(sizes[i])), rest /= static_cast<size_t>(sizes[i]);
    out.push_back(pick(top, digits));
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
    std::vector<UOp> copies = detail::lane_copies(store, upcast);
    if (const int64_t n = detail::stream_lanes(store, upcast, stream_bytes); n > 1) copies = detail::stream_runs(std::move(copies), n);
    stores.insert(stores.end(), copies.begin(), copies.end());
  }
  return graph_rewrite(UOp(Ops::SINK, dtypes::void_, std::move(stores)), kernel_rules());
}

}  // namespace codegen
}  // namespace tinyt::inline v0
