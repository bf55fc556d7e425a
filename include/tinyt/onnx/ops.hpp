// The ONNX ops the runner knows, as tinyt Tensor ops: one function per op type of the default
// domain, taking a node, its inputs (empty where an optional input is left out) and the model's
// opset, and giving its outputs. Each builds lazy tensors: a model runs as one tinyt graph,
// scheduled and fused like hand-written code.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "model_proto.hpp"

namespace tinyt::inline v0 {
namespace onnx {

/// What an op gets: its node, its inputs in order (nullopt: an optional input left out) and the
/// default domain's opset version of the model.
struct OpCall {
  const Node& node;
  const std::vector<std::optional<Tensor>>& inputs;
  int64_t opset;

  /// Input `i`, which the op needs: a ShapeError naming the node when it is left out.
  const Tensor& in(size_t i) const {
    if (i >= inputs.size() || !inputs[i])
      throw ShapeError(tinyt::detail::cat("onnx: ", node.op_type, " node '", node.name, "': input ", i, " is missing"));
    return *inputs[i];
  }
  bool has(size_t i) const { return i < inputs.size() && inputs[i].has_value(); }
  const Attribute* attribute(const std::string& name) const {
    for (const Attribute& a : node.attributes)
      if (a.name == name) return &a;
    return nullptr;
  }
  int64_t int_attr(const std::string& name, int64_t fallback) const {
    const Attribute* a = attribute(name);
    return a ? a->i : fallback;
  }
  float float_attr(const std::string& name, float fallback) const {
    const Attribute* a = attribute(name);
    return a ? a->f : fallback;
  }
  /// The values of a small integer tensor the op reads on the host (a shape, axes): realized here.
  std::vector<int64_t> host_ints(size_t i) const { return in(i).cast(dtypes::int64).to_vector<int64_t>(); }
};

using OpFn = std::function<std::vector<Tensor>(const OpCall&)>;

namespace detail {
inline std::vector<Tensor> one(Tensor t) { return {std::move(t)}; }

// Reshape's target: 0 copies the input's dim (unless allowzero), -1 is inferred by Tensor::reshape
inline Shape reshape_target(const OpCall& c) {
  const std::vector<int64_t> want = c.host_ints(1);
  const std::vector<int64_t> have = c.in(0).shape().to_vector();
  std::vector<int64_t> out;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == 0 && !c.int_attr("allowzero", 0)) {
      if (i >= have.size())
        throw ShapeError(tinyt::detail::cat("onnx: Reshape node '", c.node.name, "': dim ", i, " is 0 (copy the input's) but the input has ", have.size()));
      out.push_back(have[i]);
    } else {
      out.push_back(want[i]);
    }
  }
  return Shape(out);
}

// Softmax: from opset 13 along one axis (default -1); before, over the input flattened to 2-D at
// `axis` (default 1), the dims from `axis` on as one
inline Tensor softmax(const OpCall& c) {
  const Tensor& x = c.in(0);
  if (c.opset >= 13) return x.softmax(static_cast<int>(c.int_attr("axis", -1)));
  const std::vector<int64_t> dims = x.shape().to_vector();
  int64_t axis = c.int_attr("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(dims.size());
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < dims.size(); ++i) (static_cast<int64_t>(i) < axis ? outer : inner) *= dims[i];
  return x.reshape(Shape{outer, inner}).softmax(1).reshape(x.shape());
}

// Gemm: alpha·A'·B' + beta·C, A' and B' transposed where transA, transB say
inline Tensor gemm(const OpCall& c) {
  Tensor a = c.in(0), b = c.in(1);
  if (c.int_attr("transA", 0)) a = a.transpose();
  if (c.int_attr("transB", 0)) b = b.transpose();
  const float alpha = c.float_attr("alpha", 1.0f), beta = c.float_attr("beta", 1.0f);
  Tensor y = a.matmul(b);
  if (alpha != 1.0f) y = y * alpha;
  if (c.has(2)) y = y + (beta == 1.0f ? c.in(2) : c.in(2) * beta);
  return y;
}

// Constant: its one value attribute as a tensor
inline Tensor constant(const OpCall& c) {
  for (const Attribute& a : c.node.attributes) {
    if (a.name == "value" && a.t) return *a.t;
    if (a.name == "value_float") return Tensor::full(Shape{}, a.f, dtypes::float32);
    if (a.name == "value_floats") return Tensor::from_vector(a.floats);
    if (a.name == "value_int") return Tensor::full(Shape{}, a.i, dtypes::int64);
    if (a.name == "value_ints") return Tensor::from_vector(a.ints);
  }
  throw UnsupportedError(tinyt::detail::cat("onnx: Constant node '", c.node.name, "': no value, value_float(s) or value_int(s) attribute"));
}

// LogSoftmax: as Softmax, by opset
inline Tensor log_softmax(const OpCall& c) {
  const Tensor& x = c.in(0);
  if (c.opset >= 13) return x.log_softmax(static_cast<int>(c.int_attr("axis", -1)));
  const std::vector<int64_t> dims = x.shape().to_vector();
  int64_t axis = c.int_attr("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(dims.size());
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < dims.size(); ++i) (static_cast<int64_t>(i) < axis ? outer : inner) *= dims[i];
  return x.reshape(Shape{outer, inner}).log_softmax(1).reshape(x.shape());
}

// Shape: the input's dims from `start` to `end` (opset 15; negative counts from the back, both clamped)
inline Tensor shape_of(const OpCall& c) {
  const std::vector<int64_t> dims = c.in(0).shape().to_vector();
  const auto rank = static_cast<int64_t>(dims.size());
  const auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clamp(c.int_attr("start", 0)), end = clamp(c.int_attr("end", rank));
  std::vector<int64_t> out(dims.begin() + start, dims.begin() + std::max(start, end));
  return Tensor::from_vector(out, Shape{static_cast<int64_t>(out.size())});
}

// a variadic op (Max, Min, Sum, Mean): its inputs folded pairwise, broadcasting
inline Tensor fold(const OpCall& c, const std::function<Tensor(const Tensor&, const Tensor&)>& f) {
  Tensor acc = c.in(0);
  for (size_t i = 1; i < c.inputs.size(); ++i) acc = f(acc, c.in(i));
  return acc;
}

// Div: of integers, the quotient truncated toward zero (C's), as ONNX defines it
inline Tensor div(const OpCall& c) {
  const Tensor &a = c.in(0), &b = c.in(1);
  if (!a.dtype().is_int()) return a.div(b);
  const Tensor floored = a.floordiv(b);
  const Tensor inexact = (a - floored * b).ne(Tensor::zeros_like(a)), opposite = a.lt(Tensor::zeros_like(a)).logical_xor(b.lt(Tensor::zeros_like(b)));
  return floored + inexact.logical_and(opposite).cast(a.dtype());
}

// the axes an op takes from its attribute `axes` before opset `from`, from input `input` after
// (empty: none given)
inline std::vector<int64_t> axes_of(const OpCall& c, int64_t from, size_t input) {
  if (c.opset < from) {
    const Attribute* a = c.attribute("axes");
    return a ? a->ints : std::vector<int64_t>{};
  }
  return c.has(input) ? c.host_ints(input) : std::vector<int64_t>{};
}

// Reduce{Sum,Max,Min,Mean,Prod}: over `axes` (none: all, or none at all with
// noop_with_empty_axes), dims kept where keepdims (default 1), in the input's type
inline Tensor reduce(const OpCall& c, int64_t axes_input_from, Tensor (Tensor::*op)(std::vector<int>, bool) const) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> axes = axes_of(c, axes_input_from, 1);
  if (axes.empty() && c.int_attr("noop_with_empty_axes", 0)) return x;
  std::vector<int> dims;
  const auto rank = static_cast<int64_t>(x.shape().to_vector().size());
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) dims.push_back(static_cast<int>(i));
  for (const int64_t a : axes) dims.push_back(static_cast<int>(a < 0 ? a + rank : a));
  return (x.*op)(dims, c.int_attr("keepdims", 1) != 0).cast(x.dtype());
}

