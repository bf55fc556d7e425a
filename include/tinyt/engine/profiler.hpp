// The profiler's recorder (profile.hpp has its public face): with PROFILE=1 (or
// Context{{"PROFILE", 1}}) tinyt records a timeline of what it does, host and devices, and writes
// it as a Chrome trace (JSON; open it in ui.perfetto.dev or chrome://tracing) at exit or on
// profile::write(path):
//   host process, a track per thread: schedule, codegen (with the kernel's name), compile, beam;
//   a process per device: its kernels (device time where the device reports it, so each launch is
//   waited for while profiling), copies, and memory in use (a counter, with an event per
//   allocation and free naming its size).
// With DEBUG=2 tinyt also keeps each kernel's launches, time, flops and bytes, and prints a table
// of them at exit, the kernels that took longest first (profile::summary() gives it as text).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include "../helpers.hpp"
#include "../nn/json.hpp"
#include "../support.hpp"

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
  void finish();

 private:
  std::chrono::steady_clock::time_point origin_;
  std::mutex mu_;
  std::vector<Event> events_;
  std::map<std::string, KernelTotals> totals_;
  bool trace_at_exit_ = false, summary_at_exit_ = false;
};

inline void write_text(const std::string& path, const std::string& text) {
  if (!tinyt::detail::write_file_atomically(path, text))
    throw Error(tinyt::detail::cat("profile::write: cannot write '", path, "'"));
}

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

/// A number as JSON (which has no infinities or NaN: those become null).
inline std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";
  std::ostringstream out;
  out << std::setprecision(6) << x;
  return out.str();
}

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

/// The events as a Chrome trace (JSON object format): a process per device plus "host", named.
inline std::string trace_json(const std::vector<Event>& events) {
  using nn::json::quote;
  std::map<std::string, int> pids;
  std::map<std::pair<std::string, std::string>, int> tids;
  pids["host"] = 1;  // the host's threads first, then the devices
  for (const Event& e : events) {
    pids.try_emplace(e.process, static_cast<int>(pids.size()) + 1);
    tids.try_emplace({e.process, e.track}, static_cast<int>(tids.size()) + 1);
  }
  std::ostringstream out;
  out << std::setprecision(15);
  out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [";
  bool first = true;
  const auto next = [&] {
    out << (first ? "\n" : ",\n");
    first = false;
  };
  for (const auto& [process, pid] : pids) {
    next();
    out << "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " << pid << ", \"args\": {\"name\": " << quote(process) << "}}";
  }
  for (const auto& [key, tid] : tids) {
    next();
    out << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " << pids.at(key.first) << ", \"tid\": " << tid
        << ", \"args\": {\"name\": " << quote(key.second) << "}}";
  }
  for (const Event& e : events) {
    next();
    out << "{\"ph\": \"" << e.phase << "\", \"name\": " << quote(e.name) << ", \"cat\": " << quote(e.category)
        << ", \"pid\": " << pids.at(e.process) << ", \"tid\": " << tids.at({e.process, e.track}) << ", \"ts\": " << e.start_us;
    if (e.phase == 'X') out << ", \"dur\": " << e.duration_us;
    if (e.phase == 'i') out << ", \"s\": \"t\"";
    out << ", \"args\": {";
    for (size_t i = 0; i < e.args.size(); ++i) out << (i ? ", " : "") << quote(e.args[i].first) << ": " << e.args[i].second;
    out << "}}";
  }
  out << "\n]}\n";
  return out.str();
}


/// The kernels' totals as a table: the kernels that took longest first, each with its launches,
/// time, share of the total, GFLOPS and GB/s; a last line adds them up.
inline std::string summary_of(const std::map<std::string, KernelTotals>& totals) {
  std::vector<std::pair<std::string, KernelTotals>> rows(totals.begin(), totals.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  KernelTotals all;
  for (const auto& [name, t] : rows) all.launches += t.launches, all.seconds += t.seconds, all.ops += t.ops, all.bytes += t.bytes;
  std::ostringstream out;
  const auto line = [&out, &all](const std::string& name, const KernelTotals& t) {
    const double s = std::max(t.seconds, 1e-12);
    out << std::left << std::setw(36) << name << std::right << std::setw(9) << t.launches << std::fixed
        << std::setprecision(3) << std::setw(12) << t.seconds * 1e3 << std::setprecision(1) << std::setw(7)
        << 100 * t.seconds / std::max(all.seconds, 1e-12) << "%" << std::setprecision(2) << std::setw(11)
        << static_cast<double>(t.ops) / s * 1e-9 << std::setw(10) << static_cast<double>(t.bytes) / s * 1e-9 << "\n";
  };
  out << std::left << std::setw(36) << "kernel" << std::right << std::setw(9) << "launches" << std::setw(12) << "ms"
      << std::setw(8) << "share" << std::setw(11) << "GFLOPS" << std::setw(10) << "GB/s" << "\n";
  for (const auto& [name, t] : rows) line(name, t);
  line(tinyt::detail::cat("total (", rows.size(), " kernels)"), all);
  return out.str();
}

inline void detail::Recorder::finish() {
  std::lock_guard lock(mu_);
  if (summary_at_exit_ && !totals_.empty()) std::fprintf(stderr, "%s", summary_of(totals_).c_str());
  if (!trace_at_exit_ || events_.empty()) return;
  tinyt::detail::write_exit_file(tinyt::detail::cat("tinyt_profile_", ::getpid(), ".json"), "profile",
                                 "(open it in ui.perfetto.dev or chrome://tracing)", [&] { return trace_json(events_); });
}

}  // namespace profile
}  // namespace tinyt::inline v0
