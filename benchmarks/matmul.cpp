// fp32 matmul of two square n x n matrices (default n = 512, 1024 and 2048), in GFLOPS (2 n^3
// flops per product; n = 64 with --quick). Usage: bench_matmul [options] [n...]
#include <random>

#include <tinyt.hpp>

#include "bench.hpp"

using namespace tinyt;

int main(int argc, char** argv) {
  bench::Options opt(argc, argv);
  std::vector<int64_t> sizes;
  for (const std::string& a : opt.args) sizes.push_back(std::stoll(a));
  if (sizes.empty())
    sizes = opt.quick ? std::vector<int64_t>{64} : std::vector<int64_t>{512, 1024, 2048};
  for (const int64_t n : sizes) {
    Tensor a = Tensor::rand({n, n}).realize(), b = Tensor::rand({n, n}).realize();
    Tensor c;
    const bench::Timing t = bench::measure(opt, [&] { c = a.matmul(b).realize(); });
    const double gflops = 2.0 * static_cast<double>(n * n * n) / t.best_s / 1e9;
    bench::report("matmul_" + std::to_string(n), "matmul " + std::to_string(n) + "^2 fp32", gflops,
                  "GFLOPS", t);

    // Spot-check a few entries against a double-precision dot product.
    const std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>(),
                             cv = c.to_vector<float>();
    std::mt19937 rng(1);
    for (int k = 0; k < 8; ++k) {
      const int64_t i = static_cast<int64_t>(rng() % n), j = static_cast<int64_t>(rng() % n);
      double want = 0;
      for (int64_t l = 0; l < n; ++l) want += double(av[i * n + l]) * double(bv[l * n + j]);
      bench::check(bench::close(cv[i * n + j], want), "matmul " + std::to_string(n) + " entry (" +
                                                          std::to_string(i) + ", " +
                                                          std::to_string(j) + ")");
    }
  }
  return 0;
}
