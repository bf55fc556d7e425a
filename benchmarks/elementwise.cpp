// A fused elementwise chain, ((x * 2 + 1).relu() * x - 0.5).exp2(), over 16M floats, in GB/s:
// the bytes of the arrays read and written once (4 bytes in, 4 bytes out per element), whatever
// the implementation actually moves (PyTorch runs the chain as five passes). 64K with --quick.
#include <cmath>

#include <tinyt.hpp>

#include "bench.hpp"

using namespace tinyt;

int main(int argc, char** argv) {
  bench::Options opt(argc, argv);
  const int64_t n = opt.quick ? int64_t{64} << 10 : int64_t{16} << 20;
  const std::string size = opt.quick ? "64K" : "16M";
  Tensor x = Tensor::rand({n}).realize(), y;
  GlobalCounters::reset();
  const bench::Timing t =
      bench::measure(opt, [&] { y = ((x * 2 + 1).relu() * x - 0.5).exp2().realize(); });
  const int64_t kernels = GlobalCounters::kernel_count / (opt.warmup + t.runs);
  bench::report("elementwise_" + size,
                "elementwise chain " + size + " fp32 (" + std::to_string(kernels) + " kernel/run)",
                2.0 * 4 * n / t.best_s / 1e9, "GB/s", t);

  const std::vector<float> xv = x.to_vector<float>(), yv = y.to_vector<float>();
  for (int64_t i = 0; i < n; i += n / 7 + 1) {
    const double v = xv[i], want = std::exp2(std::max(0.0, v * 2 + 1) * v - 0.5);
    bench::check(bench::close(yv[i], want), "elementwise entry " + std::to_string(i));
  }
  return 0;
}
