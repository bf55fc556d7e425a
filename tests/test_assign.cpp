// assign: stores into existing memory, with values fixed when built (JAX semantics).
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;

TEST_CASE("assign: stores in place and keeps every older value") {
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4});
  Tensor doubled = a * 2;            // pending, built from the old a
  Tensor view = a.reshape({2, 2});   // a view of the old a
  Tensor alias = a;                  // the same tensor: sees the new value
  a.assign(a + 1);
  CHECK(a.to_vector<float>() == std::vector<float>{2, 3, 4, 5});
  CHECK(alias.to_vector<float>() == std::vector<float>{2, 3, 4, 5});
  CHECK(doubled.to_vector<float>() == std::vector<float>{2, 4, 6, 8});
  CHECK(view.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  // graphs built after the assign see the new value
  CHECK((a * 10).to_vector<float>() == std::vector<float>{20, 30, 40, 50});
}

TEST_CASE("assign: a step is one kernel writing the tensor's own memory") {
  Tensor w = Tensor::from_vector(std::vector<float>{1, 2, 3, 4});
  Tensor loss = (w * w).sum();
  w.assign(w - 0.5);
  w.realize();
  CHECK(loss.item<float>() == 30.f);  // the loss of the weights before the step
  CHECK(w.to_vector<float>() == std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f});
  const UOp buffer_before = graph::base_buffer(w.uop());
  void* memory_before = graph::buffer_of(buffer_before)->ptr();
  GlobalCounters::reset();
  w.assign(w * 2);
  w.realize();
  CHECK(GlobalCounters::kernel_count == 1);
  CHECK(graph::buffer_of(graph::base_buffer(w.uop()))->ptr() == memory_before);
  CHECK(w.to_vector<float>() == std::vector<float>{1, 3, 5, 7});
}

// A slice's assign is a select over the whole tensor (where(in the slice, value, old)); its kernel
// stores only where the value changes and loops over the slice alone, the position a variable as
// a KV cache's is. Before, each token rewrote the whole cache.
TEST_CASE("assign: a slice's assign loops over the slice alone, where a variable places it") {
  Tensor cache = Tensor::zeros({3, 64, 4}).contiguous().realize();
  const UOp pos = Variable("pos", 0, 63);
  auto turns = [](const schedule::Kernel& k) {
    int64_t n = 1;
    for (const UOp& r : codegen::all_ranges(k.ast)) n *= codegen::range_size(r);
    return n;
  };
  std::vector<float> want(3 * 64 * 4, 0.f);
  for (int64_t p : {0, 17, 63}) {
    std::vector<float> row;
    for (int i = 0; i < 12; ++i) row.push_back(static_cast<float>(100 * p + i));
    const sint at = sint(pos.bind(p));
    cache[{Slice(), Slice(at, at + 1)}] = Tensor::from_vector(row, {3, 1, 4});
    const std::vector<schedule::Kernel> kernels = schedule::create_schedule({cache.uop()});
    REQUIRE(kernels.size() == 1);
    CHECK(turns(kernels[0]) == 12);  // 3 x 1 x 4, not 3 x 64 x 4
    for (int h = 0; h < 3; ++h)
      for (int d = 0; d < 4; ++d) want[static_cast<size_t>((h * 64 + p) * 4 + d)] = row[static_cast<size_t>(h * 4 + d)];
    CHECK(cache.to_vector<float>() == want);
  }
  // constant bounds, two dims of them
  Tensor grid = Tensor::zeros({8, 8}).contiguous().realize();
  grid[{Slice(2, 5), Slice(1, 3)}] = Tensor::full({3, 2}, 7.f);
  const std::vector<schedule::Kernel> kernels = schedule::create_schedule({grid.uop()});
  REQUIRE(kernels.size() == 1);
  CHECK(turns(kernels[0]) == 6);
  std::vector<float> grid_want(64, 0.f);
  for (int i = 2; i < 5; ++i)
    for (int j = 1; j < 3; ++j) grid_want[static_cast<size_t>(i * 8 + j)] = 7.f;
  CHECK(grid.to_vector<float>() == grid_want);
  // a stride: every other row, which no single stretch covers, still right
  Tensor strided = Tensor::zeros({6, 2}).contiguous().realize();
  strided[{Slice(0, 6, 2)}] = Tensor::ones({3, 2});
  CHECK(strided.to_vector<float>() == std::vector<float>{1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0});
}

TEST_CASE("assign: a value that reads the target elsewhere is computed aside first") {
  Tensor w = Tensor::from_vector(std::vector<float>{1, 2, 3, 4});
  w.assign(w.flip(0) + w);
  CHECK(w.to_vector<float>() == std::vector<float>{5, 5, 5, 5});
  Tensor m = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  m.assign(m.T());
  CHECK(m.to_vector<float>() == std::vector<float>{1, 3, 2, 4});
}

