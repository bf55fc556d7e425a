// Every forward op of the Tensor API (API.md's Creation, Elementwise, Reductions, Movement and
// indexing, Linear algebra and nn functional), realized through the whole engine once by each CPU
// compiler, LLVM's ORC JIT (CPU_LLVM=1) and the system C compiler (CPU_LLVM=0), and the two
// results compared. Both compile the same linearized kernels and promise PyTorch's numerics
// (integers wrap, float16 and bfloat16 are computed in float32 and rounded where a value is half),
// and neither may contract a*b+c into a fused multiply-add on its own (a kernel asks for one with
// MULACC, which both render as a real fused op): they must agree bit for bit, NaN equal to NaN.
// The last test forces LLVM to each x86-64 level this CPU runs and asks for the same bits.
//
// Inputs hold the values that break things: NaN, infinities, -0, denormals, the smallest and
// largest integers, -1 and 0 as divisors, magnitudes past float16's range.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;
using tinyt_test::element;
using tinyt_test::make;

namespace {

// -- inputs -------------------------------------------------------------------------------------

constexpr int64_t edge_count = 32;
const std::vector<double> float_edges = {
    0.0,    -0.0,       1.0,           -1.0,     0.5,       -0.5,  2.5,
    -2.5,   3.75,       -3.5,          1.0 / 3,  0.1,       7.0,   100.0,
    -1e4,   65504.0,    65520.0,       1e30,     -3e38,     1e300, 1e-40,
    1e-310, 6e-8,       -1e-45,        INFINITY, -INFINITY, NAN,   3.14159265358979,
    126.9,  16777217.0, -2147483648.0, 1e-3};
const std::vector<int64_t> int_edges = {
    0,        1,         -1,        2,          -2,        3,         -3,         7,
    -7,       8,         31,        32,         63,        64,        100,        -100,
    127,      -128,      128,       255,        256,       32767,     -32768,     65535,
    16777217, INT32_MIN, INT32_MAX, UINT32_MAX, INT64_MIN, INT64_MAX, 1000000007, -5};
const std::vector<int64_t> bool_pattern = {0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1,
                                           1, 0, 1, 1, 0, 0, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0};

/// The edge values in `dt` (integers wrapped as C++ converts), from the `first`, reshaped to
/// `shape`.
Tensor edges(DType dt, Shape shape = {edge_count}, int64_t first = 0) {
  const std::vector<int64_t>& ints = dt.is_bool() ? bool_pattern : int_edges;
  const int64_t n = shape.numel().as_int();
  return make(dt, {ints.begin() + first, ints.begin() + first + n},
              {float_edges.begin() + first, float_edges.begin() + first + n})
      .reshape(std::move(shape));
}
/// Ordinary values (no edge cases) of magnitude about 1 to 10, different per seed, as integers
/// (bool: 0 or 1) and as floats.
std::pair<std::vector<int64_t>, std::vector<double>> ordinary_values(DType dt, int64_t n,
                                                                     int seed) {
  std::vector<int64_t> ints;
  std::vector<double> floats;
  for (int64_t i = 0; i < n; ++i) {
    ints.push_back(dt.is_bool() ? (i * 7 + seed) % 3 == 0 : (i * 37 + seed * 11) % 23 - 11);
    floats.push_back(std::sin(1.7 * static_cast<double>(i) + seed) *
                     static_cast<double>(1 + (i + seed) % 4));
  }
  return {ints, floats};
}
/// Ordinary values as a tensor of `shape`.
Tensor smooth(DType dt, Shape shape, int seed = 0) {
  const auto [ints, floats] = ordinary_values(dt, shape.numel().as_int(), seed);
  return make(dt, ints, floats).reshape(std::move(shape));
}
/// Eight by eight: four rows of ordinary values, then four of edge values.
Tensor mixed(DType dt) {
  auto [ints, floats] = ordinary_values(dt, edge_count, 0);
  const std::vector<int64_t>& edge_ints = dt.is_bool() ? bool_pattern : int_edges;
  ints.insert(ints.end(), edge_ints.begin(), edge_ints.end());
  floats.insert(floats.end(), float_edges.begin(), float_edges.end());
  return make(dt, ints, floats).reshape({8, 8});
}

const std::vector<DType> float_dtypes = {dtypes::float32, dtypes::float16, dtypes::bfloat16,
                                         dtypes::float64};
const std::vector<DType> int_dtypes = {dtypes::int8,   dtypes::int16, dtypes::int32,
                                       dtypes::int64,  dtypes::uint8, dtypes::uint16,
                                       dtypes::uint32, dtypes::uint64};
const std::vector<DType> all_dtypes = dtypes::all();
std::vector<DType> join(std::vector<DType> a, const std::vector<DType>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
const std::vector<DType> int_and_bool_dtypes = join(int_dtypes, {dtypes::bool_});
const std::vector<DType> numeric_dtypes = join(float_dtypes, int_dtypes);
// math functions compute integers in the default float: a few of them stand for all
const std::vector<DType> math_dtypes =
    join(float_dtypes, {dtypes::int8, dtypes::int32, dtypes::uint32, dtypes::int64, dtypes::bool_});

// -- realizing with each compiler and comparing ----------------------------------------------


/// What one compiler computed.
struct Realized {
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  int64_t kernels = 0;
};

/// The bytes of `t`'s elements, row-major (realizes it).
std::vector<uint8_t> bytes_of(const Tensor& t) {
  std::vector<uint8_t> bytes;
  tinyt_test::with_type(t.dtype(), [&](auto zero) {
    using E = decltype(zero);
    if (t.dtype().is_bool()) {
      const std::vector<bool> v = t.to_vector<bool>();
      bytes.assign(v.begin(), v.end());
    } else {
      const std::vector<E> v = t.to_vector<E>();
      bytes.resize(v.size() * sizeof(E));
      if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
    }
  });
  return bytes;
}

/// Forgets every value computed in `graph`. Graphs are interned, so the same expression built again
/// is the same node, and a node remembers its value: without this the second compiler would read
/// what the first one computed.
void forget_values(const UOp& graph) {
  for (const UOp& u : toposort(graph)) {
    if (u.op() == Ops::BUFFER) continue;
    TensorMeta& meta = graph::meta(u);
    std::lock_guard lock(meta.mu);
    meta.realized = UOp();
  }
}

/// `build()` realized by one compiler (CPU_LLVM=`cpu_llvm` for the scope).
Realized realize_with(int cpu_llvm, const std::function<Tensor()>& build) {
  Context compiler{{"CPU_LLVM", cpu_llvm}};
  REQUIRE(cpu_compiler() == (cpu_llvm ? CpuCompiler::llvm : CpuCompiler::cc));
  const Tensor t = build();
  const UOp graph = t.uop();
  const int64_t before = GlobalCounters::kernel_count;
  Realized r{t.dtype(), t.shape().to_vector(), bytes_of(t), 0};
  r.kernels = GlobalCounters::kernel_count - before;
  forget_values(graph);
  return r;
}

/// The elements on which the two results differ, described (empty when they agree).
std::string differences(const Realized& c, const Realized& llvm) {
  const DType dt = c.dtype;
  const size_t size = static_cast<size_t>(dt.itemsize()), n = c.bytes.size() / size;
  std::ostringstream first;
  first.precision(17);
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(c.bytes.data() + i * size, llvm.bytes.data() + i * size, size) == 0) continue;
    const double x = element(c.bytes.data(), dt, i), y = element(llvm.bytes.data(), dt, i);
    if (dt.is_float() && std::isnan(x) && std::isnan(y)) continue;
    if (++count <= 8) first << "  [" << i << "] C " << x << "  LLVM " << y << "\n";
  }
  if (!count) return "";
  std::ostringstream out;
  out << count << " of " << n << " elements differ:\n" << first.str();
  return out.str();
}

