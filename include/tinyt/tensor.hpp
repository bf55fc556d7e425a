// Tensor: a cheap, shared handle to a lazy value, a node of the UOp graph. Building never
// computes; realize() or a read runs the kernels. The methods are declared here, with the
// templates that forward to them; the op families are defined in ops/*.hpp as compositions of a
// few primitive UOps, compiled with the engine (config.hpp).
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <utility>
#include <vector>

#include "device.hpp"
#include "dist.hpp"
#include "dtype.hpp"
#include "helpers.hpp"
#include "shape.hpp"

namespace tinyt::inline v0 {

/// Absent part of a slice (`Slice(None, 3)`).
struct NoneType {};
inline constexpr NoneType None{};

/// An optional size that can be written `3`, `i.bind(3)` (symbolic) or `None`.
struct OptSize {
  std::optional<sint> v;
  OptSize(NoneType) {}  // NOLINT
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  OptSize(I i) : v(static_cast<int64_t>(i)) {}  // NOLINT
  OptSize(const UOp& u) : v(sint(u)) {}          // NOLINT
  OptSize(sint s) : v(std::move(s)) {}           // NOLINT
};
/// An optional integer that can be written `3` or `None`.
struct OptInt {
  std::optional<int64_t> v;
  OptInt(NoneType) {}  // NOLINT
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  OptInt(I i) : v(static_cast<int64_t>(i)) {}  // NOLINT
};
/// `start:stop:step` in an index; `Slice()` is `:`. Start and stop may be symbolic (step 1).
struct Slice {
  std::optional<sint> start, stop;
  std::optional<int64_t> step;
  Slice() = default;
  Slice(OptSize start_, OptSize stop_, OptInt step_ = 1) : start(start_.v), stop(stop_.v), step(step_.v) {}
};
/// A new size-1 axis in an index.
struct NewAxisT {};
inline constexpr NewAxisT NewAxis{};
/// "Every remaining axis" in an index.
struct EllipsisT {};
inline constexpr EllipsisT Ellipsis{};

/// Sizes that may be one int for every dim or a list (stride, padding, dilation).
struct IntOrVec {
  std::vector<int64_t> v;
  IntOrVec() = default;
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  IntOrVec(I i) : v{static_cast<int64_t>(i)} {}  // NOLINT
  IntOrVec(std::vector<int64_t> x) : v(std::move(x)) {}  // NOLINT
  IntOrVec(std::initializer_list<int64_t> x) : v(x) {}  // NOLINT
  bool empty() const { return v.empty(); }
};

/// How Tensor::interpolate maps output positions to input ones and weighs the neighbours it
/// reads (ONNX Resize's attributes; interpolate(size, mode) sets PyTorch's).
struct Interpolation {
  std::string mode = "linear";                 ///< "nearest", "linear" or "cubic"
  std::string coordinates = "half_pixel";      ///< or "align_corners", "asymmetric", "pytorch_half_pixel", "half_pixel_symmetric", "tf_crop_and_resize"
  std::string nearest = "round_prefer_floor";  ///< nearest's rounding: or "round_prefer_ceil", "floor", "ceil"
  double cubic_a = -0.75;                      ///< the cubic kernel's a (PyTorch's -0.75; -0.5 is Keys')
  bool exclude_outside = false;                ///< taps outside the input weigh 0 (the others renormalized), not the edge's value
  bool antialias = false;                      ///< downscaling widens linear and cubic filters by 1 / scale
  std::vector<double> scales;                  ///< per resized dim, the scale the coordinates use (default: out / in)
  std::vector<std::pair<double, double>> crop;  ///< tf_crop_and_resize's (start, end) per resized dim, as fractions
  double extrapolation_value = 0.0;            ///< what tf_crop_and_resize gives outside its crop
};

class Tensor;
class TensorRef;
class Index;
namespace detail {
class JitCore;
}

namespace detail {
/// The tensor's shape, every dim concrete (tensor_impl.hpp).
std::vector<int64_t> concrete_shape(const Tensor& t);
}  // namespace detail

/// A lazy n-dimensional array.
class Tensor {
 public:
  /// The empty handle (an absent optional tensor).
  Tensor() = default;
  /// 0-d constants on the default device; a C++ scalar is "weak" in arithmetic (takes the
  /// other side's dtype where it fits). double gives float32, like a Python float.
  Tensor(float v) : Tensor(scalar(dtypes::float32, v)) {}             // NOLINT
  Tensor(double v) : Tensor(scalar(dtypes::float32, v)) {}            // NOLINT
  Tensor(int v) : Tensor(scalar(dtypes::int32, static_cast<int64_t>(v))) {}  // NOLINT
  Tensor(int64_t v) : Tensor(scalar(dtypes::int64, v)) {}             // NOLINT
  Tensor(bool v) : Tensor(scalar(dtypes::bool_, static_cast<int64_t>(v))) {}  // NOLINT
  /// A tensor for a tensor-level UOp (advanced use: the graph is tinyt's IR).
  explicit Tensor(UOp uop);

