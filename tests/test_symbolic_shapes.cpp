// Symbolic shapes: a dimension that holds a bound Variable. Each op on one computes what the
// bound value gives (checked against loops written here), and its kernels take the variable as
// an argument: a loop over the values compiles each kernel once.
#include <doctest/doctest.h>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;
using tinyt_test::check_close;
using tinyt_test::message_of;
using tinyt_test::Tol;

namespace {
// a (rows, cols) matrix of exact small values, row-major
std::vector<float> matrix(int64_t rows, int64_t cols, int seed) { return tinyt_test::values(rows * cols, seed); }
}  // namespace

TEST_CASE("symbolic shapes: a Variable binds a value in its range, else the error names it") {
  const UOp i = Variable("i", 1, 10);
  CHECK(message_of<Error>([&] { (void)i.bind(11); }).find("Variable 'i'") != std::string::npos);
  CHECK(message_of<Error>([&] { (void)i.bind(0); }).find("[1, 10]") != std::string::npos);
  CHECK(message_of<Error>([] { (void)Variable("j", 5, 2); }).find("min > max") != std::string::npos);
  Tensor a = Tensor::zeros({4, 10}).contiguous();
  const Tensor part = a[{Slice(), Slice(0, i.bind(3))}];
  CHECK(part.shape()[0] == 4);
  CHECK(part.shape()[1] == sint(i));  // compared as expressions of the variable
  CHECK(!(part.shape()[1] == 3));
  CHECK(tinyt::detail::cat(part.shape()) == "(4, i=3)");
  CHECK(part.numel() == 12);  // the bound value
  CHECK(part.to_vector<float>().size() == 12);
}

TEST_CASE("symbolic shapes: slices, elementwise ops, reductions and softmax compile once for every value") {
  const UOp i = Variable("i", 1, 12);
  const std::vector<float> av = matrix(5, 12, 1);
  Tensor a = Tensor::from_vector(av, {5, 12}).realize();
  int64_t compiles_first = -1;
  for (int64_t n = 1; n <= 12; ++n) {
    GlobalCounters::reset();
    const Tensor part = a[{Slice(), Slice(0, i.bind(n))}];  // (5, i)
    const Tensor s = (part * 2 + 1).sum(1), m = part.max(1), sm = part.softmax(-1);
    realize_tensors({s, m, sm});
    std::vector<double> want_s(5), want_m(5), want_sm;
    for (int64_t r = 0; r < 5; ++r) {
      double mx = -INFINITY, z = 0;
      for (int64_t c = 0; c < n; ++c) {
        const double x = av[static_cast<size_t>(r * 12 + c)];
        want_s[static_cast<size_t>(r)] += 2 * x + 1, mx = std::max(mx, x);
      }
      for (int64_t c = 0; c < n; ++c) z += std::exp(av[static_cast<size_t>(r * 12 + c)] - mx);
      for (int64_t c = 0; c < n; ++c) want_sm.push_back(std::exp(av[static_cast<size_t>(r * 12 + c)] - mx) / z);
      want_m[static_cast<size_t>(r)] = mx;
    }
    check_close(s.to_vector<float>(), want_s, Tol::exact());
    check_close(m.to_vector<float>(), want_m, Tol::exact());
    // exp in float32 (a few ulp) and a sum of up to 12 terms
    check_close(sm.to_vector<float>(), want_sm, Tol{1e-6, 1e-5});
    if (n == 1) compiles_first = GlobalCounters::compile_count;
    else CHECK(GlobalCounters::compile_count == 0);  // every kernel takes i as an argument
  }
  CHECK(compiles_first > 0);
}

