// Combining and splitting tensors: cat, stack, split, chunk, repeat, linspace, checked against
// loops written here.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;
using namespace tinyt_test;

namespace {
// a (r, c) tensor with element (i, j) = f(i, j), and f itself
struct Grid {
  Tensor t;
  std::function<float(int64_t, int64_t)> f;
};
Grid grid(int64_t r, int64_t c, float base) {
  auto f = [base](int64_t i, int64_t j) { return base + static_cast<float>(10 * i + j); };
  std::vector<float> v;
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) v.push_back(f(i, j));
  return {Tensor::from_vector(v, {r, c}), f};
}
std::vector<float> table(int64_t r, int64_t c, const std::function<float(int64_t, int64_t)>& f) {
  std::vector<float> v;
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) v.push_back(f(i, j));
  return v;
}
}  // namespace

TEST_CASE("combine: cat joins along any dim in one kernel") {
  Grid a = grid(2, 3, 0), b = grid(1, 3, 100), c = grid(3, 3, 200);
  Tensor r = Tensor::cat({a.t, b.t, c.t});
  CHECK(r.shape() == Shape{6, 3});
  CHECK(r.to_vector<float>() == table(6, 3, [&](int64_t i, int64_t j) {
          return i < 2 ? a.f(i, j) : i < 3 ? b.f(i - 2, j) : c.f(i - 3, j);
        }));
  Grid d = grid(2, 1, 300), e = grid(2, 4, 400);
  Tensor cols = Tensor::cat({a.t, d.t, e.t}, -1);
  CHECK(cols.shape() == Shape{2, 8});
  auto cols_ref = [&](int64_t i, int64_t j) {
    return j < 3 ? a.f(i, j) : j < 4 ? d.f(i, 0) : e.f(i, j - 4);
  };
  CHECK(cols.to_vector<float>() == table(2, 8, cols_ref));
  GlobalCounters::reset();
  Tensor::cat({a.t, d.t, e.t}, 1).realize();
  CHECK(GlobalCounters::kernel_count == 1);
  // a single tensor, and size-0 pieces
  CHECK(Tensor::cat({a.t}).to_vector<float>() == a.t.to_vector<float>());
  Tensor none = Tensor::from_vector(std::vector<float>{}, {0, 3});
  CHECK(Tensor::cat({none, a.t, none}).to_vector<float>() == a.t.to_vector<float>());
  CHECK(Tensor::cat({none, none}).shape() == Shape{0, 3});
  CHECK(Tensor::cat({Tensor::zeros({2, 0}), Tensor::zeros({2, 0})}, 1).shape() == Shape{2, 0});
  // 3-D along the middle
  Tensor x = Tensor::arange(12).reshape({2, 3, 2}), y = Tensor::arange(4).reshape({2, 1, 2}) + 100;
  std::vector<int32_t> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 2; ++k) want.push_back(j < 3 ? i * 6 + j * 2 + k : 100 + i * 2 + k);
  CHECK(Tensor::cat({x, y}, 1).to_vector<int32_t>() == want);
}

