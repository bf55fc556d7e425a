// Helpers the test files share: comparing against references, reading error messages,
// deterministic test data, scoped environment variables and temporary directories.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>  // mkdtemp, setenv

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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
