// Hand-coded opts, used when BEAM is off: a register tile for reductions that reuse a load
// across outputs (matmul, conv), sized to the machine's vector registers, with a cache tile over
// its rows when the reduction is long; separate accumulators for reductions over contiguous
// memory; and threads over the outermost loop when there is enough work to share.
#pragma once

#include "opt.hpp"

namespace tinyt::inline v0 {
namespace codegen {

namespace detail {
struct Access {
  bool store;
  UOp index;   // the address
  DType type;  // of the element
};
inline std::vector<Access> accesses(const UOp& ast) {
  std::vector<Access> out;
  for (const UOp& u : toposort(ast))
    if ((u.op() == Ops::LOAD || u.op() == Ops::STORE) && u.src(0).op() == Ops::INDEX &&
        u.src(0).src(0).op() == Ops::DEFINE_GLOBAL)
      out.push_back({u.op() == Ops::STORE, u.src(0).src(1), u.op() == Ops::STORE ? u.src(1).dtype() : u.dtype()});
  return out;
}

inline int64_t largest_divisor(int64_t n, const std::vector<int64_t>& choices) {
  for (int64_t c : choices)
    if (n % c == 0 && n >= c) return c;
  return 1;
}
}  // namespace detail

/// What the hand-coded opts know of the machine: the threads a kernel may use and the SIMD
/// registers its compiler vectorizes into (AVX2: 16 of 32 bytes; AVX-512: 32 of 64 bytes).
struct MachineShape {
  int64_t threads = 1;
  int64_t vector_bytes = 32;
  int64_t vector_registers = 16;
};

/// The opts chosen by hand-written rules for a kernel run on `machine`.
inline std::vector<Opt> hand_coded_opts(const UOp& ast, const MachineShape& machine) {
  const int64_t threads = machine.threads;
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
        if (!x.store && stride(x, a) == 0 && depends_on(x.index, ax[reduces.back()])) {
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
      // the tall side: an axis along which the loads that vary along the wide side stay put, so
      // each of their vectors feeds a whole column of the tile (a conv's output channels, not
      // its batch)
      std::stable_partition(reuse.begin() + 1, reuse.end(), [&](size_t a) {
        for (const detail::Access& x : acc)
          if (!x.store && stride(x, reuse[0]) != 0 && stride(x, a) != 0) return false;
        return true;
      });
      // Two vectors wide (a cache line of floats) and as tall as half the registers allow as
      // accumulators; the other half holds the loaded row and the broadcasts, so nothing spills.
      const detail::Access& out = *std::find_if(acc.begin(), acc.end(), [](const detail::Access& x) { return x.store; });
      const int64_t lanes = std::max<int64_t>(machine.vector_bytes / out.type.itemsize(), 1);
      const int64_t wide = detail::largest_divisor(range_size(ax[reuse[0]]), {2 * lanes, lanes, 4});
      const int64_t vectors_wide = std::max<int64_t>(wide / lanes, 1);
      std::vector<int64_t> talls;
      for (int64_t t = machine.vector_registers / 2 / vectors_wide; t >= 2; t /= 2) talls.push_back(t);
      const int64_t tall = detail::largest_divisor(range_size(ax[reuse[1]]), talls);
      const int64_t rows_id = ax[reuse[1]].arg()[0].as_int();
      int64_t reduce_length = 1;
      for (size_t r : reduces) reduce_length *= range_size(ax[r]);
      if (wide > 1) apply({OptOp::UPCAST, static_cast<int64_t>(reuse[0]), wide});
      if (tall > 1) apply({OptOp::UPCAST, static_cast<int64_t>(reuse[1]), tall});
      // A cache tile over the rows: each column tile is used by `local` row tiles in a row, so the
      // columns it reads (reduce length x wide) come from cache but once, when they outgrow L1.
      if (reduce_length * wide * out.type.itemsize() > 32 * 1024) {
        ax = axes(k);
        for (size_t i = 0; i < ax.size(); ++i)
          if (ax[i].arg()[0].as_int() == rows_id && range_kind(ax[i]) == RangeKind::loop)
            if (const int64_t local = detail::largest_divisor(range_size(ax[i]) / 2, {16, 8, 4}); local > 1)
              apply({OptOp::LOCAL, static_cast<int64_t>(i), local});
      }
    } else {
      // separate accumulators over each reduce axis that walks memory in order (a kernel may
      // hold several reductions: a softmax's maximum and sum); the last first, so the axis
      // numbers of the others stay put
      for (auto it = reduces.rbegin(); it != reduces.rend(); ++it) {
        bool contiguous = false;
        for (const detail::Access& x : acc) contiguous |= !x.store && stride(x, *it) == 1;
        const int64_t amount = detail::largest_divisor(range_size(ax[*it]), {16, 8, 4});
        if (contiguous && amount > 1 && range_size(ax[*it]) >= 64) apply({OptOp::UNROLL, static_cast<int64_t>(*it), amount});
      }
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