// Unsqueeze: new dims of 1 at `axes` of the output (attribute before opset 13, input after)
inline Tensor unsqueeze(const OpCall& c) {
  Tensor x = c.in(0);
  std::vector<int64_t> axes = axes_of(c, 13, 1);
  const auto rank = static_cast<int64_t>(x.shape().to_vector().size() + axes.size());
  for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  std::sort(axes.begin(), axes.end());
  for (const int64_t a : axes) x = x.unsqueeze(static_cast<int>(a));
  return x;
}

// Squeeze: the dims of 1 at `axes` removed (none given: every dim of 1)
inline Tensor squeeze(const OpCall& c) {
  Tensor x = c.in(0);
  std::vector<int64_t> axes = axes_of(c, 13, 1);
  if (axes.empty()) return x.squeeze();
  const auto rank = static_cast<int64_t>(x.shape().to_vector().size());
  for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  std::sort(axes.rbegin(), axes.rend());
  for (const int64_t a : axes) x = x.squeeze(static_cast<int>(a));
  return x;
}

inline Tensor concat(const OpCall& c) {
  std::vector<Tensor> parts;
  for (size_t i = 0; i < c.inputs.size(); ++i) parts.push_back(c.in(i));
  return Tensor::cat(parts, static_cast<int>(c.int_attr("axis", 0)));
}