TEST_CASE("combine: cat promotes dtypes and keeps exact values") {
  Tensor i = Tensor::from_vector(std::vector<int32_t>{1, 2});
  Tensor f = Tensor::from_vector(std::vector<float>{0.5f, -0.0f});
  Tensor r = Tensor::cat({i, f});
  CHECK(r.dtype() == dtypes::float32);
  CHECK(r.to_vector<float>() == std::vector<float>{1, 2, 0.5f, 0});
  CHECK(std::signbit(r.to_vector<float>()[3]));  // -0.0 stays -0.0
  Tensor nan = Tensor::from_vector(std::vector<float>{NAN});
  CHECK(std::isnan(Tensor::cat({f, nan}).to_vector<float>()[2]));
  CHECK(std::isnan(Tensor::cat({nan, f}).to_vector<float>()[0]));
  CHECK(Tensor::cat({Tensor::from_vector(std::vector<int8_t>{-1}),
                     Tensor::from_vector(std::vector<int16_t>{300})})
            .dtype() == dtypes::int16);
  Tensor b = Tensor::cat({Tensor::from_vector(std::vector<bool>{true, false}),
                          Tensor::from_vector(std::vector<bool>{false, true})});
  CHECK(b.dtype() == dtypes::bool_);
  CHECK(b.to_vector<bool>() == std::vector<bool>{true, false, false, true});
  if (lacks(dtypes::int64)) return;
  Tensor big = Tensor::cat({Tensor::from_vector(std::vector<int64_t>{int64_t{1} << 40}),
                            Tensor::from_vector(std::vector<int32_t>{-7})});
  CHECK(big.to_vector<int64_t>() == std::vector<int64_t>{int64_t{1} << 40, -7});
}

TEST_CASE("combine: cat and stack of non-contiguous tensors") {
  Grid g = grid(3, 4, 0);
  Tensor permuted = g.t.T();                                  // (4, 3): g(j, i)
  Tensor flipped = g.t.flip(0).shrink({{0, 3}, {0, 3}}).T();  // (3, 3): g(2 - j, i)
  Tensor expanded = Tensor::from_vector(std::vector<float>{7, 8, 9}).reshape({1, 3}).expand({2, 3});
  Tensor padded = g.t.shrink({{0, 1}, {0, 3}}).pad({{1, 1}, {0, 0}});  // (3, 3): row 1 is g(0, j)
  Tensor sliced = g.t[{Slice(None, None, -2), Slice(None, 3)}];        // rows 2, 0
  Tensor r = Tensor::cat({permuted, flipped, expanded, padded, sliced});
  CHECK(r.shape() == Shape{14, 3});
  auto ref = [&](int64_t i, int64_t j) -> float {
    if (i < 4) return g.f(j, i);
    if (i < 7) return g.f(2 - j, i - 4);
    if (i < 9) return static_cast<float>(7 + j);
    if (i < 12) return i == 10 ? g.f(0, j) : 0.f;
    return g.f(i == 12 ? 2 : 0, j);
  };
  CHECK(r.to_vector<float>() == table(14, 3, ref));
  Tensor s = Tensor::stack({flipped, padded}, 1);
  CHECK(s.shape() == Shape{3, 2, 3});
  std::vector<float> want;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t k = 0; k < 2; ++k)
      for (int64_t j = 0; j < 3; ++j) want.push_back(k == 0 ? ref(4 + i, j) : ref(9 + i, j));
  CHECK(s.to_vector<float>() == want);
}

