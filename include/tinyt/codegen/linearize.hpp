// Linearizing a kernel: its AST (a DAG over RANGEs) becomes a flat list of UOps in program
// order, with loops opened (RANGE) and closed (END), and each REDUCE turned into an accumulator
// (DEFINE_REG) that is initialized before its loops, updated inside, and read after them. The
// kernel's float16/bfloat16 arithmetic is lowered to float32 first (narrow_floats.hpp), so a
// program holds narrow floats only in memory, constants and casts.
#pragma once

#include <array>
#include <unordered_map>
#include <unordered_set>

#include "narrow_floats.hpp"
#include "opt/opt.hpp"

namespace tinyt::inline v0 {
namespace codegen {

/// A linearized kernel: ops in program order; every source of an op comes earlier in the list.
struct Program {
  std::string name;
  std::vector<UOp> ops;
  std::vector<DType> globals;  // pointer dtypes of the DEFINE_GLOBALs, by index
  int64_t threads = 1;         // how many threads run it (core_id 0..threads-1)
  std::vector<Opt> opts;       // the opts it was built with
  // GPUs: the axis (RANGE id) each launch dimension runs, dimension 0 first, and the launch's
  // work-items along each dimension, in all and per work-group
  std::vector<int64_t> global_axes;
  std::array<int64_t, 3> global_size{1, 1, 1}, local_size{1, 1, 1};
  std::vector<UOp> vars;       // the symbolic variables it takes, in order (DEFINE_VAR)
  // a launch dimension of symbolic size (over `vars`) is as wide as the size's value at each
  // launch: global_size holds the largest it can be, symbolic_global its expression (else empty)
  std::array<UOp, 3> symbolic_global{};
  int64_t max_local = 1;       // GPUs: the most work-items a work-group may have
  // GPUs: the work-groups are part of the code (group_id and local_id ranges: LOCAL, STAGE), so
  // local_size is not the launcher's to choose
  bool fixed_local = false;
};

namespace detail {
// For every node of the kernel, the RANGEs it depends on that are still open where it is used
// (a REDUCE closes its own; a BARRIER after a PACK's copy, the copy's loops), in loop order.
using FreeRanges = std::unordered_map<const UOpNode*, std::vector<UOp>>;
inline FreeRanges free_ranges(const UOp& ast) {
  FreeRanges free;
  for (const UOp& u : toposort(ast)) {
    std::vector<UOp> r;
    if (u.op() == Ops::RANGE) r.push_back(u);
    for (size_t i = 0; i < u.src().size(); ++i) {
      if (u.op() == Ops::REDUCE && i > 0) break;
      for (const UOp& x : free.at(u.src(i).get()))
        if (std::find(r.begin(), r.end(), x) == r.end()) r.push_back(x);
    }
    if (u.op() == Ops::REDUCE)
      std::erase_if(r, [&](const UOp& x) { return std::find(u.src().begin() + 1, u.src().end(), x) != u.src().end(); });
    if (u.op() == Ops::BARRIER) std::erase_if(r, [](const UOp& x) { return range_kind(x) == RangeKind::pack; });
    std::sort(r.begin(), r.end(), range_before);
    free[u.get()] = std::move(r);
  }
  return free;
}

class Linearizer {
 public:
  std::vector<UOp> ops;

  explicit Linearizer(const UOp& ast) : free_(free_ranges(ast)) {
    for (const UOp& u : toposort(ast))
      if (u.op() == Ops::REDUCE) reduces_.push_back(u);
      else if (u.op() == Ops::BARRIER) ++barriers_;
  }

  /// Emits definitions (the kernel's symbolic variables, its local buffers) first, in order,
  /// where every loop can read them.
  void declare(const std::vector<UOp>& defines) {
    for (const UOp& v : defines) emit(v);
  }

  /// Emits the stores in order; consecutive stores share the loops they have in common.
  void emit_stores(const std::vector<UOp>& stores) {
    for (const UOp& store : stores) {
      const std::vector<UOp>& loops = free_.at(store.get());
      size_t common = 0;
      while (common < loops_.size() && common < loops.size() && loops_[common] == loops[common]) ++common;
      while (loops_.size() > common) close(loops_.back(), ops.back()), loops_.pop_back();
      std::vector<UOp> needed;  // the store's reductions and copies (PACK), inner ones first
      // (none left once all are emitted: a register tile's first store emits its siblings' too)
      if (reduced_.size() < reduces_.size() + barriers_)
        for (const UOp& u : toposort(store))
          if (u.op() == Ops::REDUCE || u.op() == Ops::BARRIER) needed.push_back(u);
      hoist(needed);
      for (size_t i = common; i < loops.size(); ++i) open(loops[i]), loops_.push_back(loops[i]), hoist(needed);
      emit(store);
    }
    while (!loops_.empty()) close(loops_.back(), ops.back()), loops_.pop_back();
  }

