// Every elementwise op of API.md against the C library in double precision, on contiguous,
// permuted, flipped, sliced, expanded and padded inputs, 0-d and size-0 tensors.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;
using namespace tinyt_test;

namespace {
const std::vector<float> samples{-3.5f, -2.f, -1.25f, -0.5f, -0.f, 0.f, 0.3f, 0.5f, 1.f, 2.5f, 4.f, 7.75f};


// the input as several layouts holding the same values in the same logical order
std::vector<std::pair<std::string, Tensor>> layouts(const std::vector<float>& v) {
  const auto n = static_cast<int64_t>(v.size());
  std::vector<float> reversed(v.rbegin(), v.rend());
  std::vector<float> padded(v);
  padded.insert(padded.begin(), 99.f), padded.push_back(-99.f);
  std::vector<float> transposed(v.size());  // stored (n/2, 2) transposed
  for (int64_t i = 0; i < n; ++i) transposed[static_cast<size_t>((i % 2) * (n / 2) + i / 2)] = v[static_cast<size_t>(i)];
  return {
      {"contiguous", Tensor::from_vector(v)},
      {"flipped", Tensor::from_vector(reversed).flip(0)},
      {"sliced", Tensor::from_vector(padded).shrink({{1, n + 1}})},
      {"permuted", Tensor::from_vector(transposed, {2, n / 2}).T().reshape({n})},
  };
}

void check_unary(const char* name, const std::function<Tensor(const Tensor&)>& op, double (*ref)(double),
                 Tol tol) {
  std::vector<double> want;
  for (float x : samples) want.push_back(ref(static_cast<double>(x)));
  for (const auto& [layout_name, t] : layouts(samples)) {
    const std::string& layout = layout_name;  // INFO's lambda cannot capture a binding in clang 14
    INFO(name, " on a ", layout, " input");
    check_close(op(t).to_vector<float>(), want, tol);
  }
}

double relu(double x) { return x > 0 ? x : 0; }
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }
}  // namespace

