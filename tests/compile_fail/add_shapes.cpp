// Static shapes that do not broadcast: (2, 3) + (4).
// expect: add of static tensors: the shapes must broadcast
// expect: static_broadcastable<.*StaticShape<2, 3>, .*StaticShape<4> ?>
#include <tinyt.hpp>

int main() {
  auto c = tinyt::StaticTensor<2, 3>::ones() + tinyt::StaticTensor<4>::ones();
  return static_cast<int>(c.numel());
}
