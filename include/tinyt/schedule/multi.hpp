// The multi pass: a graph over tensors on several devices becomes one graph per device. Before
// it, a sharded tensor's graph is the whole tensor's (shapes are whole shapes, a MULTI node holds
// the devices' parts); after it, each op is written once per device on that device's part,
// inside MULTI nodes, and what crosses devices is explicit: a reduction over the split axis ends
// with an allreduce, a gather copies every part to one device, parts split another way than an
// op needs are split again. The scheduler then sees graphs on one device each (and copies).
#pragma once

#include "../pattern.hpp"
#include "allreduce.hpp"

namespace tinyt::inline v0 {
namespace schedule {

namespace detail {
using tinyt::detail::cat;

inline UOp multi(std::vector<UOp> shards, int axis) {
  const DType dtype = shards[0].dtype();
  return UOp(Ops::MULTI, dtype, std::move(shards), axis);
}
inline const Sharding& sharding(const UOp& u) { return graph::meta(u).sharding; }
inline std::vector<std::string> devices_of(const UOp& u) { return Device::split(graph::device_of(u)); }

// `x` (one device's whole value) cut to its part `i` of `want`
inline UOp part_of_whole(const UOp& x, const Sharding& want, size_t i) {
  return graph::shrink(x, want.part_range(graph::shape_of(x), i));
}

/// The whole value of `m` (a MULTI) on `device`: the part there when it is replicated, else each
/// part copied there and joined.
inline UOp gather(const UOp& m, const std::string& device) {
  const Sharding& have = sharding(m);
  const std::vector<std::string> devices = devices_of(m);
  if (!have.sharded()) {
    const auto at = std::find(devices.begin(), devices.end(), device);
    return copy_to(m.src(at == devices.end() ? 0 : static_cast<size_t>(at - devices.begin())), device);
  }
  const auto axis = static_cast<size_t>(have.axis);
  const Shape& whole = graph::shape_of(m);
  const int64_t size = whole[axis].as_int();
  // joined as a 1-d value of the parts' rows: (before, axis, after) -> (axis, before * after)
  std::vector<int64_t> order;
  for (size_t d = 0; d < whole.size(); ++d) order.push_back(static_cast<int64_t>(d));
  std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(axis), order.begin() + static_cast<std::ptrdiff_t>(axis) + 1);
  std::vector<UOp> pieces;
  std::vector<std::pair<int64_t, int64_t>> bounds;
  int64_t row = 1;
  for (size_t d = 0; d < whole.size(); ++d)
    if (d != axis) row *= whole[d].as_int();
  for (size_t i = 0; i < devices.size(); ++i) {
    const UOp part = graph::permute(copy_to(m.src(i), device), order);
    pieces.push_back(graph::reshape(part, Shape{have.sizes[i] * row}));
    const auto [start, end] = have.bounds(i);
    bounds.emplace_back(start * row, end * row);
  }
  Shape moved;
  for (int64_t d : order) moved.push_back(whole[static_cast<size_t>(d)]);
  std::vector<int64_t> back(order.size());
  for (size_t d = 0; d < order.size(); ++d) back[static_cast<size_t>(order[d])] = static_cast<int64_t>(d);
  return graph::permute(graph::reshape(join_pieces(pieces, bounds, size * row), moved), back);
}

/// The parts of `m` (a MULTI) split as `want`: its own parts when they are, parts cut from each
/// device's whole value when it is replicated, else gathered to every device and cut again.
inline std::vector<UOp> parts_as(const UOp& m, const Sharding& want) {
  const Sharding& have = sharding(m);
  if (have == want) return m.src();
  const std::vector<std::string> devices = devices_of(m);
  std::vector<UOp> out;
  for (size_t i = 0; i < devices.size(); ++i)
    out.push_back(part_of_whole(have.sharded() ? gather(m, devices[i]) : m.src(i), want, i));
  return out;
}

// One device's version of a movement op: its arg with the split axis's size (or its whole range)
// that device's part.
inline UOp movement_part(const UOp& root, const UOp& part, size_t i) {
  const Sharding& out = sharding(root);
  if (!out.sharded() || root.op() == Ops::PERMUTE || root.op() == Ops::PAD || root.op() == Ops::FLIP)
    return UOp(root.op(), root.dtype(), {part}, root.arg());
  Arg::Tuple arg = root.arg().tuple();
  const auto axis = static_cast<size_t>(out.axis);
  if (root.op() == Ops::SHRINK) arg[axis] = Arg{int64_t{0}, out.sizes[i]};
  else arg[axis] = out.sizes[i];  // RESHAPE, EXPAND: the new size
  return UOp(root.op(), root.dtype(), {part}, Arg(arg));
}

inline bool is_multi(const UOp& u) { return u.op() == Ops::MULTI; }
inline bool any_multi(const UOp& u) { return std::any_of(u.src().begin(), u.src().end(), is_multi); }
}  // namespace detail

/// The rules of the multi pass (tinygrad's multi_pm): an op over MULTI nodes becomes a MULTI of
/// the op over each device's part.
inline const PatternMatcher& multi_rules() {
  using namespace detail;
  static const OpSet elementwise = GroupOp::ALU | OpSet{Ops::CAST, Ops::BITCAST, Ops::CONTIGUOUS,
                                                        Ops::CONTIGUOUS_BACKWARD, Ops::DETACH, Ops::ALLREDUCE};
  static const PatternMatcher pm{{
      // a constant on several devices: one on each
      {UPat(Ops::CONST, {UPat(Ops::DEVICE)}).named("c"), [](const Match& m) -> UOp {
         const UOp& c = m["c"];
         if (!Device::is_multi(graph::device_of(c))) return {};
         std::vector<UOp> parts;
         for (const std::string& d : devices_of(c)) parts.push_back(UOp(Ops::CONST, c.dtype(), {graph::device_uop(d)}, c.arg()));
         return multi(std::move(parts), -1);
       }},
      // elementwise: each device's parts, split as the result is
      {UPat(elementwise).named("x"), [](const Match& m) -> UOp {
         const UOp& x = m["x"];
         if (!any_multi(x)) return {};
         const Sharding& want = sharding(x);
         std::vector<std::vector<UOp>> parts;
         for (const UOp& s : x.src()) {
           if (!is_multi(s))
             throw DeviceError(cat(op_name(x.op()), ": operands are on ", graph::device_of(s), " and ", graph::device_of(x)));
           parts.push_back(parts_as(s, want));
         }
         std::vector<UOp> out;
         for (size_t i = 0; i < parts[0].size(); ++i) {
           std::vector<UOp> src;
           for (const auto& p : parts) src.push_back(p[i]);
           out.push_back(x.replace(std::move(src)));
         }
         return multi(std::move(out), want.axis);
       }},
      // movement: on each part, with that part's size along the split axis
      {UPat(GroupOp::Movement, {UPat(Ops::MULTI).named("m")}).named("x"), [](const Match& m) -> UOp {
         std::vector<UOp> out;
         for (size_t i = 0; i < m["m"].src().size(); ++i) out.push_back(movement_part(m["x"], m["m"].src(i), i));
         return multi(std::move(out), sharding(m["x"]).axis);
       }},
      // a reduction on each part; over the split axis, combined across the devices
      {UPat(Ops::REDUCE_AXIS, {UPat(Ops::MULTI).named("m")}).named("r"), [](const Match& m) -> UOp {
         const UOp &r = m["r"], &parts = m["m"];
         std::vector<UOp> out;
         for (const UOp& p : parts.src()) out.push_back(r.replace({p}));
         if (sharding(parts).sharded() && !sharding(r).sharded()) {
           const int64_t elements = graph::shape_of(r).numel().as_int();
           out = allreduce(out, r.arg()[0].get<Ops>(), allreduce_kind(out.size(), elements));
         }
         return multi(std::move(out), sharding(r).axis);
       }},
      // to one device: gathered; to several: gathered to each (replicated)
      {UPat(Ops::COPY, {UPat::var("x"), UPat(Ops::DEVICE).named("d")}), [](const Match& m) -> UOp {
         const UOp& x = m["x"];
         const std::string& to = m["d"].arg().get<std::string>();
         if (!Device::is_multi(to)) return is_multi(x) ? gather(x, to) : UOp{};
         std::vector<UOp> out;
         for (const std::string& d : Device::split(to)) out.push_back(is_multi(x) ? gather(x, d) : copy_to(x, d));
         return multi(std::move(out), -1);
       }},
      // one device's part
      {UPat(Ops::MSELECT, {UPat(Ops::MULTI).named("m")}).named("s"), [](const Match& m) -> UOp {
         return m["m"].src(static_cast<size_t>(m["s"].arg().as_int()));
       }},
      // an assign into each part, of the value split as the target is
      {UPat(Ops::ASSIGN, {UPat(Ops::MULTI).named("t"), UPat(Ops::MULTI).named("v")}).named("a"), [](const Match& m) -> UOp {
         const UOp &target = m["t"], &a = m["a"];
         const std::vector<UOp> values = parts_as(m["v"], sharding(target));
         std::vector<UOp> out;
         for (size_t i = 0; i < values.size(); ++i) out.push_back(a.replace({target.src(i), values[i]}));
         return multi(std::move(out), sharding(target).axis);
       }},
  }};
  return pm;
}

/// `roots` with every tensor on several devices written per device: a MULTI of graphs on one
/// device each (a root on one device stays one graph). Values already computed on several
/// devices are their MULTI of views (graph::realized).
inline std::vector<UOp> lower_multi(const std::vector<UOp>& roots) {
  // what is per device already: graphs on one device, a MULTI of them (a realized sharded tensor)
  auto per_device = [](const UOp& u) {
    if (!graph::meta(u).multi) return true;
    return u.op() == Ops::MULTI && std::none_of(u.src().begin(), u.src().end(), [](const UOp& p) { return graph::meta(p).multi; });
  };
  std::vector<UOp> todo;
  for (const UOp& r : roots)
    if (!per_device(r)) todo.push_back(r);
  if (todo.empty()) return roots;
  // computed values first: the pass must not look below them
  std::unordered_map<const UOpNode*, UOp> known;
  for (const UOp& u : detail::pending_graph(todo)) {
    const TensorMeta& meta = graph::meta(u);
    if (!meta.multi) continue;
    if (UOp view = graph::realized(u); view && !(view == u)) { known.emplace(u.get(), view); continue; }
    std::vector<UOp> src;
    bool changed = false;
    for (const UOp& s : u.src()) {
      auto it = known.find(s.get());
      src.push_back(it == known.end() ? s : it->second);
      changed |= it != known.end();
    }
    if (changed) known.emplace(u.get(), u.replace(std::move(src)));
  }
  std::vector<UOp> inputs;
  for (const UOp& r : todo) {
    auto it = known.find(r.get());
    inputs.push_back(it == known.end() ? r : it->second);
  }
  const UOp sink = graph_rewrite(UOp(Ops::SINK, dtypes::void_, inputs), multi_rules());
  std::vector<UOp> out;
  for (size_t i = 0, next = 0; i < roots.size(); ++i) out.push_back(per_device(roots[i]) ? roots[i] : sink.src(next++));
  for (const UOp& u : toposort(sink)) {
    const bool written = u.op() == Ops::MULTI || u.op() == Ops::SINK || u.op() == Ops::DEVICE ||
                         !Device::is_multi(graph::device_of(u));
    if (!written)
      throw InternalError(detail::cat("multi pass: ", op_name(u.op()), " on ", graph::device_of(u),
                                      " was not written per device"));
  }
  return out;
}

}  // namespace schedule
}  // namespace tinyt::inline v0
