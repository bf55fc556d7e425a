// The definitions of profile.hpp, on the recorder of engine/profiler.hpp.
#pragma once

#include "engine/profiler.hpp"
#include "profile.hpp"

namespace tinyt::inline v0::profile {

TINYT_INLINE void write(const std::string& path) { detail::write_text(path, trace_json(events())); }
TINYT_INLINE std::string summary() { return summary_of(detail::recorder().totals()); }
TINYT_INLINE void clear() { detail::recorder().clear(); }

}  // namespace tinyt::inline v0::profile