 private:
  FreeRanges free_;
  std::vector<UOp> reduces_;  // every REDUCE of the kernel
  size_t barriers_ = 0;       // and how many BARRIERs it has
  std::unordered_set<const UOpNode*> reduced_;  // the REDUCEs (and BARRIERs) already emitted
  std::vector<UOp> loops_;    // the loops the stores have open
  std::vector<std::unordered_map<const UOpNode*, UOp>> scopes_{1};
  int64_t accumulators_ = 0;

  UOp push(UOp u) {
    ops.push_back(u);
    return u;
  }
  UOp lookup(const UOp& u) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->find(u.get()); f != it->end()) return f->second;
    return {};
  }
  void open(const UOp& r) {
    emit(r.src(0));  // the loop bound
    push(r);
    scopes_.emplace_back();
    scopes_.back()[r.get()] = r;
  }
  UOp close(const UOp& r, const UOp& last) {
    scopes_.pop_back();
    return push(UOp(Ops::END, dtypes::void_, {r, last}));
  }

  UOp emit(const UOp& u) {
    if (UOp found = lookup(u)) return found;
    if (u.op() == Ops::RANGE) throw InternalError("linearize: a RANGE is used outside its loop");
    if (u.op() == Ops::REDUCE) {
      emit_reduces(u);
      return lookup(u);
    }
    if (u.op() == Ops::STORE) return emit_store(u);
    // a STAGE's copy made again in each pass of a loop overwrites the last pass's: every
    // work-item must be done reading that first
    if (is_stage(u)) {
      const auto& need = free_.at(u.get());
      if (std::any_of(need.begin(), need.end(), [](const UOp& r) { return range_rank(range_kind(r)) != 0; }))
        push(UOp(Ops::BARRIER, dtypes::void_, {}));
    }
    std::vector<UOp> src;
    for (const UOp& s : u.src()) src.push_back(emit(s));
    UOp out = push(u.replace(std::move(src)));
    scopes_.back()[u.get()] = out;
    if (u.op() == Ops::BARRIER) reduced_.insert(u.get());
    return out;
  }

  // A store inside the loops open now; one that fills a PACK's copy opens its own loops (the
  // copy's, kind `pack`) around it.
  UOp emit_store(const UOp& u) {
    std::vector<UOp> own;
    for (const UOp& r : free_.at(u.get()))
      if (!lookup(r)) {
        if (range_kind(r) != RangeKind::pack) throw InternalError("linearize: a STORE is used outside its loop");
        own.push_back(r);
      }
    for (const UOp& r : own) open(r);
    std::vector<UOp> src;
    for (const UOp& s : u.src()) src.push_back(emit(s));
    UOp out = push(u.replace(std::move(src))), last = out;
    for (auto it = own.rbegin(); it != own.rend(); ++it) last = close(*it, last);
    if (own.empty()) scopes_.back()[u.get()] = out;
    return out;
  }

  // Emits, in the loops open now, each of a store's REDUCEs and PACK copies not yet emitted that
  // needs no other loop: a reduction broadcast along inner loops (a softmax's row maximum) is
  // computed once per outer iteration, not once per element; a copy, once before the loops that
  // read it.
  void hoist(const std::vector<UOp>& needed) {
    for (const UOp& r : needed) {
      const auto& need = free_.at(r.get());
      if (!reduced_.count(r.get()) && std::all_of(need.begin(), need.end(), [&](const UOp& x) { return bool(lookup(x)); }))
        emit(r);
    }
  }

  // The REDUCEs that can share u's loops: same ranges, inside the same loops, and not nested in
  // one another. Expanded registers make many of them (a register tile). (One that needs fewer
  // loops open would be computed again on each turn of the others: the last tile of a split
  // loop, whose turn is a constant.)
  std::vector<UOp> siblings(const UOp& u) const {
    std::vector<UOp> out{u};
    const auto& loops = free_.at(u.get());
    for (const UOp& r : reduces_) {
      if (r == u || reduced_.count(r.get()) || r.src().size() != u.src().size() ||
          !std::equal(r.src().begin() + 1, r.src().end(), u.src().begin() + 1))
        continue;
      if (free_.at(r.get()) != loops) continue;
      if (depends_on(r, u) || depends_on(u, r)) continue;
      out.push_back(r);
    }
    return out;
  }