/// Realizes `build()` with each compiler and checks that the results agree.
void check_agree(const std::string& what, const std::function<Tensor()>& build) {
  INFO(what);
  const Realized c = realize_with(0, build), llvm = realize_with(1, build);
  REQUIRE(c.dtype == llvm.dtype);
  REQUIRE(c.shape == llvm.shape);
  CHECK(c.kernels == llvm.kernels);  // the same schedule, and neither read what the other computed
  const std::string diff = differences(c, llvm);
  CHECK_MESSAGE(diff.empty(), diff);
}

std::string named(const char* op, DType dt) {
  return std::string(op) + " of " + std::string(dt.name());
}
/// `build` after seeding the random generator: random values come from the seed alone.
std::function<Tensor()> seeded(uint64_t seed, Tensor (*build)()) {
  return [seed, build] {
    Tensor::manual_seed(seed);
    return build();
  };
}

// -- op tables ----------------------------------------------------------------------------------

struct UnaryOp {
  const char* name;
  std::function<Tensor(const Tensor&)> f;
  std::vector<DType> dtypes;
  bool math = false;  // built on exp2, log2, sin or pow (libm calls with TRANSCENDENTAL=0)
};
struct BinaryOp {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> f;
  std::vector<DType> dtypes;
};
struct TernaryOp {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)> f;
  std::vector<DType> dtypes;
};
/// An op whose inputs the table entry makes itself, from a dtype.
struct BuiltOp {
  const char* name;
  std::function<Tensor(DType)> f;
  std::vector<DType> dtypes;
};

// exp2, log2 and sin become polynomials (codegen/decompositions.hpp) of multiply-adds that no
// compiler may fuse: the ops built on them (marked `true`) agree to the bit as well
// clang-format off
const std::vector<UnaryOp> unary_ops = {
    {"neg", [](const Tensor& x) { return x.neg(); }, all_dtypes},
    {"operator-", [](const Tensor& x) { return -x; }, numeric_dtypes},
    {"abs", [](const Tensor& x) { return x.abs(); }, all_dtypes},
    {"sign", [](const Tensor& x) { return x.sign(); }, all_dtypes},
    {"exp", [](const Tensor& x) { return x.exp(); }, math_dtypes, true},
    {"exp2", [](const Tensor& x) { return x.exp2(); }, math_dtypes, true},
    {"log", [](const Tensor& x) { return x.log(); }, math_dtypes, true},
    {"log2", [](const Tensor& x) { return x.log2(); }, math_dtypes, true},
    {"sqrt", [](const Tensor& x) { return x.sqrt(); }, math_dtypes},
    {"rsqrt", [](const Tensor& x) { return x.rsqrt(); }, math_dtypes},
    {"reciprocal", [](const Tensor& x) { return x.reciprocal(); }, math_dtypes},
    {"square", [](const Tensor& x) { return x.square(); }, numeric_dtypes},
    {"sin", [](const Tensor& x) { return x.sin(); }, math_dtypes, true},
    {"cos", [](const Tensor& x) { return x.cos(); }, math_dtypes, true},
    {"tan", [](const Tensor& x) { return x.tan(); }, math_dtypes, true},
    {"trunc", [](const Tensor& x) { return x.trunc(); }, all_dtypes},
    {"floor", [](const Tensor& x) { return x.floor(); }, all_dtypes},
    {"ceil", [](const Tensor& x) { return x.ceil(); }, all_dtypes},
    {"round", [](const Tensor& x) { return x.round(); }, all_dtypes},
    {"isnan", [](const Tensor& x) { return x.isnan(); }, all_dtypes},
    {"isinf", [](const Tensor& x) { return x.isinf(); }, all_dtypes},
    {"isfinite", [](const Tensor& x) { return x.isfinite(); }, all_dtypes},
    {"logical_not", [](const Tensor& x) { return x.logical_not(); }, all_dtypes},
    {"operator!", [](const Tensor& x) { return !x; }, all_dtypes},
    {"bitwise_not", [](const Tensor& x) { return x.bitwise_not(); }, int_and_bool_dtypes},
    {"operator~", [](const Tensor& x) { return ~x; }, int_and_bool_dtypes},
    {"relu", [](const Tensor& x) { return x.relu(); }, numeric_dtypes},
    {"relu6", [](const Tensor& x) { return x.relu6(); }, numeric_dtypes},
    {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }, math_dtypes, true},
    {"logsigmoid", [](const Tensor& x) { return x.logsigmoid(); }, math_dtypes, true},
    {"tanh", [](const Tensor& x) { return x.tanh(); }, math_dtypes, true},
    {"gelu", [](const Tensor& x) { return x.gelu(); }, math_dtypes, true},
    {"quick_gelu", [](const Tensor& x) { return x.quick_gelu(); }, math_dtypes, true},
    {"silu", [](const Tensor& x) { return x.silu(); }, math_dtypes, true},
    {"elu", [](const Tensor& x) { return x.elu(0.7); }, math_dtypes, true},
    {"leaky_relu", [](const Tensor& x) { return x.leaky_relu(0.05); }, math_dtypes},
    {"softplus", [](const Tensor& x) { return x.softplus(0.5); }, math_dtypes, true},
    {"mish", [](const Tensor& x) { return x.mish(); }, math_dtypes, true},
    {"hardswish", [](const Tensor& x) { return x.hardswish(); }, math_dtypes},
    {"hardsigmoid", [](const Tensor& x) { return x.hardsigmoid(); }, math_dtypes},
    {"hardtanh", [](const Tensor& x) { return x.hardtanh(-2.0, 3.5); }, math_dtypes},
    {"erf", [](const Tensor& x) { return x.erf(); }, math_dtypes, true},
    {"float_", [](const Tensor& x) { return x.float_(); }, all_dtypes},
    {"half", [](const Tensor& x) { return x.half(); }, all_dtypes},
    {"bool_", [](const Tensor& x) { return x.bool_(); }, all_dtypes},
    // with C++ scalars, which take the tensor's dtype where they fit
    {"x + 3", [](const Tensor& x) { return x + 3; }, all_dtypes},
    {"x * 2.5", [](const Tensor& x) { return x * 2.5; }, all_dtypes},
    {"x + 0.1", [](const Tensor& x) { return x + 0.1; }, numeric_dtypes},
    {"10 - x", [](const Tensor& x) { return 10 - x; }, numeric_dtypes},
    {"x / 3", [](const Tensor& x) { return x / 3; }, all_dtypes},
    {"x % 7", [](const Tensor& x) { return x % 7; }, numeric_dtypes},
    {"x % -7", [](const Tensor& x) { return x % -7; }, numeric_dtypes},
    {"floordiv(x, 4)", [](const Tensor& x) { return floordiv(x, 4); }, numeric_dtypes},
    {"x.pow(2)", [](const Tensor& x) { return x.pow(2); }, numeric_dtypes},
    {"x.pow(0.5)", [](const Tensor& x) { return x.pow(0.5); }, math_dtypes, true},
    {"2 ** x", [](const Tensor& x) { return Tensor(2.0).pow(x); }, math_dtypes, true},
    {"x << 3", [](const Tensor& x) { return x << 3; }, int_dtypes},
    {"x >> 2", [](const Tensor& x) { return x >> 2; }, int_dtypes},
    {"x & 6", [](const Tensor& x) { return x & 6; }, int_and_bool_dtypes},
    {"x == 1", [](const Tensor& x) { return x == 1; }, all_dtypes},
    {"x < 2.5", [](const Tensor& x) { return x < 2.5; }, all_dtypes},
    {"x >= -1", [](const Tensor& x) { return x >= -1; }, numeric_dtypes},
    {"x.maximum(0.5)", [](const Tensor& x) { return x.maximum(0.5); }, numeric_dtypes},
    {"x.minimum(-1)", [](const Tensor& x) { return x.minimum(-1); }, numeric_dtypes},
};
// clang-format on

