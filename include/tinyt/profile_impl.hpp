// The definitions of profile.hpp and of what the recorder (profile_record.hpp) writes at exit,
// formatted by engine/profiler.hpp.
#pragma once

#include <cstdio>

#include <unistd.h>

#include "engine/profiler.hpp"
#include "profile.hpp"
#include "profile_record.hpp"

namespace tinyt::inline v0::profile {

TINYT_INLINE void write(const std::string& path) { detail::write_text(path, trace_json(events())); }
TINYT_INLINE std::string summary() { return summary_of(detail::recorder().totals()); }
TINYT_INLINE void clear() { detail::recorder().clear(); }

TINYT_INLINE void detail::Recorder::finish() {
  std::lock_guard lock(mu_);
  if (summary_at_exit_ && !totals_.empty()) std::fprintf(stderr, "%s", summary_of(totals_).c_str());
  if (!trace_at_exit_ || events_.empty()) return;
  tinyt::detail::write_exit_file(tinyt::detail::cat("tinyt_profile_", ::getpid(), ".json"), "profile",
                                 "(open it in ui.perfetto.dev or chrome://tracing)", [&] { return trace_json(events_); });
}

}  // namespace tinyt::inline v0::profile
