// A training step as a benchmark: a model trained again and again on one fixed random batch of
// 28x28 images (10 classes) with Adam (lr 1e-3), cross-entropy and backward, realized in one
// schedule per step as examples/fashion_mnist.cpp does; ms per step, and the checks that it trains.
#pragma once

#include <cmath>

#include <tinyt.hpp>

#include "bench.hpp"

namespace bench {

/// Times a step of `Model` (batch 512, 16 with --quick; 3 untimed steps first: the first compiles
/// the kernels, a few more settle the optimizer's state and the caches) and reports it as `name`.
template <class Model> int train_step_benchmark(int argc, char** argv, const std::string& name, const std::string& what) {
  using tinyt::Tensor;
  Options opt(argc, argv, /*default_warmup=*/3);
  const int64_t batch = opt.quick ? 16 : 512;
  Tensor::manual_seed(42);
  const Tensor x = Tensor::rand({batch, 1, 28, 28}).realize();
  const Tensor y = Tensor::randint({batch}, 0, 10, tinyt::dtypes::int32).realize();
  Model model;
  tinyt::nn::optim::Adam adam(tinyt::nn::state::get_parameters(model), 1e-3);

  std::vector<float> losses;  // every step's loss, to check that training happens
  auto step = [&] {
    Tensor::Train train;
    adam.zero_grad();
    Tensor loss = model(x).sparse_categorical_crossentropy(y);
    loss.backward();
    std::vector<Tensor> todo = adam.schedule_step();
    todo.push_back(loss);
    tinyt::realize_tensors(todo);
    losses.push_back(loss.item<float>());  // the loss is computed: reading it launches nothing
  };
  const Timing t = measure(opt, step);
  report(opt.quick ? name + "_quick" : name, what + ", batch " + std::to_string(batch) + ", Adam", t.best_s * 1e3, "ms", t);

  // a random batch of 10 classes starts near ln 10, and the same batch, trained on again and
  // again, must be fitted better
  bool finite = true;
  for (float l : losses) finite = finite && std::isfinite(l);
  check(finite, "every loss finite");
  check(losses.front() > 1.5f && losses.front() < 4.0f, "the first loss near ln 10: " + std::to_string(losses.front()));
  check(losses.size() < 4 || losses.back() < losses.front(),
        "the loss falls: " + std::to_string(losses.front()) + " -> " + std::to_string(losses.back()));
  return 0;
}

}  // namespace bench