// clang-format off
const std::vector<BinaryOp> binary_ops = {
    {"add", [](const Tensor& a, const Tensor& b) { return a.add(b); }, all_dtypes},
    {"sub", [](const Tensor& a, const Tensor& b) { return a.sub(b); }, numeric_dtypes},
    {"mul", [](const Tensor& a, const Tensor& b) { return a.mul(b); }, all_dtypes},
    {"div", [](const Tensor& a, const Tensor& b) { return a.div(b); }, all_dtypes},
    {"floordiv", [](const Tensor& a, const Tensor& b) { return a.floordiv(b); }, numeric_dtypes},
    {"mod", [](const Tensor& a, const Tensor& b) { return a.mod(b); }, numeric_dtypes},
    {"pow", [](const Tensor& a, const Tensor& b) { return a.pow(b); }, numeric_dtypes},
    {"maximum", [](const Tensor& a, const Tensor& b) { return a.maximum(b); }, all_dtypes},
    {"minimum", [](const Tensor& a, const Tensor& b) { return a.minimum(b); }, all_dtypes},
    {"eq", [](const Tensor& a, const Tensor& b) { return a.eq(b); }, all_dtypes},
    {"ne", [](const Tensor& a, const Tensor& b) { return a.ne(b); }, all_dtypes},
    {"lt", [](const Tensor& a, const Tensor& b) { return a.lt(b); }, all_dtypes},
    {"le", [](const Tensor& a, const Tensor& b) { return a.le(b); }, all_dtypes},
    {"gt", [](const Tensor& a, const Tensor& b) { return a.gt(b); }, all_dtypes},
    {"ge", [](const Tensor& a, const Tensor& b) { return a.ge(b); }, all_dtypes},
    {"bitwise_and", [](const Tensor& a, const Tensor& b) { return a.bitwise_and(b); }, int_and_bool_dtypes},
    {"bitwise_or", [](const Tensor& a, const Tensor& b) { return a.bitwise_or(b); }, int_and_bool_dtypes},
    {"bitwise_xor", [](const Tensor& a, const Tensor& b) { return a.bitwise_xor(b); }, int_and_bool_dtypes},
    {"lshift", [](const Tensor& a, const Tensor& b) { return a.lshift(b); }, int_dtypes},
    {"rshift", [](const Tensor& a, const Tensor& b) { return a.rshift(b); }, int_dtypes},
    {"logical_and", [](const Tensor& a, const Tensor& b) { return a.logical_and(b); }, all_dtypes},
    {"logical_or", [](const Tensor& a, const Tensor& b) { return a.logical_or(b); }, all_dtypes},
    {"logical_xor", [](const Tensor& a, const Tensor& b) { return a.logical_xor(b); }, all_dtypes},
    {"operator+", [](const Tensor& a, const Tensor& b) { return Tensor(a + b); }, all_dtypes},
    {"operator-", [](const Tensor& a, const Tensor& b) { return Tensor(a - b); }, numeric_dtypes},
    {"operator*", [](const Tensor& a, const Tensor& b) { return Tensor(a * b); }, all_dtypes},
    {"operator/", [](const Tensor& a, const Tensor& b) { return Tensor(a / b); }, all_dtypes},
    {"operator%", [](const Tensor& a, const Tensor& b) { return a % b; }, numeric_dtypes},
    {"operator==", [](const Tensor& a, const Tensor& b) { return Tensor(a == b); }, all_dtypes},
    {"operator!=", [](const Tensor& a, const Tensor& b) { return Tensor(a != b); }, all_dtypes},
    {"operator<", [](const Tensor& a, const Tensor& b) { return Tensor(a < b); }, all_dtypes},
    {"operator<=", [](const Tensor& a, const Tensor& b) { return a <= b; }, all_dtypes},
    {"operator>", [](const Tensor& a, const Tensor& b) { return a > b; }, all_dtypes},
    {"operator>=", [](const Tensor& a, const Tensor& b) { return a >= b; }, all_dtypes},
    {"operator&", [](const Tensor& a, const Tensor& b) { return a & b; }, int_and_bool_dtypes},
    {"operator|", [](const Tensor& a, const Tensor& b) { return a | b; }, int_and_bool_dtypes},
    {"operator^", [](const Tensor& a, const Tensor& b) { return a ^ b; }, int_and_bool_dtypes},
    {"operator<<", [](const Tensor& a, const Tensor& b) { return a << b; }, int_dtypes},
    {"operator>>", [](const Tensor& a, const Tensor& b) { return a >> b; }, int_dtypes},
    // an expression the templates keep whole: one kernel of several ops, inlined by the C renderer
    {"a * b + a - b", [](const Tensor& a, const Tensor& b) { return Tensor(a * b + a - b); }, numeric_dtypes},
    {"(a + b) < a", [](const Tensor& a, const Tensor& b) { return Tensor((a + b) < a); }, numeric_dtypes},
};
// clang-format on

// the first operand is a bool condition
// clang-format off
const std::vector<TernaryOp> conditional_ops = {
    {"where", [](const Tensor& c, const Tensor& a, const Tensor& b) { return c.where(a, b); }, all_dtypes},
    {"where with a scalar", [](const Tensor& c, const Tensor& a, const Tensor&) { return c.where(a, 2); }, all_dtypes},
    {"masked_fill", [](const Tensor& m, const Tensor& x, const Tensor& v) { return x.masked_fill(m, v); }, all_dtypes},
};
const std::vector<TernaryOp> ternary_ops = {
    {"clip", [](const Tensor& x, const Tensor& lo, const Tensor& hi) { return x.clip(lo, hi); }, numeric_dtypes},
    {"clip to scalars", [](const Tensor& x, const Tensor&, const Tensor&) { return x.clip(-3, 100); }, numeric_dtypes},
    {"lerp", [](const Tensor& a, const Tensor& end, const Tensor& w) { return a.lerp(end, w); }, float_dtypes},
};
// clang-format on

