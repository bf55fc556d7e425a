// Expression templates: `a * b + c` (tensors, expressions, C++ scalars) is a type that holds its
// operands by value (so `auto e = a + b;` cannot dangle) and describes the computation; turning
// it into a Tensor lowers the whole expression to UOps in one pass, with no Tensor per
// intermediate. An expression converts implicitly to Tensor and has every Tensor method.
#pragma once

#include "tensor.hpp"

namespace tinyt::inline v0 {

namespace detail {
/// A value in the middle of lowering an expression: a tensor-level UOp, whether it is a weak C++
/// scalar, and for a C++ double its unrounded value (a float64 CONST): it takes the dtype of the
/// tensor it meets, float64 included, rounded once from the double.
struct Operand {
  UOp u;
  bool weak = false;
  UOp exact{};
};
// the steps of lowering, defined with the elementwise ops (ops/elementwise.hpp)
Operand operand_of(const Tensor& t);
Tensor to_tensor(Operand o);
/// `a <op> b` with tinygrad's promotion (weak scalars adopt the other side's dtype where it
/// fits), NumPy broadcasting, and device checks.
Operand binary_operand(Ops op, Operand a, Operand b, const char* name, bool to_float);
/// -x as x * -1 (a constant is negated now; the weak flag stays).
Operand negate(const Operand& x);
}  // namespace detail

/// Every const Tensor method an expression forwards (names only; overloads come along).
#define TINYT_TENSOR_METHODS(X)                                                                        \
  X(shape) X(ndim) X(numel) X(dtype) X(device) X(element_size) X(nbytes) X(add) X(sub) X(mul) X(div)   \
  X(floordiv) X(mod) X(pow) X(maximum) X(minimum) X(where) X(eq) X(ne) X(lt) X(le) X(gt) X(ge)         \
  X(bitwise_and) X(bitwise_or) X(bitwise_xor) X(lshift) X(rshift) X(logical_and) X(logical_or)         \
  X(logical_xor) X(logical_not) X(bitwise_not) X(neg) X(cast) X(bitcast) X(float_) X(half) X(int_)     \
  X(bool_) X(exp) X(exp2) X(log) X(log2) X(sqrt) X(rsqrt) X(reciprocal) X(square) X(abs) X(sign) X(sin) \
  X(cos) X(tan) X(trunc) X(floor) X(ceil) X(round) X(isnan) X(isinf) X(isfinite) X(relu) X(relu6)      \
  X(sigmoid) X(logsigmoid) X(tanh) X(gelu) X(quick_gelu) X(silu) X(elu) X(leaky_relu) X(softplus)      \
  X(mish) X(hardswish) X(hardsigmoid) X(hardtanh) X(erf) X(clip) X(lerp) X(masked_fill) X(sum) X(prod) \
  X(max) X(min) X(mean) X(any) X(all) X(cumsum) X(var) X(std) X(argmax) X(argmin) X(logsumexp)         \
  X(softmax) X(log_softmax) X(reshape) X(view) X(permute) X(expand) X(pad) X(shrink) X(flip)           \
  X(transpose) X(T) X(flatten) X(unflatten) X(squeeze) X(unsqueeze) X(contiguous) X(detach) X(repeat)  \
  X(split) X(chunk) X(gather) X(one_hot) X(matmul) X(dot) X(linear) X(conv2d) X(conv_transpose2d)      \
  X(max_pool2d) X(avg_pool2d) X(layernorm) X(batchnorm) X(dropout) X(scaled_dot_product_attention)     \
  X(cross_entropy) X(sparse_categorical_crossentropy) X(binary_crossentropy)                           \
  X(binary_crossentropy_logits) X(contiguous_backward)

/// The Tensor methods of an expression type D (which provides `Tensor tensor() const`).
template <class D> class ExprMethods {
 public:
  operator Tensor() const { return self().tensor(); }  // NOLINT: expressions are tensors
#define TINYT_FORWARD(name) \
  template <class... A> decltype(auto) name(A&&... a) const { return self().tensor().name(std::forward<A>(a)...); }
  TINYT_TENSOR_METHODS(TINYT_FORWARD)
#undef TINYT_FORWARD
  template <class Elem> std::vector<Elem> to_vector() const { return self().tensor().template to_vector<Elem>(); }
  template <class Elem> Elem item() const { return self().tensor().template item<Elem>(); }
  Tensor realize() const { return self().tensor().realize(); }
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets, const Tensor& seed = {}) const {
    return self().tensor().gradient(targets, seed);
  }
  /// backward() of the expression's value, which is returned (an expression has no grad of its own).
  Tensor backward(const Tensor& seed = {}) const {
    Tensor t = self().tensor();
    t.backward(seed);
    return t;
  }
  TensorRef operator[](std::initializer_list<Index> index) const { return self().tensor()[index]; }
  friend std::ostream& operator<<(std::ostream& os, const ExprMethods& e) { return os << e.self().tensor(); }

 private:
  const D& self() const { return static_cast<const D&>(*this); }
};

