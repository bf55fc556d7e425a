// Definitions of gguf.hpp, compiled with the engine (config.hpp). The file may come from anyone:
// every count and size is checked against the bytes left before anything is allocated or read.
#pragma once

#include <bit>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "../mapped_file.hpp"
#include "../tensor.hpp"
#include "file_io.hpp"
#include "gguf.hpp"

namespace tinyt::inline v0 {
namespace nn::state {

namespace detail {
using ::tinyt::detail::cat;

template <class T> const T& gguf_get(const GGUFValue& v, const char* kind) {
  if (const T* p = std::get_if<T>(&v.value)) return *p;
  static constexpr const char* held[] = {"an unsigned integer", "a signed integer", "a float", "a bool", "a string", "an array"};
  throw DTypeError(cat("gguf: the metadata value of '", v.key, "' is ", held[v.value.index()], ", not ", kind));
}
}  // namespace detail

TINYT_INLINE int64_t GGUFValue::as_int() const {
  if (const auto* i = std::get_if<int64_t>(&value)) return *i;
  const uint64_t u = detail::gguf_get<uint64_t>(*this, "an integer");
  if (u > static_cast<uint64_t>(INT64_MAX))
    throw Error(detail::cat("gguf: the metadata value of '", key, "', ", u, ", does not fit int64"));
  return static_cast<int64_t>(u);
}
TINYT_INLINE double GGUFValue::as_float() const {
  if (const auto* d = std::get_if<double>(&value)) return *d;
  if (const auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  return static_cast<double>(detail::gguf_get<uint64_t>(*this, "a number"));
}
TINYT_INLINE bool GGUFValue::as_bool() const { return detail::gguf_get<bool>(*this, "a bool"); }
TINYT_INLINE const std::string& GGUFValue::as_string() const { return detail::gguf_get<std::string>(*this, "a string"); }
TINYT_INLINE const std::vector<GGUFValue>& GGUFValue::as_array() const {
  return detail::gguf_get<std::vector<GGUFValue>>(*this, "an array");
}

namespace detail {

/// A tensor type of GGUF (ggml's type ids): a block of `block` elements takes `bytes` bytes. A
/// plain type has a tinyt dtype (block 1); a quantized one is unpacked by `dequantize` below.
struct GGMLType {
  uint32_t id;
  const char* name;
  int64_t block, bytes;
  DType dtype;  // void for a quantized type
};
inline constexpr GGMLType ggml_types[] = {
    {0, "F32", 1, 4, dtypes::float32},     {1, "F16", 1, 2, dtypes::float16},   {30, "BF16", 1, 2, dtypes::bfloat16},
    {28, "F64", 1, 8, dtypes::float64},    {24, "I8", 1, 1, dtypes::int8},      {25, "I16", 1, 2, dtypes::int16},
    {26, "I32", 1, 4, dtypes::int32},      {27, "I64", 1, 8, dtypes::int64},    {8, "Q8_0", 32, 34, dtypes::void_},
    {2, "Q4_0", 32, 18, dtypes::void_},    {3, "Q4_1", 32, 20, dtypes::void_},  {12, "Q4_K", 256, 144, dtypes::void_},
    {14, "Q6_K", 256, 210, dtypes::void_},
};
// ggml's other types, named in the error for a file that uses one
inline constexpr std::pair<uint32_t, const char*> ggml_unsupported[] = {
    {6, "Q5_0"},    {7, "Q5_1"},    {9, "Q8_1"},    {10, "Q2_K"},  {11, "Q3_K"},   {13, "Q5_K"},
    {15, "Q8_K"},   {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"}, {20, "IQ4_NL"},
    {21, "IQ3_S"},  {22, "IQ2_S"},  {23, "IQ4_XS"}, {29, "IQ1_M"}, {34, "TQ1_0"},  {35, "TQ2_0"}};

/// Reads a GGUF header front to back, through a buffer that grows as needed; every read past the
/// end of the file is an Error saying what was being read.
class GGUFReader {
 public:
  GGUFReader(io::InFile& f) : f_(f) {}
  uint64_t position() const { return pos_; }
  uint64_t left() const { return f_.size() - pos_; }
  std::string where() const { return io::where("gguf_load", f_.path()); }

  const unsigned char* take(uint64_t n, const std::string& what) {
    if (n > left()) throw Error(cat(where(), ": the file ends inside ", what, " (byte ", pos_, ")"));
    if (pos_ + n > buffer_start_ + buffer_.size()) {
      // keep what is left of the buffer, read at least 1 MiB more (or to the end of the file)
      const uint64_t keep_from = pos_;
      const uint64_t want = std::min<uint64_t>(f_.size() - keep_from, std::max<uint64_t>(n, 1 << 20));
      std::vector<unsigned char> next(static_cast<size_t>(want));
      f_.read_at(keep_from, next.data(), next.size(), what);
      buffer_ = std::move(next);
      buffer_start_ = keep_from;
    }
    const unsigned char* p = buffer_.data() + (pos_ - buffer_start_);
    pos_ += n;
    return p;
  }
  template <class T> T number(const std::string& what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    if constexpr (std::endian::native == std::endian::big) io::reverse_item_bytes(&v, 1, sizeof(T));
    return v;
  }
  std::string string(const std::string& what) {
    const auto n = number<uint64_t>(what + "'s length");
    if (n > left()) throw Error(cat(where(), ": ", what, " claims ", n, " bytes, more than the ", left(), " left in the file"));
    const unsigned char* p = take(n, what);
    return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
  }
  /// A count of items of at least `min_bytes` each, checked against the bytes left.
  uint64_t count(const std::string& what, uint64_t min_bytes) {
    const auto n = number<uint64_t>(what);
    if (n > left() / min_bytes)
      throw Error(cat(where(), ": ", what, " is ", n, ", more than the ", left(), " bytes left in the file can hold"));
    return n;
  }

  GGUFValue value(uint32_t type, const std::string& key, int depth = 0) { return {held_value(type, key, depth), key}; }

 private:
  decltype(GGUFValue::value) held_value(uint32_t type, const std::string& key, int depth) {
    const std::string what = cat("the value of '", key, "'");
    switch (type) {
      case 0: return uint64_t{number<uint8_t>(what)};
      case 1: return int64_t{number<int8_t>(what)};
      case 2: return uint64_t{number<uint16_t>(what)};
      case 3: return int64_t{number<int16_t>(what)};
      case 4: return uint64_t{number<uint32_t>(what)};
      case 5: return int64_t{number<int32_t>(what)};
      case 6: return static_cast<double>(number<float>(what));
      case 7: return number<uint8_t>(what) != 0;
      case 8: return string(what);
      case 9: {
        if (depth >= 8) throw Error(cat(where(), ": '", key, "' nests arrays more than 8 deep"));
        const auto item_type = number<uint32_t>(what + "'s item type");
        const uint64_t n = count(what + "'s length", min_value_bytes(item_type, key));
        std::vector<GGUFValue> items;
        items.reserve(static_cast<size_t>(n));
        for (uint64_t i = 0; i < n; ++i) items.push_back(value(item_type, cat(key, "[", i, "]"), depth + 1));
        return items;  // moved (C++20 moves a local into the variant)
      }
      case 10: return number<uint64_t>(what);
      case 11: return number<int64_t>(what);
      case 12: return number<double>(what);
      default: throw Error(cat(where(), ": '", key, "' has value type ", type, ", which GGUF does not define"));
    }
  }

  uint64_t min_value_bytes(uint32_t type, const std::string& key) const {
    switch (type) {
      case 0: case 1: case 7: return 1;
      case 2: case 3: return 2;
      case 4: case 5: case 6: return 4;
      case 8: case 10: case 11: case 12: return 8;
      case 9: return 12;  // item type and length
      default: throw Error(cat(where(), ": '", key, "' is an array of value type ", type, ", which GGUF does not define"));
    }
  }

  io::InFile& f_;
  uint64_t pos_ = 0, buffer_start_ = 0;
  std::vector<unsigned char> buffer_;
};

inline const GGMLType& ggml_type(uint32_t id, const std::string& where, const std::string& tensor) {
  for (const GGMLType& t : ggml_types)
    if (t.id == id) return t;
  for (const auto& [uid, name] : ggml_unsupported)
    if (uid == id) throw DTypeError(cat(where, ": tensor '", tensor, "' is ", name, ", a type tinyt does not read"));
  throw DTypeError(cat(where, ": tensor '", tensor, "' has type ", id, ", which GGUF does not define"));
}

// -- dequantization, as UOps: `b` holds a tensor's blocks, one row of bytes per block --------------
inline Tensor columns(const Tensor& b, int64_t begin, int64_t end) {
  return b.shrink({{0, b.shape()[0]}, {begin, end}});
}
/// The little-endian float16 at byte `col` of every block, as float32, shaped (blocks, 1): its two
/// bytes as a uint16, bitcast and widened (exact for every value). Two integer ops (a multiply,
/// not a shift, whose tensor form guards against shifting past the width), so a matmul reading the
/// weights decodes each block's scale where it needs it, not in a kernel of its own into a float
/// copy (the scheduler realizes a value broadcast into a reduction first only when it costs more).
inline Tensor half_at(const Tensor& b, int64_t col) {
  const Tensor bits = columns(b, col, col + 1).cast(dtypes::uint16) + columns(b, col + 1, col + 2).cast(dtypes::uint16) * 256;
  return bits.bitcast(dtypes::float16).cast(dtypes::float32);
}
/// The fields of `bits` bits in each byte of `q`, lowest first, along a new dim at `axis`: each
/// field is the byte shifted by a constant and masked, chosen by its position along the new dim.
/// One expression over the bytes, so a kernel reading a field loads its byte, where stacking the
/// fields (a concatenation) would load every field's byte under a mask of its own; and the
/// shifts are constants, where a shift by a tensor guards against shifting past the width. The
/// bytes are broadcast along the new dim before any op on them: a shifted byte broadcast there
/// would be a computed value broadcast into the matmul's reduction, which the scheduler realizes
/// first (a uint8 copy of every weight's high nibble, read again by each matrix-vector product).
/// The fields are int32: widened first, a byte's fields are shifts of 32-bit lanes, where x86 has
/// no 8-bit shift (LLVM emulates one with multiplies and packs: 1.3x the matrix-vector time).
inline Tensor bit_fields(const Tensor& q, int axis, int64_t bits) {
  const int64_t count = 8 / bits, mask = (int64_t{1} << bits) - 1;
  std::vector<int64_t> along(q.ndim() + 1, 1);
  along[static_cast<size_t>(axis)] = count;
  const Tensor field = Tensor::arange(count).reshape(Shape(along));
  const Tensor lifted = q.unsqueeze(axis);
  std::vector<int64_t> fields = lifted.shape().to_vector();
  fields[static_cast<size_t>(axis)] = count;
  const Tensor byte = lifted.expand(Shape(fields)).cast(dtypes::int32);
  Tensor out = byte & mask;
  for (int64_t i = 1; i < count; ++i) out = field.eq(i).where((byte >> (bits * i)) & mask, out);
  return out;
}
/// The low nibbles of `q`'s last dim, then the high ones, along a new dim at `axis`.
inline Tensor nibbles(const Tensor& q, int axis) { return bit_fields(q, axis, 4); }

inline Tensor dequantize(const Tensor& b, uint32_t type) {
  const int64_t n = b.shape()[0].as_int();
  switch (type) {
    case 8:  // Q8_0: d, 32 int8
      return columns(b, 2, 34).bitcast(dtypes::int8).cast(dtypes::float32) * half_at(b, 0);
    case 2:  // Q4_0: d, 32 nibbles (the first 16 low, the next 16 high), each minus 8
      return (nibbles(columns(b, 2, 18), 1).reshape({n, 32}).cast(dtypes::float32) - 8) * half_at(b, 0);
    case 3:  // Q4_1: d, m, 32 nibbles: d * q + m
      return half_at(b, 0) * nibbles(columns(b, 4, 20), 1).reshape({n, 32}).cast(dtypes::float32) + half_at(b, 2);
    case 12: {  // Q4_K: d, dmin, 8 six-bit scales and mins packed in 12 bytes, 256 nibbles
      const Tensor packed = columns(b, 4, 16).reshape({n, 3, 4});
      auto row = [&](int64_t r) { return packed.shrink({{0, n}, {r, r + 1}, {0, 4}}).reshape({n, 4}); };
      const Tensor lo = row(0), hi = row(1), top = row(2);
      const Tensor scale = Tensor::cat({lo & 63, (top & 15) | ((lo >> 2) & 48)}, 1).cast(dtypes::float32);
      const Tensor min = Tensor::cat({hi & 63, (top >> 4) | ((hi >> 2) & 48)}, 1).cast(dtypes::float32);
      const Tensor q = nibbles(columns(b, 16, 144).reshape({n, 4, 32}), 2).reshape({n, 8, 32}).cast(dtypes::float32);
      return ((half_at(b, 0) * scale).reshape({n, 8, 1}) * q - (half_at(b, 2) * min).reshape({n, 8, 1})).reshape({n, 256});
    }
    case 14: {  // Q6_K: 256 low nibbles, 256 two-bit highs, 16 int8 scales, d
      const Tensor low = nibbles(columns(b, 0, 128).reshape({n, 2, 64}), 2).reshape({n, 8, 32});
      const Tensor qh = columns(b, 128, 192).reshape({n, 2, 32});
      const Tensor high = bit_fields(qh, 2, 2).reshape({n, 8, 32});
      const Tensor q = ((low | (high << 4)).cast(dtypes::float32) - 32).reshape({n, 16, 16});
      const Tensor scale = columns(b, 192, 208).bitcast(dtypes::int8).cast(dtypes::float32);
      return ((half_at(b, 208) * scale).reshape({n, 16, 1}) * q).reshape({n, 256});
    }
    default: throw InternalError(cat("gguf: no dequantization for type ", type));
  }
}

struct GGUFTensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // PyTorch's order
  const GGMLType* type;
  uint64_t offset, bytes;
};
}  // namespace detail

TINYT_INLINE GGUFFile gguf_load(const std::string& path, const std::string& device) {
  using detail::cat;
  io::InFile f(path, "gguf_load");
  detail::GGUFReader r(f);
  const std::string where = r.where();
  GGUFFile out;

  const unsigned char* magic = r.take(4, "the magic number");
  if (std::memcmp(magic, "GGUF", 4) != 0) throw Error(cat(where, ": not a GGUF file (it does not start with \"GGUF\")"));
  const auto version = r.number<uint32_t>("the version");
  if (version != 2 && version != 3) throw Error(cat(where, ": GGUF version ", version, " (tinyt reads versions 2 and 3)"));
  // the smallest tensor info: name length, dim count, type, offset; the smallest pair: key
  // length, value type, one byte of value
  const uint64_t tensor_count = r.count("the tensor count", 24);
  const uint64_t kv_count = r.count("the metadata count", 13);

  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key = r.string(cat("metadata key ", i));
    const auto type = r.number<uint32_t>(cat("the value type of '", key, "'"));
    GGUFValue v = r.value(type, key);
    if (!out.metadata.emplace(key, std::move(v)).second) throw Error(cat(where, ": metadata key '", key, "' appears twice"));
  }
  uint64_t alignment = 32;
  if (auto it = out.metadata.find("general.alignment"); it != out.metadata.end()) {
    const auto* a = std::get_if<uint64_t>(&it->second.value);
    if (!a || *a == 0 || (*a & (*a - 1)) != 0 || *a > (1u << 30))
      throw Error(cat(where, ": general.alignment must be a power of two (as a uint32)"));
    alignment = *a;
  }

  std::vector<detail::GGUFTensorInfo> infos;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    detail::GGUFTensorInfo t;
    t.name = r.string(cat("the name of tensor ", i));
    const auto dims = r.number<uint32_t>(cat("the dim count of '", t.name, "'"));
    if (dims > 4) throw Error(cat(where, ": tensor '", t.name, "' has ", dims, " dims (GGUF allows 4)"));
    uint64_t numel = 1;
    for (uint32_t d = 0; d < dims; ++d) {
      const auto size = r.number<uint64_t>(cat("the dims of '", t.name, "'"));
      if (size > (uint64_t{1} << 40) || (size && numel > (uint64_t{1} << 50) / size))
        throw Error(cat(where, ": tensor '", t.name, "' is too large (dim ", d, " is ", size, ")"));
      numel *= size;
      t.shape.insert(t.shape.begin(), static_cast<int64_t>(size));  // GGUF lists the innermost dim first
    }
    t.type = &detail::ggml_type(r.number<uint32_t>(cat("the type of '", t.name, "'")), where, t.name);
    t.offset = r.number<uint64_t>(cat("the offset of '", t.name, "'"));
    const int64_t inner = t.shape.empty() ? 1 : t.shape.back();
    if (inner % t.type->block != 0)
      throw Error(cat(where, ": tensor '", t.name, "' (", t.type->name, ") has rows of ", inner, " elements, not whole blocks of ",
                      t.type->block));
    t.bytes = numel / static_cast<uint64_t>(t.type->block) * static_cast<uint64_t>(t.type->bytes);
    if (t.offset % alignment != 0) throw Error(cat(where, ": tensor '", t.name, "' starts at ", t.offset, ", not aligned to ", alignment));
    infos.push_back(std::move(t));
  }

