// renderer/llvmir.hpp and backend/cpu_llvm.hpp: kernels from the scheduler compiled by the C
// compiler and by LLVM, run on the same buffers and compared bit for bit (NaN equal to NaN), for
// every op and dtype; values checked against loops written here; and the JIT's library search,
// errors and thread safety. Run it with TINYT_LLVM_PATH set to each LLVM version installed.
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <tinyt.hpp>
#include <tinyt/backend/cpu_llvm.hpp>
#include <tinyt/renderer/llvmir.hpp>

#include "helpers.hpp"

using namespace tinyt;
using tinyt_test::contains;
using backend::LLVMJit;
using tinyt_test::element;
using tinyt_test::from_bf16_bits;
using tinyt_test::to_bf16_bits;
using tinyt_test::with_type;

namespace {

LLVMJit& jit() { return backend::default_llvm(); }


const std::vector<int64_t> int_values = {
    0,    1,   -1,    2,      -2,    3,        -7,        100,       -100,      127,
    -128, 255, 32767, -32768, 65535, 16777217, INT32_MIN, INT32_MAX, INT64_MIN, INT64_MAX};
const std::vector<double> float_values = {0.0,      -0.0,
                                          1.0,      -1.0,
                                          0.5,      -2.5,
                                          3.75,     1.0 / 3,
                                          1e-3,     100.0,
                                          -1e4,     65504.0,
                                          1e30,     1e-40,
                                          INFINITY, -INFINITY,
                                          NAN,      2.0,
                                          -0.75,    126.9,
                                          7.0,      3.1415926535897931};

using tinyt_test::make;
Tensor make(DType dt) { return make(dt, int_values, float_values); }

/// One kernel's output as the C and the LLVM backend wrote it.
struct Outputs {
  std::string name, ir;
  DType dtype;
  std::vector<uint8_t> c, llvm;
};

/// Compiles a kernel both ways and runs both on the same inputs (the output is filled with a
/// different pattern before each run, so an element one of them skips shows too).
Outputs run_both(const schedule::Kernel& k, std::vector<void*> ptrs = {}) {
  // (integer division made safe as lower_kernel makes it: the renderers trust that it was)
  const codegen::Program p = codegen::linearize(graph_rewrite(k.ast, codegen::division_rules()), schedule::detail::kernel_name(k.ast));
  Outputs o{p.name, renderer::render_llvm(p), k.buffers[0].dtype(), {}, {}};
  const backend::CProgram c(backend::default_cc().compile(renderer::render_c(p)), p.name);
  LLVMJit::Function* llvm = jit().compile(o.ir, p.name);
  if (ptrs.empty())
    for (const UOp& b : k.buffers) ptrs.push_back(graph::buffer_of(b)->ptr());
  const size_t n = graph::buffer_of(k.buffers[0])->nbytes();
  auto* out = static_cast<uint8_t*>(ptrs[0]);
  std::memset(out, 0xab, n);
  c(ptrs.data(), nullptr);
  o.c.assign(out, out + n);
  std::memset(out, 0xcd, n);
  llvm(ptrs.data(), nullptr, 0, 1);
  o.llvm.assign(out, out + n);
  return o;
}

/// Elements that differ: in their bits (NaN equals NaN), or by more than `tol` (absolute) if given.
std::vector<size_t> mismatches(const Outputs& o, double tol = 0) {
  std::vector<size_t> bad;
  const size_t size = static_cast<size_t>(o.dtype.itemsize()), n = o.c.size() / size;
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(o.c.data() + i * size, o.llvm.data() + i * size, size) == 0) continue;
    const double x = element(o.c.data(), o.dtype, i), y = element(o.llvm.data(), o.dtype, i);
    if (o.dtype.is_float() && std::isnan(x) && std::isnan(y)) continue;
    if (tol > 0 && std::abs(x - y) <= tol) continue;
    bad.push_back(i);
  }
  return bad;
}

/// Schedules `t` and runs each kernel both ways; the LLVM results stay realized, so `t` reads
/// them afterwards. Fails the test for each element the backends disagree on.
int check_same(const Tensor& t, double tol = 0) {
  const std::vector<schedule::Kernel> kernels = schedule::create_schedule({t.uop()});
  REQUIRE_FALSE(kernels.empty());
  for (const schedule::Kernel& k : kernels) {
    REQUIRE_FALSE(k.in_place);
    const Outputs o = run_both(k);
    const std::vector<size_t> bad = mismatches(o, tol);
    std::ostringstream first;
    for (size_t j = 0; j < std::min<size_t>(bad.size(), 6); ++j)
      first << "  [" << bad[j] << "] C " << element(o.c.data(), o.dtype, bad[j]) << " LLVM "
            << element(o.llvm.data(), o.dtype, bad[j]) << "\n";
    INFO("kernel ", o.name, " (", o.dtype.name(), "): ", bad.size(), " of ",
         o.c.size() / o.dtype.itemsize(), " elements differ\n", first.str(), "IR:\n", o.ir);
    CHECK(bad.empty());
    if (!k.temporary) graph::set_realized(k.computes, k.view);
  }
  return static_cast<int>(kernels.size());
}

/// The elements of `t` as LLVM computed them (check_same: C agrees).
template <class Elem> std::vector<Elem> llvm_values(const Tensor& t) {
  check_same(t);
  const int64_t kernels = GlobalCounters::kernel_count;
  std::vector<Elem> out = t.to_vector<Elem>();
  CHECK(GlobalCounters::kernel_count == kernels);  // read, not computed again by the C backend
  return out;
}