TEST_CASE("combine: stack") {
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3}),
         b = Tensor::from_vector(std::vector<float>{4, 5, 6});
  CHECK(Tensor::stack({a, b}).shape() == Shape{2, 3});
  CHECK(Tensor::stack({a, b}).to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(Tensor::stack({a, b}, 1).to_vector<float>() == std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(Tensor::stack({a, b}, -1).shape() == Shape{3, 2});
  CHECK(Tensor::stack({a, b, a}, -2).shape() == Shape{3, 3});
  // 0-d tensors become a vector; dtypes promote
  Tensor s = Tensor::stack(
      {Tensor(1.5f), Tensor::from_vector(std::vector<int32_t>{2}).reshape({}), Tensor(3.0f)});
  CHECK(s.shape() == Shape{3});
  CHECK(s.to_vector<float>() == std::vector<float>{1.5f, 2, 3});
  CHECK(Tensor::stack({Tensor::zeros({0, 2}), Tensor::zeros({0, 2})}, 1).shape() == Shape{0, 2, 2});
  // misuse
  CHECK_THROWS_AS(Tensor::stack({}), Error);
  CHECK_THROWS_AS(Tensor::stack({a, Tensor::ones({4})}), ShapeError);
  CHECK(message_of<ShapeError>([&] {
          (void)Tensor::stack({a, Tensor::ones({4})});
        }).find("(4,)") != std::string::npos);
  CHECK_THROWS_AS(Tensor::stack({a, b}, 2), IndexError);
  CHECK_THROWS_AS(Tensor::stack({a, b}, -3), IndexError);
}

TEST_CASE("combine: cat misuse") {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({2, 4});
  CHECK_THROWS_AS(Tensor::cat({}), Error);
  CHECK_THROWS_AS(Tensor::cat({a, b}), ShapeError);
  const std::string msg = message_of<ShapeError>([&] { (void)Tensor::cat({a, b}, 0); });
  CHECK(msg.find("(2, 3)") != std::string::npos);
  CHECK(msg.find("(2, 4)") != std::string::npos);
  CHECK_THROWS_AS(Tensor::cat({a, Tensor::zeros({2, 3, 1})}, 0), ShapeError);
  CHECK_THROWS_AS(Tensor::cat({Tensor(1.0f), Tensor(2.0f)}), ShapeError);
  CHECK_THROWS_AS(Tensor::cat({a, a}, 2), IndexError);
  CHECK_THROWS_AS(Tensor::cat({a, Tensor()}), Error);
  CHECK_THROWS_AS(Tensor::cat({a, Tensor::zeros({2, 3}).to(a.device() == "CPU" ? "CL" : "CPU")}), DeviceError);
  CHECK(Tensor::cat({a, b}, 1).shape() == Shape{2, 7});
}

TEST_CASE("combine: split and chunk") {
  Grid g = grid(5, 3, 0);
  auto parts = g.t.split(2);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].shape() == Shape{2, 3});
  CHECK(parts[2].shape() == Shape{1, 3});
  CHECK(parts[1].to_vector<float>() ==
        table(2, 3, [&](int64_t i, int64_t j) { return g.f(i + 2, j); }));
  CHECK(parts[2].to_vector<float>() == table(1, 3, [&](int64_t, int64_t j) { return g.f(4, j); }));
  auto cols = g.t.split(std::vector<int64_t>{1, 0, 2}, -1);
  REQUIRE(cols.size() == 3);
  CHECK(cols[1].shape() == Shape{5, 0});
  CHECK(cols[2].to_vector<float>() ==
        table(5, 2, [&](int64_t i, int64_t j) { return g.f(i, j + 1); }));
  CHECK(g.t.split(10).size() == 1);
  // pieces of a flipped tensor are views of it
  auto flipped = g.t.flip(0).split(std::vector<int64_t>{4, 1});
  CHECK(flipped[0].to_vector<float>() ==
        table(4, 3, [&](int64_t i, int64_t j) { return g.f(4 - i, j); }));
  CHECK(flipped[1].to_vector<float>() ==
        table(1, 3, [&](int64_t, int64_t j) { return g.f(0, j); }));
  // chunk: ceil(size / n) each, so possibly fewer chunks
  auto ch = g.t.chunk(3);
  REQUIRE(ch.size() == 3);
  CHECK(ch[0].shape() == Shape{2, 3});
  CHECK(ch[2].shape() == Shape{1, 3});
  CHECK(ch[2].to_vector<float>() == table(1, 3, [&](int64_t, int64_t j) { return g.f(4, j); }));
  CHECK(Tensor::zeros({6}).chunk(4).size() == 3);
  CHECK(Tensor::zeros({6}).chunk(6).size() == 6);
  CHECK(Tensor::zeros({2}).chunk(5).size() == 2);
  auto by_col = g.t.chunk(2, 1);
  REQUIRE(by_col.size() == 2);
  CHECK(by_col[1].to_vector<float>() == table(5, 1, [&](int64_t i, int64_t) { return g.f(i, 2); }));
  // empty dims
  CHECK(Tensor::zeros({0, 2}).split(3).size() == 1);
  CHECK(Tensor::zeros({0, 2}).split(0).size() == 1);
  auto empty_chunks = Tensor::zeros({0, 2}).chunk(3);
  REQUIRE(empty_chunks.size() == 3);
  CHECK(empty_chunks[2].shape() == Shape{0, 2});
  // misuse
  CHECK_THROWS_AS(g.t.split(0), ShapeError);
  CHECK_THROWS_AS(g.t.split(-1), ShapeError);
  CHECK_THROWS_AS(g.t.split(std::vector<int64_t>{2, 2}), ShapeError);
  CHECK(message_of<ShapeError>([&] {
          (void)g.t.split(std::vector<int64_t>{2, 2});
        }).find("size 5") != std::string::npos);
  CHECK_THROWS_AS(g.t.split(std::vector<int64_t>{6, -1}), ShapeError);
  CHECK_THROWS_AS(g.t.split(1, 2), IndexError);
  CHECK_THROWS_AS(Tensor(1.0f).split(1), ShapeError);
  CHECK_THROWS_AS(g.t.chunk(0), Error);
  CHECK_THROWS_AS(Tensor(1.0f).chunk(1), ShapeError);
}