TEST_CASE("symbolic shapes: matmul over a symbolic dim, reshape, expand, pad, arange and cat") {
  const UOp i = Variable("i", 1, 8);
  const std::vector<float> av = matrix(3, 8, 2), wv = matrix(8, 4, 3);
  Tensor a = Tensor::from_vector(av, {3, 8}).realize(), w = Tensor::from_vector(wv, {8, 4}).realize();
  for (int64_t n : {1, 3, 8, 5}) {
    const UOp b = i.bind(n);
    const Tensor x = a[{Slice(), Slice(0, b)}], y = w[{Slice(0, b)}];  // (3, i) and (i, 4)
    std::vector<double> mm(12), flat, arange, cat, padded, expanded;
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < 4; ++c)
        for (int64_t k = 0; k < n; ++k)
          mm[static_cast<size_t>(r * 4 + c)] += double(av[static_cast<size_t>(r * 8 + k)]) * wv[static_cast<size_t>(k * 4 + c)];
    check_close(x.matmul(y).to_vector<float>(), mm, Tol::exact());  // products and sums of 1/8 grid values
    // (3, i) as (i, 3): the same elements in the same order
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t k = 0; k < n; ++k) flat.push_back(av[static_cast<size_t>(r * 8 + k)]);
    const Tensor t = x.reshape({sint(b), 3});
    CHECK(t.shape() == Shape{sint(b), 3});
    check_close(t.to_vector<float>(), flat, Tol::exact());
    for (int64_t k = 0; k < n; ++k) arange.push_back(static_cast<double>(k));
    const Tensor ar = Tensor::arange(b);
    CHECK(ar.dtype() == dtypes::int32);
    check_close(ar.float_().to_vector<float>(), arange, Tol::exact());
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t k = 0; k < n; ++k) cat.push_back(av[static_cast<size_t>(r * 8 + k)]);
      cat.push_back(-1.0);
      padded.push_back(0.0);
      for (int64_t k = 0; k < n; ++k) padded.push_back(av[static_cast<size_t>(r * 8 + k)]);
      padded.push_back(0.0), padded.push_back(0.0);
      for (int64_t e = 0; e < 2; ++e)
        for (int64_t k = 0; k < n; ++k) expanded.push_back(av[static_cast<size_t>(r * 8 + k)]);
    }
    check_close(Tensor::cat({x, Tensor::full({3, 1}, -1.f)}, 1).to_vector<float>(), cat, Tol::exact());
    check_close(x.pad({{0, 0}, {1, 2}}).to_vector<float>(), padded, Tol::exact());
    check_close(x.unsqueeze(1).expand({3, 2, sint(b)}).to_vector<float>(), expanded, Tol::exact());
  }
}

TEST_CASE("symbolic shapes: a write into a symbolic slice (a KV cache) and reads of what it holds") {
  const UOp pos = Variable("pos", 0, 7);
  Tensor cache = Tensor::zeros({8, 2}).contiguous().realize();
  std::vector<double> want(16, 0.0);
  for (int64_t p = 0; p < 8; ++p) {
    const UOp b = pos.bind(p);
    Tensor row = Tensor::from_vector(std::vector<float>{float(p), float(-p)}, {1, 2});
    cache[{Slice(b, sint(b) + 1)}] = row;
    cache.realize();
    want[static_cast<size_t>(2 * p)] = double(p), want[static_cast<size_t>(2 * p + 1)] = -double(p);
    const Tensor seen = cache[{Slice(0, sint(b) + 1)}];  // the rows written so far
    CHECK(seen.shape()[0].value() == p + 1);
    check_close(seen.to_vector<float>(), std::vector<double>(want.begin(), want.begin() + 2 * (p + 1)), Tol::exact());
  }
}