/// Every pair (a[i], b[j]) as two n x n tensors.
std::pair<Tensor, Tensor> all_pairs(const Tensor& a, const Tensor& b) {
  const int64_t n = a.numel(), m = b.numel();
  return {a.reshape({n, 1}).expand({n, m}), b.reshape({1, m}).expand({n, m})};
}
Tensor alu(Ops op, const Tensor& a, std::vector<Tensor> others = {}) {
  std::vector<UOp> src;
  for (const Tensor& t : others) src.push_back(t.uop());
  return Tensor(a.uop().alu(op, src));
}

}  // namespace

TEST_CASE("llvm: the process-wide JIT loads libLLVM and tells what it is") {
  REQUIRE(LLVMJit::available());
  INFO(jit().identity());
  CHECK_FALSE(jit().library_path().empty());
  CHECK(contains(jit().library_path(), "LLVM"));
  const std::string version = jit().llvm_version();
  REQUIRE_FALSE(version.empty());
  const int major = std::atoi(version.c_str());
  CHECK(major >= 14);
  CHECK(major <= 20);
  CHECK(jit().identity().starts_with("LLVM " + version + " | "));
  CHECK(contains(jit().identity(), LLVMJit::pipeline));
  if (__builtin_cpu_supports("avx512f")) CHECK(contains(jit().identity(), "+avx512f"));
  CHECK(&backend::default_llvm() == &jit());
}

TEST_CASE("llvm: the candidates are TINYT_LLVM_PATH, then LLVM 20 down to 14") {
  const char* saved = std::getenv("TINYT_LLVM_PATH");
  const std::optional<std::string> old = saved ? std::optional<std::string>(saved) : std::nullopt;
  setenv("TINYT_LLVM_PATH", "/nonexistent/libLLVM-99.so", 1);
  const std::vector<std::string> with_env = LLVMJit::default_candidates();
  unsetenv("TINYT_LLVM_PATH");
  const std::vector<std::string> without = LLVMJit::default_candidates();
  if (old) setenv("TINYT_LLVM_PATH", old->c_str(), 1);
  REQUIRE(with_env.size() == without.size() + 1);
  CHECK(with_env[0] == "/nonexistent/libLLVM-99.so");
  CHECK(std::equal(without.begin(), without.end(), with_env.begin() + 1));
  CHECK(without.front() == "libLLVM.so.20");
  CHECK(std::find(without.begin(), without.end(), "libLLVM-15.so.1") <
        std::find(without.begin(), without.end(), "libLLVM-14.so"));
  CHECK(without.back() == "libLLVM-14.so.1");
  CHECK(backend::detail::llvm_version_from_path("/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1") ==
        "15");
  CHECK(backend::detail::llvm_version_from_path("libLLVM-14.0.6.so.1") == "14.0.6");
  CHECK(backend::detail::llvm_version_from_path("/opt/llvm/lib/libLLVM.so.20.1") == "20.1");
}

TEST_CASE(
    "llvm: a library that does not load falls back to the next, and none loading is a "
    "DeviceError") {
  // the same libLLVM as the process-wide JIT: one process holds one LLVM version
  LLVMJit fallback({"/nonexistent/libLLVM-99.so", jit().library_path()});
  CHECK(fallback.library_path() == jit().library_path());
  CHECK(fallback.identity() == jit().identity());
  const std::string ir =
      "define void @seven(i8** %bufs, i64* %vars, i32 %core_id, i32 %core_count) {\n"
      "  %p = load i8*, i8** %bufs\n  %q = bitcast i8* %p to i32*\n  store i32 7, i32* %q\n  ret "
      "void\n}\n";
  int32_t out = 0;
  void* bufs[] = {&out};
  fallback.compile(ir, "seven")(bufs, nullptr, 0, 1);
  CHECK(out == 7);

  std::string message;
  try {
    LLVMJit none({"/nonexistent/libLLVM-99.so", "libtinyt_no_such_llvm.so.1"});
  } catch (const DeviceError& e) {
    message = e.what();
  }
  CHECK(contains(message, "/nonexistent/libLLVM-99.so"));
  CHECK(contains(message, "libtinyt_no_such_llvm.so.1"));
  // a library that loads but is not LLVM
  message.clear();
  try {
    LLVMJit libm({"libm.so.6"});
  } catch (const DeviceError& e) {
    message = e.what();
  }
  CHECK(contains(message, "libm.so.6"));
  CHECK(contains(message, "LLVMDisposeMessage"));
}

TEST_CASE("llvm: which CPUs' code this CPU runs, from the features LLVM finds on it") {
  using backend::detail::cpu_target_mismatch;
  // a Zen 3's features as LLVM lists them (in part)
  const std::string zen3 = "+sse4.2,+avx,+avx2,+fma,+bmi2,+f16c,-avx512f,-avx512bw,-avx512fp16,-amx-tile";
  CHECK(cpu_target_mismatch("x86-64-v3", "znver3", zen3).empty());
  CHECK(cpu_target_mismatch("haswell,+fma", "znver3", zen3).empty());
  CHECK(cpu_target_mismatch("znver3", "znver3", zen3).empty());
  CHECK(cpu_target_mismatch("x86-64-v4,-avx512f", "znver3", zen3) == "this CPU (znver3) has no avx512bw, avx512f, which code for 'x86-64-v4,-avx512f' may use");
  CHECK(contains(cpu_target_mismatch("sapphirerapids", "znver3", zen3), "has no amx-tile, avx512bw, avx512f, avx512fp16,"));
  CHECK(contains(cpu_target_mismatch("x86-64,+avx512fp16", "znver3", zen3), "has no avx512fp16, which code for 'x86-64,+avx512fp16'"));
  // a feature this LLVM does not list is one it cannot use either
  CHECK(cpu_target_mismatch("x86-64,+newfeature", "znver3", zen3).empty());
  CHECK(contains(cpu_target_mismatch("mystery-cpu", "znver3", zen3), "cannot tell which features code for 'mystery-cpu' uses"));
}

