// Allreduce bandwidth and a data-parallel training step.
//
//  - between two CPU devices of this process (CPU, CPU:1: each its own memory), naive and ring
//    (RING=0, RING=2): the sum over the split axis of a (2, n) tensor split by rows, so each device
//    reduces its row (a kernel copying n floats) and the two rows are allreduced;
//  - between the ranks, when run under mpirun (`make bench-mpi`: 2 ranks): Tensor::allreduce of n
//    floats through MPI;
//  - each against memcpy of the same n floats in this process.
// Bandwidth is algorithm bandwidth as nccl-tests report it: the tensor's bytes / time. n is 16M
// (64 MiB; 64K with --quick).
//
// Then the step time of data-parallel training: an MLP (784-512-10, Adam) on a global batch of
// 512 (32 with --quick), on rank 0 alone (the others wait), then split across all ranks with the
// gradients allreduced. Under mpirun -np 2 the ratio is the 2-rank step time over the 1-rank one.
#include <cstring>

#include <tinyt.hpp>

#include "bench.hpp"

using namespace tinyt;

namespace {
struct Mlp {
  nn::Linear l1{784, 512}, l2{512, 10};
  Tensor operator()(const Tensor& x) const { return l2(l1(x).relu()); }
};

// Steps of Adam on `batch` samples of this rank's share (all of it when alone); the gradients
// are averaged across the ranks when `parallel`.
bench::Timing steps(const bench::Options& opt, int64_t batch, bool parallel) {
  dist::Communicator& world = dist::world();
  Tensor::manual_seed(1);
  Mlp model;
  nn::optim::Adam adam({model.l1.weight, model.l1.bias, model.l2.weight, model.l2.bias}, 1e-3);
  const int64_t local = parallel ? batch / world.size() : batch;
  const Tensor x = Tensor::rand({local, 784}).realize(), y = Tensor::randint({local}, 0, 10).cast(dtypes::int32).realize();
  return bench::measure(opt, [&] {
    Tensor::Train train;
    adam.zero_grad();
    Tensor loss = model(x).sparse_categorical_crossentropy(y);
    loss.backward();
    if (parallel)
      for (Tensor p : adam.params()) p.set_grad(p.grad().allreduce().div(static_cast<float>(world.size())));
    std::vector<Tensor> todo = adam.schedule_step();
    todo.push_back(loss);
    realize_tensors(todo);
  });
}
}  // namespace

int main(int argc, char** argv) {
  bench::Options opt(argc, argv, 2);
  dist::Communicator& world = dist::world();
  const bool root = world.rank() == 0;
  const int64_t n = opt.quick ? int64_t{64} << 10 : int64_t{16} << 20;
  const std::string size = opt.quick ? "64K" : "16M";
  const double bytes = 4.0 * static_cast<double>(n);

  std::vector<float> from(static_cast<size_t>(n), 1.f), to(static_cast<size_t>(n));
  const bench::Timing copy = bench::measure(opt, [&] { std::memcpy(to.data(), from.data(), to.size() * sizeof(float)); });
  if (root) bench::report("memcpy_" + size, "memcpy " + size + " fp32", bytes / copy.best_s / 1e9, "GB/s", copy);

  if (root) {
    const Tensor rows = Tensor::rand({2, n}).shard({"CPU", "CPU:1"}, 0).realize();
    for (const int ring : {0, 2}) {
      Context ctx{{"RING", ring}};
      Tensor sum;
      const bench::Timing t = bench::measure(opt, [&] { sum = rows.sum(0).realize(); });
      const std::string kind = ring ? "ring" : "naive";
      bench::report("allreduce_cpu2_" + kind + "_" + size, "allreduce CPU,CPU:1 (" + kind + ") " + size + " fp32",
                    bytes / t.best_s / 1e9, "GB/s", t);
      const std::vector<float> got = sum.to_vector<float>(), want = rows.to("CPU").sum(0).to_vector<float>();
      bench::check(got == want, "allreduce between CPU devices: a sum differs from the sum on one device");
    }
  }
  if (world.size() > 1) {
    const Tensor x = Tensor::full({n}, static_cast<float>(world.rank() + 1)).realize();
    Tensor sum;
    const bench::Timing t = bench::measure(opt, [&] { sum = x.allreduce().realize(); });
    if (root)
      bench::report("allreduce_mpi" + std::to_string(world.size()) + "_" + size,
                    "allreduce " + std::to_string(world.size()) + " MPI ranks " + size + " fp32", bytes / t.best_s / 1e9, "GB/s", t);
    const float want = static_cast<float>(world.size() * (world.size() + 1) / 2);
    bench::check(sum.to_vector<float>()[static_cast<size_t>(n - 1)] == want, "allreduce across the ranks: wrong sum");
  }

  const int64_t batch = opt.quick ? 32 : 512;
  bench::Timing alone;
  if (root) alone = steps(opt, batch, false);
  world.barrier();
  if (root) bench::report("dp_step_1rank", "MLP train step, batch " + std::to_string(batch) + ", 1 rank", alone.best_s * 1e3, "ms", alone);
  if (world.size() > 1) {
    const bench::Timing together = steps(opt, batch, true);
    if (root) {
      bench::report("dp_step_" + std::to_string(world.size()) + "rank",
                    "MLP train step, batch " + std::to_string(batch) + ", " + std::to_string(world.size()) + " ranks",
                    together.best_s * 1e3, "ms", together);
      std::printf("data-parallel speedup on %d ranks: %.2fx\n", world.size(), alone.best_s / together.best_s);
    }
  }
  return 0;
}
