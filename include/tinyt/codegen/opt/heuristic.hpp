// Hand-coded opts, used when BEAM is off: a register tile for reductions that reuse a load
// across outputs (matmul, conv), separate accumulators for reductions over contiguous memory,
// and threads over the outermost loop when there is enough work to share.
#pragma once

#include "opt.hpp"

namespace tinyt::inline v0 {
namespace codegen {

namespace detail {
struct Access {
  bool store;
  UOp index;  // the address
};
inline std::vector<Access> accesses(const UOp& ast) {
  std::vector<Access> out;
  for (const UOp& u : toposort(ast))
    if ((u.op() == Ops::LOAD || u.op() == Ops::STORE) && u.src(0).op() == Ops::INDEX &&
        u.src(0).src(0).op() == Ops::DEFINE_GLOBAL)
      out.push_back({u.op() == Ops::STORE, u.src(0).src(1)});
  return out;
}

inline int64_t largest_divisor(int64_t n, std::initializer_list<int64_t> choices) {
  for (int64_t c : choices)
    if (n % c == 0 && n >= c) return c;
  return 1;
}
}  // namespace detail

/// The opts chosen by hand-written rules for a kernel run by up to `threads` threads.
inline std::vector<Opt> hand_coded_opts(const UOp& ast, int64_t threads) {
  std::vector<Opt> opts;
  UOp k = ast;
  auto apply = [&](Opt o) {
    try {
      k = apply_opt(k, o);
      opts.push_back(o);
      return true;
    } catch (const OptError&) {
      return false;
    }
  };
  std::vector<UOp> ax = axes(k);
  const std::vector<UOp> every = all_ranges(k);
  const std::vector<detail::Access> acc = detail::accesses(k);
  std::vector<size_t> loops, reduces;
  for (size_t i = 0; i < ax.size(); ++i) (range_kind(ax[i]) == RangeKind::reduce ? reduces : loops).push_back(i);
  auto stride = [&](const detail::Access& a, size_t axis) { return detail::stride_of(a.index, ax[axis], every); };

  if (!reduces.empty()) {
    // output axes along which some load that the reduction reads stays put: copies share it
    std::vector<size_t> reuse;
    for (size_t a : loops)
      for (const detail::Access& x : acc)
        if (!x.store && stride(x, a) == 0 && detail::depends_on(x.index, ax[reduces.back()])) {
          reuse.push_back(a);
          break;
        }
    if (reuse.size() >= 2) {
      // a register tile: the axis the output is contiguous along gets the wide side
      std::stable_sort(reuse.begin(), reuse.end(), [&](size_t a, size_t b) {
        auto unit = [&](size_t x) {
          for (const detail::Access& s : acc)
            if (s.store) return stride(s, x) == 1;
          return false;
        };
        return unit(a) > unit(b);
      });
      const int64_t wide = detail::largest_divisor(range_size(ax[reuse[0]]), {32, 16, 8, 4});
      const int64_t tall = detail::largest_divisor(range_size(ax[reuse[1]]), {8, 4, 2});
      if (wide > 1) apply({OptOp::UPCAST, static_cast<int64_t>(reuse[0]), wide});
      if (tall > 1) apply({OptOp::UPCAST, static_cast<int64_t>(reuse[1]), tall});
    } else {
      // separate accumulators over the innermost reduce axis when it walks memory in order
      const size_t r = reduces.back();
      bool contiguous = false;
      for (const detail::Access& x : acc) contiguous |= !x.store && stride(x, r) == 1;
      const int64_t amount = detail::largest_divisor(range_size(ax[r]), {16, 8, 4});
      if (contiguous && amount > 1 && range_size(ax[r]) >= 64) apply({OptOp::UNROLL, static_cast<int64_t>(r), amount});
    }
  }

  // threads over the outermost loop that splits evenly, when the kernel does enough work
  int64_t work = 1;
  for (const UOp& r : all_ranges(k)) work *= range_size(r);
  if (threads > 1 && work >= (int64_t{1} << 16)) {
    ax = axes(k);
    for (size_t i = 0; i < ax.size(); ++i)
      if (range_kind(ax[i]) == RangeKind::loop && range_size(ax[i]) % threads == 0 &&
          apply({OptOp::THREAD, static_cast<int64_t>(i), threads}))
        break;
  }
  return opts;
}

}  // namespace codegen
}  // namespace tinyt::inline v0
