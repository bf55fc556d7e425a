// Definitions of optim.hpp, compiled with the engine (config.hpp).
#pragma once

#include "../expr.hpp"
#include "optim.hpp"

namespace tinyt::inline v0::nn::optim {

// -- Optimizer --------------------------------------------------------------------------------

TINYT_INLINE Optimizer::Optimizer(std::string name, const std::vector<Tensor>& params, double lr_value)
    : name_(std::move(name)) {
  check_arg("lr", lr_value, 0.0);
  for (size_t i = 0; i < params.size(); ++i)
    if (!params[i].defined())
      throw Error(tinyt::detail::cat(name_, ": param ", i, " is the empty Tensor() handle"));
  // Tensors compare by value, not by identity, so copies of one tensor are found through its
  // grad, which copies share: mark each tensor's grad in turn; one already marked is a copy.
  std::vector<Tensor> saved;
  for (const Tensor& p : params) saved.push_back(p.grad());
  for (Tensor p : params) p.set_grad({});
  std::vector<size_t> kept;
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i];
    if (p.grad().defined()) continue;
    p.set_grad(Tensor(0.0f));
    kept.push_back(i);
  }
  for (size_t i = 0; i < params.size(); ++i) Tensor(params[i]).set_grad(saved[i]);

  bool any_float64 = false;
  for (size_t i : kept) {
    Tensor p = params[i];
    if (p.requires_grad_setting() == std::optional<bool>(false)) {
      buffers_.push_back(p);
      continue;
    }
    if (!p.dtype().is_float())
      throw DTypeError(tinyt::detail::cat(name_, ": param ", i, " of shape ", p.shape(), " is ",
                                          p.dtype().name(),
                                          "; only floating-point tensors can be trained"));
    if (!p.requires_grad_setting())
      p.requires_grad(true);  // as tinygrad: handing it over means training it
    any_float64 = any_float64 || p.dtype() == dtypes::float64;
    params_.push_back(p);
  }
  if (params_.empty()) throw Error(tinyt::detail::cat(name_, ": got no param to train"));
  const std::string device = params_[0].device();
  for (size_t i = 1; i < params_.size(); ++i)
    if (params_[i].device() != device)
      throw DeviceError(
          tinyt::detail::cat(name_, ": params are on ", device, " and ", params_[i].device()));
  // float32 at least, so a float16 model still steps with its learning rate as given
  const DType lr_dtype = any_float64 ? dtypes::float64 : dtypes::float32;
  lr = Tensor::empty({}, lr_dtype, device);
  lr.assign(lr_value);  // rounded once from the double
  state_.push_back(lr);
}

TINYT_INLINE void Optimizer::check_arg(const char* what, double value, double lo, double hi) const {
  if (!(value >= lo && value < hi))
    throw Error(tinyt::detail::cat(name_, ": invalid ", what, " ", value, " (must be >= ", lo,
                                   std::isinf(hi) ? "" : tinyt::detail::cat(" and < ", hi), ")"));
}

TINYT_INLINE Tensor Optimizer::new_state(const Shape& shape, DType dtype, double value) {
  Tensor t = Tensor::empty(shape, dtype, params_[0].device());
  t.assign(value);
  state_.push_back(t);
  return t;
}

TINYT_INLINE Tensor Optimizer::new_state(const Tensor& param, double value) {
  Tensor t = tinyt::detail::empty_like(param);
  t.assign(value);
  state_.push_back(t);
  return t;
}

TINYT_INLINE void Optimizer::finish_init() {
  std::vector<Tensor> all = params_;
  // the buffers too: a layer's running statistics start lazy, and an assign into a lazy tensor
  // realizes it first, on its own
  for (const auto* list : {&buffers_, &state_}) all.insert(all.end(), list->begin(), list->end());
  realize_tensors(all);
}

TINYT_INLINE std::vector<Tensor> Optimizer::schedule_step() {
  std::vector<Tensor> grads;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    Tensor g = p.grad();
    if (!g.defined())
      throw Error(tinyt::detail::cat(
          name_, ".step: param ", i, " of shape ", p.shape(),
          " has no grad (not used by the loss, or no backward() since zero_grad())"));
    if (g.shape() != p.shape())
      throw ShapeError(tinyt::detail::cat(name_, ".step: the grad of param ", i, " has shape ",
                                          g.shape(), ", the param ", p.shape()));
    if (!g.dtype().is_float())
      throw DTypeError(tinyt::detail::cat(name_, ".step: the grad of param ", i, " of shape ",
                                          p.shape(), " is ", g.dtype().name()));
    if (g.device() != p.device())
      throw DeviceError(tinyt::detail::cat(name_, ".step: the grad of param ", i, " of shape ",
                                           p.shape(), " is on ", g.device(), ", the param on ",
                                           p.device()));
    grads.push_back(g);
  }
  std::vector<Tensor> next = updated(grads);
  for (size_t i = 0; i < params_.size(); ++i) params_[i].assign(next[i]);
  // the grads go in too: they may still be lazy and read the params' old values
  std::vector<Tensor> out = state_;
  for (const auto* list : {&params_, &buffers_, &grads})
    out.insert(out.end(), list->begin(), list->end());
  return out;
}

