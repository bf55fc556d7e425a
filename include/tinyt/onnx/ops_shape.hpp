// The ONNX ops that move, cut, join and index tensors, or make them (Reshape .. Range), where a
// Tensor op alone does not say ONNX's semantics: their functions, in the table of onnx/ops.hpp.
#pragma once

#include <algorithm>

#include "op_call.hpp"

namespace tinyt::inline v0 {
namespace onnx {
namespace detail {

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

// Shape: the input's dims from `start` to `end` (opset 15; negative counts from the back, both clamped)
inline Tensor shape_of(const OpCall& c) {
  const std::vector<int64_t> dims = c.in(0).shape().to_vector();
  const auto rank = static_cast<int64_t>(dims.size());
  const auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clamp(c.int_attr("start", 0)), end = clamp(c.int_attr("end", rank));
  std::vector<int64_t> out(dims.begin() + start, dims.begin() + std::max(start, end));
  return Tensor::from_vector(out, Shape{static_cast<int64_t>(out.size())});
}

// the axes an op takes from its attribute `axes` before opset `from`, from input `input` after
// (empty: none given)
inline std::vector<int64_t> axes_of(const OpCall& c, int64_t from, size_t input) {
  if (c.opset < from) return c.ints_attr("axes");
  return c.has(input) ? c.host_ints(input) : std::vector<int64_t>{};
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

// The input as two dims: those before `axis` (negative: from the end) and those from it
inline Tensor flattened_2d(const Tensor& x, int64_t axis) {
  const std::vector<int64_t> dims = x.shape().to_vector();
  if (axis < 0) axis += static_cast<int64_t>(dims.size());
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < dims.size(); ++i) (static_cast<int64_t>(i) < axis ? outer : inner) *= dims[i];
  return x.reshape(Shape{outer, inner});
}

// Flatten: two dims, the input's before `axis` (default 1) and from it
inline Tensor flatten(const OpCall& c) { return flattened_2d(c.in(0), c.int_attr("axis", 1)); }

// Indices into dim `axis` of `x`, a negative one counted from the end of the dim (Gather's, GatherElements')
inline Tensor from_end(const Tensor& idx, const Tensor& x, int64_t axis) {
  const Tensor size = Tensor::full(Shape{}, x.shape().to_vector().at(static_cast<size_t>(axis)), idx.dtype());
  return idx.lt(Tensor::zeros_like(idx)).where(idx + size, idx);
}

// Gather: numpy's take along `axis`: the indices' dims in place of that axis
inline Tensor gather(const OpCall& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = c.axis(0);
  const auto a = static_cast<size_t>(axis);
  std::vector<int64_t> before(x.shape().to_vector()), after;
  after.assign(before.begin() + static_cast<std::ptrdiff_t>(a) + 1, before.end());
  const int64_t n = before.at(a);
  before.resize(a);
  int64_t outer = 1, inner = 1;
  for (const int64_t d : before) outer *= d;
  for (const int64_t d : after) inner *= d;
  const Tensor idx = from_end(c.in(1), x, axis).cast(dtypes::int64);
  const std::vector<int64_t> is = idx.shape().to_vector();
  const int64_t m = idx.numel();
  // (outer, n, inner) read at (outer, m, inner)
  const Tensor at = idx.reshape({1, m, 1}).expand({outer, m, inner});
  std::vector<int64_t> out = before;
  out.insert(out.end(), is.begin(), is.end());
  out.insert(out.end(), after.begin(), after.end());
  return x.reshape({outer, n, inner}).gather(1, at).reshape(Shape(out));
}

// `x`'s elements start, start + step, .. along `axis` before `stop` (stepping down: after it),
// from bounds already clamped into the dim
inline Tensor strided(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step) {
  const int64_t dim = x.shape().to_vector().at(static_cast<size_t>(axis));
  Tensor t = x;
  if (step < 0) {  // the flipped dim, stepping up: index i is dim - 1 - i there
    t = t.flip(static_cast<int>(axis));
    start = dim - 1 - start, stop = dim - 1 - stop, step = -step;
  }
  const int64_t count = stop > start ? (stop - start + step - 1) / step : 0;
  t = cut(t, axis, start, start + std::min(count * step, dim - start));
  if (step == 1 || count == 0) return cut(t, axis, 0, count);
  // padded to count·step, the dim as (count, step), the first of each
  std::vector<std::pair<sint, sint>> grow(t.ndim(), {0, 0});
  grow[static_cast<size_t>(axis)] = {0, count * step - t.shape().to_vector()[static_cast<size_t>(axis)]};
  std::vector<int64_t> rows = t.shape().to_vector();
  rows[static_cast<size_t>(axis)] = count;
  rows.insert(rows.begin() + static_cast<std::ptrdiff_t>(axis) + 1, step);
  return pick(t.pad(grow).reshape(Shape(rows)), axis + 1, 0);
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
    starts = c.ints_attr("starts"), ends = c.ints_attr("ends"), axes = c.ints_attr("axes");
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
  Tensor y = x;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i], dim = dims.at(static_cast<size_t>(axis)), step = steps[i];
    if (step == 0) throw ShapeError(tinyt::detail::cat("onnx: Slice node '", c.node.name, "': a step of 0"));
    const auto from_end = [&](int64_t v) { return v < 0 ? (v < -dim ? -dim - 1 : v + dim) : v; };
    int64_t start = from_end(starts[i]), end = from_end(ends[i]);
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim), end = std::clamp<int64_t>(end, 0, dim);
    } else {
      start = std::clamp<int64_t>(start, -1, dim - 1), end = std::clamp<int64_t>(end, -1, dim - 1);
    }
    y = strided(y, axis, start, end, step);
  }
  return y;
}

