// The tensor-level graph: what each UOp means before scheduling. A tensor is a UOp; its shape
// and device are derived from the graph (and cached on the node), and a node that has been
// computed remembers the buffer that holds its value.
//
// Conventions (tinygrad's): BUFFER(UNIQUE, DEVICE) arg=size is realized memory of shape
// (size,); CONST(DEVICE) is a scalar of shape (); movement ops carry their new shape (RESHAPE,
// EXPAND), permutation (PERMUTE), (before, after) pairs (PAD), (start, end) pairs (SHRINK) or
// flipped-or-not flags (FLIP) in their arg; REDUCE_AXIS arg=(op, axes) keeps reduced dims as 1;
// ALU ops take sources of equal shape; COPY(x, DEVICE); ASSIGN(target, value); ALLREDUCE(x)
// arg=dist::ReduceOp (across processes).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "buffer.hpp"
#include "shape.hpp"
#include "sharding.hpp"

namespace tinyt::inline v0 {

/// What the tensor level knows about a node: shape, device, and where its value lives.
struct TensorMeta : UOpNode::Extra {
  Shape shape;
  std::string device;              // one device, or several, comma-separated (a sharded tensor's)
  Sharding sharding;               // on several devices: how the tensor is split among them
  bool multi = false;              // this node or one below it is on several devices
  std::mutex mu;
  std::shared_ptr<Buffer> buffer;  // BUFFER nodes: the memory
  UOp realized;                    // computed nodes: a view of the buffer holding the value
  uint64_t realized_version = 0;   // ... while that memory is at this version
};

namespace graph {
namespace detail {
using tinyt::detail::cat;

inline std::vector<int64_t> ints(const Arg& a) { return a.ints(); }
}  // namespace detail

/// The sizes in a RESHAPE's or EXPAND's arg.
inline Shape sizes(const Arg& a) {
  std::vector<sint> out;
  for (const Arg& x : a.tuple()) out.push_back(arg_sint(x));
  return Shape(std::move(out));
}
/// The (before, after) or (start, end) pairs in a PAD's or SHRINK's arg.
inline std::vector<std::pair<sint, sint>> pairs(const Arg& a) {
  std::vector<std::pair<sint, sint>> out;
  for (const Arg& p : a.tuple()) out.emplace_back(arg_sint(p[0]), arg_sint(p[1]));
  return out;
}

namespace detail {

// MULTI(shards) arg=axis: the shards are on one device each, all different, and equal in shape
// but along the axis (-1: replicated, every shard equal in shape).
inline void multi_meta(const UOp& u, const std::vector<const TensorMeta*>& s, TensorMeta& m) {
  const int64_t axis = u.arg().as_int();
  if (s.empty()) throw DeviceError("MULTI: no shards");
  const size_t rank = s[0]->shape.size();
  if (axis < -1 || axis >= static_cast<int64_t>(rank))
    throw ShapeError(cat("MULTI: axis ", axis, " of shards of shape ", s[0]->shape));
  std::string devices;
  m.shape = s[0]->shape;
  m.sharding.axis = static_cast<int>(axis);
  for (size_t i = 0; i < s.size(); ++i) {
    const TensorMeta& x = *s[i];
    if (Device::is_multi(x.device)) throw DeviceError(cat("MULTI: shard ", i, " is on several devices (", x.device, ")"));
    if (u.src(i).dtype() != u.dtype())
      throw DTypeError(cat("MULTI: shard ", i, " is ", u.src(i).dtype().name(), ", shard 0 ", u.dtype().name()));
    bool fits = x.shape.size() == rank;
    for (size_t d = 0; fits && d < rank; ++d) fits = static_cast<int64_t>(d) == axis || x.shape[d] == s[0]->shape[d];
    if (!fits) throw ShapeError(cat("MULTI: shard ", i, " has shape ", x.shape, ", shard 0 ", s[0]->shape, " (axis ", axis, ")"));
    if (axis >= 0) {
      const sint& part = x.shape[static_cast<size_t>(axis)];
      if (!part.is_int()) throw ShapeError(cat("MULTI: shard ", i, " has a symbolic size ", part, " along axis ", axis));
      m.sharding.sizes.push_back(part.as_int());
    }
    for (size_t j = 0; j < i; ++j)
      if (s[j]->device == x.device) throw DeviceError(cat("MULTI: shards ", j, " and ", i, " are both on ", x.device));
    devices += (i ? "," : "") + x.device;
  }
  if (axis >= 0)
    m.shape[static_cast<size_t>(axis)] = std::accumulate(m.sharding.sizes.begin(), m.sharding.sizes.end(), int64_t{0});
  m.device = std::move(devices);  // each canonical already
  m.multi = true;
}

// How a node below which something is on several devices is split (its shape and device known).
inline Sharding sharding_of(const UOp& u, const std::vector<const TensorMeta*>& s, const TensorMeta& m) {
  if (!Device::is_multi(m.device)) return {};  // on one device: a gather, a shard's MSELECT
  switch (u.op()) {
    case Ops::RESHAPE: case Ops::PERMUTE: case Ops::EXPAND: case Ops::PAD: case Ops::SHRINK: case Ops::FLIP:
      return sharding::through_movement(u.op(), u.arg(), s[0]->shape, m.shape, s[0]->sharding, m.device);
    case Ops::REDUCE_AXIS: return sharding::through_reduce(u.arg()[1].ints(), s[0]->sharding);
    case Ops::COPY: case Ops::CONST: return {};  // to several devices: replicated
    case Ops::ASSIGN: return s[0]->sharding;     // the target's
    default:
      // elementwise: the first split source's (the others are split the same way by the multi pass)
      for (const TensorMeta* x : s)
        if (x && x->sharding.sharded() && Device::is_multi(x->device)) return x->sharding;
      return {};
  }
}

inline TensorMeta* compute_meta(const UOp& u, const std::vector<const TensorMeta*>& s) {
  auto m = std::make_unique<TensorMeta>();
  auto dev_of_srcs = [&]() -> std::string {
    for (const TensorMeta* x : s)
      if (x && !x->device.empty()) return x->device;
    return "";
  };
  switch (u.op()) {
    case Ops::BUFFER: m->shape = Shape{u.arg().as_int()}, m->device = u.src(1).arg().get<std::string>(); break;
    case Ops::CONST: m->device = u.src().empty() ? "" : u.src(0).arg().get<std::string>(); break;
    case Ops::DEVICE: case Ops::UNIQUE: break;
    case Ops::RESHAPE: case Ops::EXPAND: m->shape = sizes(u.arg()), m->device = s[0]->device; break;
    case Ops::PERMUTE: {
      for (int64_t a : ints(u.arg())) m->shape.push_back(s[0]->shape[static_cast<size_t>(a)]);
      m->device = s[0]->device;
      break;
    }
    case Ops::PAD: {
      auto p = pairs(u.arg());
      for (size_t i = 0; i < p.size(); ++i) m->shape.push_back(s[0]->shape[i] + p[i].first + p[i].second);
      m->device = s[0]->device;
      break;
    }
    case Ops::SHRINK:
      for (const auto& [b, e] : pairs(u.arg())) m->shape.push_back(e - b);
      m->device = s[0]->device;
      break;
    case Ops::REDUCE_AXIS: {
      m->shape = s[0]->shape;
      for (int64_t a : ints(u.arg()[1])) m->shape[static_cast<size_t>(a)] = 1;
      m->device = s[0]->device;
      break;
    }
    case Ops::COPY: m->shape = s[0]->shape, m->device = u.src(1).arg().get<std::string>(); break;
    case Ops::MULTI: multi_meta(u, s, *m); break;
    case Ops::MSELECT: {
      const auto i = static_cast<size_t>(u.arg().as_int());
      const std::vector<std::string> devices = Device::split(s[0]->device);
      if (i >= devices.size())
        throw DeviceError(cat("MSELECT: shard ", i, " of a tensor on ", devices.size(), " device(s)"));
      m->shape = s[0]->sharding.part_shape(s[0]->shape, i), m->device = devices[i];
      break;
    }
    default:
      // elementwise and the identity-like ops: the shape of the first shaped source
      for (const TensorMeta* x : s)
        if (x) { m->shape = x->shape; break; }
      if (u.op() == Ops::WHERE) m->shape = s[1]->shape;
      m->device = dev_of_srcs();
  }
  m->multi = Device::is_multi(m->device) || std::any_of(s.begin(), s.end(), [](const TensorMeta* x) { return x && x->multi; });
  if (m->multi && u.op() != Ops::MULTI) m->sharding = sharding_of(u, s, *m);
  return m.release();
}
}  // namespace detail

/// The tensor-level information of a node, derived once and cached on it.
inline TensorMeta& meta(const UOp& root) {
  auto cached = [](const UOp& u) { return static_cast<TensorMeta*>(u->extra.load(std::memory_order_acquire)); };
  if (TensorMeta* m = cached(root)) return *m;
  std::vector<const UOp*> stack{&root};
  while (!stack.empty()) {
    const UOp& u = *stack.back();
    if (cached(u)) { stack.pop_back(); continue; }
    const size_t before = stack.size();
    for (const UOp& x : u.src())
      if (!cached(x)) stack.push_back(&x);
    if (stack.size() != before) continue;
    std::vector<const TensorMeta*> s;
    for (const UOp& x : u.src()) s.push_back(cached(x));
    UOpNode::Extra* expected = nullptr;
    TensorMeta* m = detail::compute_meta(u, s);
    if (!u->extra.compare_exchange_strong(expected, m, std::memory_order_acq_rel)) delete m;  // another thread won
    stack.pop_back();
  }
  return *cached(root);
}
inline const Shape& shape_of(const UOp& u) { return meta(u).shape; }
inline const std::string& device_of(const UOp& u) { return meta(u).device; }
inline std::vector<int64_t> concrete_shape(const UOp& u) { return shape_of(u).to_vector(); }

inline std::shared_ptr<Buffer> buffer_of(const UOp& b);
inline UOp base_buffer(const UOp& view);

/// How many times the memory under a view (a MULTI of views: all of it) has been overwritten.
inline uint64_t memory_version(const UOp& view) {
  if (view.op() != Ops::MULTI) return buffer_of(base_buffer(view))->version();
  uint64_t sum = 0;  // versions only grow: the sum changes when any of them does
  for (const UOp& part : view.src()) sum += memory_version(part);
  return sum;
}

/// The buffer holding u's value when it has been computed (a view of it; a MULTI of views on
/// several devices), else the empty UOp. A value whose memory has since been overwritten in place
/// is forgotten.
inline UOp realized(const UOp& u) {
  if (u.op() == Ops::BUFFER) return u;
  TensorMeta& m = meta(u);
  UOp view;
  uint64_t version;
  {
    std::lock_guard lock(m.mu);
    view = m.realized, version = m.realized_version;
  }
  if (view && memory_version(view) != version) {
    std::lock_guard lock(m.mu);
    m.realized = UOp();
    return {};
  }
  return view;
}
inline void set_realized(const UOp& u, const UOp& view) {
  const uint64_t version = memory_version(view);
  TensorMeta& m = meta(u);
  std::lock_guard lock(m.mu);
  m.realized = view, m.realized_version = version;
}
/// The memory of a BUFFER node (created, not yet allocated, on first use).
inline std::shared_ptr<Buffer> buffer_of(const UOp& b) {
  TINYT_ASSERT(b.op() == Ops::BUFFER, "buffer_of a ", op_name(b.op()));
  TensorMeta& m = meta(b);
  std::lock_guard lock(m.mu);
  if (!m.buffer) m.buffer = std::make_shared<Buffer>(m.device, static_cast<size_t>(b.arg().as_int()), b.dtype());
  return m.buffer;
}

// -- builders ---------------------------------------------------------------------------------

inline UOp device_uop(const std::string& device);
inline UOp new_buffer(const std::string& device, int64_t size, DType dtype);
/// A new BUFFER node for the memory of `b`: the same bytes under a new identity, so graphs built
/// after the memory is overwritten in place never equal graphs built before.
inline UOp alias_buffer(const UOp& b) {
  UOp alias = new_buffer(b.src(1).arg().get<std::string>(), b.arg().as_int(), b.dtype());
  TensorMeta& m = meta(alias);
  std::shared_ptr<Buffer> memory = buffer_of(b);
  std::lock_guard lock(m.mu);
  m.buffer = std::move(memory);
  return alias;
}
/// A new BUFFER node for existing memory (a Buffer over a mapped file's bytes).
inline UOp buffer_over(std::shared_ptr<Buffer> memory) {
  UOp b = new_buffer(memory->device(), static_cast<int64_t>(memory->size()), memory->dtype());
  TensorMeta& m = meta(b);
  std::lock_guard lock(m.mu);
  m.buffer = std::move(memory);
  return b;
}
/// The BUFFER node under a contiguous view of memory (BUFFER or RESHAPE(BUFFER)), else empty.
inline UOp base_buffer(const UOp& view) {
  if (view.op() == Ops::BUFFER) return view;
  if (view.op() == Ops::RESHAPE && view.src(0).op() == Ops::BUFFER) return view.src(0);
  return {};
}


inline UOp device_uop(const std::string& device) { return UOp(Ops::DEVICE, dtypes::void_, {}, Device::canonicalize(device)); }

/// Fresh memory for `size` elements: a new BUFFER node (never equal to another).
inline UOp new_buffer(const std::string& device, int64_t size, DType dtype) {
  static std::atomic<int64_t> next_unique{0};
  UOp unique(Ops::UNIQUE, dtypes::void_, {}, next_unique++);
  return UOp(Ops::BUFFER, dtype, {unique, device_uop(device)}, size);
}
/// A scalar constant on a device (shape ()).
template <class T> UOp const_(DType dtype, T value, const std::string& device) {
  UOp c = UOp::const_(dtype, value);
  return UOp(Ops::CONST, dtype, {device_uop(device)}, c.arg());
}

inline Arg shape_arg(const Shape& s) {
  Arg::Tuple t;
  for (const sint& d : s) t.push_back(to_arg(d));
  return Arg(t);
}
inline UOp reshape(const UOp& x, const Shape& shape) {
  if (shape_of(x) == shape) return x;
  return UOp(Ops::RESHAPE, x.dtype(), {x}, shape_arg(shape));
}
inline UOp expand(const UOp& x, const Shape& shape) {
  if (shape_of(x) == shape) return x;
  return UOp(Ops::EXPAND, x.dtype(), {x}, shape_arg(shape));
}
inline UOp permute(const UOp& x, const std::vector<int64_t>& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  return identity ? x : UOp(Ops::PERMUTE, x.dtype(), {x}, Arg(perm));
}
using SizePairs = std::vector<std::pair<sint, sint>>;
inline Arg pairs_arg(const SizePairs& p) {
  Arg::Tuple t;
  for (const auto& [a, b] : p) t.push_back(Arg{to_arg(a), to_arg(b)});
  return Arg(t);
}
template <class I> SizePairs to_size_pairs(const std::vector<std::pair<I, I>>& p) {
  return SizePairs(p.begin(), p.end());
}
inline UOp pad(const UOp& x, const SizePairs& p) {
  if (std::all_of(p.begin(), p.end(), [](const auto& q) { return q.first == 0 && q.second == 0; })) return x;
  return UOp(Ops::PAD, x.dtype(), {x}, pairs_arg(p));
}
inline UOp pad(const UOp& x, const std::vector<std::pair<int64_t, int64_t>>& p) { return pad(x, to_size_pairs(p)); }
inline UOp shrink(const UOp& x, const SizePairs& p) {
  const Shape& s = shape_of(x);
  bool identity = true;
  for (size_t i = 0; i < p.size(); ++i) identity &= p[i].first == 0 && p[i].second == s[i];
  return identity ? x : UOp(Ops::SHRINK, x.dtype(), {x}, pairs_arg(p));
}
inline UOp shrink(const UOp& x, const std::vector<std::pair<int64_t, int64_t>>& p) { return shrink(x, to_size_pairs(p)); }
inline UOp flip(const UOp& x, const std::vector<bool>& axes) {
  if (std::none_of(axes.begin(), axes.end(), [](bool b) { return b; })) return x;
  Arg::Tuple t(axes.begin(), axes.end());
  return UOp(Ops::FLIP, x.dtype(), {x}, Arg(t));
}
/// A reduction over `axes` (kept as size-1 dims).
inline UOp reduce(const UOp& x, Ops op, const std::vector<int64_t>& axes) {
  if (axes.empty()) return x;
  return UOp(Ops::REDUCE_AXIS, x.dtype(), {x}, Arg{op, Arg(axes)});
}

}  // namespace graph
}  // namespace tinyt::inline v0