template <class T> struct is_expr : std::false_type {};
/// Tensors, expressions and C++ scalars: what an expression may hold.
template <class T>
concept ExprOperand = std::is_arithmetic_v<T> || std::is_base_of_v<Tensor, T> || is_expr<T>::value;

namespace detail {
template <class E> Operand to_operand(const E& e);
template <class E> Shape shape_of(const E& e) {
  if constexpr (std::is_arithmetic_v<E>) return {};
  else if constexpr (std::is_base_of_v<Tensor, E>) return e.shape();
  else return e.result_shape();
}
}  // namespace detail

/// A binary elementwise op over two operands, lowered when it becomes a Tensor.
template <class L, class R> class BinaryExpr : public ExprMethods<BinaryExpr<L, R>> {
 public:
  BinaryExpr(Ops op, const char* name, L l, R r, bool to_float = false, bool negate_right = false)
      : op_(op), name_(name), to_float_(to_float), negate_right_(negate_right), l_(std::move(l)), r_(std::move(r)),
        // shapes are checked when the expression is built, not when it runs
        shape_(Tensor::broadcast_shape(detail::shape_of(l_), detail::shape_of(r_), name)) {}

  const Shape& result_shape() const { return shape_; }

  /// The expression as a UOp operand: one pass over the tree, no Tensor per node.
  detail::Operand operand() const {
    detail::Operand b = detail::to_operand(r_);
    if (negate_right_) b = detail::negate(b);
    return detail::binary_operand(op_, detail::to_operand(l_), b, name_, to_float_);
  }
  Tensor tensor() const { return detail::to_tensor(operand()); }

 private:
  Ops op_;
  const char* name_;
  bool to_float_, negate_right_;
  L l_;
  R r_;
  Shape shape_;
};
template <class L, class R> struct is_expr<BinaryExpr<L, R>> : std::true_type {};

namespace detail {
template <class E> Operand to_operand(const E& e) {
  if constexpr (std::is_arithmetic_v<E>) return to_operand(Tensor(e));
  else if constexpr (std::is_base_of_v<Tensor, E>) return operand_of(e);
  else return e.operand();
}
template <class A, class B> auto make_binary(Ops op, const char* name, const A& a, const B& b, bool to_float = false,
                                             bool negate_right = false) {
  // scalars are stored as their own type; tensors and expressions by value
  using LA = std::conditional_t<std::is_base_of_v<Tensor, A>, Tensor, A>;
  using LB = std::conditional_t<std::is_base_of_v<Tensor, B>, Tensor, B>;
  return BinaryExpr<LA, LB>(op, name, LA(a), LB(b), to_float, negate_right);
}
}  // namespace detail

#define TINYT_EXPR_BINARY(sym, OP, name, ...)                                                  \
  template <ExprOperand A, ExprOperand B>                                                      \
    requires(!std::is_arithmetic_v<A> || !std::is_arithmetic_v<B>)                            \
  auto operator sym(const A& a, const B& b) { return detail::make_binary(Ops::OP, name, a, b __VA_OPT__(, ) __VA_ARGS__); }
TINYT_EXPR_BINARY(+, ADD, "add")
TINYT_EXPR_BINARY(-, ADD, "sub", false, true)
TINYT_EXPR_BINARY(*, MUL, "mul")
TINYT_EXPR_BINARY(/, FDIV, "div", true)
TINYT_EXPR_BINARY(<, CMPLT, "lt")
TINYT_EXPR_BINARY(==, CMPEQ, "eq")
TINYT_EXPR_BINARY(!=, CMPNE, "ne")
#undef TINYT_EXPR_BINARY
// the rest go through Tensor methods (they are compositions of several ops)
#define TINYT_TENSOR_BINARY(sym, method)                                                       \
  template <ExprOperand A, ExprOperand B>                                                      \
    requires(!std::is_arithmetic_v<A> || !std::is_arithmetic_v<B>)                            \
  Tensor operator sym(const A& a, const B& b) { return Tensor(a).method(Tensor(b)); }
TINYT_TENSOR_BINARY(>, gt)
TINYT_TENSOR_BINARY(<=, le)
TINYT_TENSOR_BINARY(>=, ge)
TINYT_TENSOR_BINARY(%, mod)
TINYT_TENSOR_BINARY(&, bitwise_and)
TINYT_TENSOR_BINARY(|, bitwise_or)
TINYT_TENSOR_BINARY(^, bitwise_xor)
TINYT_TENSOR_BINARY(<<, lshift)
TINYT_TENSOR_BINARY(>>, rshift)
#undef TINYT_TENSOR_BINARY
template <ExprOperand A> requires(!std::is_arithmetic_v<A>) Tensor operator-(const A& a) { return Tensor(a).neg(); }
template <ExprOperand A> requires(!std::is_arithmetic_v<A>) Tensor operator~(const A& a) { return Tensor(a).bitwise_not(); }
template <ExprOperand A> requires(!std::is_arithmetic_v<A>) Tensor operator!(const A& a) { return Tensor(a).logical_not(); }

}  // namespace tinyt::inline v0
