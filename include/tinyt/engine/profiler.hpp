// The profiler's output (profile.hpp has its public face): what profile_record.hpp recorded, as a
// Chrome trace (JSON; open it in ui.perfetto.dev or chrome://tracing), written at exit or on
// profile::write(path):
//   host process, a track per thread: schedule, codegen (with the kernel's name), compile, beam;
//   a process per device: its kernels (device time where the device reports it, so each launch is
//   waited for while profiling), copies, and memory in use (a counter, with an event per
//   allocation and free naming its size);
// and the kernels' totals kept with DEBUG=2 as a table, the kernels that took longest first,
// printed at exit (profile::summary() gives it as text).
#pragma once

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../helpers.hpp"
#include "../json.hpp"
#include "../profile_record.hpp"

namespace tinyt::inline v0 {
namespace profile {

namespace detail {
inline void write_text(const std::string& path, const std::string& text) {
  if (!tinyt::detail::write_file_atomically(path, text))
    throw Error(tinyt::detail::cat("profile::write: cannot write '", path, "'"));
}
}  // namespace detail

/// A number as JSON (which has no infinities or NaN: those become null).
inline std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";
  std::ostringstream out;
  out << std::setprecision(6) << x;
  return out.str();
}
/// The events as a Chrome trace (JSON object format): a process per device plus "host", named.
inline std::string trace_json(const std::vector<Event>& events) {
  using json::quote;
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

}  // namespace profile
}  // namespace tinyt::inline v0
