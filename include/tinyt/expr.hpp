// Expression templates: `(a * b + c).relu().reshape({2, -1})` (tensors, expressions, C++ scalars,
// every elementwise and movement op) is a type that holds its operands by value (so
// `auto e = a + b;` cannot dangle) and describes the computation; its shape is checked as it is
// built. Turning it into a Tensor lowers the whole expression to UOps in one pass, with no Tensor
// per intermediate. An expression converts implicitly to Tensor and has every Tensor method.
//
// One code path: the Tensor methods and the expressions both lower through the functions on
// Operands declared here (detail::ew, defined in ops/elementwise.hpp and ops/movement.hpp).
#pragma once

#include <tuple>

#include "tensor.hpp"

namespace tinyt::inline v0 {

namespace detail {
/// A value in the middle of lowering: a tensor-level UOp, whether it is a weak C++ scalar, and for
/// a C++ double its unrounded value (a float64 CONST): it takes the dtype of the tensor it meets,
/// float64 included, rounded once from the double.
struct Operand {
  UOp u;
  bool weak = false;
  UOp exact{};
  Operand() = default;
  Operand(UOp u_, bool weak_ = false, UOp exact_ = {}) : u(std::move(u_)), weak(weak_), exact(std::move(exact_)) {}  // NOLINT
  /// A C++ scalar, as `Tensor(v)` makes it: weak; double and float are float32, bool is bool,
  /// int64_t (and wider) int64, other integers int32.
  template <class T>
    requires std::is_arithmetic_v<T>
  Operand(T v) : Operand(scalar_operand(static_cast<std::conditional_t<std::is_floating_point_v<T>, double, T>>(v))) {}  // NOLINT

