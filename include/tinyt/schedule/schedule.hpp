// The scheduler: decides which nodes of a tensor graph are computed into memory (realization
// points), lowers each into a kernel, and orders the kernels by what they read and write.
#pragma once

#include <optional>
#include <set>
#include <unordered_set>

#include "assign_region.hpp"
#include "lower.hpp"
#include "merge_loops.hpp"
#include "reduce_collapse.hpp"

namespace tinyt::inline v0 {
namespace schedule {

/// One kernel to run: its AST and the buffers bound to its DEFINE_GLOBALs (output first). A copy
/// between devices is a Kernel whose AST is a COPY (buffers: destination, source): the engine
/// runs it with the devices' allocators; an allreduce across processes one whose AST is an
/// ALLREDUCE arg=(op, shape) (buffers: destination, source).
struct Kernel {
  UOp ast;
  std::vector<UOp> buffers;  // BUFFER nodes
  UOp computes;              // the tensor-level node whose value the kernel writes
  UOp view;                  // where that value lives afterwards (a view of buffers[0])
  bool in_place = false;     // writes existing memory (an assign)
  bool temporary = false;    // its memory is reused after its last reader: the value is not kept
  VarVals var_vals;          // the values of the symbolic variables its AST takes
};

namespace detail {
using tinyt::detail::cat;
/// Where memory holds a node's value (a view), or empty: graph::realized, unless the scheduler
/// must recompute it because that memory is overwritten in this schedule.
using Known = std::function<UOp(const UOp&)>;

// A node that needs no kernel: memory already holds it in its own shape.
inline bool is_materialized(const UOp& u, const Known& known = graph::realized) {
  if (u.op() == Ops::BUFFER || known(u)) return true;
  if (u.op() == Ops::MULTI)  // a tensor on several devices whose parts are all in memory
    return std::all_of(u.src().begin(), u.src().end(), [&](const UOp& part) { return is_materialized(part, known); });
  return u.op() == Ops::RESHAPE && u.src(0).op() == Ops::BUFFER;
}

// The nodes below the roots that the kernels compute (stopping at what memory already holds).
inline std::vector<UOp> pending_graph(const std::vector<UOp>& roots, const Known& known = graph::realized) {
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
    if (known(*u) || u->op() == Ops::BUFFER) continue;
    for (const UOp& s : (*u)->src) stack.push_back({&s, false});
  }
  return order;
}

// For an EXPAND on a path from a reduction, the first broadcast axis of the path after it when
// every axis it broadcasts comes after every axis of size > 1 it keeps (a row maximum broadcast
// along its row), and nothing when not. `from` is the path's first broadcast axis before it (-1: none).
// The kernel's loops then run the kept axes outside the broadcast ones, and the linearizer
// computes the reduction once per outer iteration, between them.
inline std::optional<int64_t> trailing_broadcast(const UOp& expand, int64_t from) {
  const Shape &in = graph::shape_of(expand.src(0)), &out = graph::shape_of(expand);
  int64_t first_broadcast = static_cast<int64_t>(out.size()), last_kept = -1;
  for (size_t a = 0; a < out.size(); ++a) {
    if (in[a] == 1 && !(out[a] == 1)) first_broadcast = std::min(first_broadcast, static_cast<int64_t>(a));
    else if (!(out[a] == 1) && (from < 0 || static_cast<int64_t>(a) < from)) last_kept = static_cast<int64_t>(a);
  }
  if (last_kept > first_broadcast) return std::nullopt;
  return from < 0 ? first_broadcast : std::min(from, first_broadcast);
}

// Whether `u`'s kernel runs on a GPU (its device's target says so): each output element is a
// work-item there, so a reduction broadcast back along trailing axes, which a CPU's loop nest
// computes once per row, would be computed again by every work-item of the row. A device that
// cannot be opened here is not one (its kernels never run).
inline bool on_gpu(const UOp& u) {
  try {
    return backend::device(Device::split(graph::device_of(u))[0]).target().gpu;
  } catch (const DeviceError&) {
    return false;
  }
}

// Whether an EXPAND makes more elements than its source has (a broadcast, not a reshape's 1s): a
// dim of 1 that becomes more, or a symbolic size (a KV cache's length, which may be 1 at one call
// but is more at the next, and one schedule serves them all).
inline bool enlarges(const UOp& expand) {
  const Shape to = graph::shape_of(expand), from = graph::shape_of(expand.src(0));
  for (size_t i = 0; i < to.size() && i < from.size(); ++i)
    if (from[i] == 1 && !(to[i].is_int() && to[i].as_int() <= 1)) return true;
  return false;
}

// Ops whose kernel loops over their output as their source's does (elementwise).
inline bool keeps_loop_order(Ops op) {
  return GroupOp::ALU.contains(op) || op == Ops::CAST || op == Ops::BITCAST || op == Ops::CONTIGUOUS ||
         op == Ops::DETACH || op == Ops::CONTIGUOUS_BACKWARD;
}

// The buffers a kernel of `u`'s device may bind, its output included (0: no limit; a device that
// cannot be opened here has none: its kernels never run).
inline int64_t max_buffers(const UOp& u) {
  try {
    return backend::device(Device::split(graph::device_of(u))[0]).target().max_buffers;
  } catch (const Error&) {
    return 0;
  }
}

// On a device that binds few buffers per kernel (WebGPU: 8 storage buffers), no kernel reads more
// than its limit less its output. Going up the graph, a node that would read too many has its
// sources that read the most realized first, until the rest fits (tinygrad's pm_limit_bufs): each
// of them read fewer, so their kernels fit. A graph with no BUFFER on such a device skips it all.
inline void limit_buffers(const std::vector<UOp>& order, const Known& known, std::unordered_set<const UOpNode*>& points) {
  std::unordered_map<std::string, size_t> limited;  // device -> its limit
  std::unordered_set<std::string> seen;             // (each device looked up once)
  for (const UOp& u : order)
    if (u.op() == Ops::BUFFER && seen.insert(graph::device_of(u)).second)
      if (const int64_t n = max_buffers(u); n > 0) limited[graph::device_of(u)] = static_cast<size_t>(n);
  if (limited.empty()) return;
  const auto memory = [&](const UOp& s) { return known(s) || s.op() == Ops::BUFFER || points.count(s.get()); };
  std::unordered_map<const UOpNode*, std::vector<const UOpNode*>> reads;  // the memory a node's kernel would read
  for (const UOp& u : order) {
    if (known(u) || u.op() == Ops::BUFFER) continue;
    const auto gather = [&] {
      std::vector<const UOpNode*> r;
      for (const UOp& s : u.src()) {
        if (memory(s)) r.push_back(s.get());
        else if (auto it = reads.find(s.get()); it != reads.end()) r.insert(r.end(), it->second.begin(), it->second.end());
      }
      std::sort(r.begin(), r.end());
      r.erase(std::unique(r.begin(), r.end()), r.end());
      return r;
    };
    std::vector<const UOpNode*> r = gather();
    const auto limit = limited.find(graph::device_of(u));
    if (limit != limited.end() && r.size() + 1 > limit->second && u.op() != Ops::COPY && u.op() != Ops::ALLREDUCE) {
      std::vector<UOp> sources;
      for (const UOp& s : u.src())
        if (!memory(s) && reads[s.get()].size() >= 2) sources.push_back(s);
      std::stable_sort(sources.begin(), sources.end(), [&](const UOp& a, const UOp& b) { return reads[a.get()].size() > reads[b.get()].size(); });
      for (const UOp& s : sources) {
        if (r.size() + 1 <= limit->second) break;
        points.insert(s.get());
        r = gather();
      }
    }
    reads[u.get()] = std::move(r);
  }
}

// Realization points: roots, explicit ones, copies, and reductions whose result would be
// recomputed (broadcast back other than along trailing axes, or read by several consumers).
inline std::vector<UOp> realization_points(const std::vector<UOp>& roots, const std::vector<UOp>& order,
                                           const Known& known) {
  std::unordered_map<const UOpNode*, std::vector<const UOpNode*>> consumers;
  for (const UOp& u : order)
    if (!known(u) && u.op() != Ops::BUFFER)
      for (const UOp& s : u.src()) consumers[s.get()].push_back(u.get());
  std::unordered_set<const UOpNode*> points;
  for (const UOp& r : roots)
    if (!is_materialized(r, known)) points.insert(r.get());
  for (const UOp& u : order) {
    if (known(u) || u.op() == Ops::BUFFER) continue;
    const bool moves_memory = u.op() == Ops::COPY || u.op() == Ops::ALLREDUCE;  // whole buffers, not kernels
    if (u.op() == Ops::CONTIGUOUS || moves_memory || u.op() == Ops::ASSIGN) points.insert(u.get());
    if (moves_memory && !is_materialized(u.src(0), known)) points.insert(u.src(0).get());
  }
  // A reduction is realized when it has several consumers, when a path from it pads it before
  // it is stored (padded_then_stored), or when a path from it to the next realization point
  // broadcasts it in a way the consuming kernel would recompute it for: an EXPAND that is not trailing (on a GPU: any EXPAND, see on_gpu), or a movement op or a
  // reduction over kept axes after one.
  // It stays in the kernel when it reads no memory (an arange, cheap and usually counted away).
  auto reads_memory = [&](const UOp& r) {
    for (const UOp& x : toposort(r))
      if (x.op() == Ops::BUFFER || known(x)) return true;
    return false;
  };
  std::unordered_map<const UOpNode*, const UOp*> node;
  for (const UOp& u : order) node[u.get()] = &u;
  bool gpu = false;  // whether the reduction judged now runs on a GPU
  auto recomputed_downstream = [&](const std::unordered_set<const UOpNode*>& first) {
    // (node, first broadcast axis on the path so far; -1 before any EXPAND)
    std::vector<std::pair<const UOpNode*, int64_t>> stack;
    for (const UOpNode* c : first) stack.emplace_back(c, -1);
    std::set<std::pair<const UOpNode*, int64_t>> seen;
    while (!stack.empty()) {
      auto [c, from] = stack.back();
      stack.pop_back();
      if (!seen.insert({c, from}).second) continue;
      if (c->op == Ops::EXPAND) {
        const std::optional<int64_t> next = trailing_broadcast(*node.at(c), from);
        if (!next || gpu) return true;
        from = *next;
      } else if (c->op == Ops::REDUCE_AXIS) {
        // reduced again: a reduction over kept axes after a broadcast recomputes; one of broadcast
        // axes only, or with nothing broadcast between (a conv's input gradient sums its windows'
        // products), reads each value once, inside its own loop, and is judged on its own
        if (from >= 0)
          for (int64_t a : node.at(c)->arg()[1].ints())
            if (a < from) return true;
        continue;
      } else if (from >= 0 && !keeps_loop_order(c->op)) {
        return true;
      }
      if (points.count(c)) continue;
      for (const UOpNode* cc : consumers[c]) stack.emplace_back(cc, from);
    }
    return false;
  };
  // Whether a path from the reduction pads it and stores it with no reduction between: that
  // kernel would loop over the padded shape and compute the reduction under the pad's gate, where
  // no opt applies (a conv computed into the next conv's padded input ran at 0.2 GFLOPS). Stored
  // first, the pad is a copy. A pad that another reduction reads (a conv's input gradient summing
  // its windows) stays in that reduction's kernel.
  auto padded_then_stored = [&](const std::unordered_set<const UOpNode*>& first) {
    std::vector<std::pair<const UOpNode*, bool>> stack;  // (node, padded on the way)
    for (const UOpNode* c : first) stack.emplace_back(c, false);
    std::set<std::pair<const UOpNode*, bool>> seen;
    while (!stack.empty()) {
      auto [c, padded] = stack.back();
      stack.pop_back();
      if (!seen.insert({c, padded}).second || c->op == Ops::REDUCE_AXIS) continue;
      padded = padded || c->op == Ops::PAD;
      if (points.count(c)) {
        if (padded) return true;
        continue;
      }
      for (const UOpNode* cc : consumers[c]) stack.emplace_back(cc, padded);
    }
    return false;
  };
  // How many reductions read a value directly, through elementwise and movement ops but no
  // broadcast: a LayerNorm after a matmul sums the matmul's result twice (its mean and its
  // variance), and each of those kernels would compute the whole matmul again. Reductions already
  // chosen as kernels of their own count only when `realized_too`.
  auto reductions_reading = [&](const UOpNode* value, bool realized_too = false) {
    std::unordered_set<const UOpNode*> reductions, seen;
    std::vector<const UOpNode*> stack(consumers[value].begin(), consumers[value].end());
    while (!stack.empty()) {
      const UOpNode* c = stack.back();
      stack.pop_back();
      if (!seen.insert(c).second || c->op == Ops::EXPAND) continue;
      if (c->op == Ops::REDUCE_AXIS && (realized_too || !points.count(c))) {
        reductions.insert(c);
        continue;
      }
      if (points.count(c)) continue;
      if (keeps_loop_order(c->op) || GroupOp::Movement.contains(c->op)) stack.insert(stack.end(), consumers[c].begin(), consumers[c].end());
    }
    return reductions.size();
  };
  // Whether a reduction is a big contraction: it sums products with a broadcast operand (a matmul,
  // a conv), whose kernel tiles its output axes, over a million of them or more. Reduced again in
  // the same kernel, its output axes would be that reduction's loops, which no tile spans
  // (PaddleOCR's classifier: a 1x1 conv whose output is max-pooled then averaged, at 0.2 GFLOPS:
  // 1.5 ms of its 4.7). A small one costs less than a second kernel's launch.
  auto contraction = [&](const UOp& r) {
    const Shape products = graph::shape_of(r.src(0));
    if (!products.is_concrete() || products.numel().as_int() < (int64_t{1} << 20)) return false;
    std::vector<const UOp*> stack{&r.src(0)};
    std::unordered_set<const UOpNode*> seen;
    while (!stack.empty()) {
      const UOp* x = stack.back();
      stack.pop_back();
      if (!seen.insert(x->get()).second || known(*x) || x->op() == Ops::BUFFER || x->op() == Ops::REDUCE_AXIS || points.count(x->get()))
        continue;
      if (x->op() == Ops::EXPAND && enlarges(*x) && reads_memory(x->src(0))) return true;
      for (const UOp& s : x->src()) stack.push_back(&s);
    }
    return false;
  };
  // The end of a reduction's epilogue: the one value of the elementwise ops after it that
  // everything else computed from the reduction reads (a matmul's bias and activation: gelu reads
  // its input twice), when what reads that value broadcasts it into a kernel that would recompute
  // it (the next matmul). Realized there, the reduction stays in that kernel, which stores the
  // epilogue's result, instead of a kernel storing the reduction and one more for the epilogue.
  auto epilogue_end = [&](const UOp& r) -> const UOpNode* {
    std::unordered_set<const UOpNode*> region{r.get()};
    std::vector<const UOpNode*> stack{r.get()};
    const UOpNode* end = nullptr;
    while (!stack.empty()) {
      const UOpNode* x = stack.back();
      stack.pop_back();
      for (const UOpNode* c : consumers[x]) {
        if (region.count(c)) continue;
        if ((keeps_loop_order(c->op) || c->op == Ops::RESHAPE) && !points.count(c)) {
          region.insert(c);
          stack.push_back(c);
        } else if (end && end != x) {
          return nullptr;  // two values leave the epilogue
        } else {
          end = x;
        }
      }
    }
    if (!end) return nullptr;
    const std::unordered_set<const UOpNode*> readers(consumers[end].begin(), consumers[end].end());
    for (const UOpNode* c : readers)
      if (region.count(c)) return nullptr;
    if (!recomputed_downstream(readers)) return nullptr;
    while (end->op == Ops::RESHAPE && consumers[end->src[0].get()].size() == 1) end = end->src[0].get();  // (the value, not a view of it)
    return end == r.get() || end->op == Ops::RESHAPE ? nullptr : end;
  };
  for (const UOp& u : order) {
    if (u.op() != Ops::REDUCE_AXIS || points.count(u.get()) || !reads_memory(u)) continue;
    gpu = on_gpu(u);
    const std::unordered_set<const UOpNode*> distinct(consumers[u.get()].begin(), consumers[u.get()].end());
    const size_t reduced_by = reductions_reading(u.get());
    // (one reader: a reduction read by several is stored anyway, and its readers judged as before)
    if (!gpu && reduced_by == 0 && distinct.size() == 1)
      if (const UOpNode* end = epilogue_end(u)) points.insert(end);
    if (distinct.size() > 1 || recomputed_downstream(distinct) || padded_then_stored(distinct) || reduced_by > 1 ||
        (reduced_by == 1 && u.arg()[0].get<Ops>() == Ops::ADD && contraction(u)))
      points.insert(u.get());
  }
  // Two contractions combined elementwise (a gated FFN: silu(x W_gate) * (x W_up)) would be one
  // kernel whose tiles run both sums, with two accumulators each that no CPU opt sizes for (SmolLM's
  // FFN, 512 tokens: 20.4-21 ms in one kernel, 9.8-10.3 ms in two). On a CPU the earlier one is
  // stored, and the later one's kernel reads it in its epilogue. `computed_by`: which contraction an
  // elementwise value of its kernel (up to the value the kernel stores) is computed from.
  std::unordered_map<const UOpNode*, const UOpNode*> computed_by;
  for (const UOp& u : order) {
    if (u.op() != Ops::REDUCE_AXIS || points.count(u.get()) || on_gpu(u) || u.arg()[0].get<Ops>() != Ops::ADD || !contraction(u))
      continue;
    std::vector<const UOpNode*> stack{u.get()};
    std::unordered_set<const UOpNode*> seen;
    while (!stack.empty()) {
      const UOpNode* x = stack.back();
      stack.pop_back();
      if (!seen.insert(x).second) continue;
      const UOpNode*& by = computed_by[x];
      if (by && by != u.get()) points.insert(by);  // (of three summed, the first two are stored)
      by = u.get();
      if (x != u.get() && points.count(x)) continue;  // stored here: its readers are other kernels
      for (const UOpNode* c : consumers[x]) {
        const bool broadcast = c->op == Ops::EXPAND && enlarges(*node.at(c));
        if (!broadcast && (keeps_loop_order(c->op) || GroupOp::Movement.contains(c->op))) stack.push_back(c);
      }
    }
  }
  // An elementwise value broadcast into a reduction (the gradient flowing into a conv's backward,
  // the input of a conv) would be recomputed once per element of the broadcast: it is realized
  // first, as tinygrad's "realize before expand" does, unless it is cheap to recompute (one
  // input, a few ops: a mean's scaling, a negated max). Values computed from a reduction that
  // stays in its kernel are left alone (the linearizer computes those once per row).
  // Nor, on a CPU, is a decoding of packed numbers, a value wider than all it reads but what it
  // broadcasts (GGUF's blocks of bytes to float32; Q4_K's float scales, one per 32 weights): a
  // float copy of a model's weights would be the most memory the model takes, and the matmul
  // reading them decodes each panel once per thread's rows where it copies the panel (PACK).
  // (A 512-token prompt through a Q4_0 model.)
  // An arange (a reduction that reads no memory) in the value is free where a sum of products
  // reads the value (attention's probabilities, read by their product with V, under a causal mask
  // of aranges), not where a selection does (a gather's one-hot, which its reduction collapses
  // into one load): `through_arange` says the value has one.
  struct Judgement {
    bool worth = false, through_arange = false;
  };
  auto worth_realizing = [&](const UOp& x) {
    std::vector<std::pair<const UOp*, bool>> stack{{&x, false}};  // (node, behind a broadcast)
    std::set<std::pair<const UOpNode*, bool>> seen;
    std::unordered_set<const UOpNode*> counted;
    int inputs = 0, ops = 0, narrow = 0, wide = 0;
    bool through_arange = false;
    while (!stack.empty()) {
      auto [u, broadcast] = stack.back();
      stack.pop_back();
      if (!seen.insert({u->get(), broadcast}).second) continue;
      const bool first = counted.insert(u->get()).second;
      if (known(*u) || u->op() == Ops::BUFFER || (u != &x && points.count(u->get()))) {
        inputs += first;
        if (u->dtype().itemsize() < x.dtype().itemsize()) ++narrow;
        else if (!broadcast) ++wide;
        continue;
      }
      if (u->op() == Ops::REDUCE_AXIS) {
        if (reads_memory(*u)) return Judgement{};
        through_arange = true;
        continue;
      }
      // a transcendental weighs as much as the four ops that make a value worth storing: exp(x)
      // read by a matmul was computed again for every column tile (x.exp().matmul(v), 512x512: 20x)
      if (first && GroupOp::ALU.contains(u->op())) ops += GroupOp::Transcendental.contains(u->op()) ? 4 : 1;
      broadcast |= u->op() == Ops::EXPAND && enlarges(*u);
      for (const UOp& s : u->src()) stack.emplace_back(&s, broadcast);
    }
    const bool decodes = x.dtype().is_float() && narrow > 0 && wide == 0;
    return Judgement{(inputs >= 2 || ops >= 4) && !(decodes && !on_gpu(x)), through_arange};
  };
  auto broadcast_into_reduce = [&](const UOp& x, bool products_only) {
    std::vector<std::pair<const UOpNode*, bool>> stack;  // (consumer, after an enlarging EXPAND)
    for (const UOpNode* c : consumers[x.get()]) stack.emplace_back(c, false);
    std::set<std::pair<const UOpNode*, bool>> seen;
    while (!stack.empty()) {
      auto [c, expanded] = stack.back();
      stack.pop_back();
      if (!seen.insert({c, expanded}).second) continue;
      if (c->op == Ops::REDUCE_AXIS) {
        if (expanded && (!products_only || node.at(c)->src(0).op() == Ops::MUL)) return true;
        continue;
      }
      if (c->op == Ops::EXPAND) {
        expanded |= enlarges(*node.at(c));
      } else if (!GroupOp::Movement.contains(c->op) && (!expanded || !keeps_loop_order(c->op))) {
        continue;  // before the broadcast only movement ops lead on; an elementwise op is its own candidate
      }
      if (points.count(c)) continue;
      for (const UOpNode* cc : consumers[c]) stack.emplace_back(cc, expanded);
    }
    return false;
  };
  for (const UOp& u : order) {
    if (known(u) || points.count(u.get()) || !keeps_loop_order(u.op()) || u.op() == Ops::CONTIGUOUS) continue;
    if (!reads_memory(u)) continue;
    const Judgement judged = worth_realizing(u);
    if (judged.worth && broadcast_into_reduce(u, judged.through_arange)) points.insert(u.get());
  }
  // An elementwise value of many inputs that a reduction reads and something else reads too (a
  // transformer's residual stream: x plus each attention's and FFN's output so far, read by the
  // next RMSNorm's sum, by its scaling and by the next sum) would be added up again by every
  // kernel reading it, one more buffer a layer (SmolLM's 30th norm read 61). Realized once it
  // reads four inputs of its own size (in order, so a realized one counts as one input of the
  // next); a broadcast input (a scalar, an optimizer's learning rate) costs nothing to read again.
  auto inputs_read = [&](const UOp& x) {
    std::vector<const UOp*> stack{&x};
    std::unordered_set<const UOpNode*> seen;
    size_t inputs = 0;
    while (!stack.empty()) {
      const UOp* v = stack.back();
      stack.pop_back();
      if (!seen.insert(v->get()).second || v->op() == Ops::EXPAND) continue;
      if (v != &x && (known(*v) || points.count(v->get()) || !(keeps_loop_order(v->op()) || GroupOp::Movement.contains(v->op())))) {
        inputs += v->op() != Ops::CONST;
        continue;
      }
      for (const UOp& src : v->src()) stack.push_back(&src);
    }
    return inputs;
  };
  for (const UOp& u : order) {
    if (known(u) || points.count(u.get()) || !GroupOp::ALU.contains(u.op())) continue;
    const std::unordered_set<const UOpNode*> readers(consumers[u.get()].begin(), consumers[u.get()].end());
    if (readers.size() >= 2 && reductions_reading(u.get(), true) >= 1 && inputs_read(u) >= 4) points.insert(u.get());
  }
  limit_buffers(order, known, points);
  std::vector<UOp> out;
  for (const UOp& u : order)
    if (points.count(u.get())) out.push_back(u);
  return out;
}

inline std::string kernel_name(const UOp& ast) {
  std::vector<std::pair<int64_t, std::string>> axes;  // (axis, size)
  bool reduces = false;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::RANGE) {
      // a symbolic size is named by its variables ("r_start_pos1_8"): names are identifiers
      std::string size = u.src(0).is_const() ? std::to_string(static_cast<int64_t>(u.src(0).const_int())) : expr_string(u.src(0));
      std::erase_if(size, [](char c) { return !std::isalnum(static_cast<unsigned char>(c)) && c != '_'; });
      axes.emplace_back(u.arg()[0].as_int(), size);
      reduces |= u.arg()[1].as_int() == static_cast<int64_t>(RangeKind::reduce);
    }
  std::sort(axes.begin(), axes.end());
  std::string name = reduces ? "r" : "E";
  for (const auto& [axis, size] : axes) name += "_" + size;
  return name;
}

// Orders kernels so that each runs after the kernels whose output it reads, and before any
// kernel that overwrites (assigns into) memory it reads. Ties keep the original order. A cycle
// (a kernel that reads memory both before and after an assign overwrites it, or two assigns
// that each read what the other overwrites) is broken by copying that memory aside first
// (`copy_aside(buffer)` is the kernel that does it): the readers that must run after the
// overwrite read the copy.
template <class CopyAside>
std::vector<Kernel> order_kernels(std::vector<Kernel> kernels, CopyAside copy_aside) {
  auto reads = [&](size_t k, const UOpNode* b) {
    for (size_t i = 1; i < kernels[k].buffers.size(); ++i)
      if (kernels[k].buffers[i].get() == b) return true;
    return false;
  };
  for (;;) {
    const size_t n = kernels.size();
    std::vector<std::vector<size_t>> after(n);  // after[j]: kernels that must run after j
    std::vector<size_t> pending(n, 0);
    for (size_t j = 0; j < n; ++j)
      for (size_t k = 0; k < n; ++k) {
        if (j == k) continue;
        // raw: k reads what j computes (readers name an in-place result by its new alias, the
        // view, others by the buffer; an assign into that result reads it too); war: j reads
        // memory that k overwrites
        const UOpNode* computed = graph::base_buffer(kernels[j].view).get();
        const UOpNode* target = kernels[k].in_place ? kernels[k].buffers[0].get() : nullptr;
        const bool raw = reads(k, computed) || (target && target == computed);
        const bool war = target && reads(j, target);
        if (raw || war) after[j].push_back(k), ++pending[k];
      }
    std::vector<size_t> order;
    std::vector<bool> done(n, false);
    while (order.size() < n) {
      size_t pick = n;
      for (size_t k = 0; k < n && pick == n; ++k)
        if (!done[k] && pending[k] == 0) pick = k;
      if (pick == n) break;
      done[pick] = true;
      for (size_t k : after[pick]) --pending[k];
      order.push_back(pick);
    }
    if (order.size() == n) {
      std::vector<Kernel> out;
      for (size_t k : order) out.push_back(std::move(kernels[k]));
      return out;
    }
    // a cycle: an assign whose target a kernel that must run after it reads
    bool broken = false;
    for (size_t k = 0; k < n && !broken; ++k) {
      if (done[k] || !kernels[k].in_place) continue;
      std::vector<bool> later(n, false);  // what must run after k
      std::vector<size_t> stack{k};
      while (!stack.empty()) {
        const size_t j = stack.back();
        stack.pop_back();
        for (size_t x : after[j])
          if (!later[x]) later[x] = true, stack.push_back(x);
      }
      const UOp target = kernels[k].buffers[0];
      std::vector<size_t> readers;  // of the memory before k overwrites it, that must run after k
      for (size_t j = 0; j < n; ++j)
        if (j != k && later[j] && reads(j, target.get())) readers.push_back(j);
      if (readers.empty()) continue;
      Kernel copy = copy_aside(target);
      for (size_t j : readers)
        for (size_t i = 1; i < kernels[j].buffers.size(); ++i)
          if (kernels[j].buffers[i] == target) kernels[j].buffers[i] = copy.buffers[0];
      kernels.push_back(std::move(copy));
      broken = true;
    }
    TINYT_ASSERT(broken, "the schedule has a cycle no copy breaks");
  }
}

// True when every load of the output (buffer 0) in the kernel reads the element the kernel stores to.
inline bool reads_only_own_element(const UOp& ast) {
  const std::vector<UOp> nodes = toposort(ast);
  UOp store_index;
  for (const UOp& u : nodes)
    if (u.op() == Ops::STORE && u.src(0).src(0).op() == Ops::DEFINE_GLOBAL && u.src(0).src(0).arg().as_int() == 0) store_index = u.src(0).src(1);
  for (const UOp& u : nodes) {
    if (u.op() != Ops::LOAD) continue;
    const UOp& idx = u.src(0);
    if (idx.src(0).op() == Ops::DEFINE_GLOBAL && idx.src(0).arg().as_int() == 0 && !(idx.src(1) == store_index && idx.src().size() == 2))
      return false;
  }
  return true;
}

}  // namespace detail

