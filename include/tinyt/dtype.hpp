// Data types: every tinygrad dtype, the C++ type <-> dtype table, and the promotion lattice.
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include <boost/hana/at_key.hpp>
#include <boost/hana/contains.hpp>
#include <boost/hana/integral_constant.hpp>
#include <boost/hana/map.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/type.hpp>
#include <xtl/xhalf_float.hpp>

#include "error.hpp"

namespace tinyt::inline v0 {

/// 128-bit integer: exact arithmetic for every int dtype (uint64 included) in folding and bounds.
__extension__ using i128 = __int128;
__extension__ using u128 = unsigned __int128;

/// float16 on the host.
using half_t = xtl::half_float;

/// bfloat16 on the host: the top 16 bits of a float32, rounded to nearest even.
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  explicit bfloat16_t(float f) {
    uint32_t u = std::bit_cast<uint32_t>(f);
    if (std::isnan(f))
      bits = static_cast<uint16_t>((u >> 16) | 0x40);  // keep NaN a (quiet) NaN
    else
      bits = static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
  }
  operator float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }
};

/// The element kinds. `index` is the abstract integer of index arithmetic (sized to int32 or
/// int64 from its bounds when a kernel is lowered); `void_` types ops that produce no value.
enum class ScalarType : uint8_t {
  void_,
  bool_,
  int8,
  uint8,
  int16,
  uint16,
  int32,
  uint32,
  int64,
  uint64,
  float16,
  bfloat16,
  float32,
  float64,
  index
};

/// Where a pointer points.
enum class AddrSpace : uint8_t { global, local, reg };

namespace detail {
struct ScalarInfo {
  const char* name;    // NumPy name
  const char* c_name;  // spelling in C
  int priority;        // order in the promotion lattice (tinygrad's)
  int itemsize;
  char kind;  // 'v' void, 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'x' index
};
inline constexpr std::array<ScalarInfo, 15> scalar_info{{
    {"void", "void", -1, 0, 'v'},
    {"bool", "bool", 0, 1, 'b'},
    {"int8", "signed char", 1, 1, 'i'},
    {"uint8", "unsigned char", 2, 1, 'u'},
    {"int16", "short", 3, 2, 'i'},
    {"uint16", "unsigned short", 4, 2, 'u'},
    {"int32", "int", 5, 4, 'i'},
    {"uint32", "unsigned int", 6, 4, 'u'},
    {"int64", "long", 7, 8, 'i'},
    {"uint64", "unsigned long", 8, 8, 'u'},
    {"float16", "half", 11, 2, 'f'},
    {"bfloat16", "__bf16", 12, 2, 'f'},
    {"float32", "float", 13, 4, 'f'},
    {"float64", "double", 14, 8, 'f'},
    {"index", "index", 15, 8, 'x'},
}};
constexpr const ScalarInfo& info(ScalarType s) { return scalar_info[static_cast<size_t>(s)]; }
}  // namespace detail

/// A dtype: a scalar kind, optionally a vector of `count` lanes, optionally a pointer to it.
class DType {
 public:
  constexpr DType() = default;
  constexpr DType(ScalarType s) : scalar_(s) {}  // NOLINT: dtypes convert from their scalar kind

  constexpr ScalarType scalar_type() const { return scalar_; }
  /// The scalar dtype of the elements (drops vector width and pointer).
  constexpr DType scalar() const { return DType(scalar_); }
  /// The pointee of a pointer dtype (keeps the vector width); itself otherwise.
  constexpr DType base() const {
    DType d = *this;
    d.ptr_ = false;
    d.size_ = -1;
    return d;
  }
  constexpr int count() const { return count_; }
  constexpr bool is_ptr() const { return ptr_; }
  constexpr AddrSpace addrspace() const { return addr_; }
  /// Number of elements a pointer dtype points to (-1 when unknown).
  constexpr int64_t size() const { return size_; }

  /// This dtype with `n` lanes; only scalars vectorize.
  DType vec(int n) const {
    if (count_ != 1 || ptr_ || n < 1 || n > 65535)
      throw DTypeError(detail::cat("DType.vec: cannot make ", n, " lanes of ", name()));
    DType d = *this;
    if (scalar_ != ScalarType::void_) d.count_ = static_cast<uint16_t>(n);
    return d;
  }
  /// A pointer to this dtype.
  DType ptr(int64_t size = -1, AddrSpace addr = AddrSpace::global) const {
    if (ptr_) throw DTypeError(detail::cat("DType.ptr: ", name(), " is already a pointer"));
    DType d = *this;
    d.ptr_ = true, d.size_ = size, d.addr_ = addr;
    return d;
  }

