// ONNX's TensorProto: a tensor's name, dims, element type and values, the values either as the
// bytes of its elements (raw_data, little-endian) or in a typed repeated field: float_data
// (float), int32_data (every type of 32 bits or less, a 16-bit float as its bits), int64_data,
// double_data, uint64_data (uint32, uint64). An initializer of a model, a Constant's value, and
// the conformance cases' input_K.pb / output_K.pb files are TensorProtos.
//
// Field numbers (onnx.proto): 1 dims, 2 data_type, 4 float_data, 5 int32_data, 6 string_data,
// 7 int64_data, 8 name, 9 raw_data, 10 double_data, 11 uint64_data, 13 external_data,
// 14 data_location.
#pragma once

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include "../mapped_file.hpp"
#include "../tensor.hpp"
#include "protobuf.hpp"

namespace tinyt::inline v0 {
namespace onnx {

/// The tinyt dtype of an ONNX TensorProto.DataType; UnsupportedError naming the type and `where`
/// for those tinyt has no dtype for (string, complex, 8-, 4- and 2-bit floats and ints).
inline DType dtype_of(int64_t data_type, const std::string& where) {
  switch (data_type) {
    case 1: return dtypes::float32;
    case 2: return dtypes::uint8;
    case 3: return dtypes::int8;
    case 4: return dtypes::uint16;
    case 5: return dtypes::int16;
    case 6: return dtypes::int32;
    case 7: return dtypes::int64;
    case 9: return dtypes::bool_;
    case 10: return dtypes::float16;
    case 11: return dtypes::float64;
    case 12: return dtypes::uint32;
    case 13: return dtypes::uint64;
    case 16: return dtypes::bfloat16;
    default: break;
  }
  static constexpr const char* names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
                                          "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
                                          "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1"};
  const std::string name = data_type >= 0 && data_type < static_cast<int64_t>(std::size(names)) ? names[data_type] : "unknown";
  throw UnsupportedError(tinyt::detail::cat("onnx: ", where, ": element type ", data_type, " (", name, ") has no tinyt dtype"));
}

/// A TensorProto read: its name and its values, a tensor of the default device.
struct NamedTensor {
  std::string name;
  Tensor value;
};

namespace detail {
// `values` (of a typed field) as the bytes of `n` elements of `dt`: each converted to the element's
// type, a 16-bit float's bits taken from the low half of its int32
template <class From> std::string element_bytes(const std::vector<From>& values, DType dt) {
  std::string out(values.size() * static_cast<size_t>(dt.itemsize()), '\0');
  char* p = out.data();
  const auto put = [&](auto v) {
    std::memcpy(p, &v, sizeof(v));
    p += sizeof(v);
  };
  for (const From v : values) {
    switch (dt.scalar_type()) {
      case ScalarType::float32: put(static_cast<float>(v)); break;
      case ScalarType::float64: put(static_cast<double>(v)); break;
      case ScalarType::bool_: put(static_cast<uint8_t>(v != 0)); break;
      case ScalarType::int8: put(static_cast<int8_t>(v)); break;
      case ScalarType::uint8: put(static_cast<uint8_t>(v)); break;
      case ScalarType::int16: put(static_cast<int16_t>(v)); break;
      case ScalarType::uint16: case ScalarType::float16: case ScalarType::bfloat16: put(static_cast<uint16_t>(v)); break;
      case ScalarType::int32: put(static_cast<int32_t>(v)); break;
      case ScalarType::uint32: put(static_cast<uint32_t>(v)); break;
      case ScalarType::int64: put(static_cast<int64_t>(v)); break;
      case ScalarType::uint64: put(static_cast<uint64_t>(v)); break;
      default: throw InternalError("onnx: element_bytes of an unexpected dtype");
    }
  }
  return out;
}
}  // namespace detail

/// Where a model's tensors come from: its file, mapped (tensors use their bytes there in place
/// where they can), and its folder with the files that hold its tensors' external data, each
/// mapped once. Empty for a model given as bytes: its tensors are copied, and it has no folder.
struct Source {
  std::shared_ptr<const MappedFile> file;
  std::string directory;
  std::map<std::string, std::shared_ptr<const MappedFile>> external;  // by path
};

namespace detail {
/// A tensor's external data (TensorProto.external_data: location, offset, length): its bytes in
/// the file `location` names in the model's folder (it may not point out of it), and that file.
inline std::pair<std::string_view, std::shared_ptr<const MappedFile>> external_bytes(
    const proto::Reader& r, const std::map<std::string, std::string>& entries, Source* source, const std::string& what) {
  using tinyt::detail::cat;
  if (!source || source->directory.empty())
    throw UnsupportedError(cat("onnx: ", what, ": its values are in an external file, and the model was given as bytes: load it from its file"));
  const auto get = [&](const char* key) { const auto it = entries.find(key); return it == entries.end() ? std::string() : it->second; };
  const std::string location = get("location");
  const std::filesystem::path relative(location);
  if (location.empty() || relative.is_absolute() || std::any_of(relative.begin(), relative.end(), [](const auto& part) { return part == ".."; }))
    throw r.error(r.base(), cat(what, ": external data location '", location, "' is not a file in the model's folder"));
  const auto number = [&](const char* key) -> std::optional<uint64_t> {
    const std::string v = get(key);
    if (v.empty()) return std::nullopt;
    if (v.find_first_not_of("0123456789") != std::string::npos || v.size() > 18)
      throw r.error(r.base(), cat(what, ": external data ", key, " '", v, "' is not a byte count"));
    return std::stoull(v);
  };
  const std::string file = (std::filesystem::path(source->directory) / relative).string();
  std::shared_ptr<const MappedFile>& mapped = source->external[file];
  if (!mapped) {
    try {
      mapped = MappedFile::open(file, "onnx");
    } catch (const Error& e) {
      source->external.erase(file);
      throw Error(cat("onnx: ", what, ": its external data file: ", e.what()));
    }
  }
  const std::string_view all = mapped->bytes();
  const uint64_t offset = number("offset").value_or(0), length = number("length").value_or(all.size() > offset ? all.size() - offset : 0);
  if (offset > all.size() || length > all.size() - offset)
    throw r.error(r.base(), cat(what, ": external data of ", length, " bytes at offset ", offset, " runs past ", file, " (", all.size(), " bytes)"));
  return {all.substr(offset, length), mapped};
}
}  // namespace detail

/// The TensorProto `r` reads (its fields from the start), as a tensor on the default device;
/// `source`: the model's file and folder (null for a tensor given as bytes: copied, and with no
/// external data). Raw bytes in a mapped file are used in place where the device can
/// (tensor_over_file): a model's weights are then not copied.
inline NamedTensor read_tensor(proto::Reader r, Source* source = nullptr) {
  using tinyt::detail::cat;
  std::string name;
  std::vector<int64_t> dims, ints;
  std::vector<float> floats;
  std::vector<double> doubles;
  int64_t data_type = 0, location = 0;
  std::map<std::string, std::string> external;  // external_data: location, offset, length, checksum
  std::string_view raw;
  std::string field;  // the one field holding the values: "raw_data", "float_data", ...
  const auto holds = [&](const char* name, const proto::Field& at) {
    if (!field.empty() && field != name)
      throw r.error(at.offset, cat("its values are in more than one field (", field, " and ", name, ")"));
    field = name;
  };
  proto::Field f;
  while (r.next(f)) {
    switch (f.number) {
      case 1: r.integers(f, dims); break;
      case 2: data_type = r.integer(f); break;
      case 4: holds("float_data", f), r.floats(f, floats); break;
      case 5: holds("int32_data", f), r.integers(f, ints); break;
      case 6: throw UnsupportedError(r.error(f.offset, "string_data: string tensors have no tinyt dtype").what());
      case 7: holds("int64_data", f), r.integers(f, ints); break;
      case 8: name = r.string(f); break;
      case 9: holds("raw_data", f), raw = r.string(f); break;
      case 10: holds("double_data", f), r.floats(f, doubles); break;
      case 11: holds("uint64_data", f), r.integers(f, ints); break;
      case 13: {
        proto::Reader entry = r.message(f, "StringStringEntryProto");
        std::string key, value;
        proto::Field x;
        while (entry.next(x)) {
          if (x.number == 1) key = entry.string(x);
          if (x.number == 2) value = entry.string(x);
        }
        external.insert_or_assign(key, value);
        break;
      }
      case 14: location = r.integer(f); break;
      default: break;  // segment, doc_string, metadata_props
    }
  }
  const std::string what = name.empty() ? r.what() : cat(r.what(), " '", name, "'");
  if (location != 0 && location != 1) throw r.error(r.base(), cat(what, ": data_location ", location, " (0 default, 1 external)"));
  std::shared_ptr<const MappedFile> raw_file = source ? source->file : nullptr;  // the file `raw` may lie in
  if (location == 1) {
    if (!field.empty()) throw r.error(r.base(), cat(what, ": its values are both in ", field, " and in an external file"));
    std::tie(raw, raw_file) = detail::external_bytes(r, external, source, what);
    field = "raw_data";
  }
  const DType dt = dtype_of(data_type, what);
  int64_t count = 1;
  for (const int64_t d : dims) {
    if (d < 0 || (d > 0 && count > (int64_t{1} << 40) / d)) throw r.error(r.base(), cat(what, ": a dimension of ", d));
    count *= d;
  }
  const size_t itemsize = static_cast<size_t>(dt.itemsize());
  if (field == "raw_data") {
    if (raw.size() != static_cast<size_t>(count) * itemsize)
      throw r.error(r.base(), cat(what, ": raw_data holds ", raw.size(), " bytes; ", count, " elements of ", dt.name(), " are ",
                               static_cast<size_t>(count) * itemsize));
    return {name, tinyt::detail::tensor_over_file(raw_file, raw, dims, dt)};  // (little-endian, as this host)
  }
  const size_t n = floats.size() + doubles.size() + ints.size();
  if (n != static_cast<size_t>(count))
    throw r.error(r.base(), cat(what, ": ", n, " values for ", count, " elements"));
  // each typed field is for certain element types only
  const bool fits = field.empty() || (field == "float_data" && dt == dtypes::float32) || (field == "double_data" && dt == dtypes::float64) ||
                    (field == "int64_data" && dt == dtypes::int64) || (field == "uint64_data" && (dt == dtypes::uint32 || dt == dtypes::uint64)) ||
                    (field == "int32_data" && dt.itemsize() <= 4 && dt != dtypes::float32 && dt != dtypes::uint32);
  if (!fits) throw r.error(r.base(), cat(what, ": ", field, " does not hold ", dt.name(), " values"));
  const std::string bytes = !floats.empty() ? detail::element_bytes(floats, dt) : !doubles.empty() ? detail::element_bytes(doubles, dt) : detail::element_bytes(ints, dt);
  return {name, Tensor::from_blob(bytes.data(), Shape(dims), dt)};
}

}  // namespace onnx
}  // namespace tinyt::inline v0