// -- SGD ----------------------------------------------------------------------------------------

TINYT_INLINE SGD::SGD(const std::vector<Tensor>& params, double lr_value, double momentum,
                double weight_decay, bool nesterov)
    : Optimizer("SGD", params, lr_value),
      momentum_(momentum),
      wd_(weight_decay),
      nesterov_(nesterov) {
  check_arg("momentum", momentum, 0.0);
  check_arg("weight_decay", weight_decay, 0.0);
  if (nesterov && momentum <= 0.0) throw Error(tinyt::detail::cat("SGD: nesterov needs a momentum > 0, got momentum ", momentum));
  if (momentum != 0.0)
    for (const Tensor& p : params_) velocity_.push_back(new_state(p, 0.0));
  finish_init();
}

TINYT_INLINE std::vector<Tensor> SGD::updated(const std::vector<Tensor>& grads) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor p = params_[i].detach(), g = grads[i];
    if (wd_ != 0.0) g = g + p * wd_;
    if (momentum_ != 0.0) {
      // the velocity starts at zero, so the first step sets it to g, as PyTorch's first step does
      velocity_[i].assign(velocity_[i] * momentum_ + g);
      g = nesterov_ ? Tensor(g + velocity_[i] * momentum_) : velocity_[i];
    }
    out.push_back(p - lr * g);
  }
  return out;
}

// -- Adam, AdamW, LAMB ------------------------------------------------------------------------

namespace detail {
TINYT_INLINE Moments::Moments(const char* name, Kind kind, const std::vector<Tensor>& params,
                        double lr_value, double b1, double b2, double eps, double weight_decay)
    : Optimizer(name, params, lr_value),
      kind_(kind),
      b1_(b1),
      b2_(b2),
      eps_(eps),
      wd_(weight_decay) {
  check_arg("b1", b1, 0.0, 1.0);
  check_arg("b2", b2, 0.0, 1.0);
  check_arg("eps", eps, 0.0);
  check_arg("weight_decay", weight_decay, 0.0);
  b1_t_ = new_state({}, dtypes::float64, 1.0);
  b2_t_ = new_state({}, dtypes::float64, 1.0);
  for (const Tensor& p : params_) {
    m_.push_back(new_state(p, 0.0));
    v_.push_back(new_state(p, 0.0));
  }
  finish_init();
}

TINYT_INLINE std::vector<Tensor> Moments::updated(const std::vector<Tensor>& grads) {
  b1_t_.assign(b1_t_ * b1_);
  b2_t_.assign(b2_t_ * b2_);
  // the bias corrections in float64, as PyTorch computes them on Python floats, then in lr's
  // dtype (float32, or float64 for float64 params)
  const DType dt = lr.dtype();
  const Tensor lr64 = lr.cast(dtypes::float64);
  const Tensor bc1 = (1.0 - b1_t_).cast(dt), bc2 = (1.0 - b2_t_).cast(dt);
  const Tensor step_size = (lr64 / (1.0 - b1_t_)).cast(dt);
  const Tensor bc2_sqrt = (1.0 - b2_t_).sqrt().cast(dt);
  const Tensor decay = (1.0 - lr64 * wd_).cast(dt);
  std::vector<Tensor> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor p = params_[i].detach(), g = grads[i];
    if (kind_ == Kind::adam && wd_ != 0.0) g = g + p * wd_;
    // PyTorch's lerp_(g, 1 - b1), which rounds differently above and below a weight of 0.5
    const double w = 1.0 - b1_;
    m_[i].assign(w < 0.5 ? Tensor(m_[i] + (g - m_[i]) * w) : Tensor(g - (g - m_[i]) * (1.0 - w)));
    v_[i].assign(v_[i] * b2_ + g * (1.0 - b2_) * g);
    if (kind_ == Kind::lamb) {
      Tensor up = (m_[i] / bc1) / ((v_[i] / bc2).sqrt() + eps_);
      if (wd_ != 0.0) up = up + p * wd_;
      Tensor r1 = p.square().sum().sqrt(), r2 = up.square().sum().sqrt();
      Tensor trust = (r1 > 0).where((r2 > 0).where(r1 / r2, 1.0), 1.0);
      out.push_back(p - lr * trust * up);
      continue;
    }
    if (kind_ == Kind::adamw && wd_ != 0.0) p = p * decay;
    out.push_back(p - step_size * (m_[i] / (v_[i].sqrt() / bc2_sqrt + eps_)));
  }
  return out;
}
}  // namespace detail

}  // namespace tinyt::inline v0::nn::optim