  /// NumPy name ("float32", "int64", "bool"), with ".vec(n)" / "*" decorations where they apply.
  std::string name() const {
    std::string s = detail::info(scalar_).name;
    if (count_ > 1) s += ".vec(" + std::to_string(count_) + ")";
    if (ptr_) s += "*";
    return s;
  }
  /// Bytes of one element (all lanes; the pointee for pointers).
  constexpr int itemsize() const { return detail::info(scalar_).itemsize * count_; }
  constexpr int priority() const { return detail::info(scalar_).priority; }
  constexpr bool is_float() const { return detail::info(scalar_).kind == 'f'; }
  constexpr bool is_unsigned() const { return detail::info(scalar_).kind == 'u'; }
  /// Integer kinds, including the abstract `index` (bool excluded).
  constexpr bool is_int() const {
    return is_unsigned() || detail::info(scalar_).kind == 'i' || is_index();
  }
  constexpr bool is_bool() const { return scalar_ == ScalarType::bool_; }
  constexpr bool is_index() const { return scalar_ == ScalarType::index; }
  constexpr bool is_void() const { return scalar_ == ScalarType::void_; }

  friend constexpr bool operator==(const DType&, const DType&) = default;
  /// tinygrad's order: priority, then itemsize, then name; used to pick the least upper bound.
  friend constexpr bool operator<(const DType& a, const DType& b) {
    if (a.priority() != b.priority()) return a.priority() < b.priority();
    if (a.itemsize() != b.itemsize()) return a.itemsize() < b.itemsize();
    if (a.count_ != b.count_) return a.count_ < b.count_;
    if (a.ptr_ != b.ptr_) return a.ptr_ < b.ptr_;
    // the rest only makes the order total (consistent with ==)
    if (a.scalar_ != b.scalar_) return a.scalar_ < b.scalar_;
    if (a.addr_ != b.addr_) return a.addr_ < b.addr_;
    return a.size_ < b.size_;
  }
  friend std::ostream& operator<<(std::ostream& os, const DType& d) {
    return os << "dtypes." << d.name();
  }

  size_t hash() const {
    return (static_cast<size_t>(scalar_) | static_cast<size_t>(count_) << 8 |
            static_cast<size_t>(ptr_) << 24 | static_cast<size_t>(addr_) << 25) ^
           std::hash<int64_t>{}(size_)*0x9e3779b97f4a7c15ULL;
  }

 private:
  ScalarType scalar_ = ScalarType::void_;
  uint16_t count_ = 1;
  bool ptr_ = false;
  AddrSpace addr_ = AddrSpace::global;
  int64_t size_ = -1;
};

/// The dtypes, by their tinygrad names.
namespace dtypes {
inline constexpr DType void_{ScalarType::void_}, bool_{ScalarType::bool_};
inline constexpr DType int8{ScalarType::int8}, int16{ScalarType::int16}, int32{ScalarType::int32},
    int64{ScalarType::int64};
inline constexpr DType uint8{ScalarType::uint8}, uint16{ScalarType::uint16},
    uint32{ScalarType::uint32}, uint64{ScalarType::uint64};
inline constexpr DType float16{ScalarType::float16}, bfloat16{ScalarType::bfloat16},
    float32{ScalarType::float32}, float64{ScalarType::float64};
/// The abstract integer of index arithmetic (internal: never a tensor's dtype).
inline constexpr DType index{ScalarType::index};
inline constexpr DType half = float16, float_ = float32, double_ = float64;
inline constexpr DType default_float = float32, default_int = int32;

/// Every dtype a tensor can have, in lattice order.
inline const std::vector<DType>& all() {
  static const std::vector<DType> v{bool_, int8,   uint8,   int16,    uint16,  int32,  uint32,
                                    int64, uint64, float16, bfloat16, float32, float64};
  return v;
}
/// Looks a dtype up by its NumPy name ("float32", "int64", "bool", also "half", "float", ...).
inline DType from_name(const std::string& name) {
  for (DType d : all())
    if (d.name() == name) return d;
  static const std::pair<const char*, DType> aliases[] = {
      {"half", float16}, {"float", float32}, {"double", float64}, {"int", int32},
      {"long", int64},   {"char", int8},     {"uchar", uint8},    {"short", int16}};
  for (auto& [alias, d] : aliases)
    if (name == alias) return d;
  throw DTypeError(detail::cat("dtypes::from_name: unknown dtype '", name, "'"));
}

/// Smallest value of an integer (or bool/index) dtype, exactly.
inline i128 min_int(DType d) {
  d = d.scalar();
  if (d.is_bool() || d.is_unsigned()) return 0;
  if (d.is_index()) return std::numeric_limits<int64_t>::min();
  if (!d.is_int())
    throw DTypeError(detail::cat("dtypes::min_int: ", d.name(), " is not an integer dtype"));
  return -(static_cast<i128>(1) << (8 * d.itemsize() - 1));
}
/// Largest value of an integer (or bool/index) dtype, exactly.
inline i128 max_int(DType d) {
  d = d.scalar();
  if (d.is_bool()) return 1;
  if (d.is_index()) return std::numeric_limits<int64_t>::max();
  if (!d.is_int())
    throw DTypeError(detail::cat("dtypes::max_int: ", d.name(), " is not an integer dtype"));
  return (static_cast<i128>(1) << (8 * d.itemsize() - (d.is_unsigned() ? 0 : 1))) - 1;
}
/// Largest finite value of a float dtype.
inline double max_float(DType d) {
  switch (d.scalar_type()) {
    case ScalarType::float16:
      return 65504.0;
    case ScalarType::bfloat16:
      return 3.3895313892515355e38;
    case ScalarType::float32:
      return std::numeric_limits<float>::max();
    case ScalarType::float64:
      return std::numeric_limits<double>::max();
    default:
      throw DTypeError(detail::cat("dtypes::max_float: ", d.name(), " is not a float dtype"));
  }
}
}  // namespace dtypes

