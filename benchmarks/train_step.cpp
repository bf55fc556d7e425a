// One training step of the Fashion-MNIST CNN of examples/ (FashionNet: conv 1->16 5x5, batchnorm,
// relu, max pool, conv 16->32 3x3, batchnorm, relu, max pool, linear 800->128, relu, linear 128->10) with Adam (lr 1e-3),
// batch 512 (16 with --quick), in ms per step: the forward pass, the loss, backward, Adam's update and the running
// statistics, realized as examples/fashion_mnist.cpp does, in one schedule per step.
// The batch is fixed random data, realized before the timing; every step trains on it again.
#include "fashion_mnist_model.hpp"
#include "train_bench.hpp"

int main(int argc, char** argv) {
  return bench::train_step_benchmark<FashionNet>(argc, argv, "train_step", "FashionNet train step");
}
