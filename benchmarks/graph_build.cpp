// Host time per op built, not realized, for two chains written with Tensor methods and written as
// expressions (include/tinyt/expr.hpp): arithmetic, ((x * 2 + 1).relu() * x - 0.5).exp2() (6 ops),
// and activations with movement, ((x - 1).sigmoid() * x).reshape(Shape{4, 4}).T().flatten().gelu()
// (7 ops, sigmoid and gelu each several UOps). Each build starts from another of 256 realized
// inputs and drops its result, so every node is created and freed, as in a training step whose
// inputs are new each time. Both spellings must build the same graph.
#include <tinyt.hpp>

#include "bench.hpp"

using namespace tinyt;

namespace {
template <class Build> double ns_per_op(const bench::Options& opt, const std::vector<Tensor>& inputs, int ops, Build build,
                                        const char* name, const char* what) {
  const int iterations = opt.quick ? 16 : 4096;
  size_t sink = 0;
  const bench::Timing t = bench::measure(opt, [&] {
    for (int i = 0; i < iterations; ++i) sink += build(inputs[static_cast<size_t>(i) % inputs.size()]).uop().get() != nullptr;
  });
  bench::check(sink > 0, "built");
  const double ns = t.best_s / iterations / ops * 1e9;
  bench::report(name, what, ns, "ns", t);
  return ns;
}
}  // namespace

int main(int argc, char** argv) {
  bench::Options opt(argc, argv);
  std::vector<Tensor> inputs;
  for (int i = 0; i < 256; ++i) inputs.push_back(Tensor::rand({16}).realize());

  auto arith_methods = [](const Tensor& x) { return x.mul(2).add(1).relu().mul(x).sub(0.5).exp2(); };
  auto arith_expression = [](const Tensor& x) -> Tensor { return ((x * 2 + 1).relu() * x - 0.5).exp2(); };
  auto act_methods = [](const Tensor& x) { return x.sub(1).sigmoid().mul(x).reshape(Shape{4, 4}).T().flatten().gelu(); };
  auto act_expression = [](const Tensor& x) -> Tensor { return ((x - 1).sigmoid() * x).reshape(Shape{4, 4}).T().flatten().gelu(); };
  bench::check(arith_methods(inputs[0]).uop() == arith_expression(inputs[0]).uop(), "both spellings build one graph");
  bench::check(act_methods(inputs[0]).uop() == act_expression(inputs[0]).uop(), "both spellings build one graph");

  ns_per_op(opt, inputs, 6, arith_methods, "graph_build_methods", "host time per op built, arithmetic, Tensor methods");
  ns_per_op(opt, inputs, 6, arith_expression, "graph_build_expression", "host time per op built, arithmetic, expression");
  ns_per_op(opt, inputs, 7, act_methods, "graph_build_act_methods", "host time per op built, activations, Tensor methods");
  ns_per_op(opt, inputs, 7, act_expression, "graph_build_act_expression", "host time per op built, activations, expression");
  return 0;
}
