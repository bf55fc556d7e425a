// Helpers the test files share: comparing against references, reading error messages,
// deterministic test data, tensors and raw memory of any dtype, scoped environment variables
// and temporary directories.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>  // mkdtemp, setenv

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <tinyt.hpp>
#include <tinyt/internals.hpp>

namespace tinyt_test {

// What a test does not check where it runs shows in the run's output: a test case that checks
// nothing here says MESSAGE("skipped: <why>") and returns (ctest then reports it as skipped:
// tests/CMakeLists.txt); one that skips a part says MESSAGE("skipped part: <why>") and checks the
// rest.

/// Whether `device` can run here (Device::list()).
inline bool device_available(const std::string& device) {
  const std::vector<std::string> here = tinyt::Device::list();
  return std::find(here.begin(), here.end(), device) != here.end();
}

/// n devices of the default device's kind: {"CPU", "CPU:1", ...}; CPU:i where the kind has no
/// device i (one GPU: CUDA, CPU:1, CPU:2)
inline std::vector<std::string> devices(int n) {
  const std::string kind = tinyt::Device::kind(tinyt::Device::default_device());
  std::vector<std::string> out{kind};
  for (int i = 1; i < n; ++i) {
    const std::string name = kind + ":" + std::to_string(i);
    try {
      tinyt::Device::require(name);
      out.push_back(name);
    } catch (const tinyt::DeviceError&) {
      // the test still runs, on devices of two kinds; the output says which stood in
      MESSAGE("stand-in: ", name, " is not available here, CPU:", i, " takes its place");
      out.push_back("CPU:" + std::to_string(i));
    }
  }
  return out;
}

/// How many kernels realizing `t` launches (GlobalCounters::kernel_count): what fusion is checked by.
inline int64_t kernels_to_realize(tinyt::Tensor t) {
  tinyt::GlobalCounters::reset();
  t.realize();
  return tinyt::GlobalCounters::kernel_count;
}

/// Whether the default device runs kernels as a GPU does, one work-item per output element (CL,
/// CUDA, EMU). A reduction broadcast back along its row (a softmax's max and sum) is a kernel of its
/// own there, computed once, where a CPU's kernel computes it once per row inside its loops.
inline bool on_gpu() { return tinyt::backend::device(tinyt::Device::default_device()).target().gpu; }

/// Whether the default device holds 64-bit types (float64, int64, uint64): WEBGPU does not, and a
/// tensor of one there is a DeviceError.
inline bool wide_types() { return tinyt::backend::device(tinyt::Device::default_device()).target().wide_types; }

/// CHECK(expr) where the default device holds 64-bit types; where it does not (WEBGPU), the
/// DeviceError that making expr's float64 or int64 tensor there gives.
#define CHECK_WIDE(...)                                                  \
  do {                                                                   \
    if (tinyt_test::wide_types()) CHECK(__VA_ARGS__);                    \
    else CHECK_THROWS_AS((void)(__VA_ARGS__), tinyt::DeviceError);       \
  } while (0)

/// Where the default device has no 64-bit types: checks that a `dt` tensor there is the
/// DeviceError, says the part about `dt` is skipped, and returns true (`if (lacks(dt)) return;`).
inline bool lacks(tinyt::DType dt) {
  if (wide_types()) return false;
  CHECK_THROWS_AS(tinyt::Tensor::zeros({1}, dt), tinyt::DeviceError);
  MESSAGE("skipped part: the device has no ", dt.name());
  return true;
}

/// The values of an integer tensor whose dtype is the device's widest (an index tinyt computes,
/// an integer sum: int64, int32 on WEBGPU), as int64.
inline std::vector<int64_t> ints(const tinyt::Tensor& t) {
  if (t.dtype() == tinyt::dtypes::int64) return t.to_vector<int64_t>();
  const std::vector<int32_t> v = t.to_vector<int32_t>();
  return {v.begin(), v.end()};
}

/// An index tensor of `v` in `shape`: int64 (PyTorch's index dtype), int32 where the device has no
/// 64-bit types.
inline tinyt::Tensor index_tensor(const std::vector<int64_t>& v, const tinyt::Shape& shape) {
  if (wide_types()) return tinyt::Tensor::from_vector(v, shape);
  return tinyt::Tensor::from_vector(std::vector<int32_t>(v.begin(), v.end()), shape);
}

/// Whether the default device computes exp2, log2, sin and pow with its own functions, not tinyt's
/// decompositions (WEBGPU: WGSL's, whose error bounds the WGSL spec gives).
inline bool device_math() { return tinyt::backend::device(tinyt::Device::default_device()).target().language == tinyt::backend::Language::wgsl; }

/// The bytes `hex` spells ("48690a" is "Hi\n"): how tests/data's reference texts keep any byte.
inline std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

/// How close a result must be to its reference: |got - want| <= atol + rtol * |want|. Every
/// comparison states its own, derived from the dtype and the op (no default):
///   Tol::exact()           the result is exactly representable and every step is exact (sums,
///                          products and differences of a few grid values, movement ops, max, relu);
///   Tol::dtype(dt, n)      a chain of n correctly rounded operations in dt: each rounding errs by
///                          at most half an ulp, a relative 2^-p (p significand bits: 2^-24 float32,
///                          2^-53 float64, 2^-11 float16, 2^-8 bfloat16), so n of them by about n * 2^-p
///                          (the result's own rounding to dt counts as one);
///   Tol::f32(n)            the same for float32;
///   .of(scale)             errors of intermediates as large as `scale`, which cancellation leaves
///                          in a smaller result (a sum of n terms errs by n roundings of its largest
///                          partial sum, not of the sum): adds atol = rtol * scale;
///   Tol{atol, rtol}        anything looser, with a comment at the call saying why (transcendental
///                          approximations, finite differences, references computed in float32).
struct Tol {
  double atol = 0, rtol = 0;
  static constexpr Tol exact() { return {0, 0}; }
  static Tol dtype(tinyt::DType dt, int n_roundings) {
    int p = 24;
    switch (dt.scalar_type()) {
      case tinyt::ScalarType::float64: p = 53; break;
      case tinyt::ScalarType::float32: p = 24; break;
      case tinyt::ScalarType::float16: p = 11; break;
      case tinyt::ScalarType::bfloat16: p = 8; break;
      default: FAIL("Tol::dtype: ", dt.name(), " is not a float dtype");
    }
    return {0, n_roundings * std::ldexp(1.0, -p)};
  }
  static Tol f32(int n_roundings) { return dtype(tinyt::dtypes::float32, n_roundings); }
  Tol of(double scale) const { return {atol + rtol * scale, rtol}; }
};

/// Every element within `tol` of `want` (NaN must be NaN, inf must be the same inf). With
/// TINYT_TEST_TOL=report in the environment, each comparison also prints its worst error as a
/// fraction of what it allows, and in roundings of float32 (2^-24 relative): how much room a
/// tolerance leaves.
inline void check_close(const std::vector<float>& got, const std::vector<double>& want, Tol tol,
                        const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  REQUIRE(got.size() == want.size());
  double worst = 0, worst_roundings = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]), err = std::fabs(g - want[i]);
    const double allowed = tol.atol + tol.rtol * std::fabs(want[i]);
    INFO("element ", i, ": got ", g, ", want ", want[i], " (off by ", err, ", allowed ", allowed, ")");
    if (std::isnan(want[i])) {
      CHECK(std::isnan(g));
    } else if (std::isinf(want[i])) {
      CHECK(g == want[i]);
    } else {
      CHECK(err <= allowed);
      if (err > 0) {
        worst = std::max(worst, allowed > 0 ? err / allowed : INFINITY);
        if (want[i] != 0) worst_roundings = std::max(worst_roundings, err / std::fabs(want[i]) / 0x1p-24);
      }
    }
  }
  const char* mode = std::getenv("TINYT_TEST_TOL");
  if (mode && std::string(mode) == "report")
    std::printf("%s:%d: worst error %.3g of the tolerance (%.3g float32 roundings)\n", file, line,
                worst, worst_roundings);
}
/// The same with references of another type (a braced list goes to the double version).
template <class W>
requires(!std::is_same_v<W, double>) void check_close(const std::vector<float>& got,
                                                      const std::vector<W>& want, Tol tol,
                                                      const char* file = __builtin_FILE(),
                                                      int line = __builtin_LINE()) {
  check_close(got, std::vector<double>(want.begin(), want.end()), tol, file, line);
}
/// Tests written against the old signature: absolute and relative tolerance, both stated.
template <class W>
requires(!std::is_same_v<W, double>) void check_close(const std::vector<float>& got,
                                                      const std::vector<W>& want, double atol,
                                                      double rtol) {
  check_close(got, want, Tol{atol, rtol});
}
inline void check_close(const std::vector<float>& got, const std::vector<double>& want,
                        double atol, double rtol) {
  check_close(got, want, Tol{atol, rtol});
}
/// A comparison without a tolerance used to mean atol 1e-6, rtol 1e-3 (about 8000 ulp of
/// float32): say which one the op needs instead.
template <class W> void check_close(const std::vector<float>&, const std::vector<W>&) {
  static_assert(sizeof(W) == 0,
                "check_close needs a tolerance: Tol::exact(), Tol::f32(n_roundings), "
                "Tol::dtype(dt, n), or Tol{atol, rtol} with a comment saying why");
}

