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
}  // namespace detail

namespace detail {
// The same tensor made on each of several devices (replicated): `make(device)` for each.
template <class Make> Tensor on_each(const std::string& devices, Make make) {
  std::vector<UOp> parts;
  for (const std::string& d : Device::split(devices)) parts.push_back(make(d).uop());
  const DType dtype = parts[0].dtype();
  return Tensor(UOp(Ops::MULTI, dtype, std::move(parts), -1));
}
}  // namespace detail

TINYT_INLINE Tensor Tensor::from_elements(const void* data, size_t count, const Shape& shape, DType dtype,
                                          std::string device) {
  const auto s = detail::checked_shape(shape, "from_vector");
  if (detail::product(s) != static_cast<int64_t>(count))
    throw ShapeError(detail::cat("from_vector: ", count, " values do not fill shape ", shape));
  return from_blob(data, shape, dtype, std::move(device));
}
TINYT_INLINE Tensor Tensor::from_blob(const void* ptr, Shape shape, DType dtype, std::string device) {
  const auto s = detail::checked_shape(shape, "from_blob");
  const int64_t n = detail::product(s);
  if (!ptr && n) throw Error("from_blob: null data pointer");
  if (const std::string list = device.empty() ? "" : Device::canonicalize(device); Device::is_multi(list))
    return detail::on_each(list, [&](const std::string& d) { return from_blob(ptr, s, dtype, d); });
  const std::string dev = device.empty() ? Device::default_device() : Device::canonicalize(device);
  Device::require_dtype(dev, dtype, "from_blob");
  UOp buf = graph::new_buffer(dev, n, dtype);
  graph::buffer_of(buf)->copyin(ptr, static_cast<size_t>(n * dtype.itemsize()));
  return Tensor(graph::reshape(buf, s));
}

TINYT_INLINE Tensor Tensor::empty(Shape shape, DType dtype, std::string device) {
  const auto s = detail::checked_shape(shape, "empty");
  if (const std::string list = device.empty() ? "" : Device::canonicalize(device); Device::is_multi(list))
    return detail::on_each(list, [&](const std::string& d) { return empty(s, dtype, d); });
  const std::string dev = device.empty() ? Device::default_device() : Device::canonicalize(device);
  Device::require_dtype(dev, dtype, "empty");
  return Tensor(graph::reshape(graph::new_buffer(dev, detail::product(s), dtype), s));
}
namespace detail {
template <class V> Tensor full_of(const Shape& shape, V value, DType dtype, const std::string& device) {
  for (const sint& d : shape)
    if (d.vmin() < 0) throw ShapeError(cat("full: negative size in shape ", shape));
  const std::string dev = device.empty() ? Device::default_device() : Device::canonicalize(device);
  Device::require_dtype(dev, dtype, "full");
  UOp c = graph::const_(dtype, value, dev);
  return Tensor(graph::expand(graph::reshape(c, std::vector<int64_t>(shape.size(), 1)), shape));
}
}  // namespace detail
TINYT_INLINE Tensor Tensor::full_value(const Shape& shape, double value, DType dtype, const std::string& device) {
  return detail::full_of(shape, value, dtype, device);
}
TINYT_INLINE Tensor Tensor::full_value(const Shape& shape, i128 value, DType dtype, const std::string& device) {
  return detail::full_of(shape, value, dtype, device);
}
TINYT_INLINE Tensor Tensor::zeros(Shape shape, DType dtype, std::string device) { return full(std::move(shape), 0, dtype, std::move(device)); }
TINYT_INLINE Tensor Tensor::ones(Shape shape, DType dtype, std::string device) { return full(std::move(shape), 1, dtype, std::move(device)); }
TINYT_INLINE Tensor Tensor::zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device()); }
TINYT_INLINE Tensor Tensor::ones_like(const Tensor& t) { return ones(t.shape(), t.dtype(), t.device()); }


TINYT_INLINE Tensor Tensor::arange_values(double start, double step, sint count, DType dtype, const std::string& device) {
  // a symbolic count: the first `count` of the longest arange it can be (one kernel for all)
  if (!count.is_int()) return arange_values(start, step, count.vmax(), dtype, device).shrink({{0, count}});
  // start + step * i: i counted by a cumulative sum of ones, as tinygrad does (in dtype: an int64
  // cumsum cast back to int32 would hide the count from the reduce collapse)
  const std::string dev = device.empty() ? Device::default_device() : Device::canonicalize(device);
  return detail::running_reduce(Tensor::full(Shape{1, count}, step, dtype, dev), Ops::ADD)
      .reshape({count})
      .add(Tensor(graph::const_(dtype, start - step, dev)));
}

TINYT_INLINE Tensor Tensor::eye(int64_t n, int64_t m, DType dtype) {
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

TINYT_INLINE std::ostream& operator<<(std::ostream& os, const Tensor& t) {
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
