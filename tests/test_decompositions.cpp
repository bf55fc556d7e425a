// The decompositions of EXP2, LOG2 and SIN (codegen/decompositions.hpp), run through the whole
// pipeline and measured in ulps against the C library in long double: dense sweeps of each
// domain (every binade, denormals, both signs), special values exactly, float16 and bfloat16
// exhaustively, and the math functions built on them.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;
using namespace tinyt_test;

namespace {
// A floating-point format: significand digits, C's min_exp (the smallest normal is 2^(min_exp-1))
// and the largest finite value.
struct Format {
  int digits, min_exp;
  long double max;
};
constexpr Format f32{FLT_MANT_DIG, FLT_MIN_EXP, FLT_MAX}, f64{DBL_MANT_DIG, DBL_MIN_EXP, DBL_MAX};
constexpr Format f16{11, -13, 65504.0L}, bf16{8, FLT_MIN_EXP, 3.3895313892515355e38L};

// The error of `got` in ulps of the exact value `want` rounded to `fmt`; infinity for a wrong
// NaN, infinity or overflow.
double ulps(long double got, long double want, Format fmt) {
  constexpr double wrong = INFINITY;
  if (std::isnan(want)) return std::isnan(got) ? 0 : wrong;
  const int top = std::ilogb(static_cast<double>(fmt.max));
  const long double overflow = fmt.max + std::ldexp(0.5L, top - fmt.digits + 1);  // rounds to inf
  if (std::fabs(want) >= overflow)
    return got == std::copysign(INFINITY, static_cast<double>(want)) ? 0 : wrong;
  if (!std::isfinite(got)) return wrong;
  const int e =
      want == 0 ? fmt.min_exp - 1 : std::max(static_cast<int>(std::ilogb(want)), fmt.min_exp - 1);
  return static_cast<double>(std::fabs(got - want) / std::ldexp(1.0L, e - fmt.digits + 1));
}

template <class F> DType dtype_for() {
  return std::is_same_v<F, float> ? dtypes::float32 : dtypes::float64;
}

// The largest error of `op` over `xs` against `ref`, with the input that gives it.
template <class F>
std::pair<double, F> max_ulps(const std::vector<F>& xs,
                              const std::function<Tensor(const Tensor&)>& op,
                              long double (*ref)(long double)) {
  const std::vector<F> got = op(Tensor::from_vector(xs)).template to_vector<F>();
  REQUIRE(got.size() == xs.size());
  std::pair<double, F> worst{0.0, F(0)};
  for (size_t i = 0; i < xs.size(); ++i) {
    const double u = ulps(got[i], ref(xs[i]), std::is_same_v<F, float> ? f32 : f64);
    if (!(u <= worst.first)) worst = {u, xs[i]};
  }
  return worst;
}

// 2^20 float32 inputs spread over every bit pattern (so over every binade, both signs,
// denormals, infinities and NaNs), and 2^18 more spread evenly over [lo, hi].
std::vector<float> sweep_f32(float lo, float hi) {
  std::vector<float> xs;
  for (uint32_t i = 0; i < (1u << 20); ++i) {
    const uint32_t bits = (i << 12) | ((i * 2654435761u) >> 20);
    float x;
    std::memcpy(&x, &bits, sizeof x);
    xs.push_back(x);
  }
  for (int i = 0; i < (1 << 18); ++i)
    xs.push_back(lo + (hi - lo) * static_cast<float>(i) / (1 << 18));
  return xs;
}
// 2^20 random float64 bit patterns, and 2^18 values spread evenly over [lo, hi].
std::vector<double> sweep_f64(double lo, double hi) {
  std::mt19937_64 gen(42);
  std::vector<double> xs;
  for (int i = 0; i < (1 << 20); ++i) {
    const uint64_t bits = gen();
    double x;
    std::memcpy(&x, &bits, sizeof x);
    xs.push_back(x);
  }
  for (int i = 0; i < (1 << 18); ++i)
    xs.push_back(lo + (hi - lo) * static_cast<double>(i) / (1 << 18));
  return xs;
}
// the float nearest to k*pi/2 and its two neighbours, for |k| <= 2^21: where sin cancels most
template <class F> std::vector<F> near_half_pi_multiples(F limit) {
  std::vector<F> xs;
  for (int64_t k = -(int64_t{1} << 21); k <= (int64_t{1} << 21); k += 7) {
    const F x = static_cast<F>(static_cast<long double>(k) * 1.5707963267948966192313216916397514L);
    if (std::fabs(x) <= limit)
      for (F y : {x, std::nextafter(x, F(0)), std::nextafter(x, F(1e30))}) xs.push_back(y);
  }
  return xs;
}

long double ref_exp2(long double x) { return exp2l(x); }
long double ref_log2(long double x) { return log2l(x); }
long double ref_sin(long double x) { return sinl(x); }
Tensor exp2_of(const Tensor& t) { return t.exp2(); }
Tensor log2_of(const Tensor& t) { return t.log2(); }
Tensor sin_of(const Tensor& t) { return t.sin(); }

struct Function {
  const char* name;
  Tensor (*op)(const Tensor&);
  long double (*ref)(long double);
};
const Function functions[] = {
    {"exp2", exp2_of, ref_exp2}, {"log2", log2_of, ref_log2}, {"sin", sin_of, ref_sin}};

template <class F>
void check_max_ulps(const char* what, const std::vector<F>& xs, Tensor (*op)(const Tensor&),
                    long double (*ref)(long double), double bound) {
  const std::pair<double, F> result = max_ulps<F>(xs, op, ref);
  const double worst = result.first;
  const F at = result.second;
  INFO(std::string(what), ": ", xs.size(), " inputs, max error ", worst, " ulp at ",
       static_cast<double>(at));
  MESSAGE(std::string(what), ": max error ", worst, " ulp");
  CHECK(worst <= bound);
}

// the source of the kernel that computes `t`, as the kernel cache hands it out now
std::string kernel_source(const Tensor& t) {
  const std::vector<schedule::Kernel> kernels = schedule::create_schedule({t.uop()});
  REQUIRE(!kernels.empty());
  const schedule::Kernel& k = kernels.back();
  return engine::kernel_cache().get(k.ast, k.buffers, engine::OptSettings::current("CPU"))->source;
}
}  // namespace

