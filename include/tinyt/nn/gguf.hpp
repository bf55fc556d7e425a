// GGUF files (llama.cpp's format; tinygrad's nn.state.gguf_load): a header, metadata as typed
// key/value pairs, tensor infos, then the tensors' data, aligned. Quantized tensors stay packed:
// the file's bytes are one uint8 tensor in memory and each tensor is a lazy graph that unpacks its
// blocks inside the kernels that read it, so a Q4 model stays Q4 in memory.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "../tensor.hpp"

namespace tinyt::inline v0::nn::state {

/// A GGUF metadata value: an unsigned or signed integer, a float, a bool, a string or an array of
/// values (GGUF's twelve value types, integers and floats widened).
struct GGUFValue {
  std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<GGUFValue>> value;
  std::string key;  // the metadata key it is read from ("key[i]" for an array's item), for errors

  /// The integer (from any integer type); DTypeError naming the key and both kinds for another
  /// kind, Error for an unsigned value past int64.
  int64_t as_int() const;
  /// The number (from any integer or float type); DTypeError for another kind.
  double as_float() const;
  bool as_bool() const;
  const std::string& as_string() const;
  const std::vector<GGUFValue>& as_array() const;
};

/// What a GGUF file holds: its metadata by key, its tensors by name.
struct GGUFFile {
  std::map<std::string, GGUFValue> metadata;
  std::map<std::string, Tensor> tensors;
};

/// The metadata and tensors of the GGUF (version 2 or 3) file at `path`, on `device` (the default
/// device when empty). Shapes are PyTorch's order (GGUF lists the innermost dim first). F32, F16,
/// BF16, F64 and the integer types keep their dtype; Q8_0, Q4_0, Q4_1, Q4_K and Q6_K are float32,
/// dequantized on the device as the tensors are used. A malformed file is an Error naming the file
/// and the problem (DTypeError for a tensor type tinyt cannot read).
GGUFFile gguf_load(const std::string& path, const std::string& device = "");

}  // namespace tinyt::inline v0::nn::state
