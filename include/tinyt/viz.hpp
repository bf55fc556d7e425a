// VIZ, as a program sees it. VIZ=1 (or Context{{"VIZ", 1}}) records every graph rewrite (the rules
// that fired, each node they matched and gave) and every kernel compiled (its AST, opts and
// source), and writes one self-contained HTML page that shows them: at exit to
// $TMPDIR/tinyt_viz_<pid>.html where VIZ=1 is in the environment (the path is printed), or on
// viz::write(path).
#pragma once

#include <string>

#include "config.hpp"

namespace tinyt::inline v0::viz {

/// Writes the page of what was recorded so far (open it in a browser; it needs nothing else).
void write(const std::string& path);
/// Forgets what was recorded so far.
void clear();

}  // namespace tinyt::inline v0::viz