TEST_CASE("assign: broadcasting, casting, chains and misuse") {
  Tensor t = Tensor::zeros({2, 3});
  t.assign(Tensor::from_vector(std::vector<int32_t>{1, 2, 3}));
  CHECK(t.to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});
  t.assign(t + 1).assign(t * 2);
  CHECK(t.to_vector<float>() == std::vector<float>{4, 6, 8, 4, 6, 8});
  // a lazy tensor is realized into memory of its own first
  Tensor lazy = Tensor::ones({2}) * 3;
  lazy.assign(lazy + 1);
  CHECK(lazy.to_vector<float>() == std::vector<float>{4, 4});
  CHECK_THROWS_AS(t.assign(Tensor::ones({4})), ShapeError);
}

TEST_CASE("assign: a view realized in the same schedule as the assign keeps the old data") {
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4});
  Tensor view = a.reshape({2, 2});
  Tensor pending = a.flip(0);
  a.assign(a * 10);
  realize_tensors({a, view, pending});
  CHECK(a.to_vector<float>() == std::vector<float>{10, 20, 30, 40});
  CHECK(view.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  CHECK(pending.to_vector<float>() == std::vector<float>{4, 3, 2, 1});
}

TEST_CASE("assign: memory a value was computed into is not trusted after it is overwritten") {
  // u's lazy value is computed into memory that the assign then overwrites in place; the same
  // lazy value built again must be recomputed, not read from that memory
  Tensor u = Tensor::ones({5}) * 2;
  u.assign(u + 1);
  Tensor again = Tensor::ones({5}) * 2;
  CHECK((u + again).to_vector<float>() == std::vector<float>{5, 5, 5, 5, 5});
  CHECK(again.to_vector<float>() == std::vector<float>{2, 2, 2, 2, 2});
  // and after the assign ran, too
  Tensor v = Tensor::ones({3}) * 7;
  v.assign(v * 2);
  v.realize();
  CHECK((Tensor::ones({3}) * 7).to_vector<float>() == std::vector<float>{7, 7, 7});
}

TEST_CASE("assign: a row reduction of the target inside its kernel reads the rows before they change") {
  // x - x.max(1) keeps the row maximum inside the kernel that writes x: every element of a row
  // must be shifted by the maximum of the old row
  const std::vector<float> v = tinyt_test::values(6 * 70, 21);
  Tensor x = Tensor::from_vector(v, {6, 70}).realize();
  x.assign(x - x.max(1, true)).realize();
  std::vector<double> want(v.size());
  for (size_t i = 0; i < 6; ++i) {
    float m = -INFINITY;
    for (size_t j = 0; j < 70; ++j) m = std::max(m, v[i * 70 + j]);
    for (size_t j = 0; j < 70; ++j) want[i * 70 + j] = v[i * 70 + j] - m;
  }
  tinyt_test::check_close(x.to_vector<float>(), want, tinyt_test::Tol::exact());
}

TEST_CASE("assign: a kernel that reads a tensor before and after its assign") {
  using V = std::vector<float>;
  Tensor a = Tensor::from_vector(V{1, 2, 3});
  Tensor x = a * 1;
  a.assign(a + 1);
  Tensor y = x + a;
  x = Tensor();  // only y needs the old value: one kernel reads both, so the old one is copied aside
  CHECK(y.to_vector<float>() == V{3, 5, 7});
  CHECK(a.to_vector<float>() == V{2, 3, 4});
}

TEST_CASE("assign: an assign computed through another tensor is not run again") {
  using V = std::vector<float>;
  Tensor a = Tensor::from_vector(V{1, 2, 3});
  a.assign(a + 1);
  Tensor y = a * 2;
  y.realize();  // runs the assign; `a` still holds the assign node
  CHECK(a.to_vector<float>() == V{2, 3, 4});
  CHECK(y.to_vector<float>() == V{4, 6, 8});
  // an assign onto a pending one runs the first once
  Tensor t = Tensor::from_vector(V{1});
  t.assign(t + 1);
  t.assign(t * 2);
  CHECK(t.item<float>() == 4.f);
}

