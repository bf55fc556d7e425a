// Numerics at the tensor level, against PyTorch (tests/data/numerics_torch.inc, made by
// tests/data/make_numerics_torch.py): float16 and bfloat16 reductions accumulate in float32 and
// round once, integer sums are int64, and the gradients of those reductions come back in the
// input's dtype.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include <tinyt.hpp>

#include "data/numerics_torch.inc"
#include "helpers.hpp"

using namespace tinyt;
using namespace tinyt_test;

namespace {

/// offset + (i % period) * scale for i < n, as ramp() in make_numerics_torch.py.
std::vector<double> ramp(int n, int period, double scale, double offset) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(offset + (i % period) * scale);
  return v;
}

/// The elements of a float tensor, read as their own C++ type.
std::vector<double> values(const Tensor& t) {
  std::vector<double> out;
  with_type(t.dtype(), [&](auto zero) {
    using E = decltype(zero);
    if constexpr (std::is_same_v<E, half_t> || std::is_same_v<E, bfloat16_t> || std::is_floating_point_v<E>)
      for (const E& x : t.to_vector<E>()) out.push_back(static_cast<double>(static_cast<float>(x)));
    else
      FAIL("values: ", t.dtype().name(), " is not a float dtype");
  });
  return out;
}

/// The spacing of float16 (10 mantissa bits) or bfloat16 (7) numbers at |x|.
double ulp(double x, DType dt) {
  const int mantissa = dt == dtypes::float16 ? 10 : 7;
  const int e = x == 0 ? -14 : std::max(std::ilogb(x), dt == dtypes::float16 ? -14 : -126);
  return std::ldexp(1.0, e - mantissa);
}

/// Every element of `got` (of dtype dt) within `ulps` steps of dt from PyTorch's `want`.
void check_ulps(const Tensor& got, const std::vector<double>& want, double ulps) {
  const std::vector<double> g = values(got);
  REQUIRE(g.size() == want.size());
  int wrong = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool ok = std::fabs(g[i] - want[i]) <= ulps * ulp(want[i], got.dtype());
    if (!ok && wrong++ < 5) CHECK_MESSAGE(ok, "element ", i, ": got ", g[i], ", PyTorch ", want[i]);
  }
  CHECK(wrong == 0);
}


}  // namespace

TEST_CASE("numerics: float16 mean of three 40000s is 40000, as PyTorch") {
  const Tensor x = make(dtypes::float16, {}, {40000, 40000, 40000});
  const Tensor m = x.mean();
  CHECK(m.dtype() == dtypes::float16);
  CHECK(values(m) == torch_half_mean_40000);
  // the sum itself is past float16's largest value (65504), also in PyTorch
  CHECK(std::isinf(values(x.sum())[0]));
  // its gradient is 1/3 rounded to float16, in float16
  const Tensor g = x.mean().gradient({x})[0];
  CHECK(g.dtype() == dtypes::float16);
  CHECK(values(g) == torch_half_mean_grad);
}

TEST_CASE("numerics: float16 sum and cumsum accumulate in float32 and round once") {
  const std::vector<double> in = ramp(1000, 7, 0.125, 1.0);
  // accumulated in float16 the sum would be far off: past 1024 a float16 step is 1
  half_t naive(0.f);
  for (double v : in) naive = half_t(static_cast<float>(naive) + static_cast<float>(v));
  REQUIRE(std::fabs(static_cast<float>(naive) - torch_half_sum[0]) > 10);

  const Tensor x = make(dtypes::float16, {}, in);
  CHECK(x.sum().dtype() == dtypes::float16);
  CHECK(values(x.sum()) == torch_half_sum);  // every partial sum is exact in float32
  CHECK(x.cumsum().dtype() == dtypes::float16);
  check_ulps(x.cumsum(), torch_half_cumsum, 0);
  // the sum's gradient is ones in float16
  const Tensor g = x.sum().gradient({x})[0];
  CHECK(g.dtype() == dtypes::float16);
  check_ulps(g, std::vector<double>(in.size(), 1.0), 0);
}

