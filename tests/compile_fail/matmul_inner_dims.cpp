// A static matmul whose inner dims differ: (2, 3) @ (4, 5).
// expect: matmul of static tensors: the left's last dim must equal the right's second-to-last
// expect: static_matmul_fits<.*StaticShape<2, 3>, .*StaticShape<4, 5>
#include <tinyt.hpp>

int main() {
  auto a = tinyt::StaticTensor<2, 3>::ones();
  auto b = tinyt::StaticTensor<4, 5>::ones();
  auto c = a.matmul(b);
  return static_cast<int>(c.numel());
}
