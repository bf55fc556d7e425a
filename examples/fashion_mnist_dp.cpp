// Data-parallel training on Fashion-MNIST across processes: run it with
//
//   mpirun -np 2 fashion_mnist_dp [steps] [global batch]    (1 process without mpirun)
//
// Every rank draws the same global batch (the same seed), trains on its share of it, and the
// gradients are averaged across the ranks by Tensor::allreduce before Adam's update: the weights
// stay the same on every rank, and equal (up to float rounding) those of one process training on
// the whole batch. The model is a CNN without batchnorm (whose statistics would be each rank's
// own). The step runs under TinyJit: the allreduces are replayed with its kernels.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <tinyt.hpp>

#include "fashion_mnist_model.hpp"

using namespace tinyt;

namespace {
struct Net {
  nn::Conv2d conv1{1, 16, 5}, conv2{16, 32, 3};
  nn::Linear fc{32 * 5 * 5, 128}, head{128, 10};
  /// (N, 1, 28, 28) pixels in [0, 1] -> (N, 10) logits.
  Tensor operator()(const Tensor& x) const {
    Tensor h = conv1(x).relu().max_pool2d();  // 24x24 -> 12x12
    h = conv2(h).relu().max_pool2d();         // 10x10 -> 5x5
    return head(fc(h.flatten(1)).relu());
  }
};
TINYT_PARAMETERS(Net, conv1, conv2, fc, head);
}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 500;
  const int64_t global = argc > 2 ? std::atoi(argv[2]) : 128;
  try {
    dist::Communicator& world = dist::world();
    const int rank = world.rank(), ranks = world.size();
    if (global % ranks != 0) throw Error(detail::cat("fashion_mnist_dp: a global batch of ", global, " does not split over ", ranks, " ranks"));
    const int64_t local = global / ranks;
    const nn::datasets::Mnist data = nn::datasets::fashion_mnist();
    const int64_t n_train = data.X_train.shape()[0].as_int();
    if (rank == 0)
      std::printf("Fashion-MNIST, data-parallel on %d rank(s) (%s): %d steps of %lld (%lld per rank)\n", ranks,
                  world.name().c_str(), steps, static_cast<long long>(global), static_cast<long long>(local));

    Tensor::manual_seed(42);  // the same weights, and the same batches, on every rank
    Net model;
    const std::vector<Tensor> params = nn::state::get_parameters(model);
    nn::optim::Adam opt(params, 1e-3);
    TinyJit step([&](Tensor x, Tensor y) {
      Tensor::Train train;
      opt.zero_grad();
      Tensor loss = model(x).sparse_categorical_crossentropy(y);
      loss.backward();
      for (Tensor p : opt.params()) p.set_grad(p.grad().allreduce().div(static_cast<float>(ranks)));
      std::vector<Tensor> todo = opt.schedule_step();
      Tensor mean_loss = loss.allreduce().div(static_cast<float>(ranks));
      todo.push_back(mean_loss);
      realize_tensors(todo);
      return mean_loss;
    });
    const auto start = std::chrono::steady_clock::now();
    for (int i = 1; i <= steps; ++i) {
      const Tensor pick = Tensor::randint({global}, 0, n_train)[{Slice(rank * local, (rank + 1) * local)}];
      const Tensor loss = step(pixels(data.X_train[{pick}]).realize(), data.Y_train[{pick}].cast(dtypes::int32).realize());
      if (rank == 0 && (i % 50 == 0 || i == steps)) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf("step %4d/%d  loss %.4f  %.0f img/s (all ranks)\n", i, steps, static_cast<double>(loss.item<float>()),
                    static_cast<double>(i) * static_cast<double>(global) / s);
      }
    }
    // every rank holds the same weights: compare a checksum with rank 0's
    double checksum = 0;
    for (const Tensor& p : params)
      for (float v : p.to_vector<float>()) checksum += static_cast<double>(v);
    double root = checksum;
    world.broadcast(&root, sizeof root, 0);
    if (root != checksum) throw Error(detail::cat("rank ", rank, ": weights differ from rank 0's (checksum ", checksum, " vs ", root, ")"));
    const double accuracy = test_accuracy(model, data);
    if (rank == 0) std::printf("weights checksum %.9g, the same on every rank\ntest accuracy: %.2f%%\n", checksum, accuracy);
  } catch (const Error& e) {
    std::fprintf(stderr, "\nfashion_mnist_dp: %s\n", e.what());
    return 1;
  }
}
