// uop.hpp and alu.hpp: interning, freeing, threads, walks, printing, and constant folding
// checked against C++ arithmetic written out by hand.
#include <doctest/doctest.h>

#include <thread>

#include <tinyt.hpp>
#include <tinyt/internals.hpp>

using namespace tinyt;

TEST_CASE("uop: equal structure is the same node") {
  UOp x = Variable("x", 0, 10);
  UOp a = x * 4 + 1, b = x * 4 + 1;
  CHECK(a == b);
  CHECK(a.get() == b.get());
  CHECK_FALSE(a == x * 4 + 2);
  CHECK_FALSE(Variable("x", 0, 10) == Variable("x", 0, 11));
  CHECK_FALSE(UOp::const_(dtypes::int32, 1) == UOp::const_(dtypes::int64, 1));
  // float constants are stored rounded to their dtype, so 1.1 and 1.1f are one float32 constant
  CHECK(UOp::const_(dtypes::float32, 1.1) ==
        UOp::const_(dtypes::float32, static_cast<double>(1.1f)));
  CHECK(UOp::const_(dtypes::float32, NAN) == UOp::const_(dtypes::float32, NAN));
  CHECK_FALSE(UOp::const_(dtypes::float32, 0.0) == UOp::const_(dtypes::float32, -0.0));
  // ints wrap to their dtype; uint64 keeps its full range
  CHECK(UOp::const_(dtypes::int8, 200).const_int() == -56);
  CHECK(UOp::const_(dtypes::uint64, dtypes::max_int(dtypes::uint64)).const_int() ==
        dtypes::max_int(dtypes::uint64));
  CHECK(UOp::const_(dtypes::int32, 2.9).const_int() == 2);
  CHECK(UOp::const_(dtypes::int32, -2.9).const_int() == -2);
  CHECK_THROWS_AS(UOp::const_(dtypes::int32, NAN), DTypeError);
}

TEST_CASE("uop: the op list is one X-macro") {
  CHECK(std::string(op_name(Ops::ADD)) == "ADD");
  CHECK(std::string(op_name(Ops::CONST)) == "CONST");
  CHECK(op_kind(Ops::RESHAPE) == OpKind::movement);
  CHECK(GroupOp::Binary.contains(Ops::IDIV));
  CHECK_FALSE(GroupOp::Binary.contains(Ops::CAST));
  CHECK(GroupOp::ALU.contains(Ops::WHERE));
  size_t n = 0;
  GroupOp::Movement.for_each([&](Ops) { ++n; });
  CHECK(n == 6);
}

TEST_CASE("uop: nodes are freed when the last handle goes") {
  const size_t before = detail::live_uop_count();
  {
    UOp x = Variable("free_test", 0, 7);
    UOp e = x;
    for (int i = 0; i < 1000; ++i) e = e * 3 + i;
    CHECK(detail::live_uop_count() >= before + 2000);
  }
  CHECK(detail::live_uop_count() == before);
}

TEST_CASE("uop: a chain of a million nodes is built, walked and freed without recursion") {
  const size_t before = detail::live_uop_count();
  {
    UOp e = Variable("deep", 0, 1);
    for (int i = 0; i < 1000000; ++i) e = e + 1;
    CHECK(toposort(e).size() == 1000002);  // the variable, the constant 1, a million ADDs
  }
  CHECK(detail::live_uop_count() == before);
}

TEST_CASE("uop: two threads building the same graph get the same nodes") {
  // each round both threads build the same graph at once, keep it, and drop it again, so
  // interning races both with another builder and with nodes dying
  for (int round = 0; round < 20; ++round) {
    std::vector<UOp> built[2];
    auto build = [&](int t) {
      UOp x = Variable("thread_var", 0, 100);
      UOp e = x;
      for (int i = 0; i < 2000; ++i) {
        e = (e + i % 7) * ((i % 3) + 1);
        if (i % 100 == 0) built[t].push_back(e);
      }
      built[t].push_back(e);
    };
    std::thread a(build, 0), b(build, 1);
    a.join(), b.join();
    REQUIRE(built[0].size() == built[1].size());
    for (size_t i = 0; i < built[0].size(); ++i) CHECK(built[0][i].get() == built[1][i].get());
  }
}

