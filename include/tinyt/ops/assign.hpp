// Realizing tensors, and assign: a store into a tensor's existing memory.
//
// A tensor's value is fixed when it is built (as in JAX), so before memory is overwritten in
// place, every other live tensor that still reads it is computed into memory of its own.
#pragma once

#include <unordered_set>

#include "movement.hpp"

namespace tinyt::inline v0 {

namespace detail {
enum class Reach { no, old_memory, new_value };
// Whether a graph reads any of `targets` (the memory an assign overwrites), or depends on one of
// the `assigns` themselves (then it wants the new value and is computed after them).
inline Reach reaches(const UOp& root, const std::unordered_set<const UOpNode*>& targets,
                     const std::unordered_set<const UOpNode*>& assigns) {
  Reach found = Reach::no;
  std::unordered_set<const UOpNode*> seen;
  std::vector<UOp> stack{root};
  while (!stack.empty()) {
    UOp u = stack.back();
    stack.pop_back();
    if (!seen.insert(u.get()).second) continue;
    if (assigns.count(u.get())) return Reach::new_value;
    if (targets.count(u.get())) found = Reach::old_memory;
    if (UOp view = graph::realized(u); view && !(view == u)) stack.push_back(view);
    for (const UOp& s : u.src()) stack.push_back(s);
  }
  return found;
}
}  // namespace detail

inline void realize_tensors(const std::vector<Tensor>& tensors) {
  std::vector<UOp> roots;
  for (const Tensor& t : tensors) roots.push_back(t.uop());
  std::unordered_set<const UOpNode*> targets, assigns;
  for (const UOp& u : schedule::detail::pending_graph(roots))
    if (u.op() == Ops::ASSIGN && !graph::realized(u)) {
      assigns.insert(u.get());
      if (UOp b = graph::base_buffer(u.src(0))) targets.insert(b.get());
    }
  if (!targets.empty()) {
    // a view of memory being overwritten, realized in the same call, must be copied out first
    for (size_t i = 0; i < tensors.size(); ++i) {
      const UOp& u = tensors[i].d_->uop;
      const UOp b = graph::base_buffer(u);
      if (b && targets.count(b.get()) && !assigns.count(u.get())) {
        tensors[i].d_->uop = UOp(Ops::CONTIGUOUS, u.dtype(), {u});
        roots[i] = tensors[i].d_->uop;
      }
    }
    std::vector<Tensor> first;
    for (auto& d : Tensor::live_tensors().snapshot()) {
      if (std::any_of(tensors.begin(), tensors.end(), [&](const Tensor& t) { return t.d_ == d; })) continue;
      if (detail::reaches(d->uop, targets, assigns) != detail::Reach::old_memory) continue;
      // a view of the memory itself is copied out; pending work is simply done now
      if (schedule::detail::is_materialized(d->uop)) d->uop = UOp(Ops::CONTIGUOUS, d->uop.dtype(), {d->uop});
      first.push_back(Tensor(d));
    }
    if (!first.empty()) realize_tensors(first);
  }
  std::vector<schedule::Kernel> kernels = schedule::cached_schedule(roots);
  if (kernels.size() > 1) {
    // an intermediate no other live tensor can reach is not kept, and its memory is reused
    std::unordered_set<const UOpNode*> reachable;  // every node the other live tensors reach
    std::vector<UOp> stack;
    for (auto& d : Tensor::live_tensors().snapshot())
      if (std::none_of(tensors.begin(), tensors.end(), [&](const Tensor& t) { return t.d_ == d; })) stack.push_back(d->uop);
    while (!stack.empty()) {
      UOp u = std::move(stack.back());
      stack.pop_back();
      if (!reachable.insert(u.get()).second) continue;
      if (UOp view = graph::realized(u); view && !(view == u)) stack.push_back(view);
      for (const UOp& x : u.src()) stack.push_back(x);
    }
    schedule::plan_memory(kernels, roots, [&](const UOp& node) { return reachable.count(node.get()) > 0; });
  }
  run_schedule(kernels);
  for (const Tensor& t : tensors)
    if (UOp view = graph::realized(t.d_->uop)) t.d_->uop = view;
}

inline Tensor& Tensor::assign(const Tensor& value) {
  // this tensor must name memory of its own, in its own shape
  if (!graph::base_buffer(uop())) {
    realize();
    if (!graph::base_buffer(uop())) d_->uop = contiguous().realize().uop();
  }
  if (value.defined() && value.device() != device())
    throw DeviceError(detail::cat("assign: the value is on ", value.device(), ", the tensor on ", device()));
  Tensor v = broadcast_to(value.cast(dtype()), cshape());
  d_->uop = UOp(Ops::ASSIGN, dtype(), {uop(), v.uop()});
  return *this;
}

}  // namespace tinyt::inline v0
