// safetensors files (Hugging Face's format, tinygrad's nn.state.safe_save / safe_load): an
// 8-byte little-endian header length N, N bytes of JSON header
//   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}}
// then the data, each tensor row-major and little-endian at [b, e) after the header.
// Loading checks everything the reference implementation checks before reading any data: the
// header fits in the file, is strict JSON, and the tensors tile the data exactly (sorted by
// offset, each starting where the previous one ends, sized by dtype and shape, the last ending at
// the end of the file), so a file can neither send a read out of bounds nor hide extra bytes.
#pragma once

#include <map>
#include <string>

#include "../tensor.hpp"

namespace tinyt::inline v0::nn::state {

/// Writes `tensors` (realized first) and the string pairs in `metadata` to `path` as a
/// safetensors file, byte-identical to what Hugging Face's writer makes of the same input (with
/// several metadata pairs, up to their order, which that writer leaves to a hash map).
void safe_save(const std::map<std::string, Tensor>& tensors, const std::string& path,
               const std::map<std::string, std::string>& metadata = {});

/// The tensors of the safetensors file at `path`, with its dtypes and shapes, on the default
/// device. Error naming the file and the problem for anything malformed (DTypeError for a dtype
/// tinyt does not have).
std::map<std::string, Tensor> safe_load(const std::string& path);

/// The `__metadata__` string pairs of the safetensors file at `path` (empty when it has none);
/// the whole header is checked as safe_load checks it, but no tensor data is read.
std::map<std::string, std::string> safe_load_metadata(const std::string& path);

}  // namespace tinyt::inline v0::nn::state