  // -- creation (ops/creation.hpp) ------------------------------------------------------------
  template <class T> static Tensor from_vector(const std::vector<T>& data);
  template <class T> static Tensor from_vector(const std::vector<T>& data, Shape shape, std::string device = "");
  static Tensor from_blob(const void* ptr, Shape shape, DType dtype, std::string device = "");
  static Tensor empty(Shape shape, DType dtype = dtypes::float32, std::string device = "");
  template <class V> static Tensor full(Shape shape, V value);
  template <class V> static Tensor full(Shape shape, V value, DType dtype, std::string device = "");
  static Tensor zeros(Shape shape, DType dtype = dtypes::float32, std::string device = "");
  static Tensor ones(Shape shape, DType dtype = dtypes::float32, std::string device = "");
  template <class A> static Tensor arange(A stop);
  template <class A, class B, class C = int> static Tensor arange(A start, B stop, C step = 1);
  static Tensor eye(int64_t n, int64_t m = -1, DType dtype = dtypes::float32);
  template <class A, class B> static Tensor linspace(A start, B stop, int64_t steps, DType dtype = dtypes::default_float);
  static Tensor zeros_like(const Tensor& t);
  static Tensor ones_like(const Tensor& t);
  template <class V> static Tensor full_like(const Tensor& t, V value);

  // -- random (ops/random.hpp): threefry, counter-based and reproducible ------------------------
  static void manual_seed(uint64_t seed);
  static Tensor rand(Shape shape, DType dtype = dtypes::float32, std::string device = "");
  static Tensor randn(Shape shape, DType dtype = dtypes::float32, std::string device = "");
  static Tensor randint(Shape shape, int64_t low = 0, int64_t high = 10, DType dtype = dtypes::int32);
  static Tensor uniform(Shape shape, double low = 0.0, double high = 1.0, DType dtype = dtypes::float32);
  static Tensor normal(Shape shape, double mean = 0.0, double std = 1.0, DType dtype = dtypes::float32);
  static Tensor rand_like(const Tensor& t);
  static Tensor randn_like(const Tensor& t);
  static Tensor kaiming_uniform(Shape shape, double a = 0.01);
  static Tensor kaiming_normal(Shape shape, double a = 0.01);
  static Tensor glorot_uniform(Shape shape);
  static Tensor scaled_uniform(Shape shape);

  // -- properties and reading -----------------------------------------------------------------
  bool defined() const { return d_ != nullptr; }
  /// The handle's identity: copies of a tensor share it, separately built tensors never do (not
  /// even with equal values or graphs); nullptr for the empty handle. For dedup (tied weights).
  const void* id() const { return d_.get(); }
  const UOp& uop() const;
  Shape shape() const;
  size_t ndim() const { return shape().size(); }
  /// The number of elements (of a symbolic shape: under its variables' bindings).
  int64_t numel() const { return shape().numel().value(); }
  DType dtype() const { return uop().dtype(); }
  std::string device() const;
  int64_t element_size() const { return dtype().itemsize(); }
  int64_t nbytes() const { return numel() * element_size(); }
  /// Runs the pending graph; afterwards the tensor is a view of memory.
  Tensor& realize() &;
  Tensor realize() && { return std::move(realize()); }
  /// The elements, row-major (realizes). T must be the tensor's dtype.
  template <class Elem> std::vector<Elem> to_vector() const;
  /// The one element of a 0-d or 1-element tensor.
  template <class Elem> Elem item() const;

