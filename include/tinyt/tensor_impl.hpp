// Out-of-line parts of tensor.hpp: a Tensor's node, its shape and device, reading it back.
#pragma once

#include <cstring>

#include "graph.hpp"
#include "tensor.hpp"

namespace tinyt::inline v0 {

TINYT_INLINE Tensor::Tensor(UOp uop) : d_(std::make_shared<Data>(Data{std::move(uop)})) { live_tensors().add(d_); }

TINYT_INLINE Shape Tensor::shape() const { return graph::shape_of(uop()); }
TINYT_INLINE std::string Tensor::device() const { return graph::device_of(uop()); }
TINYT_INLINE std::vector<int64_t> Tensor::cshape() const { return graph::concrete_shape(uop()); }

TINYT_INLINE Tensor Tensor::scalar(DType dt, double v) {
  Tensor t(graph::const_(dt, v, Device::default_device()));
  t.d_->weak = true;
  t.d_->exact = UOp::const_(dtypes::float64, v);
  return t;
}
TINYT_INLINE Tensor Tensor::scalar(DType dt, int64_t v) {
  Tensor t(graph::const_(dt, v, Device::default_device()));
  t.d_->weak = true;
  return t;
}

TINYT_INLINE Tensor& Tensor::realize() & {
  realize_tensors({*this});
  return *this;
}

TINYT_INLINE void Tensor::copyout(void* dst, size_t nbytes) const {
  Tensor t = *this;
  t.realize();  // t shares this tensor's data, so this tensor is realized too
  const UOp& view = t.uop();
  graph::buffer_of(view.op() == Ops::BUFFER ? view : view.src(0))->copyout(dst, nbytes);
}

}  // namespace tinyt::inline v0
