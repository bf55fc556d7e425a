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
  const UOp* base = view.op() == Ops::BUFFER ? &view
                    : view.op() == Ops::RESHAPE && view.src(0).op() == Ops::BUFFER ? &view.src(0)
                                                                                   : nullptr;
  if (!base || view->refs.load() != 1 || (*base)->refs.load() != 1) return false;
  TensorMeta& m = graph::meta(*base);
  std::lock_guard lock(m.mu);
  return !m.buffer || m.buffer.use_count() == 1;
}
}  // namespace detail

TINYT_INLINE void Tensor::own_memory() {
  if (detail::sole_view(uop())) return;  // from_vector, from_blob, a load: no copy
  // an assign into a new buffer: the value is computed straight into it when it is still lazy,
  // copied when it is in memory that equal graphs may share
  Tensor fresh = Tensor::empty(shape(), dtype(), device());
  fresh.assign(*this);
  set_uop(fresh.realize().uop());  // under the lock other threads read it with
}

TINYT_INLINE Tensor& Tensor::assign(const Tensor& value) {
  // this tensor must name memory of its own, in its own shape
  if (!graph::base_buffer(uop())) {
    realize();
    if (!graph::base_buffer(uop())) set_uop(contiguous().realize().uop());
  }
  if (value.defined() && value.device() != device())
    throw DeviceError(detail::cat("assign: the value is on ", value.device(), ", the tensor on ", device()));
  Tensor v = broadcast_to(value.cast(dtype()), shape());
  set_uop(UOp(Ops::ASSIGN, dtype(), {uop(), v.uop()}));
  return *this;
}

}  // namespace tinyt::inline v0
