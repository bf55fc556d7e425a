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
// The copies of `root` for every lane of `ranges` (the last varying fastest), what substituting
// each lane's values would give; made once per node and value of the ranges that node depends
// on, so a load no range moves stays one node, not a walk per lane (the 512 matmul's 256-lane
// tile: its copies in 0.7 ms instead of 2.9).
inline std::vector<UOp> lane_copies(const UOp& root, const std::vector<UOp>& ranges) {
  struct Copies {
    uint64_t mask = 0;    // the ranges the node depends on, by position in `ranges`
    std::vector<UOp> of;  // one per value of those, the last varying fastest
  };
  if (ranges.size() > 64) throw OptError(tinyt::detail::cat(ranges.size(), " register ranges in one kernel: 64 at most"));
  std::vector<size_t> sizes;
  for (const UOp& r : ranges) sizes.push_back(static_cast<size_t>(range_size(r)));
  std::vector<size_t> digits(ranges.size());  // a value of each range
  // the number of values of the ranges in `mask`, and its k-th one decoded into `digits`
  auto count = [&](uint64_t mask) {
    size_t n = 1;
    for (size_t i = 0; i < ranges.size(); ++i)
      if (mask >> i & 1) n *= sizes[i];
    return n;
  };
  auto decode = [&](size_t k, uint64_t mask) {
    for (size_t i = ranges.size(); i-- > 0;)
      if (mask >> i & 1) digits[i] = k % sizes[i], k /= sizes[i];
  };
  auto pick = [&](const Copies& c) -> const UOp& {  // the copy for `digits`
    size_t at = 0;
    for (size_t i = 0; i < ranges.size(); ++i)
      if (c.mask >> i & 1) at = at * sizes[i] + digits[i];
    return c.of[at];
  };
  std::unordered_map<const UOpNode*, Copies> done;
  for (const UOp& u : toposort(root)) {
    Copies c;
    if (const auto r = std::find(ranges.begin(), ranges.end(), u); r != ranges.end()) {
      c.mask = uint64_t{1} << (r - ranges.begin());
      for (int64_t v = 0; v < range_size(u); ++v) c.of.push_back(schedule::index_const(v));
    } else {
      for (const UOp& x : u.src()) c.mask |= done.at(x.get()).mask;
      if (c.mask == 0) c.of.push_back(u);  // moved by no range: itself
      for (size_t k = 0, n = c.mask ? count(c.mask) : 0; k < n; ++k) {
        decode(k, c.mask);
        std::vector<UOp> src;
        for (const UOp& x : u.src()) src.push_back(pick(done.at(x.get())));
        c.of.push_back(u.replace(std::move(src)));
      }
    }
    done.emplace(u.get(), std::move(c));
  }
  const Copies& top = done.at(root.get());
  const uint64_t all = ranges.empty() ? 0 : ~uint64_t{0} >> (64 - ranges.size());
  std::vector<UOp> out;
  for (size_t k = 0, n = count(all); k < n; ++k) {
    decode(k, all);
    out.push_back(pick(top));
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
        for (UOp value : detail::lane_copies(out.src(0), unrolled)) {
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
    if (const int64_t n = stream_lanes(store, upcast.back(), stream_bytes); n > 1) copies = detail::stream_runs(std::move(copies), n);
    stores.insert(stores.end(), copies.begin(), copies.end());
  }
  const UOp expanded = graph_rewrite(UOp(Ops::SINK, dtypes::void_, std::move(stores)), kernel_rules());
  // copies whose gate never holds (the extra lanes of a padded tile) write nothing
  std::vector<UOp> writing;
  for (const UOp& s : expanded.src())
    if (!(s.op() == Ops::STORE && s.src(0).src().size() > 2 && s.src(0).src(2).is_const() && !s.src(0).src(2).const_int())) writing.push_back(s);
  return writing.size() == expanded.src().size() ? expanded : expanded.replace(std::move(writing));
}

}  // namespace codegen
}  // namespace tinyt::inline v0