// Tolerances: exact where every step is (sign, rounding, clamps, relu); n * 2^-24 for n correctly
// rounded float32 steps; exp(x) = exp2(x log2 e) turns the product's rounding (|x log2 e| <= 11.2
// here) into 16 roundings of the result, plus exp2's 0.91 ulp (the decompositions' measured
// bounds: exp2 0.91, log2 0.72, sin 0.51 ulp), and the sigmoid family inherits it at up to twice
// the argument; cos(x) = sin(pi/2 - x) errs relative to |pi/2 - x| (<= 9.3) and tan = sin / cos
// divides that by cos(7.75) = 0.058; log(1 + e) (softplus, elu's exp - 1) errs relative to 1, not
// to the small result; tanh's exp side errs by a few roundings of 1 (mish: of |x|); erf is Abramowitz and
// Stegun 7.1.26 (absolute error 1.5e-7) in about 12 float operations of values up to 1.
TEST_CASE("elementwise: unary math functions") {
  check_unary("neg", [](const Tensor& t) { return t.neg(); }, [](double x) { return -x; }, Tol::exact());
  check_unary("abs", [](const Tensor& t) { return t.abs(); }, [](double x) { return std::fabs(x); }, Tol::exact());
  check_unary("sign", [](const Tensor& t) { return t.sign(); }, [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }, Tol::exact());
  check_unary("exp", [](const Tensor& t) { return t.exp(); }, [](double x) { return std::exp(x); }, Tol::f32(18));
  // (WGSL's own exp2 errs by up to 3 + 2|x| ulp, |x| <= 11.2 here)
  check_unary("exp2", [](const Tensor& t) { return t.exp2(); }, [](double x) { return std::exp2(x); }, Tol::f32(device_math() ? 26 : 2));
  check_unary("log", [](const Tensor& t) { return t.log(); }, [](double x) { return std::log(x); }, Tol::f32(4));
  check_unary("log2", [](const Tensor& t) { return t.log2(); }, [](double x) { return std::log2(x); }, Tol::f32(2));
  check_unary("sqrt", [](const Tensor& t) { return t.sqrt(); }, [](double x) { return std::sqrt(x); }, Tol::f32(1));
  check_unary("rsqrt", [](const Tensor& t) { return t.rsqrt(); }, [](double x) { return 1 / std::sqrt(x); }, Tol::f32(2));
  check_unary("reciprocal", [](const Tensor& t) { return t.reciprocal(); }, [](double x) { return 1 / x; }, Tol::f32(1));
  check_unary("square", [](const Tensor& t) { return t.square(); }, [](double x) { return x * x; }, Tol::f32(1));
  check_unary("sin", [](const Tensor& t) { return t.sin(); }, [](double x) { return std::sin(x); }, Tol::f32(2));
  check_unary("cos", [](const Tensor& t) { return t.cos(); }, [](double x) { return std::cos(x); }, Tol::f32(4).of(9.3));
  check_unary("tan", [](const Tensor& t) { return t.tan(); }, [](double x) { return std::tan(x); }, Tol::f32(100));
  check_unary("trunc", [](const Tensor& t) { return t.trunc(); }, [](double x) { return std::trunc(x); }, Tol::exact());
  check_unary("floor", [](const Tensor& t) { return t.floor(); }, [](double x) { return std::floor(x); }, Tol::exact());
  check_unary("ceil", [](const Tensor& t) { return t.ceil(); }, [](double x) { return std::ceil(x); }, Tol::exact());
  check_unary("round", [](const Tensor& t) { return t.round(); }, [](double x) { return std::nearbyint(x); }, Tol::exact());
  check_unary("relu", [](const Tensor& t) { return t.relu(); }, relu, Tol::exact());
  check_unary("relu6", [](const Tensor& t) { return t.relu6(); }, [](double x) { return std::min(relu(x), 6.0); }, Tol::exact());
  check_unary("sigmoid", [](const Tensor& t) { return t.sigmoid(); }, sigmoid, Tol::f32(20));
  check_unary("logsigmoid", [](const Tensor& t) { return t.logsigmoid(); }, [](double x) { return -softplus(-x); }, Tol::f32(20).of(1));
  check_unary("tanh", [](const Tensor& t) { return t.tanh(); }, [](double x) { return std::tanh(x); }, Tol::f32(8).of(1));
  check_unary("gelu", [](const Tensor& t) { return t.gelu(); }, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, Tol{3.9 * (1.5e-7 + 12 * 0x1p-24), Tol::f32(3).rtol});
  check_unary("quick_gelu", [](const Tensor& t) { return t.quick_gelu(); }, [](double x) { return x * sigmoid(1.702 * x); }, Tol::f32(30));
  check_unary("silu", [](const Tensor& t) { return t.silu(); }, [](double x) { return x * sigmoid(x); }, Tol::f32(22));
  check_unary("elu", [](const Tensor& t) { return t.elu(0.7); }, [](double x) { return x > 0 ? x : 0.7 * (std::exp(x) - 1); }, Tol::f32(16).of(1));
  check_unary("leaky_relu", [](const Tensor& t) { return t.leaky_relu(0.1); }, [](double x) { return x < 0 ? 0.1 * x : x; }, Tol::f32(2));
  check_unary("softplus", [](const Tensor& t) { return t.softplus(); }, softplus, Tol::f32(20).of(1));
  check_unary("mish", [](const Tensor& t) { return t.mish(); }, [](double x) { return x * std::tanh(softplus(x)); }, Tol::f32(16).of(7.75));
  check_unary("hardsigmoid", [](const Tensor& t) { return t.hardsigmoid(); }, [](double x) { return std::clamp(x + 3, 0.0, 6.0) / 6; }, Tol::f32(2));
  check_unary("hardswish", [](const Tensor& t) { return t.hardswish(); }, [](double x) { return x * std::clamp(x + 3, 0.0, 6.0) / 6; }, Tol::f32(3));
  check_unary("hardtanh", [](const Tensor& t) { return t.hardtanh(); }, [](double x) { return std::clamp(x, -1.0, 1.0); }, Tol::exact());
  check_unary("erf", [](const Tensor& t) { return t.erf(); }, [](double x) { return std::erf(x); }, Tol{1.5e-7 + 12 * 0x1p-24, 0});
  check_unary("clip", [](const Tensor& t) { return t.clip(-1.f, 2.f); }, [](double x) { return std::clamp(x, -1.0, 2.0); }, Tol::exact());
}