  const uint64_t data_start = (r.position() + alignment - 1) / alignment * alignment;
  // the tensors' bytes are used in place, mapped (on the CPU: a model loads without a copy); the
  // mapping's size is what is checked (the file may have changed since it was opened)
  const std::shared_ptr<const MappedFile> mapped = MappedFile::open(path, "gguf_load");
  const std::string_view file = mapped->bytes();
  const uint64_t data_size = file.size() > data_start ? file.size() - data_start : 0;
  const std::string dev = device.empty() ? Device::default_device() : device;
  for (const detail::GGUFTensorInfo& t : infos) {
    if (t.offset > data_size || t.bytes > data_size - t.offset)
      throw Error(cat(where, ": the data of tensor '", t.name, "' (", t.bytes, " bytes at ", t.offset, ") runs past the end of the file (",
                      data_size, " bytes of data)"));
    const std::string_view bytes = file.substr(static_cast<size_t>(data_start + t.offset), static_cast<size_t>(t.bytes));
    Tensor value;
    if (!t.type->dtype.is_void()) {
      if constexpr (std::endian::native == std::endian::big) {
        std::string swapped(bytes);
        io::reverse_item_bytes(swapped.data(), swapped.size() / t.type->dtype.itemsize(), t.type->dtype.itemsize());
        value = Tensor::from_blob(swapped.data(), Shape(t.shape), t.type->dtype, dev);
      } else {
        value = ::tinyt::detail::tensor_over_file(mapped, bytes, t.shape, t.type->dtype, dev);
      }
    } else {
      const int64_t blocks = static_cast<int64_t>(t.bytes) / t.type->bytes;
      value = detail::dequantize(::tinyt::detail::tensor_over_file(mapped, bytes, {blocks, t.type->bytes}, dtypes::uint8, dev), t.type->id)
                  .reshape(Shape(t.shape));
    }
    if (!out.tensors.emplace(t.name, std::move(value)).second) throw Error(cat(where, ": tensor '", t.name, "' appears twice"));
  }
  return out;
}

}  // namespace nn::state
}  // namespace tinyt::inline v0
