// Tensors on several devices: sharded ops equal the same ops on one device (references are loops
// written here and the unsharded tensors), allreduce (ring and naive), gradients of sharded
// parameters, data-parallel training. The devices are CPU, CPU:1, ... (each its own memory);
// the run cl_multi does it all again on OpenCL devices CL, CL:1, CL:2 (PoCL's pthread devices).
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>

#include <tinyt.hpp>
#include <tinyt/internals.hpp>

#include "helpers.hpp"

using namespace tinyt;
using namespace tinyt_test;

namespace {
std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}
const Sharding& sharding_of(const Tensor& t) { return graph::meta(t.uop()).sharding; }
// each device's part in memory (the tensor realized): (device, elements)
std::vector<std::pair<std::string, size_t>> parts_in_memory(Tensor t) {
  t.realize();
  std::vector<std::pair<std::string, size_t>> out;
  REQUIRE(t.uop().op() == Ops::MULTI);
  for (const UOp& part : t.uop().src()) {
    const UOp base = graph::base_buffer(part);
    REQUIRE(base);
    out.emplace_back(graph::buffer_of(base)->device(), graph::buffer_of(base)->size());
  }
  return out;
}
std::vector<double> matmul_ref(const std::vector<float>& a, const std::vector<float>& b, int64_t m, int64_t k, int64_t n) {
  std::vector<double> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += double(a[size_t(i * k + p)]) * b[size_t(p * n + j)];
      out[size_t(i * n + j)] = s;
    }
  return out;
}
}  // namespace

TEST_CASE("multi: shard splits as tinygrad (ceil, the last parts smaller), each part in its device's memory, and to_vector gathers") {
  const std::vector<float> v = values(7 * 3, 1);
  const Tensor x = Tensor::from_vector(v, {7, 3});
  const auto devs = devices(3);
  const Tensor s = x.shard(devs, 0);
  CHECK(s.device() == joined(devs));
  CHECK(s.shape() == Shape{7, 3});
  CHECK(sharding_of(s) == Sharding{0, {3, 3, 1}});
  CHECK(parts_in_memory(s) == std::vector<std::pair<std::string, size_t>>{{devs[0], 9}, {devs[1], 9}, {devs[2], 3}});
  CHECK(s.to_vector<float>() == v);
  // more devices than rows: empty parts
  const Tensor few = Tensor::from_vector(values(2 * 3, 2), {2, 3}).shard(devs, 0);
  CHECK(sharding_of(few) == Sharding{0, {1, 1, 0}});
  CHECK(few.to_vector<float>() == values(2 * 3, 2));
  CHECK((few * 2).sum(0).to_vector<float>() == Tensor::from_vector(values(2 * 3, 2), {2, 3}).mul(2).sum(0).to_vector<float>());
  // the last axis, given as -1; replicated: every device holds all of it
  const Tensor cols = x.shard(devs, -1);
  CHECK(sharding_of(cols) == Sharding{1, {1, 1, 1}});
  CHECK(cols.to_vector<float>() == v);
  const Tensor rep = x.shard(devs);
  CHECK(!sharding_of(rep).sharded());
  CHECK(parts_in_memory(rep) == std::vector<std::pair<std::string, size_t>>{{devs[0], 21}, {devs[1], 21}, {devs[2], 21}});
  CHECK(rep.to_vector<float>() == v);
  // to one device gathers; to several replicates; a sharded tensor sharded again is split anew
  CHECK(s.to(devs[1]).device() == devs[1]);
  CHECK(s.to(devs[1]).to_vector<float>() == v);
  CHECK(x.to(joined(devs)).to_vector<float>() == v);
  const Tensor again = s.shard({devs[1], devs[0]}, 1);
  CHECK(again.device() == joined({devs[1], devs[0]}));
  CHECK(again.to_vector<float>() == v);
  // created on several devices: replicated
  const Tensor made = Tensor::from_vector(v, {7, 3}, joined(devs));
  CHECK(made.device() == joined(devs));
  CHECK((made + s).to_vector<float>() == (x + x).to_vector<float>());
  CHECK(Tensor::zeros({2, 2}, dtypes::float32, joined(devs)).to_vector<float>() == std::vector<float>(4, 0.f));
}