// Where softplus is tiny (x far below 0; logsigmoid far above), log(1 + e) rounds 1 + e and keeps
// nothing of e: softplus(-30) came out 0, not 9.36e-14. Through log1p it keeps e's digits: what is
// left is exp's error, |x| roundings of the result (as above), and log1p's few.
TEST_CASE("elementwise: softplus and logsigmoid keep their digits where the result is tiny") {
  const std::vector<float> far = {-8.f, -17.f, -25.f, -30.f, -45.f, -60.f, -80.f};
  std::vector<float> flipped;
  for (float x : far) flipped.push_back(-x);
  const std::vector<float> soft = Tensor::from_vector(far).softplus().to_vector<float>();
  const std::vector<float> logsig = Tensor::from_vector(flipped).logsigmoid().to_vector<float>();
  for (size_t i = 0; i < far.size(); ++i) {
    // (WGSL's own exp2 errs by up to 3 + 2|x log2 e| ulp, and its log near 1 by 2^-21 absolute:
    // where 1 + e does not round to 1, the result is only that good there)
    const double want = std::log1p(std::exp(static_cast<double>(far[i])));
    const double rtol = ((device_math() ? 3.9 : 1.0) * std::fabs(far[i]) + 11) * 0x1p-24 + (device_math() ? 0x1p-21 / want : 0.0);
    INFO("x = ", far[i], ": softplus ", soft[i], ", -logsigmoid(-x) ", -logsig[i], ", want ", want);
    CHECK(std::fabs(soft[i] - want) <= rtol * want);
    CHECK(std::fabs(-logsig[i] - want) <= rtol * want);
  }
}

// tanh was 2 sigmoid(2x) - 1, which cancels near 0: tanh(1e-6) came out 7% off, and mish, x tanh(
// softplus(x)), lost every digit below x = -17 (ONNX's test_mish failed by that on one CI machine).
// Near 0 it is now a rational function good to a few roundings relative to the result.
TEST_CASE("elementwise: tanh and mish keep their digits near 0") {
  const std::vector<float> near = {1e-30f, -1e-7f, 1e-6f, -3e-4f, 0.01f, -0.3f, 0.6f, -0.7f};
  const std::vector<float> t = Tensor::from_vector(near).tanh().to_vector<float>();
  for (size_t i = 0; i < near.size(); ++i) {
    const double want = std::tanh(static_cast<double>(near[i]));
    INFO("tanh(", near[i], ") = ", t[i], ", want ", want);
    CHECK(std::fabs(t[i] - want) <= 6 * 0x1p-24 * std::fabs(want));
  }
  const std::vector<float> far = {-17.f, -30.f, -60.f};  // where 1 + exp(x) rounds to 1
  const std::vector<float> m = Tensor::from_vector(far).mish().to_vector<float>();
  for (size_t i = 0; i < far.size(); ++i) {
    const double x = far[i], want = x * std::tanh(std::log1p(std::exp(x)));
    const double rtol = ((device_math() ? 3.9 : 1.0) * std::fabs(x) + 20) * 0x1p-24;
    INFO("mish(", x, ") = ", m[i], ", want ", want);
    CHECK(std::fabs(m[i] - want) <= rtol * std::fabs(want));
  }
}

// The gradients of sigmoid, tanh and softplus where the old forms overflowed (exp(-x) = inf at
// x = -90: the gradient was inf * 0 = NaN) and at the kink softplus's stable form has at 0
// (|x| and max(x, 0) took different sides there: softplus'(0) came out 0, not 0.5).
TEST_CASE("elementwise: sigmoid, tanh and softplus gradients far out and at 0") {
  const std::vector<float> xs = {-90.f, -30.f, -1e-3f, 0.f, 1e-3f, 2.f, 30.f, 90.f};
  const auto grad_of = [&](const std::function<Tensor(const Tensor&)>& op) {
    Tensor x = Tensor::from_vector(xs);
    x.requires_grad(true);
    op(x).sum().backward();
    return x.grad().to_vector<float>();
  };
  const std::vector<float> dsig = grad_of([](const Tensor& x) { return x.sigmoid(); });
  const std::vector<float> dtanh = grad_of([](const Tensor& x) { return x.tanh(); });
  const std::vector<float> dsoft = grad_of([](const Tensor& x) { return x.softplus(); });
  for (size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i], e = std::exp(-std::fabs(x)), s = x < 0 ? e / (1 + e) : 1 / (1 + e);
    const double want_sig = e / ((1 + e) * (1 + e)), want_tanh = 4 * e * e / ((1 + e * e) * (1 + e * e));
    // (exp's error: |x| log2 e roundings of the result, times two where it is squared; and a
    // device may flush the denormal results at |x| = 90 to 0)
    const double rtol = ((device_math() ? 3.9 : 1.0) * 2 * std::fabs(x) + 16) * 0x1p-24;
    INFO("x = ", x, ": sigmoid' ", dsig[i], " (want ", want_sig, "), tanh' ", dtanh[i], " (want ", want_tanh, "), softplus' ", dsoft[i], " (want ", s, ")");
    CHECK(std::fabs(dsig[i] - want_sig) <= rtol * want_sig + 0x1p-126);
    CHECK(std::fabs(dtanh[i] - want_tanh) <= 2 * rtol * want_tanh + 0x1p-126);
    CHECK(std::fabs(dsoft[i] - s) <= rtol * s + 0x1p-126);
  }
}

