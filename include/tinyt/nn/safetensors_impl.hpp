// Definitions of safetensors.hpp, compiled with the engine (config.hpp).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>

#include "../tensor.hpp"
#include "file_io.hpp"
#include "../json.hpp"
#include "safetensors.hpp"

namespace tinyt::inline v0 {
namespace nn::state {

namespace detail {
using json::quote;
using ::tinyt::detail::cat;

/// The reference writer's header-size limit (100 MB): a bigger "header" is a broken or hostile
/// file, and refusing it early keeps a bad length from turning into a huge allocation.
inline constexpr uint64_t max_header_bytes = 100'000'000;

struct SafeDType {
  const char* name;
  DType dtype;
};
// In the reference's order of alignment (its Dtype enum); safe_save writes the most aligned
// first, as it does, so that every tensor's data is aligned to its element size in the file.
inline constexpr SafeDType safe_dtypes[] = {
    {"BOOL", dtypes::bool_},    {"U8", dtypes::uint8},    {"I8", dtypes::int8},
    {"I16", dtypes::int16},     {"U16", dtypes::uint16},  {"F16", dtypes::float16},
    {"BF16", dtypes::bfloat16}, {"I32", dtypes::int32},   {"U32", dtypes::uint32},
    {"F32", dtypes::float32},   {"F64", dtypes::float64}, {"I64", dtypes::int64},
    {"U64", dtypes::uint64}};

/// Position of `dt` in safe_dtypes; DTypeError for a dtype safetensors cannot store.
inline size_t safe_dtype_index(DType dt, const std::string& context) {
  for (size_t i = 0; i < std::size(safe_dtypes); ++i)
    if (safe_dtypes[i].dtype == dt) return i;
  throw DTypeError(cat(context, ": safetensors has no dtype for ", dt.name()));
}

inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += cat(i ? "," : "", shape[i]);
  return out + "]";
}

/// The tensor's elements as bytes, row-major, in the host's byte order (realizes it).
inline std::vector<unsigned char> host_bytes(const Tensor& t) {
  namespace hana = boost::hana;
  std::vector<unsigned char> out;
  bool found = false;
  hana::for_each(::tinyt::detail::cpp_to_dtype, [&](auto pair) {
    using T = typename decltype(+hana::first(pair))::type;
    if (found || dtype_of<T>() != t.dtype()) return;
    found = true;
    const std::vector<T> v = t.to_vector<T>();
    if constexpr (std::is_same_v<T, bool>) {
      out.assign(v.begin(), v.end());
    } else {
      out.resize(v.size() * sizeof(T));
      if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
    }
  });
  if (!found) throw DTypeError(cat("safe_save: no host type for dtype ", t.dtype().name()));
  return out;
}

/// One tensor as the header describes it.
struct SafeEntry {
  std::string name;
  size_t dtype_index = 0;  // into safe_dtypes
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // data_offsets, relative to the end of the header
};

/// A header read and checked against the file.
struct SafeHeader {
  std::vector<SafeEntry> entries;  // sorted by offset
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // 8 + header length
};

inline uint64_t entry_uint(const json::Value& v, const std::string& context, const char* what) {
  const auto u = v.as_uint();
  if (!u)
    throw Error(cat(context, ": ", what, " must be non-negative integers, found ",
                    v.kind == json::Value::Kind::number ? v.text : json::kind_name(v.kind)));
  return *u;
}

/// One tensor's entry: an object with exactly dtype, shape and data_offsets.
inline SafeEntry parse_entry(const std::string& name, const json::Value& v,
                             const std::string& file) {
  const std::string context = cat(file, ": tensor ", quote(name));
  if (v.kind != json::Value::Kind::object)
    throw Error(cat(context, ": expected an object, found ", json::kind_name(v.kind)));
  SafeEntry e;
  e.name = name;
  bool has_dtype = false, has_shape = false, has_offsets = false;
  for (const auto& [key, field] : v.members) {
    if (key == "dtype") {
      if (field.kind != json::Value::Kind::string)
        throw Error(cat(context, ": dtype must be a string, found ", json::kind_name(field.kind)));
      // a reference of its own: clang 14 cannot capture a structured binding (C++20's P1091)
      const std::string& text = field.text;
      const auto* it = std::find_if(std::begin(safe_dtypes), std::end(safe_dtypes),
                                    [&](const SafeDType& d) { return text == d.name; });
      if (it == std::end(safe_dtypes)) {
        std::string known;
        for (const SafeDType& d : safe_dtypes) known += cat(" ", d.name);
        throw DTypeError(
            cat(context, ": unknown dtype ", quote(field.text), " (tinyt reads", known, ")"));
      }
      e.dtype_index = static_cast<size_t>(it - std::begin(safe_dtypes));
      has_dtype = true;
    } else if (key == "shape") {
      if (field.kind != json::Value::Kind::array)
        throw Error(cat(context, ": shape must be an array, found ", json::kind_name(field.kind)));
      for (const json::Value& d : field.items) {
        const uint64_t dim = entry_uint(d, context, "shape dims");
        if (dim > static_cast<uint64_t>(INT64_MAX))
          throw Error(cat(context, ": shape dim ", dim, " is too large"));
        e.shape.push_back(static_cast<int64_t>(dim));
      }
      has_shape = true;
    } else if (key == "data_offsets") {
      if (field.kind != json::Value::Kind::array || field.items.size() != 2)
        throw Error(cat(context, ": data_offsets must be an array of two integers [begin, end]"));
      e.begin = entry_uint(field.items[0], context, "data_offsets");
      e.end = entry_uint(field.items[1], context, "data_offsets");
      has_offsets = true;
    } else {
      throw Error(cat(context, ": unknown field ", quote(key),
                      " (an entry has only dtype, shape and data_offsets)"));
    }
  }
  if (!has_dtype || !has_shape || !has_offsets)
    throw Error(cat(context, ": missing ",
                    !has_dtype   ? "dtype"
                    : !has_shape ? "shape"
                                 : "data_offsets"));
  return e;
}

/// The bytes `e` needs by dtype and shape; nothing when that overflows 64 bits.
inline std::optional<uint64_t> entry_nbytes(const SafeEntry& e) {
  uint64_t n = static_cast<uint64_t>(safe_dtypes[e.dtype_index].dtype.itemsize());
  for (int64_t d : e.shape) {  // in order, as the reference does: [2^40, 2^40, 0] overflows
    if (d != 0 && n > UINT64_MAX / static_cast<uint64_t>(d)) return std::nullopt;
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

/// Reads and checks the header of the safetensors file `f` (everything but tensor values).
inline SafeHeader read_header(io::InFile& f, const char* op) {
  const std::string file = io::where(op, f.path());
  if (f.size() < 8)
    throw Error(
        cat(file, ": the file is ", f.size(),
            " bytes, shorter than the 8-byte header length that starts a safetensors file"));
  unsigned char len_bytes[8];
  f.read_at(0, len_bytes, 8, "the header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];  // little-endian on any host
  if (n > max_header_bytes)
    throw Error(cat(file, ": header length ", n, " is larger than the ", max_header_bytes,
                    "-byte limit (not a safetensors file, or a corrupt one)"));
  if (n > f.size() - 8)
    throw Error(
        cat(file, ": header length ", n, " runs past the end of the file (", f.size(), " bytes)"));
  std::string text(n, '\0');
  f.read_at(8, text.data(), n, "the header");
  if (text.empty() || text[0] != '{')
    throw Error(cat(file, ": the header does not start with '{'"));

  const json::Value root = json::parse(text, cat(file, ": header"));
  SafeHeader h;
  h.data_start = 8 + n;
  for (const auto& [key, v] : root.members) {
    if (key != "__metadata__") {
      h.entries.push_back(parse_entry(key, v, file));
      continue;
    }
    if (v.kind != json::Value::Kind::object)
      throw Error(cat(file, ": __metadata__ must be an object, found ", json::kind_name(v.kind)));
    for (const auto& [mk, mv] : v.members) {
      if (mv.kind != json::Value::Kind::string)
        throw Error(cat(file, ": __metadata__ maps strings to strings, but ", quote(mk), " is ",
                        json::kind_name(mv.kind)));
      h.metadata[mk] = mv.text;
    }
  }

  // The tensors must tile the data: sorted by offset, no overlap, no gap, nothing after.
  std::stable_sort(h.entries.begin(), h.entries.end(), [](const SafeEntry& a, const SafeEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const uint64_t data_size = f.size() - h.data_start;
  uint64_t covered = 0;
  const SafeEntry* previous = nullptr;
  for (const SafeEntry& e : h.entries) {
    const std::string context =
        cat(file, ": tensor ", quote(e.name), ": data_offsets [", e.begin, ", ", e.end, "]");
    if (e.end < e.begin) throw Error(cat(context, " end before they begin"));
    if (e.end > data_size)
      throw Error(
          cat(context, " run past the end of the data (", data_size, " bytes after the header)"));
    if (e.begin < covered)
      throw Error(cat(context, " overlap tensor ", quote(previous->name), ", which ends at byte ",
                      covered));
    if (e.begin > covered)
      throw Error(cat(context, " leave bytes [", covered, ", ", e.begin,
                      ") of the data that no tensor covers"));
    const auto nbytes = entry_nbytes(e);
    const char* dtype_name = safe_dtypes[e.dtype_index].name;
    if (!nbytes)
      throw Error(cat(context, ": dtype ", dtype_name, " and shape ", shape_text(e.shape),
                      " need more than 2^64 bytes"));
    if (*nbytes != e.end - e.begin)
      throw Error(cat(context, " hold ", e.end - e.begin, " bytes, but dtype ", dtype_name,
                      " and shape ", shape_text(e.shape), " need ", *nbytes));
    covered = e.end, previous = &e;
  }
  if (covered != data_size)
    throw Error(cat(file, ": bytes [", covered, ", ", data_size,
                    ") of the data after the header belong to no tensor"));
  return h;
}
}  // namespace detail

/// Writes `tensors` (realized first) and the string pairs in `metadata` to `path` as a
/// safetensors file, byte-identical to what Hugging Face's writer makes of the same input (with
/// several metadata pairs, up to their order, which that writer leaves to a hash map).
TINYT_INLINE void safe_save(const std::map<std::string, Tensor>& tensors, const std::string& path,
                            const std::map<std::string, std::string>& metadata) {
  using detail::cat;
  using json::quote;
  const std::string file = io::where("safe_save", path);
  // Check everything before the file is opened, so that a bad call leaves no half-written file.
  struct Item {
    const std::string* name;
    Tensor tensor;
    size_t dtype_index;
    std::vector<int64_t> shape;
  };
  std::vector<Item> items;
  for (const auto& [name, t] : tensors) {
    const std::string context = cat(file, ": tensor ", quote(name));
    if (name == "__metadata__")
      throw Error(cat(context, ": the name is reserved for the metadata"));
    if (!json::is_utf8(name)) throw Error(cat(context, ": the name is not valid UTF-8"));
    if (!t.defined()) throw Error(cat(context, " is the empty Tensor() handle"));
    if (!t.shape().is_concrete())
      throw ShapeError(
          cat(context, ": shape ", t.shape(), " is symbolic; bind its variables first"));
    items.push_back(
        {&name, t, detail::safe_dtype_index(t.dtype(), context), t.shape().to_vector()});
  }
  for (const auto& [k, v] : metadata)
    if (!json::is_utf8(k) || !json::is_utf8(v))
      throw Error(cat(file, ": metadata ", quote(k), " is not valid UTF-8"));
  // Most aligned dtype first, then by name (the map's order), as the reference writer does.
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.dtype_index > b.dtype_index; });

  std::vector<Tensor> pending;
  for (const Item& item : items) pending.push_back(item.tensor);
  realize_tensors(pending);  // one schedule for all of them

  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (auto it = metadata.begin(); it != metadata.end(); ++it)
      header += cat(it == metadata.begin() ? "" : ",", quote(it->first), ":", quote(it->second));
    header += "}";
  }
  uint64_t offset = 0;
  for (const Item& item : items) {
    const auto nbytes = static_cast<uint64_t>(item.tensor.nbytes());
    header += cat(header.size() > 1 ? "," : "", quote(*item.name), ":{\"dtype\":\"",
                  detail::safe_dtypes[item.dtype_index].name,
                  "\",\"shape\":", detail::shape_text(item.shape), ",\"data_offsets\":[", offset,
                  ",", offset + nbytes, "]}");
    offset += nbytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-byte aligned

  io::OutFile out(path, "safe_save");
  unsigned char len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<unsigned char>(header.size() >> (8 * i));
  out.write(len_bytes, 8);
  out.write(header.data(), header.size());
  for (const Item& item : items) {
    std::vector<unsigned char> bytes = detail::host_bytes(item.tensor);
    if constexpr (std::endian::native == std::endian::big)
      io::reverse_item_bytes(bytes.data(), static_cast<size_t>(item.tensor.numel()),
                             static_cast<size_t>(item.tensor.element_size()));
    out.write(bytes.data(), bytes.size());
  }
  out.close();
}

/// The tensors of the safetensors file at `path`, with its dtypes and shapes, on the default
/// device. Error naming the file and the problem for anything malformed (DTypeError for a dtype
/// tinyt does not have).
TINYT_INLINE std::map<std::string, Tensor> safe_load(const std::string& path) {
  using detail::cat;
  io::InFile f(path, "safe_load");
  const detail::SafeHeader h = detail::read_header(f, "safe_load");
  std::map<std::string, Tensor> out;
  std::vector<unsigned char> bytes;
  for (const detail::SafeEntry& e : h.entries) {
    const DType dt = detail::safe_dtypes[e.dtype_index].dtype;
    bytes.resize(e.end - e.begin);
    f.read_at(h.data_start + e.begin, bytes.data(), bytes.size(),
              cat("the data of tensor ", json::quote(e.name)));
    const size_t count = bytes.size() / static_cast<size_t>(dt.itemsize());
    if constexpr (std::endian::native == std::endian::big)
      io::reverse_item_bytes(bytes.data(), count, static_cast<size_t>(dt.itemsize()));
    if (dt.is_bool())  // tinyt's bool ops assume 0 or 1, so another byte is not a bool
      for (size_t i = 0; i < count; ++i)
        if (bytes[i] > 1)
          throw Error(cat(io::where("safe_load", path), ": BOOL tensor ", json::quote(e.name),
                          " holds byte ", int(bytes[i]), " at element ", i, " (must be 0 or 1)"));
    out.emplace(e.name, Tensor::from_blob(bytes.data(), Shape(e.shape), dt));
  }
  return out;
}

/// The `__metadata__` string pairs of the safetensors file at `path` (empty when it has none);
/// the whole header is checked as safe_load checks it, but no tensor data is read.
TINYT_INLINE std::map<std::string, std::string> safe_load_metadata(const std::string& path) {
  io::InFile f(path, "safe_load_metadata");
  return detail::read_header(f, "safe_load_metadata").metadata;
}

}  // namespace nn::state
}  // namespace tinyt::inline v0