TEST_CASE("decompositions: exp2 within 2 ulp over the whole float32 and float64 domains") {
  check_max_ulps<float>("exp2 float32", sweep_f32(-152.f, 130.f), exp2_of, ref_exp2, 2.0);
  check_max_ulps<double>("exp2 float64", sweep_f64(-1080.0, 1030.0), exp2_of, ref_exp2, 2.0);
  // the denormal range and the edges of overflow and underflow, densely
  std::vector<float> edge32;
  for (float x = -151.f; x < -125.f; x += 1.f / 4096) edge32.push_back(x);
  for (float x = 127.f; x < 128.5f; x += 1.f / 65536) edge32.push_back(x);
  check_max_ulps<float>("exp2 float32 denormal and overflow edges", edge32, exp2_of, ref_exp2, 2.0);
  std::vector<double> edge64;
  for (double x = -1076.0; x < -1021.0; x += 1.0 / 2048) edge64.push_back(x);
  for (double x = 1023.0; x < 1024.5; x += 1.0 / 65536) edge64.push_back(x);
  check_max_ulps<double>("exp2 float64 denormal and overflow edges", edge64, exp2_of, ref_exp2,
                         2.0);
}

TEST_CASE("decompositions: log2 within 2 ulp over the whole float32 and float64 domains") {
  check_max_ulps<float>("log2 float32", sweep_f32(0.5f, 2.f), log2_of, ref_log2, 2.0);
  check_max_ulps<double>("log2 float64", sweep_f64(0.5, 2.0), log2_of, ref_log2, 2.0);
  // next to 1, where log2 is small and its relative error hardest to keep
  std::vector<float> near1_32;
  for (int i = -20000; i <= 20000; ++i) near1_32.push_back(1.f + static_cast<float>(i) * 0x1p-24f);
  check_max_ulps<float>("log2 float32 next to 1", near1_32, log2_of, ref_log2, 2.0);
  std::vector<double> near1_64;
  for (int i = -20000; i <= 20000; ++i) near1_64.push_back(1.0 + static_cast<double>(i) * 0x1p-50);
  check_max_ulps<double>("log2 float64 next to 1", near1_64, log2_of, ref_log2, 2.0);
}

