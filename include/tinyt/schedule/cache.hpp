// The schedule cache: a step seen before (the same ops on the same shapes, new data) is not
// scheduled again. Its pending graph, with each buffer replaced by a numbered placeholder, is
// an interned UOp, so the key is one pointer; the cached schedule is instantiated by binding
// the placeholders to this step's buffers and giving it fresh memory for what it computes.
#pragma once

#include <atomic>
#include <limits>
#include <mutex>

#include "schedule.hpp"

namespace tinyt::inline v0 {
namespace schedule {

namespace detail {
/// Input `k` of a normalized graph: a BUFFER that stands for whatever buffer comes k-th.
inline UOp placeholder(const UOp& buffer, int64_t k) {
  return UOp(Ops::BUFFER, buffer.dtype(), {UOp(Ops::UNIQUE, dtypes::void_, {}, -1 - k), buffer.src(1)}, buffer.arg());
}

/// The pending graph of some roots with its buffers numbered: `key` is the SINK of the
/// normalized roots, `inputs[k]` the buffer behind placeholder k, and `original` the node of
/// this graph that each normalized node that computes something came from.
struct Normalized {
  UOp key;
  std::vector<UOp> inputs;
  std::unordered_map<const UOpNode*, UOp> original;
  VarVals var_vals;  // the values the graph binds its variables to (the key holds them unbound)
};

/// A node whose arg holds symbolic sizes, with every bound variable in them unbound (its value
/// recorded in `vals`): steps that differ only in the values share a key.
inline bool holds_uop(const Arg& a) {
  if (a.is_uop()) return true;
  if (!a.is<Arg::Tuple>()) return false;
  return std::any_of(a.tuple().begin(), a.tuple().end(), holds_uop);
}
inline UOp unbind_arg(const UOp& u, VarVals& vals) {
  if (!GroupOp::Movement.contains(u.op()) || !holds_uop(u.arg())) return u;  // the common case: sizes are numbers
  bool bound = false;
  std::function<Arg(const Arg&)> strip = [&](const Arg& a) -> Arg {
    if (a.is_uop()) {
      const sint s(a.uop());
      const UOp unbound = s.unbound();
      if (unbound == s.as_uop()) return a;
      vals.bind_all(a.uop());
      bound = true;
      return to_arg(sint(unbound));
    }
    if (!a.is<Arg::Tuple>()) return a;
    Arg::Tuple t;
    for (const Arg& x : a.tuple()) t.push_back(strip(x));
    return Arg(t);
  };
  Arg arg = strip(u.arg());
  return bound ? UOp(u.op(), u.dtype(), u.src(), std::move(arg)) : u;
}

/// A view with its variables bound to `vals` again (what a realized symbolic value is named by).
inline UOp rebind(const UOp& view, const VarVals& vals) {
  if (view.op() != Ops::RESHAPE || graph::shape_of(view).is_concrete()) return view;
  std::vector<sint> dims;
  for (const sint& d : graph::shape_of(view)) {
    if (d.is_int()) {
      dims.push_back(d);
      continue;
    }
    const UOp unbound = d.unbound();
    std::unordered_map<const UOpNode*, UOp> map;
    for (const UOp& x : toposort(unbound))
      if (x.op() == Ops::DEFINE_VAR) map.emplace(x.get(), x.bind(vals.at(x)));
    dims.push_back(sint(substitute(unbound, map)));
  }
  return UOp(Ops::RESHAPE, view.dtype(), {view.src(0)}, graph::shape_arg(Shape(dims)));
}

/// The key's copy of a DEVICE node: the same device with a marker source. A value computed from
/// constants alone (an arange) has no buffer to stand for, so without it the key would be the
/// tensor graph's own nodes: the cache would keep them alive with the memory they were realized
/// into (a leak), and a later graph that builds the same constants would read that memory
/// instead of folding them (an arange compared with an index would no longer be countable).
inline UOp key_device(const UOp& device) {
  static const UOp marker(Ops::UNIQUE, dtypes::void_, {}, std::numeric_limits<int64_t>::min());
  return UOp(Ops::DEVICE, device.dtype(), {marker}, device.arg());
}

inline Normalized normalize(const std::vector<UOp>& roots) {
  const std::vector<UOp> order = pending_graph(roots);
  Normalized n;
  std::unordered_map<const UOpNode*, UOp> done, placeholders;
  auto as_input = [&](const UOp& buffer) {
    auto [it, fresh] = placeholders.try_emplace(buffer.get());
    if (fresh) {
      it->second = placeholder(buffer, static_cast<int64_t>(n.inputs.size()));
      n.inputs.push_back(buffer);
    }
    return it->second;
  };
  auto rebuild = [&](const UOp& u) {
    std::vector<UOp> src;
    for (const UOp& s : u.src()) src.push_back(done.at(s.get()));
    return unbind_arg(u.replace(std::move(src)), n.var_vals);
  };
  for (const UOp& u : order) {
    if (u.op() == Ops::DEVICE) {
      done[u.get()] = key_device(u);
    } else if (u.op() == Ops::BUFFER) {
      done[u.get()] = as_input(u);
    } else if (u.op() == Ops::BIND) {
      // a bound variable used as a value: the key holds the variable, the value is this step's
      n.var_vals.bind_all(u);
      done[u.get()] = u.src(0);
    } else if (UOp view = graph::realized(u)) {
      // memory holds it: the key names that memory's place, not how the value was computed
      for (const UOp& v : toposort(view))
        if (!done.count(v.get()))
          done[v.get()] = v.op() == Ops::BUFFER ? as_input(v) : v.op() == Ops::DEVICE ? key_device(v) : rebuild(v);
      done[u.get()] = done.at(view.get());
    } else {
      done[u.get()] = rebuild(u);
      n.original.emplace(done[u.get()].get(), u);
    }
  }
  std::vector<UOp> normalized_roots;
  for (const UOp& r : roots) normalized_roots.push_back(done.at(r.get()));
  n.key = UOp(Ops::SINK, dtypes::void_, std::move(normalized_roots));
  return n;
}

/// A schedule over placeholders, and what each of its buffers becomes in a new step.
struct Template {
  enum class Source { input, alias, fresh };
  struct BufferSource {
    UOp node;       // the buffer in the template
    Source source;
    int64_t index;  // input: the placeholder's number; alias: the entry whose memory it names
  };
  std::vector<Kernel> kernels;
  std::vector<BufferSource> buffers;  // an entry comes after the entry it aliases
  bool usable = true;                 // false when a kernel computes something the key cannot name
};

inline Template make_template(const Normalized& n) {
  Template t;
  // what memory holds is already spelled out in the key as views of placeholders
  t.kernels = create_schedule(std::vector<UOp>(n.key.src().begin(), n.key.src().end()), true);
  // buffers are told apart by their memory: an assign names memory anew with an alias
  std::unordered_map<const Buffer*, int64_t> owner;  // memory -> its first entry
  std::unordered_set<const UOpNode*> seen;
  auto add = [&](const UOp& b, Template::Source source, int64_t index) {
    if (!seen.insert(b.get()).second) return;
    const Buffer* memory = graph::buffer_of(b).get();
    if (auto it = owner.find(memory); it != owner.end()) source = Template::Source::alias, index = it->second;
    else owner.emplace(memory, static_cast<int64_t>(t.buffers.size()));
    t.buffers.push_back({b, source, index});
  };
  for (int64_t k = 0; k < static_cast<int64_t>(n.inputs.size()); ++k)
    add(placeholder(n.inputs[static_cast<size_t>(k)], k), Template::Source::input, k);
  for (const Kernel& k : t.kernels) {
    for (const UOp& b : k.buffers) add(b, Template::Source::fresh, -1);
    for (const UOp& v : toposort(k.view))
      if (v.op() == Ops::BUFFER) add(v, Template::Source::fresh, -1);
    t.usable &= n.original.count(k.computes.get()) > 0;
  }
  return t;
}

/// The template's kernels for this step: placeholders bound to its buffers, new memory for the rest.
inline std::vector<Kernel> instantiate(const Template& t, const Normalized& n) {
  std::unordered_map<const UOpNode*, UOp> bind;
  std::vector<UOp> bound;
  for (const Template::BufferSource& b : t.buffers) {
    switch (b.source) {
      case Template::Source::input: bound.push_back(n.inputs[static_cast<size_t>(b.index)]); break;
      case Template::Source::alias: bound.push_back(graph::alias_buffer(bound[static_cast<size_t>(b.index)])); break;
      case Template::Source::fresh:
        bound.push_back(graph::new_buffer(graph::device_of(b.node), b.node.arg().as_int(), b.node.dtype()));
        break;
    }
    bind[b.node.get()] = bound.back();
  }
  std::vector<Kernel> out;
  for (const Kernel& k : t.kernels) {
    Kernel x = k;
    for (UOp& b : x.buffers) b = bind.at(b.get());
    x.view = rebind(substitute(k.view, bind), n.var_vals);
    x.computes = n.original.at(k.computes.get());
    x.var_vals = n.var_vals;  // this step's values (the template's kernels take them unbound)
    out.push_back(std::move(x));
  }
  return out;
}

class ScheduleCache {
 public:
  std::atomic<int64_t> hits{0}, misses{0};

