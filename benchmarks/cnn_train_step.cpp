// One training step of a plain CNN whose time goes to its convolutions (issue 16's row): conv
// 1->32 5x5, relu, max pool, conv 32->64 5x5, relu, max pool, linear 1024->10, on 28x28 inputs,
// batch 512 (16 with --quick), cross-entropy, backward and Adam (lr 1e-3), in ms per step.
// FashionNet's step (bench_train_step) spends little in its convolutions; this one spends most of
// its time in conv 2's forward, input-gradient and weight-gradient kernels.
#include "train_bench.hpp"

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
  return bench::train_step_benchmark<ConvNet>(argc, argv, "cnn_train_step", "CNN (5x5 convs of 32, 64) train step");
}