/// Each op of `table`, for each of its dtypes, on `input(dtype)`.
void check_each(const std::vector<UnaryOp>& table, Tensor (*input)(DType)) {
  for (const UnaryOp& op : table)
    for (DType dt : op.dtypes) {
      const Tensor x = input(dt);
      const auto build = [&] { return op.f(x); };
      check_agree(named(op.name, dt), build);
    }
}
Tensor edge_values(DType dt) { return edges(dt); }

}  // namespace

TEST_CASE("backends: unary elementwise ops agree for every dtype") {
  check_each(unary_ops, edge_values);
}

TEST_CASE("backends: the math functions agree where they call libm (TRANSCENDENTAL=0)") {
  Context libm{{"TRANSCENDENTAL", 0}};  // exp2, log2, sin and pow call the C library in both
  std::vector<UnaryOp> math;
  for (const UnaryOp& op : unary_ops)
    if (op.math) math.push_back({op.name, op.f, join(float_dtypes, {dtypes::int32}), true});
  check_each(math, edge_values);
}

TEST_CASE("backends: binary elementwise ops and operators agree on every pair of edge values") {
  for (const BinaryOp& op : binary_ops)
    for (DType dt : op.dtypes) {
      // every edge value against every other: a column against a row
      const Tensor a = edges(dt, {edge_count, 1}), b = edges(dt, {1, edge_count});
      const auto build = [&] { return op.f(a, b); };
      check_agree(named(op.name, dt), build);
    }
}

TEST_CASE("backends: ternary elementwise ops agree") {
  constexpr int64_t n = 12;  // n^3 combinations of three runs of n edge values
  for (bool conditional : {true, false})
    for (const TernaryOp& op : conditional ? conditional_ops : ternary_ops)
      for (DType dt : op.dtypes) {
        const Tensor x = edges(conditional ? dtypes::bool_ : dt, {n, 1, 1});
        const Tensor y = edges(dt, {1, n, 1}, 4), z = edges(dt, {1, 1, n}, edge_count - n);
        const auto build = [&] { return op.f(x, y, z); };
        check_agree(named(op.name, dt), build);
      }
}

TEST_CASE("backends: casts and bitcasts agree between every pair of dtypes") {
  for (DType from : all_dtypes)
    for (DType to : all_dtypes) {
      std::vector<double> floats = float_edges;
      if (from.is_float() && to.is_int()) {
        // a float outside the target's range (or NaN) has no value in C, LLVM or PyTorch: only
        // values that fit
        std::erase_if(floats, [&](double v) {
          const double r = std::trunc(round_float(v, from));
          return !(r >= static_cast<double>(dtypes::min_int(to)) &&
                   r <= static_cast<double>(dtypes::max_int(to)) && std::abs(r) < 9e18);
        });
      }
      const Tensor x = make(from, from.is_bool() ? bool_pattern : int_edges, floats);
      const std::string from_to = std::string(from.name()) + " to " + std::string(to.name());
      check_agree("cast from " + from_to, [&] { return x.cast(to); });
      if (from.itemsize() == to.itemsize())
        check_agree("bitcast from " + from_to, [&] { return x.bitcast(to); });
    }
}

TEST_CASE("backends: creation ops agree") {
  // clang-format off
  const std::vector<std::pair<std::string, std::function<Tensor()>>> creations = {
      {"Tensor(float)", [] { return Tensor(2.75f); }},
      {"Tensor(double)", [] { return Tensor(0.1); }},
      {"Tensor(int)", [] { return Tensor(-7); }},
      {"Tensor(int64_t)", [] { return Tensor(int64_t{1} << 40); }},
      {"Tensor(bool)", [] { return Tensor(true); }},
      // (from_vector and from_blob copy bytes in and compile nothing: listed to cover the API)
      {"from_vector", [] { return Tensor::from_vector(std::vector<float>{1.5f, NAN, -0.0f}); }},
      {"from_vector with shape", [] { return Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6}, {2, 3}); }},
      {"from_blob", [] {
         const uint16_t bits[] = {0x3c00, 0x7e00, 0x8001};
         return Tensor::from_blob(bits, {3}, dtypes::float16);
       }},
      {"zeros", [] { return Tensor::zeros({3, 4}); }},
      {"zeros of int8", [] { return Tensor::zeros({5}, dtypes::int8); }},
      {"ones of bfloat16", [] { return Tensor::ones({2, 3}, dtypes::bfloat16); }},
      {"ones of bool", [] { return Tensor::ones({4}, dtypes::bool_); }},
      {"full", [] { return Tensor::full({2, 2}, 3.5); }},
      {"full of NaN", [] { return Tensor::full({3}, NAN, dtypes::float64); }},
      {"full of -0", [] { return Tensor::full({3}, -0.0, dtypes::float32); }},
      {"full of 65520 in float16", [] { return Tensor::full({3}, 65520.0, dtypes::float16); }},
      {"full of 300 in uint8", [] { return Tensor::full({3}, 300, dtypes::uint8); }},
      {"full of INT64_MIN", [] { return Tensor::full({2}, INT64_MIN, dtypes::int64); }},
      {"arange(stop)", [] { return Tensor::arange(10); }},
      {"arange(start, stop, step)", [] { return Tensor::arange(5, -20, -3); }},
      {"eye", [] { return Tensor::eye(4); }},
      {"eye(n, m)", [] { return Tensor::eye(3, 5); }},
      {"zeros_like", [] { return Tensor::zeros_like(edges(dtypes::int16)); }},
      {"ones_like", [] { return Tensor::ones_like(edges(dtypes::float16)); }},
      {"full_like", [] { return Tensor::full_like(edges(dtypes::uint32), 7); }},
      {"rand", seeded(7, [] { return Tensor::rand({4, 5}); })},
      {"rand of float16", seeded(7, [] { return Tensor::rand({64}, dtypes::float16); })},
      {"rand of bfloat16", seeded(7, [] { return Tensor::rand({64}, dtypes::bfloat16); })},
      {"rand of float64", seeded(7, [] { return Tensor::rand({64}, dtypes::float64); })},
      {"randint", seeded(3, [] { return Tensor::randint({50}, -5, 17); })},
      {"randint of int64", seeded(3, [] { return Tensor::randint({50}, -1000000, 1000000, dtypes::int64); })},
      {"uniform", seeded(9, [] { return Tensor::uniform({30}, -2.0, 3.0); })},
      {"rand_like", seeded(1, [] { return Tensor::rand_like(smooth(dtypes::float32, {3, 3})); })},
      {"scaled_uniform", seeded(2, [] { return Tensor::scaled_uniform({6, 4}); })},
      {"glorot_uniform", seeded(2, [] { return Tensor::glorot_uniform({6, 4}); })},
      {"kaiming_uniform", seeded(2, [] { return Tensor::kaiming_uniform({6, 4}); })},
  };
  for (const auto& [name, build] : creations) check_agree(name, build);
  const std::vector<std::pair<std::string, std::function<Tensor()>>> multiply_adds = {
      // start + i * step, which C once fused into one FMA (arange(-1.0, 2.0, 0.1)[10] was -7e-9)
      {"arange of floats", [] { return Tensor::arange(-1.0, 2.0, 0.1); }},
      {"linspace", [] { return Tensor::linspace(-1, 1, 11); }},
      {"linspace of float64", [] { return Tensor::linspace(0.0, 1.0, 7, dtypes::float64); }},
      // normal samples go through log and cos, polynomials of multiply-adds
      {"randn", seeded(5, [] { return Tensor::randn({64}); })},
      {"randn of float64", seeded(5, [] { return Tensor::randn({64}, dtypes::float64); })},
      {"randn of float16", seeded(5, [] { return Tensor::randn({64}, dtypes::float16); })},
      {"randn_like", seeded(5, [] { return Tensor::randn_like(smooth(dtypes::bfloat16, {8, 8})); })},
      {"normal", seeded(6, [] { return Tensor::normal({64}, 3.0, 0.5); })},
      {"kaiming_normal", seeded(6, [] { return Tensor::kaiming_normal({8, 8}); })},
  };
  // clang-format on
  for (const auto& [name, build] : multiply_adds) check_agree(name, build);
  // Tensor::empty is left out: its memory holds whatever it held, so there is nothing to compare
}