  std::vector<Kernel> get(const std::vector<UOp>& roots) {
    const Normalized n = normalize(roots);
    std::shared_ptr<const Template> t;
    {
      std::lock_guard lock(mu_);
      if (auto it = map_.find(n.key.get()); it != map_.end()) t = it->second.second;
    }
    (t ? hits : misses).fetch_add(1, std::memory_order_relaxed);
    if (!t) {
      t = std::make_shared<const Template>(make_template(n));
      std::lock_guard lock(mu_);
      if (map_.size() >= 4096) map_.clear();  // a program that never repeats a step: start over
      map_.try_emplace(n.key.get(), n.key, t);
    }
    if (!t->usable) return create_schedule(roots);
    return instantiate(*t, n);
  }

 private:
  std::mutex mu_;
  std::unordered_map<const UOpNode*, std::pair<UOp, std::shared_ptr<const Template>>> map_;
};

inline ScheduleCache& schedule_cache() {
  static auto* cache = new ScheduleCache;  // never destroyed, like the kernel cache
  return *cache;
}
}  // namespace detail

/// The kernels that compute `roots`, from the schedule cache when a step of the same structure
/// was scheduled before (SCHEDULE_CACHE=0 schedules every time).
inline std::vector<Kernel> cached_schedule(const std::vector<UOp>& roots) {
  if (!getenv_int("SCHEDULE_CACHE", 1)) return create_schedule(roots);
  return detail::schedule_cache().get(roots);
}
/// How many schedules came from the cache, and how many were made (for tests and benchmarks).
inline std::pair<int64_t, int64_t> schedule_cache_counts() {
  return {detail::schedule_cache().hits.load(), detail::schedule_cache().misses.load()};
}

}  // namespace schedule
}  // namespace tinyt::inline v0