TEST_CASE("decompositions: sin within 2 ulp for |x| <= 3.2e6 in float32 and float64") {
  std::vector<float> xs32;
  for (float x : sweep_f32(-3.2e6f, 3.2e6f))
    if (std::isnan(x) || std::fabs(x) <= 3.2e6f) xs32.push_back(x);
  for (int i = 0; i < (1 << 18); ++i)
    xs32.push_back(-10.f + 20.f * static_cast<float>(i) / (1 << 18));
  check_max_ulps<float>("sin float32", xs32, sin_of, ref_sin, 2.0);
  check_max_ulps<float>("sin float32 next to multiples of pi/2",
                        near_half_pi_multiples<float>(3.2e6f), sin_of, ref_sin, 2.0);
  std::vector<double> xs64;
  for (double x : sweep_f64(-3.2e6, 3.2e6))
    if (std::isnan(x) || std::fabs(x) <= 3.2e6) xs64.push_back(x);
  for (int i = 0; i < (1 << 18); ++i)
    xs64.push_back(-10.0 + 20.0 * static_cast<double>(i) / (1 << 18));
  check_max_ulps<double>("sin float64", xs64, sin_of, ref_sin, 2.0);
  check_max_ulps<double>("sin float64 next to multiples of pi/2",
                         near_half_pi_multiples<double>(3.2e6), sin_of, ref_sin, 2.0);
}

TEST_CASE("decompositions: sin past 3.2e6 stays close, and is NaN from 2^50 on") {
  // the reduction's products round past 2^21 * pi/2: the error grows like |x| * 2^-53
  std::vector<double> xs;
  for (int i = 1; i <= 4096; ++i) xs.push_back(std::ldexp(1.0 + i / 4096.0, 22 + i % 27));
  const std::vector<double> got = Tensor::from_vector(xs).sin().to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) {
    INFO("sin(", xs[i], ") = ", got[i], ", libm says ", static_cast<double>(sinl(xs[i])));
    CHECK(std::fabs(got[i] - static_cast<double>(sinl(xs[i]))) <= std::fabs(xs[i]) * 0x1p-50);
  }
  const std::vector<float> big =
      Tensor::from_vector(std::vector<float>{0x1p50f, -1e20f, FLT_MAX}).sin().to_vector<float>();
  for (float y : big) CHECK(std::isnan(y));
}

TEST_CASE("decompositions: special values exactly as libm") {
  const float inf = INFINITY, nan = NAN, den = std::ldexp(1.f, -140), tiny = std::ldexp(1.f, -149);
  auto same = [](auto got, auto want) {
    INFO("got ", got, ", want ", want);
    if (std::isnan(want))
      CHECK(std::isnan(got));
    else
      CHECK((got == want && std::signbit(got) == std::signbit(want)));
  };
  auto check_all = [&](auto sample) {
    using F = decltype(sample);
    // exp2 and log2 of these are exact; sin is exact only for the non-finite ones and zeros
    const std::vector<F> xs{F(0),     -F(0),    F(inf),  -F(inf), F(nan),   F(1),    F(-1),
                            F(2),     F(den),   F(tiny), F(-140), F(-149),  F(-150), F(-151),
                            F(-1074), F(-1075), F(128),  F(1024), F(-0.5f), F(0.25f)};
    const Tensor t = Tensor::from_vector(xs);
    const auto e = t.exp2().template to_vector<F>(), l = t.log2().template to_vector<F>();
    const auto s = t.sin().template to_vector<F>();
    for (size_t i = 0; i < xs.size(); ++i) {
      INFO(dtype_for<F>().name(), " x = ", xs[i]);
      if (xs[i] == std::trunc(xs[i]) || !std::isfinite(xs[i]))
        same(e[i], static_cast<F>(exp2l(xs[i])));
      same(l[i], static_cast<F>(log2l(xs[i])));
      if (xs[i] == 0 || !std::isfinite(xs[i])) same(s[i], static_cast<F>(sinl(xs[i])));
    }
  };
  check_all(0.f);
  check_all(0.0);
  // the ones the brief names, spelled out
  const auto e = Tensor::from_vector(std::vector<float>{-inf, inf, nan, 200.f, -140.f, -151.f})
                     .exp2()
                     .to_vector<float>();
  CHECK(e[0] == 0.f);
  CHECK(e[1] == inf);
  CHECK(std::isnan(e[2]));
  CHECK(e[3] == inf);
  CHECK(e[4] == den);  // a denormal, not 0
  CHECK(e[5] == 0.f);
  const auto l = Tensor::from_vector(std::vector<float>{0.f, -0.f, -1.f, inf, nan, den, -inf})
                     .log2()
                     .to_vector<float>();
  CHECK(l[0] == -inf);
  CHECK(l[1] == -inf);
  CHECK(std::isnan(l[2]));
  CHECK(l[3] == inf);
  CHECK(std::isnan(l[4]));
  CHECK(l[5] == -140.f);
  CHECK(std::isnan(l[6]));
  const auto s =
      Tensor::from_vector(std::vector<float>{inf, -inf, nan, -0.f, 0.f}).sin().to_vector<float>();
  CHECK(std::isnan(s[0]));
  CHECK(std::isnan(s[1]));
  CHECK(std::isnan(s[2]));
  CHECK((s[3] == 0.f && std::signbit(s[3])));
  CHECK((s[4] == 0.f && !std::signbit(s[4])));
}

