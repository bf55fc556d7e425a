// Realizing tensors: the entry from tensors to the engine. It plans the assigns a schedule makes,
// schedules, plans memory, and runs the exec items.
//
// A tensor's value is fixed when it is built (as in JAX). Memory is overwritten in place only
// when no other tensor names it: an assign into memory that another live tensor views (tensors
// of equal lazy graphs share the memory they were computed into) or assigns into as well
// writes fresh memory instead, which costs nothing more than writing in place. Every other
// live tensor that still reads memory overwritten in place is computed in the same schedule,
// before the overwrite.
#pragma once

#include <shared_mutex>
#include <unordered_set>

#include "../schedule/multi.hpp"
#include "../tensor.hpp"
#include "../tensor_impl.hpp"
#include "realize.hpp"

namespace tinyt::inline v0 {

namespace detail {
// The memory a value is a view of (a realized value, through movement ops; on several devices,
// each device's), else none. A tensor with such a value names that memory: overwriting it in
// place would change the tensor.
inline std::vector<const Buffer*> viewed_memory(UOp u) {
  for (;;) {
    if (u.op() == Ops::BUFFER) return {graph::buffer_of(u).get()};
    if (u.op() == Ops::MULTI) {
      std::vector<const Buffer*> out;
      for (const UOp& part : u.src())
        for (const Buffer* b : viewed_memory(part)) out.push_back(b);
      return out;
    }
    const UOp view = graph::realized(u);
    if (!view && !GroupOp::Movement.contains(u.op())) return {};
    u = view && !(view == u) ? view : u.src(0);
  }
}

// Which of `roots` read memory in `overwritten` (or a value held there), other than through the
// `assigns` that overwrite it: those give the new value.
inline std::vector<bool> read_overwritten(const std::vector<UOp>& roots,
                                          const std::unordered_set<const Buffer*>& overwritten,
                                          const std::unordered_set<const UOpNode*>& assigns) {
  enum : char { visiting, no, yes };
  std::unordered_map<const UOpNode*, char> state;
  std::vector<std::pair<UOp, bool>> stack;  // (node, its sources are done)
  std::vector<bool> out;
  for (const UOp& root : roots) {
    stack.emplace_back(root, false);
    while (!stack.empty()) {
      auto [u, sources_done] = std::move(stack.back());
      stack.pop_back();
      if (sources_done) {
        auto is_yes = [&](const UOp& s) { return state.at(s.get()) == yes; };
        state[u.get()] = std::any_of(u.src().begin(), u.src().end(), is_yes) ? yes : no;
        continue;
      }
      if (!state.try_emplace(u.get(), visiting).second) continue;
      if (assigns.count(u.get())) {
        state[u.get()] = no;
      } else if (u.op() == Ops::BUFFER || graph::realized(u)) {
        const std::vector<const Buffer*> memory = viewed_memory(u);
        const bool read = std::any_of(memory.begin(), memory.end(), [&](const Buffer* b) { return overwritten.count(b) > 0; });
        state[u.get()] = read ? yes : no;
      } else {
        stack.emplace_back(u, true);
        for (const UOp& s : u.src()) stack.emplace_back(s, false);
      }
    }
    out.push_back(state.at(root.get()) == yes);
  }
  return out;
}

// How a schedule that assigns keeps every other value intact.
struct AssignPlan {
  std::vector<std::pair<UOp, UOp>> rewritten;  // (a node, the same with the moved assigns)
  std::vector<size_t> joined;                  // the live tensors (indices) that join the schedule
};

// Decides which assigns that `roots` need write in place and which write fresh memory (those
// into memory another tensor names), and which `live` tensors must be computed in the same
// schedule because they read memory overwritten in place (`is_root[i]`: live[i] is a root; `live`
// holds the live tensors' UOps). The joined tensors are appended to `roots`, and the roots are
// rewritten to the moved assigns.
inline AssignPlan plan_assigns(std::vector<UOp>& roots, const std::vector<UOp>& live,
                               std::vector<bool> is_root) {
  // who names each memory: a live tensor viewing it, or a pending assign into it
  std::unordered_map<const Buffer*, std::vector<const void*>> claims;
  for (const UOp& u : live) {
    if (const std::vector<const Buffer*> memory = viewed_memory(u); !memory.empty()) {
      for (const Buffer* b : memory) claims[b].push_back(&u);
    } else if (u.op() == Ops::ASSIGN) {
      if (const UOp target = graph::base_buffer(u.src(0)))
        claims[graph::buffer_of(target).get()].push_back(u.get());
    }
  }
  std::unordered_set<const Buffer*> overwritten;
  std::unordered_set<const UOpNode*> assigns, moved;
  AssignPlan plan;
  for (bool joined = true; joined;) {
    for (const UOp& u : schedule::detail::pending_graph(roots)) {
      if (u.op() != Ops::ASSIGN || graph::realized(u) || !assigns.insert(u.get()).second) continue;
      const UOp target = graph::base_buffer(u.src(0));
      if (!target) continue;  // an assign into an assign's result writes where that one does
      const Buffer* memory = graph::buffer_of(target).get();
      std::vector<const void*>& claim = claims[memory];
      if (std::all_of(claim.begin(), claim.end(), [&](const void* c) { return c == u.get(); })) {
        if (claim.empty()) claim.push_back(u.get());
        overwritten.insert(memory);
      } else {
        std::erase(claim, static_cast<const void*>(u.get()));
        moved.insert(u.get());
      }
    }
    std::vector<UOp> others;
    std::vector<size_t> index;
    for (size_t i = 0; i < live.size(); ++i)
      if (!is_root[i]) others.push_back(live[i]), index.push_back(i);
    const std::vector<bool> reads = overwritten.empty()
                                        ? std::vector<bool>(others.size())
                                        : read_overwritten(others, overwritten, assigns);
    joined = false;
    for (size_t k = 0; k < others.size(); ++k) {
      if (!reads[k]) continue;
      is_root[index[k]] = joined = true;
      plan.joined.push_back(index[k]);
      roots.push_back(others[k]);
    }
  }
  if (moved.empty()) return plan;
  std::unordered_map<const UOpNode*, UOp> rewritten;
  for (const UOp& u : schedule::detail::pending_graph(roots)) {
    std::vector<UOp> src;
    bool changed = false;
    for (const UOp& s : u.src()) {
      auto it = rewritten.find(s.get());
      src.push_back(it == rewritten.end() ? s : it->second);
      changed |= it != rewritten.end();
    }
    if (moved.count(u.get())) {
      // the same value into fresh memory of the target's size
      const int64_t size = graph::base_buffer(u.src(0)).arg().as_int();
      const UOp fresh = graph::new_buffer(graph::device_of(u), size, u.dtype());
      src[0] = graph::reshape(fresh, graph::concrete_shape(u));
    } else if (!changed) {
      continue;
    }
    rewritten.emplace(u.get(), u.replace(std::move(src)));
    plan.rewritten.emplace_back(u, rewritten.at(u.get()));
  }
  for (UOp& r : roots)
    if (auto it = rewritten.find(r.get()); it != rewritten.end()) r = it->second;
  return plan;
}
/// The schedule of `uops`, timed as one "schedule" span while profiling, and recorded by VIZ as
/// a group: the tensor graph and the kernels' ASTs it became.
inline std::vector<schedule::Kernel> traced_schedule(const std::vector<UOp>& uops) {
  profile::Span span("schedule", "schedule");
  viz::Scope group("schedule");
  std::vector<schedule::Kernel> kernels = schedule::cached_schedule(uops);
  if (span.on()) span.arg("kernels", std::to_string(kernels.size()));
  if (viz::enabled()) {
    std::vector<UOp> asts;
    for (const schedule::Kernel& k : kernels) asts.push_back(k.ast);
    viz::snapshot(tinyt::detail::cat("schedule: ", kernels.size(), " kernel(s)"), UOp(Ops::SINK, dtypes::void_, uops),
                  UOp(Ops::SINK, dtypes::void_, asts));
    group.rename(tinyt::detail::cat("schedule of ", kernels.size(), " kernel(s)"));
  }
  return kernels;
}

// Graphs over tensors on several devices written per device (schedule/multi.hpp); others as they are.
inline std::vector<UOp> per_device(std::vector<UOp> uops) {
  if (std::none_of(uops.begin(), uops.end(), [](const UOp& u) { return graph::meta(u).multi; })) return uops;
  return schedule::lower_multi(uops);
}
// The view holding a per-device graph's value once computed (a MULTI of views), else empty.
inline UOp computed_view(const UOp& u) {
  if (u.op() != Ops::MULTI) {
    if (UOp view = graph::realized(u)) return view;
    return schedule::detail::is_materialized(u) ? u : UOp();  // memory already (a part not copied)
  }
  std::vector<UOp> views;
  for (const UOp& part : u.src()) {
    UOp view = computed_view(part);
    if (!view) return {};
    views.push_back(std::move(view));
  }
  return u.replace(std::move(views));
}
}  // namespace detail

TINYT_INLINE void realize_tensors(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> roots;  // one handle per tensor
  std::unordered_set<const void*> root_ids;
  std::vector<UOp> logical;   // the roots' graphs (over tensors on several devices: whole tensors)
  for (const Tensor& t : tensors)
    if (root_ids.insert(t.id()).second) roots.push_back(t), logical.push_back(t.uop());
  // memory holds them all already (a replayed step's inputs, a tensor read twice): nothing to do
  if (std::all_of(logical.begin(), logical.end(), [](const UOp& u) { return schedule::detail::is_materialized(u); })) {
    for (size_t i = 0; i < roots.size(); ++i)
      if (UOp view = graph::realized(logical[i]); view && !(view == logical[i])) roots[i].set_uop(view);
    return;
  }
  std::vector<UOp> uops = detail::per_device(logical);  // ... and per device
  schedule::realize_empty(uops);
  auto pending_assigns = [&] {
    const std::vector<UOp> pending = schedule::detail::pending_graph(uops);
    return std::any_of(pending.begin(), pending.end(), [](const UOp& u) { return u.op() == Ops::ASSIGN && !graph::realized(u); });
  };
  // A schedule that overwrites memory in place runs alone. Its plan looks at every live tensor,
  // and another thread's tensor may name the same memory (equal graphs are one node: two
  // threads' zeros(n).contiguous() can be one realized buffer): that tensor must be made before
  // the plan, which then sees it, or after the overwrite, which makes it compute anew.
  static auto* in_place = new std::shared_mutex;  // never destroyed, like the registry
  std::unique_lock<std::shared_mutex> alone(*in_place, std::defer_lock);
  std::shared_lock<std::shared_mutex> together(*in_place);
  bool assigns = pending_assigns();
  if (assigns) together.unlock(), alone.lock(), assigns = pending_assigns();
  std::vector<Tensor> live;           // every live tensor, taken when needed
  std::vector<UOp> live_logical;      // ... its UOp, read once (other threads may update theirs)
  std::vector<UOp> live_uops;         // ... and that per device
  auto take_live = [&] {
    for (auto& d : Tensor::live_tensors().snapshot()) {
      live_logical.push_back(Tensor::shared_fields(*d).first);
      live.push_back(Tensor(std::move(d)));
    }
    live_uops = detail::per_device(live_logical);
  };
  std::vector<bool> is_root;
  auto mark_roots = [&] {
    for (const Tensor& t : live) is_root.push_back(root_ids.count(t.id()) > 0);
  };
  detail::AssignPlan plan;
  if (assigns) {
    take_live(), mark_roots();
    plan = detail::plan_assigns(uops, live_uops, is_root);
    for (size_t i : plan.joined) roots.push_back(live[i]), logical.push_back(live_logical[i]), is_root[i] = true;
  }
  // the scheduler sees graphs on one device each: each device's part of a MULTI
  std::vector<UOp> parts;
  for (const UOp& u : uops) {
    if (u.op() == Ops::MULTI) parts.insert(parts.end(), u.src().begin(), u.src().end());
    else parts.push_back(u);
  }
  std::vector<schedule::Kernel> kernels = detail::traced_schedule(parts);
  if (kernels.size() > 1) {
    // an intermediate no other live tensor can reach is not kept, and its memory is reused
    if (!assigns) take_live(), mark_roots();
    std::unordered_set<const UOpNode*> reachable;  // every node the other live tensors reach
    std::vector<UOp> stack;
    for (size_t i = 0; i < live.size(); ++i)
      if (!is_root[i]) stack.push_back(live_uops[i]);
    while (!stack.empty()) {
      UOp u = std::move(stack.back());
      stack.pop_back();
      if (!reachable.insert(u.get()).second) continue;
      if (UOp view = graph::realized(u); view && !(view == u)) stack.push_back(view);
      for (const UOp& x : u.src()) stack.push_back(x);
    }
    schedule::plan_memory(kernels, parts,
                          [&](const UOp& node) { return reachable.count(node.get()) > 0; });
  }
  run_schedule(kernels);
  // other graphs that hold a rewritten node find its value where the rewritten one put it
  for (const auto& [old, now] : plan.rewritten)
    if (UOp view = graph::realized(now)) graph::set_realized(old, view);
  for (size_t i = 0; i < roots.size(); ++i) {
    const UOp view = detail::computed_view(uops[i]);
    if (!view) continue;
    if (!(logical[i] == uops[i]) && !(view == logical[i])) graph::set_realized(logical[i], view);
    roots[i].set_uop(view);
  }
}

}  // namespace tinyt::inline v0