/// Values with no elements need no kernel: each pending node whose shape has a dim of 0 is given
/// an empty buffer of its own as its value, before scheduling (a kernel storing it would run its
/// loops once and write past the buffer). A reduction of nothing is then its identity, and a
/// read of an empty buffer is masked off (Lowerer). Tensors on several devices are done per part.
inline void realize_empty(const std::vector<UOp>& roots) {
  for (const UOp& u : detail::pending_graph(roots)) {
    if (u.op() == Ops::BUFFER || u.op() == Ops::MULTI || graph::realized(u)) continue;
    const Shape& shape = graph::shape_of(u);
    if (std::none_of(shape.begin(), shape.end(), [](const sint& d) { return d == 0; })) continue;
    graph::set_realized(u, graph::reshape(graph::new_buffer(graph::device_of(u), 0, u.dtype()), shape));
  }
}

/// The rules a kernel's AST is simplified by once lowered.
inline const PatternMatcher& kernel_ast_rules() {
  static const PatternMatcher rules = symbolic() + reduce_collapse() + gated_load_rules();
  return rules;
}

/// The kernels that compute `roots`, in an order that respects what each reads and writes.
/// `memory_only`: trust no computed value, only BUFFERs (for graphs whose nodes are shared with
/// other graphs that computed them, like the schedule cache's normalized ones).
inline std::vector<Kernel> create_schedule(const std::vector<UOp>& roots, bool memory_only = false) {
  const detail::Known buffers_only = [](const UOp& u) { return u.op() == Ops::BUFFER ? u : UOp{}; };
  // a value held in memory that an assign here overwrites is read before the overwrite (or
  // from a copy made before it, when its reader must also run after it)
  const detail::Known known = memory_only ? buffers_only : detail::Known(graph::realized);
  const std::vector<UOp> order = detail::pending_graph(roots, known);
  const std::vector<UOp> points = detail::realization_points(roots, order, known);
  std::unordered_map<const UOpNode*, UOp> computed;  // realization point -> view of its buffer
  auto input_view = [&](const UOp& u) -> UOp {
    if (auto it = computed.find(u.get()); it != computed.end()) return it->second;
    return known(u);
  };
  std::vector<Kernel> kernels;
  // one kernel storing `value_node` (at the point's shape) into `out_buffer`
  auto make_kernel = [&](const UOp& point, const UOp& value_node, const UOp& out_buffer, const UOp& view) {
    Lowerer lw(input_view);
    UOp out = lw.global(out_buffer);
    const std::vector<UOp> shape = lw.sizes(graph::shape_of(point));
    std::vector<UOp> out_idx;
    for (const UOp& d : shape)
      out_idx.push_back(d.is_const() && d.const_int() == 1 ? index_const(0) : lw.new_range(d, RangeKind::loop));
    UOp value = lw.lower(value_node, out_idx, UOp::const_(dtypes::bool_, true));
    UOp store(Ops::STORE, dtypes::void_, {UOp(Ops::INDEX, out.dtype(), {out, simplify(flatten(out_idx, shape))}), value});
    UOp ast = merge_adjacent_loops(graph_rewrite(UOp(Ops::SINK, dtypes::void_, {store}), kernel_ast_rules()), kernel_ast_rules());
    return Kernel{ast, lw.buffers(), point, view, false, false, lw.var_vals()};
  };
  for (const UOp& point : points) {
    // a symbolic shape gets memory for its largest value: the kernel serves every binding
    const Shape& shape = graph::shape_of(point);
    const int64_t numel = shape.numel().vmax();
    if (point.op() == Ops::ASSIGN) {
      // a store into the target's memory; the tensor then names that memory anew
      const UOp target = graph::base_buffer(input_view(point.src(0)) ? input_view(point.src(0)) : point.src(0));
      TINYT_ASSERT(target, "assign: the target is not a contiguous buffer");
      const UOp view = graph::reshape(graph::alias_buffer(target), shape);
      Kernel kernel = make_kernel(point, point.src(1), target, view);
      if (!detail::reads_only_own_element(kernel.ast)) {
        // the value reads the target elsewhere than where it writes: compute it aside first
        const UOp temp = graph::new_buffer(graph::device_of(point), numel, point.dtype());
        Kernel first = make_kernel(point.src(1), point.src(1), temp, graph::reshape(temp, shape));
        kernels.push_back(first);
        computed[point.src(1).get()] = first.view;
        kernel = make_kernel(point, point.src(1), target, view);
      }
      kernel.ast = store_only_changes(kernel.ast, kernel_ast_rules());  // (a slice's assign writes the slice)
      kernel.in_place = true;
      kernels.push_back(kernel);
      computed[point.get()] = view;
      continue;
    }
    const UOp out_buffer = graph::new_buffer(graph::device_of(point), numel, point.dtype());
    if ((point.op() == Ops::COPY && graph::device_of(point.src(0)) != graph::device_of(point)) || point.op() == Ops::ALLREDUCE) {
      // the source is in memory in its own shape (realization_points made sure): copy its bytes
      const UOp& from = point.src(0);
      const UOp view = from.op() == Ops::BUFFER ? UOp{} : input_view(from);
      const UOp source = graph::base_buffer(view ? view : from);
      TINYT_ASSERT(source && source.arg().as_int() == numel, op_name(point.op()), ": the source is not a whole contiguous buffer");
      const UOp ast = point.op() == Ops::COPY ? UOp(Ops::COPY, point.dtype(), {}, numel)
                                              : UOp(Ops::ALLREDUCE, point.dtype(), {}, Arg{point.arg(), graph::shape_arg(shape)});
      Kernel kernel{ast, {out_buffer, source}, point, graph::reshape(out_buffer, shape), false, false, {}};
      computed[point.get()] = kernel.view;
      kernels.push_back(std::move(kernel));
      continue;
    }
    const UOp value_node = point.op() == Ops::CONTIGUOUS || point.op() == Ops::COPY ? point.src(0) : point;
    Kernel kernel = make_kernel(point, value_node, out_buffer, graph::reshape(out_buffer, shape));
    computed[point.get()] = kernel.view;
    kernels.push_back(std::move(kernel));
  }
  // a copy of memory an assign overwrites, for the readers that must run after it
  auto copy_aside = [&](const UOp& buffer) {
    const UOp copy =
        graph::new_buffer(graph::device_of(buffer), buffer.arg().as_int(), buffer.dtype());
    Kernel kernel = make_kernel(buffer, buffer, copy, copy);
    kernel.temporary = true;  // it holds no tensor's value
    return kernel;
  };
  return detail::order_kernels(std::move(kernels), copy_aside);
}

