// The Tensor front end through the whole pipeline: values checked against loops written here,
// and fusion checked by counting the kernels that run.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <numeric>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;
using namespace tinyt_test;

namespace {
std::vector<float> iota(size_t n, float start = 0.f, float step = 1.f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}
}  // namespace

TEST_CASE("tensor: a LayerNorm after a matmul computes the matmul once, not once per reduction reading it") {
  const int64_t m = 16, k = 256, n = 24;
  std::vector<float> xv(static_cast<size_t>(m * k)), wv(static_cast<size_t>(k * n));
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(std::cos(1.3 * static_cast<double>(i)) / 16);
  Tensor x = Tensor::from_vector(xv, {m, k}).realize(), w = Tensor::from_vector(wv, {k, n}).realize();
  GlobalCounters::reset();
  const std::vector<float> got = x.matmul(w).layernorm().to_vector<float>();
  // the mean and the variance both sum the matmul's rows: fused into them, it ran 7 times over
  CHECK(static_cast<double>(GlobalCounters::global_ops) < 2.0 * 2 * m * n * k);
  for (int64_t r = 0; r < m; ++r) {  // by hand, in double
    std::vector<double> y(static_cast<size_t>(n), 0.0);
    for (int64_t c = 0; c < n; ++c)
      for (int64_t i = 0; i < k; ++i) y[static_cast<size_t>(c)] += double(xv[static_cast<size_t>(r * k + i)]) * wv[static_cast<size_t>(i * n + c)];
    double mean = 0, var = 0;
    for (double v : y) mean += v / static_cast<double>(n);
    for (double v : y) var += (v - mean) * (v - mean) / static_cast<double>(n);
    for (int64_t c = 0; c < n; ++c)
      CHECK(got[static_cast<size_t>(r * n + c)] == doctest::Approx((y[static_cast<size_t>(c)] - mean) / std::sqrt(var + 1e-5)).epsilon(1e-4));
  }
}

TEST_CASE("tensor: creation and reading") {
  Tensor a = Tensor::from_vector(iota(6), {2, 3});
  CHECK(a.shape() == Shape{2, 3});
  CHECK(a.shape()[1] == 3);
  CHECK(a.ndim() == 2);
  CHECK(a.numel() == 6);
  CHECK(a.dtype() == dtypes::float32);
  CHECK(a.device() == Device::default_device());  // CPU, unless DEV says otherwise
  CHECK(a.to_vector<float>() == iota(6));
  CHECK(Tensor::full({2, 2}, 7).to_vector<int32_t>() == std::vector<int32_t>{7, 7, 7, 7});
  CHECK(Tensor::zeros({3}).to_vector<float>() == std::vector<float>{0, 0, 0});
  CHECK_WIDE(Tensor::ones({2}, dtypes::int64).to_vector<int64_t>() == std::vector<int64_t>{1, 1});
  CHECK(Tensor(2.5).item<float>() == 2.5f);
  CHECK(Tensor(3).dtype() == dtypes::int32);
  CHECK(Tensor(true).item<bool>() == true);
  CHECK(Tensor::arange(5).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2, 3, 4});
  CHECK(Tensor::arange(1, 10, 3).to_vector<int32_t>() == std::vector<int32_t>{1, 4, 7});
  check_close(Tensor::arange(0.0, 1.0, 0.25).to_vector<float>(), {0, 0.25, 0.5, 0.75}, Tol::exact());
  CHECK(Tensor::arange(3, 0, -1).to_vector<int32_t>() == std::vector<int32_t>{3, 2, 1});
  CHECK(Tensor::eye(2, 3).to_vector<float>() == std::vector<float>{1, 0, 0, 0, 1, 0});
  CHECK(Tensor::from_vector(std::vector<bool>{true, false}).to_vector<bool>() == std::vector<bool>{true, false});
  CHECK_THROWS_AS(Tensor::from_vector(iota(5), {2, 3}), ShapeError);
  CHECK_THROWS_AS(a.to_vector<int32_t>(), DTypeError);
  CHECK_THROWS_AS(a.item<float>(), ShapeError);
  CHECK_THROWS_AS(Tensor().shape(), Error);
}

TEST_CASE("tensor: size-0 and 0-d tensors") {
  Tensor e = Tensor::from_vector(std::vector<float>{}, {0, 3});
  CHECK(e.numel() == 0);
  CHECK((e + 1).to_vector<float>().empty());
  CHECK(e.sum(0).to_vector<float>() == std::vector<float>{0, 0, 0});
  CHECK(e.sum().item<float>() == 0.f);
  // a sum over an empty axis reads no memory (it read element 0 of the empty input, times 0)
  for (const auto& k : schedule::create_schedule({e.sum(0).uop()}))
    for (const UOp& u : toposort(k.ast)) CHECK(u.op() != Ops::LOAD);
  Tensor s(4.0f);
  CHECK(s.ndim() == 0);
  CHECK((s * 2).item<float>() == 8.f);
  CHECK(s.sum().item<float>() == 4.f);
  CHECK(s.reshape({1, 1}).shape() == Shape{1, 1});
}

