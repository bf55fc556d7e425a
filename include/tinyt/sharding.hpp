// How a tensor on several devices is split among them, and how each op passes that on. A sharded
// tensor's graph is the graph of the whole tensor (shapes are whole shapes); its MULTI nodes hold
// the devices' parts. Which axis is split follows from the ops, as a tensor's shape does: movement
// ops move it or refuse (ShapeError naming it), a reduction over it ends replicated. The multi
// pass (schedule/multi.hpp) then writes each op once per device.
#pragma once

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "error.hpp"
#include "shape.hpp"

namespace tinyt::inline v0 {

/// How a tensor on several devices is split: along `axis` in parts of `sizes` (in the order of
/// its devices), or replicated (axis -1: every device holds the whole tensor).
struct Sharding {
  int axis = -1;
  std::vector<int64_t> sizes;

  bool sharded() const { return axis >= 0; }
  /// Device i's part of the axis: (start, end).
  std::pair<int64_t, int64_t> bounds(size_t i) const {
    const int64_t start = std::accumulate(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(i), int64_t{0});
    return {start, start + sizes[i]};
  }
  /// The shape of device i's part of a tensor of shape `whole`.
  Shape part_shape(Shape whole, size_t i) const {
    if (sharded()) whole[static_cast<size_t>(axis)] = sizes[i];
    return whole;
  }
  /// Where device i's part lies in a tensor of shape `whole`: (start, end) along each axis.
  std::vector<std::pair<sint, sint>> part_range(const Shape& whole, size_t i) const {
    std::vector<std::pair<sint, sint>> range;
    for (const sint& d : whole) range.emplace_back(0, d);
    if (sharded()) {
      const auto [start, end] = bounds(i);
      range[static_cast<size_t>(axis)] = {start, end};
    }
    return range;
  }
  friend bool operator==(const Sharding&, const Sharding&) = default;
};

/// `n` split in `parts` as tinygrad does: ceil(n / parts) each, the last ones smaller (0 when
/// nothing is left).
inline std::vector<int64_t> shard_sizes(int64_t n, size_t parts) {
  const auto k = static_cast<int64_t>(parts);
  const int64_t each = (n + k - 1) / k;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < k; ++i) out.push_back(std::clamp<int64_t>(n - each * i, 0, each));
  return out;
}

namespace sharding {
namespace detail {
using tinyt::detail::cat;

inline std::string axis_text(const Sharding& s, const std::string& devices) {
  std::string parts;
  for (int64_t n : s.sizes) parts += (parts.empty() ? "" : "+") + std::to_string(n);
  return cat("axis ", s.axis, " (split over ", devices, " as ", parts, ")");
}
inline int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(to),
                         int64_t{1}, std::multiplies<>());
}
inline std::vector<int64_t> concrete(const Shape& s, const char* op, const Sharding& in, const std::string& devices) {
  if (!s.is_concrete())
    throw ShapeError(cat(op, ": ", s, " is symbolic; a tensor sharded along ", axis_text(in, devices),
                         " takes concrete shapes"));
  return s.to_vector();
}

// RESHAPE: the split axis becomes the last new axis whose sizes before it multiply to those
// before the old one; each device's part must be a range of that axis (no element moves).
inline Sharding reshape(const Shape& in_shape, const Shape& out_shape, const Sharding& in, const std::string& devices) {
  const std::vector<int64_t> old_shape = concrete(in_shape, "reshape", in, devices);
  const std::vector<int64_t> new_shape = concrete(out_shape, "reshape", in, devices);
  const auto a = static_cast<size_t>(in.axis);
  const int64_t before = product(old_shape, 0, a), inner_old = product(old_shape, a + 1, old_shape.size());
  int64_t new_axis = -1;
  for (size_t j = 0; j < new_shape.size(); ++j)
    if (product(new_shape, 0, j) == before) new_axis = static_cast<int64_t>(j);
  auto refuse = [&] {
    return ShapeError(cat("reshape: ", in_shape, " -> ", out_shape, " would move elements between the devices of ",
                          axis_text(in, devices), "; gather it first with .to(device)"));
  };
  if (new_axis < 0) throw refuse();
  const int64_t inner_new = product(new_shape, static_cast<size_t>(new_axis) + 1, new_shape.size());
  Sharding out{static_cast<int>(new_axis), {}};
  for (size_t i = 0; i < in.sizes.size(); ++i) {
    const auto [start, end] = in.bounds(i);
    if (inner_new == 0 || (start * inner_old) % inner_new || (end * inner_old) % inner_new) throw refuse();
    out.sizes.push_back((end - start) * inner_old / inner_new);
  }
  return out;
}
}  // namespace detail

/// What a movement op (`op` with `arg`, from `in_shape` to `out_shape`) makes of the sharding
/// `in` of its source on `devices`; a ShapeError naming the axis when it would split or move a
/// device's part.
inline Sharding through_movement(Ops op, const Arg& arg, const Shape& in_shape, const Shape& out_shape,
                                 const Sharding& in, const std::string& devices) {
  using detail::cat;
  if (!in.sharded()) return in;
  const auto a = static_cast<size_t>(in.axis);
  switch (op) {
    case Ops::RESHAPE: return detail::reshape(in_shape, out_shape, in, devices);
    case Ops::PERMUTE: {
      const std::vector<int64_t> order = arg.ints();
      const auto at = std::find(order.begin(), order.end(), in.axis) - order.begin();
      return Sharding{static_cast<int>(at), in.sizes};
    }
    case Ops::EXPAND:
      if (!(out_shape[a] == in_shape[a]))
        throw ShapeError(cat("expand: ", in_shape, " -> ", out_shape, " expands ", detail::axis_text(in, devices)));
      return in;
    case Ops::PAD: case Ops::SHRINK: {
      const char* name = op == Ops::PAD ? "pad" : "shrink";
      const Arg& pair = arg.tuple()[a];
      const bool whole = op == Ops::PAD ? arg_sint(pair[0]) == 0 && arg_sint(pair[1]) == 0
                                        : arg_sint(pair[0]) == 0 && arg_sint(pair[1]) == in_shape[a];
      if (!whole)
        throw ShapeError(cat(name, ": ", in_shape, " -> ", out_shape, " changes ", detail::axis_text(in, devices),
                             "; only the other axes may be ", op == Ops::PAD ? "padded" : "shrunk",
                             " (gather it first with .to(device))"));
      return in;
    }
    case Ops::FLIP:
      if (arg.tuple()[a].get<bool>())
        throw ShapeError(cat("flip: of ", detail::axis_text(in, devices), " of ", in_shape,
                             "; gather it first with .to(device)"));
      return in;
    default: return in;
  }
}

/// A reduction over `axes`: over the split axis it ends replicated (after an allreduce).
inline Sharding through_reduce(const std::vector<int64_t>& axes, const Sharding& in) {
  if (in.sharded() && std::find(axes.begin(), axes.end(), in.axis) != axes.end()) return {};
  return in;
}

}  // namespace sharding
}  // namespace tinyt::inline v0
