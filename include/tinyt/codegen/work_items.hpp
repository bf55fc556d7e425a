// Kernels for GPUs: a kernel's output loops become work-items. Up to three loops, innermost
// first, become the launch's dimensions 0, 1, 2 (RANGEs of kind `global`, whose value is the
// work-item's index), so neighbouring work-items touch neighbouring memory; loops further out stay
// loops inside each work-item. Work-groups are sized to divide each dimension exactly, so no
// work-item falls outside the kernel's range and none needs a bounds check.
#pragma once

#include <array>

#include "linearize.hpp"

namespace tinyt::inline v0 {
namespace codegen {

/// CUDA's grid allows 65535 blocks along y and z: a dimension that large stays on x or a loop.
inline constexpr int64_t max_outer_dimension = 65535;

/// The AST with up to three output loops as work-item ranges (RANGE arg: axis, kind, dimension).
inline UOp map_work_items(const UOp& ast) {
  std::vector<UOp> loops;
  for (const UOp& r : all_ranges(ast))
    if (range_kind(r) == RangeKind::loop) loops.push_back(r);
  std::unordered_map<const UOpNode*, UOp> work_items;
  int64_t dim = 0;
  for (auto it = loops.rbegin(); it != loops.rend() && dim < 3; ++it) {
    if (dim > 0 && range_size(*it) > max_outer_dimension) break;  // this and the outer loops stay loops
    work_items[it->get()] = UOp(Ops::RANGE, dtypes::index, {it->src(0)},
                                Arg{it->arg()[0].as_int(), static_cast<int64_t>(RangeKind::global), dim});
    ++dim;
  }
  return work_items.empty() ? ast : substitute(ast, work_items);
}

/// Work-group sizes for a program's launch: per dimension, from 0, the largest divisor of its
/// size that keeps the group within `max_local` work-items.
inline std::array<int64_t, 3> local_sizes(const std::array<int64_t, 3>& global, int64_t max_local) {
  std::array<int64_t, 3> local{1, 1, 1};
  int64_t left = std::max<int64_t>(max_local, 1);
  for (size_t d = 0; d < 3; ++d) {
    for (int64_t l = std::min(global[d], left); l >= 1; --l)
      if (global[d] % l == 0) {
        local[d] = l;
        break;
      }
    left /= local[d];
  }
  return local;
}

}  // namespace codegen
}  // namespace tinyt::inline v0
