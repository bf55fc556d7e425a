// Allreduce between the devices of one process, as a graph: copies between the devices and the
// kernels that combine what they copied. Every device ends with the same bits (each element is
// combined in one order, on one device, or in the same order on each).
//
//   naive: each device copies every other device's value and combines all of them, in device
//          order. n (n - 1) copies of the whole value.
//   ring:  the value is cut in n chunks; a reduce-scatter (n - 1 steps: device i sends its
//          partial chunk i - s to device i + 1, which combines it with its own) leaves device i
//          with chunk i + 1 complete; an all-gather (n - 1 steps) passes the complete chunks on
//          around the ring. 2 (n - 1) copies of a chunk per device: each device's copy engine
//          moves 2 (n - 1) / n of the value, whatever n is.
#pragma once

#include "../graph.hpp"

namespace tinyt::inline v0 {
namespace schedule {

/// Which allreduce: RING=0 naive, RING=2 ring, RING=1 (the default, as tinygrad) ring for more
/// than two devices and at least RING_THRESHOLD (256000) elements.
enum class AllreduceKind { naive, ring };

inline AllreduceKind allreduce_kind(size_t devices, int64_t elements) {
  const int64_t ring = getenv_int("RING", 1);
  if (ring >= 2) return AllreduceKind::ring;
  return ring == 1 && devices > 2 && elements >= getenv_int("RING_THRESHOLD", 256000) ? AllreduceKind::ring
                                                                                       : AllreduceKind::naive;
}

namespace detail {
/// `x` on `device`: itself when it is there, else a copy.
inline UOp copy_to(const UOp& x, const std::string& device) {
  if (graph::device_of(x) == device) return x;
  return UOp(Ops::COPY, x.dtype(), {x, graph::device_uop(device)});
}
inline UOp combine(Ops op, const UOp& a, const UOp& b) { return UOp(op, a.dtype(), {a, b}); }

/// The pieces of a 1-d value (pieces[k] covers bounds[k]) joined into the whole of `size`.
inline UOp join_pieces(const std::vector<UOp>& pieces, const std::vector<std::pair<int64_t, int64_t>>& bounds,
                       int64_t size) {
  UOp out;
  for (size_t k = 0; k < pieces.size(); ++k) {
    const auto [start, end] = bounds[k];
    if (start == end) continue;
    const UOp grown = graph::pad(pieces[k], std::vector<std::pair<int64_t, int64_t>>{{start, size - end}});
    if (!out) { out = grown; continue; }
    // where this piece is: a padded mask of trues (exact for every dtype, -0.0 included)
    const std::string device = graph::device_of(pieces[k]);
    const UOp ones = graph::expand(graph::reshape(graph::const_(dtypes::bool_, true, device), Shape{1}), Shape{end - start});
    out = graph::pad(ones, std::vector<std::pair<int64_t, int64_t>>{{start, size - end}}).where(grown, out);
  }
  return out;
}
}  // namespace detail

/// Each device's `op` (ADD, MUL or MAX) of the values `shards` (one per device, equal in shape
/// and dtype): a value on every one of those devices.
inline std::vector<UOp> allreduce(const std::vector<UOp>& shards, Ops op, AllreduceKind kind) {
  const size_t n = shards.size();
  std::vector<std::string> devices;
  for (const UOp& s : shards) devices.push_back(graph::device_of(s));
  std::vector<UOp> out;
  if (n < 2) return shards;
  if (kind == AllreduceKind::naive) {
    for (size_t i = 0; i < n; ++i) {
      UOp acc = detail::copy_to(shards[0], devices[i]);
      for (size_t j = 1; j < n; ++j) acc = detail::combine(op, acc, detail::copy_to(shards[j], devices[i]));
      out.push_back(acc);
    }
    return out;
  }
  const Shape shape = graph::shape_of(shards[0]);
  const int64_t size = shape.numel().as_int();
  const std::vector<int64_t> sizes = shard_sizes(size, n);
  std::vector<std::pair<int64_t, int64_t>> bounds;
  for (size_t c = 0, start = 0; c < n; start += static_cast<size_t>(sizes[c]), ++c)
    bounds.emplace_back(static_cast<int64_t>(start), static_cast<int64_t>(start) + sizes[c]);
  // chunk[i][c]: device i's chunk c, partial during the reduce-scatter
  std::vector<std::vector<UOp>> chunk(n);
  for (size_t i = 0; i < n; ++i) {
    const UOp flat = graph::reshape(shards[i], Shape{size});
    for (size_t c = 0; c < n; ++c) chunk[i].push_back(graph::shrink(flat, std::vector<std::pair<int64_t, int64_t>>{bounds[c]}));
  }
  for (size_t s = 0; s + 1 < n; ++s)
    for (size_t i = 0; i < n; ++i) {
      const size_t c = (i + n - s) % n, to = (i + 1) % n;
      if (sizes[c]) chunk[to][c] = detail::combine(op, chunk[to][c], detail::copy_to(chunk[i][c], devices[to]));
    }
  for (size_t s = 0; s + 1 < n; ++s)
    for (size_t i = 0; i < n; ++i) {
      const size_t c = (i + 1 + n - s) % n, to = (i + 1) % n;
      if (sizes[c]) chunk[to][c] = detail::copy_to(chunk[i][c], devices[to]);
    }
  for (size_t i = 0; i < n; ++i) out.push_back(graph::reshape(detail::join_pieces(chunk[i], bounds, size), shape));
  return out;
}

}  // namespace schedule
}  // namespace tinyt::inline v0