TEST_CASE("multi: elementwise ops run once per device on each part, and equal the unsharded ones") {
  const auto devs = devices(2);
  const std::vector<float> av = values(6 * 5, 3), bv = values(6 * 5, 4);
  const Tensor a = Tensor::from_vector(av, {6, 5}), b = Tensor::from_vector(bv, {6, 5});
  const Tensor sa = a.shard(devs, 0).realize(), sb = b.shard(devs, 0).realize();
  GlobalCounters::reset();
  const Tensor out = (sa * sb + sa.exp() - 1.5f).realize();
  CHECK(GlobalCounters::kernel_count == 2);  // one fused kernel per device
  CHECK(sharding_of(out) == Sharding{0, {3, 3}});
  const std::vector<float> want = (a * b + a.exp() - 1.5f).to_vector<float>();
  CHECK(out.to_vector<float>() == want);
  // a replicated operand is cut to each part; an operand split along another axis is split anew
  CHECK((sa * b.shard(devs)).to_vector<float>() == (a * b).to_vector<float>());
  CHECK((sa + b.shard(devs, 1)).to_vector<float>() == (a + b).to_vector<float>());
  CHECK(sharding_of(sa + b.shard(devs, 1)).axis == 0);  // the first split operand's
  // broadcasting a row over the split rows; comparisons, where, casts
  const Tensor row = Tensor::from_vector(values(5, 5), {5});
  CHECK((sa - row.shard(devs)).to_vector<float>() == (a - row).to_vector<float>());
  CHECK(sa.gt(sb).where(sa, sb).to_vector<float>() == a.gt(b).where(a, b).to_vector<float>());
  CHECK(sa.cast(dtypes::int32).to_vector<int32_t>() == a.cast(dtypes::int32).to_vector<int32_t>());
  // operands on different devices are an error naming both
  CHECK(message_of<DeviceError>([&] { (sa + a).realize(); }).find(joined(devs)) != std::string::npos);
}

TEST_CASE("multi: a reduction over the split axis ends with an allreduce (replicated), over another axis it stays split") {
  const auto devs = devices(3);
  const std::vector<float> v = values(8 * 6, 6);
  const Tensor x = Tensor::from_vector(v, {8, 6});
  const Tensor s = x.shard(devs, 0);
  // over the split axis: every device holds the whole sum
  const Tensor total = s.sum(0).realize();
  CHECK(!sharding_of(total).sharded());
  CHECK(total.device() == joined(devs));
  std::vector<double> col(6, 0.0), row(8, 0.0);
  std::vector<float> colmax(6, -INFINITY);
  for (size_t i = 0; i < 8; ++i)
    for (size_t j = 0; j < 6; ++j) col[j] += v[i * 6 + j], row[i] += v[i * 6 + j], colmax[j] = std::max(colmax[j], v[i * 6 + j]);
  for (const UOp& part : total.uop().src())  // each device's copy, read there
    check_close(Tensor(part).to_vector<float>(), col, Tol::exact());  // sums of a few 1/8-grid values
  CHECK(s.max(0).to_vector<float>() == colmax);
  check_close(s.mean(0).to_vector<float>(), std::vector<double>{col[0] / 8, col[1] / 8, col[2] / 8, col[3] / 8, col[4] / 8, col[5] / 8},
              Tol::f32(1));
  // over the other axis: split as the rows are
  const Tensor rows = s.sum(1);
  CHECK(sharding_of(rows) == Sharding{0, {3, 3, 2}});
  check_close(rows.to_vector<float>(), row, Tol::exact());
  // everything: a scalar on every device
  check_close(s.sum().to_vector<float>(), std::vector<double>{std::accumulate(col.begin(), col.end(), 0.0)}, Tol::exact());
  // softmax along the split axis and along the other one
  check_close(s.softmax(0).to_vector<float>(), x.softmax(0).to_vector<float>(), Tol::f32(8));
  check_close(s.softmax(1).to_vector<float>(), x.softmax(1).to_vector<float>(), Tol::f32(8));
}

