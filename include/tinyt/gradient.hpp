// Gradients as more graph: each primitive op has a rule that builds the gradient of its sources
// from the gradient of its output, and a reverse walk over the tensor-level graph applies them.
// The backward pass is then ordinary lazy tensors, scheduled and fused with everything else.
#pragma once

#include <algorithm>
#include <array>
#include <numbers>
#include <unordered_map>
#include <unordered_set>

#include "ops/movement.hpp"
#include "ops/reduce.hpp"

namespace tinyt::inline v0 {

namespace gradient_detail {
using tinyt::detail::cat;

// One rule: (gradient of the output, the node) -> gradients of its sources; an empty handle
// where none flows (a condition, an integer operand).
using Rule = std::vector<Tensor> (*)(const Tensor& grad, const UOp& node);

inline Tensor src(const UOp& node, size_t i) { return Tensor(node.src(i)); }
inline const Shape& shape_of(const UOp& u) { return graph::shape_of(u); }

// Whether u is the constant 0, possibly broadcast.
inline bool is_zero(const UOp& u) {
  const UOp* x = &u;
  while (x->op() == Ops::EXPAND || x->op() == Ops::RESHAPE) x = &x->src(0);
  return x->op() == Ops::CONST && x->const_float() == 0.0;
}

// grad * derivative, with a gradient masked by where(c, g, 0) kept masked outside the product:
// where(c, g * d, 0) instead of where(c, g, 0) * d, so an inf or NaN derivative in the branch
// a where did not take (log or sqrt at 0, say) gives 0, not NaN.
template <class F> Tensor chain(const Tensor& grad, F&& times_derivative) {
  const UOp& g = grad.uop();
  if (g.op() == Ops::WHERE && is_zero(g.src(2))) return Tensor(g.src(0)).where(chain(Tensor(g.src(1)), times_derivative), 0);
  if (g.op() == Ops::WHERE && is_zero(g.src(1))) return Tensor(g.src(0)).where(0, chain(Tensor(g.src(2)), times_derivative));
  return times_derivative(grad);
}

// The sum of `grad` over the axes an EXPAND broadcast, back to the shape before it.
inline Tensor unbroadcast(const Tensor& grad, const Shape& shape) {
  const Shape& big = shape_of(grad.uop());
  std::vector<int> axes;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != big[i]) axes.push_back(static_cast<int>(i));
  if (axes.empty()) return grad;
  return grad.sum(axes, true).cast(grad.dtype());
}

inline std::vector<Tensor> max_grad(const Tensor& g, const Tensor& a, const Tensor& b) {
  // ties split the gradient evenly, as PyTorch's maximum does
  const Tensor half = g.mul(0.5);
  return {a.gt(b).where(g, a.eq(b).where(half, 0)), b.gt(a).where(g, a.eq(b).where(half, 0))};
}

// Device i's part of `g`, the gradient of `n` (a tensor on several devices), split as n is: g's
// own part when g is split so, else cut from g's whole value there (gathered when split otherwise).
inline UOp part_of_gradient(const UOp& g, const UOp& n, size_t i) {
  const TensorMeta &want = graph::meta(n), &have = graph::meta(g);
  const std::string device = Device::split(want.device)[i];
  const bool same_devices = have.device == want.device;
  if (same_devices && have.sharding == want.sharding) return UOp(Ops::MSELECT, g.dtype(), {g}, static_cast<int64_t>(i));
  const UOp whole = same_devices && !have.sharding.sharded() ? UOp(Ops::MSELECT, g.dtype(), {g}, static_cast<int64_t>(i))
                                                               : Tensor(g).to(device).uop();
  return graph::shrink(whole, want.sharding.part_range(shape_of(whole), i));
}
// `g` (the gradient of `like`, a tensor on several devices) split as `like` is.
inline Tensor split_like(const Tensor& g, const UOp& like) {
  const TensorMeta &want = graph::meta(like), &have = graph::meta(g.uop());
  if (have.device == want.device && have.sharding == want.sharding) return g;
  std::vector<UOp> parts;
  for (size_t i = 0; i < Device::split(want.device).size(); ++i) parts.push_back(part_of_gradient(g.uop(), like, i));
  return Tensor(UOp(Ops::MULTI, g.dtype(), std::move(parts), want.sharding.axis));
}
// MULTI(parts): each part gets its part of the gradient; a replicated tensor's value is its first
// part's (the others are copies of it: giving each the whole gradient would count it n times).
inline std::vector<Tensor> multi_grad(const Tensor& g, const UOp& node) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < node.src().size(); ++i)
    out.push_back(i == 0 || graph::meta(node).sharding.sharded() ? Tensor(part_of_gradient(g.uop(), node, i)) : Tensor());
  return out;
}
// MSELECT(x, i): the gradient on device i; zeros on the other devices' parts of a split x, the
// same gradient everywhere for a replicated one.
inline std::vector<Tensor> mselect_grad(const Tensor& g, const UOp& node) {
  const UOp& x = node.src(0);
  const TensorMeta& m = graph::meta(x);
  if (!m.sharding.sharded()) return {g.to(m.device)};
  const std::vector<std::string> devices = Device::split(m.device);
  std::vector<UOp> parts;
  for (size_t j = 0; j < devices.size(); ++j)
    parts.push_back(j == static_cast<size_t>(node.arg().as_int()) ? g.uop()
                                                                  : Tensor::zeros(m.sharding.part_shape(shape_of(x), j), g.dtype(), devices[j]).uop());
  return {Tensor(UOp(Ops::MULTI, g.dtype(), std::move(parts), m.sharding.axis))};
}