  // -- elementwise (ops/elementwise.hpp) ------------------------------------------------------
  Tensor add(const Tensor& o) const;
  Tensor sub(const Tensor& o) const;
  Tensor mul(const Tensor& o) const;
  Tensor div(const Tensor& o) const;
  Tensor floordiv(const Tensor& o) const;
  Tensor mod(const Tensor& o) const;
  Tensor pow(const Tensor& o) const;
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor where(const Tensor& a, const Tensor& b) const;
  Tensor eq(const Tensor& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor lt(const Tensor& o) const;
  Tensor le(const Tensor& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor ge(const Tensor& o) const;
  Tensor bitwise_and(const Tensor& o) const;
  Tensor bitwise_or(const Tensor& o) const;
  Tensor bitwise_xor(const Tensor& o) const;
  Tensor lshift(const Tensor& o) const;
  Tensor rshift(const Tensor& o) const;
  Tensor logical_and(const Tensor& o) const;
  Tensor logical_or(const Tensor& o) const;
  Tensor logical_xor(const Tensor& o) const;
  Tensor logical_not() const;
  Tensor bitwise_not() const;
  Tensor neg() const;
  Tensor cast(DType dt) const;
  Tensor bitcast(DType dt) const;
  Tensor float_() const { return cast(dtypes::float32); }
  Tensor half() const { return cast(dtypes::float16); }
  Tensor int_() const { return cast(dtypes::int32); }
  Tensor bool_() const { return cast(dtypes::bool_); }
  Tensor exp() const;
  Tensor exp2() const;
  Tensor log() const;
  Tensor log2() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor reciprocal() const;
  Tensor square() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tan() const;
  Tensor trunc() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  Tensor relu() const;
  Tensor relu6() const;
  Tensor sigmoid() const;
  Tensor logsigmoid() const;
  Tensor tanh() const;
  Tensor gelu() const;
  Tensor quick_gelu() const;
  Tensor silu() const;
  Tensor elu(double alpha = 1.0) const;
  Tensor leaky_relu(double slope = 0.01) const;
  Tensor softplus(double beta = 1.0) const;
  Tensor mish() const;
  Tensor hardswish() const;
  Tensor hardsigmoid() const;
  Tensor hardtanh(double lo = -1.0, double hi = 1.0) const;
  Tensor erf() const;
  /// The inverse trigonometric functions, in radians (Cephes' rational approximation of atan).
  Tensor atan() const;
  Tensor asin() const;
  Tensor acos() const;
  Tensor clip(const Tensor& lo, const Tensor& hi) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;

  // -- reductions (ops/reduce.hpp) ------------------------------------------------------------
  Tensor sum() const;
  Tensor sum(int axis, bool keepdim = false) const;
  Tensor sum(std::vector<int> axes, bool keepdim = false) const;
  Tensor prod() const;
  Tensor prod(int axis, bool keepdim = false) const;
  Tensor prod(std::vector<int> axes, bool keepdim = false) const;
  Tensor max() const;
  Tensor max(int axis, bool keepdim = false) const;
  Tensor max(std::vector<int> axes, bool keepdim = false) const;
  Tensor min() const;
  Tensor min(int axis, bool keepdim = false) const;
  Tensor min(std::vector<int> axes, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(int axis, bool keepdim = false) const;
  Tensor mean(std::vector<int> axes, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int axis, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(int axis, bool keepdim = false) const;
  Tensor cumsum(int axis = 0) const;
  Tensor cumprod(int axis = 0) const;
  Tensor var(bool keepdim = false, double correction = 1) const;
  Tensor var(int axis, bool keepdim = false, double correction = 1) const;
  Tensor var(std::vector<int> axes, bool keepdim = false, double correction = 1) const;
  Tensor std(bool keepdim = false, double correction = 1) const;
  Tensor std(int axis, bool keepdim = false, double correction = 1) const;
  Tensor std(std::vector<int> axes, bool keepdim = false, double correction = 1) const;
  Tensor argmax() const;
  Tensor argmax(int axis, bool keepdim = false) const;
  Tensor argmin() const;
  Tensor argmin(int axis, bool keepdim = false) const;
  Tensor logsumexp(int axis, bool keepdim = false) const;
  Tensor softmax(int axis = -1) const;
  Tensor log_softmax(int axis = -1) const;

  // -- movement (ops/movement.hpp) ------------------------------------------------------------
  Tensor reshape(Shape shape) const;
  Tensor view(Shape shape) const { return reshape(std::move(shape)); }
  Tensor permute(std::vector<int> order) const;
  Tensor expand(Shape shape) const;
  Tensor pad(std::vector<std::pair<sint, sint>> padding, double value = 0.0) const;
  /// Padding in PyTorch's modes: "constant" (with `value`), "reflect", "replicate", "circular" (ops/combine.hpp).
  Tensor pad(std::vector<std::pair<sint, sint>> padding, std::string_view mode, double value = 0.0) const;
  Tensor shrink(std::vector<std::pair<sint, sint>> bounds) const;
  Tensor flip(std::vector<int> axes) const;
  Tensor flip(int axis) const { return flip(std::vector<int>{axis}); }
  Tensor transpose(int d0 = 1, int d1 = 0) const;
  Tensor T() const { return transpose(); }
  Tensor flatten(int start = 0, int end = -1) const;
  Tensor unflatten(int dim, Shape sizes) const;
  Tensor squeeze(int dim) const;
  Tensor squeeze() const;
  Tensor unsqueeze(int dim) const;
  Tensor contiguous() const;
  /// The same value with gradient flow cut: d(detach(x))/dx is zero.
  Tensor detach() const;
  /// Identity forward; the gradient flowing back through it is made contiguous (realized).
  Tensor contiguous_backward() const;
  /// This tensor on another device (a copy; the same tensor when it is there already). To
  /// several devices ("CPU:0,CPU:1"): replicated on each; from several to one: gathered.
  Tensor to(const std::string& device) const;
  /// Split along `axis` across `devices` (parts of ceil(n / devices), the last ones smaller, as
  /// tinygrad), or replicated on each with no axis. Ops run on each device's part; device()
  /// names them all, comma-separated.
  Tensor shard(const std::vector<std::string>& devices, std::optional<int> axis = std::nullopt) const;
  /// Every process's tensor combined elementwise by `op`, in every process (dist::world(): the
  /// ranks mpirun started; this process alone without it). An item of the schedule, so TinyJit
  /// replays it with the step's kernels; every rank must reduce the same shape and dtype (a
  /// symbolic shape: the same bound shape).
  Tensor allreduce(dist::ReduceOp op = dist::ReduceOp::sum) const;
  Tensor repeat(Shape repeats) const;
  static Tensor cat(const std::vector<Tensor>& tensors, int dim = 0);
  static Tensor stack(const std::vector<Tensor>& tensors, int dim = 0);
  std::vector<Tensor> split(int64_t size, int dim = 0) const;
  std::vector<Tensor> split(std::vector<int64_t> sizes, int dim = 0) const;
  std::vector<Tensor> chunk(int64_t n, int dim = 0) const;

  // -- indexing (ops/indexing.hpp) -------------------------------------------------------------
  /// `t[{1, Slice(0, 4, 2), NewAxis, Ellipsis}]`; assigning to the result writes into `t`. An
  /// int out of range is an IndexError; a value out of range in an index tensor reads 0 and
  /// writes nothing, or is an IndexError with CHECK_OOB=1 (ops/indexing.hpp).
  TensorRef operator[](std::initializer_list<Index> index) const;
  TensorRef operator[](std::vector<Index> index) const;
  /// PyTorch's gather; an index value out of range reads 0, or is an IndexError with CHECK_OOB=1.
  Tensor gather(int dim, const Tensor& index) const;
  /// PyTorch's scatter: src written at index along dim into a copy (ops/indexing.hpp).
  Tensor scatter(int dim, const Tensor& index, const Tensor& src) const;
  /// PyTorch's scatter_reduce: reduce "sum", "prod", "mean", "amax" or "amin".
  Tensor scatter_reduce(int dim, const Tensor& index, const Tensor& src, std::string_view reduce, bool include_self = true) const;
  /// (values, int64 indices) along dim in order, stable, NaN largest (PyTorch's sort).
  std::pair<Tensor, Tensor> sort(int dim = -1, bool descending = false) const;
  /// (values, int64 indices) of the k largest (or smallest) along dim, in order.
  std::pair<Tensor, Tensor> topk(int64_t k, int dim = -1, bool largest = true) const;
  /// int32 one-hot rows along a new last axis; a value out of range gives a row of zeros, or is
  /// an IndexError with CHECK_OOB=1.
  Tensor one_hot(int64_t num_classes) const;
  /// Stores `value` into this tensor's memory (broadcast to its shape), or into fresh memory when
  /// another tensor views that memory too; copies of this handle see the new value, tensors
  /// built from the old value keep it.
  Tensor& assign(const Tensor& value);

  // -- linear algebra and nn functional (ops/linalg.hpp, ops/nn.hpp) ------------------------------
  Tensor matmul(const Tensor& w) const;
  Tensor dot(const Tensor& w) const { return matmul(w); }
  Tensor linear(const Tensor& w, const Tensor& b = {}) const;
  static Tensor einsum(const std::string& formula, const std::vector<Tensor>& operands);
  Tensor conv2d(const Tensor& w, const Tensor& b = {}, int64_t groups = 1, IntOrVec stride = 1, IntOrVec dilation = 1,
                IntOrVec padding = 0) const;
  Tensor conv_transpose2d(const Tensor& w, const Tensor& b = {}, int64_t groups = 1, IntOrVec stride = 1,
                          IntOrVec dilation = 1, IntOrVec padding = 0, IntOrVec output_padding = 0) const;
  /// Pools over the last 2 dims, or as many as `kernel` lists; ceil_mode keeps a last, partial
  /// window that starts inside the input or its padding (PyTorch's).
  Tensor max_pool2d(IntOrVec kernel = 2, IntOrVec stride = {}, IntOrVec dilation = 1, IntOrVec padding = 0,
                    bool ceil_mode = false) const;
  Tensor avg_pool2d(IntOrVec kernel = 2, IntOrVec stride = {}, IntOrVec dilation = 1, IntOrVec padding = 0,
                    bool count_include_pad = true, bool ceil_mode = false) const;
  /// max_pool2d and, as PyTorch's return_indices, the int64 index of each maximum in its plane.
  std::pair<Tensor, Tensor> max_pool2d_with_indices(IntOrVec kernel = 2, IntOrVec stride = {}, IntOrVec dilation = 1,
                                                    IntOrVec padding = 0, bool ceil_mode = false) const;
  /// Resized to `size` over the last size.size() dims: "nearest" (PyTorch's: floor), "nearest-exact",
  /// "linear" or "cubic" (separable, so bilinear and bicubic over 2 dims), as F.interpolate (ops/interpolate.hpp).
  Tensor interpolate(Shape size, std::string_view mode = "linear", bool align_corners = false) const;
  /// Resized with every choice of ONNX's Resize.
  Tensor interpolate(Shape size, const Interpolation& how) const;
  Tensor layernorm(int axis = -1, double eps = 1e-5) const;
  Tensor batchnorm(const Tensor& weight, const Tensor& bias, const Tensor& mean, const Tensor& invstd) const;
  Tensor dropout(double p = 0.5) const;
  Tensor scaled_dot_product_attention(const Tensor& k, const Tensor& v, const Tensor& mask = {}, bool is_causal = false) const;
  /// Cross entropy of logits against class probabilities (same shape) or class indices.
  Tensor cross_entropy(const Tensor& target, double label_smoothing = 0.0) const;
  Tensor sparse_categorical_crossentropy(const Tensor& labels, int64_t ignore_index = -1, double label_smoothing = 0.0) const;
  /// Binary cross entropy of probabilities in (0, 1).
  Tensor binary_crossentropy(const Tensor& target) const;
  Tensor binary_crossentropy_logits(const Tensor& target) const;

  // -- gradients (gradient.hpp) -----------------------------------------------------------------
  /// d(this)/d(target) for each target, as lazy tensors. `seed` is d(loss)/d(this); it may be
  /// omitted only for a scalar. A target this does not use, or uses only through values without a
  /// derivative (detach, integer or bool values: casts, comparisons, argmax), gets zeros; a
  /// floating-point op with no gradient rule on the way to a target is an Error naming it. Targets
  /// are found by graph node: equal lazy graphs are one node unless each requires grad.
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets, const Tensor& seed = {}) const;
  /// Adds d(this)/d(t) to t.grad() for every live tensor t with requires_grad set in this graph.
  const Tensor& backward(const Tensor& seed = {}) const;
  /// Whether backward() computes this tensor's gradient (PyTorch's requires_grad).
  bool requires_grad() const { return d_ && d_->requires_grad.value_or(false); }
  /// Sets requires_grad; floating-point tensors only. Returns this tensor. Turning it on makes the
  /// tensor a parameter of its own, as in PyTorch: realized into memory of its own (so equal
  /// values never merge two parameters); graphs built before do not reach it.
  Tensor& requires_grad(bool on);
  /// requires_grad as set: empty when never set (an optimizer then turns it on, as in tinygrad).
  std::optional<bool> requires_grad_setting() const { return d_ ? d_->requires_grad : std::nullopt; }
  /// The gradient accumulated by backward(); the empty handle when there is none.
  Tensor grad() const { return d_ && d_->grad ? Tensor(d_->grad) : Tensor(); }
  /// Replaces the accumulated gradient (the empty handle clears it, as zero_grad does).
  void set_grad(const Tensor& g) { uop(), d_->grad = g.d_; }

  /// True while a Tensor::Train scope is open (dropout and batchnorm behave as in training).
  static inline thread_local bool training = false;
  /// Training mode for a scope: `{ Tensor::Train train; ... }` (Train(false) turns it off).
  class Train {
   public:
    explicit Train(bool on = true) : previous_(training) { training = on; }
    ~Train() { training = previous_; }
    Train(const Train&) = delete;
    Train& operator=(const Train&) = delete;

   private:
    bool previous_;
  };

  /// The shape both operands broadcast to (NumPy rules); ShapeError naming both otherwise.
  static Shape broadcast_shape(const Shape& a, const Shape& b, const char* op);
  static std::vector<int64_t> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const char* op) {
    return broadcast_shape(Shape(a), Shape(b), op).to_vector();
  }

  friend std::ostream& operator<<(std::ostream& os, const Tensor& t);

 private:
  struct Data {
    UOp uop;
    bool weak = false;  // a C++ scalar: adopts the other operand's dtype in arithmetic
    UOp exact{};        // a C++ double: its unrounded value (a float64 CONST), which arithmetic uses
    std::optional<bool> requires_grad{};
    std::shared_ptr<Data> grad{};
  };
  explicit Tensor(std::shared_ptr<Data> d) : d_(std::move(d)) {}
  static Tensor scalar(DType dt, double v);
  static Tensor scalar(DType dt, int64_t v);
  bool weak() const { return d_ && d_->weak; }
  /// Puts this tensor's value in memory that no other tensor or graph names (a parameter).
  void own_memory();
  Tensor reduce(Ops op, std::vector<int> axes, bool keepdim, const char* name) const;
  std::vector<int64_t> cshape() const { return detail::concrete_shape(*this); }
  /// Realizes the tensor and copies its bytes (`nbytes` of them) to host memory at `dst`.
  void copyout(void* dst, size_t nbytes) const;
  // the non-template halves of the creation templates (ops/creation.hpp, ops/combine.hpp)
  static Tensor full_value(const Shape& shape, double value, DType dtype, const std::string& device);
  static Tensor full_value(const Shape& shape, i128 value, DType dtype, const std::string& device);
  static Tensor arange_values(double start, double step, sint count, DType dtype, const std::string& device = "");
  static Tensor linspace_values(double start, double stop, int64_t steps, DType dtype);
  static Tensor from_elements(const void* data, size_t count, const Shape& shape, DType dtype, std::string device);
  friend Tensor broadcast_to(const Tensor& t, const Shape& shape);
  friend struct TensorAccess;

  // The fields of Data that other threads read through the registry (uop, requires_grad) are
  // written under a lock (tensor_impl.hpp) and read there under it, shared: a realize or backward
  // in one thread looks at every live tensor, also those of threads realizing graphs of their own.
  void set_uop(UOp u);
  static std::pair<UOp, bool> shared_fields(const Data& d);
  // Every live tensor, so that overwriting memory in place (assign) can first compute what
  // other tensors still need from it.
  class Registry;
  static Registry& live_tensors();
  friend void realize_tensors(const std::vector<Tensor>& tensors);
  friend class detail::JitCore;

  std::shared_ptr<Data> d_;
};

/// One entry of an index: an integer, a Slice, NewAxis, Ellipsis, or an integer Tensor.
class Index {
 public:
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  Index(I i) : value(static_cast<int64_t>(i)) {}  // NOLINT
  Index(Slice s) : value(s) {}                    // NOLINT
  Index(NewAxisT n) : value(n) {}                 // NOLINT
  Index(EllipsisT e) : value(e) {}                // NOLINT
  Index(Tensor t) : value(std::move(t)) {}        // NOLINT
  std::variant<int64_t, Slice, NewAxisT, EllipsisT, Tensor> value;
};

/// What indexing returns: a Tensor that remembers its base, so `t[{...}] = value` writes into t.
class TensorRef : public Tensor {
 public:
  TensorRef(Tensor value, Tensor base, std::vector<Index> index)
      : Tensor(std::move(value)), base_(std::move(base)), index_(std::move(index)) {}
  TensorRef(const TensorRef&) = default;
  /// Writes `value` (broadcast) into the indexed part of the base.
  TensorRef& operator=(const Tensor& value);
  TensorRef& operator=(const TensorRef& value) { return *this = static_cast<const Tensor&>(value); }
  template <class S, std::enable_if_t<std::is_arithmetic_v<S>, int> = 0>
  TensorRef& operator=(S value) { return *this = Tensor(value); }
  /// Indexing a reference: a write through the result reaches this reference's base too.
  TensorRef operator[](std::initializer_list<Index> index) const { return (*this)[std::vector<Index>(index)]; }
  TensorRef operator[](std::vector<Index> index) const {
    TensorRef r = Tensor::operator[](std::move(index));
    r.parent_ = std::make_shared<TensorRef>(*this);
    return r;
  }

 private:
  Tensor base_;
  std::vector<Index> index_;
  std::shared_ptr<TensorRef> parent_;  // set when base_ is itself a reference's value
};

/// Computes several tensors in one schedule (what realize() does for one).
void realize_tensors(const std::vector<Tensor>& tensors);
/// `t` broadcast to `shape` (NumPy rules); ShapeError when it does not broadcast.
Tensor broadcast_to(const Tensor& t, const Shape& shape);
/// Floor division, Python's `//`.
Tensor floordiv(const Tensor& a, const Tensor& b);

inline const UOp& Tensor::uop() const {
  if (!d_) throw Error("Tensor: this is the empty Tensor() handle; it holds no value");
  return d_->uop;
}

// -- creation templates: checked here, built by the non-template functions they call ---------

namespace detail {
/// The dtype of a C++ fill value: integers give the default int, floats the default float.
template <class V> constexpr DType default_dtype_of() {
  if constexpr (std::is_same_v<V, bool>) return dtypes::bool_;
  else if constexpr (std::is_integral_v<V>) return dtypes::default_int;
  else return dtypes::default_float;
}
}  // namespace detail

template <class Elem> Tensor Tensor::from_vector(const std::vector<Elem>& data, Shape shape, std::string device) {
  static_assert(has_dtype_v<Elem>, "Tensor::from_vector: the element type has no tinyt dtype");
  if constexpr (std::is_same_v<Elem, bool>) {  // vector<bool> has no data()
    std::vector<uint8_t> bytes(data.begin(), data.end());
    return from_elements(bytes.data(), bytes.size(), shape, dtypes::bool_, std::move(device));
  } else {
    return from_elements(data.data(), data.size(), shape, dtype_of<Elem>(), std::move(device));
  }
}
template <class Elem> Tensor Tensor::from_vector(const std::vector<Elem>& data) {
  return from_vector(data, Shape{static_cast<int64_t>(data.size())});
}

template <class V> Tensor Tensor::full(Shape shape, V value, DType dtype, std::string device) {
  static_assert(std::is_arithmetic_v<V>, "Tensor::full takes a number");
  if constexpr (std::is_floating_point_v<V>) return full_value(shape, static_cast<double>(value), dtype, device);
  else return full_value(shape, static_cast<i128>(value), dtype, device);
}
template <class V> Tensor Tensor::full(Shape shape, V value) {
  return full(std::move(shape), value, detail::default_dtype_of<V>());
}
template <class V> Tensor Tensor::full_like(const Tensor& t, V value) { return full(t.shape(), value, t.dtype(), t.device()); }

template <class A, class B, class C> Tensor Tensor::arange(A start, B stop, C step) {
  if constexpr (std::is_same_v<B, UOp> || std::is_same_v<B, sint>) {  // arange(0, i.bind(7)): symbolic
    static_assert(std::is_integral_v<A> && std::is_integral_v<C>, "a symbolic arange counts in integers");
    if (step != 1 || start != 0) throw Error("arange: a symbolic stop takes start 0 and step 1");
    return arange_values(0.0, 1.0, sint(stop), dtypes::default_int);
  } else {
    static_assert(std::is_arithmetic_v<A> && std::is_arithmetic_v<B> && std::is_arithmetic_v<C>, "arange takes numbers");
    constexpr bool all_int = std::is_integral_v<A> && std::is_integral_v<B> && std::is_integral_v<C>;
    if (step == 0) throw Error("arange: step must not be 0");
    const double n = std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step));
    return arange_values(static_cast<double>(start), static_cast<double>(step), n > 0 ? static_cast<int64_t>(n) : 0,
                         all_int ? dtypes::default_int : dtypes::default_float);
  }
}
template <class A> Tensor Tensor::arange(A stop) {
  if constexpr (std::is_same_v<A, UOp> || std::is_same_v<A, sint>)
    return arange(0, stop, 1);
  else
    return arange(A{0}, stop, 1);
}

/// `steps` evenly spaced values from start to stop (both included).
template <class A, class B> Tensor Tensor::linspace(A start, B stop, int64_t steps, DType dtype) {
  static_assert(std::is_arithmetic_v<A> && std::is_arithmetic_v<B>, "Tensor::linspace takes numbers");
  return linspace_values(static_cast<double>(start), static_cast<double>(stop), steps, dtype);
}

// -- reading ---------------------------------------------------------------------------------

template <class Elem> std::vector<Elem> Tensor::to_vector() const {
  static_assert(has_dtype_v<Elem>, "Tensor::to_vector<T>: T has no tinyt dtype");
  if (dtype_of<Elem>() != dtype())
    throw DTypeError(detail::cat("to_vector<", dtype_of<Elem>().name(), ">: the tensor is ", dtype().name()));
  const auto n = static_cast<size_t>(numel());
  if constexpr (std::is_same_v<Elem, bool>) {  // vector<bool> packs bits
    std::vector<uint8_t> bytes(n);
    copyout(bytes.data(), n);
    return std::vector<bool>(bytes.begin(), bytes.end());
  } else {
    std::vector<Elem> out(n);
    copyout(out.data(), n * sizeof(Elem));
    return out;
  }
}

template <class Elem> Elem Tensor::item() const {
  if (numel() != 1) throw ShapeError(detail::cat("item: the tensor has shape ", shape(), ", not one element"));
  return to_vector<Elem>()[0];
}

}  // namespace tinyt::inline v0
