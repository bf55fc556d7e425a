// TinyJit: the second call captures the kernels a function launches, later calls replay them on
// new inputs with nothing scheduled, compiled or allocated; the values are those of running the
// function (loops written here, and PyTorch's training curve for a whole training step).
#include <doctest/doctest.h>

#include <cmath>

#include <tinyt.hpp>

#include "helpers.hpp"
#include "text_data.hpp"

using namespace tinyt;
using tinyt_test::check_close;
using tinyt_test::message_of;
using tinyt_test::Tol;

namespace {
// relu(x @ w + 1) summed over its columns, in double
std::vector<double> reference(const std::vector<float>& x, const std::vector<float>& w, int64_t n, int64_t k, int64_t m) {
  std::vector<double> out(static_cast<size_t>(n), 0.0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < m; ++c) {
      double dot = 1;
      for (int64_t j = 0; j < k; ++j) dot += double(x[static_cast<size_t>(r * k + j)]) * w[static_cast<size_t>(j * m + c)];
      out[static_cast<size_t>(r)] += std::max(dot, 0.0);
    }
  return out;
}
}  // namespace

TEST_CASE("TinyJit: replays the captured kernels on new inputs without scheduling, compiling or allocating") {
  const std::vector<float> wv = tinyt_test::values(12, 1);
  Tensor w = Tensor::from_vector(wv, {3, 4}).realize();
  int calls = 0;
  TinyJit f([&](const Tensor& x) {
    ++calls;
    Tensor h = x.matmul(w).add(1).relu().contiguous();  // two kernels: the planner has an intermediate
    return h.sum(1);
  });
  for (int step = 0; step < 6; ++step) {
    const std::vector<float> xv = tinyt_test::values(6, 10 + step);
    Tensor x = Tensor::from_vector(xv, {2, 3}).realize();
    GlobalCounters::reset();
    const int64_t allocations = GlobalCounters::allocations;
    const auto [hits, misses] = schedule::schedule_cache_counts();
    Tensor y = f(x);
    const auto counts = schedule::schedule_cache_counts();
    INFO("step ", step);
    check_close(y.to_vector<float>(), reference(xv, wv, 2, 3, 4), Tol::exact());  // sums of products of 1/8 grid values
    if (step >= 2) {
      CHECK(calls == 2);  // the function ran twice: to run, to capture
      CHECK(f.captured_count() == 2);
      CHECK(GlobalCounters::kernel_count == 2);
      CHECK(GlobalCounters::compile_count == 0);
      CHECK(GlobalCounters::allocations == allocations);
      CHECK(counts == std::pair(hits, misses));  // nothing scheduled either
    }
  }
}

TEST_CASE("TinyJit: a training step (forward, backward, SGD update) replays as it runs, and follows PyTorch") {
  constexpr int64_t kN = 32, kIn = 8, kHidden = 16, kOut = 4;
  constexpr int kSteps = 12;
  const auto data = test_data::read("mlp_sgd.txt");
  const auto floats = [&](const std::string& name) { return test_data::floats(data, name); };
  const std::vector<double>& labels = data.at("y");
  Tensor x = Tensor::from_vector(floats("x"), {kN, kIn}).realize();
  Tensor y = Tensor::from_vector(std::vector<int32_t>(labels.begin(), labels.end()), {kN}).realize();
  const std::vector<std::pair<std::string, Shape>> names = {
      {"w1", {kIn, kHidden}}, {"b1", {kHidden}}, {"w2", {kHidden, kOut}}, {"b2", {kOut}}};
  // two copies of the model: one trained by the plain step, one by the JIT'd step
  std::vector<Tensor> plain, jitted;
  for (const auto& [name, shape] : names) {
    plain.push_back(Tensor::from_vector(floats("init." + name), shape).realize());
    jitted.push_back(Tensor::from_vector(floats("init." + name), shape).realize());
  }
  nn::optim::SGD plain_opt(plain, 0.1, 0.9), jit_opt(jitted, 0.1, 0.9);
  auto step = [](std::vector<Tensor>& p, nn::optim::SGD& opt, const Tensor& xs, const Tensor& ys) {
    Tensor::Train train;
    opt.zero_grad();
    Tensor loss = xs.linear(p[0], p[1]).relu().linear(p[2], p[3]).sparse_categorical_crossentropy(ys);
    loss.backward();
    opt.step();
    return loss;
  };
  TinyJit train_step([&](const Tensor& xs, const Tensor& ys) { return step(jitted, jit_opt, xs, ys); });
  const std::vector<float> want_loss = floats("loss");
  for (int s = 0; s < kSteps; ++s) {
    INFO("step ", s);
    const float plain_loss = step(plain, plain_opt, x, y).item<float>();
    GlobalCounters::reset();
    const int64_t allocations = GlobalCounters::allocations;
    const float jit_loss = train_step(x, y).item<float>();
    if (s >= 2) {
      CHECK(GlobalCounters::compile_count == 0);
      CHECK(GlobalCounters::allocations == allocations);
      CHECK(GlobalCounters::kernel_count == static_cast<int64_t>(train_step.captured_count()));
    }
    CHECK(jit_loss == plain_loss);  // the same kernels on the same data: the same bits
    // PyTorch's curve, as the plain step follows it (test_training_parity.cpp says why 64)
    CHECK(std::fabs(jit_loss - want_loss[static_cast<size_t>(s)]) <= 64 * 0x1p-24 * std::fabs(want_loss[static_cast<size_t>(s)]));
  }
  for (size_t k = 0; k < names.size(); ++k) {
    INFO(names[k].first);
    CHECK(jitted[k].to_vector<float>() == plain[k].to_vector<float>());
  }
}

