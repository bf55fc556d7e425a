// The ONNX ops that run graphs of their own: If, Loop and Scan. Their conditions and trip counts
// are read on the host (what exporters produce: they depend on shapes and scalar inputs), so a
// branch is taken, or a body run once per step, building one lazy graph like any other op.
#pragma once

#include "ops_nn.hpp"

namespace tinyt::inline v0 {
namespace onnx {
namespace detail {

// a scalar input's truth, read on the host
inline bool host_bool(const Tensor& t) { return t.cast(dtypes::bool_).reshape({1}).item<bool>(); }

// If: the then_branch or the else_branch, as the condition says
inline std::vector<Tensor> if_(const OpCall& c) {
  return c.run_graph(c.graph_attr(host_bool(c.in(0)) ? "then_branch" : "else_branch"), {});
}

// the per-step outputs of a body stacked along `axis` (a new dim), in step order or reversed
inline Tensor stacked(std::vector<Tensor> steps, int64_t axis, bool reverse) {
  if (reverse) std::reverse(steps.begin(), steps.end());
  const auto rank = static_cast<int64_t>(steps.at(0).ndim()) + 1;
  return Tensor::stack(steps, static_cast<int>(axis < 0 ? axis + rank : axis));
}

// Loop: the body run while the step is below the trip count M (input 0, none: no bound) and its
// condition (input 1, then the body's first output) holds; loop-carried values pass from one
// step to the next; the body's further outputs are stacked along a new first dim
inline std::vector<Tensor> loop(const OpCall& c) {
  const Graph& body = c.graph_attr("body");
  const int64_t trips = c.has(0) ? c.host_ints(0).at(0) : std::numeric_limits<int64_t>::max();
  bool go = c.has(1) ? host_bool(c.in(1)) : true;
  std::vector<Tensor> carried;
  for (size_t i = 2; i < c.inputs.size(); ++i) carried.push_back(c.in(i));
  const size_t n_carried = carried.size();
  std::vector<std::vector<Tensor>> scans;
  for (int64_t step = 0; step < trips && go; ++step) {
    std::vector<Tensor> args{Tensor::full(Shape{}, step, dtypes::int64), Tensor::full(Shape{}, go, dtypes::bool_)};
    args.insert(args.end(), carried.begin(), carried.end());
    const std::vector<Tensor> out = c.run_graph(body, args);
    if (out.size() < 1 + n_carried)
      throw ShapeError(tinyt::detail::cat("onnx: Loop node '", c.node.name, "': the body gives ", out.size(), " outputs for ", n_carried, " loop-carried values"));
    go = host_bool(out[0]);
    for (size_t i = 0; i < n_carried; ++i) carried[i] = out[1 + i];
    scans.resize(out.size() - 1 - n_carried);
    for (size_t i = 0; i < scans.size(); ++i) scans[i].push_back(out[1 + n_carried + i]);
  }
  std::vector<Tensor> result = carried;
  for (const auto& steps : scans) result.push_back(stacked(steps, 0, false));
  return result;
}

// Scan (opset 9): the body run once per element of the scan inputs along their axes (reversed
// where scan_input_directions says); states pass from one step to the next; the body's further
// outputs are stacked along scan_output_axes (reversed where scan_output_directions says)
inline std::vector<Tensor> scan(const OpCall& c) {
  using tinyt::detail::cat;
  if (c.opset < 9) throw UnsupportedError(cat("onnx: Scan node '", c.node.name, "': opset ", c.opset, "'s form (with a batch dim) is not supported"));
  const Graph& body = c.graph_attr("body");
  const auto n_scan = static_cast<size_t>(c.int_attr("num_scan_inputs", 0));
  if (n_scan > c.inputs.size()) throw ShapeError(cat("onnx: Scan node '", c.node.name, "': ", n_scan, " scan inputs of ", c.inputs.size()));
  const size_t n_state = c.inputs.size() - n_scan;
  auto per_input = [&](const char* name, size_t n) {
    std::vector<int64_t> v = c.ints_attr(name);
    v.resize(n, 0);
    return v;
  };
  const std::vector<int64_t> in_axes = per_input("scan_input_axes", n_scan), in_reverse = per_input("scan_input_directions", n_scan);
  std::vector<Tensor> states;
  for (size_t i = 0; i < n_state; ++i) states.push_back(c.in(i));
  std::vector<Tensor> inputs;
  std::vector<int> axes;
  int64_t steps = -1;
  for (size_t j = 0; j < n_scan; ++j) {
    const Tensor& x = c.in(n_state + j);
    const auto rank = static_cast<int64_t>(x.ndim());
    const int64_t axis = in_axes[j] < 0 ? in_axes[j] + rank : in_axes[j];
    const int64_t n = x.shape().to_vector().at(static_cast<size_t>(axis));
    if (steps >= 0 && n != steps) throw ShapeError(cat("onnx: Scan node '", c.node.name, "': scan inputs of ", steps, " and ", n, " steps"));
    steps = n;
    inputs.push_back(in_reverse[j] ? x.flip(static_cast<int>(axis)) : x);
    axes.push_back(static_cast<int>(axis));
  }
  std::vector<std::vector<Tensor>> scans;
  for (int64_t step = 0; step < steps; ++step) {
    std::vector<Tensor> args = states;
    for (size_t j = 0; j < n_scan; ++j) {  // the step's element along the scan axis
      std::vector<std::pair<sint, sint>> at;
      for (const sint& d : inputs[j].shape()) at.emplace_back(0, d);
      at[static_cast<size_t>(axes[j])] = {step, step + 1};
      args.push_back(inputs[j].shrink(at).squeeze(axes[j]));
    }
    const std::vector<Tensor> out = c.run_graph(body, args);
    for (size_t i = 0; i < n_state; ++i) states[i] = out.at(i);
    scans.resize(out.size() - n_state);
    for (size_t i = 0; i < scans.size(); ++i) scans[i].push_back(out[n_state + i]);
  }
  const std::vector<int64_t> out_axes = per_input("scan_output_axes", scans.size()), out_reverse = per_input("scan_output_directions", scans.size());
  std::vector<Tensor> result = states;
  for (size_t i = 0; i < scans.size(); ++i) result.push_back(stacked(scans[i], out_axes[i], out_reverse[i] != 0));
  return result;
}

}  // namespace detail
}  // namespace onnx
}  // namespace tinyt::inline v0