TEST_CASE("llvm: TINYT_LLVM_CPU naming code this CPU cannot run is a DeviceError at the first kernel, not SIGILL") {
  // a feature LLVM finds absent here, whatever this machine is
  std::string absent;
  std::stringstream host(jit().features());
  for (std::string f; absent.empty() && std::getline(host, f, ',');)
    if (f.size() > 1 && f[0] == '-') absent = f.substr(1);
  if (absent.empty()) {
    MESSAGE("skipped: LLVM finds every feature it knows on this CPU");
    return;
  }
  const std::string target = "x86-64,+" + absent;
  Context forced{{"CPU_LLVM", 1}, {"TINYT_LLVM_CPU", target}};
  std::string error;
  try {
    (Tensor::arange(5).cast(dtypes::float32) * 3.25f).realize();
  } catch (const DeviceError& e) {
    error = e.what();
  }
  INFO(error);
  CHECK(contains(error, "CPU: TINYT_LLVM_CPU=" + target + " cannot run here: this CPU ("));
  CHECK(contains(error, "has no " + absent + ", which code for"));
}

TEST_CASE("llvm: IR that does not parse, verify or link is a CompileError with LLVM's words") {
  auto error_of = [](const std::string& ir, const std::string& name) {
    try {
      jit().compile(ir, name);
    } catch (const CompileError& e) {
      return std::string(e.what());
    }
    return std::string("no CompileError");
  };
  std::string message = error_of("this is not IR\n", "garbage");
  CHECK(contains(message, "garbage"));
  CHECK(contains(message, "expected top-level entity"));
  CHECK(contains(message, "   1 | this is not IR"));

  const std::string undominated =
      "define void @k(i8** %bufs, i64* %vars, i32 %core_id, i32 %core_count) {\n"
      "entry:\n  %c = icmp eq i32 %core_id, 0\n  br i1 %c, label %a, label %b\n"
      "a:\n  %x = add i32 %core_id, 1\n  br label %b\n"
      "b:\n  %y = add i32 %x, 1\n  ret void\n}\n";
  message = error_of(undominated, "k");
  CHECK(contains(message, "does not dominate"));
  CHECK(contains(message, "   9 |   %y = add i32 %x, 1"));

  const std::string calls_missing =
      "declare void @tinyt_no_such_function()\n"
      "define void @k(i8** %bufs, i64* %vars, i32 %core_id, i32 %core_count) {\n"
      "  call void @tinyt_no_such_function()\n  ret void\n}\n";
  message = error_of(calls_missing, "k");
  CHECK(contains(message, "tinyt_no_such_function"));
  CHECK(contains(error_of(calls_missing, "other_name"), "no function 'other_name'"));
}

TEST_CASE("llvm: two modules may define the same kernel name") {
  auto kernel = [](int value) {
    return "define void @twin(i8** %bufs, i64* %vars, i32 %core_id, i32 %core_count) {\n"
           "  %p = load i8*, i8** %bufs\n  %q = bitcast i8* %p to i32*\n  store i32 " +
           std::to_string(value) + ", i32* %q\n  ret void\n}\n";
  };
  LLVMJit::Function* first = jit().compile(kernel(1), "twin");
  LLVMJit::Function* second = jit().compile(kernel(2), "twin");
  CHECK(reinterpret_cast<void*>(first) != reinterpret_cast<void*>(second));
  int32_t out = 0;
  void* bufs[] = {&out};
  first(bufs, nullptr, 0, 1);
  CHECK(out == 1);
  second(bufs, nullptr, 0, 1);
  CHECK(out == 2);
}

TEST_CASE("llvm: kernels compiled by several threads at once all run correctly") {
  Tensor a = make(dtypes::float32, {}, {0.0, 1.0, 2.5, 4.0, 100.0, 0.25, 7.0, 1e-3});
  const std::vector<schedule::Kernel> kernels =
      schedule::create_schedule({a.mul(2.0f).add(1.0f).sqrt().uop()});
  REQUIRE(kernels.size() == 1);
  const codegen::Program p = codegen::linearize(kernels[0].ast, "threaded");
  const std::string ir = renderer::render_llvm(p);
  auto* in = static_cast<float*>(graph::buffer_of(kernels[0].buffers[1])->ptr());
  constexpr int threads = 4, rounds = 3;
  std::atomic<int> ready{0}, wrong{0}, failed{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      ++ready;
      while (ready < threads) std::this_thread::yield();
      for (int r = 0; r < rounds; ++r) {
        try {
          std::vector<float> out(8, -1.0f);
          void* bufs[] = {out.data(), in};
          jit().compile(ir, "threaded")(bufs, nullptr, 0, 1);
          for (int i = 0; i < 8; ++i) wrong += out[i] != std::sqrt(in[i] * 2.0f + 1.0f);
        } catch (...) {
          ++failed;
        }
      }
    });
  for (auto& thread : pool) thread.join();
  CHECK(failed == 0);
  CHECK(wrong == 0);
}

TEST_CASE("llvm: elementwise ops of every dtype agree with the C backend bit for bit") {
  const std::vector<int64_t> shifts = {0, 1, 2, 3, 5, 7};
  for (DType dt : dtypes::all()) {
    CAPTURE(dt);
    auto [a, b] = all_pairs(make(dt), make(dt));
    std::vector<Ops> binary = {Ops::ADD,   Ops::SUB,   Ops::MUL,  Ops::MAX,
                               Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ};
    if (!dt.is_float()) binary.insert(binary.end(), {Ops::AND, Ops::OR, Ops::XOR});
    if (dt.is_int()) binary.insert(binary.end(), {Ops::IDIV, Ops::MOD});
    if (dt.is_float()) binary.insert(binary.end(), {Ops::FDIV, Ops::POW});
    for (Ops op : binary) {
      CAPTURE(op);
      check_same(alu(op, a, {b}));
    }
    std::vector<Ops> unary = {Ops::NEG};
    if (dt.is_float())
      unary.insert(unary.end(),
                   {Ops::RECIPROCAL, Ops::SQRT, Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::TRUNC});
    for (Ops op : unary) {
      CAPTURE(op);
      check_same(alu(op, make(dt)));
    }
    check_same(alu(Ops::WHERE, alu(Ops::CMPLT, a, {b}), {a, b}));
    if (dt.is_int()) {
      auto [x, s] = all_pairs(make(dt), make(dt, shifts, {}));
      check_same(alu(Ops::SHL, x, {s}));
      check_same(alu(Ops::SHR, x, {s}));
    }
  }
}

