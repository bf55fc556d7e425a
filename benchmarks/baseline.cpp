// Baseline figures of the C backend before any kernel optimization (issue 4 improves them):
// matmul GFLOPS, elementwise and reduction bandwidth, and host time per cached step.
// Usage: bench_baseline [--quick] (tiny sizes, one run: for CI)
#include <chrono>
#include <cstdio>

#include <tinyt.hpp>

#include "bench.hpp"

using namespace tinyt;

namespace {
// best of `reps` timed runs of f, in seconds
template <class F> double best_of(int reps, F&& f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}
}  // namespace

int main(int argc, char** argv) {
  const bench::Options opt(argc, argv);
  const int reps = opt.quick ? 1 : 3;
  {
    const int64_t n = opt.quick ? 64 : 512;
    Tensor a = Tensor::rand({n, n}).realize(), b = Tensor::rand({n, n}).realize();
    const double s = best_of(reps, [&] { a.matmul(b).realize(); });
    std::printf("matmul %lldx%lld:            %8.2f GFLOPS\n", static_cast<long long>(n), static_cast<long long>(n),
                2.0 * n * n * n / s / 1e9);
  }
  {
    const int64_t n = opt.quick ? 64 << 10 : 16 << 20;
    Tensor x = Tensor::rand({n}).realize();
    const double s = best_of(reps, [&] { ((x * 2 + 1).relu() * x - 0.5).exp2().realize(); });
    std::printf("elementwise chain, %lldK f32: %8.2f GB/s\n", static_cast<long long>(n >> 10), 2.0 * 4 * n / s / 1e9);
    const double r = best_of(reps, [&] { x.sum().realize(); });
    std::printf("sum, %lldK f32: %8.2f GB/s\n", static_cast<long long>(n >> 10), 4.0 * n / r / 1e9);
  }
  {
    Tensor a = Tensor::rand({1024}).realize();
    (a * 2 + 1).relu().realize();
    const int steps = opt.quick ? 20 : 2000;
    const double s = best_of(1, [&] {
      for (int i = 0; i < steps; ++i) (a * 2 + 1).relu().realize();
    });
    std::printf("host time per cached step:  %8.2f us\n", s / steps * 1e6);
  }
  return 0;
}
