// expr.hpp: expression templates hold their operands by value, check shapes when built, lower to
// the same graph as the Tensor methods, and have every Tensor method.
#include <doctest/doctest.h>

#include <tinyt.hpp>

#include "helpers.hpp"
#include <tinyt/internals.hpp>

#include <algorithm>
#include <boost/hana/length.hpp>

using namespace tinyt;

namespace {
// returns an expression over tensors that die when the function returns
auto make_expression() {
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3});
  Tensor b = Tensor::from_vector(std::vector<float>{4, 5, 6});
  return a * b + 1.0;
}
}  // namespace

TEST_CASE("expr: an expression is its own type, holds its operands, and becomes a Tensor") {
  auto e = make_expression();
  static_assert(!std::is_same_v<decltype(e), Tensor>);
  static_assert(std::is_convertible_v<decltype(e), Tensor>);
  Tensor t = e;
  CHECK(t.to_vector<float>() == std::vector<float>{5, 11, 19});
  CHECK(e.sum().item<float>() == 35.f);
  CHECK(e.shape() == Shape{3});
  CHECK(e.dtype() == dtypes::float32);
  CHECK((e - e).to_vector<float>() == std::vector<float>{0, 0, 0});
}

TEST_CASE("expr: lowering gives the same graph as the methods") {
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2}), b = Tensor::from_vector(std::vector<float>{3, 4});
  Tensor via_expr = (a * b + a) / 2 - b;
  Tensor via_methods = a.mul(b).add(a).div(2).sub(b);
  CHECK(via_expr.uop() == via_methods.uop());
  CHECK(Tensor(a < b).uop() == a.lt(b).uop());
  CHECK((2.0 * a).to_vector<float>() == (a * 2.0).to_vector<float>());
}

TEST_CASE("expr: shapes are checked when the expression is built") {
  Tensor a = Tensor::ones({2, 3}), b = Tensor::ones({4});
  CHECK_THROWS_AS(a + b, ShapeError);
  CHECK_THROWS_AS((a * 2) * b, ShapeError);
  CHECK((a + Tensor::ones({3})).shape() == Shape{2, 3});
}

TEST_CASE("expr: C++ scalars are weak in expressions too") {
  Tensor h = Tensor::ones({2}, dtypes::float16);
  Tensor i = Tensor::ones({2}, dtypes::int32);
  CHECK((h * 2.0 + 1).dtype() == dtypes::float16);
  CHECK((i * 2 + 1).dtype() == dtypes::int32);
  CHECK((i * 2.5).dtype() == dtypes::float32);
  CHECK((i / 2).dtype() == dtypes::float32);
  CHECK((i == 1).dtype() == dtypes::bool_);
}

