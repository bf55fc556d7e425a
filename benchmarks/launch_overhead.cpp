// Host overhead per launch of an already compiled kernel: a + 1 on 16 floats, built and realized
// again and again (the graph is new each time, its kernel is found in the cache). The wall time
// per realize(), in us; the kernel itself runs for well under a microsecond.
#include <tinyt.hpp>

#include "bench.hpp"

using namespace tinyt;

int main(int argc, char** argv) {
  bench::Options opt(argc, argv);
  const int iterations = opt.quick ? 20 : 2000;
  Tensor a = Tensor::rand({16}).realize(), y;
  GlobalCounters::reset();
  const bench::Timing t = bench::measure(opt, [&] {
    for (int i = 0; i < iterations; ++i) y = (a + 1).realize();
  });
  const double launches = double(opt.warmup + t.runs) * iterations;
  std::printf("a + 1 on 16 floats: %.2f kernel(s) per realize, %.3f us per kernel run\n",
              GlobalCounters::kernel_count / launches, GlobalCounters::time_sum_s / launches * 1e6);
  bench::report("launch_overhead", "host time per realize of a compiled kernel",
                t.best_s / iterations * 1e6, "us", t);
  bench::check(bench::close(y.to_vector<float>()[3], a.to_vector<float>()[3] + 1.0), "a + 1");
  return 0;
}
