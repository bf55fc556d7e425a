// Creation: tensors from host data, constants, ranges, and printing.
#pragma once

#include <iomanip>
#include <sstream>

#include "reduce.hpp"

namespace tinyt::inline v0 {

namespace detail {
inline std::vector<int64_t> checked_shape(const Shape& shape, const char* op) {
  std::vector<int64_t> s = shape.to_vector();
  for (int64_t d : s)
    if (d < 0) throw ShapeError(cat(op, ": negative size in shape ", shape));
  return s;
}
inline int64_t product(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
// A dtype for a C++ value used as a fill: integers give the default int, floats the default float.
template <class V> constexpr DType default_dtype_of() {
  if constexpr (std::is_same_v<V, bool>) return dtypes::bool_;
  else if constexpr (std::is_integral_v<V>) return dtypes::default_int;
  else return dtypes::default_float;
}
}  // namespace detail

inline Tensor Tensor::from_blob(const void* ptr, Shape shape, DType dtype, std::string device) {
  const auto s = detail::checked_shape(shape, "from_blob");
  const int64_t n = detail::product(s);
  if (!ptr && n) throw Error("from_blob: null data pointer");
  UOp buf = graph::new_buffer(device.empty() ? Device::default_device() : device, n, dtype);
  graph::buffer_of(buf)->copyin(ptr, static_cast<size_t>(n * dtype.itemsize()));
  return Tensor(graph::reshape(buf, s));
}
template <class Elem> Tensor Tensor::from_vector(const std::vector<Elem>& data, Shape shape, std::string device) {
  static_assert(has_dtype_v<Elem>, "Tensor::from_vector: the element type has no tinyt dtype");
  const auto s = detail::checked_shape(shape, "from_vector");
  if (detail::product(s) != static_cast<int64_t>(data.size()))
    throw ShapeError(detail::cat("from_vector: ", data.size(), " values do not fill shape ", shape));
  if constexpr (std::is_same_v<Elem, bool>) {  // vector<bool> has no data()
    std::vector<uint8_t> bytes(data.begin(), data.end());
    return from_blob(bytes.data(), shape, dtypes::bool_, std::move(device));
  } else {
    return from_blob(data.data(), shape, dtype_of<Elem>(), std::move(device));
  }
}
template <class Elem> Tensor Tensor::from_vector(const std::vector<Elem>& data) {
  return from_vector(data, Shape{static_cast<int64_t>(data.size())});
}

inline Tensor Tensor::empty(Shape shape, DType dtype, std::string device) {
  const auto s = detail::checked_shape(shape, "empty");
  return Tensor(graph::reshape(graph::new_buffer(device.empty() ? Device::default_device() : device, detail::product(s), dtype), s));
}
template <class V> Tensor Tensor::full(Shape shape, V value, DType dtype, std::string device) {
  const auto s = detail::checked_shape(shape, "full");
  const std::string dev = device.empty() ? Device::default_device() : Device::canonicalize(device);
  UOp c = graph::const_(dtype, value, dev);
  return Tensor(graph::expand(graph::reshape(c, std::vector<int64_t>(s.size(), 1)), s));
}
template <class V> Tensor Tensor::full(Shape shape, V value) {
  return full(std::move(shape), value, detail::default_dtype_of<V>());
}
inline Tensor Tensor::zeros(Shape shape, DType dtype, std::string device) { return full(std::move(shape), 0, dtype, std::move(device)); }
inline Tensor Tensor::ones(Shape shape, DType dtype, std::string device) { return full(std::move(shape), 1, dtype, std::move(device)); }
inline Tensor Tensor::zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device()); }
inline Tensor Tensor::ones_like(const Tensor& t) { return ones(t.shape(), t.dtype(), t.device()); }
template <class V> Tensor Tensor::full_like(const Tensor& t, V value) { return full(t.shape(), value, t.dtype(), t.device()); }

