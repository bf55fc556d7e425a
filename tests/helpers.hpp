// Helpers the test files share: comparing against references, reading error messages,
// deterministic test data, tensors and raw memory of any dtype, scoped environment variables
// and temporary directories.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>  // mkdtemp, setenv

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <tinyt.hpp>

namespace tinyt_test {

/// Every element within atol + rtol * |want| (NaN must be NaN, inf must be the same inf).
inline void check_close(const std::vector<float>& got, const std::vector<double>& want,
                        double atol = 1e-6, double rtol = 1e-3) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element ", i, ": got ", got[i], ", want ", want[i]);
    if (std::isnan(want[i]))
      CHECK(std::isnan(got[i]));
    else if (std::isinf(want[i]))
      CHECK(static_cast<double>(got[i]) == want[i]);
    else
      CHECK(std::fabs(static_cast<double>(got[i]) - want[i]) <= atol + rtol * std::fabs(want[i]));
  }
}
/// The same with references of another type (a braced list goes to the double version).
template <class W>
requires(!std::is_same_v<W, double>) void check_close(const std::vector<float>& got,
                                                      const std::vector<W>& want,
                                                      double atol = 1e-6, double rtol = 1e-3) {
  check_close(got, std::vector<double>(want.begin(), want.end()), atol, rtol);
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
