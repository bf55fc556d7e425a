// The CNN of examples/fashion_mnist.cpp, shared with benchmarks/ (the training-step row of
// vs_torch times this model against the same one in PyTorch, benchmarks/torch_bench.py), and what
// the Fashion-MNIST examples share: pixels and the test accuracy.
#pragma once

#include <algorithm>
#include <vector>

#include <tinyt.hpp>

/// beautiful_mnist's shape, narrower: conv-batchnorm-relu-pool twice, then a small MLP head.
struct FashionNet {
  using Tensor = tinyt::Tensor;
  tinyt::nn::Conv2d conv1{1, 16, 5};
  tinyt::nn::BatchNorm bn1{16};
  tinyt::nn::Conv2d conv2{16, 32, 3};
  tinyt::nn::BatchNorm bn2{32};
  tinyt::nn::Linear fc{32 * 5 * 5, 128}, head{128, 10};

  /// (N, 1, 28, 28) pixels in [0, 1] -> (N, 10) logits.
  Tensor operator()(const Tensor& x) const {
    Tensor h = bn1(conv1(x)).relu().max_pool2d();  // 24x24 -> 12x12
    h = bn2(conv2(h)).relu().max_pool2d();         // 10x10 -> 5x5
    return head(fc(h.flatten(1)).relu());
  }
};
TINYT_PARAMETERS(FashionNet, conv1, bn1, conv2, bn2, fc, head);

/// Images (N, 1, 28, 28) as uint8 -> pixels in [0, 1].
inline tinyt::Tensor pixels(const tinyt::Tensor& images) { return images.cast(tinyt::dtypes::float32) / 255.0f; }

/// `steps` steps of the examples' training of `model`: Adam at lr 2e-3, then 6e-4 from 60% of the
/// run and 2e-4 from 85% (lr is a tensor in memory, so a change recompiles nothing), each on
/// `batch` random training images; `report(step, loss)` after each step.
template <class Report> void train_fashion(FashionNet& model, const tinyt::nn::datasets::Mnist& data, int steps, int batch, Report report) {
  using tinyt::Tensor;
  tinyt::nn::optim::Adam opt(tinyt::nn::state::get_parameters(model), 2e-3);
  const int64_t n_train = data.X_train.shape()[0].as_int();
  for (int step = 1; step <= steps; ++step) {
    if (step == steps * 6 / 10) opt.set_lr(6e-4);
    if (step == steps * 85 / 100) opt.set_lr(2e-4);
    const Tensor pick = Tensor::randint({batch}, 0, n_train);
    const Tensor x = pixels(data.X_train[{pick}]), y = data.Y_train[{pick}].cast(tinyt::dtypes::int32);
    Tensor loss;
    {
      Tensor::Train train;
      opt.zero_grad();
      loss = model(x).sparse_categorical_crossentropy(y);
      loss.backward();
      std::vector<Tensor> todo = opt.schedule_step();
      todo.push_back(loss);
      tinyt::realize_tensors(todo);  // the loss, the gradients and the update in one schedule
    }
    report(step, loss);
  }
}

/// Percentage of the test images a model classifies right (in eval mode: batchnorm's running
/// statistics), 2000 images at a time.
template <class Model> double test_accuracy(const Model& model, const tinyt::nn::datasets::Mnist& data) {
  using tinyt::Slice;
  const int64_t n = data.X_test.shape()[0].as_int(), chunk = 2000;
  int64_t right = 0;
  for (int64_t start = 0; start < n; start += chunk) {
    const int64_t stop = std::min(n, start + chunk);
    const tinyt::Tensor x = pixels(data.X_test[{Slice(start, stop)}]);
    const tinyt::Tensor y = data.Y_test[{Slice(start, stop)}].cast(tinyt::dtypes::int32);
    right += model(x).argmax(1).eq(y).sum().template item<int64_t>();  // a count is int64, as in PyTorch
  }
  return 100.0 * static_cast<double>(right) / static_cast<double>(n);
}
