// The CNN of examples/fashion_mnist.cpp, shared with benchmarks/ (the training-step row of
// vs_torch times this model against the same one in PyTorch, benchmarks/torch_bench.py).
#pragma once

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