TEST_CASE("elementwise: predicates") {
  Tensor x = Tensor::from_vector(std::vector<float>{1.f, NAN, INFINITY, -INFINITY, 0.f});
  CHECK(x.isnan().to_vector<bool>() == std::vector<bool>{false, true, false, false, false});
  CHECK(x.isinf().to_vector<bool>() == std::vector<bool>{false, false, true, true, false});
  CHECK(x.isfinite().to_vector<bool>() == std::vector<bool>{true, false, false, false, true});
  CHECK(std::isnan(x.sign().to_vector<float>()[1]));
  CHECK(Tensor::from_vector(std::vector<int32_t>{-4, 0, 9}).sign().to_vector<int32_t>() == std::vector<int32_t>{-1, 0, 1});
}

TEST_CASE("elementwise: binary ops with broadcasting") {
  std::vector<float> a{-2.f, -0.5f, 0.f, 1.5f, 3.f, 4.f};
  std::vector<float> b{0.5f, 2.f, 3.f};
  Tensor ta = Tensor::from_vector(a, {2, 3}), tb = Tensor::from_vector(b);
  auto ref = [&](double (*f)(double, double)) {
    std::vector<double> out;
    for (size_t i = 0; i < 6; ++i) out.push_back(f(a[i], b[i % 3]));
    return out;
  };
  // a and b are on a grid of 1/2: sums, products, extremes exact; div and pow round
  check_close(ta.add(tb).to_vector<float>(), ref([](double x, double y) { return x + y; }), Tol::exact());
  check_close(ta.sub(tb).to_vector<float>(), ref([](double x, double y) { return x - y; }), Tol::exact());
  check_close(ta.mul(tb).to_vector<float>(), ref([](double x, double y) { return x * y; }), Tol::exact());
  check_close(ta.div(tb).to_vector<float>(), ref([](double x, double y) { return x / y; }), Tol::f32(1));
  check_close(ta.maximum(tb).to_vector<float>(), ref([](double x, double y) { return std::max(x, y); }), Tol::exact());
  check_close(ta.minimum(tb).to_vector<float>(), ref([](double x, double y) { return std::min(x, y); }), Tol::exact());
  check_close(ta.abs().pow(tb).to_vector<float>(), ref([](double x, double y) { return std::pow(std::fabs(x), y); }), Tol::f32(12));
  check_close(ta.lerp(tb, 0.25f).to_vector<float>(), ref([](double x, double y) { return x + (y - x) * 0.25; }), Tol::exact());
  check_close(ta.masked_fill(ta.lt(tb), 9.f).to_vector<float>(), ref([](double x, double y) { return x < y ? 9.0 : x; }), Tol::exact());
  check_close(ta.lt(tb).where(ta, tb).to_vector<float>(), ref([](double x, double y) { return x < y ? x : y; }), Tol::exact());
  // comparisons
  CHECK(ta.le(tb).to_vector<bool>() == std::vector<bool>{true, true, true, false, false, false});
  CHECK(ta.gt(tb).to_vector<bool>() == std::vector<bool>{false, false, false, true, true, true});
  CHECK(ta.ge(1.5f).to_vector<bool>() == std::vector<bool>{false, false, false, true, true, true});
  CHECK(ta.eq(tb).to_vector<bool>() == std::vector<bool>{false, false, false, false, false, false});
  CHECK(ta.ne(0.f).to_vector<bool>() == std::vector<bool>{true, true, false, true, true, true});
  // pow keeps PyTorch's signs: a negative base with an integral exponent
  check_close(Tensor::from_vector(std::vector<float>{-2.f}).pow(3.f).to_vector<float>(), {-8.0}, Tol::exact());
  CHECK(Tensor::from_vector(std::vector<int32_t>{2, 3}).pow(Tensor::from_vector(std::vector<int32_t>{10, 2})).to_vector<int32_t>() ==
        std::vector<int32_t>{1024, 9});
  // NaN compares false everywhere
  Tensor nan = Tensor::from_vector(std::vector<float>{NAN});
  CHECK(nan.le(1.f).item<bool>() == false);
  CHECK(nan.ge(1.f).item<bool>() == false);
}

