// A batched static matmul whose batch dims do not broadcast: (2, 4, 3) @ (5, 3, 6).
// expect: matmul of static tensors: .*batch dims must broadcast
// expect: static_matmul_fits<.*StaticShape<2, 4, 3>, .*StaticShape<5, 3, 6>
#include <tinyt.hpp>

int main() {
  auto c = tinyt::matmul(tinyt::StaticTensor<2, 4, 3>::ones(), tinyt::StaticTensor<5, 3, 6>::ones());
  return static_cast<int>(c.numel());
}
