// The typed error hierarchy: every misuse of tinyt throws one of these.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

#include "config.hpp"

namespace tinyt::inline v0 {

/// Base of every error tinyt throws; the message names the operation and the values involved.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// Shapes that do not fit the operation (broadcasting, reshape, matmul, ...).
struct ShapeError : Error {
  using Error::Error;
};
/// A dtype the operation does not accept, or a C++ type with no dtype.
struct DTypeError : Error {
  using Error::Error;
};
/// An index or axis out of range.
struct IndexError : Error {
  using Error::Error;
};
/// A device that is missing, or a runtime library that cannot be opened.
struct DeviceError : Error {
  using Error::Error;
};
/// A kernel that failed to compile; the message carries the source and the compiler log.
struct CompileError : Error {
  using Error::Error;
};
/// An allocation the device could not satisfy.
struct OutOfMemoryError : Error {
  using Error::Error;
};
/// A malformed rewrite rule or pattern, or rules that rewrite forever.
struct RewriteError : Error {
  using Error::Error;
};
/// A broken invariant inside tinyt: a bug in tinyt, not in the caller's code.
struct InternalError : Error {
  using Error::Error;
};

namespace detail {
/// Concatenates anything printable into one message string.
template <class... Ts> std::string cat(const Ts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

}  // namespace tinyt::inline v0

/// Checks an internal invariant; a failure is a bug in tinyt and throws InternalError.
#define TINYT_ASSERT(cond, ...)                                              \
  do {                                                                       \
    if (!(cond))                                                             \
      throw ::tinyt::InternalError(                                          \
          ::tinyt::detail::cat("internal error: ", __FILE__, ":", __LINE__,  \
                               ": " #cond __VA_OPT__(, " ", ) __VA_ARGS__)); \
  } while (0)