/// The bytes of a file (the test fails when it cannot be read).
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), {});
}
/// Writes `bytes` as the whole file.
inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

/// The message of the E that f throws ("(nothing thrown)" when it throws none).
template <class E> std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

/// The message of the E that f throws; a failed check when f throws nothing (another type of
/// exception leaves the test, failing it).
template <class E = tinyt::Error, class F> std::string error_of(F&& f) {
  const std::string m = message_of<E>(std::forward<F>(f));
  CHECK_MESSAGE(m != "(nothing thrown)", "expected a ", typeid(E).name());
  return m;
}

/// Whether `part` occurs in `text`.
inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The number of elements of a tensor of shape `dims`.
inline int64_t count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

/// A tensor's values as floats (realized first where it is not).
inline std::vector<float> floats(const tinyt::Tensor& t) { return t.to_vector<float>(); }
/// v[i] with a signed index.
inline float at(const std::vector<float>& v, int64_t i) { return v[static_cast<size_t>(i)]; }

/// The path of tests/data/<name>.
inline std::string data_file(const std::string& name) {
  return (std::filesystem::path(__FILE__).parent_path() / "data" / name).string();
}

/// Deterministic values in [-2, 2) on a grid of 1/8 (exact in float), different per seed.
inline std::vector<float> values(int64_t n, int seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t x = 88172645u + 7919u * static_cast<uint32_t>(seed);
  for (float& f : v) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    f = static_cast<float>(static_cast<int>(x % 32) - 16) / 8.f;
  }
  return v;
}

