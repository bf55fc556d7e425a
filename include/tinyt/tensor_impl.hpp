// Out-of-line parts of tensor.hpp: a Tensor's node, its shape and device, reading it back.
#pragma once

#include <mutex>
#include <shared_mutex>

#include "graph.hpp"
#include "tensor.hpp"

namespace tinyt::inline v0 {

namespace detail {
// Guards the fields of every tensor's Data that other threads read (Tensor::set_uop).
inline std::shared_mutex& tensor_data_mutex() {
  static auto* m = new std::shared_mutex;  // never destroyed, like the registry
  return *m;
}
}  // namespace detail

TINYT_INLINE void Tensor::set_uop(UOp u) {
  std::unique_lock lock(detail::tensor_data_mutex());
  d_->uop = std::move(u);
}
TINYT_INLINE std::pair<UOp, bool> Tensor::shared_fields(const Data& d) {
  std::shared_lock lock(detail::tensor_data_mutex());
  return {d.uop, d.requires_grad.value_or(false)};
}

class Tensor::Registry {
 public:
  void add(const std::shared_ptr<Data>& d) {
    std::lock_guard lock(mu_);
    if (all_.size() >= 2 * compacted_size_ + 1024) {
      std::erase_if(all_, [](const std::weak_ptr<Data>& w) { return w.expired(); });
      compacted_size_ = all_.size();
    }
    all_.push_back(d);
  }
  std::vector<std::shared_ptr<Data>> snapshot() {
    std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<Data>> out;
    for (const auto& w : all_)
      if (auto d = w.lock()) out.push_back(std::move(d));
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::weak_ptr<Data>> all_;
  size_t compacted_size_ = 0;
};
TINYT_INLINE Tensor::Registry& Tensor::live_tensors() {
  static auto* r = new Registry;  // never destroyed: tensors may die during static teardown
  return *r;
}

TINYT_INLINE Tensor::Tensor(UOp uop) : d_(std::make_shared<Data>(Data{std::move(uop)})) {
  // an op on a tensor on several devices finds how its result is split now: a reshape that would
  // move elements between the devices is a ShapeError at its call, not at realize
  for (const UOp& s : d_->uop.src())
    if (const auto* m = static_cast<const TensorMeta*>(s->extra.load(std::memory_order_acquire)); m && m->multi) {
      graph::meta(d_->uop);
      break;
    }
  live_tensors().add(d_);
}

TINYT_INLINE Shape Tensor::shape() const { return graph::shape_of(uop()); }
TINYT_INLINE std::string Tensor::device() const { return graph::device_of(uop()); }
TINYT_INLINE std::vector<int64_t> detail::concrete_shape(const Tensor& t) { return graph::concrete_shape(t.uop()); }

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
  // on several devices: gathered to the first, by kernels there
  if (const std::string d = device(); Device::is_multi(d)) return to(Device::split(d)[0]).copyout(dst, nbytes);
  Tensor t = *this;
  t.realize();  // t shares this tensor's data, so this tensor is realized too
  UOp view = t.uop();
  if (view.op() == Ops::MULTI) view = view.src(0);  // split over one device: its one part
  graph::buffer_of(view.op() == Ops::BUFFER ? view : view.src(0))->copyout(dst, nbytes);
}

}  // namespace tinyt::inline v0
