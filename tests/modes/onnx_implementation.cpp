// The one file of a program that compiles tinyt, and with it the ONNX runner it includes.
#define TINYT_IMPLEMENTATION
#include <tinyt/onnx.hpp>
