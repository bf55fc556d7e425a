// Kernels for GPUs: a kernel's output loops become work-items. Up to three loops, innermost
// first, become the launch's dimensions 0, 1, 2 (RANGEs of kind `global`, whose value is the
// work-item's index), so neighbouring work-items touch neighbouring memory; loops further out stay
// loops inside each work-item. Work-groups are sized to divide each dimension exactly, so no
// work-item falls outside the kernel's range and none needs a bounds check.
//
// A kernel with a GROUP or GROUPTOP opt has a `group` range, a reduce axis split across the
// work-items of one work-group: it becomes dimension 0, a whole work-group, and the output loops
// take dimensions 1 and 2. Each reduction over it is lowered to a partial reduction per
// work-item, then combined across the group; every work-item ends up with the result, and
// work-item 0 stores it. On a device with warps (a target's `warp`: CUDA's 32) whose size divides
// the group, the partials of a warp are combined in registers by xor shuffles (SHFL_XOR: after
// log2(warp) steps every lane holds its warp's result), and only one value per warp goes through
// local memory and the barrier (none when the group is one warp); elsewhere every partial is
// stored to local memory and, after a barrier, every work-item reduces them all.
//
// A kernel whose work-groups are part of its code (LOCAL's tiles of work-items, STAGE's copies
// shared by a work-group) is launched exactly as made: each dimension has a `group_id` range (the
// work-group's index: CUDA's blockIdx, OpenCL's get_group_id) and a `local_id` range (the
// work-item's index in it: threadIdx, get_local_id), and the launcher does not choose.
#pragma once

#include <array>

#include "linearize.hpp"
#include "narrow_floats.hpp"