TEST_CASE("tensor: broadcasting elementwise ops") {
  Tensor a = Tensor::from_vector(iota(6), {2, 3});
  Tensor b = Tensor::from_vector(std::vector<float>{10, 20, 30});
  Tensor c = Tensor::from_vector(std::vector<float>{1, 2}, {2, 1});
  std::vector<float> want(6);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) want[i * 3 + j] = (static_cast<float>(i * 3 + j) + 10.f * (j + 1)) * static_cast<float>(i + 1) - 1.f;
  check_close(((a + b) * c - 1).to_vector<float>(), want, Tol::exact());
  CHECK_THROWS_AS(a + Tensor::from_vector(iota(2)), ShapeError);
  try {
    (void)(a + Tensor::from_vector(iota(5)));
  } catch (const ShapeError& e) {
    CHECK(std::string(e.what()).find("(2, 3)") != std::string::npos);
    CHECK(std::string(e.what()).find("(5,)") != std::string::npos);
  }
}

TEST_CASE("tensor: dtype promotion follows tinygrad and weak scalars") {
  Tensor i = Tensor::from_vector(std::vector<int32_t>{1, 2, 3});
  Tensor h = Tensor::from_vector(std::vector<float>{1, 2}).half();
  CHECK((i + 1).dtype() == dtypes::int32);
  CHECK((i * 2.5).dtype() == dtypes::float32);
  CHECK((h * 2.0).dtype() == dtypes::float16);
  CHECK((i / 2).dtype() == dtypes::float32);
  check_close((i / 2).to_vector<float>(), {0.5f, 1.f, 1.5f}, Tol::exact());
  CHECK((i < 2).dtype() == dtypes::bool_);
  CHECK_WIDE((i + Tensor::from_vector(std::vector<int64_t>{1, 1, 1})).dtype() == dtypes::int64);
  CHECK((Tensor::from_vector(std::vector<uint8_t>{1}) + Tensor::from_vector(std::vector<int8_t>{1})).dtype() == dtypes::int16);
}

TEST_CASE("tensor: integer floor division and modulo use Python's signs") {
  Tensor a = Tensor::from_vector(std::vector<int32_t>{7, -7, 7, -7, 0});
  Tensor b = Tensor::from_vector(std::vector<int32_t>{2, 2, -2, -2, 3});
  CHECK(a.floordiv(b).to_vector<int32_t>() == std::vector<int32_t>{3, -4, -4, 3, 0});
  CHECK((a % b).to_vector<int32_t>() == std::vector<int32_t>{1, 1, -1, -1, 0});
  Tensor f = Tensor::from_vector(std::vector<float>{7.5f, -7.5f});
  check_close(f.floordiv(2).to_vector<float>(), {3.f, -4.f}, Tol::exact());
  check_close((f % 2).to_vector<float>(), {1.5f, 0.5f}, Tol::exact());
}

TEST_CASE("tensor: NaN and inf propagate like PyTorch") {
  Tensor x = Tensor::from_vector(std::vector<float>{1.f, NAN, -INFINITY, 3.f});
  CHECK(std::isnan(x.max().item<float>()));
  CHECK(std::isnan(x.min().item<float>()));
  auto r = x.relu().to_vector<float>();
  CHECK(std::isnan(r[1]));
  CHECK(r[2] == 0.f);
  CHECK(x.isnan().to_vector<bool>() == std::vector<bool>{false, true, false, false});
  CHECK(x.isinf().to_vector<bool>() == std::vector<bool>{false, false, true, false});
  CHECK(std::isnan(x.maximum(0).to_vector<float>()[1]));
  // f32 -> f16 of 65536 is inf
  CHECK(std::isinf(static_cast<float>(Tensor::from_vector(std::vector<float>{65536.f}).half().item<half_t>())));
}

