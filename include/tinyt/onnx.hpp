// ONNX models run by tinyt (API.md, "ONNX"): opt-in, `#include <tinyt/onnx.hpp>`. onnx::load reads
// an .onnx file (onnx/protobuf.hpp decodes it, onnx/model_proto.hpp and onnx/tensor_proto.hpp read
// its messages), onnx::Model::run runs it as one lazy tinyt graph (onnx/model_impl.hpp, the ops in
// onnx/ops.hpp). A file that includes this parses the declarations (onnx/api.hpp); the
// definitions follow tinyt's modes (include/tinyt/config.hpp): compiled in the tinyt::tinyt
// library (src/onnx.cpp) or in the one file that defines TINYT_IMPLEMENTATION, or inline
// everywhere with TINYT_HEADER_ONLY.
#pragma once

#include "../tinyt.hpp"
#include "onnx/api.hpp"

#if TINYT_DEFINES_ENGINE || defined(TINYT_ONNX_IMPLEMENTATION)
#include "onnx/model_impl.hpp"
#endif