TEST_CASE("llvm: integer division never traps: x/0 is 0, INT_MIN/-1 wraps, x%-1 is 0") {
  for (DType dt : {dtypes::int8, dtypes::int32, dtypes::int64, dtypes::uint8, dtypes::uint32,
                   dtypes::uint64}) {
    CAPTURE(dt);
    const std::vector<int64_t> values = {0, 1, -1, 7, -7, 3, INT64_MIN, INT32_MIN, -128, 100};
    auto [a, b] = all_pairs(make(dt, values, {}), make(dt, values, {}));
    for (Ops op : {Ops::IDIV, Ops::MOD}) {
      CAPTURE(op);
      Tensor q = alu(op, a, {b});
      const std::vector<schedule::Kernel> kernels = schedule::create_schedule({q.uop()});
      REQUIRE(kernels.size() == 1);
      const Outputs o = run_both(kernels[0]);
      int wrong = 0;
      const size_t n = values.size();
      for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
          // the reference in 128 bits, wrapped to the dtype by hand
          const int bits = 8 * dt.itemsize();
          auto wrap = [&](i128 v) {
            const u128 u = static_cast<u128>(v) & ((static_cast<u128>(1) << bits) - 1);
            if (!dt.is_unsigned() && (u >> (bits - 1)) & 1)
              return static_cast<i128>(u) - (static_cast<i128>(1) << bits);
            return static_cast<i128>(u);
          };
          const i128 x = wrap(values[i]), y = wrap(values[j]);
          i128 expected = 0;
          if (y != 0) expected = wrap(op == Ops::IDIV ? x / y : x % y);
          i128 got = 0;
          with_type(dt, [&](auto zero) {
            decltype(zero) v;
            std::memcpy(&v, o.llvm.data() + (i * n + j) * sizeof v, sizeof v);
            if constexpr (std::is_integral_v<decltype(zero)>) got = v;
          });
          wrong += got != expected;
        }
      CHECK(wrong == 0);
      CHECK(mismatches(o).empty());  // C too: an unsigned divisor of UINT_MAX is not -1
    }
  }
}

TEST_CASE("llvm: MAX propagates NaN from either side, and comparisons with NaN are false") {
  Tensor a = make(dtypes::float32, {}, {NAN, 1.0, NAN, -INFINITY, 0.0});
  Tensor b = make(dtypes::float32, {}, {1.0, NAN, NAN, NAN, -0.0});
  Tensor m = alu(Ops::MAX, a, {b});
  check_same(m);
  const std::vector<float> got = m.to_vector<float>();
  for (int i = 0; i < 4; ++i) CHECK(std::isnan(got[static_cast<size_t>(i)]));
  CHECK(got[4] == 0.0f);
  CHECK(std::signbit(got[4]));  // max(0, -0): 0 > -0 is false, so the second operand
  Tensor lt = alu(Ops::CMPLT, a, {b});
  check_same(lt);
  CHECK(lt.to_vector<bool>() == std::vector<bool>{false, false, false, false, false});
  Tensor ne = alu(Ops::CMPNE, a, {b});
  check_same(ne);
  CHECK(ne.to_vector<bool>() == std::vector<bool>{true, true, true, true, false});
  // a max reduction over a row holding NaN is NaN, as is one over NaN alone
  Tensor rows =
      make(dtypes::float32, {}, {1.0, NAN, 3.0, -1.0, -2.0, -3.0, NAN, NAN, NAN}).reshape({3, 3});
  Tensor r = rows.max(1);
  check_same(r);
  const std::vector<float> red = r.to_vector<float>();
  CHECK(std::isnan(red[0]));
  CHECK(red[1] == -1.0f);
  CHECK(std::isnan(red[2]));
}

TEST_CASE("llvm: bfloat16 rounds to nearest even after every op, as computed by hand") {
  const std::vector<double> xs = {1.0,  1.00390625, 1.01171875, 3.0, -0.1,
                                  1e38, 3e38,       NAN,        0.3, 255.5};
  const std::vector<double> ys = {0.00390625, 0.001953125, 0.00390625, 7.0, 0.2,
                                  1e38,       3e38,        1.0,        0.7, 0.25};
  Tensor a = make(dtypes::bfloat16, {}, xs), b = make(dtypes::bfloat16, {}, ys);
  for (Ops op : {Ops::ADD, Ops::MUL, Ops::FDIV}) {
    CAPTURE(op);
    Tensor r = alu(op, a, {b});
    check_same(r);
    const std::vector<bfloat16_t> got = r.to_vector<bfloat16_t>();
    for (size_t i = 0; i < xs.size(); ++i) {
      const float x = from_bf16_bits(to_bf16_bits(static_cast<float>(xs[i])));
      const float y = from_bf16_bits(to_bf16_bits(static_cast<float>(ys[i])));
      const float f = op == Ops::ADD ? x + y : op == Ops::MUL ? x * y : x / y;
      CAPTURE(i);
      CHECK(got[i].bits == to_bf16_bits(f));
    }
  }
}