template <class A, class B, class C> Tensor Tensor::arange(A start, B stop, C step) {
  static_assert(std::is_arithmetic_v<A> && std::is_arithmetic_v<B> && std::is_arithmetic_v<C>, "arange takes numbers");
  constexpr bool all_int = std::is_integral_v<A> && std::is_integral_v<B> && std::is_integral_v<C>;
  const DType dt = all_int ? dtypes::default_int : dtypes::default_float;
  if (step == 0) throw Error("arange: step must not be 0");
  const double n = std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step));
  const int64_t count = n > 0 ? static_cast<int64_t>(n) : 0;
  // start + step * i: i counted by a cumulative sum of ones, as tinygrad does (in dt: an int64
  // cumsum cast back to int32 would hide the count from the reduce collapse)
  return detail::running_sums(Tensor::full(Shape{1, count}, step, dt)).reshape({count}).add(Tensor(graph::const_(dt, static_cast<double>(start) - static_cast<double>(step), Device::default_device())));
}
template <class A> Tensor Tensor::arange(A stop) { return arange(A{0}, stop, 1); }

inline Tensor Tensor::eye(int64_t n, int64_t m, DType dtype) {
  if (m < 0) m = n;
  if (n < 0) throw ShapeError(detail::cat("eye: negative size ", n));
  // ones on a diagonal: a (n, m+1) view of a flat (n*(m+1)) pattern whose first column is 1
  Tensor row = Tensor::full(Shape{1}, 1, dtype).pad({{0, m}});
  return row.expand({n, m + 1}).flatten().shrink({{0, n * m}}).reshape({n, m});
}

// -- printing ----------------------------------------------------------------------------------
namespace detail {
template <class T> void print_element(std::ostream& os, const T& x) {
  if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, half_t> || std::is_same_v<T, bfloat16_t>) {
    // NumPy's style: integral floats keep a trailing point ("2.")
    const double d = static_cast<double>(static_cast<float>(x));
    if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 1e16) os << static_cast<long long>(d) << '.';
    else os << d;
  } else {
    os << +x;
  }
}
template <class T> void print_values(std::ostream& os, const std::vector<T>& v, const std::vector<int64_t>& shape) {
  if (shape.empty()) {
    print_element(os, static_cast<T>(v[0]));
    return;
  }
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * shape[i];
  std::function<void(size_t, int64_t)> rec = [&](size_t dim, int64_t offset) {
    os << '[';
    for (int64_t i = 0; i < shape[dim]; ++i) {
      if (i) os << (dim + 1 == shape.size() ? " " : "\n" + std::string(dim + 1, ' '));
      if (dim + 1 == shape.size()) print_element(os, static_cast<T>(v[static_cast<size_t>(offset + i)]));
      else rec(dim + 1, offset + i * strides[dim]);
    }
    os << ']';
  };
  rec(0, 0);
}
}  // namespace detail

inline std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "Tensor()";
  const auto s = t.cshape();
  os << "Tensor(";
  switch (t.dtype().scalar_type()) {
    case ScalarType::bool_: detail::print_values(os, t.to_vector<bool>(), s); break;
    case ScalarType::int8: detail::print_values(os, t.to_vector<int8_t>(), s); break;
    case ScalarType::uint8: detail::print_values(os, t.to_vector<uint8_t>(), s); break;
    case ScalarType::int16: detail::print_values(os, t.to_vector<int16_t>(), s); break;
    case ScalarType::uint16: detail::print_values(os, t.to_vector<uint16_t>(), s); break;
    case ScalarType::int32: detail::print_values(os, t.to_vector<int32_t>(), s); break;
    case ScalarType::uint32: detail::print_values(os, t.to_vector<uint32_t>(), s); break;
    case ScalarType::int64: detail::print_values(os, t.to_vector<int64_t>(), s); break;
    case ScalarType::uint64: detail::print_values(os, t.to_vector<uint64_t>(), s); break;
    case ScalarType::float16: detail::print_values(os, t.to_vector<half_t>(), s); break;
    case ScalarType::bfloat16: detail::print_values(os, t.to_vector<bfloat16_t>(), s); break;
    case ScalarType::float32: detail::print_values(os, t.to_vector<float>(), s); break;
    case ScalarType::float64: detail::print_values(os, t.to_vector<double>(), s); break;
    default: os << "?";
  }
  return os << ", dtype=" << t.dtype().name() << ", device=" << t.device() << ")";
}

}  // namespace tinyt::inline v0