namespace {
// The message of the ShapeError that f throws ("" when it throws none).
template <class F> std::string shape_error(F f) {
  try {
    f();
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "";
}
bool mentions(const std::string& message, std::initializer_list<const char*> parts) {
  for (const char* p : parts)
    if (message.find(p) == std::string::npos) return false;
  return true;
}
}  // namespace

TEST_CASE("expr: every elementwise and movement op of an expression is an expression, lowered as the methods") {
  Tensor a = Tensor::from_vector(std::vector<float>{-1.5f, 0.f, 2.f, 3.5f, -0.25f, 7.f}, {2, 3});
  Tensor b = Tensor::from_vector(std::vector<float>{1, 2, 3});
  Tensor i = Tensor::from_vector(std::vector<int32_t>{-7, 0, 5, 12, 3, -1}, {2, 3});
  Tensor j = Tensor::from_vector(std::vector<int32_t>{1, 2, 3});
  auto e = a * 1;  // an expression; t is the same value built by the methods
  Tensor t = a.mul(1);
  auto n = i + 0;
  Tensor m = i.add(0);
  // each op: an expression type, the graph of the Tensor method
#define SAME(expression, method)                                      \
  do {                                                                \
    auto x_ = expression;                                             \
    static_assert(is_expr<decltype(x_)>::value, #expression);         \
    CHECK_MESSAGE(Tensor(x_).uop() == (method).uop(), #expression);   \
  } while (0)
#define SAME_UNARY(name) SAME(e.name(), t.name());
  SAME_UNARY(neg) SAME_UNARY(logical_not) SAME_UNARY(exp) SAME_UNARY(exp2) SAME_UNARY(log) SAME_UNARY(log2)
  SAME_UNARY(sqrt) SAME_UNARY(rsqrt) SAME_UNARY(reciprocal) SAME_UNARY(square) SAME_UNARY(abs) SAME_UNARY(sign)
  SAME_UNARY(sin) SAME_UNARY(cos) SAME_UNARY(tan) SAME_UNARY(trunc) SAME_UNARY(floor) SAME_UNARY(ceil)
  SAME_UNARY(round) SAME_UNARY(isnan) SAME_UNARY(isinf) SAME_UNARY(isfinite) SAME_UNARY(relu) SAME_UNARY(relu6)
  SAME_UNARY(sigmoid) SAME_UNARY(logsigmoid) SAME_UNARY(tanh) SAME_UNARY(gelu) SAME_UNARY(quick_gelu)
  SAME_UNARY(silu) SAME_UNARY(mish) SAME_UNARY(hardswish) SAME_UNARY(hardsigmoid) SAME_UNARY(erf)
  SAME_UNARY(float_) SAME_UNARY(half) SAME_UNARY(int_) SAME_UNARY(bool_)
#undef SAME_UNARY
  SAME(n.bitwise_not(), m.bitwise_not());
  SAME(e.elu(0.5), t.elu(0.5));
  SAME(e.leaky_relu(0.2), t.leaky_relu(0.2));
  SAME(e.softplus(2.0), t.softplus(2.0));
  SAME(e.hardtanh(-0.5, 0.5), t.hardtanh(-0.5, 0.5));
  if (tinyt_test::wide_types()) SAME(e.cast(dtypes::float64), t.cast(dtypes::float64));
  SAME(e.bitcast(dtypes::int32), t.bitcast(dtypes::int32));
#define SAME_BINARY(name) SAME(e.name(b), t.name(b));
  SAME_BINARY(add) SAME_BINARY(sub) SAME_BINARY(mul) SAME_BINARY(div) SAME_BINARY(floordiv) SAME_BINARY(mod)
  SAME_BINARY(pow) SAME_BINARY(maximum) SAME_BINARY(minimum) SAME_BINARY(eq) SAME_BINARY(ne) SAME_BINARY(lt)
  SAME_BINARY(le) SAME_BINARY(gt) SAME_BINARY(ge) SAME_BINARY(logical_and) SAME_BINARY(logical_or)
  SAME_BINARY(logical_xor)
#undef SAME_BINARY
  SAME(n.bitwise_and(j), m.bitwise_and(j));
  SAME(n.bitwise_or(j), m.bitwise_or(j));
  SAME(n.bitwise_xor(j), m.bitwise_xor(j));
  SAME(n.lshift(j), m.lshift(j));
  SAME(n.rshift(j), m.rshift(j));
  SAME(n.pow(2), m.pow(2));
  SAME(e.where(b, 0.5), t.where(b, 0.5));
  SAME(e.clip(-1, b), t.clip(-1, b));
  SAME(e.lerp(b, 0.25), t.lerp(b, 0.25));
  SAME(e.masked_fill(e > 1, 9), t.masked_fill(t.gt(1), 9));
  // operators
  SAME(a % 2, a.mod(2));
  SAME(a <= b, a.le(b));
  SAME(a > b, a.gt(b));
  SAME(a >= b, a.ge(b));
  SAME(i & j, i.bitwise_and(j));
  SAME(i | j, i.bitwise_or(j));
  SAME(i ^ j, i.bitwise_xor(j));
  SAME(i << 1, i.lshift(1));
  SAME(i >> j, i.rshift(j));
  SAME(-a, a.neg());
  SAME(~i, i.bitwise_not());
  SAME(!(a > 0), a.gt(0).logical_not());
  // movement
  SAME(e.reshape({3, 2}), t.reshape({3, 2}));
  SAME(e.reshape({-1}), t.reshape({-1}));
  SAME(e.view({6}), t.view({6}));
  SAME(e.permute({1, 0}), t.permute({1, 0}));
  SAME(e.expand({4, 2, 3}), t.expand({4, 2, 3}));
  SAME(e.pad({{1, 0}, {0, 2}}, 1.5), t.pad({{1, 0}, {0, 2}}, 1.5));
  SAME(e.pad({{-1, 1}, {1, -2}}), t.pad({{-1, 1}, {1, -2}}));
  SAME(e.shrink({{0, 1}, {1, 3}}), t.shrink({{0, 1}, {1, 3}}));
  SAME(e.flip({0, 1}), t.flip({0, 1}));
  SAME(e.flip(1), t.flip(1));
  SAME(e.transpose(), t.transpose());
  SAME(e.T(), t.T());
  SAME(e.flatten(), t.flatten());
  SAME(e.unflatten(1, {3, 1}), t.unflatten(1, {3, 1}));
  SAME(e.unsqueeze(0).squeeze(0), t.unsqueeze(0).squeeze(0));
  SAME(e.unsqueeze(2).squeeze(), t.unsqueeze(2).squeeze());
#undef SAME
}

TEST_CASE("expr: a chain of elementwise and movement ops computes what a hand loop does") {
  const std::vector<float> x{-1.5f, 0.f, 2.f, 3.5f, -0.25f, 7.f};  // (2, 3)
  Tensor a = Tensor::from_vector(x, {2, 3});
  auto e = ((a * 2 + 1).relu() * a - 0.5).maximum(-1).reshape({3, 2}).T().flip(1);  // one expression
  static_assert(is_expr<decltype(e)>::value);
  CHECK(e.shape() == Shape{2, 3});
  // by hand: y = max(relu(2x + 1) * x - 0.5, -1) in (2, 3); as (3, 2), transposed, columns reversed
  std::vector<float> y(6);
  for (size_t k = 0; k < 6; ++k) y[k] = std::max(std::max(2 * x[k] + 1, 0.f) * x[k] - 0.5f, -1.f);
  std::vector<float> want(6);
  for (size_t r = 0; r < 2; ++r)
    for (size_t c = 0; c < 3; ++c) want[r * 3 + c] = y[(2 - c) * 2 + r];  // T of (3, 2), then flip dim 1
  CHECK(e.to_vector<float>() == want);
  // expressions that differ only in their op have one type, so either may be chosen at run time
  static_assert(std::is_same_v<decltype(a * 2), decltype(a + 2)>);
  static_assert(std::is_same_v<decltype((a * 2).relu()), decltype((a * 2).sigmoid())>);
  Tensor chain = a;
  for (int k = 0; k < 3; ++k) chain = k % 2 ? chain * 2 : chain + 1;
  std::vector<float> by_hand(x);
  for (float& v : by_hand) v = (v + 1) * 2 + 1;
  CHECK(chain.to_vector<float>() == by_hand);
}

TEST_CASE("expr: movement shapes are known and checked when the expression is built") {
  Tensor a = Tensor::ones({2, 3});
  auto e = a * 2;
  CHECK(e.reshape({3, -1}).shape() == Shape{3, 2});
  CHECK(e.permute({1, 0}).expand({4, 3, 2}).shape() == Shape{4, 3, 2});
  CHECK(e.pad({{1, 1}, {0, 2}}).shrink({{1, 3}, {0, 4}}).shape() == Shape{2, 4});
  CHECK(e.flatten().unsqueeze(0).ndim() == 2);
  // thrown by the op itself, before anything becomes a Tensor
  CHECK(mentions(shape_error([&] { (void)e.reshape({4}); }), {"reshape", "(2, 3)", "(4,)"}));
  CHECK(mentions(shape_error([&] { (void)e.permute({0}); }), {"permute", "(2, 3)"}));
  CHECK(mentions(shape_error([&] { (void)e.expand({4, 2}); }), {"expand", "(2, 3)", "(4, 2)"}));
  CHECK(mentions(shape_error([&] { (void)e.shrink({{0, 3}, {0, 1}}); }), {"shrink", "(2, 3)"}));
  CHECK(mentions(shape_error([&] { (void)e.where(Tensor::ones({4}), 0); }), {"where", "(2, 3)", "(4,)"}));
  CHECK(mentions(shape_error([&] { (void)(e.relu() - Tensor::ones({2})); }), {"sub", "(2, 3)", "(2,)"}));
}

TEST_CASE("shape errors at run time name the operation and both shapes") {
  Tensor a = Tensor::ones({2, 3});
  CHECK(mentions(shape_error([&] { (void)a.add(Tensor::ones({4})); }), {"add", "(2, 3)", "(4,)"}));
  CHECK(mentions(shape_error([&] { (void)a.matmul(Tensor::ones({4, 5})); }), {"matmul", "(2, 3)", "(4, 5)"}));
  CHECK(mentions(shape_error([&] { (void)a.reshape({5}); }), {"reshape", "(2, 3)", "(5,)"}));
  CHECK(mentions(shape_error([&] { (void)a.expand({3, 3}); }), {"expand", "(2, 3)", "(3, 3)"}));
  CHECK(mentions(shape_error([&] { (void)Tensor::cat({a, Tensor::ones({2, 2})}, 0); }), {"cat", "(2, 3)", "(2, 2)"}));
  CHECK(mentions(shape_error([&] { (void)Tensor::ones({1, 3, 8, 8}).conv2d(Tensor::ones({4, 2, 3, 3})); }),
                 {"conv2d", "(1, 3, 8, 8)", "(4, 2, 3, 3)"}));
  CHECK(mentions(shape_error([&] { (void)StaticTensor<2, 3>(Tensor::ones({3, 2})); }), {"StaticTensor", "(3, 2)", "(2, 3)"}));
}

TEST_CASE("static tensors: shapes in the type, results of the right static shape, Tensors everywhere") {
  auto a = StaticTensor<2, 3>::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6});
  auto w = StaticTensor<3, 2>::from_vector(std::vector<float>{1, 0, 0, 1, 1, 1});
  auto c = a.matmul(w);
  static_assert(std::is_same_v<decltype(c), StaticTensor<2, 2>>);
  static_assert(decltype(c)::static_shape::array == std::array<int64_t, 2>{2, 2});
  // by hand: row r of a times w
  const std::vector<float> av{1, 2, 3, 4, 5, 6}, wv{1, 0, 0, 1, 1, 1};
  std::vector<float> want(4, 0.f);
  for (int r = 0; r < 2; ++r)
    for (int col = 0; col < 2; ++col)
      for (int k = 0; k < 3; ++k) want[r * 2 + col] += av[r * 3 + k] * wv[k * 2 + col];
  CHECK(c.to_vector<float>() == want);
  auto bias = StaticTensor<2>::from_vector(std::vector<float>{10, 20});
  auto d = c + bias;
  static_assert(std::is_same_v<decltype(d), StaticTensor<2, 2>>);
  CHECK(d.to_vector<float>() == std::vector<float>{want[0] + 10, want[1] + 20, want[2] + 10, want[3] + 20});
  // a StaticTensor is a Tensor: methods, expressions with Tensors and scalars, functions taking Tensor
  auto total = [](const Tensor& t) { return t.sum().item<float>(); };
  CHECK(total(d) == want[0] + want[1] + want[2] + want[3] + 60);
  Tensor e = (d * 2 - Tensor::ones({2})).relu();
  CHECK(e.shape() == Shape{2, 2});
  // a Tensor becomes a static tensor when its shape is the type's, checked at run time
  StaticTensor<2, 2> back(e);
  CHECK(back.uop() == e.uop());
  CHECK_THROWS_AS((void)StaticTensor<4>(e), ShapeError);
  CHECK_THROWS_AS((StaticTensor<2, 3>::from_vector(std::vector<float>{1, 2})), Error);
  static_assert(StaticShape<7, 2, 4, 6>::ndim == 4);
  static_assert(boost::hana::length(StaticShape<7, 2>::dims) == boost::hana::size_c<2>);
  static_assert(static_matmul_fits<StaticShape<3>, StaticShape<4, 3, 2>>);
  static_assert(!static_broadcastable<StaticShape<2, 3>, StaticShape<2>>);
}