TEST_CASE("backends: reductions agree for every dtype") {
  // clang-format off
  const std::vector<UnaryOp> reductions = {
      {"sum", [](const Tensor& x) { return x.sum(); }, all_dtypes},
      {"sum(0)", [](const Tensor& x) { return x.sum(0); }, all_dtypes},
      {"sum(1, keepdim)", [](const Tensor& x) { return x.sum(1, true); }, all_dtypes},
      {"sum({0, 1})", [](const Tensor& x) { return x.reshape({4, 2, 8}).sum({0, 2}); }, all_dtypes},
      {"prod", [](const Tensor& x) { return x.prod(); }, all_dtypes},
      {"prod(1)", [](const Tensor& x) { return x.prod(1); }, all_dtypes},
      {"prod({0, 1})", [](const Tensor& x) { return x.reshape({2, 4, 8}).prod({0, 2}, true); }, all_dtypes},
      {"max", [](const Tensor& x) { return x.max(); }, all_dtypes},
      {"max(0)", [](const Tensor& x) { return x.max(0); }, all_dtypes},
      {"max({0, 1})", [](const Tensor& x) { return x.reshape({2, 4, 8}).max({1, 2}, true); }, all_dtypes},
      {"min", [](const Tensor& x) { return x.min(); }, all_dtypes},
      {"min(1)", [](const Tensor& x) { return x.min(1, true); }, all_dtypes},
      {"min({0, 1})", [](const Tensor& x) { return x.min({0, 1}); }, all_dtypes},
      {"mean", [](const Tensor& x) { return x.mean(); }, all_dtypes},
      {"mean(1)", [](const Tensor& x) { return x.mean(1); }, all_dtypes},
      {"mean({0, 1})", [](const Tensor& x) { return x.reshape({2, 4, 8}).mean({0, 2}, true); }, all_dtypes},
      {"any", [](const Tensor& x) { return x.any(); }, all_dtypes},
      {"any(1)", [](const Tensor& x) { return x.any(1, true); }, all_dtypes},
      {"all", [](const Tensor& x) { return x.all(); }, all_dtypes},
      {"all(0)", [](const Tensor& x) { return x.all(0); }, all_dtypes},
      {"argmax", [](const Tensor& x) { return x.argmax(); }, all_dtypes},
      {"argmax(1)", [](const Tensor& x) { return x.argmax(1, true); }, all_dtypes},
      {"argmin", [](const Tensor& x) { return x.argmin(); }, all_dtypes},
      {"argmin(0)", [](const Tensor& x) { return x.argmin(0); }, all_dtypes},
      {"cumsum(0)", [](const Tensor& x) { return x.cumsum(0); }, all_dtypes},
      {"cumsum(1)", [](const Tensor& x) { return x.cumsum(1); }, all_dtypes},
      {"var", [](const Tensor& x) { return x.var(); }, numeric_dtypes},
      {"var(1)", [](const Tensor& x) { return x.var(1); }, numeric_dtypes},
      {"var({0, 1}, correction 0)", [](const Tensor& x) { return x.var({0, 1}, true, 0); }, numeric_dtypes},
      {"std", [](const Tensor& x) { return x.std(); }, numeric_dtypes},
      {"std(0)", [](const Tensor& x) { return x.std(0, true); }, numeric_dtypes},
      {"std({0, 1})", [](const Tensor& x) { return x.std({0, 1}); }, numeric_dtypes},
      {"logsumexp(1)", [](const Tensor& x) { return x.logsumexp(1); }, math_dtypes},
      {"logsumexp(0, keepdim)", [](const Tensor& x) { return x.logsumexp(0, true); }, math_dtypes},
      {"softmax", [](const Tensor& x) { return x.softmax(); }, math_dtypes},
      {"softmax(0)", [](const Tensor& x) { return x.softmax(0); }, math_dtypes},
      {"log_softmax", [](const Tensor& x) { return x.log_softmax(); }, math_dtypes},
      {"log_softmax(0)", [](const Tensor& x) { return x.log_softmax(0); }, math_dtypes},
  };
  // clang-format on
  check_each(reductions, mixed);
}