/// A realized tensor of `shape` holding values(count(shape), seed).
inline tinyt::Tensor input(const std::vector<int64_t>& shape, int seed) {
  return tinyt::Tensor::from_vector(values(count(shape), seed)).reshape(tinyt::Shape(shape)).realize();
}

/// Calls `f` with a value of the C++ type that holds one element of `dt`.
template <class F> void with_type(tinyt::DType dt, F&& f) {
  using tinyt::ScalarType;
  switch (dt.scalar_type()) {
    case ScalarType::bool_:
      return f(uint8_t{});  // one byte, 0 or 1
    case ScalarType::int8:
      return f(int8_t{});
    case ScalarType::uint8:
      return f(uint8_t{});
    case ScalarType::int16:
      return f(int16_t{});
    case ScalarType::uint16:
      return f(uint16_t{});
    case ScalarType::int32:
      return f(int32_t{});
    case ScalarType::uint32:
      return f(uint32_t{});
    case ScalarType::int64:
      return f(int64_t{});
    case ScalarType::uint64:
      return f(uint64_t{});
    case ScalarType::float16:
      return f(tinyt::half_t{});
    case ScalarType::bfloat16:
      return f(tinyt::bfloat16_t{});
    case ScalarType::float32:
      return f(float{});
    case ScalarType::float64:
      return f(double{});
    default:
      FAIL("no C++ type for ", dt.name());
  }
}

// bfloat16 by hand (not tinyt's): the top half of a float, rounded to nearest even
inline uint16_t to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float from_bf16_bits(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// A 1-D tensor of `dt` holding `ints` (wrapped as C++ converts) or, for float dtypes, `floats`.
inline tinyt::Tensor make(tinyt::DType dt, const std::vector<int64_t>& ints,
                          const std::vector<double>& floats) {
  std::vector<uint8_t> bytes;
  size_t n = 0;
  with_type(dt, [&](auto zero) {
    using E = decltype(zero);
    std::vector<E> v;
    if constexpr (std::is_integral_v<E>) {
      for (int64_t x : ints) v.push_back(dt.is_bool() ? static_cast<E>(x != 0) : static_cast<E>(x));
    } else if constexpr (std::is_same_v<E, double>) {
      v = floats;
    } else {
      v.resize(floats.size());  // (push_back trips over half_t's operator templates)
      for (size_t i = 0; i < floats.size(); ++i) v[i] = E(static_cast<float>(floats[i]));
    }
    n = v.size();
    bytes.resize(n * sizeof(E));
    std::memcpy(bytes.data(), v.data(), bytes.size());
  });
  return tinyt::Tensor::from_blob(bytes.data(), {static_cast<int64_t>(n)}, dt);
}

/// Element `i` of raw memory holding `dt`, as a double.
inline double element(const uint8_t* bytes, tinyt::DType dt, size_t i) {
  double out = 0;
  with_type(dt, [&](auto zero) {
    decltype(zero) x;
    std::memcpy(&x, bytes + i * sizeof x, sizeof x);
    if constexpr (std::is_same_v<decltype(zero), tinyt::half_t>)
      out = static_cast<float>(x);
    else if constexpr (std::is_same_v<decltype(zero), tinyt::bfloat16_t>)
      out = from_bf16_bits(x.bits);
    else
      out = static_cast<double>(x);
  });
  return out;
}

/// Sets or unsets environment variables for one test and restores them afterwards.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ScopedEnv& set(const char* name, std::optional<std::string> value) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    apply(name, value);
    return *this;
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) apply(it->first.c_str(), it->second);
  }

 private:
  static void apply(const char* name, const std::optional<std::string>& value) {
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

/// A fresh directory, removed with its contents at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string name = (std::filesystem::temp_directory_path() / "tinyt_test_XXXXXX").string();
    REQUIRE(mkdtemp(name.data()) != nullptr);
    path = name;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace tinyt_test