TEST_CASE("multi: ring and naive allreduce give every device the same bits, each combining in its documented order") {
  const auto devs = devices(3);
  // values whose float32 sums round (not exact), in an uneven number of elements
  std::vector<float> v(3 * 1001);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i) * 0.37f) * 1000.f / static_cast<float>(i % 7 + 1);
  const Tensor x = Tensor::from_vector(v, {3, 1001});
  auto reduced = [&](int ring, Ops op) {
    Context ctx{{"RING", ring}};
    const Tensor s = x.shard(devs, 0);
    Tensor r = op == Ops::ADD ? s.sum(0) : s.max(0);
    r.realize();
    std::vector<std::vector<float>> per_device;
    for (const UOp& part : r.uop().src()) per_device.push_back(Tensor(part).to_vector<float>());
    return per_device;
  };
  for (Ops op : {Ops::ADD, Ops::MAX}) {
    CAPTURE(op_name(op));
    GlobalCounters::reset();
    const auto naive = reduced(0, op);
    const int64_t naive_kernels = GlobalCounters::kernel_count;
    GlobalCounters::reset();
    const auto ring = reduced(2, op);
    const int64_t ring_kernels = GlobalCounters::kernel_count;
    REQUIRE(naive.size() == 3);
    for (size_t d = 0; d < 3; ++d) {
      CHECK(naive[d] == naive[0]);  // every device the same bits
      CHECK(ring[d] == ring[0]);
    }
    // naive: every device combines the rows in device order, x0 + x1 + x2. The ring: chunk c of
    // ceil(1001 / 3) elements starts on device c and is combined on its way around the ring,
    // x(c+2) + (x(c+1) + xc): another order, the same on every device.
    std::vector<double> want_naive(1001), want_ring(1001);
    for (size_t j = 0; j < 1001; ++j) {
      auto at = [&](size_t device) { return v[(device % 3) * 1001 + j]; };
      auto combine = [&](float a, float b) { return op == Ops::ADD ? a + b : std::max(a, b); };
      const size_t c = j / 334;
      want_naive[j] = combine(combine(at(0), at(1)), at(2));
      want_ring[j] = combine(at(c + 2), combine(at(c + 1), at(c)));
    }
    check_close(naive[0], want_naive, Tol::exact());
    check_close(ring[0], want_ring, Tol::exact());
    CHECK(ring_kernels > naive_kernels);  // more, smaller copies
  }
}

TEST_CASE("multi: matmul in each sharding: row-split x replicated, replicated x column-split, and a split contraction") {
  const auto devs = devices(2);
  const int64_t m = 6, k = 10, n = 4;
  const std::vector<float> av = values(m * k, 7), bv = values(k * n, 8);
  const Tensor a = Tensor::from_vector(av, {m, k}), b = Tensor::from_vector(bv, {k, n});
  const std::vector<double> want = matmul_ref(av, bv, m, k, n);
  const Tol tol = Tol::f32(int(k)).of(40.0);  // k roundings of partial sums of |a||b| <= 4 * 10
  // row-split x replicated: the rows of the result split as a's
  const Tensor rows = a.shard(devs, 0).matmul(b.shard(devs));
  CHECK(sharding_of(rows) == Sharding{0, {3, 3}});
  check_close(rows.to_vector<float>(), want, tol);
  // replicated x column-split: the columns of the result split as b's
  const Tensor cols = a.shard(devs).matmul(b.shard(devs, 1));
  CHECK(sharding_of(cols) == Sharding{1, {2, 2}});
  check_close(cols.to_vector<float>(), want, tol);
  // the contraction split (a by columns, b by rows): partial products allreduced, replicated
  const Tensor inner = a.shard(devs, 1).matmul(b.shard(devs, 0));
  CHECK(!sharding_of(inner).sharded());
  check_close(inner.to_vector<float>(), want, tol);
  // a linear layer over a row-split batch
  const Tensor bias = Tensor::from_vector(values(n, 9), {n});
  check_close(a.shard(devs, 0).linear(b.shard(devs), bias.shard(devs)).to_vector<float>(),
              a.linear(b, bias).to_vector<float>(), tol);
}