TEST_CASE("backends: movement and indexing agree for every dtype") {
  // clang-format off
  const std::vector<UnaryOp> movements = {
      {"reshape", [](const Tensor& x) { return x.reshape({8, 8}); }, all_dtypes},
      {"reshape(-1)", [](const Tensor& x) { return x.reshape({-1, 2}); }, all_dtypes},
      {"view", [](const Tensor& x) { return x.view({2, 32}); }, all_dtypes},
      {"permute", [](const Tensor& x) { return x.permute({1, 2, 0}); }, all_dtypes},
      {"expand", [](const Tensor& x) { return x.shrink({{0, 4}, {1, 2}, {0, 4}}).expand({4, 5, 4}); }, all_dtypes},
      {"pad", [](const Tensor& x) { return x.pad({{1, 0}, {0, 2}, {1, 1}}); }, all_dtypes},
      {"pad with a value", [](const Tensor& x) { return x.pad({{0, 1}, {2, 0}, {0, 0}}, 3.0); }, all_dtypes},
      {"pad with NaN", [](const Tensor& x) { return x.pad({{2, 2}, {0, 0}, {1, 0}}, NAN); }, float_dtypes},
      {"shrink", [](const Tensor& x) { return x.shrink({{1, 3}, {0, 4}, {2, 3}}); }, all_dtypes},
      {"flip", [](const Tensor& x) { return x.flip(0); }, all_dtypes},
      {"flip of two axes", [](const Tensor& x) { return x.flip({0, 2}); }, all_dtypes},
      {"transpose", [](const Tensor& x) { return x.transpose(); }, all_dtypes},
      {"transpose(0, 2)", [](const Tensor& x) { return x.transpose(0, 2); }, all_dtypes},
      {"T", [](const Tensor& x) { return x.reshape({8, 8}).T(); }, all_dtypes},
      {"flatten", [](const Tensor& x) { return x.flatten(); }, all_dtypes},
      {"flatten(1)", [](const Tensor& x) { return x.flatten(1); }, all_dtypes},
      {"unflatten", [](const Tensor& x) { return x.unflatten(2, {2, 2}); }, all_dtypes},
      {"squeeze", [](const Tensor& x) { return x.shrink({{0, 4}, {3, 4}, {0, 4}}).squeeze(1); }, all_dtypes},
      {"unsqueeze", [](const Tensor& x) { return x.unsqueeze(1); }, all_dtypes},
      {"repeat", [](const Tensor& x) { return x.repeat({2, 1, 3}); }, all_dtypes},
      {"contiguous", [](const Tensor& x) { return x.contiguous(); }, all_dtypes},
      {"cat", [](const Tensor& x) { return Tensor::cat({x, x.flip(0), x.shrink({{0, 4}, {0, 1}, {0, 4}})}, 1); }, all_dtypes},
      {"stack", [](const Tensor& x) { return Tensor::stack({x, x.flip(1)}, 2); }, all_dtypes},
      {"split", [](const Tensor& x) {
         const std::vector<Tensor> parts = x.split(3, 2);
         return Tensor::cat({parts[1], parts[0]}, 2);
       }, all_dtypes},
      {"split by sizes", [](const Tensor& x) { return x.split(std::vector<int64_t>{1, 3}, 0)[1]; }, all_dtypes},
      {"chunk", [](const Tensor& x) { return x.chunk(2, 1)[1]; }, all_dtypes},
      {"x[{1}]", [](const Tensor& x) { return Tensor(x[{1}]); }, all_dtypes},
      {"x[{Slice(1, 3), Ellipsis}]", [](const Tensor& x) { return Tensor(x[{Slice(1, 3), Ellipsis}]); }, all_dtypes},
      {"x[{Ellipsis, Slice(None, None, -2)}]", [](const Tensor& x) { return Tensor(x[{Ellipsis, Slice(None, None, -2)}]); }, all_dtypes},
      {"x[{NewAxis, 2, Slice(None, None, 3)}]", [](const Tensor& x) { return Tensor(x[{NewAxis, 2, Slice(None, None, 3)}]); }, all_dtypes},
      {"x[{Slice(-3, None), -1}]", [](const Tensor& x) { return Tensor(x[{Slice(-3, None), -1}]); }, all_dtypes},
      {"x[{index tensor}]", [](const Tensor& x) { return Tensor(x[{Tensor::from_vector(std::vector<int32_t>{3, -1, 0, 0, 2})}]); }, all_dtypes},
      {"x[{Slice(), index tensor, 1}]", [](const Tensor& x) {
         return Tensor(x[{Slice(), Tensor::from_vector(std::vector<int32_t>{1, 3, 2, -4}, {2, 2}), 1}]);
       }, all_dtypes},
      {"gather", [](const Tensor& x) {
         return x.gather(1, Tensor::from_vector(std::vector<int32_t>{0, 3, 1, 2, 2, 1, 0, 3, 3, 3, 0, 1}, {4, 1, 3}).expand({4, 2, 3}));
       }, all_dtypes},
      {"setitem", [](const Tensor& x) {
         Tensor target = x.contiguous().realize();
         target[{Slice(1, 3), 0}] = x[{0, Slice(0, 2)}].flip(1);
         return target;
       }, all_dtypes},
      {"setitem with an index tensor", [](const Tensor& x) {
         Tensor target = x.contiguous().realize();
         target[{Tensor::from_vector(std::vector<int32_t>{2, 0})}] = x[{Slice(0, 2)}].flip(0);
         return target;
       }, all_dtypes},
      {"assign", [](const Tensor& x) {
         Tensor target = x.contiguous().realize();
         target.assign(x.flip(0));
         return target;
       }, all_dtypes},
  };
  // clang-format on
  // on a permuted view: every op reads memory through index arithmetic
  check_each(movements, [](DType dt) { return mixed(dt).reshape({4, 4, 4}).permute({2, 0, 1}); });
  for (DType dt : int_dtypes)
    check_agree(named("one_hot", dt), [&] { return Tensor::arange(7).sub(1).cast(dt).one_hot(5); });
}