inline std::vector<Tensor> reduce_grad(const Tensor& g, const UOp& node) {
  const Tensor x = src(node, 0), out(node);
  const Shape& in_shape = shape_of(node.src(0));
  const Ops op = node.arg()[0].get<Ops>();
  if (op == Ops::ADD) return {g.expand(Shape(in_shape))};
  if (op == Ops::MAX) {
    // every element equal to the max shares its gradient, as tinygrad (and PyTorch's amax) do
    std::vector<int> axes;
    for (int64_t a : node.arg()[1].ints()) axes.push_back(static_cast<int>(a));
    const Tensor is_max = x.eq(out.expand(Shape(in_shape))).cast(x.dtype());
    const Tensor share = is_max.div(is_max.sum(axes, true).cast(x.dtype()).expand(Shape(in_shape)));
    return {share.mul(g.expand(Shape(in_shape)))};
  }
  if (op == Ops::MUL) return {g.mul(out).expand(Shape(in_shape)).div(x)};  // the product of the others
  return {Tensor()};
}

// clang-format off
inline const std::vector<std::pair<Ops, Rule>>& rule_list() {
  static const std::vector<std::pair<Ops, Rule>> rules = {
    // x + y -> g, g;  x - y -> g, -g;  -x -> -g
    {Ops::ADD, [](const Tensor& g, const UOp&) { return std::vector{g, g}; }},
    {Ops::SUB, [](const Tensor& g, const UOp&) { return std::vector{g, g.neg()}; }},
    {Ops::NEG, [](const Tensor& g, const UOp&) { return std::vector{g.neg()}; }},
    // x * y -> g y, g x
    {Ops::MUL, [](const Tensor& g, const UOp& n) {
      return std::vector{chain(g, [&](const Tensor& h) { return h.mul(src(n, 1)); }),
                         chain(g, [&](const Tensor& h) { return h.mul(src(n, 0)); })}; }},
    // x / y -> g / y, -(g / y) * (x / y)
    {Ops::FDIV, [](const Tensor& g, const UOp& n) {
      return std::vector{chain(g, [&](const Tensor& h) { return h.div(src(n, 1)); }),
                         chain(g, [&](const Tensor& h) { return h.div(src(n, 1)).mul(Tensor(n)).neg(); })}; }},
    // 1/x -> -g / x^2
    {Ops::RECIPROCAL, [](const Tensor& g, const UOp& n) {
      return std::vector{chain(g, [&](const Tensor& h) { return h.mul(Tensor(n)).mul(Tensor(n)).neg(); })}; }},
    // sqrt(x) -> g / (2 sqrt(x))
    {Ops::SQRT, [](const Tensor& g, const UOp& n) {
      return std::vector{chain(g, [&](const Tensor& h) { return h.div(Tensor(n).mul(2)); })}; }},
    // 2^x -> g 2^x ln 2
    {Ops::EXP2, [](const Tensor& g, const UOp& n) {
      return std::vector{chain(g, [&](const Tensor& h) { return h.mul(Tensor(n)).mul(std::numbers::ln2); })}; }},
    // log2(x) -> g / (x ln 2)
    {Ops::LOG2, [](const Tensor& g, const UOp& n) {
      return std::vector{chain(g, [&](const Tensor& h) { return h.div(src(n, 0).mul(std::numbers::ln2)); })}; }},
    // sin(x) -> g cos(x)
    {Ops::SIN, [](const Tensor& g, const UOp& n) {
      return std::vector{chain(g, [&](const Tensor& h) { return h.mul(src(n, 0).cos()); })}; }},
    // b^e -> g e b^(e-1), g b^e ln b (0 where b == 0 and e >= 0, as PyTorch)
    {Ops::POW, [](const Tensor& g, const UOp& n) {
      const Tensor b = src(n, 0), e = src(n, 1), out(n);
      return std::vector{
          chain(g, [&](const Tensor& h) { return h.mul(e.eq(0).where(0, e.mul(b.pow(e.sub(1))))); }),
          chain(g, [&](const Tensor& h) { return h.mul(b.eq(0).logical_and(e.ge(0)).where(0, out.mul(b.log()))); })}; }},
    // max(x, y): to the larger, split on ties
    {Ops::MAX, [](const Tensor& g, const UOp& n) { return max_grad(g, src(n, 0), src(n, 1)); }},
    // where(c, x, y) -> -, where(c, g, 0), where(c, 0, g)
    {Ops::WHERE, [](const Tensor& g, const UOp& n) {
      const Tensor c = src(n, 0);
      return std::vector{Tensor(), c.where(g, 0), c.where(0, g)}; }},
    // trunc is flat almost everywhere (PyTorch gives 0 too)
    {Ops::TRUNC, [](const Tensor& g, const UOp&) { return std::vector{Tensor::zeros_like(g)}; }},
    // cast(x) -> cast(g) back
    {Ops::CAST, [](const Tensor& g, const UOp& n) { return std::vector{g.cast(n.src(0).dtype())}; }},
    {Ops::REDUCE_AXIS, [](const Tensor& g, const UOp& n) { return reduce_grad(g, n); }},
    // movement: the inverse movement of the gradient
    {Ops::RESHAPE, [](const Tensor& g, const UOp& n) { return std::vector{Tensor(graph::reshape(g.uop(), shape_of(n.src(0))))}; }},
    {Ops::EXPAND, [](const Tensor& g, const UOp& n) { return std::vector{unbroadcast(g, shape_of(n.src(0)))}; }},
    {Ops::PERMUTE, [](const Tensor& g, const UOp& n) {
      const std::vector<int64_t> order = n.arg().ints();
      std::vector<int64_t> inverse(order.size());
      for (size_t i = 0; i < order.size(); ++i) inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
      return std::vector{Tensor(graph::permute(g.uop(), inverse))}; }},
    {Ops::PAD, [](const Tensor& g, const UOp& n) {
      const Shape& in = shape_of(n.src(0));
      graph::SizePairs keep;
      for (size_t i = 0; i < in.size(); ++i) {
        const sint before = graph::pairs(n.arg())[i].first;
        keep.emplace_back(before, before + in[i]);
      }
      return std::vector{Tensor(graph::shrink(g.uop(), keep))}; }},
    {Ops::SHRINK, [](const Tensor& g, const UOp& n) {
      const Shape& in = shape_of(n.src(0));
      graph::SizePairs around;
      for (size_t i = 0; i < in.size(); ++i) {
        const auto [start, end] = graph::pairs(n.arg())[i];
        around.emplace_back(start, in[i] - end);
      }
      return std::vector{Tensor(graph::pad(g.uop(), around))}; }},
    {Ops::FLIP, [](const Tensor& g, const UOp& n) {
      std::vector<bool> axes;
      for (const Arg& a : n.arg().tuple()) axes.push_back(a.get<bool>());
      return std::vector{Tensor(graph::flip(g.uop(), axes))}; }},
    // identities for the gradient; contiguous_backward realizes it
    {Ops::CONTIGUOUS, [](const Tensor& g, const UOp&) { return std::vector{g}; }},
    {Ops::CONTIGUOUS_BACKWARD, [](const Tensor& g, const UOp&) { return std::vector{g.contiguous()}; }},
    {Ops::COPY, [](const Tensor& g, const UOp& n) { return std::vector{g.to(graph::device_of(n.src(0))), Tensor()}; }},
    // a sum across processes: each one's input reaches every one's output
    {Ops::ALLREDUCE, [](const Tensor& g, const UOp& n) {
      const auto op = static_cast<dist::ReduceOp>(n.arg().as_int());
      if (op != dist::ReduceOp::sum)
        throw Error(cat("gradient: allreduce(", dist::to_string(op), ") has no gradient rule (allreduce(sum) has)"));
      return std::vector{g.allreduce(op)}; }},
    // on several devices
    {Ops::MULTI, multi_grad},
    {Ops::MSELECT, mselect_grad},
  };
  return rules;
}
// clang-format on

