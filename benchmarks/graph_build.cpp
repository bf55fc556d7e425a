// Host time per op built, not realized: the chain ((x * 2 + 1).relu() * x - 0.5).exp2() (6 ops),
// written with Tensor methods and written as an expression (the operators build expression types;
// issue 17 extends them to every elementwise and movement op). Each build starts from another of
// 256 realized inputs and drops its result, so every node is created and freed, as in a training
// step whose inputs are new each time. Both spellings must build the same graph.
#include <tinyt.hpp>

#include "bench.hpp"

using namespace tinyt;

int main(int argc, char** argv) {
  bench::Options opt(argc, argv);
  const int iterations = opt.quick ? 16 : 4096, ops = 6;
  std::vector<Tensor> inputs;
  for (int i = 0; i < 256; ++i) inputs.push_back(Tensor::rand({16}).realize());
  auto methods = [](const Tensor& x) { return x.mul(2).add(1).relu().mul(x).sub(0.5).exp2(); };
  auto expression = [](const Tensor& x) -> Tensor { return ((x * 2 + 1).relu() * x - 0.5).exp2(); };
  bench::check(methods(inputs[0]).uop() == expression(inputs[0]).uop(), "both spellings build one graph");
  size_t sink = 0;
  const bench::Timing tm = bench::measure(opt, [&] {
    for (int i = 0; i < iterations; ++i) sink += methods(inputs[static_cast<size_t>(i) % inputs.size()]).uop().get() != nullptr;
  });
  bench::report("graph_build_methods", "host time per op built, Tensor methods", tm.best_s / iterations / ops * 1e9, "ns", tm);
  const bench::Timing te = bench::measure(opt, [&] {
    for (int i = 0; i < iterations; ++i) sink += expression(inputs[static_cast<size_t>(i) % inputs.size()]).uop().get() != nullptr;
  });
  bench::report("graph_build_expression", "host time per op built, expression", te.best_s / iterations / ops * 1e9, "ns", te);
  bench::check(sink > 0, "built");
  return 0;
}