TEST_CASE("combine: repeat tiles like PyTorch") {
  Grid g = grid(2, 3, 0);
  Tensor r = g.t.repeat({2, 3});
  CHECK(r.shape() == Shape{4, 9});
  CHECK(r.to_vector<float>() ==
        table(4, 9, [&](int64_t i, int64_t j) { return g.f(i % 2, j % 3); }));
  // more repeats than dims add leading dims
  Tensor r3 = g.t.repeat({2, 1, 2});
  CHECK(r3.shape() == Shape{2, 2, 6});
  std::vector<float> want;
  for (int64_t k = 0; k < 2; ++k)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 6; ++j) want.push_back(g.f(i, j % 3));
  CHECK(r3.to_vector<float>() == want);
  // non-contiguous input, 0-d input, zero repeats
  CHECK(g.t.T().repeat({1, 2}).to_vector<float>() ==
        table(3, 4, [&](int64_t i, int64_t j) { return g.f(j % 2, i); }));
  CHECK(Tensor(4.0f).repeat({3}).to_vector<float>() == std::vector<float>{4, 4, 4});
  CHECK(Tensor(4.0f).repeat({}).ndim() == 0);
  CHECK(g.t.repeat({0, 2}).shape() == Shape{0, 6});
  CHECK_THROWS_AS(g.t.repeat({2}), ShapeError);
  CHECK_THROWS_AS(g.t.repeat({2, -1}), ShapeError);
}