TEST_CASE("symbolic shapes: misuse is a clear error") {
  const UOp i = Variable("i", 2, 6);
  Tensor a = Tensor::zeros({4, 6}).contiguous().realize();
  // a slice that can run past the dim, a symbolic step, a variable bound twice in one realize
  CHECK(message_of<IndexError>([&] { (void)a[{Slice(), Slice(0, sint(i.bind(3)) + 1)}]; }).find("may leave") != std::string::npos);
  CHECK(message_of<IndexError>([&] { (void)a[{Slice(), Slice(0, i.bind(3), 2)}]; }).find("step 1") != std::string::npos);
  const Tensor p3 = a[{Slice(), Slice(0, i.bind(3))}], p4 = a[{Slice(), Slice(0, i.bind(4))}];
  const std::string twice = message_of<ShapeError>([&] { (p3.sum(1) + p4.sum(1)).realize(); });
  CHECK(twice.find("Variable 'i' is bound to") != std::string::npos);
  CHECK(twice.find("to 3") != std::string::npos);
  CHECK(twice.find("to 4") != std::string::npos);
  // a reshape to a different number of elements; a variable never bound
  CHECK(message_of<ShapeError>([&] { (void)p3.reshape({sint(i), 5}); }).find("reshape") != std::string::npos);
  CHECK(message_of<ShapeError>([&] { (void)Tensor::zeros({sint(i), 2}).to_vector<float>(); }).find("Variable 'i'") != std::string::npos);
  // an op that needs concrete sizes says so
  CHECK(message_of<ShapeError>([&] { (void)p3.split(1, 1); }).find("symbolic") != std::string::npos);
}

TEST_CASE("symbolic shapes: the same values on every backend (C, OpenCL, EMU) as on LLVM") {
  const UOp i = Variable("i", 1, 16);
  const std::vector<float> av = matrix(4, 16, 5);
  for (const char* device : {"CPU", "CL", "EMU"}) {
    if (!tinyt_test::device_available(device)) {
      MESSAGE("skipped part: ", device, " is not available here");
      continue;
    }
    Tensor a = Tensor::from_vector(av, {4, 16}, device).realize();
    for (const char* llvm : {"1", "0"}) {
      tinyt_test::ScopedEnv env;
      env.set("CPU_LLVM", llvm);
      for (int64_t n : {1, 7, 16}) {
        const Tensor s = a[{Slice(), Slice(0, i.bind(n))}].exp().sum(1);
        std::vector<double> want(4);
        for (int64_t r = 0; r < 4; ++r)
          for (int64_t k = 0; k < n; ++k) want[static_cast<size_t>(r)] += std::exp(double(av[static_cast<size_t>(r * 16 + k)]));
        check_close(s.to(std::string("CPU")).to_vector<float>(), want, Tol{1e-5, 1e-5});  // float32 exp and sum
      }
    }
  }
}

TEST_CASE("symbolic shapes: a step with new values of its variables is found in the schedule cache") {
  const UOp pos = Variable("pos", 0, 7);
  Tensor cache = Tensor::zeros({8, 2}).contiguous().realize();
  for (int64_t p = 0; p < 8; ++p) {
    const auto [hits, misses] = schedule::schedule_cache_counts();
    const UOp b = pos.bind(p);
    cache[{Slice(b, sint(b) + 1)}] = Tensor::from_vector(std::vector<float>{float(p + 1), float(-p)}, {1, 2});
    const std::vector<float> seen = cache[{Slice(0, sint(b) + 1)}].sum(0).to_vector<float>();
    INFO("pos ", p);
    CHECK(seen == std::vector<float>{float((p + 1) * (p + 2) / 2), float(-p * (p + 1) / 2)});
    // the graphs differ only in the value of pos: the second step on schedules nothing anew
    if (p > 0) CHECK(schedule::schedule_cache_counts().second == misses);
    if (p > 0) CHECK(schedule::schedule_cache_counts().first > hits);
  }
}

TEST_CASE("symbolic shapes: mean over a symbolic axis divides by the bound count") {
  const UOp i = Variable("i", 1, 9);
  const std::vector<float> av = tinyt_test::values(3 * 9, 8);
  Tensor a = Tensor::from_vector(av, {3, 9}).realize();
  for (int64_t n : {1, 4, 9, 2}) {
    const Tensor m = a[{Slice(), Slice(0, i.bind(n))}].mean(1);
    std::vector<double> want(3, 0.0);
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t k = 0; k < n; ++k) want[static_cast<size_t>(r)] += av[static_cast<size_t>(r * 9 + k)];
      want[static_cast<size_t>(r)] /= double(n);
    }
    check_close(m.to_vector<float>(), want, Tol::f32(1));  // an exact sum, one rounded division
  }
}

