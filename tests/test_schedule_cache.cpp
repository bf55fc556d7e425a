// schedule/cache.hpp: a step seen before is not scheduled again, and gives the same values as
// scheduling it afresh: on new data, with assigns, with values realized earlier, and with memory
// an assign overwrites.
#include <doctest/doctest.h>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;

namespace {
int64_t hits() { return schedule::schedule_cache_counts().first; }
}  // namespace

TEST_CASE("schedule cache: a repeated step is scheduled once and computes each step's new data") {
  const int64_t before = hits();
  for (int step = 0; step < 5; ++step) {
    const std::vector<float> xs = tinyt_test::values(64, step);
    Tensor x = Tensor::from_vector(xs).reshape({8, 8});
    Tensor y = (x * 2 + 1).relu().sum(1);
    std::vector<double> want(8, 0.0);
    for (size_t i = 0; i < 64; ++i) want[i / 8] += std::max(0.0, 2.0 * xs[i] + 1.0);
    tinyt_test::check_close(y.to_vector<float>(), want, tinyt_test::Tol::exact());
  }
  CHECK(hits() - before >= 4);  // steps 2 to 5 (and the from_vector copies) come from the cache
}

TEST_CASE("schedule cache: a kernel is compiled once, then found in the kernel cache") {
  Tensor x = Tensor::from_vector(tinyt_test::values(40, 7)).reshape({5, 8}).realize();
  GlobalCounters::reset();
  (x * 3 - 7).realize();  // an expression no other test builds
  CHECK(GlobalCounters::compile_count == 1);
  (x * 3 - 7).realize();
  CHECK(GlobalCounters::compile_count == 1);
  CHECK(GlobalCounters::kernel_count == 2);
}

TEST_CASE("schedule cache: repeated assigns (an optimizer step) update the same memory") {
  for (int cache = 0; cache <= 1; ++cache) {
    Context c{{"SCHEDULE_CACHE", cache}};
    Tensor w = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}).realize();
    Tensor m = Tensor::zeros({4}).contiguous().realize();
    std::vector<double> wv{1, 2, 3, 4}, mv(4, 0.0);
    for (int step = 0; step < 6; ++step) {
      Tensor g = w * w;  // the "gradient" reads the weights before they change
      m.assign(m * 0.9 + g);
      w.assign(w - m * 0.01);
      realize_tensors({m, w});
      for (size_t i = 0; i < 4; ++i) mv[i] = mv[i] * 0.9 + wv[i] * wv[i], wv[i] -= mv[i] * 0.01;
    }
    INFO("SCHEDULE_CACHE=", cache);
    // 6 steps of 0.9 m + g and w - 0.01 m (0.9, 0.01, products, sums: 4 roundings each) on
    // positive values, relative: 32
    tinyt_test::check_close(w.to_vector<float>(), wv, tinyt_test::Tol::f32(32));
    tinyt_test::check_close(m.to_vector<float>(), mv, tinyt_test::Tol::f32(32));
  }
}

TEST_CASE("schedule cache: a value in memory an assign overwrites is recomputed every time") {
  // the graph `ones * 2` has no buffers, so its normalized form is the node itself, which an
  // earlier step computed into memory that the assign then overwrote
  for (int step = 0; step < 3; ++step) {
    Tensor u = Tensor::ones({5}) * 2;
    u.assign(u + 1);
    Tensor again = Tensor::ones({5}) * 2;
    CHECK((u + again).to_vector<float>() == std::vector<float>{5, 5, 5, 5, 5});
    CHECK(u.to_vector<float>() == std::vector<float>{3, 3, 3, 3, 3});
  }
}

TEST_CASE("schedule cache: steps over realized views and different inputs of one shape") {
  Tensor a = Tensor::from_vector(tinyt_test::values(12, 1)).reshape({3, 4}).realize();
  Tensor b = Tensor::from_vector(tinyt_test::values(12, 2)).reshape({3, 4}).realize();
  const std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>();
  // the same structure with the inputs swapped, and with one input used twice
  for (int step = 0; step < 2; ++step) {
    std::vector<double> ab, ba, aa;
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = 0; j < 4; ++j) {
        ab.push_back(av[i * 4 + j] - bv[i * 4 + j]);
        ba.push_back(bv[i * 4 + j] - av[i * 4 + j]);
        aa.push_back(0.0);
      }
    tinyt_test::check_close((a - b).to_vector<float>(), ab, tinyt_test::Tol::exact());
    tinyt_test::check_close((b - a).to_vector<float>(), ba, tinyt_test::Tol::exact());
    tinyt_test::check_close((a - a).to_vector<float>(), aa, tinyt_test::Tol::exact());
  }
  // a flipped view of a realized tensor is read through the view, every step
  std::vector<double> flipped;
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 4; ++j) flipped.push_back(av[(2 - i) * 4 + j] * 3);
  for (int step = 0; step < 2; ++step) tinyt_test::check_close((a.flip(0) * 3).to_vector<float>(), flipped, tinyt_test::Tol::exact());
}

TEST_CASE("schedule cache: a value computed from constants alone is not kept alive by the cache") {
  // the cache's key once was the tensor graph's own nodes here (no buffer to stand for): the
  // realized arange outlived its tensor, with its memory, and a later arange read that memory
  const int64_t before = hits();
  for (int step = 0; step < 2; ++step) {
    Tensor a = Tensor::arange(7) * 3;
    CHECK_FALSE(graph::realized(a.uop()));  // the previous step's value is gone with its tensor
    CHECK(a.to_vector<int32_t>() == std::vector<int32_t>{0, 3, 6, 9, 12, 15, 18});
  }
  CHECK(hits() == before + 1);  // still one schedule for both steps
}