TEST_CASE("combine: linspace") {
  auto reference = [](double a, double b, int64_t n) {
    std::vector<double> v;
    for (int64_t i = 0; i < n; ++i)
      v.push_back(n == 1 ? a : a + (b - a) * static_cast<double>(i) / static_cast<double>(n - 1));
    return v;
  };
  // start + i * step: the step's two roundings and the sum's, relative to the larger end (a
  // value near 0 keeps the error of the larger terms)
  Tensor l = Tensor::linspace(0, 1, 5);
  CHECK(l.dtype() == dtypes::float32);
  check_close(l.to_vector<float>(), reference(0, 1, 5), Tol::f32(4).of(1));
  check_close(Tensor::linspace(-2.5, 7.25, 11).to_vector<float>(), reference(-2.5, 7.25, 11), Tol::f32(4).of(7.25));
  check_close(Tensor::linspace(3, -3, 4).to_vector<float>(), reference(3, -3, 4), Tol::f32(4).of(3));
  // both ends exact, for any length
  for (int64_t n : {2, 3, 7, 100, 1001}) {
    auto v = Tensor::linspace(0.1, 0.7, n).to_vector<float>();
    CHECK(v.front() == 0.1f);
    CHECK(v.back() == 0.7f);
    check_close(v, reference(0.1, 0.7, n), Tol::f32(4).of(0.7));
  }
  CHECK(Tensor::linspace(5, 9, 1).to_vector<float>() == std::vector<float>{5});
  CHECK(Tensor::linspace(5, 9, 0).shape() == Shape{0});
  if (!lacks(dtypes::float64)) {
    Tensor d = Tensor::linspace(0.0, 1.0, 4, dtypes::float64);
    CHECK(d.dtype() == dtypes::float64);
    auto dv = d.to_vector<double>();
    auto dr = reference(0, 1, 4);
    for (size_t i = 0; i < dv.size(); ++i) CHECK(std::fabs(dv[i] - dr[i]) < 1e-15);
  }
  // integer dtypes truncate (PyTorch)
  CHECK(Tensor::linspace(0, 10, 4, dtypes::int32).to_vector<int32_t>() ==
        std::vector<int32_t>{0, 3, 6, 10});
  CHECK_WIDE(Tensor::linspace(-1, 1, 2, dtypes::int64).to_vector<int64_t>() == std::vector<int64_t>{-1, 1});
  CHECK_THROWS_AS(Tensor::linspace(0, 1, -1), Error);
  CHECK_THROWS_AS(Tensor::linspace(0, 1, 3, dtypes::bool_), DTypeError);
}

TEST_CASE("combine: pad in the reflect, replicate and circular modes, against index maps") {
  // each mode maps an output index (before the data: negative, after: >= n) to the input's
  auto reflect = [](int64_t i, int64_t n) { return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i; };
  auto replicate = [](int64_t i, int64_t n) { return std::clamp<int64_t>(i, 0, n - 1); };
  auto circular = [](int64_t i, int64_t n) { return ((i % n) + n) % n; };
  struct Case {
    const char* mode;
    std::function<int64_t(int64_t, int64_t)> map;
    int64_t top, bottom, left, right;
  };
  const std::vector<Case> cases = {
      {"reflect", reflect, 2, 1, 3, 0},   {"reflect", reflect, 0, 0, 1, 3},
      {"replicate", replicate, 3, 2, 0, 5}, {"circular", circular, 1, 2, 3, 1},
      {"circular", circular, 7, 0, 0, 9},  // more than the dim: it wraps again
      {"reflect", reflect, -1, 1, 2, -2},   // negative amounts cut
  };
  const Grid g = grid(3, 4, 0.5f);
  for (const Case& c : cases) {
    INFO(c.mode, " (", c.top, ", ", c.bottom, "), (", c.left, ", ", c.right, ")");
    const Tensor y = g.t.pad({{c.top, c.bottom}, {c.left, c.right}}, c.mode);
    const int64_t rows = 3 + c.top + c.bottom, cols = 4 + c.left + c.right;
    CHECK(y.shape() == Shape{rows, cols});
    CHECK(y.to_vector<float>() ==
          table(rows, cols, [&](int64_t i, int64_t j) { return g.f(c.map(i - c.top, 3), c.map(j - c.left, 4)); }));
  }
  CHECK(g.t.pad({{1, 1}, {0, 0}}, "constant", 7.0).to_vector<float>()[0] == 7.0f);
  // misuse: reflect as far as the dim, an unknown mode, an empty dim, a pair per dim
  CHECK_THROWS_AS(g.t.pad({{3, 0}, {0, 0}}, "reflect"), ShapeError);
  CHECK_THROWS_AS(g.t.pad({{1, 0}, {0, 0}}, "mirror"), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({0, 2}).pad({{1, 0}, {0, 0}}, "replicate"), ShapeError);
  CHECK_THROWS_AS(g.t.pad({{1, 0}}, "circular"), ShapeError);
  CHECK_THROWS_WITH_AS(g.t.pad({{1, 0}, {0, 0}}, "mirror"), doctest::Contains("mirror"), ShapeError);
}