// ConstantOfShape: the value attribute's one element (default float 0) over the shape input
inline Tensor constant_of_shape(const OpCall& c) {
  const std::vector<int64_t> dims = c.host_ints(0);
  const Attribute* value = c.attribute("value");
  const Tensor one = value && value->t ? value->t->reshape(Shape{}) : Tensor::full(Shape{}, 0.0f, dtypes::float32);
  return one.expand(Shape(dims)).contiguous();
}

// Expand: the input broadcast with the shape input, both ways (numpy's rule), as ONNX's
inline Tensor expand(const OpCall& c) {
  std::vector<int64_t> have = c.in(0).shape().to_vector(), want = c.host_ints(1);
  const size_t rank = std::max(have.size(), want.size());
  have.insert(have.begin(), rank - have.size(), 1);
  want.insert(want.begin(), rank - want.size(), 1);
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (have[i] != want[i] && have[i] != 1 && want[i] != 1)
      throw ShapeError(tinyt::detail::cat("onnx: Expand node '", c.node.name, "': dim ", i, " of ", have[i], " does not broadcast with ", want[i]));
    out[i] = have[i] == 1 ? want[i] : have[i];
  }
  return c.in(0).reshape(Shape(have)).expand(Shape(out));
}

// Range: start, start + delta, ... before limit, in the inputs' type
inline Tensor range(const OpCall& c) {
  const auto scalar = [&](size_t i) { return c.in(i).cast(dtypes::float64).to_vector<double>().at(0); };
  const double start = scalar(0), limit = scalar(1), delta = scalar(2);
  const auto count = static_cast<int64_t>(std::max(std::ceil((limit - start) / delta), 0.0));
  const Tensor steps = Tensor::arange(count).cast(dtypes::float64);
  return (steps * delta + start).cast(c.in(0).dtype());
}

// Clip: bounded below and above where the bounds are given (inputs from opset 11, attributes before)
inline Tensor clip(const OpCall& c) {
  Tensor x = c.in(0);
  if (c.opset < 11) {
    if (const Attribute* lo = c.attribute("min")) x = x.maximum(Tensor::full(Shape{}, lo->f, x.dtype()));
    if (const Attribute* hi = c.attribute("max")) x = x.minimum(Tensor::full(Shape{}, hi->f, x.dtype()));
    return x;
  }
  if (c.has(1)) x = x.maximum(c.in(1));
  if (c.has(2)) x = x.minimum(c.in(2));
  return x;
}

// Flatten: two dims, the input's before `axis` (default 1) and from it
inline Tensor flatten(const OpCall& c) {
  const std::vector<int64_t> dims = c.in(0).shape().to_vector();
  int64_t axis = c.int_attr("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(dims.size());
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < dims.size(); ++i) (static_cast<int64_t>(i) < axis ? outer : inner) *= dims[i];
  return c.in(0).reshape(Shape{outer, inner});
}