TEST_CASE("elementwise: logical and bitwise ops") {
  Tensor p = Tensor::from_vector(std::vector<bool>{true, true, false, false});
  Tensor q = Tensor::from_vector(std::vector<bool>{true, false, true, false});
  CHECK(p.logical_and(q).to_vector<bool>() == std::vector<bool>{true, false, false, false});
  CHECK(p.logical_or(q).to_vector<bool>() == std::vector<bool>{true, true, true, false});
  CHECK(p.logical_xor(q).to_vector<bool>() == std::vector<bool>{false, true, true, false});
  CHECK(p.logical_not().to_vector<bool>() == std::vector<bool>{false, false, true, true});
  CHECK((!p).to_vector<bool>() == std::vector<bool>{false, false, true, true});
  Tensor a = Tensor::from_vector(std::vector<int32_t>{12, -7, 255, 0});
  Tensor b = Tensor::from_vector(std::vector<int32_t>{10, 3, 15, 1});
  CHECK(a.bitwise_and(b).to_vector<int32_t>() == std::vector<int32_t>{12 & 10, -7 & 3, 255 & 15, 0});
  CHECK((a | b).to_vector<int32_t>() == std::vector<int32_t>{12 | 10, -7 | 3, 255 | 15, 1});
  CHECK((a ^ b).to_vector<int32_t>() == std::vector<int32_t>{12 ^ 10, -7 ^ 3, 255 ^ 15, 1});
  CHECK((~a).to_vector<int32_t>() == std::vector<int32_t>{~12, ~-7, ~255, ~0});
  CHECK((a << 2).to_vector<int32_t>() == std::vector<int32_t>{48, -28, 1020, 0});
  CHECK((a >> 1).to_vector<int32_t>() == std::vector<int32_t>{6, -4, 127, 0});
  CHECK_THROWS_AS(Tensor::ones({2}).bitwise_and(Tensor::ones({2})), DTypeError);
}

TEST_CASE("elementwise: a shift by the width or more, or by a negative amount, shifts every bit out") {
  // PyTorch's rule (<< gives 0, >> gives 0 or -1); C and LLVM leave such shifts undefined
  const Tensor x = Tensor::from_vector(std::vector<int8_t>{1, -1, 3, -128, 64, 100});
  const Tensor by = Tensor::from_vector(std::vector<int8_t>{0, 7, 8, -1, 1, 9});
  CHECK((x << by).to_vector<int8_t>() == std::vector<int8_t>{1, -128, 0, 0, -128, 0});
  CHECK((x >> by).to_vector<int8_t>() == std::vector<int8_t>{1, -1, 0, -1, 32, 0});
  CHECK((x << 3).to_vector<int8_t>() == std::vector<int8_t>{8, -8, 24, 0, 0, 32});  // wraps
  CHECK((x << 8).to_vector<int8_t>() == std::vector<int8_t>{0, 0, 0, 0, 0, 0});
  CHECK((x >> 100).to_vector<int8_t>() == std::vector<int8_t>{0, -1, 0, -1, 0, 0});
  const Tensor u = Tensor::from_vector(std::vector<uint32_t>{0x80000001u, 5, 7});
  const Tensor ub = Tensor::from_vector(std::vector<uint32_t>{32, 31, 0xffffffffu});
  CHECK((u << ub).to_vector<uint32_t>() == std::vector<uint32_t>{0, 0x80000000u, 0});
  CHECK((u >> ub).to_vector<uint32_t>() == std::vector<uint32_t>{0, 0, 0});
  if (!lacks(dtypes::int64)) {
    const Tensor l = Tensor::from_vector(std::vector<int64_t>{-5, 5});
    CHECK((l >> 64).to_vector<int64_t>() == std::vector<int64_t>{-1, 0});
    CHECK((l << -1).to_vector<int64_t>() == std::vector<int64_t>{0, 0});
  }
  const Tensor b = Tensor::from_vector(std::vector<bool>{true, true});
  CHECK((b << Tensor::from_vector(std::vector<bool>{false, true})).to_vector<bool>() == std::vector<bool>{true, false});
}

