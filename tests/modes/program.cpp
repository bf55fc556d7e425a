// One small program, built three ways by tests/CMakeLists.txt: linked with the compiled library
// (tinyt::tinyt), in header-only mode (tinyt::header_only), and from single_include/ with the
// implementation in a second file (single_header_implementation.cpp). Each build must print
// expected.txt: a fused elementwise chain, a reduction, a matmul and one SGD step, all on small
// integers whose results are exact in float32 (worked out by hand in expected.txt).
#include <iostream>

#include <tinyt.hpp>

using namespace tinyt;

int main() {
  const Tensor x = Tensor::from_vector(std::vector<float>{1, -2, 3, -4, 5, -6}, {2, 3});
  const Tensor w = Tensor::from_vector(std::vector<float>{1, 2, 0, 1, -1, 0}, {3, 2});
  std::cout << "relu(x*2+1) " << (x * 2 + 1).relu() << "\n";
  std::cout << "row sums " << x.sum(1) << "\n";
  std::cout << "x @ w " << x.matmul(w) << "\n";

  // one SGD step on v (lr 0.5) for the loss sum(v * v): v - 0.5 * 2v = 0
  Tensor v = Tensor::from_vector(std::vector<float>{4, -8}, {2});
  v.requires_grad(true);
  nn::optim::SGD opt({v}, 0.5);
  {
    Tensor::Train train;
    opt.zero_grad();
    (v * v).sum().backward();
    std::cout << "grad " << v.grad() << "\n";
    opt.step();
  }
  std::cout << "after step " << v << "\n";
  return 0;
}