TEST_CASE("decompositions: float16 and bfloat16 compute in float32 and round once, every input") {
  std::vector<uint16_t> bits(1 << 16);
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i);
  for (const auto& format : {std::pair{dtypes::float16, f16}, std::pair{dtypes::bfloat16, bf16}}) {
    const DType dt = format.first;
    const Format fmt = format.second;
    const Tensor x = Tensor::from_vector(bits).bitcast(dt);
    const std::vector<float> xs = x.cast(dtypes::float32).to_vector<float>();
    for (const Function& fn : functions) {
      const std::string name = fn.name;
      auto* const op = fn.op;
      auto* const ref = fn.ref;
      const std::vector<float> got = op(x).cast(dtypes::float32).to_vector<float>();
      double worst = 0;
      float at = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        if (op == sin_of && std::fabs(xs[i]) > 3.2e6f) continue;  // bfloat16 reaches 3e38
        const double u = ulps(got[i], ref(xs[i]), fmt);
        if (!(u <= worst)) worst = u, at = xs[i];
      }
      INFO(dt.name(), " ", name, ": max error ", worst, " ulp at ", at);
      CHECK(worst <= 1.0);  // one rounding of a float32 result within 1.1 float32 ulp
    }
  }
}

TEST_CASE("decompositions: the math functions built on exp2, log2 and sin") {
  std::vector<double> xs;
  for (int i = 0; i < 4001; ++i) xs.push_back(-20.0 + i / 100.0);
  auto check = [&](const char* name, Tensor (*op)(const Tensor&), double (*ref)(double),
                   bool positive_only) {
    std::vector<double> in, want;
    for (double x : xs)
      if (!positive_only || x > 0) in.push_back(x), want.push_back(ref(x));
    const std::vector<double> got64 = op(Tensor::from_vector(in)).to_vector<double>();
    std::vector<float> in32(in.begin(), in.end());
    const std::vector<float> got32 = op(Tensor::from_vector(in32)).to_vector<float>();
    for (size_t i = 0; i < in.size(); ++i) {
      INFO(std::string(name), "(", in[i], "): float64 ", got64[i], ", float32 ", got32[i],
           ", want ", want[i]);
      // float64: the argument of the last step rounds once (x/ln2 in exp, pi/2 - x in cos, 2x
      // and 1 + e in tanh, sigmoid, softplus); at |x| <= 20 that argument is below 32, so one
      // rounding moves it by at most 2^-48 = 3.6e-15, relative in exp and absolute in cos
      CHECK(std::fabs(got64[i] - want[i]) <= 8e-15 + 8e-15 * std::fabs(want[i]));
      // cos(x) is sin(pi/2 - x) and tanh(x) is 2*sigmoid(2x) - 1: both round a sum first
      const double want32 = ref(static_cast<double>(in32[i]));
      CHECK(std::fabs(static_cast<double>(got32[i]) - want32) <= 2e-6 + 1e-5 * std::fabs(want32));
    }
  };
  check(
      "exp", [](const Tensor& t) { return t.exp(); }, [](double x) { return std::exp(x); }, false);
  check(
      "log", [](const Tensor& t) { return t.log(); }, [](double x) { return std::log(x); }, true);
  check(
      "cos", [](const Tensor& t) { return t.cos(); }, [](double x) { return std::cos(x); }, false);
  check(
      "tanh", [](const Tensor& t) { return t.tanh(); }, [](double x) { return std::tanh(x); },
      false);
  check(
      "sigmoid", [](const Tensor& t) { return t.sigmoid(); },
      [](double x) { return 1 / (1 + std::exp(-x)); }, false);
  check(
      "softplus", [](const Tensor& t) { return t.softplus(); },
      [](double x) { return x > 20 ? x : std::log1p(std::exp(x)); }, false);
}

