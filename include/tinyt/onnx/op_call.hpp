// What an ONNX op's function gets (its node, inputs and the model's opset) and gives (its
// outputs): the runner's ops (onnx/ops.hpp) are such functions.
#pragma once

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
  /// Runs one of the node's graph attributes (If's branches, Loop's and Scan's bodies) on its
  /// inputs, seeing the values of the graph around the node: its outputs in order.
  std::function<std::vector<Tensor>(const Graph&, const std::vector<Tensor>&)> run_graph = {};

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
  /// The `axis` attribute (default `fallback`) among input 0's dims, a negative one counted from the end.
  int64_t axis(int64_t fallback) const {
    const int64_t a = int_attr("axis", fallback);
    return a < 0 ? a + static_cast<int64_t>(in(0).shape().to_vector().size()) : a;
  }
  std::vector<int64_t> ints_attr(const std::string& name, std::vector<int64_t> fallback = {}) const {
    const Attribute* a = attribute(name);
    return a ? a->ints : fallback;
  }
  std::string string_attr(const std::string& name, std::string fallback) const {
    const Attribute* a = attribute(name);
    return a ? a->s : fallback;
  }
  /// The graph attribute `name`, which the op needs: a ShapeError naming the node when it is missing.
  const Graph& graph_attr(const std::string& name) const {
    const Attribute* a = attribute(name);
    if (!a || !a->g) throw ShapeError(tinyt::detail::cat("onnx: ", node.op_type, " node '", node.name, "' has no graph '", name, "'"));
    return *a->g;
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
/// An op's one output.
inline std::vector<Tensor> one(Tensor t) { return {std::move(t)}; }

// The ops cut tensors with shrink, not t[{Slice(..)}]: GCC 12's ASan build (-O1) warns, falsely,
// that a copied Slice's empty optional may be read uninitialized, and CI builds with -Werror.

/// `t` cut to [begin, end) along `axis` (negative: from the end).
inline Tensor cut(const Tensor& t, int64_t axis, int64_t begin, int64_t end) {
  std::vector<std::pair<sint, sint>> keep;
  for (const sint& d : t.shape()) keep.emplace_back(0, d);
  keep.at(static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(t.ndim()) : axis)) = {begin, end};
  return t.shrink(keep);
}
/// `x` in float32 where its type is narrower (float16, bfloat16): how ONNX's normalizations
/// compute (stash_type 1).
inline Tensor widened(const Tensor& x) { return x.dtype().itemsize() < 4 ? x.cast(dtypes::float32) : x; }
/// Element `i` of `axis`, that dim removed.
inline Tensor pick(const Tensor& t, int64_t axis, int64_t i) {
  const int64_t a = axis < 0 ? axis + static_cast<int64_t>(t.ndim()) : axis;
  return cut(t, a, i, i + 1).squeeze(static_cast<int>(a));
}
}  // namespace detail

}  // namespace onnx
}  // namespace tinyt::inline v0