// Gather: numpy's take along `axis`, a negative index counting from the end of the axis
inline Tensor gather(const OpCall& c) {
  const Tensor& x = c.in(0);
  const auto rank = static_cast<int64_t>(x.shape().to_vector().size());
  int64_t axis = c.int_attr("axis", 0);
  if (axis < 0) axis += rank;
  const Tensor& idx = c.in(1);
  const Tensor size = Tensor::full(Shape{}, x.shape().to_vector().at(static_cast<size_t>(axis)), idx.dtype());
  const Tensor zero = Tensor::zeros_like(idx);
  const Tensor wrapped = idx.lt(zero).where(idx + size, idx);
  std::vector<Index> at(static_cast<size_t>(axis), Slice());
  at.emplace_back(wrapped);
  return x[at];
}

// Mod: with fmod 0, integers' remainder takes the divisor's sign (Python's); with fmod 1, the
// dividend's (C's fmod)
inline Tensor mod(const OpCall& c) {
  const Tensor &a = c.in(0), &b = c.in(1);
  if (!c.int_attr("fmod", 0)) return a.mod(b);
  if (a.dtype().is_float()) return a - (a / b).trunc() * b;
  return a - div(c) * b;
}

// Slice: per axis a start, an end and a step (inputs from opset 10, attributes before, without
// steps), clamped as ONNX clamps them: to [0, dim] stepping up, to [-1, dim - 1] stepping down
// (-1: past the first element)
inline Tensor slice(const OpCall& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> dims = x.shape().to_vector();
  const auto rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10) {
    const auto ints = [&](const char* name) {
      const Attribute* a = c.attribute(name);
      return a ? a->ints : std::vector<int64_t>{};
    };
    starts = ints("starts"), ends = ints("ends"), axes = ints("axes");
  } else {
    starts = c.host_ints(1), ends = c.host_ints(2);
    if (c.has(3)) axes = c.host_ints(3);
    if (c.has(4)) steps = c.host_ints(4);
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw ShapeError(tinyt::detail::cat("onnx: Slice node '", c.node.name, "': ", starts.size(), " starts, ", ends.size(), " ends, ", axes.size(),
                                        " axes and ", steps.size(), " steps"));
  std::vector<Index> at(static_cast<size_t>(rank), Slice());
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i], dim = dims.at(static_cast<size_t>(axis)), step = steps[i];
    if (step == 0) throw ShapeError(tinyt::detail::cat("onnx: Slice node '", c.node.name, "': a step of 0"));
    const auto from_end = [&](int64_t v) { return v < 0 ? (v < -dim ? -dim - 1 : v + dim) : v; };
    int64_t start = from_end(starts[i]), end = from_end(ends[i]);
    Slice s;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim), end = std::clamp<int64_t>(end, 0, dim);
      s.start = start, s.stop = std::max(start, end);
    } else {
      start = std::clamp<int64_t>(start, -1, dim - 1), end = std::clamp<int64_t>(end, -1, dim - 1);
      if (start >= 0) s.start = start;
      else s.start = 0, s.stop = 0;  // nothing
      if (start >= 0 && end >= 0) s.stop = std::min(start, end);
    }
    s.step = step;
    at[static_cast<size_t>(axis)] = s;
  }
  return x[at];
}

// ArgMax, ArgMin: int64 indices along `axis`, dims kept where keepdims; the last of equal values
// where select_last_index (the first found in the flipped axis)
inline Tensor arg_extreme(const OpCall& c, bool largest) {
  const Tensor& x = c.in(0);
  const auto rank = static_cast<int64_t>(x.shape().to_vector().size());
  int64_t axis = c.int_attr("axis", 0);
  if (axis < 0) axis += rank;
  const bool keep = c.int_attr("keepdims", 1) != 0, last = c.int_attr("select_last_index", 0) != 0;
  const Tensor in = last ? x.flip(static_cast<int>(axis)) : x;
  Tensor idx = (largest ? in.argmax(static_cast<int>(axis), keep) : in.argmin(static_cast<int>(axis), keep)).cast(dtypes::int64);
  if (last) idx = Tensor::full(Shape{}, x.shape().to_vector().at(static_cast<size_t>(axis)) - 1, dtypes::int64) - idx;
  return idx;
}