// A C++ double meeting a float64 tensor keeps its float64 value (1/ln2 in exp, pi/2 in cos): were
// it a float32 constant, float64 exp and cos would lose half their digits (an error near 1e-8).
TEST_CASE("decompositions: float64 exp and cos keep their float64 constants") {
  CHECK(Tensor::from_vector(std::vector<double>{1.0}).mul(0.1).to_vector<double>()[0] == 0.1);
  const std::vector<double> xs{-16.93, 0.5, 10.0};
  const std::vector<double> e = Tensor::from_vector(xs).exp().to_vector<double>();
  const std::vector<double> c = Tensor::from_vector(xs).cos().to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) {
    INFO("x = ", xs[i], ": exp ", e[i], " want ", std::exp(xs[i]), ", cos ", c[i], " want ", std::cos(xs[i]));
    // x/ln2 (below 32 here) rounds once: 2^-48 relative in exp; pi/2 - x: 2^-48 absolute in cos
    CHECK(std::fabs(e[i] - std::exp(xs[i])) <= 4e-15 * std::exp(xs[i]));
    CHECK(std::fabs(c[i] - std::cos(xs[i])) <= 4e-15);
  }
}

TEST_CASE("decompositions: TRANSCENDENTAL=0 keeps libm, 1 leaves no call to it") {
  Context c_source{{"CPU_LLVM", 0}};  // the check reads C source
  // a new input each time: the same graph on the same buffer would be realized already
  const std::vector<float> xs{0.25f, 1.5f, 3.f, 1e-40f, 100.f};
  auto make = [&] {
    const Tensor x = Tensor::from_vector(xs);
    return x.exp2().add(x.log2()).add(x.sin());
  };
  std::vector<float> with, without;
  {
    Context ctx{{"TRANSCENDENTAL", 0}};
    const std::string src = kernel_source(make());
    CHECK(src.find("exp2f(") != std::string::npos);
    CHECK(src.find("log2f(") != std::string::npos);
    CHECK(src.find("sinf(") != std::string::npos);
    without = make().to_vector<float>();
  }
  {
    Context ctx{{"TRANSCENDENTAL", 1}};
    const std::string src = kernel_source(make());
    for (const char* call : {"exp2", "log2", "sin", "trunc", "floor", "rint", "ldexp"}) {
      INFO(call, " in\n", src);
      CHECK(src.find(std::string(call) + "(") == std::string::npos);
      CHECK(src.find(std::string(call) + "f(") == std::string::npos);
    }
    with = make().to_vector<float>();
  }
  // and back: the cache holds both kernels
  {
    Context ctx{{"TRANSCENDENTAL", 0}};
    CHECK(kernel_source(make()).find("exp2f(") != std::string::npos);
  }
  REQUIRE(with.size() == without.size());
  for (size_t i = 0; i < with.size(); ++i) {
    // each function within 1 ulp (2 roundings) of its exact value both ways, and the two sums
    // rounded on each side: 8 roundings of the terms' magnitudes apart at most
    const double x = xs[i], terms = std::exp2(x) + std::fabs(std::log2(x)) + std::fabs(std::sin(x));
    CHECK(std::fabs(static_cast<double>(with[i]) - without[i]) <= 8 * 0x1p-24 * terms);
  }
}

TEST_CASE("decompositions: the rules leave integers and other ops alone") {
  const UOp x = UOp(Ops::DEFINE_VAR, dtypes::float32, {}, Arg{"x", 0, 1});
  for (DType dt : {dtypes::float16, dtypes::bfloat16, dtypes::float32, dtypes::float64})
    for (Ops op : {Ops::EXP2, Ops::LOG2, Ops::SIN}) {
      const UOp out = graph_rewrite(UOp(op, dt, {x.cast(dt)}), codegen::transcendental_rules());
      INFO(op_name(op), " of ", dt.name());
      for (const UOp& u : toposort(out))
        CHECK(!OpSet({Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::TRUNC}).contains(u.op()));
      CHECK(out.dtype() == dt);
    }
  const UOp sq = UOp(Ops::SQRT, dtypes::float32, {x});
  CHECK(graph_rewrite(sq, codegen::transcendental_rules()) == sq);
}
