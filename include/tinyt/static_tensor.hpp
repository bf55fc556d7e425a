// Tensors whose shape is part of their type, for code that knows its shapes when it is compiled.
// `StaticTensor<2, 3>` is a Tensor (it converts to one, and every Tensor method works on it); the
// elementwise operators and matmul between two static tensors check the shapes at compile time
// and give a static tensor of the result's shape. A mismatch is a static_assert: the diagnostic
// is one sentence and the check it failed, which names both shapes (`StaticShape<2, 3>`).
#pragma once

#include <array>
#include <boost/hana/integral_constant.hpp>
#include <boost/hana/tuple.hpp>
#include <utility>

#include "expr.hpp"

namespace tinyt::inline v0 {

/// A shape known at compile time.
template <int64_t... Dims> struct StaticShape {
  static constexpr size_t ndim = sizeof...(Dims);
  /// The dims as a Boost.Hana tuple of integral constants, for compile-time algorithms.
  static constexpr auto dims = boost::hana::tuple_c<int64_t, Dims...>;
  static constexpr std::array<int64_t, ndim> array{Dims...};
  static Shape shape() { return Shape{std::vector<int64_t>{Dims...}}; }
};

namespace detail::static_shapes {
/// Dims computed at compile time, and whether the op they come from fits.
template <size_t N> struct Dims {
  std::array<int64_t, N> d{};
  size_t n = 0;
  bool fits = true;
};
// NumPy broadcasting, aligned from the right: equal dims or a 1.
template <size_t A, size_t B> constexpr Dims<(A > B ? A : B)> broadcast(const std::array<int64_t, A>& a, const std::array<int64_t, B>& b) {
  constexpr size_t n = A > B ? A : B;
  Dims<n> r;
  r.n = n;
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - A ? 1 : a[i - (n - A)], y = i < n - B ? 1 : b[i - (n - B)];
    r.fits &= x == y || x == 1 || y == 1;
    r.d[i] = x == 1 ? y : x;
  }
  return r;
}
// matmul as NumPy: (..., m, k) @ (..., k, n), batch dims broadcast; a 1-D operand is a vector.
template <size_t A, size_t B> constexpr Dims<(A > B ? A : B)> matmul(const std::array<int64_t, A>& a, const std::array<int64_t, B>& b) {
  Dims<(A > B ? A : B)> r;
  if constexpr (A == 0 || B == 0) {
    r.fits = false;
  } else {
    r.fits = a[A - 1] == b[B >= 2 ? B - 2 : 0];
    std::array<int64_t, (A > 2 ? A - 2 : 0)> batch_a{};
    std::array<int64_t, (B > 2 ? B - 2 : 0)> batch_b{};
    for (size_t i = 0; i < batch_a.size(); ++i) batch_a[i] = a[i];
    for (size_t i = 0; i < batch_b.size(); ++i) batch_b[i] = b[i];
    const auto batch = broadcast(batch_a, batch_b);
    r.fits &= batch.fits;
    for (size_t i = 0; i < batch.n; ++i) r.d[r.n++] = batch.d[i];
    if (A >= 2) r.d[r.n++] = a[A - 2];
    if (B >= 2) r.d[r.n++] = b[B - 1];
  }
  return r;
}
// The StaticShape of computed dims.
template <auto& dims, size_t... I> StaticShape<dims.d[I]...> shape_of(std::index_sequence<I...>);
}  // namespace detail::static_shapes

/// Whether two static shapes broadcast together (NumPy rules).
template <class L, class R> inline constexpr bool static_broadcastable = detail::static_shapes::broadcast(L::array, R::array).fits;
/// Whether `L @ R` fits: the left's last dim equals the right's second-to-last, batch dims broadcast.
template <class L, class R> inline constexpr bool static_matmul_fits = detail::static_shapes::matmul(L::array, R::array).fits;

namespace detail::static_shapes {
template <class L, class R> struct Broadcast {
  static constexpr auto dims = broadcast(L::array, R::array);
  using type = decltype(shape_of<dims>(std::make_index_sequence<dims.n>{}));
};
template <class L, class R> struct Matmul {
  static constexpr auto dims = matmul(L::array, R::array);
  using type = decltype(shape_of<dims>(std::make_index_sequence<dims.n>{}));
};
}  // namespace detail::static_shapes

