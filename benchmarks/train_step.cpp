// One training step of the Fashion-MNIST CNN of examples/ (FashionNet: conv 1->16 5x5, batchnorm,
// relu, max pool, conv 16->32 3x3, batchnorm, relu, max pool, linear 800->128, relu, linear 128->10) with Adam (lr 1e-3),
// batch 512 (16 with --quick), in ms per step: the forward pass, the loss, backward, Adam's update and the running
// statistics, realized as examples/fashion_mnist.cpp does, in one schedule per step.
// The batch is fixed random data, realized before the timing; every step trains on it again.
#include <cmath>

#include <tinyt.hpp>

#include "bench.hpp"
#include "fashion_mnist_model.hpp"

using namespace tinyt;

int main(int argc, char** argv) {
  // the first step compiles the kernels; a few more settle the optimizer's state and the caches
  bench::Options opt(argc, argv, /*default_warmup=*/3);
  const int64_t batch = opt.quick ? 16 : 512;
  Tensor::manual_seed(42);
  const Tensor x = Tensor::rand({batch, 1, 28, 28}).realize();
  const Tensor y = Tensor::randint({batch}, 0, 10, dtypes::int32).realize();
  FashionNet model;
  nn::optim::Adam adam(nn::state::get_parameters(model), 1e-3);

  std::vector<float> losses;  // every step's loss, to check that training happens
  Tensor loss;
  auto step = [&] {
    Tensor::Train train;
    adam.zero_grad();
    loss = model(x).sparse_categorical_crossentropy(y);
    loss.backward();
    std::vector<Tensor> todo = adam.schedule_step();
    todo.push_back(loss);
    realize_tensors(todo);
    losses.push_back(loss.item<float>());  // the loss is computed: reading it launches nothing
  };
  const bench::Timing t = bench::measure(opt, step);
  bench::report(opt.quick ? "train_step_quick" : "train_step",
                "FashionNet train step, batch " + std::to_string(batch) + ", Adam", t.best_s * 1e3,
                "ms", t);

  // a random batch of 10 classes starts near ln 10, and the same batch, trained on again and
  // again, must be fitted better
  bool finite = true;
  for (float l : losses) finite = finite && std::isfinite(l);
  bench::check(finite, "every loss finite");
  bench::check(losses.front() > 1.5f && losses.front() < 4.0f,
               "the first loss near ln 10: " + std::to_string(losses.front()));
  bench::check(losses.size() < 4 || losses.back() < losses.front(),
               "the loss falls: " + std::to_string(losses.front()) + " -> " + std::to_string(losses.back()));
  return 0;
}