TEST_CASE("llvm: float16 rounds to half after every op, computed in float") {
  // 2049 is not a half (2048 + 2 is): each product rounds before the sum sees it
  Tensor a = make(dtypes::float16, {}, {2049.0, 1.0, 0.1, 65504.0, 1e-4, -3.0});
  Tensor b = make(dtypes::float16, {}, {1.0, 0.0009765625, 3.0, 2.0, 1e-4, 0.3333});
  for (Ops op : {Ops::ADD, Ops::MUL, Ops::SUB, Ops::FDIV}) {
    CAPTURE(op);
    Tensor r = alu(op, a, {b});
    check_same(r);
    const std::vector<half_t> ga = a.to_vector<half_t>(), gb = b.to_vector<half_t>(),
                              got = r.to_vector<half_t>();
    for (size_t i = 0; i < got.size(); ++i) {
      const float x = static_cast<float>(ga[i]), y = static_cast<float>(gb[i]);
      const float f = op == Ops::ADD   ? x + y
                      : op == Ops::MUL ? x * y
                      : op == Ops::SUB ? x - y
                                       : x / y;
      CAPTURE(i);
      CHECK(std::bit_cast<uint16_t>(got[i]) == std::bit_cast<uint16_t>(half_t(f)));
    }
  }
}

TEST_CASE("llvm: float16, bool and small or signed integers round and wrap after every op, inside expressions too") {
  // C computes bool and int8/int16 in int and GCC _Float16 in float, rounding or wrapping only
  // where a value is stored: the C renderer casts after each op of an expression it inlines, and
  // compiles with -fwrapv (a signed overflow is no licence to fold)
  Tensor a = make(dtypes::float16, {}, {1.0 + 3.0 / 1024}), c = make(dtypes::float16, {}, {-1.0});
  Tensor r = alu(Ops::ADD, alu(Ops::MUL, a, {a}), {c});  // a*a = 1 + 6/1024 + 9/2^20 rounds first
  check_same(r);
  CHECK(std::bit_cast<uint16_t>(r.to_vector<half_t>()[0]) == 0x1e00);  // 6/1024
  for (DType dt : {dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64}) {
    CAPTURE(dt);
    const int64_t big = dtypes::max_int(dt) / 2 + 1;
    Tensor x = make(dt, {big, 5, 27}, {}), zero = make(dt, {0, 0, 0}, {});
    Tensor negative = alu(Ops::CMPLT, alu(Ops::ADD, x, {x}), {zero});  // 2 * big wraps
    CHECK(llvm_values<bool>(negative) == std::vector<bool>{true, false, false});
    Tensor overflows = alu(Ops::CMPLT, alu(Ops::ADD, x, {x}), {x});  // not folded to x < 0
    CHECK(llvm_values<bool>(overflows) == std::vector<bool>{true, false, false});
  }
  Tensor u = make(dtypes::uint8, {200, 100, 3}, {}), u2 = make(dtypes::uint8, {100, 100, 4}, {});
  Tensor sum_is_small = alu(Ops::CMPLT, alu(Ops::ADD, u, {u2}), {u2});  // 300 wraps to 44
  CHECK(llvm_values<bool>(sum_is_small) == std::vector<bool>{true, false, false});
  Tensor t = make(dtypes::bool_, {1, 1, 0}, {}), f = make(dtypes::bool_, {1, 0, 0}, {});
  Tensor both_true = alu(Ops::CMPEQ, alu(Ops::ADD, t, {f}), {t});  // true + true is true, not 2
  CHECK(llvm_values<bool>(both_true) == std::vector<bool>{true, true, true});
}

TEST_CASE("llvm: float64 to float16 rounds once, correctly, where through float would not") {
  const double tiny = std::ldexp(1.0, -60), eps = std::ldexp(1.0, -11);
  const std::vector<double> values = {1 + eps + std::ldexp(1.0, -40),
                                      -(1 + eps + std::ldexp(1.0, -40)),
                                      1 + eps,
                                      1 + 3 * eps,
                                      65519.99,
                                      65520.0,
                                      1e-300,
                                      -1e-300,
                                      std::ldexp(1.0, -25),
                                      std::ldexp(1.0, -25) + tiny,
                                      NAN,
                                      -INFINITY};
  const std::vector<uint16_t> expected = {0x3c01, 0xbc01, 0x3c00, 0x3c02, 0x7bff, 0x7c00,
                                          0x0000, 0x8000, 0x0000, 0x0001, 0x7e00, 0xfc00};
  Tensor h = make(dtypes::float64, {}, values).cast(dtypes::float16);
  check_same(h);
  const std::vector<half_t> got = h.to_vector<half_t>();
  for (size_t i = 0; i < values.size(); ++i) {
    CAPTURE(i);
    CHECK(std::bit_cast<uint16_t>(got[i]) == expected[i]);
  }
}

TEST_CASE("llvm: casts between every pair of dtypes agree with the C backend") {
  for (DType from : dtypes::all())
    for (DType to : dtypes::all()) {
      if (from == to) continue;
      CAPTURE(from);
      CAPTURE(to);
      std::vector<double> floats;
      for (double v : float_values) {
        // float -> int is undefined in C outside the target's range: only values that fit
        const double r = round_float(v, from);
        if (to.is_int() &&
            !(std::isfinite(r) && std::trunc(r) >= static_cast<double>(dtypes::min_int(to)) &&
              std::trunc(r) <= static_cast<double>(dtypes::max_int(to)) && std::abs(r) < 9e18))
          continue;
        floats.push_back(v);
      }
      check_same(make(from, int_values, floats).cast(to));
    }
}