TEST_CASE("uop: toposort puts sources first and visits shared nodes once") {
  UOp x = Variable("x", 0, 3), y = Variable("y", 0, 3);
  UOp s = x + y;
  UOp e = s * s;
  auto order = toposort(e);
  CHECK(order.size() == 4);
  CHECK(order.back() == e);
  auto pos = [&](const UOp& u) { return std::find(order.begin(), order.end(), u) - order.begin(); };
  CHECK(pos(x) < pos(s));
  CHECK(pos(y) < pos(s));
  CHECK(pos(s) < pos(e));
}

TEST_CASE("uop: substitute replaces nodes and rebuilds their users once") {
  UOp x = Variable("x", 0, 3), y = Variable("y", 0, 3), z = Variable("z", 0, 3);
  UOp s = x + y;
  UOp e = s * s + x;
  UOp out = substitute(e, {{x.get(), z}});
  CHECK(out == (z + y) * (z + y) + z);
  CHECK(substitute(e, {}) == e);
}

TEST_CASE("uop: printers") {
  UOp x = Variable("x", 0, 3);
  UOp e = (x * 4 + 1).idiv(3).lt(2);
  CHECK(expr_string(e) == "((((x*4)+1)//3)<2)");
  std::ostringstream os;
  os << x.maximum(1);
  CHECK(os.str() == "max(x, 1)");
  std::string listing = to_string(x + 1);
  CHECK(listing.find("DEFINE_VAR") != std::string::npos);
  CHECK(listing.find("('x', 0, 3)") != std::string::npos);
  CHECK(listing.find("ADD") != std::string::npos);
  CHECK(expr_string(UOp::const_(dtypes::float32, 0.5)) == "0.5");
  CHECK(expr_string(UOp::const_(dtypes::float32, 2.0)) == "2.0");
}

TEST_CASE("uop: misuse is a typed error") {
  UOp i = UOp::const_(dtypes::int32, 1), f = UOp::const_(dtypes::float32, 1.0);
  CHECK_THROWS_AS(i + f, DTypeError);
  CHECK_THROWS_AS(i.where(i, i), DTypeError);
  CHECK_THROWS_AS(Variable("v", 3, 2), Error);
  CHECK_THROWS_AS(Variable("v", 0, 4).bind(5), IndexError);
  CHECK_THROWS_AS(i.bind(1), Error);
  CHECK_THROWS_AS(UOp(Ops::ADD, dtypes::int32, {i, UOp()}), InternalError);
  CHECK_THROWS_AS(UOp::const_(dtypes::void_, 1), DTypeError);
  try {
    (void)(i + f);
  } catch (const DTypeError& e) {
    CHECK(std::string(e.what()).find("int32") != std::string::npos);
    CHECK(std::string(e.what()).find("float32") != std::string::npos);
  }
}

namespace {
UOp c(DType dt, double v) { return UOp::const_(dt, v); }
UOp c(DType dt, int64_t v) { return UOp::const_(dt, v); }
i128 fold_i(Ops op, DType dt, std::vector<UOp> src) {
  UOp r = fold_constants(op, GroupOp::Comparison.contains(op) ? dtypes::bool_ : dt, src);
  REQUIRE(r);
  return r.const_int();
}
double fold_f(Ops op, DType dt, std::vector<UOp> src) {
  UOp r = fold_constants(op, dt, src);
  REQUIRE(r);
  return r.const_float();
}
}  // namespace

