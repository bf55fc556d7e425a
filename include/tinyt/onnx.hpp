// ONNX models run by tinyt (API.md, "ONNX"): opt-in, `#include <tinyt/onnx.hpp>` after tinyt.hpp's
// engine is part of the program. onnx::load reads an .onnx file (onnx/protobuf.hpp decodes it,
// onnx/model_proto.hpp and onnx/tensor_proto.hpp read its messages), onnx::Model::run runs it
// as one lazy tinyt graph (onnx/model.hpp, the ops in onnx/ops.hpp).
#pragma once

#include "../tinyt.hpp"
#include "onnx/model.hpp"
