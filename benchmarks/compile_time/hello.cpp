// The program whose compile time benchmarks/compile_time/measure reports: a new user's first
// tinyt program (an add, a matmul, a print).
#include <iostream>

#include <tinyt.hpp>

using namespace tinyt;

int main() {
  Tensor a = Tensor::arange(6).reshape({2, 3}).float_();
  Tensor b = Tensor::ones({3, 2});
  std::cout << (a + 1).matmul(b) << "\n";
  return 0;
}
