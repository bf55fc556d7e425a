// A static shape with a negative dim.
// expect: StaticTensor: every dim of a static shape must be zero or more
#include <tinyt.hpp>

int main() {
  tinyt::StaticTensor<2, -1> a;
  return static_cast<int>(a.defined());
}
