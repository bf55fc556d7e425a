// What tinyt records while it runs, for the profiler (engine/profiler.hpp writes it out): with
// PROFILE=1 (or Context{{"PROFILE", 1}}) a timeline of events, host spans (schedule, codegen,
// compile, beam), each kernel launch and copy, and each allocation and free with the memory in
// use; with DEBUG=2 each kernel's launches, time, flops and bytes. Below the memory layer
// (buffer.hpp records its allocations here), so it names nothing of the stages above it: what is
// written at exit is formatted by engine/profiler.hpp, whose Recorder::finish the implementation
// (profile_impl.hpp) defines.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "helpers.hpp"
#include "support.hpp"

namespace tinyt::inline v0 {
namespace profile {

/// Whether PROFILE is on now: this thread's Context, else the environment as the program started.
inline bool enabled() {
  static const bool from_env = env_on("PROFILE");
  return knob_on("PROFILE", from_env);
}

/// One trace event. `phase` is the Chrome trace format's: 'X' a span, 'i' an instant, 'C' a
/// counter. Times are microseconds since the recorder started. `args` are JSON values by name.
struct Event {
  std::string name, category, process;  // process: "host" or a device's name
  std::string track;                    // within the process: a thread, "kernels", "copies", "memory"
  char phase = 'X';
  double start_us = 0, duration_us = 0;
  std::vector<std::pair<std::string, std::string>> args;
};

/// A kernel's launches, added up (what the DEBUG=2 summary prints).
struct KernelTotals {
  int64_t launches = 0;
  double seconds = 0;
  int64_t ops = 0, bytes = 0;
};

namespace detail {
/// The recorded events and kernel totals of this process.
class Recorder {
 public:
  Recorder() : origin_(std::chrono::steady_clock::now()) {
    // what happens at exit follows the environment (a Context's PROFILE or DEBUG ends with it)
    const char* debug = std::getenv("DEBUG");
    trace_at_exit_ = env_on("PROFILE"), summary_at_exit_ = debug && std::atoi(debug) >= 2;
  }

  double now_us() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_).count();
  }
  double us_of(std::chrono::steady_clock::time_point t) const {
    return std::chrono::duration<double, std::micro>(t - origin_).count();
  }
  void add(Event e) {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(e));
  }
  void count_kernel(const std::string& name, double seconds, int64_t ops, int64_t bytes) {
    std::lock_guard lock(mu_);
    KernelTotals& t = totals_[name];
    ++t.launches, t.seconds += seconds, t.ops += ops, t.bytes += bytes;
  }
  std::vector<Event> events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  std::map<std::string, KernelTotals> totals() {
    std::lock_guard lock(mu_);
    return totals_;
  }
  void clear() {
    std::lock_guard lock(mu_);
    events_.clear(), totals_.clear();
  }
  /// At exit: the DEBUG=2 table and the PROFILE=1 trace file (defined in profile_impl.hpp).
  void finish();

 private:
  std::chrono::steady_clock::time_point origin_;
  std::mutex mu_;
  std::vector<Event> events_;
  std::map<std::string, KernelTotals> totals_;
  bool trace_at_exit_ = false, summary_at_exit_ = false;
};

inline Recorder& recorder() {
  // never destroyed (buffers freed during static teardown still report to it); finish() at exit
  static Recorder* r = [] {
    auto* made = new Recorder;
    std::atexit([] { recorder().finish(); });
    return made;
  }();
  return *r;
}

/// A small index per thread, in order of first use (a trace's thread ids).
inline int thread_index() {
  static std::atomic<int> next{0};
  thread_local const int index = next++;
  return index;
}
}  // namespace detail

/// Times a piece of host work on this thread's track while PROFILE is on.
class Span {
 public:
  Span(std::string_view name, std::string_view category, bool on = enabled()) : on_(on) {
    if (!on_) return;  // nothing built: a span is on paths that run per launch
    name_ = name, category_ = category;
    start_ = detail::recorder().now_us();
  }
  bool on() const { return on_; }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  /// Adds a JSON value (a number, or quoted text) shown with the span.
  void arg(std::string key, std::string json) {
    if (on_) args_.emplace_back(std::move(key), std::move(json));
  }
  ~Span() {
    if (!on_) return;
    detail::Recorder& r = detail::recorder();
    r.add({std::move(name_), std::move(category_), "host", tinyt::detail::cat("thread ", detail::thread_index()), 'X',
           start_, r.now_us() - start_, std::move(args_)});
  }

 private:
  bool on_;
  std::string name_, category_;
  double start_ = 0;
  std::vector<std::pair<std::string, std::string>> args_;
};

/// Records a kernel launch or copy that started at `start` and took `seconds` on `device`.
inline void device_span(const std::string& device, const std::string& track, const std::string& name,
                        std::chrono::steady_clock::time_point start, double seconds,
                        std::vector<std::pair<std::string, std::string>> args) {
  detail::Recorder& r = detail::recorder();
  r.add({name, track, device, track, 'X', r.us_of(start), seconds * 1e6, std::move(args)});
}

/// Records an allocation (`bytes` > 0) or a free (< 0) on `device`, with its memory in use after it.
inline void memory_event(const std::string& device, int64_t bytes, int64_t in_use) {
  detail::Recorder& r = detail::recorder();
  const double t = r.now_us();
  r.add({bytes > 0 ? "alloc" : "free", "memory", device, "memory", 'i', t, 0,
         {{"bytes", std::to_string(bytes > 0 ? bytes : -bytes)}}});
  r.add({"memory in use", "memory", device, "memory", 'C', t, 0, {{"bytes", std::to_string(in_use)}}});
}

/// Adds a launch to its kernel's totals (DEBUG=2 keeps them).
inline void count_kernel(const std::string& name, double seconds, int64_t ops, int64_t bytes) {
  detail::recorder().count_kernel(name, seconds, ops, bytes);
}

/// The events recorded so far.
inline std::vector<Event> events() { return detail::recorder().events(); }

}  // namespace profile
}  // namespace tinyt::inline v0