  // acc = identity; for (ranges) acc = acc <op> value; then the value is acc — for u and its
  // siblings together, in one loop nest
  void emit_reduces(const UOp& u) {
    const std::vector<UOp> group = siblings(u);
    std::vector<UOp> slots;
    for (const UOp& r : group) {
      reduced_.insert(r.get());
      UOp acc = push(UOp(Ops::DEFINE_REG, r.dtype().ptr(1, AddrSpace::reg), {}, accumulators_++));
      slots.push_back(push(UOp(Ops::INDEX, acc.dtype(), {acc, schedule::index_const(0)})));
      push(UOp(Ops::STORE, dtypes::void_, {slots.back(), push(reduce_identity(r.arg().get<Ops>(), r.dtype()))}));
    }
    // a reduction of partial results in local memory (a GPU work-group's) reads them after the
    // barrier that publishes them: the barrier, and the stores before it, come before its loops;
    // a STAGE's copies, inside the loops of the tiles they hold (emitted as soon as those are open)
    std::vector<UOp> barriers;
    for (const UOp& r : group)
      for (const UOp& x : toposort(r.src(0)))
        if (x.op() == Ops::BARRIER && std::find(barriers.begin(), barriers.end(), x) == barriers.end()) barriers.push_back(x);
    const auto publish = [&] {
      for (const UOp& b : barriers) {
        const auto& need = free_.at(b.get());
        if (!lookup(b) && std::all_of(need.begin(), need.end(), [&](const UOp& x) { return bool(lookup(x)); })) emit(b);
      }
    };
    publish();
    std::vector<UOp> ranges(u.src().begin() + 1, u.src().end());
    std::sort(ranges.begin(), ranges.end(), range_before);
    for (const UOp& r : ranges) open(r), publish();
    // A tensor-core op whose 4 results are each summed here accumulates in place: its C operand is
    // the 4 accumulators and its results their next values (on a GPU one instruction, not one and
    // 4 float adds a lane).
    std::unordered_map<const UOpNode*, std::array<size_t, TensorCore::c_count>> in_place;  // WMMA -> the sums of its results
    for (size_t i = 0; i < group.size(); ++i) {
      const UOp& x = group[i].src(0);
      if (group[i].arg().get<Ops>() == Ops::ADD && x.op() == Ops::GEP && x.src(0).op() == Ops::WMMA)
        in_place.try_emplace(x.src(0).get()).first->second.at(static_cast<size_t>(x.arg().as_int())) = i + 1;  // (0: none)
    }
    std::erase_if(in_place, [](const auto& w) { return std::find(w.second.begin(), w.second.end(), 0) != w.second.end(); });
    std::vector<bool> in_mma(group.size());  // the sums an op adds to itself
    for (const auto& [wmma, sums] : in_place)
      for (size_t sum : sums) in_mma[sum - 1] = true;
    // a float sum of products accumulates with fused multiply-adds (MULACC), the one place
    // codegen asks for FMA: matmul and conv accumulation. Nowhere else is a*b+c fused, by us or
    // by a compiler, so a result does not depend on the CPU or the compiler.
    std::vector<std::vector<UOp>> values;
    for (size_t i = 0; i < group.size(); ++i) {
      const UOp& x = group[i].src(0);
      const bool fused = group[i].arg().get<Ops>() == Ops::ADD && x.op() == Ops::MUL && x.dtype().is_float();
      values.push_back(in_mma[i] ? std::vector<UOp>{} : fused ? std::vector<UOp>{emit(x.src(0)), emit(x.src(1))} : std::vector<UOp>{emit(x)});
    }
    UOp last;
    std::unordered_set<const UOpNode*> accumulated;
    for (size_t i = 0; i < group.size(); ++i) {
      if (in_mma[i]) {
        const UOp& wmma = group[i].src(0).src(0);
        if (!accumulated.insert(wmma.get()).second) continue;  // done with the first of its sums
        const auto& sums = in_place.at(wmma.get());
        std::vector<UOp> src;
        for (const UOp& x : wmma.src()) src.push_back(emit(x));
        for (size_t sum : sums) src.push_back(push(UOp(Ops::LOAD, dtypes::float32, {slots[sum - 1], ranges.back()})));
        const UOp added = push(UOp(Ops::WMMA, wmma.dtype(), std::move(src), wmma.arg()));
        for (size_t c = 0; c < sums.size(); ++c)
          last = push(UOp(Ops::STORE, dtypes::void_, {slots[sums[c] - 1], push(UOp(Ops::GEP, dtypes::float32, {added}, static_cast<int64_t>(c)))}));
        continue;
      }
      // the loads carry what they must come after, so the in-loop and the final read differ
      UOp current = push(UOp(Ops::LOAD, group[i].dtype(), {slots[i], ranges.back()}));
      UOp next = values[i].size() == 2 ? UOp(Ops::MULACC, current.dtype(), {values[i][0], values[i][1], current})
                                       : current.alu(group[i].arg().get<Ops>(), {values[i][0]});
      last = push(UOp(Ops::STORE, dtypes::void_, {slots[i], push(next)}));
    }
    for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) last = close(*it, last);
    for (size_t i = 0; i < group.size(); ++i) scopes_.back()[group[i].get()] = push(UOp(Ops::LOAD, group[i].dtype(), {slots[i], last}));
  }
};
}  // namespace detail

