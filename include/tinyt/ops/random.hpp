// Random numbers, counter-based: element i of a call is the Threefry-2x32 encryption (Salmon et
// al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) of the counter (i mod 2^32, i >> 32)
// under a key for that call. A random tensor is then a pure function of (seed, call number,
// index): any kernel can recompute it and get the same bits, so it needs no buffer of state and
// fuses into the kernels that use it. The cipher is built from tensor ops on uint32 (wrapping
// add, xor, shifts); the key is read from a 2-word buffer, so every call reuses one compiled
// kernel.
#pragma once

#include <array>
#include <mutex>
#include <numbers>

#include "creation.hpp"
#include "threefry.hpp"

namespace tinyt::inline v0 {

namespace detail {

/// Floats uniform in [0, 1) from random words, as float32: the top m bits become the mantissa of
/// a float in [1, 2), minus 1. m is the mantissa width of `dt` (at most float32's 23), so the
/// values are exact in `dt` and a cast to it cannot round up to 1.
inline Tensor unit_float(const Tensor& bits, DType dt) {
  const uint32_t m = dt == dtypes::float16 ? 10 : dt == dtypes::bfloat16 ? 7 : 23;
  Tensor mantissa = bits.rshift(tf_word(32 - m, bits)).lshift(tf_word(23 - m, bits));
  return mantissa.bitwise_or(tf_word(0x3F800000, bits)).bitcast(dtypes::float32).sub(1.0);
}

/// The device a random op runs on ("" is the default).
inline std::string random_device(const std::string& device) {
  return device.empty() ? Device::default_device() : Device::canonicalize(device);
}
inline void random_require_float(DType dt, const char* op) {
  if (!dt.is_float()) throw DTypeError(cat(op, ": needs a float dtype, not ", dt.name()));
}
inline void random_require_finite(double v, const char* what, const char* op) {
  if (!std::isfinite(v)) throw Error(cat(op, ": ", what, " must be finite, not ", v));
}
/// A float scalar of dtype `dt` on `device` (not weak, so float64 keeps its precision).
inline Tensor random_float_const(double v, DType dt, const std::string& device) {
  return Tensor(graph::const_(dt, v, device));
}
/// float64 stays float64; narrower floats compute in float32 and are cast at the end.
inline DType random_compute_dtype(DType dt) {
  return dt == dtypes::float64 ? dtypes::float64 : dtypes::float32;
}

/// floor(b * r / 2^64) for a 64-bit random word b = (hi, lo) and a host constant r: the high half
/// of the 128-bit product from 32-bit halves in uint64 arithmetic, exact (so the result is < r).
inline Tensor mulhi64(const Tensor& b_hi, const Tensor& b_lo, uint64_t r) {
  auto u64 = [&](uint64_t v) { return Tensor(graph::const_(dtypes::uint64, v, b_hi.device())); };
  const Tensor bh = b_hi.cast(dtypes::uint64), bl = b_lo.cast(dtypes::uint64),
               mask = u64(0xffffffffu), k32 = u64(32);
  const Tensor rh = u64(r >> 32), rl = u64(r & 0xffffffffu);
  const Tensor ll = bl.mul(rl), lh = bl.mul(rh), hl = bh.mul(rl), hh = bh.mul(rh);
  const Tensor mid = ll.rshift(k32).add(lh.bitwise_and(mask)).add(hl.bitwise_and(mask));
  return hh.add(lh.rshift(k32)).add(hl.rshift(k32)).add(mid.rshift(k32));
}

// The same for r < 2^32 in uint32 arithmetic only (a device without 64-bit types): each 32x32-bit
// product from 16-bit halves, as (high word, low word); then floor((hi * r * 2^32 + lo * r) / 2^64)
// is the high word of hi * r plus the carry out of adding its low word to lo * r's high word.
inline Tensor mulhi64_in_words(const Tensor& b_hi, const Tensor& b_lo, uint32_t r) {
  auto u32 = [&](uint32_t v) { return Tensor(graph::const_(dtypes::uint32, v, b_hi.device())); };
  const Tensor half = u32(0xffffu), k16 = u32(16), rh = u32(r >> 16), rl = u32(r & 0xffffu);
  const auto product = [&](const Tensor& a) {
    const Tensor ah = a.rshift(k16), al = a.bitwise_and(half);
    const Tensor ll = al.mul(rl), lh = al.mul(rh), hl = ah.mul(rl), hh = ah.mul(rh);
    const Tensor mid = ll.rshift(k16).add(lh.bitwise_and(half)).add(hl.bitwise_and(half));
    return std::pair{hh.add(lh.rshift(k16)).add(hl.rshift(k16)).add(mid.rshift(k16)), mid.lshift(k16).bitwise_or(ll.bitwise_and(half))};
  };
  const auto [p1_hi, p1_lo] = product(b_hi);
  const Tensor p0_hi = product(b_lo).first;
  const Tensor sum = p1_lo.add(p0_hi);
  return p1_hi.add(sum.lt(p1_lo).cast(dtypes::uint32));
}

inline double random_fan(const std::vector<int64_t>& s, size_t from) {
  double p = 1;
  for (size_t i = from; i < s.size(); ++i) p *= static_cast<double>(s[i]);
  return p;
}

}  // namespace detail

/// Sets the seed of the random ops and restarts their sequence.
TINYT_INLINE void Tensor::manual_seed(uint64_t seed) {
  detail::RandomState& st = detail::random_state();
  std::lock_guard lock(st.mu);
  st.seed = seed, st.calls = 0;
}

/// Uniform in [0, 1).
TINYT_INLINE Tensor Tensor::rand(Shape shape, DType dtype, std::string device) {
  detail::random_require_float(dtype, "rand");
  const auto s = detail::checked_shape(shape, "rand");
  const auto words = detail::random_words(detail::product(s), detail::random_device(device));
  return detail::unit_float(words[0], dtype).cast(dtype).reshape(Shape(s));
}

/// Standard normal, by Box-Muller from the two words of each block.
TINYT_INLINE Tensor Tensor::randn(Shape shape, DType dtype, std::string device) {
  detail::random_require_float(dtype, "randn");
  const auto s = detail::checked_shape(shape, "randn");
  const auto words = detail::random_words(detail::product(s), detail::random_device(device));
  Tensor u1 = detail::unit_float(words[0], dtypes::float32),
         u2 = detail::unit_float(words[1], dtypes::float32);
  // 1 - u2 is in (0, 1], so the log is finite
  Tensor radius = u2.neg().add(1.0).log().mul(-2.0).sqrt();
  return u1.mul(2 * std::numbers::pi).cos().mul(radius).cast(dtype).reshape(Shape(s));
}

/// Integers uniform in [low, high): floor(u * (high - low)) + low for a 64-bit uniform u, in
/// exact integer arithmetic.
TINYT_INLINE Tensor Tensor::randint(Shape shape, int64_t low, int64_t high, DType dtype) {
  if (!dtype.is_int() || dtype.is_index())
    throw DTypeError(detail::cat("randint: needs an integer dtype, not ", dtype.name()));
  if (high <= low)
    throw Error(detail::cat("randint: high (", high, ") must be greater than low (", low, ")"));
  if (low < dtypes::min_int(dtype) || high - 1 > dtypes::max_int(dtype))
    throw Error(
        detail::cat("randint: the range [", low, ", ", high, ") does not fit ", dtype.name()));
  const auto s = detail::checked_shape(shape, "randint");
  const std::string dev = Device::default_device();
  const auto words = detail::random_words(detail::product(s), dev);
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  // unsigned addition wraps, so low + offset is exact for any int64 low
  if (!Device::holds_wide_types(dev)) {  // (a range this dtype fits is below 2^32: low + offset wraps in 32 bits)
    Tensor offset = detail::mulhi64_in_words(words[0], words[1], static_cast<uint32_t>(range));
    Tensor value = offset.add(Tensor(graph::const_(dtypes::uint32, static_cast<uint32_t>(low), dev))).bitcast(dtypes::int32);
    return value.cast(dtype).reshape(Shape(s));
  }
  Tensor offset = detail::mulhi64(words[0], words[1], range);
  Tensor value = offset.add(Tensor(graph::const_(dtypes::uint64, static_cast<uint64_t>(low), dev)))
                     .bitcast(dtypes::int64);
  return value.cast(dtype).reshape(Shape(s));
}

/// Uniform in [low, high).
TINYT_INLINE Tensor Tensor::uniform(Shape shape, double low, double high, DType dtype) {
  detail::random_require_float(dtype, "uniform");
  detail::random_require_finite(low, "low", "uniform");
  detail::random_require_finite(high, "high", "uniform");
  if (low > high)
    throw Error(detail::cat("uniform: low (", low, ") is greater than high (", high, ")"));
  detail::random_require_finite(high - low, "high - low", "uniform");
  const DType dt = detail::random_compute_dtype(dtype);
  Tensor u = rand(std::move(shape), dtypes::float32).cast(dt);
  const std::string dev = u.device();
  return u.mul(detail::random_float_const(high - low, dt, dev))
      .add(detail::random_float_const(low, dt, dev))
      .cast(dtype);
}

/// Normal with the given mean and standard deviation.
TINYT_INLINE Tensor Tensor::normal(Shape shape, double mean, double std, DType dtype) {
  detail::random_require_float(dtype, "normal");
  detail::random_require_finite(mean, "mean", "normal");
  detail::random_require_finite(std, "std", "normal");
  if (std < 0) throw Error(detail::cat("normal: std (", std, ") must not be negative"));
  const DType dt = detail::random_compute_dtype(dtype);
  Tensor z = randn(std::move(shape), dtypes::float32).cast(dt);
  const std::string dev = z.device();
  return z.mul(detail::random_float_const(std, dt, dev))
      .add(detail::random_float_const(mean, dt, dev))
      .cast(dtype);
}

TINYT_INLINE Tensor Tensor::rand_like(const Tensor& t) { return rand(t.shape(), t.dtype(), t.device()); }
TINYT_INLINE Tensor Tensor::randn_like(const Tensor& t) {
  return randn(t.shape(), t.dtype(), t.device());
}

// The initializers (tinygrad's): the fan-in is the product of every dim after the first. A shape
// with no elements has no values to scale, so a zero fan gives a zero bound rather than infinity.

/// Uniform in +-sqrt(3) * gain / sqrt(fan_in), gain = sqrt(2 / (1 + a^2)) (leaky ReLU slope a).
TINYT_INLINE Tensor Tensor::kaiming_uniform(Shape shape, double a) {
  const auto s = detail::checked_shape(shape, "kaiming_uniform");
  const double fan_in = detail::random_fan(s, 1);
  const double bound =
      fan_in > 0 ? std::sqrt(3.0) * std::sqrt(2.0 / (1 + a * a)) / std::sqrt(fan_in) : 0.0;
  return uniform(Shape(s), -bound, bound);
}

/// Normal with std gain / sqrt(fan_in), gain = sqrt(2 / (1 + a^2)).
TINYT_INLINE Tensor Tensor::kaiming_normal(Shape shape, double a) {
  const auto s = detail::checked_shape(shape, "kaiming_normal");
  const double fan_in = detail::random_fan(s, 1);
  const double std = fan_in > 0 ? std::sqrt(2.0 / (1 + a * a)) / std::sqrt(fan_in) : 0.0;
  return normal(Shape(s), 0.0, std);
}

/// Uniform in +-sqrt(6 / (shape[0] + fan_in)) (Glorot and Bengio).
TINYT_INLINE Tensor Tensor::glorot_uniform(Shape shape) {
  const auto s = detail::checked_shape(shape, "glorot_uniform");
  if (s.empty()) throw ShapeError("glorot_uniform: needs at least one dim, the shape is ()");
  const double fans = static_cast<double>(s[0]) + detail::random_fan(s, 1);
  return uniform(Shape(s), -1.0, 1.0).mul(fans > 0 ? std::sqrt(6.0 / fans) : 0.0);
}

/// Uniform in +-1 / sqrt(numel).
TINYT_INLINE Tensor Tensor::scaled_uniform(Shape shape) {
  const auto s = detail::checked_shape(shape, "scaled_uniform");
  const double n = detail::random_fan(s, 0);
  return uniform(Shape(s), -1.0, 1.0).mul(n > 0 ? 1.0 / std::sqrt(n) : 0.0);
}

}  // namespace tinyt::inline v0
