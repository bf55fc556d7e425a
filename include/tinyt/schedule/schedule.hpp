// The scheduler: decides which nodes of a tensor graph are computed into memory (realization
// points), lowers each into a kernel, and orders the kernels by what they read and write.
#pragma once

#include <unordered_set>

#include "lower.hpp"

namespace tinyt::inline v0 {
namespace schedule {

/// One kernel to run: its AST and the buffers bound to its DEFINE_GLOBALs (output first).
struct Kernel {
  UOp ast;
  std::vector<UOp> buffers;  // BUFFER nodes
  UOp computes;              // the tensor-level node whose value the kernel writes
  UOp view;                  // where that value lives afterwards (a view of buffers[0])
};

namespace detail {
using tinyt::detail::cat;

// A node that needs no kernel: memory already holds it in its own shape.
inline bool is_materialized(const UOp& u) {
  if (u.op() == Ops::BUFFER || graph::realized(u)) return true;
  return u.op() == Ops::RESHAPE && u.src(0).op() == Ops::BUFFER;
}

// The nodes below the roots that the kernels compute (stopping at what memory already holds).
inline std::vector<UOp> pending_graph(const std::vector<UOp>& roots) {
  std::vector<UOp> order;
  std::unordered_set<const UOpNode*> seen;
  std::vector<std::pair<const UOp*, bool>> stack;
  for (const UOp& r : roots) stack.push_back({&r, false});
  while (!stack.empty()) {
    auto [u, expanded] = stack.back();
    stack.pop_back();
    if (expanded) { order.push_back(*u); continue; }
    if (!seen.insert(u->get()).second) continue;
    stack.push_back({u, true});
    if (graph::realized(*u) || u->op() == Ops::BUFFER) continue;
    for (const UOp& s : (*u)->src) stack.push_back({&s, false});
  }
  return order;
}

// Realization points: roots, explicit ones, copies, and reductions whose result would be
// recomputed (broadcast back by an EXPAND, or read by several consumers).
inline std::vector<UOp> realization_points(const std::vector<UOp>& roots, const std::vector<UOp>& order) {
  std::unordered_map<const UOpNode*, std::vector<const UOpNode*>> consumers;
  for (const UOp& u : order)
    if (!graph::realized(u) && u.op() != Ops::BUFFER)
      for (const UOp& s : u.src()) consumers[s.get()].push_back(u.get());
  std::unordered_set<const UOpNode*> points;
  for (const UOp& r : roots)
    if (!is_materialized(r)) points.insert(r.get());
  for (const UOp& u : order) {
    if (graph::realized(u) || u.op() == Ops::BUFFER) continue;
    if (u.op() == Ops::CONTIGUOUS || u.op() == Ops::COPY || u.op() == Ops::ASSIGN) points.insert(u.get());
    if (u.op() == Ops::COPY && !is_materialized(u.src(0))) points.insert(u.src(0).get());
  }
  // a reduction is realized when a path from it to the next realization point expands it
  for (const UOp& u : order) {
    if (u.op() != Ops::REDUCE_AXIS || points.count(u.get())) continue;
    std::unordered_set<const UOpNode*> distinct(consumers[u.get()].begin(), consumers[u.get()].end());
    bool realize = distinct.size() > 1;
    std::vector<const UOpNode*> stack(distinct.begin(), distinct.end());
    std::unordered_set<const UOpNode*> seen;
    while (!stack.empty() && !realize) {
      const UOpNode* c = stack.back();
      stack.pop_back();
      if (!seen.insert(c).second || points.count(c)) continue;
      if (c->op == Ops::EXPAND) realize = true;
      for (const UOpNode* cc : consumers[c]) stack.push_back(cc);
    }
    if (realize) points.insert(u.get());
  }
  std::vector<UOp> out;
  for (const UOp& u : order)
    if (points.count(u.get())) out.push_back(u);
  return out;
}

inline std::string kernel_name(const UOp& ast) {
  std::vector<std::pair<int64_t, int64_t>> axes;  // (axis, size)
  bool reduces = false;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::RANGE) {
      axes.emplace_back(u.arg()[0].as_int(), static_cast<int64_t>(u.src(0).const_int()));
      reduces |= u.arg()[1].as_int() == static_cast<int64_t>(RangeKind::reduce);
    }
  std::sort(axes.begin(), axes.end());
  std::string name = reduces ? "r" : "E";
  for (auto [axis, size] : axes) name += "_" + std::to_string(size);
  return name;
}
}  // namespace detail

/// The kernels that compute `roots`, in an order that respects what each reads and writes.
inline std::vector<Kernel> create_schedule(const std::vector<UOp>& roots) {
  const std::vector<UOp> order = detail::pending_graph(roots);
  const std::vector<UOp> points = detail::realization_points(roots, order);
  std::unordered_map<const UOpNode*, UOp> computed;  // realization point -> view of its buffer
  auto input_view = [&](const UOp& u) -> UOp {
    if (auto it = computed.find(u.get()); it != computed.end()) return it->second;
    return graph::realized(u);
  };
  std::vector<Kernel> kernels;
  for (const UOp& point : points) {
    const std::vector<int64_t> shape = graph::concrete_shape(point);
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    Lowerer lw(input_view);
    UOp value_node = point, out_buffer, view;
    std::vector<UOp> out_idx;
    if (point.op() == Ops::ASSIGN) {
      // a store into the target's memory, through the target's view
      throw InternalError("assign is not scheduled yet");
    }
    out_buffer = graph::new_buffer(graph::device_of(point), numel, point.dtype());
    view = graph::reshape(out_buffer, shape);
    UOp out = lw.global(out_buffer);
    for (int64_t d : shape) out_idx.push_back(d == 1 ? index_const(0) : lw.new_range(d, RangeKind::loop));
    if (point.op() == Ops::CONTIGUOUS || point.op() == Ops::COPY) value_node = point.src(0);
    UOp value = lw.lower(value_node, out_idx, UOp::const_(dtypes::bool_, true));
    UOp store(Ops::STORE, dtypes::void_, {UOp(Ops::INDEX, out.dtype(), {out, simplify(flatten(out_idx, shape))}), value});
    UOp ast = simplify(UOp(Ops::SINK, dtypes::void_, {store}));
    kernels.push_back({ast, lw.buffers(), point, view});
    computed[point.get()] = view;
  }
  return kernels;
}

}  // namespace schedule
}  // namespace tinyt::inline v0
