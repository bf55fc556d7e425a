// The decompositions of EXP2, LOG2 and SIN against libm calls: bandwidth of one elementwise kernel
// over 16M elements with TRANSCENDENTAL=0 (libm, one call per element) and 1 (ALU ops, vectorized).
// Usage: bench_transcendental [--quick] (64K elements, one run: for CI)
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
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}
}  // namespace

int main(int argc, char** argv) {
  const bench::Options opt(argc, argv);
  const int64_t n = opt.quick ? 64 << 10 : 16 << 20;
  for (DType dt : {dtypes::float32, dtypes::float64}) {
    Tensor x = Tensor::rand({n}).cast(dt).realize();
    const double bytes = 2.0 * dt.itemsize() * static_cast<double>(n);
    struct Case {
      const char* name;
      Tensor (*f)(const Tensor&);
    };
    const Case cases[] = {
        {"(x*2+1).relu().exp2()", [](const Tensor& t) -> Tensor { return (t * 2 + 1).relu().exp2(); }},
        {"(x+0.5).log2()", [](const Tensor& t) -> Tensor { return (t + 0.5).log2(); }},
        {"(x*100).sin()", [](const Tensor& t) -> Tensor { return (t * 100).sin(); }},
    };
    for (const Case& c : cases) {
      double gbs[2];
      for (int on = 0; on < 2; ++on) {
        Context ctx{{"TRANSCENDENTAL", on}};
        c.f(x).realize();  // compile outside the timing
        gbs[on] = bytes / best_of(opt.quick ? 1 : 5, [&] { c.f(x).realize(); }) / 1e9;
      }
      std::printf("%-8s %-24s libm %7.2f GB/s   decomposed %7.2f GB/s\n", dt.name().c_str(), c.name,
                  gbs[0], gbs[1]);
    }
  }
  return 0;
}