TEST_CASE("numerics: float16 var and std of values near 1000 compute in float32") {
  // in float16 the mean's sum (2e6) overflows and the variance is NaN
  const Tensor x = make(dtypes::float16, {}, ramp(2000, 5, 1.0, 1000.0));
  CHECK(x.var().dtype() == dtypes::float16);
  CHECK(x.std().dtype() == dtypes::float16);
  check_ulps(x.var(), torch_half_var, 1);
  check_ulps(x.std(), torch_half_std, 1);  // sqrt of the float32 variance, rounded once
}

TEST_CASE("numerics: float16 softmax, log_softmax and logsumexp of 4096 values") {
  const Tensor x = make(dtypes::float16, {}, ramp(4096, 13, 0.25, -1.5));
  // one float16 rounding of the float32 result; the exp approximations differ by an ulp of float32,
  // which can move the rounding by one float16 step
  check_ulps(x.softmax(0), torch_half_softmax, 1);
  check_ulps(x.log_softmax(0), torch_half_log_softmax, 1);
  check_ulps(x.logsumexp(0).reshape({1}), torch_half_logsumexp, 1);
  CHECK(x.softmax(0).dtype() == dtypes::float16);
  CHECK(x.logsumexp(0).dtype() == dtypes::float16);
  // the gradient of a float16 softmax is float16 (a weighted sum: not all outputs equal)
  const Tensor w = make(dtypes::float16, {}, ramp(4096, 3, 1.0, 0.0));
  CHECK(x.softmax(0).mul(w).sum().gradient({x})[0].dtype() == dtypes::float16);
}

TEST_CASE("numerics: bfloat16 sum, mean, cumsum and softmax accumulate in float32") {
  const Tensor x = make(dtypes::bfloat16, {}, ramp(1000, 3, 0.25, 1.0));
  CHECK(x.sum().dtype() == dtypes::bfloat16);
  CHECK(x.mean().dtype() == dtypes::bfloat16);
  CHECK(values(x.sum()) == torch_bf16_sum);  // 1250 rounds to 1248 once; bfloat16 steps would drift
  CHECK(values(x.mean()) == torch_bf16_mean);
  check_ulps(x.cumsum(), torch_bf16_cumsum, 0);
  check_ulps(make(dtypes::bfloat16, {}, ramp(4096, 13, 0.25, -1.5)).softmax(0), torch_bf16_softmax, 1);
}

TEST_CASE("numerics: the float32 accumulator of a float16 reduction adds no kernel") {
  const std::vector<double> in = ramp(4096, 13, 0.25, -1.5);
  for (auto op : {+[](const Tensor& t) { return t.sum(); }, +[](const Tensor& t) { return t.mean(); },
                  +[](const Tensor& t) { return t.softmax(0); }, +[](const Tensor& t) { return t.var(); },
                  +[](const Tensor& t) { return t.cumsum(); }}) {
    const int64_t k16 = kernels_to_realize(op(make(dtypes::float16, {}, in)));
    const int64_t k32 = kernels_to_realize(op(make(dtypes::float32, {}, in)));
    CHECK(k16 == k32);
  }
  CHECK(kernels_to_realize(make(dtypes::float16, {}, in).mean()) == 1);
}