// A decoding step's query, rotated by several ops, is broadcast along the cache's symbolic length
// into the scores' sum. Computed inside that sum it was computed again for every key (the scheduler
// saw no broadcast in a symbolic size): it is realized first, as for a concrete length, and the
// schedule is the same at every length, 1 included.
TEST_CASE("symbolic shapes: a value broadcast along a symbolic length into a reduction is computed once") {
  const UOp n = Variable("n", 1, 16);
  const std::vector<float> qv = tinyt_test::values(3 * 8, 3), cv = tinyt_test::values(3 * 8, 4), kv = matrix(3 * 16, 8, 5);
  Tensor q = Tensor::from_vector(qv, {3, 1, 8}).realize(), c = Tensor::from_vector(cv, {3, 1, 8}).realize();
  Tensor k = Tensor::from_vector(kv, {3, 16, 8}).realize();
  for (int64_t len : {1, 5, 16}) {
    INFO("length ", len);
    const Tensor rotated = (q * c + q * 2.f) * 0.5f - c;
    const Tensor scores = rotated.matmul(k[{Slice(), Slice(0, n.bind(len))}].transpose(-1, -2));
    CHECK(schedule::create_schedule({scores.uop()}).size() == 2);
    std::vector<double> want;
    for (size_t h = 0; h < 3; ++h)
      for (size_t j = 0; j < static_cast<size_t>(len); ++j) {
        double dot = 0;
        for (size_t d = 0; d < 8; ++d) {
          const double qd = qv[h * 8 + d], cd = cv[h * 8 + d];
          dot += ((qd * cd + qd * 2) * 0.5 - cd) * kv[(h * 16 + j) * 8 + d];
        }
        want.push_back(dot);
      }
    check_close(scores.to_vector<float>(), want, Tol::f32(24).of(64));
  }
}

// Grouped-query attention over a KV cache merges (kv heads, group) into heads while the length is
// symbolic. The reshape was lowered by flattening the whole index and unflattening it again, which
// divides by (p + 1) * 8 and friends: the symbolic engine cannot fold a division by p + 1, so every
// load paid a chain of 64-bit divisions (SmolLM's scores took 0.86 ms a layer at p = 199). Matched
// dim by dim, the length and width keep their indices and only the heads are divided, by 3.
TEST_CASE("symbolic shapes: a reshape that leaves a symbolic length alone divides by none") {
  const UOp pos = Variable("pos", 0, 15);
  const std::vector<float> cv = matrix(3 * 16, 8, 6), qv = matrix(9, 8, 7);
  Tensor cache = Tensor::from_vector(cv, {3, 16, 8}).realize(), q = Tensor::from_vector(qv, {9, 1, 8}).realize();
  for (int64_t p : {0, 4, 15}) {
    INFO("p = ", p);
    const Tensor keys = cache[{Slice(), Slice(0, sint(pos.bind(p)) + 1)}];
    const Shape s = keys.shape();
    const Tensor shared = keys.reshape({s[0], 1, s[1], s[2]}).expand({s[0], 3, s[1], s[2]}).reshape({9, s[1], s[2]});
    const Tensor scores = q.matmul(shared.transpose(-1, -2));
    const auto kernels = schedule::create_schedule({scores.uop()});
    REQUIRE(kernels.size() == 1);
    const std::string src = renderer::render_c(codegen::linearize(kernels[0].ast, "scores"));
    INFO(src);
    CHECK(src.find('%') == std::string::npos);
    for (size_t at = src.find(" / "); at != std::string::npos; at = src.find(" / ", at + 1)) CHECK(src.compare(at, 5, " / 3)") == 0);
    std::vector<double> want;
    for (size_t h = 0; h < 9; ++h)
      for (size_t j = 0; j <= static_cast<size_t>(p); ++j) {
        double dot = 0;
        for (size_t e = 0; e < 8; ++e) dot += double(qv[h * 8 + e]) * cv[((h / 3) * 16 + j) * 8 + e];
        want.push_back(dot);
      }
    check_close(scores.to_vector<float>(), want, Tol::exact());
  }
}