TEST_CASE("assign: tensors of equal graphs share memory until one of them is assigned") {
  using V = std::vector<float>;
  // equal lazy graphs are one node, computed into one buffer: the first assign must not write it
  Tensor a = Tensor::zeros({3}), b = Tensor::zeros({3});
  realize_tensors({a, b});
  CHECK(graph::buffer_of(graph::base_buffer(a.uop())) ==
        graph::buffer_of(graph::base_buffer(b.uop())));
  a.assign(a + 1);
  b.assign(b + 2);
  CHECK(a.to_vector<float>() == V{1, 1, 1});
  CHECK(b.to_vector<float>() == V{2, 2, 2});
  a.assign(a + 1);
  CHECK(a.to_vector<float>() == V{2, 2, 2});
  CHECK(b.to_vector<float>() == V{2, 2, 2});
  // realized together (an optimizer's moments): one keeps the memory, the other gets its own
  Tensor m1 = Tensor::zeros({2}), m2 = Tensor::zeros({2});
  realize_tensors({m1, m2});
  m1.assign(m1 + 3);
  m2.assign(m2 + 4);
  GlobalCounters::reset();
  realize_tensors({m1, m2});
  CHECK(GlobalCounters::kernel_count == 2);  // no copy: the moved assign just writes elsewhere
  CHECK(m1.to_vector<float>() == V{3, 3});
  CHECK(m2.to_vector<float>() == V{4, 4});
  m1.assign(m1 * 2), m2.assign(m2 * 2);
  realize_tensors({m2, m1});
  CHECK(m1.to_vector<float>() == V{6, 6});
  CHECK(m2.to_vector<float>() == V{8, 8});
  // a value realized later from the same graph is a third name for the memory
  Tensor z = Tensor::zeros({2}).realize();
  Tensor z2 = Tensor::zeros({2}).realize();
  z2.assign(z2 - 1);
  CHECK(z2.to_vector<float>() == V{-1, -1});
  CHECK(z.to_vector<float>() == V{0, 0});
}

TEST_CASE("assign: lazy tensors of equal graphs each assigned are realized without recursing") {
  Tensor c = Tensor::zeros({3}), d = Tensor::zeros({3});
  c.assign(c + 1);
  d.assign(d + 2);
  std::ostringstream os;
  os << c << " " << d;
  const std::string device = Device::default_device();
  CHECK(os.str() == "Tensor([1. 1. 1.], dtype=float32, device=" + device + ") Tensor([2. 2. 2.], dtype=float32, device=" + device + ")");
  Tensor e = Tensor::ones({2}), f = Tensor::ones({2});
  e.assign(e * 5);
  f.assign(f * 7);
  realize_tensors({f, e});
  CHECK(e.to_vector<float>() == std::vector<float>{5, 5});
  CHECK(f.to_vector<float>() == std::vector<float>{7, 7});
}

TEST_CASE("assign: into memory a view names writes fresh memory instead of copying the view") {
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4});
  Tensor view = a.reshape({2, 2});
  Tensor row = view[{1}];
  a.assign(a * 10);
  GlobalCounters::reset();
  a.realize();
  CHECK(GlobalCounters::kernel_count == 1);
  CHECK(a.to_vector<float>() == std::vector<float>{10, 20, 30, 40});
  CHECK(view.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  CHECK(row.to_vector<float>() == std::vector<float>{3, 4});
  // a write through an index is an assign too
  Tensor m = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  Tensor first = m[{0}];
  m[{1}] = 9.f;
  CHECK(m.to_vector<float>() == std::vector<float>{1, 2, 9, 9});
  CHECK(first.to_vector<float>() == std::vector<float>{1, 2});
}

TEST_CASE("assign: two assigns that each read what the other overwrites (a swap)") {
  using V = std::vector<float>;
  Tensor a = Tensor::from_vector(V{1, 2, 3}), b = Tensor::from_vector(V{4, 5, 6});
  Tensor a_old = a + 0, b_old = b + 0;
  a.assign(b_old);
  b.assign(a_old);
  CHECK(a.to_vector<float>() == V{4, 5, 6});  // realizes a alone: b joins, both in one schedule
  CHECK(b.to_vector<float>() == V{1, 2, 3});
  CHECK(a_old.to_vector<float>() == V{1, 2, 3});
  // with no tensor holding the old values, the schedule copies one aside to break the cycle
  {
    Tensor a_was = a * 1, b_was = b * 1;
    a.assign(b_was);
    b.assign(a_was);
  }
  realize_tensors({b});
  CHECK(a.to_vector<float>() == V{1, 2, 3});
  CHECK(b.to_vector<float>() == V{4, 5, 6});
}

TEST_CASE("assign: an optimizer step and the pending loss it reads are one schedule") {
  auto schedules = [] {
    auto [hits, misses] = schedule::schedule_cache_counts();
    return hits + misses;
  };
  Tensor::manual_seed(3);
  Tensor x = Tensor::randn({8, 16}).realize();
  Tensor w = Tensor::randn({16, 4}).realize();
  nn::optim::SGD opt({w}, 0.1);
  Tensor loss = x.matmul(w).relu().sum();
  const float expected = loss.detach().contiguous().item<float>();
  loss.backward();
  const int64_t before = schedules();
  opt.step();
  CHECK(schedules() - before == 1);
  GlobalCounters::reset();
  CHECK(loss.item<float>() == expected);
  CHECK(GlobalCounters::kernel_count == 0);  // computed by the step, before the weights changed
}