TEST_CASE("tensor: reductions over axes, with keepdim and negative axes") {
  Tensor a = Tensor::from_vector(iota(24), {2, 3, 4});
  std::vector<float> s1(8, 0.f), s02(3, 0.f), mx(6, -1e30f);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        const float v = static_cast<float>(i * 12 + j * 4 + k);
        s1[i * 4 + k] += v, s02[j] += v, mx[i * 3 + j] = std::max(mx[i * 3 + j], v);
      }
  check_close(a.sum(1).to_vector<float>(), s1, Tol::exact());
  CHECK(a.sum(1, true).shape() == Shape{2, 1, 4});
  check_close(a.sum({0, 2}).to_vector<float>(), s02, Tol::exact());
  check_close(a.max(-1).to_vector<float>(), mx, Tol::exact());
  check_close(a.mean().reshape({1}).to_vector<float>(), {11.5f}, Tol::exact());
  CHECK(a.sum().item<float>() == 276.f);
  CHECK(a.min().item<float>() == 0.f);
  Tensor i = Tensor::from_vector(std::vector<int32_t>{3, -5, 2});
  CHECK(i.min().item<int32_t>() == -5);
  CHECK(i.max().item<int32_t>() == 3);
  CHECK(ints(i.prod()) == std::vector<int64_t>{-30});  // int64, as PyTorch (int32 without 64-bit types)
  CHECK((i > 0).any().item<bool>() == true);
  CHECK((i > 0).all().item<bool>() == false);
  CHECK_THROWS_AS(a.sum(3), IndexError);
}