// Split: along `axis` into the sizes given (input from opset 13, attribute before), else into
// num_outputs (or as many as the node's outputs) parts, the last smaller where they do not divide
inline std::vector<Tensor> split(const OpCall& c) {
  const Tensor& x = c.in(0);
  const auto rank = static_cast<int64_t>(x.shape().to_vector().size());
  int64_t axis = c.int_attr("axis", 0);
  if (axis < 0) axis += rank;
  const int64_t dim = x.shape().to_vector().at(static_cast<size_t>(axis));
  std::vector<int64_t> sizes;
  if (c.opset < 13) {
    if (const Attribute* a = c.attribute("split")) sizes = a->ints;
  } else if (c.has(1)) {
    sizes = c.host_ints(1);
  }
  if (sizes.empty()) {
    const int64_t parts = c.int_attr("num_outputs", static_cast<int64_t>(c.node.outputs.size()));
    const int64_t each = (dim + parts - 1) / parts;
    for (int64_t left = dim; left > 0; left -= each) sizes.push_back(std::min(each, left));
    while (static_cast<int64_t>(sizes.size()) < parts) sizes.push_back(0);
  }
  return x.split(sizes, static_cast<int>(axis));
}

// GatherElements: PyTorch's gather along `axis`, a negative index counting from the end of the axis
inline Tensor gather_elements(const OpCall& c) {
  const Tensor &x = c.in(0), &idx = c.in(1);
  const auto rank = static_cast<int64_t>(x.shape().to_vector().size());
  int64_t axis = c.int_attr("axis", 0);
  if (axis < 0) axis += rank;
  const Tensor size = Tensor::full(Shape{}, x.shape().to_vector().at(static_cast<size_t>(axis)), idx.dtype());
  return x.gather(static_cast<int>(axis), idx.lt(Tensor::zeros_like(idx)).where(idx + size, idx));
}

// LayerNormalization: normalized over the dims from `axis` (default -1), in float32 (stash_type
// 1) for narrower inputs, scaled and shifted; its optional outputs the mean and 1/stddev, those
// dims kept as 1
inline std::vector<Tensor> layer_normalization(const OpCall& c) {
  const Tensor& x = c.in(0);
  const auto rank = static_cast<int64_t>(x.shape().to_vector().size());
  int64_t axis = c.int_attr("axis", -1);
  if (axis < 0) axis += rank;
  std::vector<int> dims;
  for (int64_t i = axis; i < rank; ++i) dims.push_back(static_cast<int>(i));
  const Tensor xf = x.dtype().itemsize() < 4 ? x.cast(dtypes::float32) : x;
  const Tensor mean = xf.mean(dims, true), centered = xf - mean;
  const Tensor inv_std = ((centered * centered).mean(dims, true) + c.float_attr("epsilon", 1e-5f)).rsqrt();
  Tensor y = (centered * inv_std).cast(x.dtype()) * c.in(1);
  if (c.has(2)) y = y + c.in(2);
  return {y, mean, inv_std};
}

inline Tensor transpose(const OpCall& c) {
  const Tensor& x = c.in(0);
  const Attribute* perm = c.attribute("perm");
  std::vector<int> order;
  const int64_t rank = static_cast<int64_t>(x.shape().to_vector().size());
  for (int64_t i = 0; i < rank; ++i) order.push_back(static_cast<int>(perm ? perm->ints.at(static_cast<size_t>(i)) : rank - 1 - i));
  return x.permute(order);
}
}  // namespace detail