TEST_CASE("numerics: integer and bool sums are int64, as PyTorch's") {
  if (lacks(dtypes::int64)) return;  // (there they are int32, as in tinygrad)
  auto check_int64 = [](const Tensor& t, int64_t want) {
    CHECK(t.dtype() == dtypes::int64);
    if (t.dtype() == dtypes::int64) CHECK(t.item<int64_t>() == want);
  };
  check_int64(make(dtypes::bool_, {1, 1, 0, 1}, {}).sum(), torch_bool_sum);
  check_int64(make(dtypes::int8, {100, 100, 100}, {}).sum(), torch_int8_sum);
  check_int64(make(dtypes::uint8, {200, 200}, {}).sum(), torch_uint8_sum);
  check_int64(make(dtypes::int16, {30000, 30000}, {}).sum(), torch_int16_sum);
  check_int64(make(dtypes::int32, {1 << 30, 1 << 30, 1 << 30}, {}).sum(), torch_int32_sum);
  check_int64(make(dtypes::uint32, {int64_t{1} << 31, int64_t{1} << 31}, {}).sum(), torch_uint32_sum);
  check_int64(make(dtypes::int16, {300, 300}, {}).prod(), torch_int16_prod);
  const Tensor c = make(dtypes::int8, {100, 100, 100}, {}).cumsum();
  CHECK(c.dtype() == dtypes::int64);
  CHECK(c.to_vector<int64_t>().back() == torch_int8_cumsum_last);
  // uint64 keeps its dtype (PyTorch gives the same bits as int64)
  CHECK(make(dtypes::uint64, {1, 2}, {}).sum().dtype() == dtypes::uint64);
  // float16 prod multiplies in float16, as PyTorch's does
  CHECK(make(dtypes::float16, {}, {2, 3}).prod().dtype() == dtypes::float16);
  // arange stays the default int (it is a cumulative sum inside)
  CHECK(Tensor::arange(5).dtype() == dtypes::int32);
}

// -- C++ scalars ---------------------------------------------------------------------------------

TEST_CASE("numerics: a C++ double meeting float16 rounds once, meeting bfloat16 as a kernel cast does") {
  // just past the midpoint between two float16 (bfloat16) numbers: rounded to float first it
  // would land on the midpoint and go to the even one below
  const double past_tie16 = 1 + 0x1p-11 + 0x1p-40, past_tie_bf = 1 + 0x1p-8 + 0x1p-40;
  CHECK(values(make(dtypes::float16, {}, {0.0}).add(past_tie16)) == std::vector<double>{1 + 0x1p-10});
  // bfloat16 goes through float, as a kernel's cast from float64 (and PyTorch's) does: the
  // constant must equal what the same cast computes in a kernel
  CHECK(values(make(dtypes::bfloat16, {}, {0.0}).add(past_tie_bf)) == std::vector<double>{1});
  CHECK_WIDE(values(make(dtypes::float64, {}, {past_tie_bf}).cast(dtypes::bfloat16)) == std::vector<double>{1});
  CHECK(values(Tensor::full({1}, past_tie16, dtypes::float16)) == std::vector<double>{1 + 0x1p-10});
  CHECK(values(make(dtypes::float16, {}, {0.0}).sub(past_tie16)) == std::vector<double>{-(1 + 0x1p-10)});
  // and a float64 tensor keeps every digit of it
  CHECK_WIDE(make(dtypes::float64, {}, {0.0}).add(past_tie16).to_vector<double>()[0] == past_tie16);
}

// -- integer division ---------------------------------------------------------------------------

namespace {
/// Python's floor division and remainder in 128 bits, wrapped to dt by hand; by 0 both are 0.
std::pair<i128, i128> floor_divmod(i128 x, i128 y, DType dt) {
  if (y == 0) return {0, 0};
  i128 q = x / y, r = x % y;
  if (r != 0 && (r < 0) != (y < 0)) q -= 1, r += y;
  const int bits = 8 * dt.itemsize();
  const u128 u = static_cast<u128>(q) & ((static_cast<u128>(1) << bits) - 1);
  if (!dt.is_unsigned() && (u >> (bits - 1)) & 1) q = static_cast<i128>(u) - (static_cast<i128>(1) << bits);
  else q = static_cast<i128>(u);
  return {q, r};
}
}  // namespace

