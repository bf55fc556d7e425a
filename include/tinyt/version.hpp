// tinyt's version. These three numbers are the one source of truth: CMakeLists.txt (the project's
// VERSION, so find_package's version check) and conanfile.py (the recipe's version) read them
// from this file.
#pragma once

#include <string_view>

#define TINYT_VERSION_MAJOR 0
#define TINYT_VERSION_MINOR 1
#define TINYT_VERSION_PATCH 0

#define TINYT_VERSION_TEXT_(x) #x
#define TINYT_VERSION_TEXT(x) TINYT_VERSION_TEXT_(x)

namespace tinyt::inline v0 {

/// tinyt's version as "MAJOR.MINOR.PATCH", the TINYT_VERSION_* macros of the headers compiled in.
constexpr std::string_view version() noexcept {
  return TINYT_VERSION_TEXT(TINYT_VERSION_MAJOR) "." TINYT_VERSION_TEXT(TINYT_VERSION_MINOR) "." TINYT_VERSION_TEXT(
      TINYT_VERSION_PATCH);
}

}  // namespace tinyt::inline v0