// Split: along `axis` into the sizes given (input from opset 13, attribute before), else into
// num_outputs (or as many as the node's outputs) parts, the last smaller where they do not divide
inline std::vector<Tensor> split(const OpCall& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = c.axis(0);
  const int64_t dim = x.shape().to_vector().at(static_cast<size_t>(axis));
  std::vector<int64_t> sizes;
  if (c.opset < 13) {
    sizes = c.ints_attr("split");
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

// GatherElements: PyTorch's gather along `axis`
inline Tensor gather_elements(const OpCall& c) {
  const int64_t axis = c.axis(0);
  return c.in(0).gather(static_cast<int>(axis), from_end(c.in(1), c.in(0), axis));
}

inline Tensor transpose(const OpCall& c) {
  const Tensor& x = c.in(0);
  const Attribute* perm = c.attribute("perm");
  std::vector<int> order;
  const int64_t rank = static_cast<int64_t>(x.shape().to_vector().size());
  for (int64_t i = 0; i < rank; ++i) order.push_back(static_cast<int>(perm ? perm->ints.at(static_cast<size_t>(i)) : rank - 1 - i));
  return x.permute(order);
}

// Trilu: the upper (upper = 1, the default) or lower triangle of the last two dims, from the
// k-th diagonal (input 1, default 0); the rest zeros
inline Tensor trilu(const OpCall& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> dims = x.shape().to_vector();
  if (dims.size() < 2) throw ShapeError(tinyt::detail::cat("onnx: Trilu node '", c.node.name, "': the input has fewer than 2 dims"));
  const int64_t k = c.has(1) ? c.host_ints(1).at(0) : 0, rows = dims[dims.size() - 2], cols = dims.back();
  const Tensor diagonal = Tensor::arange(cols).reshape(Shape{1, cols}) - Tensor::arange(rows).reshape(Shape{rows, 1});  // col - row
  const Tensor k_t = Tensor::full(Shape{}, k, diagonal.dtype());
  const Tensor keep = c.int_attr("upper", 1) ? diagonal.ge(k_t) : diagonal.le(k_t);
  return keep.where(x, Tensor::zeros_like(x));
}

// Tile: the input repeated along each dim as often as input 1 says
inline Tensor tile(const OpCall& c) { return c.in(0).repeat(Shape(c.host_ints(1))); }

// DepthToSpace: blocks of blocksize² channels become blocksize × blocksize pixels; DCR takes the
// block's offset from the channel's high part, CRD from its low part
inline Tensor depth_to_space(const OpCall& c) {
  const std::vector<int64_t> s = c.in(0).shape().to_vector();
  const int64_t b = c.int_attr("blocksize", 1), n = s.at(0), ch = s.at(1) / (b * b), h = s.at(2), w = s.at(3);
  if (c.string_attr("mode", "DCR") == "CRD")
    return c.in(0).reshape({n, ch, b, b, h, w}).permute({0, 1, 4, 2, 5, 3}).reshape({n, ch, h * b, w * b});
  return c.in(0).reshape({n, b, b, ch, h, w}).permute({0, 3, 4, 1, 5, 2}).reshape({n, ch, h * b, w * b});
}

// SpaceToDepth: DepthToSpace's inverse, in the same modes
inline Tensor space_to_depth(const OpCall& c) {
  const std::vector<int64_t> s = c.in(0).shape().to_vector();
  const int64_t b = c.int_attr("blocksize", 1), n = s.at(0), ch = s.at(1), h = s.at(2) / b, w = s.at(3) / b;
  if (c.string_attr("mode", "DCR") == "CRD")
    return c.in(0).reshape({n, ch, h, b, w, b}).permute({0, 1, 3, 5, 2, 4}).reshape({n, ch * b * b, h, w});
  return c.in(0).reshape({n, ch, h, b, w, b}).permute({0, 3, 5, 1, 2, 4}).reshape({n, ch * b * b, h, w});
}

// EyeLike: ones on the k-th diagonal of a 2-d tensor of the input's shape, in `dtype` (default the input's)
inline Tensor eye_like(const OpCall& c) {
  const std::vector<int64_t> s = c.in(0).shape().to_vector();
  const Attribute* dt = c.attribute("dtype");
  const DType type = dt ? dtype_of(dt->i, "EyeLike node '" + c.node.name + "'") : c.in(0).dtype();
  const Tensor rows = Tensor::arange(s.at(0)).cast(dtypes::int64).reshape({s[0], 1}), cols = Tensor::arange(s.at(1)).cast(dtypes::int64).reshape({1, s[1]});
  return (cols - rows).eq(Tensor::full(Shape{}, c.int_attr("k", 0), dtypes::int64)).cast(type);
}

// OneHot: along a new dim at `axis` (default last) of size depth, values[1] where the index is
// (negative: from the end), values[0] elsewhere
inline Tensor one_hot(const OpCall& c) {
  const Tensor& indices = c.in(0);
  const int64_t depth = static_cast<int64_t>(c.in(1).cast(dtypes::float64).item<double>());
  const Tensor values = c.in(2);
  const auto rank = static_cast<int64_t>(indices.shape().to_vector().size()) + 1;
  int64_t axis = c.int_attr("axis", -1);
  if (axis < 0) axis += rank;
  Tensor idx = indices.cast(dtypes::int64);
  idx = idx.lt(Tensor::zeros_like(idx)).where(idx + depth, idx).unsqueeze(static_cast<int>(axis));
  std::vector<int64_t> along(static_cast<size_t>(rank), 1);
  along[static_cast<size_t>(axis)] = depth;
  const Tensor hot = Tensor::arange(depth).cast(dtypes::int64).reshape(Shape(along)).eq(idx);
  return hot.where(values[{1}], values[{0}]);
}

// Pad: (before..., after...) per axis (input 1 from opset 11, attribute before; only the axes of
// input 3 where given), in mode constant (value: input 2, or the attribute before opset 11),
// reflect, edge or wrap; a negative amount cuts
inline Tensor pad(const OpCall& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> s = x.shape().to_vector();
  const auto rank = static_cast<int64_t>(s.size());
  const std::vector<int64_t> amounts = c.opset >= 11 ? c.host_ints(1) : c.ints_attr("pads");
  std::vector<int64_t> axes;
  if (c.has(3))
    for (const int64_t a : c.host_ints(3)) axes.push_back(a < 0 ? a + rank : a);
  else
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  if (amounts.size() != 2 * axes.size())
    throw ShapeError(tinyt::detail::cat("onnx: Pad node '", c.node.name, "': ", amounts.size(), " pads for ", axes.size(), " axes of shape ", x.shape()));
  std::vector<std::pair<sint, sint>> cut, grow(s.size(), {0, 0});
  for (const int64_t d : s) cut.emplace_back(0, d);
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto a = static_cast<size_t>(axes[i]);
    const int64_t before = amounts[i], after = amounts[axes.size() + i];
    cut[a] = {std::max<int64_t>(0, -before), s[a] - std::max<int64_t>(0, -after)};
    grow[a] = {std::max<int64_t>(0, before), std::max<int64_t>(0, after)};
  }
  const std::string mode = c.string_attr("mode", "constant");
  const Tensor kept = x.shrink(cut);
  if (mode == "constant") {
    double value = c.opset >= 11 ? 0.0 : c.float_attr("value", 0.0f);
    if (c.opset >= 11 && c.has(2)) value = c.in(2).cast(dtypes::float64).item<double>();
    return kept.pad(grow, value);
  }
  const std::map<std::string, std::string> modes{{"reflect", "reflect"}, {"edge", "replicate"}, {"wrap", "circular"}};
  const auto it = modes.find(mode);
  if (it == modes.end()) throw UnsupportedError(tinyt::detail::cat("onnx: Pad node '", c.node.name, "': mode '", mode, "'"));
  return kept.pad(grow, it->second);
}

// ScatterElements (and Scatter, its old name): updates written into a copy of data at indices
// along `axis` (negative: from the end of the dim), or combined there by `reduction`
inline Tensor scatter_elements(const OpCall& c) {
  const Tensor& data = c.in(0);
  const int64_t axis = c.axis(0);
  const Tensor index = from_end(c.in(1), data, axis);
  const std::string reduction = c.string_attr("reduction", "none");
  if (reduction == "none") return data.scatter(static_cast<int>(axis), index, c.in(2));
  const std::map<std::string, std::string> reduce{{"add", "sum"}, {"mul", "prod"}, {"max", "amax"}, {"min", "amin"}};
  const auto it = reduce.find(reduction);
  if (it == reduce.end()) throw UnsupportedError(tinyt::detail::cat("onnx: ", c.node.op_type, " node '", c.node.name, "': reduction '", reduction, "'"));
  return data.scatter_reduce(static_cast<int>(axis), index, c.in(2), it->second);
}

// the flat position, among the first k dims of `shape` from `from`, that each index tuple (the
// last dim of `indices`, negative: from the end) names: (tuples...)
inline Tensor flat_positions(const Tensor& indices, const std::vector<int64_t>& shape, size_t from) {
  const std::vector<int64_t> is = indices.shape().to_vector();
  const int64_t k = is.back();
  Tensor flat = Tensor::zeros(Shape(std::vector<int64_t>(is.begin(), is.end() - 1)), dtypes::int64);
  const Tensor idx = indices.cast(dtypes::int64);
  for (int64_t i = 0; i < k; ++i) {
    const int64_t size = shape.at(from + static_cast<size_t>(i));
    Tensor at = idx[{Ellipsis, i}];
    at = at.lt(Tensor::zeros_like(at)).where(at + size, at);
    flat = flat * size + at;
  }
  return flat;
}

// ScatterND: updates (tuples..., slice) written into a copy of data at the slices the index
// tuples name, or combined there by `reduction`
inline Tensor scatter_nd(const OpCall& c) {
  const Tensor& data = c.in(0);
  const std::vector<int64_t> ds = data.shape().to_vector(), is = c.in(1).shape().to_vector();
  const auto k = static_cast<size_t>(is.back());
  int64_t slots = 1, slice = 1, tuples = 1;
  for (size_t i = 0; i < ds.size(); ++i) (i < k ? slots : slice) *= ds[i];
  for (size_t i = 0; i + 1 < is.size(); ++i) tuples *= is[i];
  const Tensor at = flat_positions(c.in(1), ds, 0).reshape({tuples, 1}).expand({tuples, slice});
  const Tensor updates = c.in(2).reshape({tuples, slice}), table = data.reshape({slots, slice});
  const std::string reduction = c.string_attr("reduction", "none");
  const std::map<std::string, std::string> reduce{{"add", "sum"}, {"mul", "prod"}, {"max", "amax"}, {"min", "amin"}};
  if (reduction == "none") return table.scatter(0, at, updates).reshape(data.shape());
  const auto it = reduce.find(reduction);
  if (it == reduce.end()) throw UnsupportedError(tinyt::detail::cat("onnx: ScatterND node '", c.node.name, "': reduction '", reduction, "'"));
  return table.scatter_reduce(0, at, updates, it->second).reshape(data.shape());
}

// GatherND: the slices of data that the index tuples (the last dim of indices) name, the first
// batch_dims dims shared by data and indices
inline Tensor gather_nd(const OpCall& c) {
  const Tensor& data = c.in(0);
  const std::vector<int64_t> ds = data.shape().to_vector(), is = c.in(1).shape().to_vector();
  const auto batch_dims = static_cast<size_t>(c.int_attr("batch_dims", 0));
  const auto k = static_cast<size_t>(is.back());
  int64_t batch = 1, slots = 1, slice = 1, tuples = 1;
  for (size_t i = 0; i < ds.size(); ++i) (i < batch_dims ? batch : i < batch_dims + k ? slots : slice) *= ds[i];
  for (size_t i = batch_dims; i + 1 < is.size(); ++i) tuples *= is[i];
  const Tensor at = flat_positions(c.in(1), ds, batch_dims).reshape({batch, tuples, 1}).expand({batch, tuples, slice});
  std::vector<int64_t> out(is.begin(), is.end() - 1);
  out.insert(out.end(), ds.begin() + static_cast<std::ptrdiff_t>(batch_dims + k), ds.end());
  return data.reshape({batch, slots, slice}).gather(1, at).reshape(Shape(out));
}

// TopK: the k (input 1 from opset 10, attribute before) largest or smallest along `axis`, in
// order, equal values by index; their int64 indices
inline std::vector<Tensor> top_k(const OpCall& c) {
  const int64_t k = c.opset >= 10 ? c.host_ints(1).at(0) : c.int_attr("k", 1);
  auto [values, indices] = c.in(0).topk(k, static_cast<int>(c.axis(-1)), c.int_attr("largest", 1) != 0);
  return {values, indices};
}

// CenterCropPad: each of `axes` (default all) cut or zero-padded to the size input 1 gives, about
// its centre (the odd element after)
inline Tensor center_crop_pad(const OpCall& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> s = x.shape().to_vector(), sizes = c.host_ints(1);
  const auto rank = static_cast<int64_t>(s.size());
  std::vector<int64_t> axes = c.ints_attr("axes");
  if (axes.empty())
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  std::vector<std::pair<sint, sint>> cut, grow(s.size(), {0, 0});
  for (const int64_t d : s) cut.emplace_back(0, d);
  for (size_t i = 0; i < axes.size() && i < sizes.size(); ++i) {
    const auto a = static_cast<size_t>(axes[i] < 0 ? axes[i] + rank : axes[i]);
    const int64_t want = sizes[i];
    if (want < s[a]) cut[a] = {(s[a] - want) / 2, (s[a] - want) / 2 + want};
    if (want > s[a]) grow[a] = {(want - s[a]) / 2, want - s[a] - (want - s[a]) / 2};
  }
  return x.shrink(cut).pad(grow);
}

// ReverseSequence: along time_axis, the first sequence_lens[b] elements of each batch b (along
// batch_axis) reversed, the rest as they are
inline Tensor reverse_sequence(const OpCall& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> s = x.shape().to_vector();
  const auto time = static_cast<size_t>(c.int_attr("time_axis", 0)), batch = static_cast<size_t>(c.int_attr("batch_axis", 1));
  // where each element reads from along the time axis: len - 1 - t inside its batch's length
  std::vector<int64_t> t_shape(s.size(), 1), b_shape(s.size(), 1);
  t_shape[time] = s[time], b_shape[batch] = s[batch];
  const Tensor t = Tensor::arange(s[time]).cast(dtypes::int64).reshape(Shape(t_shape));
  const Tensor len = c.in(1).cast(dtypes::int64).reshape(Shape(b_shape));
  const Tensor from = t.lt(len).where(len - 1 - t, t).expand(x.shape());
  return x.gather(static_cast<int>(time), from);
}

// TensorScatter: the update written into a copy of the cache along `axis` (default -2), batch
// b's from write_indices[b] (default 0) on, wrapping around in mode circular
inline Tensor tensor_scatter(const OpCall& c) {
  const Tensor &cache = c.in(0), &update = c.in(1);
  const std::vector<int64_t> us = update.shape().to_vector(), cs = cache.shape().to_vector();
  const auto rank = static_cast<int64_t>(us.size());
  int64_t axis = c.int_attr("axis", -2);
  if (axis < 0) axis += rank;
  std::vector<int64_t> along(us.size(), 1), per_batch(us.size(), 1);
  along[static_cast<size_t>(axis)] = us[static_cast<size_t>(axis)];
  per_batch[0] = us[0];
  const Tensor start = c.has(2) ? c.in(2).cast(dtypes::int64).reshape(Shape(per_batch)) : Tensor::zeros(Shape(per_batch), dtypes::int64);
  Tensor at = Tensor::arange(us[static_cast<size_t>(axis)]).cast(dtypes::int64).reshape(Shape(along)) + start;
  if (c.string_attr("mode", "linear") == "circular") at = at.mod(Tensor::full(Shape{}, cs[static_cast<size_t>(axis)], dtypes::int64));
  return cache.scatter(static_cast<int>(axis), at.expand(update.shape()), update);
}

}  // namespace detail
}  // namespace onnx
}  // namespace tinyt::inline v0
