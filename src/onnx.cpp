// The tinyt::tinyt library's ONNX runner (include/tinyt/onnx.hpp), compiled once, in an object
// file of its own: a program that never loads a model links none of it.
#define TINYT_ONNX_IMPLEMENTATION
#include <tinyt/onnx.hpp>