TEST_CASE("alu: integer folding matches C with two's complement wraparound") {
  using namespace dtypes;
  CHECK(fold_i(Ops::ADD, int8, {c(int8, int64_t{127}), c(int8, int64_t{1})}) == -128);
  CHECK(fold_i(Ops::MUL, uint32, {c(uint32, int64_t{4000000000}), c(uint32, int64_t{3})}) ==
        static_cast<uint32_t>(4000000000u * 3u));
  CHECK(fold_i(Ops::MUL, int64, {c(int64, int64_t{1} << 62), c(int64, int64_t{4})}) == 0);
  CHECK(fold_i(Ops::IDIV, int32, {c(int32, int64_t{-7}), c(int32, int64_t{2})}) == -7 / 2);
  CHECK(fold_i(Ops::MOD, int32, {c(int32, int64_t{-7}), c(int32, int64_t{2})}) == -7 % 2);
  CHECK(fold_i(Ops::MOD, int32, {c(int32, int64_t{7}), c(int32, int64_t{-2})}) == 7 % -2);
  CHECK(fold_i(Ops::IDIV, int32, {c(int32, int64_t{INT32_MIN}), c(int32, int64_t{-1})}) ==
        INT32_MIN);
  CHECK(fold_i(Ops::SHL, uint8, {c(uint8, int64_t{0x81}), c(uint8, int64_t{1})}) == 2);
  CHECK(fold_i(Ops::SHR, int32, {c(int32, int64_t{-8}), c(int32, int64_t{1})}) == -4);
  CHECK(fold_i(Ops::XOR, int32, {c(int32, int64_t{6}), c(int32, int64_t{3})}) == 5);
  CHECK(fold_i(Ops::MAX, int32, {c(int32, int64_t{-6}), c(int32, int64_t{3})}) == 3);
  CHECK(fold_i(Ops::CMPLT, uint64, {c(uint64, int64_t{-1}), c(uint64, int64_t{1})}) ==
        0);  // 2^64-1 < 1
  CHECK(fold_i(Ops::NEG, uint8, {c(uint8, int64_t{1})}) == 255);
  CHECK(fold_i(Ops::ADD, uint64, {c(uint64, int64_t{-1}), c(uint64, int64_t{2})}) == 1);
  // undefined in C: not folded
  CHECK_FALSE(fold_constants(Ops::IDIV, int32, {c(int32, int64_t{1}), c(int32, int64_t{0})}));
  CHECK_FALSE(fold_constants(Ops::MOD, int32, {c(int32, int64_t{1}), c(int32, int64_t{0})}));
  CHECK_FALSE(fold_constants(Ops::SHL, int32, {c(int32, int64_t{1}), c(int32, int64_t{32})}));
  // a non-constant source: nothing to fold
  CHECK_FALSE(fold_constants(Ops::ADD, dtypes::index,
                             {Variable("x", 0, 1), UOp::const_(dtypes::index, 1)}));
}

TEST_CASE("alu: float folding, casts and bitcasts") {
  using namespace dtypes;
  CHECK(fold_f(Ops::ADD, float32, {c(float32, 0.1), c(float32, 0.2)}) ==
        static_cast<double>(0.1f + 0.2f));
  CHECK(std::isnan(fold_f(Ops::MAX, float32, {c(float32, NAN), c(float32, 1.0)})));
  CHECK(std::isnan(fold_f(Ops::MAX, float32, {c(float32, 1.0), c(float32, NAN)})));
  CHECK(std::isinf(fold_f(Ops::FDIV, float32, {c(float32, 1.0), c(float32, 0.0)})));
  CHECK(fold_f(Ops::SQRT, float64, {c(float64, 2.0)}) == std::sqrt(2.0));
  CHECK(fold_f(Ops::EXP2, float32, {c(float32, 3.0)}) == 8.0);
  CHECK(fold_i(Ops::CMPLT, float32, {c(float32, 1.0), c(float32, 2.0)}) == 1);
  CHECK(fold_i(Ops::CMPNE, float32, {c(float32, NAN), c(float32, NAN)}) == 1);
  // f32 -> f16 of 65536 is inf
  CHECK(std::isinf(fold_f(Ops::CAST, float16, {c(float32, 65536.0)})));
  CHECK(fold_i(Ops::CAST, int32, {c(float32, -2.75)}) == -2);
  CHECK(fold_i(Ops::CAST, uint8, {c(int32, int64_t{300})}) == 44);
  CHECK(fold_i(Ops::CAST, bool_, {c(float32, 0.5)}) == 1);
  CHECK_FALSE(fold_constants(Ops::CAST, int32, {c(float32, 3e9)}));  // undefined in C
  CHECK(fold_i(Ops::BITCAST, uint32, {c(float32, 1.0)}) == 0x3f800000);
  CHECK(fold_f(Ops::BITCAST, float32, {c(int32, int64_t{0x40490fdb})}) ==
        static_cast<double>(3.14159274101257324f));
  CHECK(fold_i(Ops::BITCAST, uint16, {c(float16, 1.0)}) == 0x3c00);
  CHECK(fold_i(Ops::BITCAST, uint16, {c(bfloat16, 1.0)}) == 0x3f80);
  CHECK(fold_f(Ops::WHERE, float32, {UOp::const_(bool_, true), c(float32, 1.5), c(float32, 2.5)}) ==
        1.5);
}