TEST_CASE("tensor: movement ops are views with the right values") {
  Tensor a = Tensor::from_vector(iota(6), {2, 3});
  CHECK(a.T().to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK(a.flip(1).to_vector<float>() == std::vector<float>{2, 1, 0, 5, 4, 3});
  CHECK(a.flip({0, 1}).to_vector<float>() == std::vector<float>{5, 4, 3, 2, 1, 0});
  CHECK(a.shrink({{0, 2}, {1, 3}}).to_vector<float>() == std::vector<float>{1, 2, 4, 5});
  CHECK(a.pad({{1, 0}, {0, 1}}).to_vector<float>() == std::vector<float>{0, 0, 0, 0, 0, 1, 2, 0, 3, 4, 5, 0});
  CHECK(a.pad({{0, 0}, {1, 1}}, -1.0).to_vector<float>() == std::vector<float>{-1, 0, 1, 2, -1, -1, 3, 4, 5, -1});
  CHECK(a.pad({{0, 0}, {-1, 0}}).to_vector<float>() == std::vector<float>{1, 2, 4, 5});
  CHECK(a.reshape({3, -1}).shape() == Shape{3, 2});
  CHECK(a.reshape({3, 2}).T().to_vector<float>() == std::vector<float>{0, 2, 4, 1, 3, 5});
  CHECK(a.reshape({1, 2, 3}).expand({2, 2, 3}).sum(0).to_vector<float>() == std::vector<float>{0, 2, 4, 6, 8, 10});
  CHECK(a.unsqueeze(0).shape() == Shape{1, 2, 3});
  CHECK(a.unsqueeze(-1).shape() == Shape{2, 3, 1});
  CHECK(a.flatten().shape() == Shape{6});
  CHECK(a.T().flatten().to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  // a permuted, padded, flipped view of a view
  CHECK(a.T().pad({{0, 1}, {0, 0}}).flip(0).to_vector<float>() == std::vector<float>{0, 0, 2, 5, 1, 4, 0, 3});
  CHECK_THROWS_AS(a.reshape({4, 2}), ShapeError);
  CHECK_THROWS_AS(a.permute({0, 0}), ShapeError);
  CHECK_THROWS_AS(a.shrink({{0, 3}, {0, 3}}), ShapeError);
  CHECK_THROWS_AS(a.expand({3, 3}), ShapeError);
}

TEST_CASE("tensor: cumsum and cumprod") {
  Tensor a = Tensor::from_vector(iota(6, 1.f), {2, 3});
  CHECK(a.cumsum(1).to_vector<float>() == std::vector<float>{1, 3, 6, 4, 9, 15});
  CHECK(a.cumsum(0).to_vector<float>() == std::vector<float>{1, 2, 3, 5, 7, 9});
  CHECK(a.cumprod(1).to_vector<float>() == std::vector<float>{1, 2, 6, 4, 20, 120});
  CHECK(a.cumprod(-2).to_vector<float>() == std::vector<float>{1, 2, 3, 4, 10, 18});
  // integers multiply in int64, as PyTorch's, with a zero and negatives
  Tensor i = Tensor::from_vector(std::vector<int32_t>{-2, 3, 0, 5}, {4});
  CHECK(i.cumprod().dtype() == Device::widest_int(i.device()));
  CHECK(ints(i.cumprod()) == std::vector<int64_t>{-2, -6, 0, 0});
  CHECK_THROWS_AS(a.cumprod(2), IndexError);
}

TEST_CASE("tensor: math functions against the C library") {
  std::vector<float> xs{-3.f, -1.5f, -0.5f, 0.f, 0.25f, 1.f, 2.5f};
  Tensor x = Tensor::from_vector(xs);
  auto map = [&](auto f) {
    std::vector<double> out;
    for (float v : xs) out.push_back(f(static_cast<double>(v)));
    return out;
  };
  // exp(x) = exp2(x * log2 e): the product's rounding and log2 e's move the argument by up to
  // 2 * 2^-24 * |x log2 e| (|x| <= 3: 4.4), which exp2 scales by ln 2 (6 roundings), plus exp2's
  // 0.91 ulp; sigmoid adds the sum and the reciprocal; tanh = 2 sigmoid(2x) - 1 cancels near 0
  // (so relative to 1, not tanh), and sigmoid's error is large only where it is small;
  // cos(x) = sin(pi/2 - x): pi/2 and the difference are rounded to float, an error relative to
  // |pi/2 - x| <= 4.6 and not to cos; erf is Abramowitz and Stegun 7.1.26 (absolute error
  // 1.5e-7) in about 12 float operations of values up to 1, gelu scales it by x/2 (|x| <= 3);
  // softplus is log(1 + exp(-|x|)) + relu(x), errors relative to values up to 1; log(1 + |x|) =
  // log2 (0.72 ulp) times ln 2, both rounded; sqrt is correctly rounded
  check_close(x.exp().to_vector<float>(), map([](double v) { return std::exp(v); }), Tol::f32(8));
  check_close(x.sigmoid().to_vector<float>(), map([](double v) { return 1 / (1 + std::exp(-v)); }), Tol::f32(10));
  check_close(x.tanh().to_vector<float>(), map([](double v) { return std::tanh(v); }), Tol::f32(8).of(1));
  check_close(x.sin().to_vector<float>(), map([](double v) { return std::sin(v); }), Tol::f32(2));
  check_close(x.cos().to_vector<float>(), map([](double v) { return std::cos(v); }), Tol::f32(4).of(4.6));
  check_close(x.erf().to_vector<float>(), map([](double v) { return std::erf(v); }), Tol{1.5e-7 + 12 * 0x1p-24, 0});
  check_close(x.gelu().to_vector<float>(), map([](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }), Tol{1.5 * (1.5e-7 + 12 * 0x1p-24), Tol::f32(3).rtol});
  check_close(x.softplus().to_vector<float>(), map([](double v) { return std::log1p(std::exp(v)); }), Tol::f32(12).of(1));
  check_close(x.abs().to_vector<float>(), map([](double v) { return std::fabs(v); }), Tol::exact());
  check_close(x.floor().to_vector<float>(), map([](double v) { return std::floor(v); }), Tol::exact());
  check_close(x.ceil().to_vector<float>(), map([](double v) { return std::ceil(v); }), Tol::exact());
  check_close(x.round().to_vector<float>(), map([](double v) { return std::nearbyint(v); }), Tol::exact());
  check_close(x.abs().sqrt().to_vector<float>(), map([](double v) { return std::sqrt(std::fabs(v)); }), Tol::f32(1));
  check_close(x.abs().add(1).log().to_vector<float>(), map([](double v) { return std::log(std::fabs(v) + 1); }), Tol::f32(4));
  // atan: the reduction's quotient or reciprocal (2 roundings), the rational function's ~12
  // operations on terms below 0.66, the constant added; asin and acos add a sqrt and a quotient
  // before it, whose relative errors atan passes on scaled by x / ((1 + x^2) atan(x)) <= 1
  check_close(x.atan().to_vector<float>(), map([](double v) { return std::atan(v); }), Tol::f32(16));
  const std::vector<float> unit{-1.f, -0.999f, -0.7f, -0.2f, 0.f, 0.3f, 0.66f, 0.9f, 1.f};
  const Tensor u = Tensor::from_vector(unit);
  auto on_unit = [&](auto f) {
    std::vector<double> out;
    for (float v : unit) out.push_back(f(static_cast<double>(v)));
    return out;
  };
  check_close(u.asin().to_vector<float>(), on_unit([](double v) { return std::asin(v); }), Tol::f32(24));
  check_close(u.acos().to_vector<float>(), on_unit([](double v) { return std::acos(v); }), Tol::f32(24));
  // in float64 the approximation is good to about 2^-52
  if (!lacks(dtypes::float64)) {
    const std::vector<double> wide{-1e6, -3.0, -0.5, 0.1, 0.66, 0.7, 2.0, 2.5, 1e300};
    std::vector<double> want;
    for (double v : wide) want.push_back(std::atan(v));
    const std::vector<double> got = Tensor::from_vector(wide).atan().to_vector<double>();
    for (size_t i = 0; i < wide.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= 16 * 0x1p-53 * std::abs(want[i]));
  }
  CHECK(std::isnan(Tensor::from_vector(std::vector<float>{1.5f}).asin().item<float>()));
  CHECK(Tensor::from_vector(std::vector<float>{INFINITY}).atan().item<float>() == static_cast<float>(std::numbers::pi / 2));
}

TEST_CASE("tensor: remainder by an infinite divisor is the dividend or the divisor, as PyTorch's") {
  const Tensor a = Tensor::from_vector(std::vector<float>{-3, 3, -1, 1, 0, INFINITY, 2});
  const Tensor b = Tensor::from_vector(std::vector<float>{INFINITY, INFINITY, -INFINITY, -INFINITY, INFINITY, 2, 0});
  const std::vector<float> got = a.mod(b).to_vector<float>();
  const std::vector<float> want{INFINITY, 3, -1, -INFINITY, 0};
  for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == want[i]);
  CHECK(std::isnan(got[5]));  // inf % 2
  CHECK(std::isnan(got[6]));  // 2 % 0
}

TEST_CASE("tensor: fusion") {
  Tensor x = Tensor::from_vector(iota(64), {8, 8});
  Tensor w = Tensor::from_vector(iota(64, 0.f, 0.01f), {8, 8});
  Tensor b = Tensor::from_vector(iota(8));
  Tensor chain = x;
  for (int i = 0; i < 10; ++i) chain = i % 2 ? chain * 1.01 : chain + 0.5;
  CHECK(kernels_to_realize(chain) == 1);
  Tensor linear = (x.reshape({8, 8, 1}) * w.reshape({1, 8, 8})).sum(1) + b;
  CHECK(kernels_to_realize(linear.relu()) == 1);
  // a row sum broadcast along its row is computed inside the kernel, once per row (on a GPU, where
  // each element is a work-item, in a kernel of its own); a column sum broadcast down the rows
  // would be computed once per element, so it is realized everywhere
  CHECK(kernels_to_realize(x + x.sum(1, true)) == (on_gpu() ? 2 : 1));
  CHECK(kernels_to_realize(x + x.sum(0, true)) == 2);
  CHECK(kernels_to_realize((x + x.sum(1, true)).T()) == 2);  // the row is not the inner loop there
  CHECK(kernels_to_realize(x + (x * x.sum(1, true)).sum(0, true)) == 3);
  Tensor done = (x * 2).realize();
  CHECK(kernels_to_realize(done) == 0);
  // the same subexpression built twice is one node, computed once
  Tensor s1 = (x * 3).exp(), s2 = (x * 3).exp();
  CHECK(s1.uop() == s2.uop());
  GlobalCounters::reset();
  (s1 + s2).realize();
  CHECK(GlobalCounters::kernel_count == 1);
  // realizing a tensor realizes the node for everyone who holds it
  Tensor shared = x * 5;
  Tensor user = shared + 1;
  shared.realize();
  CHECK(kernels_to_realize(user) == 1);
}

TEST_CASE("tensor: sums that can be counted are not looped (arange is O(n))") {
  auto has_reduce = [](const Tensor& t) {
    for (const auto& k : schedule::create_schedule({t.uop()}))
      for (const UOp& u : toposort(k.ast))
        if (u.op() == Ops::REDUCE) return true;
    return false;
  };
  Tensor big = Tensor::arange(100000);
  CHECK_FALSE(has_reduce(big));
  auto v = big.to_vector<int32_t>();
  CHECK(v[0] == 0);
  CHECK(v[99999] == 99999);
  CHECK(std::accumulate(v.begin(), v.end(), int64_t{0}) == int64_t{99999} * 100000 / 2);
  // a one-hot selection: sum over r of where(r == 2, x[r], 0) reads x[2] directly
  Tensor x = Tensor::from_vector(iota(5, 10.f));
  Tensor sel = (Tensor::arange(5) == 2).where(x, 0.f).sum();
  CHECK_FALSE(has_reduce(sel));
  CHECK(sel.item<float>() == 12.f);
  // a real reduction stays a loop
  CHECK(has_reduce(x.sum()));
}

TEST_CASE("tensor: printing is NumPy-like") {
  std::ostringstream os;
  os << Tensor::from_vector(std::vector<float>{1, 2.5f, 3, 4}, {2, 2}, "CPU");
  CHECK(os.str() == "Tensor([[1. 2.5]\n [3. 4.]], dtype=float32, device=CPU)");
  std::ostringstream scalar;
  scalar << Tensor(7);
  CHECK(scalar.str() == "Tensor(7, dtype=int32, device=" + Device::default_device() + ")");
}

TEST_CASE("tensor: devices") {
  Tensor a = Tensor::ones({2}, dtypes::float32, "CPU");
  CHECK(a.to("cpu").uop() == a.uop());
  const std::vector<std::string> here = Device::list();
  REQUIRE(!here.empty());
  CHECK(here[0] == "CPU");
  CHECK_THROWS_AS(a.to("TPU"), DeviceError);
  CHECK_THROWS_AS(a.to("CL:x"), DeviceError);
  CHECK(Device::canonicalize("cl:0") == "CL");
  CHECK(Device::canonicalize("cuda:1") == "CUDA:1");
  for (const std::string& kind : Device::known()) {
    INFO("device ", kind);
    Tensor there = Tensor(a * 3).to(kind);
    CHECK(there.device() == kind);
    if (std::find(here.begin(), here.end(), kind) != here.end()) {
      CHECK(there.to_vector<float>() == std::vector<float>{3, 3});
      continue;
    }
    // a device tinyt knows but cannot run here fails when the work would run, saying why
    try {
      there.realize();
      FAIL("realizing on ", kind, " should have thrown");
    } catch (const DeviceError& e) {
      CHECK(std::string(e.what()).find("tried") != std::string::npos);  // the libraries it tried
    }
  }
}

TEST_CASE("tensor: CPU:1 is a device of its own, with its own memory, copies to and from it, no op across") {
  CHECK(Device::canonicalize("cpu:1") == "CPU:1");
  CHECK(Device::canonicalize("CPU:0") == "CPU");
  const Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, "CPU").realize();
  const int64_t cpu_before = GlobalCounters::mem_used;
  GlobalCounters::reset();
  const Tensor b = a.to("CPU:1").realize();
  CHECK(b.device() == "CPU:1");
  CHECK(GlobalCounters::kernel_count == 1);  // the copy
  CHECK(GlobalCounters::mem_used == cpu_before + 24);
  const Tensor c = (b * 2 + 1).sum(1);
  CHECK(c.device() == "CPU:1");
  CHECK(c.to_vector<float>() == std::vector<float>{15, 33});
  CHECK(c.to("CPU").to_vector<float>() == std::vector<float>{15, 33});
  CHECK(tinyt_test::message_of<DeviceError>([&] { (a + b).realize(); }).find("CPU and CPU:1") != std::string::npos);
  CHECK(b.to("CPU:2").to("CPU:1").to_vector<float>() == a.to_vector<float>());
}

