// The control: static ops whose shapes fit compile, and their result types carry the shapes.
#include <tinyt.hpp>

#include <type_traits>

using namespace tinyt;

int main() {
  auto a = StaticTensor<2, 3>::ones();
  auto b = StaticTensor<3, 5>::ones();
  auto c = a.matmul(b);
  static_assert(std::is_same_v<decltype(c), StaticTensor<2, 5>>);
  auto d = c + StaticTensor<5>::ones();
  static_assert(std::is_same_v<decltype(d), StaticTensor<2, 5>>);
  auto e = matmul(StaticTensor<7, 2, 4, 3>::ones(), StaticTensor<3, 6>::ones());
  static_assert(std::is_same_v<decltype(e), StaticTensor<7, 2, 4, 6>>);
  auto f = matmul(StaticTensor<3>::ones(), StaticTensor<4, 3, 2>::ones());
  static_assert(std::is_same_v<decltype(f), StaticTensor<4, 2>>);
  Tensor g = (d * 2 + a.sum()).relu();  // with scalars and Tensors: ordinary expressions
  return static_cast<int>(g.numel());
}