/// An integer value wrapped into the range of an integer dtype (two's complement), as C's
/// conversions do; bool keeps only "is non-zero". `index` is not wrapped.
inline i128 wrap_int(i128 v, DType d) {
  d = d.scalar();
  if (d.is_bool()) return v != 0;
  if (d.is_index()) return v;
  const int bits = 8 * d.itemsize();
  const u128 mask = (static_cast<u128>(1) << bits) - 1;
  const u128 u = static_cast<u128>(v) & mask;
  if (!d.is_unsigned() && (u >> (bits - 1)) & 1)
    return static_cast<i128>(u) - (static_cast<i128>(1) << bits);
  return static_cast<i128>(u);
}

namespace detail {
/// `v` as a float rounded to odd: toward zero, the last bit set when that was inexact. Rounding
/// this float to a type of at most 22 bits of precision is the one correct rounding of `v`
/// (rounding to nearest twice, through float, is not: 1 + 2^-11 + 2^-40 would become 1 in half).
inline float to_float_odd(double v) {
  float f = static_cast<float>(v);
  if (!std::isfinite(v) || static_cast<double>(f) == v) return f;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) --bits;  // sign-magnitude: toward zero
  return std::bit_cast<float>(bits | 1u);
}
}  // namespace detail

/// A double rounded to the precision of a float dtype (round to nearest even; overflow is inf).
/// float16 rounds once, as a cast from float64 does in a kernel; bfloat16 goes through float,
/// as a kernel's cast from float64 (and PyTorch's) does.
inline double round_float(double v, DType d) {
  switch (d.scalar_type()) {
    case ScalarType::float16:
      return static_cast<float>(half_t(detail::to_float_odd(v)));
    case ScalarType::bfloat16:
      return static_cast<float>(bfloat16_t(static_cast<float>(v)));
    case ScalarType::float32:
      return static_cast<float>(v);
    default:
      return v;
  }
}

namespace detail {
namespace hana = boost::hana;
template <ScalarType S> using scalar_c = hana::integral_constant<ScalarType, S>;
inline constexpr auto cpp_to_dtype =
    hana::make_map(hana::make_pair(hana::type_c<bool>, scalar_c<ScalarType::bool_>{}),
                   hana::make_pair(hana::type_c<int8_t>, scalar_c<ScalarType::int8>{}),
                   hana::make_pair(hana::type_c<int16_t>, scalar_c<ScalarType::int16>{}),
                   hana::make_pair(hana::type_c<int32_t>, scalar_c<ScalarType::int32>{}),
                   hana::make_pair(hana::type_c<int64_t>, scalar_c<ScalarType::int64>{}),
                   hana::make_pair(hana::type_c<uint8_t>, scalar_c<ScalarType::uint8>{}),
                   hana::make_pair(hana::type_c<uint16_t>, scalar_c<ScalarType::uint16>{}),
                   hana::make_pair(hana::type_c<uint32_t>, scalar_c<ScalarType::uint32>{}),
                   hana::make_pair(hana::type_c<uint64_t>, scalar_c<ScalarType::uint64>{}),
                   hana::make_pair(hana::type_c<half_t>, scalar_c<ScalarType::float16>{}),
                   hana::make_pair(hana::type_c<bfloat16_t>, scalar_c<ScalarType::bfloat16>{}),
                   hana::make_pair(hana::type_c<float>, scalar_c<ScalarType::float32>{}),
                   hana::make_pair(hana::type_c<double>, scalar_c<ScalarType::float64>{}));
}  // namespace detail

