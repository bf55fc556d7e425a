// Knobs and counters: environment variables with tinygrad's names (DEBUG, BEAM, NOOPT, ...),
// scoped overrides of them in code (Context), and GlobalCounters.
#pragma once

#include <atomic>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "error.hpp"

namespace tinyt::inline v0 {

/// Overrides knobs for a scope of this thread: `Context ctx{{"BEAM", 2}, {"DEV", "CPU"}};`
/// (innermost wins). Each thread has its own scopes: with one stack for all, a scope could close
/// under another thread's and leave its setting behind, and each thread would see the others'.
class Context {
 public:
  using Value = std::variant<int64_t, std::string>;
  struct Setting {
    std::string name;
    Value value;
    Setting(std::string n, int64_t v) : name(std::move(n)), value(v) {}
    Setting(std::string n, int v) : name(std::move(n)), value(static_cast<int64_t>(v)) {}
    Setting(std::string n, std::string v) : name(std::move(n)), value(std::move(v)) {}
    Setting(std::string n, const char* v) : name(std::move(n)), value(std::string(v)) {}
  };
  Context(std::initializer_list<Setting> settings) {
    stack().emplace_back(settings.begin(), settings.end());
    depth_ = stack().size();
    ++open_count();
  }
  ~Context() {
    if (stack().size() == depth_) stack().pop_back();
    --open_count();
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// Whether this thread has a Context open (a knob read at every launch skips the lookup
  /// when it has none; safe during static teardown).
  static bool active() { return open_count() > 0; }
  /// The knob's value as text: this thread's innermost Context that sets it, else the environment.
  static std::optional<std::string> lookup(const std::string& name) {
    for (auto it = stack().rbegin(); it != stack().rend(); ++it)
      for (const Setting& s : *it)
        if (s.name == name)
          return std::holds_alternative<int64_t>(s.value) ? std::to_string(std::get<int64_t>(s.value))
                                                            : std::get<std::string>(s.value);
    if (const char* v = std::getenv(name.c_str())) return std::string(v);
    return std::nullopt;
  }

 private:
  static std::vector<std::vector<Setting>>& stack() {
    static thread_local std::vector<std::vector<Setting>> s;
    return s;
  }
  static int& open_count() {
    static thread_local int n = 0;  // trivially destructible: readable after the stack is gone
    return n;
  }
  size_t depth_ = 0;
};

/// An integer knob (DEBUG=2), or `fallback` when unset; a non-number is an Error.
inline int64_t getenv_int(const std::string& name, int64_t fallback = 0) {
  auto v = Context::lookup(name);
  if (!v || v->empty()) return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v->c_str(), &end, 10);
  if (*end != '\0') throw Error(detail::cat("the setting ", name, "='", *v, "' is not a number"));
  return n;
}
inline std::string getenv_str(const std::string& name, const std::string& fallback = "") {
  return Context::lookup(name).value_or(fallback);
}
/// Whether the environment turns an on/off knob on (PROFILE=1), ignoring Contexts.
inline bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && std::atoi(v) > 0;
}
/// Whether an on/off knob is on now: this thread's Context, else `from_env` (the environment as the
/// program started, read once by the caller): cheap enough for every launch.
inline bool knob_on(const char* name, bool from_env) { return Context::active() ? getenv_int(name, 0) > 0 : from_env; }
/// The DEBUG level (0 when unset).
inline int debug_level() { return static_cast<int>(getenv_int("DEBUG", 0)); }

/// Counters of the work done since the last reset (tests use kernel_count to check fusion).
/// global_ops and global_mem add up each launched kernel's estimates (engine/estimates.hpp).
struct GlobalCounters {
  static inline std::atomic<int64_t> kernel_count{0};
  static inline std::atomic<int64_t> global_ops{0};
  static inline std::atomic<int64_t> global_mem{0};
  static inline std::atomic<double> time_sum_s{0.0};
  static inline std::atomic<int64_t> compile_count{0};  // kernels compiled (not found in a cache)
  static inline std::atomic<int64_t> mem_used{0};       // bytes of device memory allocated now (not reset)
  static inline std::atomic<int64_t> allocations{0};    // device allocations made (not reset)
  static void reset() { kernel_count = 0, global_ops = 0, global_mem = 0, time_sum_s = 0.0, compile_count = 0; }
};

}  // namespace tinyt::inline v0
