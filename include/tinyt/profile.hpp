// The profiler, as a program sees it. PROFILE=1 (or Context{{"PROFILE", 1}}) records a timeline:
// schedule, codegen and compile on the host's threads, each kernel launch (device time where the
// device reports it), copy and allocation on its device's tracks. With PROFILE=1 in the
// environment the trace is written at exit to $TMPDIR/tinyt_profile_<pid>.json (the path is
// printed); DEBUG=2 prints a table of the kernels' totals at exit.
#pragma once

#include <string>

#include "config.hpp"

namespace tinyt::inline v0::profile {

/// Writes what was recorded so far as a Chrome trace (open it in ui.perfetto.dev or chrome://tracing).
void write(const std::string& path);
/// The kernels launched while DEBUG was 2 or more, the longest first: launches, time, share, GFLOPS, GB/s.
std::string summary();
/// Forgets what was recorded so far.
void clear();

}  // namespace tinyt::inline v0::profile
