// Trains a small CNN on Fashion-MNIST (in the style of tinygrad's beautiful_mnist: convs,
// batchnorm, max pooling, a linear head) with Adam, then prints the test accuracy.
//
//   fashion_mnist [steps] [batch]     data: $FASHION_MNIST_DIR or /usr/share/datasets/fashion-mnist
//
// Each step is one schedule: the forward pass, the gradients (more graph, from the derivative
// rules) and Adam's update are fused into kernels and compiled once; later steps only launch them.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <tinyt.hpp>

#include "fashion_mnist_model.hpp"

using namespace tinyt;

namespace {
void progress(int step, int steps, float loss, double images_per_s) {
  const int width = 30, done = width * step / steps;
  std::printf("\rstep %4d/%d [%s%s] loss %.4f  %.0f img/s ", step, steps, std::string(static_cast<size_t>(done), '=').c_str(),
              std::string(static_cast<size_t>(width - done), ' ').c_str(), static_cast<double>(loss), images_per_s);
  std::fflush(stdout);
}
}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int batch = argc > 2 ? std::atoi(argv[2]) : 128;
  try {
    const nn::datasets::Mnist data = nn::datasets::fashion_mnist();
    const int64_t n_train = data.X_train.shape()[0].as_int();
    std::printf("Fashion-MNIST: %lld training images, %lld test images; %d steps of %d\n", static_cast<long long>(n_train),
                static_cast<long long>(data.X_test.shape()[0].as_int()), steps, batch);

    Tensor::manual_seed(42);
    FashionNet model;
    const auto start = std::chrono::steady_clock::now();
    train_fashion(model, data, steps, batch, [&](int step, const Tensor& loss) {
      if (step % 10 == 0 || step == steps) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        progress(step, steps, loss.item<float>(), step * static_cast<double>(batch) / seconds);
      }
    });
    std::printf("\n");
    std::printf("test accuracy: %.2f%%\n", test_accuracy(model, data));
  } catch (const Error& e) {
    std::fprintf(stderr, "\nfashion_mnist: %s\n", e.what());
    return 1;
  }
}