/// The program of a kernel AST (a SINK of STOREs).
inline Program linearize(const UOp& ast, std::string name) {
  TINYT_ASSERT(ast.op() == Ops::SINK, "linearize takes a SINK, not ", op_name(ast.op()));
  const UOp lowered = lower_narrow_floats(ast);
  detail::Linearizer lin(lowered);
  std::vector<UOp> vars = schedule::variables(lowered);
  lin.declare(vars);
  // local buffers (a work-group's partials, a PACK's copies) are declared once, at the top
  std::vector<UOp> locals;
  for (const UOp& u : toposort(lowered))
    if (u.op() == Ops::DEFINE_LOCAL) locals.push_back(u);
  lin.declare(locals);
  lin.emit_stores(lowered.src());
  Program p{std::move(name), std::move(lin.ops), {}, 1, {}, {}, {1, 1, 1}, {1, 1, 1}, std::move(vars)};
  std::array<int64_t, 3> groups{1, 1, 1};  // a fixed work-group kernel's work-groups per dimension
  for (const UOp& u : toposort(lowered)) {
    if (u.op() == Ops::RANGE && range_kind(u) == RangeKind::thread) p.threads = range_size(u);
    if (u.op() == Ops::RANGE && (range_kind(u) == RangeKind::group_id || range_kind(u) == RangeKind::local_id)) {
      // a fixed work-group: dimension d runs group_id's work-groups of local_id's work-items
      const size_t dim = static_cast<size_t>(u.arg()[2].as_int());
      if (!p.fixed_local) p.global_axes.assign(3, -1), p.fixed_local = true;
      (range_kind(u) == RangeKind::local_id ? p.local_size : groups)[dim] = range_size(u);
      if (range_kind(u) == RangeKind::group_id || p.global_axes[dim] < 0) p.global_axes[dim] = u.arg()[0].as_int();
    }
    if (u.op() == Ops::RANGE && range_kind(u) == RangeKind::global) {
      // innermost (fastest-varying memory) first: neighbouring work-items read neighbouring elements
      const size_t dim = static_cast<size_t>(u.arg()[2].as_int());
      if (p.global_axes.size() <= dim) p.global_axes.resize(dim + 1, -1);
      p.global_axes[dim] = u.arg()[0].as_int();
      p.global_size[dim] = range_size(u);
      if (is_symbolic(u)) p.symbolic_global[dim] = u.src(0);
    }
    if (u.op() == Ops::DEFINE_GLOBAL) {
      const auto i = static_cast<size_t>(u.arg().as_int());
      if (p.globals.size() <= i) p.globals.resize(i + 1);
      p.globals[i] = u.dtype();
    }
  }
  if (p.fixed_local)
    for (size_t d = 0; d < 3; ++d) p.global_size[d] = groups[d] * p.local_size[d];
  // a buffer the kernel binds but never touches (its loads simplified away) is still a parameter
  for (DType& g : p.globals)
    if (g == DType()) g = dtypes::uint8.ptr();
  return p;
}

}  // namespace codegen
}  // namespace tinyt::inline v0