TEST_CASE("tensor: a device keeps freed memory for the next allocation of its size (CPU, CL)") {
  for (const char* name : {"CPU", "CL"}) {
    if (!tinyt_test::device_available(name)) {
      MESSAGE("skipped part: ", name, " is not available here");
      continue;
    }
    INFO(name);
    auto* memory = dynamic_cast<backend::LruAllocator*>(&backend::device(name).allocator());
    REQUIRE(memory != nullptr);
    memory->release_cache();
    void* first = memory->alloc(1000);
    memory->free(first, 1000);
    CHECK(memory->cached_bytes() >= 1000);
    void* other_size = memory->alloc(5000);  // another size is a block of its own
    CHECK(other_size != first);
    void* again = memory->alloc(1000);
    CHECK(again == first);
    memory->free(again, 1000);
    memory->free(other_size, 5000);
    memory->release_cache();
    CHECK(memory->cached_bytes() == 0);
  }
}

TEST_CASE("tensor: a copy between devices is one scheduled copy, and ops across devices throw") {
  const std::vector<std::string> here = Device::list();
  const std::string other = here.size() > 1 ? here[1] : "CPU";  // CL where PoCL is installed
  INFO("other device ", other);
  Tensor a = Tensor::from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {2, 3}, "CPU");
  GlobalCounters::reset();
  Tensor moved = a.T().to(other).realize();  // a transposed view: made contiguous on the CPU, then copied
  CHECK(GlobalCounters::kernel_count == (other == "CPU" ? 1 : 2));
  CHECK(moved.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  Tensor back = Tensor(moved * 2).to("CPU");
  CHECK(back.device() == "CPU");
  CHECK(back.to_vector<float>() == std::vector<float>{0, 6, 2, 8, 4, 10});
  if (other != "CPU") {
    try {
      Tensor mixed = moved + a.T();  // built when the expression becomes a Tensor
      FAIL("an op across devices should have thrown");
    } catch (const DeviceError& e) {
      const std::string what = e.what();
      CHECK(what.find(other) != std::string::npos);
      CHECK(what.find("CPU") != std::string::npos);
    }
  }
}