/// True when the C++ type T has a dtype.
template <class T>
inline constexpr bool has_dtype_v =
    decltype(boost::hana::contains(detail::cpp_to_dtype, boost::hana::type_c<T>))::value;

/// The dtype of a C++ type (`float` -> float32, `int64_t` -> int64, `half_t` -> float16, ...).
template <class T> constexpr DType dtype_of() {
  static_assert(has_dtype_v<T>,
                "tinyt::dtype_of<T>: T has no tinyt dtype; use bool, (u)int8..64_t, half_t, "
                "bfloat16_t, float or double");
  return DType(std::decay_t<decltype(boost::hana::at_key(detail::cpp_to_dtype,
                                                         boost::hana::type_c<T>))>::value);
}

namespace detail {
// Direct parents in the promotion lattice (tinygrad's, minus the fp8 types we do not have).
inline std::vector<DType> lattice_parents(DType d) {
  using namespace dtypes;
  switch (d.scalar_type()) {
    case ScalarType::bool_:
      return {int8, uint8};
    case ScalarType::int8:
      return {int16};
    case ScalarType::int16:
      return {int32};
    case ScalarType::int32:
      return {int64};
    case ScalarType::int64:
      return {uint64};
    case ScalarType::uint8:
      return {int16, uint16};
    case ScalarType::uint16:
      return {int32, uint32};
    case ScalarType::uint32:
      return {int64, uint64};
    case ScalarType::uint64:
      return {float16, bfloat16};
    case ScalarType::float16:
    case ScalarType::bfloat16:
      return {float32};
    case ScalarType::float32:
      return {float64};
    default:
      return {};
  }
}
// Bitmask (by ScalarType) of a dtype and all its ancestors in the lattice.
inline uint32_t lattice_ancestors(DType d) {
  uint32_t mask = 1u << static_cast<int>(d.scalar_type());
  for (DType p : lattice_parents(d)) mask |= lattice_ancestors(p);
  return mask;
}
}  // namespace detail

/// The smallest dtype every given dtype promotes to (tinygrad's least_upper_dtype).
inline DType least_upper_dtype(std::initializer_list<DType> ds) {
  if (ds.size() == 0) throw DTypeError("least_upper_dtype: no dtypes given");
  // the common case, one dtype repeated, without walking the lattice
  if (const DType first = *ds.begin(); !first.is_ptr() && !first.is_void() && first.count() == 1 &&
                                       std::all_of(ds.begin(), ds.end(), [&](DType d) { return d == first; }))
    return first;
  uint32_t common = ~0u;
  bool any_index = false, all_intlike = true;
  for (DType d : ds) {
    if (d.is_ptr() || d.is_void())
      throw DTypeError(detail::cat("least_upper_dtype: cannot promote ", d.name()));
    any_index |= d.is_index();
    all_intlike &= d.is_index() || d.is_int() || d.is_bool();
    if (!d.is_index()) common &= detail::lattice_ancestors(d.scalar());
  }
  if (any_index && all_intlike) return dtypes::index;
  if (any_index) throw DTypeError("least_upper_dtype: index mixes only with integers");
  DType best = dtypes::void_;
  for (DType d : dtypes::all())
    if ((common >> static_cast<int>(d.scalar_type())) & 1 && (best.is_void() || d < best)) best = d;
  return best;
}

/// The dtype a Python-like scalar of kind `scalar` takes next to a tensor of dtype `t`:
/// it is weak, so it adopts `t` when `t` can hold its kind (`half * 2.0` stays half),
/// and otherwise promotes (`int * 2.5` is the default float, `bool + 1` the default int).
inline DType weak_promote(DType t, DType scalar) {
  const bool fits = scalar.is_bool() || (scalar.is_int() && (t.is_int() || t.is_float())) ||
                    (scalar.is_float() && t.is_float());
  if (fits) return t;
  return least_upper_dtype({t, scalar.is_float() ? dtypes::default_float : dtypes::default_int});
}

/// The float dtype an op like `/` or `exp` computes a tensor of dtype `d` in.
inline DType least_upper_float(DType d) {
  return d.is_float() ? d : least_upper_dtype({d, dtypes::default_float});
}

}  // namespace tinyt::inline v0

template <> struct std::hash<tinyt::DType> {
  size_t operator()(const tinyt::DType& d) const { return d.hash(); }
};
