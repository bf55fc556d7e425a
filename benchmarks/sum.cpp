// The sum of 16M floats (64K with --quick), in GB/s (4 bytes read per element).
#include <tinyt.hpp>

#include "bench.hpp"

using namespace tinyt;

int main(int argc, char** argv) {
  bench::Options opt(argc, argv);
  const int64_t n = opt.quick ? int64_t{64} << 10 : int64_t{16} << 20;
  const std::string size = opt.quick ? "64K" : "16M";
  Tensor x = Tensor::rand({n}).realize(), s;
  const bench::Timing t = bench::measure(opt, [&] { s = x.sum().realize(); });
  bench::report("sum_" + size, "sum " + size + " fp32", 4.0 * n / t.best_s / 1e9, "GB/s", t);

  double want = 0;
  for (const float v : x.to_vector<float>()) want += v;
  bench::check(bench::close(s.item<float>(), want),
               "sum: got " + std::to_string(s.item<float>()) + ", want " + std::to_string(want));
  return 0;
}