TEST_CASE("tensor: index math past 2^31 elements is rendered in 64 bits") {
  // scheduled and rendered, not run: 3e9 elements would need 12 GB
  Tensor big = Tensor::empty({3'000'000'000LL});
  Tensor doubled = big * 2;
  auto kernels = schedule::create_schedule({doubled.uop()});
  REQUIRE(kernels.size() == 1);
  const std::string src = renderer::render_c(codegen::linearize(kernels[0].ast, "k"));
  CHECK(src.find("long long ridx0") != std::string::npos);
  Tensor small = Tensor::empty({1000}) * 2;
  const std::string small_src =
      renderer::render_c(codegen::linearize(schedule::create_schedule({small.uop()})[0].ast, "k"));
  CHECK(small_src.find("int ridx0") != std::string::npos);
}

TEST_CASE("tensor: ops that are unsafe on zeros stay correct under a pad") {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 4});
  // the padded region is 0, not 1/0, log(0) or exp(0)
  CHECK(x.reciprocal().pad({{1, 1}}).to_vector<float>() == std::vector<float>{0, 1, 0.5f, 0.25f, 0});
  CHECK(x.log().pad({{1, 0}}).to_vector<float>()[0] == 0.f);
  CHECK(x.exp().pad({{0, 1}}).to_vector<float>()[3] == 0.f);
  // integer division whose divisor reads 0 in the padded region does not trap
  Tensor a = Tensor::from_vector(std::vector<int32_t>{7, 8, 9}), b = Tensor::from_vector(std::vector<int32_t>{2, 4, 3});
  CHECK(a.floordiv(b).pad({{2, 2}}).to_vector<int32_t>() == std::vector<int32_t>{0, 0, 3, 2, 3, 0, 0});
  Tensor padded_b = b.pad({{1, 0}});  // a 0 divisor where the pad is
  CHECK_NOTHROW(a.pad({{1, 0}}).floordiv(padded_b).realize());
}