TEST_CASE("elementwise: integer pow is exact and wraps, and a negative exponent truncates 1 / x^n") {
  // as PyTorch (not through float64, which is not exact past 2^53 and undefined past the dtype)
  const Tensor u = Tensor::from_vector(std::vector<uint16_t>{65535, 2, 3, 0, 1, 7});
  const Tensor ue = Tensor::from_vector(std::vector<uint16_t>{2, 16, 15, 0, 100, 5});
  CHECK(u.pow(ue).to_vector<uint16_t>() == std::vector<uint16_t>{1, 0, 62059, 1, 1, 16807});
  CHECK(u.pow(2).to_vector<uint16_t>() == std::vector<uint16_t>{1, 4, 9, 0, 1, 49});
  const Tensor i = Tensor::from_vector(std::vector<int32_t>{2, -1, -1, 1, 0, 3, -2});
  const Tensor ie = Tensor::from_vector(std::vector<int32_t>{40, -3, -4, -7, -1, 19, 31});
  CHECK(i.pow(ie).to_vector<int32_t>() == std::vector<int32_t>{0, -1, 1, 1, 0, 1162261467, INT32_MIN});
  CHECK(i.pow(-1).to_vector<int32_t>() == std::vector<int32_t>{0, -1, -1, 1, 0, 0, 0});
  CHECK(i.pow(0).to_vector<int32_t>() == std::vector<int32_t>{1, 1, 1, 1, 1, 1, 1});
  if (!lacks(dtypes::int64)) {
    const Tensor three = Tensor::from_vector(std::vector<int64_t>{3});
    CHECK(three.pow(Tensor::from_vector(std::vector<int64_t>{39})).item<int64_t>() == 4052555153018976267);
  }
  CHECK(Tensor::from_vector(std::vector<int8_t>{5}).pow(2).dtype() == dtypes::int8);
  CHECK(Tensor::from_vector(std::vector<int8_t>{-3}).pow(5).item<int8_t>() == 13);  // -243 wraps
}

TEST_CASE("elementwise: a C++ double keeps its value where it meets a float64 tensor") {
  // 0.1 is a float32 only as a tensor of its own, as a Python float in tinygrad and PyTorch
  if (lacks(dtypes::float64)) return;
  const Tensor d = Tensor::from_vector(std::vector<double>{1.0});
  CHECK((d + 0.1).item<double>() == 1.1);
  CHECK(d.add(0.1).item<double>() == 1.1);
  CHECK((0.1 - d).item<double>() == 0.1 - 1.0);
  CHECK(d.mul(0.1).item<double>() == 0.1);
  CHECK(d.minimum(0.1).item<double>() == 0.1);
  CHECK(d.maximum(-0.1).item<double>() == 1.0);
  CHECK((d * 0).maximum(0.1).item<double>() == 0.1);
  CHECK(d.clip(0.3, 0.7).item<double>() == 0.7);
  CHECK(d.lt(0).where(d, 0.1).item<double>() == 0.1);
  const Tensor tenth_in_float32 = Tensor::from_vector(std::vector<double>{static_cast<double>(0.1f)});
  CHECK_FALSE(tenth_in_float32.eq(0.1).item<bool>());
  const Tensor f = Tensor::from_vector(std::vector<float>{1.0f});
  CHECK((f + 0.1).item<float>() == 1.0f + 0.1f);                   // float32 rounds it, once
  CHECK(Tensor(0.1).cast(dtypes::float64).item<double>() == 0.1f);  // a tensor of its own is float32
}

TEST_CASE("elementwise: minimum and clip with C++ scalars keep the tensor's dtype") {
  const Tensor i8 = Tensor::from_vector(std::vector<int8_t>{1, -5, 100});
  CHECK(i8.minimum(-1).dtype() == dtypes::int8);
  CHECK(i8.minimum(-1).to_vector<int8_t>() == std::vector<int8_t>{-1, -5, -1});
  CHECK(i8.clip(-3, 50).to_vector<int8_t>() == std::vector<int8_t>{1, -3, 50});
  CHECK(Tensor::from_vector(std::vector<uint8_t>{1, 200}).minimum(5).to_vector<uint8_t>() == std::vector<uint8_t>{1, 5});
  const Tensor h = Tensor::full({2}, 1.0, dtypes::float16);
  CHECK(h.minimum(0.1).dtype() == dtypes::float16);
  CHECK(h.clip(0, 0.5).dtype() == dtypes::float16);
  CHECK(static_cast<float>(h.clip(0, 0.5).to_vector<half_t>()[0]) == 0.5f);
  CHECK((-Tensor(2.5)).dtype() == dtypes::float32);
}

