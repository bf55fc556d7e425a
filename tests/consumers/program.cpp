// A program that uses tinyt as an application does: it includes <tinyt.hpp>, realizes a small
// graph (a JIT-compiled kernel), checks it against values computed by hand and prints the version
// it was built with, which must be the one the test expects (EXPECTED_VERSION).
#include <tinyt.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main() {
  const tinyt::Tensor a = tinyt::Tensor::from_vector(std::vector<float>{1, 2, 3, 4}).reshape({2, 2});
  // [[1, 2], [3, 4]] squared is [[7, 10], [15, 22]]
  const std::vector<float> got = (a.matmul(a) + 1).relu().to_vector<float>(), want{8, 11, 16, 23};
  if (got != want) {
    std::fprintf(stderr, "consumer: a @ a + 1 gave the wrong values\n");
    return 1;
  }
  if (tinyt::version() != EXPECTED_VERSION) {
    std::fprintf(stderr, "consumer: built against tinyt %s, expected %s\n", std::string(tinyt::version()).c_str(),
                 EXPECTED_VERSION);
    return 1;
  }
  std::printf("tinyt %s: ok\n", std::string(tinyt::version()).c_str());
  return 0;
}