TEST_CASE("tensor: from_blob, the _like constructors, and the remaining movement ops") {
  const int16_t raw[6] = {1, -2, 3, -4, 5, -6};
  Tensor b = Tensor::from_blob(raw, {2, 3}, dtypes::int16);
  CHECK(b.dtype() == dtypes::int16);
  CHECK(b.to_vector<int16_t>() == std::vector<int16_t>{1, -2, 3, -4, 5, -6});
  CHECK(Tensor::zeros_like(b).to_vector<int16_t>() == std::vector<int16_t>(6, 0));
  CHECK(Tensor::ones_like(b).shape() == Shape{2, 3});
  CHECK(Tensor::full_like(b, 7).to_vector<int16_t>() == std::vector<int16_t>(6, 7));
  CHECK_WIDE(Tensor::full({2}, 1.5, dtypes::float64).to_vector<double>() == std::vector<double>{1.5, 1.5});
  CHECK_THROWS_AS(Tensor::from_blob(nullptr, {2}, dtypes::float32), Error);
  CHECK_THROWS_AS(Tensor::full({-1}, 0), ShapeError);
  Tensor a = Tensor::from_vector(iota(24), {2, 3, 4});
  CHECK(a.view({6, 4}).shape() == Shape{6, 4});
  CHECK(a.unflatten(2, {2, 2}).shape() == Shape{2, 3, 2, 2});
  CHECK(a.flatten(1).shape() == Shape{2, 12});
  CHECK(a.flatten(0, 1).shape() == Shape{6, 4});
  CHECK(a.reshape({1, 2, 1, 12}).squeeze(2).shape() == Shape{1, 2, 12});
  CHECK(a.reshape({1, 2, 1, 12}).squeeze().shape() == Shape{2, 12});
  CHECK(a.squeeze(0).shape() == Shape{2, 3, 4});  // not size 1: unchanged
  CHECK(a.transpose(0, 2).shape() == Shape{4, 3, 2});
  CHECK(a.transpose(0, 2).to_vector<float>()[1] == 12.f);
  CHECK(a.permute({-1, 0, 1}).shape() == Shape{4, 2, 3});
  CHECK(a.detach().to_vector<float>() == iota(24));
  // contiguous realizes a view into memory of its own layout: one copy kernel
  Tensor t = a.transpose(0, 2).contiguous();
  GlobalCounters::reset();
  t.realize();
  CHECK(GlobalCounters::kernel_count == 1);
  CHECK(t.to_vector<float>()[1] == 12.f);
  CHECK_THROWS_AS(a.squeeze(3), IndexError);
  CHECK_THROWS_AS(a.unflatten(2, {3, 2}), ShapeError);
}