/// The ops of the default domain the runner knows, by op type.
inline const std::map<std::string, OpFn>& default_ops() {
  using detail::one;
  static const std::map<std::string, OpFn> ops{
      {"Identity", [](const OpCall& c) { return one(c.in(0)); }},
      {"Add", [](const OpCall& c) { return one(c.in(0) + c.in(1)); }},
      {"Sub", [](const OpCall& c) { return one(c.in(0) - c.in(1)); }},
      {"Mul", [](const OpCall& c) { return one(c.in(0) * c.in(1)); }},
      {"Neg", [](const OpCall& c) { return one(c.in(0).neg()); }},
      {"Relu", [](const OpCall& c) { return one(c.in(0).relu()); }},
      {"Sigmoid", [](const OpCall& c) { return one(c.in(0).sigmoid()); }},
      {"Tanh", [](const OpCall& c) { return one(c.in(0).tanh()); }},
      {"Exp", [](const OpCall& c) { return one(c.in(0).exp()); }},
      {"MatMul", [](const OpCall& c) { return one(c.in(0).matmul(c.in(1))); }},
      {"Gemm", [](const OpCall& c) { return one(detail::gemm(c)); }},
      {"Reshape", [](const OpCall& c) { return one(c.in(0).reshape(detail::reshape_target(c))); }},
      {"Transpose", [](const OpCall& c) { return one(detail::transpose(c)); }},
      {"Softmax", [](const OpCall& c) { return one(detail::softmax(c)); }},
      {"Constant", [](const OpCall& c) { return one(detail::constant(c)); }},
      {"LogSoftmax", [](const OpCall& c) { return one(detail::log_softmax(c)); }},
      {"Shape", [](const OpCall& c) { return one(detail::shape_of(c)); }},
      {"Cast", [](const OpCall& c) { return one(c.in(0).cast(dtype_of(c.int_attr("to", 0), "Cast node '" + c.node.name + "'"))); }},
      {"CastLike", [](const OpCall& c) { return one(c.in(0).cast(c.in(1).dtype())); }},
      {"Abs", [](const OpCall& c) { return one(c.in(0).abs()); }},
      {"Sqrt", [](const OpCall& c) { return one(c.in(0).sqrt()); }},
      {"Log", [](const OpCall& c) { return one(c.in(0).log()); }},
      {"Floor", [](const OpCall& c) { return one(c.in(0).floor()); }},
      {"Ceil", [](const OpCall& c) { return one(c.in(0).ceil()); }},
      {"Reciprocal", [](const OpCall& c) { return one(c.in(0).reciprocal()); }},
      {"Sin", [](const OpCall& c) { return one(c.in(0).sin()); }},
      {"Cos", [](const OpCall& c) { return one(c.in(0).cos()); }},
      {"Tan", [](const OpCall& c) { return one(c.in(0).tan()); }},
      {"Sign", [](const OpCall& c) { return one(c.in(0).sign()); }},
      {"Erf", [](const OpCall& c) { return one(c.in(0).erf()); }},
      {"Round", [](const OpCall& c) { return one(c.in(0).round()); }},
      {"Not", [](const OpCall& c) { return one(c.in(0).logical_not()); }},
      {"IsNaN", [](const OpCall& c) { return one(c.in(0).isnan()); }},
      {"Div", [](const OpCall& c) { return one(detail::div(c)); }},
      {"Pow", [](const OpCall& c) { return one(c.in(0).pow(c.in(1)).cast(c.in(0).dtype())); }},  // (the base's type, as ONNX's)
      {"Equal", [](const OpCall& c) { return one(c.in(0).eq(c.in(1))); }},
      {"Less", [](const OpCall& c) { return one(c.in(0).lt(c.in(1))); }},
      {"LessOrEqual", [](const OpCall& c) { return one(c.in(0).le(c.in(1))); }},
      {"Greater", [](const OpCall& c) { return one(c.in(0).gt(c.in(1))); }},
      {"GreaterOrEqual", [](const OpCall& c) { return one(c.in(0).ge(c.in(1))); }},
      {"And", [](const OpCall& c) { return one(c.in(0).logical_and(c.in(1))); }},
      {"Or", [](const OpCall& c) { return one(c.in(0).logical_or(c.in(1))); }},
      {"Xor", [](const OpCall& c) { return one(c.in(0).logical_xor(c.in(1))); }},
      {"Where", [](const OpCall& c) { return one(c.in(0).where(c.in(1), c.in(2))); }},
      {"Max", [](const OpCall& c) { return one(detail::fold(c, [](const Tensor& a, const Tensor& b) { return a.maximum(b); })); }},
      {"Min", [](const OpCall& c) { return one(detail::fold(c, [](const Tensor& a, const Tensor& b) { return a.minimum(b); })); }},
      {"Sum", [](const OpCall& c) { return one(detail::fold(c, [](const Tensor& a, const Tensor& b) { return a + b; })); }},
      {"ReduceSum", [](const OpCall& c) { return one(detail::reduce(c, 13, &Tensor::sum)); }},
      {"ReduceMax", [](const OpCall& c) { return one(detail::reduce(c, 18, &Tensor::max)); }},
      {"ReduceMin", [](const OpCall& c) { return one(detail::reduce(c, 18, &Tensor::min)); }},
      {"ReduceMean", [](const OpCall& c) { return one(detail::reduce(c, 18, &Tensor::mean)); }},
      {"ReduceProd", [](const OpCall& c) { return one(detail::reduce(c, 18, &Tensor::prod)); }},
      {"Unsqueeze", [](const OpCall& c) { return one(detail::unsqueeze(c)); }},
      {"Squeeze", [](const OpCall& c) { return one(detail::squeeze(c)); }},
      {"Concat", [](const OpCall& c) { return one(detail::concat(c)); }},
      {"Size", [](const OpCall& c) { return one(Tensor::full(Shape{}, c.in(0).numel(), dtypes::int64)); }},
      {"ConstantOfShape", [](const OpCall& c) { return one(detail::constant_of_shape(c)); }},
      {"Expand", [](const OpCall& c) { return one(detail::expand(c)); }},
      {"Range", [](const OpCall& c) { return one(detail::range(c)); }},
      {"Clip", [](const OpCall& c) { return one(detail::clip(c)); }},
      {"Flatten", [](const OpCall& c) { return one(detail::flatten(c)); }},
      {"Gather", [](const OpCall& c) { return one(detail::gather(c)); }},
      {"Mod", [](const OpCall& c) { return one(detail::mod(c)); }},
      {"Elu", [](const OpCall& c) { return one(c.in(0).elu(c.float_attr("alpha", 1.0f))); }},
      {"LeakyRelu", [](const OpCall& c) { return one(c.in(0).leaky_relu(c.float_attr("alpha", 0.01f))); }},
      {"Selu", [](const OpCall& c) {
         return one(c.in(0).elu(c.float_attr("alpha", 1.67326319217681884765625f)) * c.float_attr("gamma", 1.05070102214813232421875f));
       }},
      {"Softplus", [](const OpCall& c) { return one(c.in(0).softplus()); }},
      {"Softsign", [](const OpCall& c) { return one(c.in(0) / (c.in(0).abs() + 1.0f)); }},
      {"HardSigmoid", [](const OpCall& c) {
         return one((c.in(0) * c.float_attr("alpha", 0.2f) + c.float_attr("beta", 0.5f)).maximum(Tensor::zeros_like(c.in(0))).minimum(Tensor::ones_like(c.in(0))));
       }},
      {"HardSwish", [](const OpCall& c) { return one(c.in(0).hardswish()); }},
      {"Mish", [](const OpCall& c) { return one(c.in(0).mish()); }},
      {"PRelu", [](const OpCall& c) { return one(c.in(0).lt(Tensor::zeros_like(c.in(0))).where(c.in(0) * c.in(1), c.in(0))); }},
      {"ThresholdedRelu", [](const OpCall& c) {
         return one(c.in(0).gt(Tensor::full(Shape{}, c.float_attr("alpha", 1.0f), c.in(0).dtype())).where(c.in(0), Tensor::zeros_like(c.in(0))));
       }},
      {"Slice", [](const OpCall& c) { return one(detail::slice(c)); }},
      {"ArgMax", [](const OpCall& c) { return one(detail::arg_extreme(c, true)); }},
      {"ArgMin", [](const OpCall& c) { return one(detail::arg_extreme(c, false)); }},
      {"Split", [](const OpCall& c) { return detail::split(c); }},
      {"GatherElements", [](const OpCall& c) { return one(detail::gather_elements(c)); }},
      {"LayerNormalization", [](const OpCall& c) { return detail::layer_normalization(c); }},
      {"Mean", [](const OpCall& c) {
         return one(detail::fold(c, [](const Tensor& a, const Tensor& b) { return a + b; }) / static_cast<float>(c.inputs.size()));
       }},
  };
  return ops;
}

}  // namespace onnx
}  // namespace tinyt::inline v0