TEST_CASE("TinyJit: a replay checks its inputs against the capture's, naming what changed") {
  TinyJit f([](const Tensor& a, const Tensor& b) { return (a * b).sum(); });
  Tensor a = Tensor::ones({2, 3}), b = Tensor::full({2, 3}, 2.f);
  for (int i = 0; i < 3; ++i) CHECK(f(a, b).item<float>() == 12.f);
  CHECK(message_of<ShapeError>([&] { f(Tensor::ones({3, 3}), b); }).find("input 0 has shape (3, 3); it was captured with (2, 3)") != std::string::npos);
  CHECK(message_of<DTypeError>([&] { f(a, Tensor::ones({2, 3}, dtypes::int32)); }).find("input 1 is int32") != std::string::npos);
  TinyJit g([](const std::vector<Tensor>& ts) { return ts[0] + 1; });
  for (int i = 0; i < 3; ++i) (void)g(std::vector<Tensor>{a}).realize();
  CHECK(message_of<ShapeError>([&] { g(std::vector<Tensor>{a, b}); }).find("called with 2 tensor(s)") != std::string::npos);
  // the inputs are intact: a rejected call ran nothing
  CHECK(f(a, b).item<float>() == 12.f);
  // one memory as two inputs cannot be swapped apart at a replay: the capture refuses it
  TinyJit h([](const Tensor& p, const Tensor& q) { return p * q; });
  (void)h(a, a).realize();
  CHECK(message_of<Error>([&] { h(a, a); }).find("inputs 0 and 1 are the same memory") != std::string::npos);
}

TEST_CASE("TinyJit: an input returned as it is is this call's input, not the capture's") {
  TinyJit f([](const Tensor& x, const Tensor& y) { return std::pair(x, x + y); });
  for (int i = 0; i < 4; ++i) {
    Tensor x = Tensor::full({3}, float(i)).contiguous().realize(), y = Tensor::ones({3}).contiguous().realize();
    const auto [same, sum] = f(x, y);
    CHECK(same.to_vector<float>() == std::vector<float>(3, float(i)));
    CHECK(sum.to_vector<float>() == std::vector<float>(3, float(i) + 1.f));
  }
}

TEST_CASE("TinyJit: JIT=0 runs the function every time, and a function that throws while capturing captures later") {
  {
    tinyt_test::ScopedEnv env;
    env.set("JIT", "0");
    int calls = 0;
    TinyJit f([&](const Tensor& x) { return ++calls, x * 2; });
    for (int i = 0; i < 4; ++i) CHECK(f(Tensor::full({3}, float(i))).to_vector<float>() == std::vector<float>(3, 2.f * float(i)));
    CHECK(calls == 4);
    CHECK(f.captured_count() == 0);
  }
  int calls = 0;
  TinyJit g([&](const Tensor& x) {
    if (++calls == 2) throw Error("the second call fails");
    return x + 1;
  });
  Tensor x = Tensor::ones({4}).contiguous().realize();
  (void)g(x).realize();
  CHECK(message_of<Error>([&] { g(x); }) == "the second call fails");
  for (int i = 0; i < 3; ++i) CHECK(g(x).to_vector<float>() == std::vector<float>(4, 2.f));
  CHECK(calls == 3);  // run, throw, capture; then replays
  CHECK(g.captured_count() == 1);
}

