// Protocol Buffers' wire format, read: what an .onnx file is (ModelProto) and what the ONNX
// conformance cases' .pb files are (TensorProto). tinyt decodes it itself, as tinygrad does: no
// protobuf library, so no clash with the one a process that also links onnxruntime carries.
//
// A message is a sequence of fields; each starts with a key, a varint holding the field number
// and the wire type (number << 3 | type):
//   0 varint            an integer in 7-bit groups, least significant first, high bit = more follow
//   1 fixed64           8 bytes, little-endian (double, fixed64, sfixed64)
//   2 length-delimited  a varint length, then that many bytes (string, bytes, a message, a
//                       packed repeated scalar field)
//   5 fixed32           4 bytes, little-endian (float, fixed32, sfixed32)
// (3 and 4, groups, are deprecated and ONNX does not use them.) A repeated scalar field comes
// packed (one length-delimited field of back-to-back values) or unpacked (one field per value);
// a reader accepts both, as real files use both. Every length and offset is checked against the
// bytes there are: a malformed or truncated input is a FormatError naming the message, the field
// and its offset in the file.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../support.hpp"
#include "errors.hpp"

namespace tinyt::inline v0 {
namespace onnx {
namespace proto {

enum class WireType : uint8_t { varint = 0, fixed64 = 1, bytes = 2, fixed32 = 5 };

inline const char* wire_type_name(WireType t) {
  switch (t) {
    case WireType::varint: return "varint";
    case WireType::fixed64: return "fixed64";
    case WireType::bytes: return "length-delimited";
    case WireType::fixed32: return "fixed32";
  }
  return "?";
}

/// One field of a message as it is on the wire.
struct Field {
  uint32_t number = 0;
  WireType type = WireType::varint;
  uint64_t value = 0;      // varint, fixed32 and fixed64: the bits
  std::string_view bytes;  // length-delimited: the payload
  size_t offset = 0;       // where the field's key starts, in the whole file
  size_t payload = 0;      // where `bytes` starts, in the whole file
};

/// The fields of one message, read in order: `while (r.next(f)) switch (f.number) ...`.
class Reader {
 public:
  /// `message`: its bytes; `base`: their offset in the file; `what`: the message's type, for errors.
  Reader(std::string_view message, size_t base, std::string what) : data_(message), base_(base), what_(std::move(what)) {}

  /// The next field, or false at the end of the message.
  bool next(Field& f) {
    if (pos_ == data_.size()) return false;
    f = Field{};
    f.offset = base_ + pos_;
    const uint64_t key = varint(f.offset, "a field's key");
    const uint64_t number = key >> 3;
    if (number == 0 || number > 0x1fffffff)
      throw error(f.offset, tinyt::detail::cat("field number ", number, " is outside 1..2^29-1"));
    f.number = static_cast<uint32_t>(number);
    switch (key & 7) {
      case 0: f.type = WireType::varint, f.value = varint(f.offset, "a varint field"); break;
      case 1: f.type = WireType::fixed64, f.value = fixed(f.offset, 8); break;
      case 5: f.type = WireType::fixed32, f.value = fixed(f.offset, 4); break;
      case 2: {
        f.type = WireType::bytes;
        const uint64_t length = varint(f.offset, "a length");
        if (length > data_.size() - pos_)
          throw error(f.offset, tinyt::detail::cat("field ", f.number, ": a length of ", length, " bytes runs past the end of the ", what_,
                                                   " (", data_.size() - pos_, " bytes left)"));
        f.payload = base_ + pos_;
        f.bytes = data_.substr(pos_, static_cast<size_t>(length));
        pos_ += static_cast<size_t>(length);
        break;
      }
      default:
        throw error(f.offset, tinyt::detail::cat("field ", f.number, " has wire type ", key & 7,
                                                 (key & 7) == 3 || (key & 7) == 4 ? " (a group, which ONNX does not use)" : " (no such type)"));
    }
    return true;
  }

  /// A reader of the message a length-delimited field holds.
  Reader message(const Field& f, std::string what) const {
    expect(f, WireType::bytes);
    return Reader(f.bytes, f.payload, std::move(what));
  }