namespace tinyt::inline v0 {
namespace codegen {

/// CUDA's grid allows 65535 blocks along y and z: a dimension that large stays on x or a loop.
inline constexpr int64_t max_outer_dimension = 65535;

/// The work-group range of a kernel (GROUP), or nothing.
inline UOp group_range(const UOp& ast) {
  for (const UOp& r : all_ranges(ast))
    if (range_kind(r) == RangeKind::group) return r;
  return {};
}

/// Whether a value of `dt` crosses a warp in one shuffle (CUDA's __shfl_xor_sync: 32- and 64-bit
/// integers and floats).
inline bool shuffles(DType dt) {
  const DType s = dt.scalar();
  return !s.is_bool() && s.count() == 1 && (s.itemsize() == 4 || s.itemsize() == 8);
}

/// The AST with each reduction over the work-group range lowered to partials combined across the
/// group (see the top of this file); `warp`: the device's warp size (0: it has none). Narrow
/// floats must be lowered first: partials are float32.
inline UOp lower_groups(const UOp& ast, int64_t warp = 0) {
  const UOp lane = group_range(ast);
  if (!lane) return ast;
  const int64_t n = range_size(lane);
  int64_t next_axis = detail::next_axis_id(ast), buffers = 0;
  std::unordered_map<const UOpNode*, UOp> done;
  for (const UOp& u : toposort(ast)) {
    std::vector<UOp> src;
    for (const UOp& s : u.src()) src.push_back(done.at(s.get()));
    UOp x = u.replace(std::move(src));
    if (x.op() == Ops::REDUCE && std::find(x.src().begin() + 1, x.src().end(), lane) != x.src().end()) {
      std::vector<UOp> partial_src{x.src(0)};
      for (size_t i = 1; i < x.src().size(); ++i)
        if (!(x.src(i) == lane)) partial_src.push_back(x.src(i));
      UOp partial = partial_src.size() == 1 ? x.src(0) : UOp(Ops::REDUCE, x.dtype(), partial_src, x.arg());
      // what meets in local memory: every work-item's partial, or each warp's, from its first lane
      int64_t slots = n;
      UOp slot = lane, writes;
      if (warp > 1 && n % warp == 0 && shuffles(x.dtype())) {
        for (int64_t mask = warp / 2; mask >= 1; mask /= 2)
          partial = partial.alu(x.arg().get<Ops>(), {UOp(Ops::SHFL_XOR, partial.dtype(), {partial}, mask)});
        slots = n / warp;
        slot = lane.alu(Ops::IDIV, {schedule::index_const(warp)});
        writes = lane.alu(Ops::MOD, {schedule::index_const(warp)}).eq(schedule::index_const(0));
      }
      if (slots == 1) {  // one warp: every lane holds the group's result
        x = partial;
      } else {
        const UOp local(Ops::DEFINE_LOCAL, x.dtype().ptr(slots, AddrSpace::local), {}, buffers++);
        const UOp at(Ops::INDEX, local.dtype(), {local, slot});
        const UOp store(Ops::STORE, dtypes::void_, {writes ? gated(at, writes) : at, partial});
        const UOp barrier(Ops::BARRIER, dtypes::void_, {store});
        const UOp k = schedule::range(slots, next_axis++, RangeKind::reduce);
        const UOp read(Ops::LOAD, x.dtype(), {UOp(Ops::INDEX, local.dtype(), {local, k}), barrier});
        x = UOp(Ops::REDUCE, x.dtype(), {read, k}, x.arg());
      }
    } else if (x.op() == Ops::STORE && x.src(0).src(0).op() == Ops::DEFINE_GLOBAL) {
      // every work-item holds the result: the first stores it
      x = UOp(Ops::STORE, dtypes::void_, {gated(x.src(0), lane.eq(schedule::index_const(0))), x.src(1)});
    }
    done[u.get()] = x;
  }
  return done.at(ast.get());
}

/// The warp range of a kernel (TC), or nothing.
inline UOp warp_range(const UOp& ast) {
  for (const UOp& r : all_ranges(ast))
    if (range_kind(r) == RangeKind::warp) return r;
  return {};
}

/// Whether a kernel's work-groups are part of its code: it has tiles of work-items (LOCAL on a
/// GPU) or copies the work-group shares (STAGE). Its launch is then exact: dimension d has as
/// many work-groups as its `group_id` range and as many work-items in each as its `local_id` range.
inline bool fixed_work_groups(const UOp& ast) {
  for (const UOp& u : toposort(ast))
    if ((u.op() == Ops::RANGE && range_kind(u) == RangeKind::local) || is_stage(u)) return true;
  return false;
}

/// The AST with up to three output loops as work-item ranges (RANGE arg: axis, kind, dimension).
/// Most kernels' loops become `global` ranges (a work-item's index in the launch; the work-group
/// sizes are the launcher's choice); a work-group range, or a warp's lanes, take dimension 0.
/// A kernel with fixed work-groups (see above) has `local_id` ranges instead: a warp's lanes
/// first, then its tiles (LOCAL, in the order they were made), and its outer loops become
/// `group_id` ranges, the innermost first. OptError when a grouped reduction would stay in a loop
/// (its barrier would be reached a different number of times than the local memory is reused).
inline UOp map_work_items(const UOp& ast) {
  std::vector<UOp> loops, tiles;
  for (const UOp& r : all_ranges(ast)) {
    if (range_kind(r) == RangeKind::loop) loops.push_back(r);
    if (range_kind(r) == RangeKind::local) tiles.push_back(r);  // (all_ranges: in the order made)
  }
  const UOp lane = group_range(ast), warp = warp_range(ast);
  if (lane && warp) throw OptError("GROUP and TC: a kernel's dimension 0 is a work-group or a warp, not both");
  const bool fixed = fixed_work_groups(ast);
  if (lane && fixed) throw OptError("GROUP with LOCAL or STAGE: a grouped reduction's work-group is its dimension 0, whole");
  std::unordered_map<const UOpNode*, UOp> work_items;
  int64_t dim = 0, in_group = 0;
  auto as_work_item = [&](const UOp& r, RangeKind kind, int64_t d) {
    work_items[r.get()] = UOp(Ops::RANGE, dtypes::index, {r.src(0)}, Arg{r.arg()[0].as_int(), static_cast<int64_t>(kind), d});
  };
  if (fixed) {
    if (warp) as_work_item(warp, RangeKind::local_id, in_group++);
    for (const UOp& t : tiles) {
      if (in_group == 3) throw OptError("LOCAL: a work-group has 3 dimensions; the kernel has more tiles of work-items");
      if (is_symbolic(t)) throw OptError("LOCAL: a tile of work-items of symbolic length");
      as_work_item(t, RangeKind::local_id, in_group++);
    }
  } else {
    if (lane) as_work_item(lane, RangeKind::global, dim++);
    if (warp) as_work_item(warp, RangeKind::global, dim++);
  }
  for (auto it = loops.rbegin(); it != loops.rend() && dim < 3; ++it) {
    // this and the outer loops stay loops; a symbolic one is launched as wide as its value
    // (a kernel with fixed work-groups keeps it a loop: its work-groups are counted when made)
    if ((dim > 0 && range_size(*it) > max_outer_dimension) || (fixed && is_symbolic(*it))) break;
    as_work_item(*it, fixed ? RangeKind::group_id : RangeKind::global, dim);
    ++dim;
  }
  if (lane && (static_cast<size_t>(dim) < loops.size() + 1 || !tiles.empty()))
    throw OptError(tinyt::detail::cat("GROUP: ", loops.size(), " output loops and ", tiles.size(),
                                      " tiles; a grouped kernel has 2 launch dimensions for its outputs and no loops around them"));
  return work_items.empty() ? ast : substitute(ast, work_items);
}

/// The largest divisor of `n` that is at most `limit` (1 when n is 0): a launch dimension's work-group.
inline int64_t largest_divisor(int64_t n, int64_t limit) {
  for (int64_t l = std::min(n, limit); l > 1; --l)
    if (n % l == 0) return l;
  return 1;
}

/// The launch of a program (global and local work-items per dimension) with its variables bound
/// to `values`: a symbolic dimension is as wide as its size now, in work-groups of the largest
/// divisor that fits beside the other dimensions'.
inline std::pair<std::array<int64_t, 3>, std::array<int64_t, 3>> launch_sizes(const Program& p, const std::vector<int64_t>& values) {
  std::array<int64_t, 3> global = p.global_size, local = p.local_size;
  int64_t left = std::max<int64_t>(p.max_local, 1);
  for (size_t d = 0; d < 3; ++d)
    if (!p.symbolic_global[d]) left /= local[d];
  std::unordered_map<const UOpNode*, int64_t> at;
  for (size_t i = 0; i < std::min(p.vars.size(), values.size()); ++i) at[p.vars[i].get()] = values[i];
  for (size_t d = 0; d < 3; ++d) {
    if (!p.symbolic_global[d]) continue;
    global[d] = std::max<int64_t>(evaluate(p.symbolic_global[d], at), 0);
    local[d] = largest_divisor(global[d], left);
    left /= local[d];
  }
  return {global, local};
}

/// Work-group sizes for a program's launch: per dimension, from 0, the largest divisor of its
/// size that keeps the group within `max_local` work-items.
inline std::array<int64_t, 3> local_sizes(const std::array<int64_t, 3>& global, int64_t max_local) {
  std::array<int64_t, 3> local{1, 1, 1};
  int64_t left = std::max<int64_t>(max_local, 1);
  for (size_t d = 0; d < 3; ++d) {
    local[d] = largest_divisor(global[d], left);
    left /= local[d];
  }
  return local;
}

}  // namespace codegen
}  // namespace tinyt::inline v0