TEST_CASE("numerics: integer // and % by 0 give 0 and INT_MIN // -1 wraps, on both backends") {
  for (int cc : {0, 1}) {
    Context backend{{"CPU_LLVM", cc ? 0 : 1}};
    for (DType dt : {dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64, dtypes::uint8, dtypes::uint32}) {
      if (dt == dtypes::int64 && lacks(dt)) continue;
      CAPTURE(cc);
      CAPTURE(dt);
      const i128 lo = dtypes::min_int(dt);
      const std::vector<int64_t> xs = {7, -7, 0, static_cast<int64_t>(lo), 5, -128, 100};
      const std::vector<int64_t> ys = {0, -1, 3, -1, 0, 2, -3};
      const Tensor x = make(dt, xs, {}), y = make(dt, ys, {});
      // the divisor a tensor (unknown in the kernel), and a constant 0
      for (const Tensor& q : {x.floordiv(y), x.mod(y), x.floordiv(0), x.mod(0)}) {
        const bool is_mod = q.uop() == x.mod(y).uop() || q.uop() == x.mod(0).uop();
        const bool by_zero = q.uop() == x.floordiv(0).uop() || q.uop() == x.mod(0).uop();
        const Tensor got_t = q.cast(Device::widest_int(q.device()));
        const std::vector<int64_t> got = ints(got_t);
        for (size_t i = 0; i < xs.size(); ++i) {
          const i128 xv = wrap_int(xs[i], dt), yv = by_zero ? 0 : wrap_int(ys[i], dt);
          const std::pair<i128, i128> want = floor_divmod(xv, yv, dt);
          INFO(std::string(is_mod ? "mod " : "floordiv "), static_cast<int64_t>(xv), " by ", static_cast<int64_t>(yv));
          const auto w = static_cast<int64_t>(is_mod ? want.second : want.first);
          // (read through int32 where the device has no int64: a uint32 value by its 32 bits)
          CHECK((wide_types() ? got[i] == w : static_cast<int32_t>(got[i]) == static_cast<int32_t>(w)));
        }
      }
    }
  }
}

TEST_CASE("numerics: the division rule defines x / 0, x % 0 and INT_MIN / -1 before rendering") {
  const int64_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  const UOp x = UOp::variable("x", lo, hi, dtypes::int32), y = UOp::variable("y", -5, 5, dtypes::int32);
  for (Ops op : {Ops::IDIV, Ops::MOD}) {
    const UOp out = graph_rewrite(x.alu(op, {y}), codegen::division_rules());
    for (int64_t xv : {lo, int64_t{-7}, int64_t{0}, int64_t{7}, hi})
      for (int64_t yv = -5; yv <= 5; ++yv) {
        // with x and y known every division folds, and one by 0 would not: it is left as is
        const UOp v = simplify(substitute(out, {{x.get(), UOp::const_(dtypes::int32, xv)}, {y.get(), UOp::const_(dtypes::int32, yv)}}));
        INFO(op_name(op), "(", xv, ", ", yv, ") -> ", expr_string(v));
        REQUIRE(v.is_const());
        // C's truncating division, with x / 0 == x % 0 == 0 and INT_MIN / -1 wrapping to INT_MIN
        const int64_t q = yv == 0 ? 0 : (xv == lo && yv == -1 ? lo : xv / yv), r = yv == 0 ? 0 : xv - q * yv;
        CHECK(static_cast<int64_t>(v.const_int()) == (op == Ops::IDIV ? q : static_cast<int64_t>(static_cast<int32_t>(r))));
      }
  }
  // a divisor that cannot be 0 or -1 (index math by a constant or a positive range) is left alone
  const UOp pos = UOp::variable("p", 1, 5, dtypes::int32);
  CHECK(graph_rewrite(x.idiv(pos), codegen::division_rules()) == x.idiv(pos));
  CHECK(graph_rewrite(x.mod(7), codegen::division_rules()) == x.mod(7));
  const UOp u = UOp::variable("u", 0, 5, dtypes::uint32);
  CHECK(graph_rewrite(u.idiv(u), codegen::division_rules()) != u.idiv(u));
}
