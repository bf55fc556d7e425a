// The definitions of viz.hpp, on the records of viz/record.hpp.
#pragma once

#include "viz.hpp"
#include "viz/html.hpp"

namespace tinyt::inline v0::viz {

TINYT_INLINE void write(const std::string& path) { detail::write_page(path, detail::recorder().groups()); }
TINYT_INLINE void clear() { detail::recorder().clear(); }

}  // namespace tinyt::inline v0::viz
