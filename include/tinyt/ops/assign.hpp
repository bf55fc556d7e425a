// assign: a store into a tensor's existing memory (see engine/tensors_impl.hpp for how a
// schedule that assigns keeps every other tensor's value intact).
#pragma once

#include "../engine/tensors_impl.hpp"
#include "movement.hpp"

namespace tinyt::inline v0 {

namespace detail {
// Whether `view` (a tensor's value) is memory nobody else can name: no other tensor, graph or
// remembered value holds the view or its BUFFER node, and no other BUFFER node names the bytes
// (counted by references; one held somewhere unexpected only costs a copy).
inline bool sole_view(const UOp& view) {
  if (view.op() == Ops::MULTI)  // each device's part is
    return view->refs.load() == 1 && std::all_of(view.src().begin(), view.src().end(), sole_view);
  const UOp* base = view.op() == Ops::BUFFER ? &view
                    : view.op() == Ops::RESHAPE && view.src(0).op() == Ops::BUFFER ? &view.src(0)
                                                                                   : nullptr;
  if (!base || view->refs.load() != 1 || (*base)->refs.load() != 1) return false;
  TensorMeta& m = graph::meta(*base);
  std::lock_guard lock(m.mu);
  return !m.buffer || m.buffer.use_count() == 1;
}
// Whether a tensor's value is memory in its own shape (on several devices: each part is).
inline bool names_memory(const UOp& u) {
  if (u.op() == Ops::MULTI) return std::all_of(u.src().begin(), u.src().end(), names_memory);
  return static_cast<bool>(graph::base_buffer(u));
}
// New memory for a tensor like `t`: of its shape, dtype and devices, split as it is.
inline Tensor empty_like(const Tensor& t) {
  const TensorMeta& m = graph::meta(t.uop());
  if (!Device::is_multi(m.device)) return Tensor::empty(t.shape(), t.dtype(), t.device());
  const std::vector<std::string> devices = Device::split(m.device);
  std::vector<UOp> parts;
  for (size_t i = 0; i < devices.size(); ++i) parts.push_back(Tensor::empty(m.sharding.part_shape(t.shape(), i), t.dtype(), devices[i]).uop());
  return Tensor(UOp(Ops::MULTI, t.dtype(), std::move(parts), m.sharding.axis));
}
}  // namespace detail

TINYT_INLINE void Tensor::own_memory() {
  if (detail::sole_view(uop())) return;  // from_vector, from_blob, a load: no copy
  // an assign into a new buffer: the value is computed straight into it when it is still lazy,
  // copied when it is in memory that equal graphs may share
  Tensor fresh = detail::empty_like(*this);
  fresh.assign(*this);
  set_uop(fresh.realize().uop());  // under the lock other threads read it with
}

TINYT_INLINE Tensor& Tensor::assign(const Tensor& value) {
  // this tensor must name memory of its own, in its own shape
  if (!detail::names_memory(uop())) {
    realize();
    if (!detail::names_memory(uop())) set_uop(contiguous().realize().uop());
  }
  // a C++ scalar is made where the tensor is
  const Tensor given = value.defined() ? detail::to_tensor(detail::scalar_on(detail::operand_of(value), device())) : value;
  if (given.defined() && given.device() != device())
    throw DeviceError(detail::cat("assign: the value is on ", given.device(), ", the tensor on ", device()));
  Tensor v = broadcast_to(given.cast(dtype()), shape());
  set_uop(UOp(Ops::ASSIGN, dtype(), {uop(), v.uop()}));
  return *this;
}

}  // namespace tinyt::inline v0