 private:
  static Operand scalar_operand(double v);
  static Operand scalar_operand(bool v);
  template <class I> static Operand scalar_operand(I v) {
    return integer_scalar(static_cast<int64_t>(v), sizeof(I) > 4 ? dtypes::int64 : dtypes::int32);
  }
  static Operand integer_scalar(int64_t v, DType dt);
};
Operand operand_of(const Tensor& t);
Tensor to_tensor(Operand o);
/// `a <op> b` with tinygrad's promotion (weak scalars adopt the other side's dtype where it
/// fits), NumPy broadcasting, and device checks.
Operand binary_operand(Ops op, Operand a, Operand b, const char* name, bool to_float);

/// Every elementwise and movement op on Operands: what the Tensor methods and the expressions
/// both lower through. Named as the Tensor methods, which document them.
namespace ew {
using O = const Operand&;
using Pairs = std::vector<std::pair<sint, sint>>;
// elementwise (ops/elementwise.hpp); the binary and unary ones by name lists, which the Tensor
// methods and the expressions are generated from too
#define TINYT_EW_BINARY(X)                                                                                  \
  X(add) X(sub) X(mul) X(div) X(floordiv) X(mod) X(pow) X(maximum) X(minimum) X(eq) X(ne) X(lt) X(le) X(gt) \
  X(ge) X(bitwise_and) X(bitwise_or) X(bitwise_xor) X(lshift) X(rshift) X(logical_and) X(logical_or)        \
  X(logical_xor)
#define TINYT_EW_DECLARE(name) Operand name(O a, O b);
TINYT_EW_BINARY(TINYT_EW_DECLARE)
#undef TINYT_EW_DECLARE
Operand where(O cond, O a, O b);
Operand clip(O x, O lo, O hi);
Operand lerp(O x, O end, O weight);
Operand masked_fill(O x, O mask, O value);
Operand cast(O x, DType dt);
Operand bitcast(O x, DType dt);
Operand elu(O x, double alpha);
Operand leaky_relu(O x, double slope);
Operand softplus(O x, double beta);
Operand hardtanh(O x, double lo, double hi);
#define TINYT_EW_UNARY(X)                                                                                       \
  X(neg) X(logical_not) X(bitwise_not) X(exp) X(exp2) X(log) X(log2) X(sqrt) X(rsqrt) X(reciprocal) X(square)   \
  X(abs) X(sign) X(sin) X(cos) X(tan) X(trunc) X(floor) X(ceil) X(round) X(isnan) X(isinf) X(isfinite) X(relu) \
  X(relu6) X(sigmoid) X(logsigmoid) X(tanh) X(gelu) X(quick_gelu) X(silu) X(mish) X(hardswish) X(hardsigmoid)  \
  X(erf) X(atan) X(asin) X(acos)
#define TINYT_EW_DECLARE(name) Operand name(O x);
TINYT_EW_UNARY(TINYT_EW_DECLARE)
#undef TINYT_EW_DECLARE
// movement (ops/movement.hpp): each has a shape function that checks its arguments and gives the
// result's shape, which expressions use as they are built
Operand reshape(O x, const Shape& shape);
Operand permute(O x, const std::vector<int>& order);
Operand expand(O x, const Shape& shape);
Operand pad(O x, const Pairs& padding, double value);
Operand shrink(O x, const Pairs& bounds);
Operand flip(O x, const std::vector<int>& axes);
Shape reshaped(const Shape& s, const Shape& shape);
Shape permuted(const Shape& s, const std::vector<int>& order);
Shape expanded(const Shape& s, const Shape& shape);
Shape padded(const Shape& s, const Pairs& padding, double value);
Shape shrunk(const Shape& s, const Pairs& bounds);
Shape flipped(const Shape& s, const std::vector<int>& axes);
// movement composed of the above: the shape function gives the reshape or permute to apply
std::vector<int> transposed_order(const Shape& s, int d0, int d1);
Shape flattened(const Shape& s, int start, int end);
Shape unflattened(const Shape& s, int dim, const Shape& sizes);
Shape squeezed(const Shape& s, int dim);
Shape squeezed_all(const Shape& s);
Shape unsqueezed(const Shape& s, int dim);
}  // namespace ew
}  // namespace detail

template <class T> struct is_expr : std::false_type {};
/// Tensors, expressions and C++ scalars: what an expression may hold.
template <class T>
concept ExprOperand = std::is_arithmetic_v<T> || std::is_base_of_v<Tensor, T> || is_expr<T>::value;

template <class Fn, class... Args> class Expr;

namespace detail {
/// How an expression holds an operand: tensors (a TensorRef too) as Tensor, the rest as they are.
template <class T> using stored_t = std::conditional_t<std::is_base_of_v<Tensor, T>, Tensor, T>;

template <class E> Operand to_operand(const E& e) {
  if constexpr (std::is_arithmetic_v<E>) return Operand(e);
  else if constexpr (std::is_base_of_v<Tensor, E>) return operand_of(e);
  else return e.operand();
}
template <class E> Shape shape_of(const E& e) {
  if constexpr (std::is_arithmetic_v<E>) return {};
  else return e.shape();
}
inline Shape broadcast_all(const char*, const Shape& a) { return a; }
inline Shape broadcast_all(const char* name, const Shape& a, const Shape& b) { return Tensor::broadcast_shape(a, b, name); }
inline Shape broadcast_all(const char* name, const Shape& a, const Shape& b, const Shape& c) {
  return Tensor::broadcast_shape(Tensor::broadcast_shape(a, b, name), c, name);
}

// The ops an expression holds are function pointers, so expressions that differ only in the op
// (`a * 2` and `a + 2`) have one type: `c ? a * 2 : a + 2` compiles, and there are fewer types to
// instantiate.
/// An elementwise op `f(operands..., params...)`: its operands broadcast together.
template <class F, class... P> struct Elementwise {
  F f;
  const char* name;  // for the error when the operands do not broadcast
  std::tuple<P...> params;
  template <class... S> Shape shape(const S&... s) const { return broadcast_all(name, s...); }
  template <class... X> Operand operator()(const X&... x) const {
    return std::apply([&](const P&... p) { return f(x..., p...); }, params);
  }
};
/// A movement op `f(operand, params...)` whose result has the shape `s(shape, params...)`.
template <class F, class S, class... P> struct Movement {
  F f;
  S s;
  std::tuple<P...> params;
  Shape shape(const Shape& in) const {
    return std::apply([&](const P&... p) { return s(in, p...); }, params);
  }
  Operand operator()(const Operand& x) const {
    return std::apply([&](const P&... p) { return f(x, p...); }, params);
  }
};
template <class F, class... P, class... A> auto elementwise(F f, const char* name, std::tuple<P...> params, const A&... a) {
  return Expr<Elementwise<F, P...>, stored_t<A>...>(Elementwise<F, P...>{f, name, std::move(params)}, stored_t<A>(a)...);
}
template <class F, class S, class... P, class A> auto movement(F f, S s, std::tuple<P...> params, const A& a) {
  return Expr<Movement<F, S, P...>, stored_t<A>>(Movement<F, S, P...>{f, s, std::move(params)}, stored_t<A>(a));
}
}  // namespace detail

/// The const Tensor methods an expression forwards to the Tensor it lowers to, as they are (the
/// ones whose arguments are never braced lists; the others are spelled out in ExprMethods).
#define TINYT_TENSOR_METHODS(X)                                                                             \
  X(numel) X(dtype) X(device) X(element_size) X(nbytes) X(cumsum) X(cumprod) X(argmax) X(argmin) X(logsumexp)          \
  X(softmax) X(log_softmax) X(contiguous) X(detach) X(to) X(chunk) X(gather) X(one_hot) X(matmul) X(dot)    \
  X(scatter) X(scatter_reduce) X(sort) X(topk) X(max_pool2d_with_indices)                                                     \
  X(linear) X(layernorm) X(batchnorm) X(dropout) X(scaled_dot_product_attention) X(cross_entropy)           \
  X(sparse_categorical_crossentropy) X(binary_crossentropy) X(binary_crossentropy_logits)                   \
  X(contiguous_backward)
/// The Tensor methods of an expression type D (which provides `operand()` and `shape()`): the
/// elementwise and movement ones give expressions, the rest the Tensor's results.
template <class D> class ExprMethods {
 public:
  operator Tensor() const { return tensor(); }  // NOLINT: expressions are tensors
  /// The expression lowered to UOps: one pass over the tree.
  Tensor tensor() const { return detail::to_tensor(self().operand()); }

#define TINYT_FORWARD(name) \
  template <class... A> decltype(auto) name(A&&... a) const { return tensor().name(std::forward<A>(a)...); }
  TINYT_TENSOR_METHODS(TINYT_FORWARD)
#undef TINYT_FORWARD
  // reductions and the ops that take braced lists (`e.sum({0, 1})`), with Tensor's signatures
#define TINYT_FORWARD_REDUCE(name)                                                                 \
  Tensor name() const { return tensor().name(); }                                                  \
  Tensor name(int axis, bool keepdim = false) const { return tensor().name(axis, keepdim); }       \
  Tensor name(std::vector<int> axes, bool keepdim = false) const { return tensor().name(std::move(axes), keepdim); }
  TINYT_FORWARD_REDUCE(sum)
  TINYT_FORWARD_REDUCE(prod)
  TINYT_FORWARD_REDUCE(max)
  TINYT_FORWARD_REDUCE(min)
  TINYT_FORWARD_REDUCE(mean)
#undef TINYT_FORWARD_REDUCE
  Tensor any() const { return tensor().any(); }
  Tensor any(int axis, bool keepdim = false) const { return tensor().any(axis, keepdim); }
  Tensor all() const { return tensor().all(); }
  Tensor all(int axis, bool keepdim = false) const { return tensor().all(axis, keepdim); }
#define TINYT_FORWARD_MOMENT(name)                                                                                  \
  Tensor name(bool keepdim = false, double correction = 1) const { return tensor().name(keepdim, correction); }     \
  Tensor name(int axis, bool keepdim = false, double correction = 1) const { return tensor().name(axis, keepdim, correction); } \
  Tensor name(std::vector<int> axes, bool keepdim = false, double correction = 1) const {                           \
    return tensor().name(std::move(axes), keepdim, correction);                                                     \
  }
  TINYT_FORWARD_MOMENT(var)
  TINYT_FORWARD_MOMENT(std)
#undef TINYT_FORWARD_MOMENT
  Tensor repeat(Shape repeats) const { return tensor().repeat(std::move(repeats)); }
  std::vector<Tensor> split(int64_t size, int dim = 0) const { return tensor().split(size, dim); }
  std::vector<Tensor> split(std::vector<int64_t> sizes, int dim = 0) const { return tensor().split(std::move(sizes), dim); }
  Tensor conv2d(const Tensor& w, const Tensor& b = {}, int64_t groups = 1, IntOrVec stride = 1, IntOrVec dilation = 1,
                IntOrVec padding = 0) const {
    return tensor().conv2d(w, b, groups, std::move(stride), std::move(dilation), std::move(padding));
  }
  Tensor conv_transpose2d(const Tensor& w, const Tensor& b = {}, int64_t groups = 1, IntOrVec stride = 1,
                          IntOrVec dilation = 1, IntOrVec padding = 0, IntOrVec output_padding = 0) const {
    return tensor().conv_transpose2d(w, b, groups, std::move(stride), std::move(dilation), std::move(padding),
                                     std::move(output_padding));
  }
  Tensor max_pool2d(IntOrVec kernel = 2, IntOrVec stride = {}, IntOrVec dilation = 1, IntOrVec padding = 0,
                    bool ceil_mode = false) const {
    return tensor().max_pool2d(std::move(kernel), std::move(stride), std::move(dilation), std::move(padding), ceil_mode);
  }
  Tensor avg_pool2d(IntOrVec kernel = 2, IntOrVec stride = {}, IntOrVec dilation = 1, IntOrVec padding = 0,
                    bool count_include_pad = true, bool ceil_mode = false) const {
    return tensor().avg_pool2d(std::move(kernel), std::move(stride), std::move(dilation), std::move(padding), count_include_pad,
                               ceil_mode);
  }
  Tensor interpolate(Shape size, std::string_view mode = "linear", bool align_corners = false) const {
    return tensor().interpolate(std::move(size), mode, align_corners);
  }
  Tensor interpolate(Shape size, const Interpolation& how) const { return tensor().interpolate(std::move(size), how); }
  Tensor pad(std::vector<std::pair<sint, sint>> padding, std::string_view mode, double value = 0.0) const {
    return tensor().pad(std::move(padding), mode, value);
  }

  // -- elementwise: expressions ---------------------------------------------------------------
#define TINYT_EXPR_UNARY(name) \
  auto name() const { return detail::elementwise(&detail::ew::name, #name, std::tuple<>{}, self()); }
  TINYT_EW_UNARY(TINYT_EXPR_UNARY)
#undef TINYT_EXPR_UNARY
#define TINYT_EXPR_BINARY(name) \
  template <ExprOperand B> auto name(const B& b) const { return detail::elementwise(&detail::ew::name, #name, std::tuple<>{}, self(), b); }
  TINYT_EW_BINARY(TINYT_EXPR_BINARY)
#undef TINYT_EXPR_BINARY
  template <ExprOperand A, ExprOperand B> auto where(const A& a, const B& b) const {
    return detail::elementwise(&detail::ew::where, "where", std::tuple<>{}, self(), a, b);
  }
  template <ExprOperand A, ExprOperand B> auto clip(const A& lo, const B& hi) const {
    return detail::elementwise(&detail::ew::clip, "clip", std::tuple<>{}, self(), lo, hi);
  }
  template <ExprOperand A, ExprOperand B> auto lerp(const A& end, const B& weight) const {
    return detail::elementwise(&detail::ew::lerp, "lerp", std::tuple<>{}, self(), end, weight);
  }
  template <ExprOperand A, ExprOperand B> auto masked_fill(const A& mask, const B& value) const {
    return detail::elementwise(&detail::ew::masked_fill, "masked_fill", std::tuple<>{}, self(), mask, value);
  }
  auto cast(DType dt) const { return detail::elementwise(&detail::ew::cast, "cast", std::tuple{dt}, self()); }
  auto bitcast(DType dt) const { return detail::elementwise(&detail::ew::bitcast, "bitcast", std::tuple{dt}, self()); }
  auto float_() const { return cast(dtypes::float32); }
  auto half() const { return cast(dtypes::float16); }
  auto int_() const { return cast(dtypes::int32); }
  auto bool_() const { return cast(dtypes::bool_); }
  auto elu(double alpha = 1.0) const { return detail::elementwise(&detail::ew::elu, "elu", std::tuple{alpha}, self()); }
  auto leaky_relu(double slope = 0.01) const {
    return detail::elementwise(&detail::ew::leaky_relu, "leaky_relu", std::tuple{slope}, self());
  }
  auto softplus(double beta = 1.0) const { return detail::elementwise(&detail::ew::softplus, "softplus", std::tuple{beta}, self()); }
  auto hardtanh(double lo = -1.0, double hi = 1.0) const {
    return detail::elementwise(&detail::ew::hardtanh, "hardtanh", std::tuple{lo, hi}, self());
  }

  // -- movement: expressions ------------------------------------------------------------------
  size_t ndim() const { return self().shape().size(); }
  auto reshape(Shape s) const { return detail::movement(&detail::ew::reshape, &detail::ew::reshaped, std::tuple{std::move(s)}, self()); }
  auto view(Shape s) const { return reshape(std::move(s)); }
  auto permute(std::vector<int> order) const {
    return detail::movement(&detail::ew::permute, &detail::ew::permuted, std::tuple{std::move(order)}, self());
  }
  auto expand(Shape s) const { return detail::movement(&detail::ew::expand, &detail::ew::expanded, std::tuple{std::move(s)}, self()); }
  auto pad(std::vector<std::pair<sint, sint>> padding, double value = 0.0) const {
    return detail::movement(&detail::ew::pad, &detail::ew::padded, std::tuple{std::move(padding), value}, self());
  }
  auto shrink(std::vector<std::pair<sint, sint>> bounds) const {
    return detail::movement(&detail::ew::shrink, &detail::ew::shrunk, std::tuple{std::move(bounds)}, self());
  }
  auto flip(std::vector<int> axes) const { return detail::movement(&detail::ew::flip, &detail::ew::flipped, std::tuple{std::move(axes)}, self()); }
  auto flip(int axis) const { return flip(std::vector<int>{axis}); }
  auto transpose(int d0 = 1, int d1 = 0) const { return permute(detail::ew::transposed_order(self().shape(), d0, d1)); }
  auto T() const { return transpose(); }
  auto flatten(int start = 0, int end = -1) const { return reshape(detail::ew::flattened(self().shape(), start, end)); }
  auto unflatten(int dim, Shape sizes) const { return reshape(detail::ew::unflattened(self().shape(), dim, sizes)); }
  auto squeeze(int dim) const { return reshape(detail::ew::squeezed(self().shape(), dim)); }
  auto squeeze() const { return reshape(detail::ew::squeezed_all(self().shape())); }
  auto unsqueeze(int dim) const { return reshape(detail::ew::unsqueezed(self().shape(), dim)); }

  // -- reading, gradients ---------------------------------------------------------------------
  template <class Elem> std::vector<Elem> to_vector() const { return tensor().template to_vector<Elem>(); }
  template <class Elem> Elem item() const { return tensor().template item<Elem>(); }
  Tensor realize() const { return tensor().realize(); }
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets, const Tensor& seed = {}) const {
    return tensor().gradient(targets, seed);
  }
  /// backward() of the expression's value, which is returned (an expression has no grad of its own).
  Tensor backward(const Tensor& seed = {}) const {
    Tensor t = tensor();
    t.backward(seed);
    return t;
  }
  TensorRef operator[](std::initializer_list<Index> index) const { return tensor()[index]; }
  friend std::ostream& operator<<(std::ostream& os, const ExprMethods& e) { return os << e.tensor(); }

 private:
  const D& self() const { return static_cast<const D&>(*this); }
};

/// One elementwise or movement op over its operands (tensors, scalars, other expressions),
/// lowered by `Fn` when the expression becomes a Tensor. The shape is known, and checked, when
/// the expression is built.
template <class Fn, class... Args> class Expr : public ExprMethods<Expr<Fn, Args...>> {
 public:
  explicit Expr(Fn fn, Args... args)
      : fn_(std::move(fn)), args_(std::move(args)...),
        shape_(std::apply([this](const Args&... a) { return fn_.shape(detail::shape_of(a)...); }, args_)) {}

  const Shape& shape() const { return shape_; }
  /// The expression as a UOp operand: its operands lowered, then this op.
  detail::Operand operand() const {
    return std::apply([this](const Args&... a) { return fn_(detail::to_operand(a)...); }, args_);
  }

 private:
  Fn fn_;
  std::tuple<Args...> args_;
  Shape shape_;
};
template <class Fn, class... Args> struct is_expr<Expr<Fn, Args...>> : std::true_type {};

// -- operators: expressions over tensors, expressions and C++ scalars ---------------------------
#define TINYT_EXPR_OPERATOR(sym, name)                                     \
  template <ExprOperand A, ExprOperand B>                                  \
    requires(!std::is_arithmetic_v<A> || !std::is_arithmetic_v<B>)        \
  auto operator sym(const A& a, const B& b) {                              \
    return detail::elementwise(&detail::ew::name, #name, std::tuple<>{}, a, b); \
  }
TINYT_EXPR_OPERATOR(+, add)
TINYT_EXPR_OPERATOR(-, sub)
TINYT_EXPR_OPERATOR(*, mul)
TINYT_EXPR_OPERATOR(/, div)
TINYT_EXPR_OPERATOR(%, mod)
TINYT_EXPR_OPERATOR(<, lt)
TINYT_EXPR_OPERATOR(<=, le)
TINYT_EXPR_OPERATOR(>, gt)
TINYT_EXPR_OPERATOR(>=, ge)
TINYT_EXPR_OPERATOR(==, eq)
TINYT_EXPR_OPERATOR(!=, ne)
TINYT_EXPR_OPERATOR(&, bitwise_and)
TINYT_EXPR_OPERATOR(|, bitwise_or)
TINYT_EXPR_OPERATOR(^, bitwise_xor)
TINYT_EXPR_OPERATOR(<<, lshift)
TINYT_EXPR_OPERATOR(>>, rshift)
#undef TINYT_EXPR_OPERATOR
#define TINYT_EXPR_PREFIX(sym, name)                                        \
  template <ExprOperand A>                                                  \
    requires(!std::is_arithmetic_v<A>)                                      \
  auto operator sym(const A& a) {                                           \
    return detail::elementwise(&detail::ew::name, #name, std::tuple<>{}, a); \
  }
TINYT_EXPR_PREFIX(-, neg)
TINYT_EXPR_PREFIX(~, bitwise_not)
TINYT_EXPR_PREFIX(!, logical_not)
#undef TINYT_EXPR_PREFIX

}  // namespace tinyt::inline v0
