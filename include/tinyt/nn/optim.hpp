// Optimizers: SGD, Adam, AdamW and LAMB, with PyTorch's update formulas (LAMB as tinygrad's).
//
// An update is a graph like any other: each step assigns new values lazily into the params and
// the optimizer's own state, then realizes all of it in one schedule. The learning rate, the
// moments and the powers of beta are tensors in memory, so from the second step on a step finds
// every kernel in the cache and compiles nothing, even after the learning rate is changed.
#pragma once

#include <string>
#include <vector>

#include "../tensor.hpp"

namespace tinyt::inline v0::nn::optim {

/// Base of the optimizers: the params it updates, the buffers it realizes with them, and lr.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  Optimizer(Optimizer&&) = default;
  Optimizer& operator=(Optimizer&&) = default;

  /// Clears the gradient of every param (PyTorch's zero_grad with set_to_none).
  void zero_grad() {
    for (Tensor& p : params_) p.set_grad({});
  }
  /// Updates every param from its grad(), in one schedule.
  void step() { realize_tensors(schedule_step()); }
  /// Assigns the update lazily and returns what step() realizes; realize it with the loss
  /// (`realize_tensors`) to compute both in one schedule.
  std::vector<Tensor> schedule_step();

  /// The params step() updates: requires_grad set or never set, duplicates removed, in order.
  const std::vector<Tensor>& params() const { return params_; }
  /// The params given with requires_grad(false): never updated, realized at every step so that
  /// values assigned to them during the forward pass (running statistics) do not pile up.
  const std::vector<Tensor>& buffers() const { return buffers_; }
  /// The optimizer's own state in memory: lr, then momentum, moments, powers of beta.
  const std::vector<Tensor>& state() const { return state_; }

  /// Sets the learning rate. The value is copied in from the host, so no kernel is compiled
  /// for it (`lr.assign(0.01)` works too, but compiles a kernel storing that constant).
  void set_lr(double value) {
    check_arg("lr", value, 0.0);
    lr.assign(Tensor::from_vector(std::vector<double>{value}, Shape{}, lr.device())).realize();
  }

  /// The learning rate, a 0-d tensor in memory that every step reads, so changing it
  /// recompiles none of the step's kernels.
  Tensor lr;

 protected:
  Optimizer(std::string name, const std::vector<Tensor>& params, double lr);
  /// The new value of every param, given its grad; assigns the optimizer's state on the way.
  virtual std::vector<Tensor> updated(const std::vector<Tensor>& grads) = 0;
  /// A state tensor in memory of its own, filled with `value`, listed in state().
  Tensor new_state(const Shape& shape, DType dtype, double value);
  /// A state tensor like `param` (its shape, dtype and devices, split as it is), filled with `value`.
  Tensor new_state(const Tensor& param, double value);
  /// Realizes the params, the buffers and the state: called last by each optimizer's constructor.
  void finish_init();
  /// Throws unless lo <= value (and value < hi when hi is given): PyTorch's argument checks.
  void check_arg(const char* what, double value, double lo, double hi = INFINITY) const;

  std::string name_;
  std::vector<Tensor> params_, buffers_, state_;
};

/// Stochastic gradient descent, as torch.optim.SGD (weight decay is added to the gradient).
class SGD : public Optimizer {
 public:
  explicit SGD(const std::vector<Tensor>& params, double lr = 0.001, double momentum = 0.0,
               double weight_decay = 0.0, bool nesterov = false);

 protected:
  std::vector<Tensor> updated(const std::vector<Tensor>& grads) override;

 private:
  double momentum_, wd_;
  bool nesterov_;
  std::vector<Tensor> velocity_;
};

namespace detail {
/// Adam, AdamW and LAMB: bias-corrected first and second moments of the gradient; they differ
/// only in how weight decay enters and in LAMB's trust ratio.
class Moments : public Optimizer {
 protected:
  enum class Kind { adam, adamw, lamb };
  Moments(const char* name, Kind kind, const std::vector<Tensor>& params, double lr, double b1,
          double b2, double eps, double weight_decay);
  std::vector<Tensor> updated(const std::vector<Tensor>& grads) override;

 private:
  Kind kind_;
  double b1_, b2_, eps_, wd_;
  Tensor b1_t_, b2_t_;  // beta^t, in float64 like PyTorch's Python floats
  std::vector<Tensor> m_, v_;
};
}  // namespace detail

/// Adam, as torch.optim.Adam: weight decay is added to the gradient (L2).
class Adam : public detail::Moments {
 public:
  explicit Adam(const std::vector<Tensor>& params, double lr = 0.001, double b1 = 0.9,
                double b2 = 0.999, double eps = 1e-8, double weight_decay = 0.0)
      : Moments("Adam", Kind::adam, params, lr, b1, b2, eps, weight_decay) {}
};
/// AdamW, as torch.optim.AdamW: decoupled weight decay, p -= lr * weight_decay * p.
class AdamW : public detail::Moments {
 public:
  explicit AdamW(const std::vector<Tensor>& params, double lr = 0.001, double b1 = 0.9,
                 double b2 = 0.999, double eps = 1e-8, double weight_decay = 0.01)
      : Moments("AdamW", Kind::adamw, params, lr, b1, b2, eps, weight_decay) {}
};
/// LAMB, as tinygrad's: the Adam step plus weight decay, scaled per param by ||p|| / ||step||.
class LAMB : public detail::Moments {
 public:
  explicit LAMB(const std::vector<Tensor>& params, double lr = 0.001, double b1 = 0.9,
                double b2 = 0.999, double eps = 1e-6, double weight_decay = 0.0)
      : Moments("LAMB", Kind::lamb, params, lr, b1, b2, eps, weight_decay) {}
};

}  // namespace tinyt::inline v0::nn::optim