TEST_CASE("backends: linear algebra and nn functional agree") {
  // Sums of products: float32 and float64 accumulate with fused multiply-adds (MULACC) in both,
  // the half floats round every product before it is summed: bit for bit, all of them.
  // clang-format off
  const std::vector<BuiltOp> ops = {
      {"matmul", [](DType dt) { return smooth(dt, {5, 7}, 1).matmul(smooth(dt, {7, 3}, 2)); }, numeric_dtypes},
      {"matmul of edge values", [](DType dt) { return edges(dt, {4, 8}).matmul(edges(dt, {8, 4}).flip(0)); }, numeric_dtypes},
      {"batched matmul", [](DType dt) { return smooth(dt, {2, 3, 4}, 1).matmul(smooth(dt, {4, 5}, 2)); }, numeric_dtypes},
      {"vector matmul", [](DType dt) { return smooth(dt, {6}, 1).matmul(smooth(dt, {6, 3}, 2)); }, numeric_dtypes},
      {"dot", [](DType dt) { return smooth(dt, {9}, 1).dot(smooth(dt, {9}, 3)); }, numeric_dtypes},
      {"linear", [](DType dt) { return smooth(dt, {4, 6}, 1).linear(smooth(dt, {6, 3}, 2)); }, numeric_dtypes},
      {"linear with bias", [](DType dt) { return smooth(dt, {4, 6}, 1).linear(smooth(dt, {6, 3}, 2), smooth(dt, {3}, 3)); }, numeric_dtypes},
      {"einsum ij,jk->ik", [](DType dt) { return Tensor::einsum("ij,jk->ik", {smooth(dt, {3, 5}, 1), smooth(dt, {5, 2}, 2)}); }, numeric_dtypes},
      {"einsum bij,bkj->bik", [](DType dt) { return Tensor::einsum("bij,bkj->bik", {smooth(dt, {2, 3, 4}, 1), smooth(dt, {2, 5, 4}, 2)}); }, numeric_dtypes},
      {"einsum ii->i", [](DType dt) { return Tensor::einsum("ii->i", {smooth(dt, {5, 5}, 1)}); }, all_dtypes},
      {"einsum ij->ji", [](DType dt) { return Tensor::einsum("ij->ji", {smooth(dt, {3, 4}, 1)}); }, all_dtypes},
      {"conv2d", [](DType dt) { return smooth(dt, {2, 3, 7, 7}, 1).conv2d(smooth(dt, {4, 3, 3, 3}, 2)); }, float_dtypes},
      {"conv2d with bias, groups, stride, dilation and padding", [](DType dt) {
         return smooth(dt, {1, 4, 9, 8}, 1).conv2d(smooth(dt, {6, 2, 3, 2}, 2), smooth(dt, {6}, 3), 2, {2, 1}, {1, 2}, {1, 2});
       }, float_dtypes},
      {"conv2d of ints", [](DType dt) { return smooth(dt, {1, 2, 5, 5}, 1).conv2d(smooth(dt, {3, 2, 2, 2}, 2), {}, 1, 1, 1, 1); }, {dtypes::int32, dtypes::int8, dtypes::int64}},
      {"conv_transpose2d", [](DType dt) {
         return smooth(dt, {1, 4, 5, 5}, 1).conv_transpose2d(smooth(dt, {4, 3, 3, 3}, 2), smooth(dt, {3}, 3), 1, 2, 1, 1, 1);
       }, float_dtypes},
      {"conv_transpose2d with groups and dilation", [](DType dt) {
         return smooth(dt, {2, 4, 4, 3}, 1).conv_transpose2d(smooth(dt, {4, 1, 2, 3}, 2), {}, 2, 1, 2, 0, 0);
       }, float_dtypes},
      {"max_pool2d", [](DType dt) { return mixed(dt).reshape({1, 2, 4, 8}).max_pool2d(); }, numeric_dtypes},
      {"max_pool2d with stride, dilation and padding", [](DType dt) { return mixed(dt).reshape({2, 1, 8, 4}).max_pool2d(3, 2, {1, 2}, 1); }, numeric_dtypes},
      {"avg_pool2d", [](DType dt) { return mixed(dt).reshape({1, 2, 4, 8}).avg_pool2d(); }, numeric_dtypes},
      {"avg_pool2d without the padding", [](DType dt) { return smooth(dt, {1, 2, 6, 5}, 1).avg_pool2d(3, 2, 1, 1, false); }, numeric_dtypes},
      {"layernorm", [](DType dt) { return smooth(dt, {4, 10}, 1).layernorm(); }, float_dtypes},
      {"layernorm of edge values", [](DType dt) { return mixed(dt).layernorm(0, 1e-3); }, float_dtypes},
      {"batchnorm", [](DType dt) {
         return smooth(dt, {2, 3, 4, 4}, 1).batchnorm(smooth(dt, {3}, 2), smooth(dt, {3}, 3), smooth(dt, {3}, 4), smooth(dt, {3}, 5).abs());
       }, float_dtypes},
      {"dropout", [](DType dt) {
         Tensor::manual_seed(11);
         const bool was_training = Tensor::training;
         Tensor::training = true;
         Tensor r = smooth(dt, {8, 8}, 1).dropout(0.3);
         Tensor::training = was_training;
         return r;
       }, float_dtypes},
      {"scaled_dot_product_attention", [](DType dt) {
         return smooth(dt, {2, 5, 4}, 1).scaled_dot_product_attention(smooth(dt, {2, 6, 4}, 2), smooth(dt, {2, 6, 3}, 3));
       }, float_dtypes},
      {"scaled_dot_product_attention with a mask", [](DType dt) {
         const Tensor mask = smooth(dtypes::bool_, {5, 6}, 4);
         return smooth(dt, {5, 4}, 1).scaled_dot_product_attention(smooth(dt, {6, 4}, 2), smooth(dt, {6, 3}, 3), mask);
       }, float_dtypes},
      {"causal scaled_dot_product_attention", [](DType dt) {
         return smooth(dt, {1, 6, 4}, 1).scaled_dot_product_attention(smooth(dt, {1, 6, 4}, 2), smooth(dt, {1, 6, 2}, 3), {}, true);
       }, float_dtypes},
      {"cross_entropy with probabilities", [](DType dt) { return smooth(dt, {4, 5}, 1).cross_entropy(smooth(dt, {4, 5}, 2).softmax()); }, float_dtypes},
      {"cross_entropy with class indices and smoothing", [](DType dt) {
         return smooth(dt, {4, 5}, 1).cross_entropy(Tensor::from_vector(std::vector<int32_t>{0, 4, 2, 1}), 0.1);
       }, float_dtypes},
      {"sparse_categorical_crossentropy", [](DType dt) {
         return smooth(dt, {5, 3}, 1).sparse_categorical_crossentropy(Tensor::from_vector(std::vector<int32_t>{2, -1, 0, 1, 1}));
       }, float_dtypes},
      {"binary_crossentropy", [](DType dt) { return smooth(dt, {12}, 1).sigmoid().binary_crossentropy(smooth(dt, {12}, 2).sigmoid()); }, float_dtypes},
      {"binary_crossentropy_logits", [](DType dt) { return smooth(dt, {12}, 1).binary_crossentropy_logits(smooth(dt, {12}, 2).sigmoid()); }, float_dtypes},
  };
  // clang-format on
  for (const BuiltOp& op : ops)
    for (DType dt : op.dtypes) {
      const auto build = [&] { return op.f(dt); };
      check_agree(named(op.name, dt), build);
    }
}

TEST_CASE(
    "backends: Context switches the CPU compiler for its scope, and each keeps its own kernels") {
  const CpuCompiler outside = cpu_compiler();  // LLVM, unless the environment says CPU_LLVM=0
  {
    Context c_compiler{{"CPU_LLVM", 0}};
    CHECK(cpu_compiler() == CpuCompiler::cc);
    {
      Context llvm_again{{"CPU_LLVM", 1}};
      CHECK(cpu_compiler() == CpuCompiler::llvm);
    }
    CHECK(cpu_compiler() == CpuCompiler::cc);
  }
  CHECK(cpu_compiler() == outside);
  // one kernel AST, compiled once by each: the cache key holds the compiler
  const Tensor x = smooth(dtypes::float32, {16}, 1);
  const std::vector<schedule::Kernel> kernels =
      schedule::create_schedule({Tensor(x * 3 + 1).uop()});
  REQUIRE(kernels.size() == 1);
  const auto compiled_now = [&] { return engine::kernel_cache().get(kernels[0].ast, kernels[0].buffers, engine::OptSettings::current("CPU")); };
  std::shared_ptr<engine::CompiledKernel> by_llvm, by_cc;
  {
    Context llvm{{"CPU_LLVM", 1}};
    by_llvm = compiled_now();
  }
  {
    Context cc{{"CPU_LLVM", 0}};
    by_cc = compiled_now();
  }
  CHECK(by_llvm->language == backend::Language::llvm_ir);
  CHECK(by_cc->language == backend::Language::c);
  CHECK(by_llvm != by_cc);
  CHECK(by_cc->source.starts_with("#include"));          // C
  CHECK(by_llvm->source.starts_with("; tinyt kernel"));  // LLVM IR
  Context llvm{{"CPU_LLVM", 1}};
  CHECK(compiled_now() == by_llvm);
}

// -- the same bits whatever x86-64 CPU runs the kernels ----------------------------------------

namespace {
/// An LLVM target CPU and, when this CPU cannot run its code, a feature it lacks.
struct CpuLevel {
  std::string cpu, lacks;
};
/// The x86-64 levels (psABI), then the host; elsewhere only the host.
std::vector<CpuLevel> cpu_levels() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  const char* v2 = !__builtin_cpu_supports("sse4.2")  ? "sse4.2"
                   : !__builtin_cpu_supports("ssse3") ? "ssse3"
                   : !__builtin_cpu_supports("popcnt") ? "popcnt"
                                                       : "";
  const char* v3 = *v2                               ? v2
                   : !__builtin_cpu_supports("avx2") ? "avx2"
                   : !__builtin_cpu_supports("fma")  ? "fma"
                   : !__builtin_cpu_supports("bmi2") ? "bmi2"
                                                     : "";
  const char* v4 = *v3                                   ? v3
                   : !__builtin_cpu_supports("avx512f")  ? "avx512f"
                   : !__builtin_cpu_supports("avx512bw") ? "avx512bw"
                   : !__builtin_cpu_supports("avx512cd") ? "avx512cd"
                   : !__builtin_cpu_supports("avx512dq") ? "avx512dq"
                   : !__builtin_cpu_supports("avx512vl") ? "avx512vl"
                                                         : "";
  return {{"x86-64", ""}, {"x86-64-v2", v2}, {"x86-64-v3", v3}, {"x86-64-v4", v4}, {"host", ""}};
#else
  return {{"host", ""}};
#endif
}
}  // namespace