  /// A field's value as an integer (int32, int64, uint64, bool, enum: a varint); an int32's
  /// negative values are 10-byte varints of their 64-bit two's complement, read back as such.
  int64_t integer(const Field& f) const {
    expect(f, WireType::varint);
    return static_cast<int64_t>(f.value);
  }
  float float32(const Field& f) const {
    expect(f, WireType::fixed32);
    return bits_as<float>(f.value);
  }
  double float64(const Field& f) const {
    expect(f, WireType::fixed64);
    return bits_as<double>(f.value);
  }
  std::string_view string(const Field& f) const {
    expect(f, WireType::bytes);
    return f.bytes;
  }

  /// A repeated varint field, packed or one value per field: its values appended to `out`.
  void integers(const Field& f, std::vector<int64_t>& out) const {
    if (f.type == WireType::varint) return out.push_back(static_cast<int64_t>(f.value));
    expect(f, WireType::bytes);
    Reader packed(f.bytes, f.payload, what_);
    while (packed.pos_ < packed.data_.size()) out.push_back(static_cast<int64_t>(packed.varint(packed.base_ + packed.pos_, "a packed varint")));
  }
  /// A repeated float (fixed32) or double (fixed64) field, packed or one value per field.
  template <class T>
  requires(std::is_same_v<T, float> || std::is_same_v<T, double>) void floats(const Field& f, std::vector<T>& out) const {
    constexpr WireType wire = sizeof(T) == 4 ? WireType::fixed32 : WireType::fixed64;
    if (f.type == wire) return out.push_back(bits_as<T>(f.value));
    expect(f, WireType::bytes);
    if (f.bytes.size() % sizeof(T) != 0)
      throw error(f.offset, tinyt::detail::cat("field ", f.number, ": ", f.bytes.size(), " bytes of packed ", sizeof(T) == 4 ? "floats" : "doubles",
                                               " are not a whole number of ", sizeof(T), "-byte values"));
    Reader packed(f.bytes, f.payload, what_);
    while (packed.pos_ < packed.data_.size()) out.push_back(bits_as<T>(packed.fixed(packed.base_ + packed.pos_, sizeof(T))));
  }

  const std::string& what() const { return what_; }
  /// The message's offset in the file.
  size_t base() const { return base_; }
  /// A FormatError about this message at file offset `offset`.
  FormatError error(size_t offset, const std::string& why) const {
    return FormatError(tinyt::detail::cat("onnx: ", what_, " at offset ", offset, ": ", why));
  }
  /// FormatError unless field `f` has wire type `type`.
  void expect(const Field& f, WireType type) const {
    if (f.type != type)
      throw error(f.offset, tinyt::detail::cat("field ", f.number, " is ", wire_type_name(f.type), ", expected ", wire_type_name(type)));
  }

 private:
  std::string_view data_;
  size_t base_ = 0, pos_ = 0;
  std::string what_;

  // the low sizeof(T) bytes of `bits` as a T
  template <class T> static T bits_as(uint64_t bits) {
    T v;
    if constexpr (sizeof(T) == 4) {
      const auto low = static_cast<uint32_t>(bits);
      std::memcpy(&v, &low, 4);
    } else {
      std::memcpy(&v, &bits, 8);
    }
    return v;
  }
  // a varint at pos_ (at most 10 bytes, the 10th holding the 64th bit only, so it ends there)
  uint64_t varint(size_t field, const char* what) {
    uint64_t v = 0;
    for (int i = 0;; ++i) {
      if (pos_ == data_.size()) throw error(field, tinyt::detail::cat(what, " is cut off by the end of the ", what_));
      const auto byte = static_cast<uint8_t>(data_[pos_++]);
      if (i == 9 && byte > 1) throw error(field, tinyt::detail::cat(what, " does not fit 64 bits (its 10th byte is ", int{byte}, ")"));
      v |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
      if (!(byte & 0x80)) return v;
    }
  }
  uint64_t fixed(size_t field, size_t n) {
    if (data_.size() - pos_ < n)
      throw error(field, tinyt::detail::cat("a ", n, "-byte value is cut off by the end of the ", what_, " (", data_.size() - pos_, " bytes left)"));
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
};

}  // namespace proto
}  // namespace onnx
}  // namespace tinyt::inline v0
