// What reading an ONNX model can go wrong with, as errors a program can catch by kind.
#pragma once

#include "../error.hpp"

namespace tinyt::inline v0 {
namespace onnx {

/// A malformed or truncated ONNX file: the message names the field and its offset in the file.
struct FormatError : Error {
  using Error::Error;
};

/// What the ONNX runner lacks (an op, an attribute, a dtype, a way of storing data): the message
/// names it and where the model uses it.
struct UnsupportedError : Error {
  using Error::Error;
};

}  // namespace onnx
}  // namespace tinyt::inline v0