TEST_CASE("tensor: intermediates of one schedule share memory once their readers are done") {
  Tensor x = Tensor::from_vector(iota(16), {4, 4});
  // column reductions broadcast down the rows: each is realized (a row reduction broadcast along
  // its row would be computed inside the kernel that reads it)
  Tensor s1 = x.sum(0, true);                 // read by s2 only
  Tensor s2 = (x + s1).max(0, true);          // read by s3 only
  Tensor s3 = (x * s2).sum(0, true);          // same size as s1: may reuse its memory
  Tensor out = x + s3;
  auto kernels = schedule::create_schedule({out.uop()});
  REQUIRE(kernels.size() == 4);
  schedule::plan_memory(kernels, {out.uop()}, [](const UOp&) { return false; });
  CHECK(kernels[0].temporary);
  CHECK(graph::buffer_of(kernels[0].buffers[0]) == graph::buffer_of(kernels[2].buffers[0]));
  CHECK_FALSE(kernels[3].temporary);
  // and the values through the normal path, against loops
  std::vector<float> want(16);
  for (int j = 0; j < 4; ++j) {
    float r1 = 0, r2 = -1e30f, r3 = 0;
    for (int i = 0; i < 4; ++i) r1 += static_cast<float>(i * 4 + j);
    for (int i = 0; i < 4; ++i) r2 = std::max(r2, static_cast<float>(i * 4 + j) + r1);
    for (int i = 0; i < 4; ++i) r3 += static_cast<float>(i * 4 + j) * r2;
    for (int i = 0; i < 4; ++i) want[static_cast<size_t>(i * 4 + j)] = static_cast<float>(i * 4 + j) + r3;
  }
  check_close(out.to_vector<float>(), want, Tol::exact());
}

TEST_CASE("tensor: a padded window's index needs no modulo under its mask") {
  Tensor x = Tensor::ones({1, 2, 7, 7}).contiguous().realize(), w = Tensor::ones({2, 2, 3, 3}).contiguous().realize();
  // a padded pool reads its input under a mask: the mask's bounds fold the windows' modulos away
  auto kernels = schedule::create_schedule({x.avg_pool2d(3, 1, 1, 1).uop()});
  REQUIRE(kernels.size() == 1);
  std::string src = renderer::render_c(codegen::linearize(kernels[0].ast, "pool"));
  INFO(src);
  CHECK(src.find('%') == std::string::npos);
  // the masked load is not selected again by the same mask
  CHECK(src.find(": 0.0f) *") == std::string::npos);
  // a padded convolution copies its input padded, then reads the copy without masks or modulos
  kernels = schedule::create_schedule({x.conv2d(w, {}, 1, 1, 1, 1).uop()});
  REQUIRE(kernels.size() == 2);
  src = renderer::render_c(codegen::linearize(kernels[1].ast, "conv"));
  INFO(src);
  CHECK(src.find('%') == std::string::npos);
  CHECK(src.find('?') == std::string::npos);
}

TEST_CASE("tensor: an elementwise value broadcast into a reduction is computed once, not per use") {
  // y[i][j] = sum_k sigmoid(x[i][k]) * w[j][k]: sigmoid(x) is broadcast over j; recomputing it
  // inside the reduction would cost 16x the work, so it is realized first (tinygrad's
  // realize-before-expand)
  const Tensor x = Tensor::from_vector(tinyt_test::values(32, 3), {4, 8});
  const Tensor w = Tensor::from_vector(tinyt_test::values(128, 4), {16, 8});
  auto broadcast_dot = [&](const Tensor& a) { return (a.reshape({4, 1, 8}).expand({4, 16, 8}) * w.reshape({1, 16, 8})).sum(2); };
  const Tensor y = broadcast_dot(x.sigmoid());
  CHECK(schedule::create_schedule({y.uop()}).size() == 2);
  const auto xv = x.to_vector<float>(), wv = w.to_vector<float>();
  std::vector<double> want(64, 0.0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 16; ++j)
      for (int k = 0; k < 8; ++k) want[size_t(i * 16 + j)] += wv[size_t(j * 8 + k)] / (1 + std::exp(-double(xv[size_t(i * 8 + k)])));
  tinyt_test::check_close(y.to_vector<float>(), want, Tol::f32(12).of(16));  // 8 products of |w| <= 2 and sigmoid <= 1 (10 roundings each), summed
  // two inputs: realized too; memory read directly or a cheap op of one input is not copied first
  const Tensor z = Tensor::from_vector(tinyt_test::values(32, 5), {4, 8});
  CHECK(schedule::create_schedule({broadcast_dot(x * z).uop()}).size() == 2);
  CHECK(schedule::create_schedule({broadcast_dot(x).uop()}).size() == 1);
  CHECK(schedule::create_schedule({broadcast_dot(x * 2).uop()}).size() == 1);
  // a broadcast into elementwise ops only stays fused
  const Tensor fused = x.sigmoid().reshape({4, 1, 8}).expand({4, 16, 8}) * w.reshape({1, 16, 8});
  CHECK(schedule::create_schedule({fused.uop()}).size() == 1);
}

TEST_CASE("version: tinyt::version() spells the TINYT_VERSION_* macros, as CMake read them") {
  const std::string spelled = std::to_string(TINYT_VERSION_MAJOR) + "." + std::to_string(TINYT_VERSION_MINOR) + "." +
                              std::to_string(TINYT_VERSION_PATCH);
  CHECK(tinyt::version() == spelled);
  CHECK(tinyt::version() == TINYT_TEST_PROJECT_VERSION);  // the project(VERSION) CMake parsed from version.hpp
}
