// One training step of a plain CNN whose time goes to its convolutions (issue 16's row): conv
// 1->32 5x5, relu, max pool, conv 32->64 5x5, relu, max pool, linear 1024->10, on 28x28 inputs,
// batch 512 (16 with --quick), cross-entropy, backward and Adam (lr 1e-3), in ms per step.
// FashionNet's step (bench_train_step) spends little in its convolutions; this one spends most of
// its time in conv 2's forward, input-gradient and weight-gradient kernels.
#include <cmath>

#include <tinyt.hpp>

#include "bench.hpp"

using namespace tinyt;

struct ConvNet {
  nn::Conv2d conv1{1, 32, 5}, conv2{32, 64, 5};
  nn::Linear head{64 * 4 * 4, 10};
  Tensor operator()(const Tensor& x) const {
    Tensor h = conv1(x).relu().max_pool2d();  // 24x24 -> 12x12
    h = conv2(h).relu().max_pool2d();         // 8x8 -> 4x4
    return head(h.flatten(1));
  }
};
TINYT_PARAMETERS(ConvNet, conv1, conv2, head);

int main(int argc, char** argv) {
  bench::Options opt(argc, argv, /*default_warmup=*/3);
  const int64_t batch = opt.quick ? 16 : 512;
  Tensor::manual_seed(42);
  const Tensor x = Tensor::rand({batch, 1, 28, 28}).realize();
  const Tensor y = Tensor::randint({batch}, 0, 10, dtypes::int32).realize();
  ConvNet model;
  nn::optim::Adam adam(nn::state::get_parameters(model), 1e-3);

  std::vector<float> losses;
  auto step = [&] {
    Tensor::Train train;
    adam.zero_grad();
    Tensor loss = model(x).sparse_categorical_crossentropy(y);
    loss.backward();
    std::vector<Tensor> todo = adam.schedule_step();
    todo.push_back(loss);
    realize_tensors(todo);
    losses.push_back(loss.item<float>());
  };
  const bench::Timing t = bench::measure(opt, step);
  bench::report(opt.quick ? "cnn_train_step_quick" : "cnn_train_step",
                "CNN (5x5 convs of 32, 64) train step, batch " + std::to_string(batch) + ", Adam",
                t.best_s * 1e3, "ms", t);

  bool finite = true;
  for (float l : losses) finite = finite && std::isfinite(l);
  bench::check(finite, "every loss finite");
  bench::check(losses.front() > 1.5f && losses.front() < 4.0f,
               "the first loss near ln 10: " + std::to_string(losses.front()));
  bench::check(losses.size() < 4 || losses.back() < losses.front(),
               "the loss falls: " + std::to_string(losses.front()) + " -> " + std::to_string(losses.back()));
  return 0;
}