TEST_CASE("llvm: casts give C's values: truncation toward zero, wrapping, bool is != 0") {
  Tensor f = make(dtypes::float32, {}, {2.9, -2.9, 0.5, -0.0, 100.0, 127.9});
  CHECK(llvm_values<int8_t>(f.cast(dtypes::int8)) == std::vector<int8_t>{2, -2, 0, 0, 100, 127});
  Tensor i = make(dtypes::int32, {300, -1, 255, 256, -129, 65536}, {});
  CHECK(llvm_values<uint8_t>(i.cast(dtypes::uint8)) ==
        std::vector<uint8_t>{44, 255, 255, 0, 127, 0});
  CHECK(llvm_values<int16_t>(i.cast(dtypes::int16)) ==
        std::vector<int16_t>{300, -1, 255, 256, -129, 0});
  CHECK(llvm_values<uint64_t>(i.cast(dtypes::uint64))[1] == UINT64_MAX);
  Tensor g = make(dtypes::float32, {}, {0.0, -0.0, NAN, 1e-40, -3.0, INFINITY});
  CHECK(llvm_values<bool>(g.cast(dtypes::bool_)) ==
        std::vector<bool>{false, false, true, true, true, true});
  Tensor b = make(dtypes::bool_, {0, 1, 1}, {});
  CHECK(llvm_values<float>(b.cast(dtypes::float32)) == std::vector<float>{0.0f, 1.0f, 1.0f});
  CHECK(llvm_values<int64_t>(b.cast(dtypes::int64)) == std::vector<int64_t>{0, 1, 1});
  // the largest int64 and uint64 are 2^63 and 2^64 in float: they round up
  Tensor big = make(dtypes::uint64, {-1, INT64_MAX}, {});
  const std::vector<float> fb = llvm_values<float>(big.cast(dtypes::float32));
  CHECK(fb[0] == 18446744073709551616.0f);
  CHECK(fb[1] == 9223372036854775808.0f);
}

TEST_CASE("llvm: bitcasts keep the bits, bfloat16 and bool included") {
  const std::vector<std::pair<DType, DType>> pairs = {
      {dtypes::float32, dtypes::int32},    {dtypes::float32, dtypes::uint32},
      {dtypes::int32, dtypes::float32},    {dtypes::uint32, dtypes::int32},
      {dtypes::float16, dtypes::int16},    {dtypes::int16, dtypes::float16},
      {dtypes::uint16, dtypes::float16},   {dtypes::bfloat16, dtypes::int16},
      {dtypes::uint16, dtypes::bfloat16},  {dtypes::float16, dtypes::bfloat16},
      {dtypes::bfloat16, dtypes::float16}, {dtypes::float64, dtypes::int64},
      {dtypes::int64, dtypes::float64},    {dtypes::uint64, dtypes::float64},
      {dtypes::int8, dtypes::uint8},       {dtypes::uint8, dtypes::int8},
      {dtypes::bool_, dtypes::uint8}};
  for (const auto& pair : pairs) {
    const DType from = pair.first, to = pair.second;
    CAPTURE(from);
    CAPTURE(to);
    check_same(make(from).bitcast(to));
  }
  Tensor f = make(dtypes::float32, {}, {1.0, -2.0, 0.0});
  CHECK(llvm_values<uint32_t>(f.bitcast(dtypes::uint32)) ==
        std::vector<uint32_t>{0x3f800000u, 0xc0000000u, 0u});
  Tensor h = make(dtypes::uint16, {0x3f80, 0xc040, 0x7f80}, {});
  const std::vector<bfloat16_t> bf = llvm_values<bfloat16_t>(h.bitcast(dtypes::bfloat16));
  CHECK(static_cast<float>(bf[0]) == 1.0f);
  CHECK(static_cast<float>(bf[1]) == -3.0f);
  CHECK(std::isinf(static_cast<float>(bf[2])));
}

TEST_CASE("llvm: sums and maxima over axes of every dtype agree with the C backend") {
  const std::vector<int64_t> ints = {3, -1, 7, 0, 100, -128, 5, 2, -7, 9, 1, 4};
  const std::vector<double> floats = {0.1,  -2.5, 3.75, 1e-3, 100.0, 1.0 / 3,
                                      -7.0, 2.0,  0.3,  1e4,  -0.0,  5.5};
  for (DType dt : dtypes::all()) {
    CAPTURE(dt);
    Tensor m = make(dt, ints, floats).reshape({3, 4});
    check_same(m.sum(0));
    check_same(m.sum(1));
    check_same(m.sum());
    check_same(m.max(1));
    check_same(m.max(0));
    check_same(m.min(-1));
    if (!dt.is_bool()) check_same(m.permute({1, 0}).sum(1, true));
  }
  Tensor f = make(dtypes::float32, {}, floats).reshape({3, 4});
  Tensor s = f.sum(1);
  check_same(s);
  const std::vector<float> got = s.to_vector<float>();
  for (size_t r = 0; r < 3; ++r) {
    float expected = 0;
    for (size_t c = 0; c < 4; ++c)
      expected += static_cast<float>(floats[r * 4 + c]);  // in order, as the kernel
    CHECK(got[r] == expected);
  }
  Tensor bools = make(dtypes::bool_, {0, 0, 1, 0, 0, 0}, {}).reshape({2, 3});
  Tensor any = bools.any(1), all = bools.all(1);
  check_same(any);
  check_same(all);
  CHECK(any.to_vector<bool>() == std::vector<bool>{true, false});
  CHECK(all.to_vector<bool>() == std::vector<bool>{false, false});
}

