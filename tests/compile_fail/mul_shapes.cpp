// Static shapes that do not broadcast, further in: (3, 2) * (3) (aligned from the right, 2 and 3).
// expect: mul of static tensors: the shapes must broadcast
// expect: static_broadcastable<.*StaticShape<3, 2>, .*StaticShape<3> ?>
#include <tinyt.hpp>

int main() {
  tinyt::StaticTensor<3, 2> a = tinyt::StaticTensor<3, 2>::rand();
  tinyt::StaticTensor<3> b = tinyt::StaticTensor<3>::rand();
  tinyt::Tensor c = a * b;
  return static_cast<int>(c.numel());
}