inline const std::array<Rule, op_count>& rules() {
  static const std::array<Rule, op_count> table = [] {
    std::array<Rule, op_count> t{};
    for (const auto& [op, rule] : rule_list()) t[static_cast<size_t>(op)] = rule;
    return t;
  }();
  return table;
}

// d(root)/d(node) for every node between root and a target, starting from d(root)/d(root) = seed.
// A gradient flows only through floating-point nodes other than DETACH: an integer or bool value
// (a cast to int, a comparison, argmax, a where's condition) is flat almost everywhere, so a
// target reached only that way gets zeros, as in PyTorch and tinygrad. A floating-point op with
// no rule on the way to a target is an error, not a silent zero.
inline std::unordered_map<const UOpNode*, Tensor> backpropagate(const UOp& root, const Tensor& seed,
                                                                const std::vector<Tensor>& targets) {
  using tinyt::detail::cat;
  std::unordered_set<const UOpNode*> wanted;
  for (const Tensor& t : targets) wanted.insert(t.uop().get());
  const std::vector<UOp> order = toposort(root);
  // `through`: a gradient reaching the node flows on to a target below it
  std::unordered_set<const UOpNode*> through;
  auto leads = [&](const UOp& u) { return wanted.count(u.get()) || through.count(u.get()); };
  for (const UOp& u : order)
    if (u.dtype().is_float() && u.op() != Ops::DETACH && std::any_of(u.src().begin(), u.src().end(), leads))
      through.insert(u.get());
  std::unordered_map<const UOpNode*, Tensor> grads;
  grads.emplace(root.get(), seed);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const UOp& node = *it;
    auto g = grads.find(node.get());
    if (g == grads.end() || !through.count(node.get())) continue;
    const Rule rule = rules()[static_cast<size_t>(node.op())];
    if (!rule) {
      const std::vector<UOp> below = toposort(node);
      size_t i = 0;
      while (i + 1 < targets.size() && std::find(below.begin(), below.end(), targets[i].uop()) == below.end()) ++i;
      throw Error(cat("gradient: the loss depends on target ", i, " (shape ", targets[i].shape(), ") through ",
                      op_name(node.op()), ", which has no gradient rule"));
    }
    const std::vector<Tensor> src_grads = rule(g->second, node);
    for (size_t i = 0; i < src_grads.size(); ++i) {
      const UOp& s = node.src(i);
      if (!src_grads[i].defined() || !leads(s)) continue;
      auto [slot, fresh] = grads.try_emplace(s.get(), src_grads[i]);
      if (!fresh) slot->second = slot->second.add(src_grads[i]);
    }
  }
  return grads;
}
}  // namespace gradient_detail