template <int64_t... Dims> class StaticTensor;
namespace detail {
template <class S> struct static_tensor_of;
template <int64_t... D> struct static_tensor_of<StaticShape<D...>> {
  using type = StaticTensor<D...>;
};
}  // namespace detail

/// A tensor whose shape `(Dims...)` is part of its type. Convert a Tensor with
/// `StaticTensor<2, 3>(t)` (checked at run time); a StaticTensor is a Tensor everywhere.
template <int64_t... Dims> class StaticTensor : public Tensor {
  static_assert(((Dims >= 0) && ...), "StaticTensor: every dim of a static shape must be zero or more");

 public:
  using static_shape = StaticShape<Dims...>;

  /// The empty handle.
  StaticTensor() = default;
  /// `t` as a static tensor: a ShapeError naming both shapes when its shape is not (Dims...).
  explicit StaticTensor(Tensor t) : Tensor(std::move(t)) {
    if (defined() && !(shape() == static_shape::shape()))
      throw ShapeError(detail::cat("StaticTensor: a tensor of shape ", shape(), " is not ", static_shape::shape()));
  }
  /// An expression's value as a static tensor (checked as above).
  template <class E>
    requires is_expr<E>::value
  explicit StaticTensor(const E& e) : StaticTensor(Tensor(e)) {}

  static StaticTensor zeros(DType dtype = dtypes::float32) { return StaticTensor(Tensor::zeros(static_shape::shape(), dtype)); }
  static StaticTensor ones(DType dtype = dtypes::float32) { return StaticTensor(Tensor::ones(static_shape::shape(), dtype)); }
  template <class V> static StaticTensor full(V value) { return StaticTensor(Tensor::full(static_shape::shape(), value)); }
  static StaticTensor rand() { return StaticTensor(Tensor::rand(static_shape::shape())); }
  static StaticTensor randn() { return StaticTensor(Tensor::randn(static_shape::shape())); }
  /// The elements, row-major; a ShapeError when there are not exactly (Dims * ...) of them.
  template <class T> static StaticTensor from_vector(const std::vector<T>& data) {
    return StaticTensor(Tensor::from_vector(data, static_shape::shape()));
  }

  using Tensor::matmul;
  /// Matrix product with a static tensor: the shapes are checked when compiled.
  template <int64_t... W> auto matmul(const StaticTensor<W...>& w) const;
  template <int64_t... W> auto dot(const StaticTensor<W...>& w) const { return matmul(w); }
  using Tensor::dot;
};

/// `a @ b` of static tensors.
template <int64_t... A, int64_t... B> auto matmul(const StaticTensor<A...>& a, const StaticTensor<B...>& b) {
  using L = StaticShape<A...>;
  using R = StaticShape<B...>;
  static_assert(static_matmul_fits<L, R>,
                "matmul of static tensors: the left's last dim must equal the right's second-to-last and batch dims must broadcast");
  using Result = typename detail::static_tensor_of<typename detail::static_shapes::Matmul<L, R>::type>::type;
  return Result(a.Tensor::matmul(b));
}
template <int64_t... Dims>
template <int64_t... W>
auto StaticTensor<Dims...>::matmul(const StaticTensor<W...>& w) const {
  return tinyt::matmul(*this, w);
}

// Elementwise operators between two static tensors: checked when compiled, the result a static
// tensor of the broadcast shape. With a Tensor, an expression or a scalar they are the usual
// expressions (checked at run time).
#define TINYT_STATIC_OPERATOR(sym, name)                                                                              \
  template <int64_t... A, int64_t... B> auto operator sym(const StaticTensor<A...>& a, const StaticTensor<B...>& b) { \
    using L = StaticShape<A...>;                                                                                      \
    using R = StaticShape<B...>;                                                                                      \
    static_assert(static_broadcastable<L, R>, #name " of static tensors: the shapes must broadcast (each pair of dims, from the right, equal or 1)"); \
    using Result = typename detail::static_tensor_of<typename detail::static_shapes::Broadcast<L, R>::type>::type;    \
    return Result(static_cast<const Tensor&>(a).name(b));                                                             \
  }
TINYT_STATIC_OPERATOR(+, add)
TINYT_STATIC_OPERATOR(-, sub)
TINYT_STATIC_OPERATOR(*, mul)
TINYT_STATIC_OPERATOR(/, div)
#undef TINYT_STATIC_OPERATOR

}  // namespace tinyt::inline v0