TEST_CASE("multi: reshape and permute follow the split axis, and what would move elements between devices is a ShapeError naming it") {
  const auto devs = devices(2);
  const std::vector<float> v = values(4 * 6, 10);
  const Tensor x = Tensor::from_vector(v, {4, 6});
  const Tensor s = x.shard(devs, 0);
  CHECK(sharding_of(s.reshape({2, 2, 6})) == Sharding{0, {1, 1}});
  CHECK(sharding_of(s.reshape({4, 2, 3})) == Sharding{0, {2, 2}});
  CHECK(sharding_of(s.reshape({24})) == Sharding{0, {12, 12}});
  CHECK(sharding_of(s.reshape({1, 4, 6})) == Sharding{1, {2, 2}});
  CHECK(s.reshape({2, 2, 6}).to_vector<float>() == v);
  CHECK(sharding_of(s.reshape({6, 4})) == Sharding{0, {3, 3}});  // each device's 12 elements are 3 rows of 4
  CHECK(s.reshape({6, 4}).to_vector<float>() == v);
  CHECK(sharding_of(s.permute({1, 0})) == Sharding{1, {2, 2}});
  CHECK(s.permute({1, 0}).to_vector<float>() == x.permute({1, 0}).to_vector<float>());
  CHECK(sharding_of(s.reshape({4, 1, 6}).expand({4, 5, 6})) == Sharding{0, {2, 2}});
  CHECK(s.reshape({4, 1, 6}).expand({4, 5, 6}).to_vector<float>() == x.reshape({4, 1, 6}).expand({4, 5, 6}).to_vector<float>());
  // the other axes may be padded, shrunk and flipped
  CHECK(s.pad({{0, 0}, {1, 2}}).to_vector<float>() == x.pad({{0, 0}, {1, 2}}).to_vector<float>());
  CHECK(s.shrink({{0, 4}, {1, 3}}).to_vector<float>() == x.shrink({{0, 4}, {1, 3}}).to_vector<float>());
  CHECK(s.flip(1).to_vector<float>() == x.flip(1).to_vector<float>());
  // the split axis may not
  const std::string moved = message_of<ShapeError>([&] { (void)s.reshape({3, 8}); });
  CHECK(moved.find("reshape: (4, 6) -> (3, 8)") != std::string::npos);
  CHECK(moved.find("axis 0 (split over " + joined(devs) + " as 2+2)") != std::string::npos);
  CHECK(message_of<ShapeError>([&] { (void)s.pad({{1, 0}, {0, 0}}); }).find("pad: (4, 6) -> (5, 6) changes axis 0") != std::string::npos);
  CHECK(message_of<ShapeError>([&] { (void)s.shrink({{1, 3}, {0, 6}}); }).find("shrink: (4, 6) -> (2, 6) changes axis 0") != std::string::npos);
  CHECK(message_of<ShapeError>([&] { (void)s.flip(0); }).find("flip: of axis 0") != std::string::npos);
  CHECK(message_of<ShapeError>([&] { (void)s.shard(devs, 2); }).find("shard: axis 2 is out of range for a (4, 6) tensor (2 dims)") != std::string::npos);
  CHECK(message_of<DeviceError>([&] { (void)x.shard({devs[0], devs[0]}, 0); }).find("listed twice") != std::string::npos);
  // gathered first, anything goes
  CHECK(s.to(devs[0]).reshape({6, 4}).to_vector<float>() == v);
}

TEST_CASE("multi: gradients through sharded tensors equal the unsharded ones, split as their parameters") {
  const auto devs = devices(2);
  const std::vector<float> xv = values(8 * 5, 11), w1v = values(5 * 6, 12), w2v = values(6 * 3, 13);
  auto loss_of = [&](const Tensor& x, const Tensor& w1, const Tensor& w2) { return x.matmul(w1).tanh().matmul(w2).square().mean(); };
  Tensor x = Tensor::from_vector(xv, {8, 5});
  Tensor w1 = Tensor::from_vector(w1v, {5, 6}).requires_grad(true), w2 = Tensor::from_vector(w2v, {6, 3}).requires_grad(true);
  const std::vector<Tensor> want = loss_of(x, w1, w2).gradient({w1, w2});
  // data-parallel: the batch split, the weights replicated; their gradients are replicated (allreduced)
  Tensor r1 = w1.detach().shard(devs).realize().requires_grad(true), r2 = w2.detach().shard(devs).realize().requires_grad(true);
  const std::vector<Tensor> dp = loss_of(x.shard(devs, 0), r1, r2).gradient({r1, r2});
  // tensor-parallel: w1's columns and w2's rows split (the hidden units), the batch replicated
  Tensor c1 = w1.detach().shard(devs, 1).realize().requires_grad(true), c2 = w2.detach().shard(devs, 0).realize().requires_grad(true);
  const std::vector<Tensor> tp = loss_of(x.shard(devs), c1, c2).gradient({c1, c2});
  for (size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    const std::vector<float> ref = want[i].to_vector<float>();
    const Tol tol = Tol::f32(24).of(1.0);  // a few dozen roundings of values below 1
    CHECK(!sharding_of(dp[i]).sharded());
    check_close(dp[i].to_vector<float>(), ref, tol);
    CHECK(sharding_of(tp[i]) == sharding_of(i == 0 ? c1 : c2));
    check_close(tp[i].to_vector<float>(), ref, tol);
  }
  // through shard itself: the gradient of the tensor that was split, on its own device
  Tensor y = Tensor::from_vector(xv, {8, 5}).requires_grad(true);
  const Tensor gy = (y.shard(devs, 0) * y.shard(devs)).sum().gradient({y})[0];
  CHECK(gy.device() == y.device());
  check_close(gy.to_vector<float>(), (y.detach() * 2).to_vector<float>(), Tol::exact());
}