TINYT_INLINE std::vector<Tensor> Tensor::gradient(const std::vector<Tensor>& targets, const Tensor& seed) const {
  using tinyt::detail::cat;
  if (!dtype().is_float()) throw DTypeError(cat("gradient: the loss is ", dtype().name(), "; only floating-point values have gradients"));
  Tensor start = seed;
  if (!start.defined()) {
    if (numel() != 1)
      throw ShapeError(cat("gradient: the loss has shape ", shape(), "; only a scalar has an implicit seed (pass one of shape ", shape(), ")"));
    start = Tensor::ones_like(*this);
  } else if (start.shape() != shape()) {
    throw ShapeError(cat("gradient: the seed has shape ", start.shape(), " but the loss has shape ", shape()));
  }
  start = start.cast(dtype());
  for (size_t i = 0; i < targets.size(); ++i)
    if (!targets[i].dtype().is_float())
      throw DTypeError(cat("gradient: target ", i, " is ", targets[i].dtype().name(), "; only floating-point tensors have gradients"));
  const auto grads = gradient_detail::backpropagate(uop(), start, targets);
  std::vector<Tensor> out;
  for (const Tensor& t : targets) {
    auto g = grads.find(t.uop().get());
    // unused, detached, or reached only through integer or bool values
    const Tensor grad = g != grads.end() ? g->second : Tensor::zeros(t.shape(), t.dtype(), t.device());
    // a tensor on several devices gets its gradient split as it is
    out.push_back(graph::meta(t.uop()).multi ? gradient_detail::split_like(grad, t.uop()) : grad);
  }
  return out;
}

