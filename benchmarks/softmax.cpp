// softmax over the last axis of a 4096 x 4096 fp32 matrix (64 x 64 with --quick), in ms (and GB/s
// of one read and one write of the matrix).
#include <cmath>

#include <tinyt.hpp>

#include "bench.hpp"

using namespace tinyt;

int main(int argc, char** argv) {
  bench::Options opt(argc, argv);
  const int64_t n = opt.quick ? 64 : 4096;
  const std::string size = std::to_string(n);
  Tensor x = Tensor::rand({n, n}).realize(), y;
  GlobalCounters::reset();
  const bench::Timing t = bench::measure(opt, [&] { y = x.softmax(-1).realize(); });
  const int64_t kernels = GlobalCounters::kernel_count / (opt.warmup + t.runs);
  std::printf("softmax %s^2: %lld kernels per run, %.2f GB/s (one read + one write)\n",
              size.c_str(), static_cast<long long>(kernels), 2.0 * 4 * n * n / t.best_s / 1e9);
  bench::report("softmax_" + size, "softmax " + size + "^2 fp32, last axis", t.best_s * 1e3, "ms",
                t);

  const std::vector<float> xv = x.to_vector<float>(), yv = y.to_vector<float>();
  for (int64_t row = 0; row < n; row += 1023) {
    double max = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; ++j) max = std::max(max, double(xv[row * n + j]));
    for (int64_t j = 0; j < n; ++j) sum += std::exp(xv[row * n + j] - max);
    for (int64_t j = 0; j < n; j += 1000) {
      const double want = std::exp(xv[row * n + j] - max) / sum;
      bench::check(bench::close(yv[row * n + j], want, 1e-9),
                   "softmax entry (" + std::to_string(row) + ", " + std::to_string(j) + ")");
    }
  }
  return 0;
}
