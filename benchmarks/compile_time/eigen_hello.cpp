// The anchor of benchmarks/compile_time/measure: the same program with Eigen (header-only,
// expression templates, no JIT), the compile time a C++ user expects from a tensor library.
#include <iostream>

#include <Eigen/Dense>

int main() {
  Eigen::MatrixXf a(2, 3), b = Eigen::MatrixXf::Ones(3, 2);
  a << 0, 1, 2, 3, 4, 5;
  std::cout << (a.array() + 1).matrix() * b << "\n";
  return 0;
}