/// Reuses memory within a schedule: the buffer of an intermediate nobody outside the schedule
/// can reach (`reachable_outside` says who can) is handed to a later kernel of the same size
/// once its last reader has run. Such intermediates are temporary: their values are not kept.
template <class ReachableOutside>
void plan_memory(std::vector<Kernel>& kernels, const std::vector<UOp>& roots, ReachableOutside reachable_outside) {
  std::unordered_set<const UOpNode*> root_set;
  for (const UOp& r : roots) root_set.insert(r.get());
  std::unordered_map<const UOpNode*, size_t> last_read;  // buffer -> last kernel reading it
  for (size_t i = 0; i < kernels.size(); ++i)
    for (size_t j = 1; j < kernels[i].buffers.size(); ++j) last_read[kernels[i].buffers[j].get()] = i;
  std::vector<std::pair<size_t, std::shared_ptr<Buffer>>> free_after;  // (kernel, memory)
  std::vector<std::shared_ptr<Buffer>> pool;
  for (size_t i = 0; i < kernels.size(); ++i) {
    for (auto it = free_after.begin(); it != free_after.end();) {
      if (it->first < i) pool.push_back(it->second), it = free_after.erase(it);
      else ++it;
    }
    Kernel& k = kernels[i];
    if (k.in_place || root_set.count(k.computes.get()) || reachable_outside(k.computes)) continue;
    const UOp& out = k.buffers[0];
    const auto reads = last_read.find(out.get());
    if (reads == last_read.end()) continue;
    const size_t bytes = static_cast<size_t>(out.arg().as_int()) * static_cast<size_t>(out.dtype().itemsize());
    auto fit = std::find_if(pool.begin(), pool.end(), [&](const std::shared_ptr<Buffer>& b) {
      return b->nbytes() == bytes && b->device() == graph::device_of(out);
    });
    std::shared_ptr<Buffer> memory;
    if (fit != pool.end()) {
      memory = *fit;
      pool.erase(fit);
      TensorMeta& m = graph::meta(out);
      std::lock_guard lock(m.mu);
      m.buffer = memory;
    } else {
      memory = graph::buffer_of(out);
    }
    k.temporary = true;
    free_after.emplace_back(reads->second, memory);
  }
}

}  // namespace schedule
}  // namespace tinyt::inline v0
