// Host overhead of a step of 10 small kernels (16 floats each, every op its own kernel), per
// kernel: built and realized as usual (schedule cache, kernel cache), and replayed by TinyJit
// (no graph, no schedule: launches only). The kernels themselves run for well under a microsecond.
#include <tinyt.hpp>

#include "bench.hpp"

using namespace tinyt;

namespace {
constexpr int kKernels = 10;

// x + 1, ten times, each result realized into its own buffer: ten kernels
Tensor ten_kernels(const Tensor& x) {
  Tensor y = x;
  for (int k = 0; k < kKernels; ++k) y = (y + 1).contiguous();
  return y;
}
}  // namespace

int main(int argc, char** argv) {
  bench::Options opt(argc, argv);
  const int iterations = opt.quick ? 20 : 2000;
  Tensor x = Tensor::rand({16}).realize(), y;
  TinyJit step(ten_kernels);
  for (int i = 0; i < 3; ++i) y = step(x);  // run, capture, replay
  bench::check(step.captured_count() == kKernels, "the step captures ten kernels");

  const bench::Timing plain = bench::measure(opt, [&] {
    for (int i = 0; i < iterations; ++i) y = ten_kernels(x).realize();
  });
  bench::check(bench::close(y.to_vector<float>()[3], x.to_vector<float>()[3] + kKernels), "plain step");
  GlobalCounters::reset();
  const bench::Timing replay = bench::measure(opt, [&] {
    for (int i = 0; i < iterations; ++i) y = step(x);
  });
  bench::check(bench::close(y.to_vector<float>()[3], x.to_vector<float>()[3] + kKernels), "replayed step");
  const double launches = double(opt.warmup + replay.runs) * iterations * kKernels;
  std::printf("replayed: %.3f us per kernel run (the kernels' own time)\n", GlobalCounters::time_sum_s / launches * 1e6);
  bench::report("step_per_kernel", "10-kernel step, realized as usual, per kernel", plain.best_s / iterations / kKernels * 1e6,
                "us", plain);
  bench::report("jit_replay_per_kernel", "10-kernel step replayed by TinyJit, per kernel",
                replay.best_s / iterations / kKernels * 1e6, "us", replay);
  return 0;
}