TEST_CASE("multi: data-parallel training keeps the weights identical on every device and equal to one device's training") {
  const auto devs = devices(2);
  const int64_t batch = 16, in = 6, hidden = 8, classes = 3;
  const std::vector<float> xv = values(batch * in, 14), w1v = values(in * hidden, 15), w2v = values(hidden * classes, 16);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>((i * 7) % 3);
  auto train = [&](bool parallel) {
    auto place = [&](const Tensor& t, std::optional<int> axis) { return parallel ? t.shard(devs, axis) : t; };
    Tensor w1 = place(Tensor::from_vector(w1v, {in, hidden}).mul(0.5f), std::nullopt).realize();
    Tensor w2 = place(Tensor::from_vector(w2v, {hidden, classes}).mul(0.5f), std::nullopt).realize();
    nn::optim::Adam opt({w1, w2}, 0.05);
    const Tensor x = place(Tensor::from_vector(xv, {batch, in}), 0), y = place(Tensor::from_vector(labels, {batch}), 0);
    Tensor::Train on;
    std::vector<float> losses;
    for (int step = 0; step < 4; ++step) {
      opt.zero_grad();
      Tensor loss = x.matmul(w1).relu().matmul(w2).sparse_categorical_crossentropy(y);
      loss.backward();
      opt.step();
      losses.push_back(loss.item<float>());
    }
    return std::tuple{w1, w2, losses};
  };
  const auto [w1, w2, losses] = train(false);
  const auto [p1, p2, plosses] = train(true);
  CHECK(plosses.size() == 4);
  check_close(plosses, std::vector<double>(losses.begin(), losses.end()), Tol::f32(64).of(1.0));
  CHECK(plosses.back() < plosses.front());
  for (const auto& [single, parallel] : {std::pair{w1, p1}, std::pair{w2, p2}}) {
    CHECK(parallel.device() == joined(devs));
    CHECK(!sharding_of(parallel).sharded());
    Tensor p = parallel;
    p.realize();
    REQUIRE(p.uop().op() == Ops::MULTI);
    const std::vector<float> on0 = Tensor(p.uop().src(0)).to_vector<float>();
    CHECK(Tensor(p.uop().src(1)).to_vector<float>() == on0);  // the same bits on every device
    check_close(on0, single.to_vector<float>(), Tol::f32(64).of(1.0));
  }
}