TEST_CASE("backends: LLVM forced to each x86-64 level computes the C compiler's bits") {
  // Nothing a kernel computes may depend on the CPU: float16 and bfloat16 are computed in float32
  // (codegen/narrow_floats.hpp), nothing is contracted into an FMA unless the kernel asks for one
  // (MULACC, a real fused op everywhere), and no fast-math flag lets LLVM reorder a sum. So the
  // elementwise ops, and the reductions too, must give the same bits on every level as the C
  // compiler gives at -march=native. The reductions need no tolerance here: their order of
  // operations is fixed by the kernel's opts, and the opts (sized to this host's SIMD registers,
  // not to the target) are the same at every level. Across hosts whose registers differ, an
  // unrolled sum may be split differently; there a reduction of n terms may differ by about
  // n * eps(dtype) * sum |x| (tests/test_opt.cpp compares opts against NOOPT that way).
  // (Math functions with TRANSCENDENTAL=0 call libm on both paths: the same libm, the same bits.)
  std::vector<std::pair<std::string, std::function<Tensor()>>> kernels;
  const std::vector<DType> floats_and_int = join(float_dtypes, {dtypes::int32});
  for (const UnaryOp& op : unary_ops)
    for (DType dt : op.dtypes)
      if (std::find(floats_and_int.begin(), floats_and_int.end(), dt) != floats_and_int.end())
        kernels.push_back({named(op.name, dt), [&op, dt] { return op.f(edges(dt)); }});
  for (const BinaryOp& op : binary_ops)
    for (DType dt : float_dtypes)
      if (std::find(op.dtypes.begin(), op.dtypes.end(), dt) != op.dtypes.end())
        kernels.push_back({named(op.name, dt), [&op, dt] {
                             return op.f(edges(dt, {edge_count, 1}), edges(dt, {1, edge_count}));
                           }});
  for (DType from : all_dtypes)
    for (DType to : float_dtypes)
      kernels.push_back({"cast from " + std::string(from.name()) + " to " + std::string(to.name()),
                         [from, to] { return edges(from).cast(to); }});
  // clang-format off
  const std::vector<BuiltOp> reductions = {
      {"sum", [](DType dt) { return mixed(dt).sum(1); }, float_dtypes},
      {"prod", [](DType dt) { return smooth(dt, {8, 8}, 1).prod(0); }, float_dtypes},
      {"mean", [](DType dt) { return mixed(dt).mean(); }, float_dtypes},
      {"cumsum", [](DType dt) { return smooth(dt, {8, 8}, 2).cumsum(1); }, float_dtypes},
      {"var", [](DType dt) { return mixed(dt).var(1); }, float_dtypes},
      {"logsumexp", [](DType dt) { return mixed(dt).logsumexp(1); }, float_dtypes},
      {"softmax", [](DType dt) { return mixed(dt).softmax(); }, float_dtypes},
      {"log_softmax", [](DType dt) { return mixed(dt).log_softmax(0); }, float_dtypes},
      {"matmul", [](DType dt) { return smooth(dt, {33, 40}, 1).matmul(smooth(dt, {40, 24}, 2)); }, float_dtypes},
      {"matmul of edge values", [](DType dt) { return edges(dt, {4, 8}).matmul(edges(dt, {8, 4}).flip(0)); }, float_dtypes},
      {"conv2d", [](DType dt) { return smooth(dt, {2, 3, 9, 9}, 1).conv2d(smooth(dt, {4, 3, 3, 3}, 2), smooth(dt, {4}, 3), 1, 1); }, float_dtypes},
      {"layernorm", [](DType dt) { return smooth(dt, {4, 10}, 1).layernorm(); }, float_dtypes},
      {"scaled_dot_product_attention", [](DType dt) {
         return smooth(dt, {2, 5, 4}, 1).scaled_dot_product_attention(smooth(dt, {2, 6, 4}, 2), smooth(dt, {2, 6, 3}, 3));
       }, float_dtypes},
  };
  // clang-format on
  for (const BuiltOp& op : reductions)
    for (DType dt : op.dtypes) kernels.push_back({named(op.name, dt), [&op, dt] { return op.f(dt); }});

  std::vector<Realized> by_c;
  for (const auto& [name, build] : kernels) by_c.push_back(realize_with(0, build));
  for (const CpuLevel& level : cpu_levels()) {
    if (!level.lacks.empty()) {
      MESSAGE("skipping LLVM at " << level.cpu << ": this CPU has no " << level.lacks);
      continue;
    }
    Context target{{"TINYT_LLVM_CPU", level.cpu}};
    for (size_t i = 0; i < kernels.size(); ++i) {
      INFO(kernels[i].first << " by LLVM for " << level.cpu);
      const Realized llvm = realize_with(1, kernels[i].second);
      REQUIRE(llvm.shape == by_c[i].shape);
      const std::string diff = differences(by_c[i], llvm);
      CHECK_MESSAGE(diff.empty(), diff);
    }
  }
#if defined(__x86_64__)
  CHECK(backend::llvm_jit("x86-64").cpu() == "x86-64");  // the knob reached a JIT of its own
#endif
}

TEST_CASE("backends: a float64 constant rounds once to float16") {
  // 1 + 2^-11 + 2^-40 lies just above the midpoint of the float16 values 1 and 1 + 2^-10: it
  // rounds up. Through float first it would become the midpoint itself, then 1 (ties to even).
  const double above_tie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  const double below_tie = -(1.0 + std::ldexp(1.0, -11) - std::ldexp(1.0, -40));
  for (int cpu_llvm : {0, 1}) {
    Context compiler{{"CPU_LLVM", cpu_llvm}};
    CHECK(static_cast<double>(Tensor::full({2}, above_tie, dtypes::float16).to_vector<half_t>()[1]) ==
          1.0 + std::ldexp(1.0, -10));
    CHECK(static_cast<double>(Tensor::full({2}, below_tie, dtypes::float16).to_vector<half_t>()[0]) == -1.0);
    // a float64 tensor cast in a kernel rounds the same way, and so does a cast of a constant
    const Tensor x = Tensor::from_vector(std::vector<double>{above_tie, below_tie});
    const std::vector<half_t> cast = x.cast(dtypes::float16).to_vector<half_t>();
    CHECK(static_cast<double>(cast[0]) == 1.0 + std::ldexp(1.0, -10));
    CHECK(static_cast<double>(cast[1]) == -1.0);
    const Tensor folded = Tensor::full({1}, above_tie, dtypes::float64).cast(dtypes::float16);
    CHECK(static_cast<double>(folded.to_vector<half_t>()[0]) == 1.0 + std::ldexp(1.0, -10));
  }
}
