// expr.hpp: expression templates hold their operands by value, check shapes when built, lower to
// the same graph as the Tensor methods, and have every Tensor method.
#include <doctest/doctest.h>

#include <tinyt.hpp>
#include <tinyt/internals.hpp>

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