TEST_CASE("dist: without a launcher the world is this process alone, and allreduce is an item of the schedule") {
  dist::Communicator& world = dist::world();
  CHECK(world.size() == 1);
  CHECK(world.rank() == 0);
  CHECK(world.name() == "this process alone");
  const std::vector<float> v = values(12, 21);
  const Tensor x = Tensor::from_vector(v, {3, 4});
  // one rank: the sum across the ranks is the tensor; fused with the kernels around it
  GlobalCounters::reset();
  const std::vector<float> y = x.mul(2).allreduce().add(1).to_vector<float>();
  CHECK(GlobalCounters::kernel_count == 3);  // x * 2, the allreduce, + 1
  for (size_t i = 0; i < v.size(); ++i) CHECK(y[i] == v[i] * 2 + 1);
  for (dist::ReduceOp op : {dist::ReduceOp::prod, dist::ReduceOp::max, dist::ReduceOp::min})
    CHECK(x.allreduce(op).to_vector<float>() == v);
  // the gradient of a sum across the ranks is the sum of the gradients; of a max there is none
  Tensor w = Tensor::from_vector(v, {3, 4}).requires_grad(true);
  CHECK(w.mul(3).allreduce().sum().gradient({w})[0].to_vector<float>() == std::vector<float>(12, 3.f));
  CHECK(message_of<Error>([&] { (void)w.allreduce(dist::ReduceOp::max).sum().gradient({w}); }).find("allreduce(max) has no gradient rule") !=
        std::string::npos);
  // on each device's part of a sharded tensor, and inside TinyJit
  const auto devs = devices(2);
  CHECK(x.shard(devs, 0).allreduce().to_vector<float>() == v);
  TinyJit step([](Tensor t) { return t.allreduce().mul(2); });
  for (int i = 0; i < 4; ++i) {
    const Tensor in = Tensor::from_vector(values(12, 30 + i), {3, 4});
    CHECK(step(in).to_vector<float>() == in.mul(2).to_vector<float>());
  }
  // the communicator itself
  float buffer[3] = {1, 2, 3}, out[3] = {};
  world.allreduce(buffer, out, 3, dtypes::float32, dist::ReduceOp::sum);
  CHECK(out[2] == 3.f);
  world.broadcast(buffer, sizeof buffer, 0);
  world.barrier();
  CHECK(message_of<DeviceError>([&] { world.broadcast(buffer, sizeof buffer, 1); }).find("root 1 of 1 rank") != std::string::npos);
}

TEST_CASE("dist: Open MPI's and NCCL's libraries open and have every function and object tinyt uses") {
  // the MPI runs themselves are tests/dist/mpi_check.cpp under mpirun; NCCL runs where GPUs are
  const backend::Mpi mpi;
  CHECK(static_cast<bool>(mpi.MPI_Iallreduce));
  CHECK(mpi.comm_world != nullptr);
  CHECK(mpi.type_float != nullptr);
  const backend::Nccl& nccl = backend::nccl();
  CHECK(static_cast<bool>(nccl.ncclAllReduce));
  CHECK(nccl.version().rfind("NCCL 2.", 0) == 0);
}

TEST_CASE("multi: TinyJit replays a step on sharded inputs, each device's part swapped in, and refuses another split") {
  const auto devs = devices(2);
  const Tensor w = Tensor::from_vector(values(5 * 3, 40), {5, 3}).shard(devs).realize();
  TinyJit step([&](Tensor x) { return x.matmul(w).relu().sum(0); });
  for (int i = 0; i < 4; ++i) {
    const std::vector<float> xv = values(6 * 5, 41 + i);
    const Tensor x = Tensor::from_vector(xv, {6, 5});
    const Tensor got = step(x.shard(devs, 0).realize());
    CHECK(got.device() == joined(devs));
    check_close(got.to_vector<float>(), x.matmul(w.to(devs[0])).relu().sum(0).to_vector<float>(), Tol::f32(10).of(40.0));
  }
  CHECK(step.captured_count() > 0);
  const Tensor other = Tensor::from_vector(values(6 * 5, 50), {6, 5}).shard(devs, 1).realize();
  CHECK(message_of<ShapeError>([&] { (void)step(other); }).find("otherwise than when it was captured") != std::string::npos);
}

TEST_CASE("dist: allreduce of a symbolic-shaped tensor reduces the bound shape's elements, also under TinyJit") {
  const UOp rows = Variable("rows", 1, 8);
  const std::vector<float> v = values(8 * 3, 61);
  const Tensor cache = Tensor::from_vector(v, {8, 3}).realize();
  // x * 2 over the first k rows: one rank, so the reduction across the ranks is the tensor itself
  auto want = [&](int64_t k) {
    std::vector<float> out(v.begin(), v.begin() + 3 * k);
    for (float& x : out) x *= 2;
    return out;
  };
  for (int64_t k : {2, 5, 8}) {
    const Tensor r = cache[{Slice(0, rows.bind(k))}].mul(2).allreduce();
    CHECK(r.shape()[0].value() == k);
    CHECK(r.to_vector<float>() == want(k));
  }
  TinyJit step([&](const UOp& k) { return cache[{Slice(0, k)}].mul(2).allreduce().add(0); });
  for (int64_t k : {3, 6, 1, 7}) {
    INFO("rows ", k);
    CHECK(step(rows.bind(k)).to_vector<float>() == want(k));
  }
}