TINYT_INLINE const Tensor& Tensor::backward(const Tensor& seed) const {
  const std::vector<UOp> nodes = toposort(uop());
  std::unordered_set<const UOpNode*> in_graph;
  for (const UOp& u : nodes) in_graph.insert(u.get());
  std::vector<Tensor> targets;
  for (const auto& d : live_tensors().snapshot())
    if (auto [u, wants_grad] = shared_fields(*d); wants_grad && in_graph.count(u.get())) targets.push_back(Tensor(d));
  if (targets.empty())
    throw Error(tinyt::detail::cat("backward: nothing in the graph of this ", shape(), " tensor requires grad",
                                   " (set requires_grad(true) on the parameters before building the loss, and call backward before realizing it)"));
  const std::vector<Tensor> grads = gradient(targets, seed);
  for (size_t i = 0; i < targets.size(); ++i) {
    const Tensor old = targets[i].grad();
    targets[i].set_grad(old.defined() ? old.add(grads[i]) : grads[i]);
  }
  return *this;
}

TINYT_INLINE Tensor& Tensor::requires_grad(bool on) {
  if (on && !dtype().is_float())
    throw DTypeError(tinyt::detail::cat("requires_grad: a ", dtype().name(), " tensor cannot require grad; only floating-point ones can"));
  if (on && !requires_grad()) {
    // Gradients are found by graph node, and equal lazy graphs are one node (w1 = zeros(3) and
    // w2 = zeros(3) would get the sum of both gradients): a parameter is memory of its own. Not
    // a new name for shared memory: the scheduler orders the kernels that read and overwrite
    // memory by BUFFER node, and an optimizer step would write one in place.
    own_memory();  // realizes, so it runs before the lock below is taken
  }
  std::unique_lock lock(detail::tensor_data_mutex());  // read by other threads' backward
  d_->requires_grad = on;
  return *this;
}

}  // namespace tinyt::inline v0