TEST_CASE("elementwise: casts and bitcasts") {
  Tensor f = Tensor::from_vector(std::vector<float>{-2.7f, -0.5f, 0.f, 1.9f, 300.4f});
  CHECK(f.int_().to_vector<int32_t>() == std::vector<int32_t>{-2, 0, 0, 1, 300});
  CHECK(f.bool_().to_vector<bool>() == std::vector<bool>{true, true, false, true, true});
  CHECK(f.cast(dtypes::uint8).to_vector<uint8_t>()[3] == 1);
  CHECK(Tensor::from_vector(std::vector<int32_t>{300, -1}).cast(dtypes::uint8).to_vector<uint8_t>() == std::vector<uint8_t>{44, 255});
  CHECK(f.half().float_().to_vector<float>()[3] == static_cast<float>(half_t(1.9f)));
  CHECK_WIDE(f.cast(dtypes::float64).to_vector<double>()[1] == -0.5);
  CHECK(Tensor::from_vector(std::vector<float>{1.f}).bitcast(dtypes::uint32).item<uint32_t>() == 0x3f800000u);
  CHECK(Tensor::from_vector(std::vector<int32_t>{0x40490fdb}).bitcast(dtypes::float32).item<float>() == 3.14159274101257324f);
  CHECK_THROWS_AS(f.bitcast(dtypes::int16), DTypeError);
}

TEST_CASE("elementwise: 0-d, size-0, expanded and padded operands") {
  Tensor s(3.f);
  CHECK((s * s + 1).item<float>() == 10.f);
  CHECK((s + Tensor::from_vector(std::vector<float>{1, 2})).to_vector<float>() == std::vector<float>{4, 5});
  Tensor empty = Tensor::zeros({0, 4});
  CHECK((empty.exp() + Tensor::ones({4})).shape() == Shape{0, 4});
  CHECK((empty.exp() + Tensor::ones({4})).to_vector<float>().empty());
  Tensor row = Tensor::from_vector(std::vector<float>{1, 2, 3}).reshape({1, 3}).expand({2, 3});
  check_close((row * Tensor::from_vector(std::vector<float>{10, 20}).reshape({2, 1})).to_vector<float>(), {10, 20, 30, 20, 40, 60}, Tol::exact());
  Tensor padded = Tensor::from_vector(std::vector<float>{1, 2}).pad({{1, 1}}, 5.0);
  check_close(padded.exp().to_vector<float>(), {std::exp(5.0), std::exp(1.0), std::exp(2.0), std::exp(5.0)}, Tol::f32(10));
}

TEST_CASE("elementwise: bfloat16 is stored in 16 bits and rounded after each op") {
  std::vector<float> xs{1.0f, 1.00390625f, 3.3f, -2.5f, 1e30f, NAN};
  Tensor a = Tensor::from_vector(xs).cast(dtypes::bfloat16);
  auto rounded = [](float f) { return static_cast<float>(bfloat16_t(f)); };
  auto got = a.to_vector<bfloat16_t>();
  for (size_t i = 0; i < xs.size(); ++i) {
    if (std::isnan(xs[i])) CHECK(std::isnan(static_cast<float>(got[i])));
    else CHECK(static_cast<float>(got[i]) == rounded(xs[i]));
  }
  // (a * a) + a with a rounding after the multiply and after the add, as bfloat16 arithmetic does
  auto sum = (a * a + a).float_().to_vector<float>();
  for (size_t i = 0; i < 4; ++i) {
    const float r = rounded(xs[i]);
    CHECK(sum[i] == rounded(rounded(r * r) + r));
  }
  CHECK(a.bitcast(dtypes::int16).to_vector<int16_t>()[0] == 0x3f80);
  CHECK(Tensor::from_vector(std::vector<int16_t>{0x4049}).bitcast(dtypes::bfloat16).float_().item<float>() == 3.140625f);
}