TEST_CASE("llvm: a matmul agrees with the C backend to the bit (both fuse with fma where codegen asks)") {
  constexpr int64_t n = 17;
  std::vector<double> av, bv;
  for (int64_t i = 0; i < n * n; ++i) {
    av.push_back(std::sin(static_cast<double>(i)) * 3);
    bv.push_back(std::cos(static_cast<double>(i) * 0.7));
  }
  for (DType dt : {dtypes::float32, dtypes::float64, dtypes::float16, dtypes::bfloat16}) {
    CAPTURE(dt);
    Tensor a = make(dt, {}, av).reshape({n, n}), b = make(dt, {}, bv).reshape({n, n});
    Tensor c = a.matmul(b);
    // float32 and float64 accumulate with fma (MULACC) in both; float16 and bfloat16 round every
    // product before the sum sees it, in both: nothing is left to either compiler
    check_same(c, 0);
    if (dt == dtypes::float32) {
      const std::vector<float> ga = a.to_vector<float>(), gb = b.to_vector<float>(),
                               got = c.to_vector<float>();
      int wrong = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double ref = 0, magnitude = 0;
          for (int64_t k = 0; k < n; ++k) {
            const double term = static_cast<double>(ga[static_cast<size_t>(i * n + k)]) *
                                gb[static_cast<size_t>(k * n + j)];
            ref += term, magnitude += std::abs(term);
          }
          // n products and n - 1 sums in float32, in any order: within n roundings of the sum
          // of the terms' magnitudes (the classic bound for a dot product)
          wrong += std::abs(got[static_cast<size_t>(i * n + j)] - ref) > n * 0x1p-24 * magnitude;
        }
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("llvm: pads read their value, not memory, outside the input") {
  for (DType dt : {dtypes::float32, dtypes::int32, dtypes::bfloat16, dtypes::float16, dtypes::bool_,
                   dtypes::uint8, dtypes::float64, dtypes::int64}) {
    CAPTURE(dt);
    Tensor x = make(dt, {1, 2, 3, 4, 5, 6}, {1.5, -2.0, 3.25, 0.0, NAN, 6.0}).reshape({2, 3});
    check_same(x.pad({{1, 2}, {3, 1}}));
    check_same(x.pad({{0, 1}, {2, 0}}, 7.0));
    check_same(x.flip(1).pad({{2, 0}, {0, 2}}).shrink({{1, 4}, {1, 4}}));
  }
  Tensor f = make(dtypes::float32, {}, {1.0, 2.0, 4.0, 0.5});
  // log2 and reciprocal must not see the garbage a masked-off load would have read
  Tensor l = f.pad({{2, 2}}).log2();
  check_same(l);
  const std::vector<float> got = l.to_vector<float>();
  CHECK(std::isinf(got[0]));
  CHECK(got[2] == 0.0f);
  CHECK(got[4] == 2.0f);
  check_same(f.pad({{1, 1}}, 2.0).reciprocal());
}

TEST_CASE("llvm: a gated load does not touch memory where its gate is false") {
  // the input ends at a page that cannot be read, and starts right after one
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* region =
      mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(region != MAP_FAILED);
  auto* base = static_cast<uint8_t*>(region);
  REQUIRE(mprotect(base, page, PROT_NONE) == 0);
  REQUIRE(mprotect(base + 2 * page, page, PROT_NONE) == 0);
  const std::vector<float> values = {1.0f, 2.0f, 3.0f, 4.0f};
  Tensor x = make(dtypes::float32, {}, {1.0, 2.0, 3.0, 4.0});
  for (bool at_end : {true, false}) {
    CAPTURE(at_end);
    float* guarded = at_end ? reinterpret_cast<float*>(base + 2 * page) - 4
                            : reinterpret_cast<float*>(base + page);
    std::memcpy(guarded, values.data(), 4 * sizeof(float));
    const std::vector<schedule::Kernel> kernels =
        schedule::create_schedule({x.pad({{5, 5}}).uop()});
    REQUIRE(kernels.size() == 1);
    REQUIRE(kernels[0].buffers.size() == 2);
    std::vector<float> out(14);
    const Outputs o = run_both(kernels[0], {out.data(), guarded});
    CHECK(mismatches(o).empty());
    CHECK(out == std::vector<float>{0, 0, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0, 0});
  }
  munmap(region, 3 * page);
}

TEST_CASE("llvm: a THREAD range is one core's index, not a loop") {
  constexpr int64_t cores = 4, inner = 8;
  UOp out(Ops::DEFINE_GLOBAL, dtypes::int32.ptr(cores * inner), {}, int64_t{0});
  UOp core = schedule::range(cores, 0, static_cast<schedule::RangeKind>(2));
  UOp i = schedule::range(inner, 1, schedule::RangeKind::loop);
  UOp value = (core * 100 + i).cast(dtypes::int32);
  UOp store(Ops::STORE, dtypes::void_,
            {UOp(Ops::INDEX, out.dtype(), {out, core * inner + i}), value});
  const codegen::Program p = codegen::linearize(UOp(Ops::SINK, dtypes::void_, {store}), "threads");
  const std::string c_src = renderer::render_c(p), ir = renderer::render_llvm(p);
  CHECK(contains(c_src, "= core_id;"));
  CHECK(contains(ir, "sext i32 %core_id to i64"));
  const backend::CProgram c(backend::default_cc().compile(c_src), p.name);
  LLVMJit::Function* llvm = jit().compile(ir, p.name);
  for (bool use_llvm : {false, true}) {
    CAPTURE(use_llvm);
    std::vector<int32_t> buf(cores * inner, -1);
    void* bufs[] = {buf.data()};
    auto run = [&](int id) {
      if (use_llvm)
        llvm(bufs, nullptr, id, cores);
      else
        c(bufs, nullptr, id, cores);
    };
    run(2);  // one core writes its share only
    for (int64_t j = 0; j < cores * inner; ++j)
      CHECK(buf[static_cast<size_t>(j)] == (j / inner == 2 ? 200 + j % inner : -1));
    for (int id = 0; id < cores; ++id) run(id);
    for (int64_t j = 0; j < cores * inner; ++j)
      CHECK(buf[static_cast<size_t>(j)] == (j / inner) * 100 + j % inner);
  }
}

TEST_CASE("llvm: the IR uses typed pointers and no fast-math flag") {
  Tensor a = make(dtypes::float32, {}, {1.0, 2.0}), b = make(dtypes::bfloat16, {}, {1.0, 2.0});
  const std::vector<schedule::Kernel> ka =
      schedule::create_schedule({a.mul(a).add(1.0f).exp2().uop()});
  const std::vector<schedule::Kernel> kb = schedule::create_schedule({b.pad({{1, 1}}).uop()});
  REQUIRE(ka.size() == 1);
  REQUIRE(kb.size() == 1);
  const std::string ir = renderer::render_llvm(codegen::linearize(ka[0].ast, "k")) +
                         renderer::render_llvm(codegen::linearize(kb[0].ast, "k"));
  CHECK_FALSE(contains(ir, " ptr "));
  CHECK_FALSE(contains(ir, "ptr,"));
  CHECK(contains(ir, "float*"));
  CHECK(contains(ir, "i16*"));  // bfloat16 in memory
  CHECK(contains(ir, "fmul float"));
  CHECK(contains(ir, "@llvm.exp2.f32"));
  for (const char* flag : {" fast ", " nnan ", " ninf ", " nsz ", " arcp ", " afn ", " reassoc ", " contract "})
    CHECK_FALSE(contains(ir, flag));
}

TEST_CASE("llvm: a*b+c is never fused unless the kernel asks, on either compiler") {
  // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11 (a tie, to even): minus that, 0. A
  // fused multiply-add would keep the 2^-24, and a compiler may fuse only if told it may.
  const double x = 1.0 + std::ldexp(1.0, -12), y = -(1.0 + std::ldexp(1.0, -11));
  Tensor a = make(dtypes::float32, {}, std::vector<double>(64, x));
  Tensor c = make(dtypes::float32, {}, std::vector<double>(64, y));
  for (int cpu_llvm : {0, 1}) {
    Context compiler{{"CPU_LLVM", cpu_llvm}};
    const std::vector<float> got = Tensor(a * a + c).to_vector<float>();
    CHECK(std::count(got.begin(), got.end(), 0.0f) == 64);
  }
}

TEST_CASE("llvm: a float matmul accumulates with fused multiply-adds (MULACC), in both renderers") {
  Tensor a = make(dtypes::float32, {}, std::vector<double>(12, 1.5)).reshape({3, 4});
  Tensor b = make(dtypes::float64, {}, std::vector<double>(12, 0.5)).reshape({4, 3});
  for (const Tensor& m : {a.matmul(a.T()), b.T().matmul(b)}) {
    const std::vector<schedule::Kernel> k = schedule::create_schedule({m.uop()});
    REQUIRE(k.size() == 1);
    const codegen::Program p = codegen::linearize(k[0].ast, "k");
    CHECK(std::count_if(p.ops.begin(), p.ops.end(), [](const UOp& u) { return u.op() == Ops::MULACC; }) == 1);
    const bool f64 = m.dtype() == dtypes::float64;
    CHECK(contains(renderer::render_llvm(p), f64 ? "call double @llvm.fma.f64" : "call float @llvm.fma.f32"));
    CHECK(contains(renderer::render_c(p), f64 ? " fma(" : "fmaf("));
  }
}

TEST_CASE("llvm: float16 and bfloat16 arithmetic reaches neither renderer: it is float32 there") {
  for (DType dt : {dtypes::float16, dtypes::bfloat16}) {
    CAPTURE(dt);
    Tensor x = make(dt, {}, {1.0, 2.0, 3.0});
    const std::vector<schedule::Kernel> k =
        schedule::create_schedule({Tensor((x * x + 1).maximum(x).sqrt().sum() < 3).uop()});
    REQUIRE(k.size() == 1);
    const codegen::Program p = codegen::linearize(k[0].ast, "k");
    for (const UOp& u : p.ops) {
      if (!GroupOp::ALU.contains(u.op()) && u.op() != Ops::REDUCE && u.op() != Ops::DEFINE_REG) continue;
      CAPTURE(op_name(u.op()));
      CHECK(u.dtype().base().scalar() != dt);
      for (const UOp& s : u.src()) CHECK(s.dtype().scalar() != dt);
    }
    CHECK_NOTHROW(renderer::render_c(p));  // each renderer throws on narrow arithmetic
    const std::string ir = renderer::render_llvm(p);
    CHECK_FALSE(contains(ir, "fadd half"));
    CHECK_FALSE(contains(ir, "fmul half"));
  }
}

TEST_CASE("llvm: a kernel's object file is kept on disk, and compiling it again links that object") {
  tinyt_test::TempDir dir;
  tinyt_test::ScopedEnv env;
  env.set("TINYT_CACHE_DIR", dir.path.string()).set("CPU_LLVM", "1").set("TINYT_LLVM_CPU", std::nullopt);
  const std::vector<float> av = tinyt_test::values(40, 21);
  Tensor a = Tensor::from_vector(av, {40}, "CPU").realize();
  const std::vector<schedule::Kernel> k = schedule::create_schedule({Tensor(a * 3 + 1).uop()});
  REQUIRE(k.size() == 1);
  LLVMJit& jit = backend::default_llvm();
  const uint64_t before = jit.compiles();
  const auto first = compile_kernel(k[0].ast, {});
  CHECK(jit.compiles() == before + 1);
  // as a new process would: the binary cache holds the object, nothing is compiled
  const auto second = compile_kernel(k[0].ast, {});
  CHECK(jit.compiles() == before + 1);
  for (const auto& kernel : {first, second}) {
    std::vector<float> out(40);
    launch(*kernel, {out.data(), graph::buffer_of(k[0].buffers[1])->host_ptr()});
    for (size_t i = 0; i < 40; ++i) CHECK(out[i] == av[i] * 3 + 1);
  }
  // an object is linked once per symbol: the same code again is the same function
  const std::string object = jit.emit_object(renderer::render_llvm(first->program), first->program.name);
  CHECK(object.starts_with(LLVMJit::object_header));
  LLVMJit::Function* once = jit.load_object(object);
  const bool same = jit.load_object(object) == once;
  CHECK(same);
}