TEST_CASE("TinyJit: a bound Variable argument replays every value with the kernels compiled once") {
  const UOp pos = Variable("pos", 1, 32);
  const std::vector<float> cv = tinyt_test::values(32 * 4, 3);
  Tensor cache = Tensor::from_vector(cv, {32, 4}).realize();
  TinyJit prefix_sum([&](const UOp& p) { return cache[{Slice(0, p)}].sum(0); });
  for (int64_t n = 1; n <= 32; ++n) {
    GlobalCounters::reset();
    const Tensor s = prefix_sum(pos.bind(n));
    INFO("pos ", n);
    CHECK(s.shape() == Shape{4});
    std::vector<double> want(4, 0.0);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < 4; ++c) want[static_cast<size_t>(c)] += cv[static_cast<size_t>(r * 4 + c)];
    check_close(s.to_vector<float>(), want, Tol::exact());
    if (n > 1) CHECK(GlobalCounters::compile_count == 0);
  }
  // a symbolic output takes the value of this call
  TinyJit rows([&](const UOp& p) { return cache[{Slice(0, p)}] * 2; });
  for (int64_t n : {3, 5, 9, 2}) {
    const Tensor r = rows(pos.bind(n));
    CHECK(r.shape()[0].value() == n);
    CHECK(r.to_vector<float>().size() == static_cast<size_t>(4 * n));
    CHECK(r.to_vector<float>()[static_cast<size_t>(4 * n - 1)] == 2 * cv[static_cast<size_t>(4 * n - 1)]);
  }
}

TEST_CASE("TinyJit: a random op draws new numbers at each replay, the numbers each call draws") {
  auto draws = [](bool jit) {
    Tensor::manual_seed(5);
    Tensor x = Tensor::zeros({6}).contiguous().realize();
    TinyJit noisy([](const Tensor& t) { return t + Tensor::rand({6}); });
    std::vector<std::vector<float>> out;
    for (int i = 0; i < 5; ++i) out.push_back((jit ? noisy(x) : Tensor(x + Tensor::rand({6}))).to_vector<float>());
    return out;
  };
  const auto replayed = draws(true), plain = draws(false);
  CHECK(replayed == plain);
  CHECK(replayed[2] != replayed[3]);  // not the capture's numbers again
}

TEST_CASE("TinyJit: with CHECK_OOB=1 a replay checks each call's index, and an out-of-range one is an IndexError") {
  tinyt_test::ScopedEnv env;
  env.set("CHECK_OOB", "1");
  const std::vector<float> tv = tinyt_test::values(3 * 2, 7);
  Tensor table = Tensor::from_vector(tv, {3, 2}).realize();
  TinyJit rows([&](const Tensor& ids) { return table[{ids}] * 2; });
  auto call = [&](std::vector<int32_t> ids) { return rows(Tensor::from_vector(ids, {2}).realize()).to_vector<float>(); };
  for (int32_t i = 0; i < 3; ++i) CHECK(call({i, 2}) == std::vector<float>{2 * tv[size_t(2 * i)], 2 * tv[size_t(2 * i + 1)], 2 * tv[4], 2 * tv[5]});
  REQUIRE(rows.captured_count() > 0);
  // replayed: the capture's kernels check this call's index (it read 0 before)
  CHECK_THROWS_WITH_AS(call({1, 7}), doctest::Contains("index: index 7 is out of range for axis 0 with size 3 (element (1,)"), IndexError);
  CHECK_THROWS_WITH_AS(call({-4, 0}), doctest::Contains("index: index -4 is out of range"), IndexError);
  CHECK(call({-1, 0}) == std::vector<float>{2 * tv[4], 2 * tv[5], 2 * tv[0], 2 * tv[1]});  // and goes on replaying
}

TEST_CASE("TinyJit: a replay that lacks a variable's value throws before it runs anything, so the weights stay as they were") {
  const UOp pos = Variable("pos", 1, 4);
  Tensor w = Tensor::zeros({4}).contiguous().realize();
  // the step updates w first, then reads a prefix whose variable it binds itself: a replay gets
  // no value for it (only arguments and input shapes bind at a replay)
  TinyJit step([&](const Tensor& x) {
    w.assign(w + x).realize();
    return w[{Slice(0, pos.bind(2))}].sum();
  });
  const Tensor ones = Tensor::ones({4}).contiguous().realize();
  CHECK(step(ones).item<float>() == 2.f);  // runs
  CHECK(step(ones).item<float>() == 4.f);  // captures
  REQUIRE(step.captured_count() > 0);
  const std::vector<float> before = w.to_vector<float>();
  CHECK(before == std::vector<float>(4, 2.f));
  CHECK_THROWS_WITH_AS(step(ones), doctest::Contains("TinyJit: variable 'pos' has no value at this replay"), ShapeError);
  CHECK(w.to_vector<float>() == before);
}
