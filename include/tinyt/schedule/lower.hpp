// Lowering one kernel: the tensor-level graph below a realized node becomes scalar code over
// RANGEs. Movement ops never copy: each turns the index of its output into the index of its
// input, so a chain of views becomes one index expression, simplified by the symbolic engine.
// A pad becomes a validity mask: loads under it are gated, and its value is a WHERE.
#pragma once

#include <algorithm>
#include <map>
#include <tuple>

#include "../graph.hpp"
#include "../symbolic.hpp"
#include "../valid.hpp"

namespace tinyt::inline v0 {
namespace schedule {

/// Kernel-level conventions: DEFINE_GLOBAL(arg=i) is buffer i (0 is the output); RANGE(end)
/// arg=(axis, kind) (kinds below; the lowerer makes loops and reductions, kernel opts the rest);
/// INDEX(buf, i[, gate]);
/// LOAD(INDEX) reads 0 where the gate is false; STORE(INDEX, value); REDUCE(value, ranges...)
/// arg=op accumulates over its ranges; SINK(stores...) is the kernel.
enum class RangeKind : int64_t {
  loop = 0,    // an output loop
  reduce = 1,  // a loop a REDUCE accumulates over
  thread = 2,  // not a loop: its value is the thread's core_id, one thread per value
  local = 3,   // an inner output loop (a cache tile)
  upcast = 4,  // output copies in registers, expanded before rendering
  unroll = 5,  // reduce accumulators in registers, expanded before rendering
  global = 6,  // not a loop: its value is a GPU work-item's index along one launch dimension
  group = 7,   // a reduce axis split across a GPU work-group: each work-item reduces its part
  pack = 8,    // a loop of a copy into a thread's contiguous buffer (PACK), before the loops that read it
  warp = 9,    // the lanes of a GPU warp that share tensor-core ops (TC): launch dimension 0
  group_id = 10,  // not a loop: its value is the index of a GPU work-group along one launch dimension
  local_id = 11,  // not a loop: its value is a work-item's index inside its work-group along one dimension
};

inline UOp range(const UOp& end, int64_t axis, RangeKind kind) {
  return UOp(Ops::RANGE, dtypes::index, {end}, Arg{axis, static_cast<int64_t>(kind)});
}
inline UOp range(int64_t end, int64_t axis, RangeKind kind) {
  return range(UOp::const_(dtypes::index, end), axis, kind);
}
inline RangeKind range_kind(const UOp& r) { return static_cast<RangeKind>(r.arg()[1].as_int()); }
/// A range's length; for a symbolic one (over Variables), the largest it can be.
inline int64_t range_size(const UOp& r) {
  return static_cast<int64_t>(r.src(0).is_const() ? r.src(0).const_int() : bounds(r.src(0)).hi);
}
inline bool is_symbolic(const UOp& r) { return !r.src(0).is_const(); }

/// Where a range's loop goes: threads outermost, then output loops, then tiles, then reductions.
inline int range_rank(RangeKind k) {
  switch (k) {
    case RangeKind::thread:
    case RangeKind::global:
    case RangeKind::group:
    case RangeKind::warp:
    case RangeKind::group_id:
    case RangeKind::local_id: return 0;
    case RangeKind::loop: return 1;
    case RangeKind::local: return 2;
    case RangeKind::reduce: return 3;
    case RangeKind::pack: return 5;
    default: return 4;
  }
}
inline bool range_before(const UOp& a, const UOp& b) {
  return std::pair(range_rank(range_kind(a)), a.arg()[0].as_int()) < std::pair(range_rank(range_kind(b)), b.arg()[0].as_int());
}

/// All ranges of a kernel, any kind, in loop order.
inline std::vector<UOp> all_ranges(const UOp& ast) {
  std::vector<UOp> out;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::RANGE) out.push_back(u);
  std::sort(out.begin(), out.end(), range_before);
  return out;
}

inline UOp index_const(int64_t v) { return UOp::const_(dtypes::index, v); }

/// Row-major offset of an index into a shape (sizes as index UOps).
inline UOp flatten(const std::vector<UOp>& idx, const std::vector<UOp>& shape) {
  UOp flat = index_const(0), stride = index_const(1);
  for (size_t i = shape.size(); i-- > 0;) {
    if (!(shape[i].is_const() && shape[i].const_int() == 1)) flat = flat + idx[i] * stride;
    stride = stride * shape[i];
  }
  return flat;
}
/// The index into `shape` of a row-major offset.
inline std::vector<UOp> unflatten(const UOp& flat, const std::vector<UOp>& shape) {
  std::vector<UOp> idx(shape.size());
  UOp stride = index_const(1);
  for (size_t i = shape.size(); i-- > 0;) {
    idx[i] = shape[i].is_const() && shape[i].const_int() == 1 ? index_const(0) : flat.idiv(stride) % shape[i];
    stride = stride * shape[i];
  }
  return idx;
}

/// The index into `in` of index `idx` into `out`, the same elements reshaped. Concrete shapes are
/// flattened and unflattened whole: the symbolic engine folds the divisions away. It cannot divide
/// by a symbolic size (a KV cache's p + 1), so where one appears the dims are matched in groups
/// first: a dim equal on both sides keeps its index, 1s come and go, and only a group whose
/// products agree is flattened (merging a cache's (kv heads, group) into heads leaves its length
/// and width alone, where the whole flattening divided by (p + 1) * 64 at every load).
inline std::vector<UOp> reshape_index(const std::vector<UOp>& idx, const std::vector<UOp>& out, const std::vector<UOp>& in) {
  const auto concrete = [](const UOp& d) { return d.is_const(); };
  const auto is_one = [](const UOp& d) { return d.is_const() && d.const_int() == 1; };
  const auto has_zero = [](const std::vector<UOp>& s) { return std::any_of(s.begin(), s.end(), [](const UOp& d) { return d.is_const() && d.const_int() == 0; }); };
  if ((std::all_of(out.begin(), out.end(), concrete) && std::all_of(in.begin(), in.end(), concrete)) || has_zero(out) || has_zero(in))
    return unflatten(flatten(idx, out), in);
  std::vector<UOp> src(in.size());
  const auto slice = [](const std::vector<UOp>& v, size_t from, size_t to) { return std::vector<UOp>(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(to)); };
  size_t i = 0, j = 0;
  while (i < out.size() || j < in.size()) {
    if (i < out.size() && is_one(out[i])) { ++i; continue; }
    if (j < in.size() && is_one(in[j])) { src[j++] = index_const(0); continue; }
    if (i < out.size() && j < in.size() && out[i].get() == in[j].get()) { src[j++] = idx[i++]; continue; }
    // a group of concrete dims whose products agree, else everything from here on at once
    const size_t gi = i, gj = j;
    int64_t po = 1, pi = 1;
    bool grouped = true;
    do {  // the side whose product is behind takes its next dim
      const bool take_out = po <= pi;
      const std::vector<UOp>& side = take_out ? out : in;
      size_t& at = take_out ? i : j;
      if (at >= side.size() || !concrete(side[at])) { grouped = false; break; }
      (take_out ? po : pi) *= side[at++].const_int();
    } while (po != pi);
    if (!grouped) i = out.size(), j = in.size();
    const std::vector<UOp> part = unflatten(flatten(slice(idx, gi, i), slice(out, gi, i)), slice(in, gj, j));
    std::copy(part.begin(), part.end(), src.begin() + static_cast<std::ptrdiff_t>(gj));
  }
  return src;
}

/// The values bound to the symbolic variables of a kernel, ordered by name (a kernel takes its
/// variables in that order).
struct VarVals {
  std::vector<std::pair<UOp, int64_t>> vals;  // (DEFINE_VAR, value)

  /// Records `var = value`; a variable bound to two values in one schedule is an error.
  void bind(const UOp& var, int64_t value) {
    for (const auto& [v, x] : vals)
      if (v == var) {
        if (x != value)
          throw ShapeError(tinyt::detail::cat("Variable '", var.arg()[0].get<std::string>(), "' is bound to ", x,
                                              " and to ", value, " in one realize"));
        return;
      }
    vals.emplace_back(var, value);
    std::sort(vals.begin(), vals.end(), [](const auto& a, const auto& b) { return var_order(a.first, b.first); });
  }
  /// Records the value of every bound variable (BIND) in `root`.
  void bind_all(const UOp& root) {
    for (const UOp& x : toposort(root))
      if (x.op() == Ops::BIND) bind(x.src(0), static_cast<int64_t>(x.src(1).const_int()));
  }
  /// The value of `var`; one not bound is an error naming it.
  int64_t at(const UOp& var) const {
    for (const auto& [v, x] : vals)
      if (v == var) return x;
    throw ShapeError(tinyt::detail::cat("Variable '", var.arg()[0].get<std::string>(), "' has no value: bind it (",
                                        var.arg()[0].get<std::string>(), ".bind(n)) in a shape of this computation"));
  }
  static bool var_order(const UOp& a, const UOp& b) {
    return a.arg()[0].get<std::string>() != b.arg()[0].get<std::string>()
               ? a.arg()[0].get<std::string>() < b.arg()[0].get<std::string>()
               : structural_less(a, b);
  }
};

/// The DEFINE_VARs of a graph, ordered by name.
inline std::vector<UOp> variables(const UOp& root) {
  std::vector<UOp> out;
  for (const UOp& u : toposort(root))
    if (u.op() == Ops::DEFINE_VAR) out.push_back(u);
  std::sort(out.begin(), out.end(), VarVals::var_order);
  return out;
}

/// Kernel rules about gated loads: a load that reads 0 where its gate is false needs no select
/// that does the same (where(g, load gated by g, 0) is the load); a gate that always holds is
/// none, and a load whose gate never does reads 0.
inline const PatternMatcher& gated_load_rules() {
  static const PatternMatcher pm{{
      {UPat::var("g").where(UPat(Ops::LOAD, {UPat(Ops::INDEX, {UPat::var(), UPat::var(), UPat::var("g")})}).named("ld"),
                            UPat::cnst(0)),
       [](auto& m) { return m["ld"]; }},
      {UPat(Ops::INDEX, {UPat::var("buf"), UPat::var("at"), UPat::cnst(1)}).named("idx"),
       [](auto& m) { return m["idx"].replace({m["buf"], m["at"]}); }},
      {UPat(Ops::LOAD, {UPat(Ops::INDEX, {UPat::var(), UPat::var(), UPat::cnst(0)})}).named("ld"),
       [](auto& m) { return m["ld"].const_like(0); }},
  }};
  return pm;
}

/// Lowers the graph of one kernel; `is_input` says which tensor-level nodes are read from
/// memory (already computed) rather than computed here.
class Lowerer {
 public:
  using InputFn = std::function<UOp(const UOp&)>;  // the buffer view holding a node, or empty

  explicit Lowerer(InputFn input_view) : input_view_(std::move(input_view)) {}

  /// The BUFFER nodes the kernel touches, in DEFINE_GLOBAL order.
  const std::vector<UOp>& buffers() const { return bufs_; }
  /// DEFINE_GLOBAL for a buffer (numbered in order of first use; call for the output first).
  UOp global(const UOp& buffer) {
    auto [it, fresh] = buf_index_.try_emplace(buffer.get(), static_cast<int64_t>(bufs_.size()));
    if (fresh) bufs_.push_back(buffer);
    return UOp(Ops::DEFINE_GLOBAL, buffer.dtype().ptr(buffer.arg().as_int()), {}, it->second);
  }
  UOp new_range(const UOp& end, RangeKind kind) {
    // a loop of no iterations would be simplified into one (its index's bounds are one point):
    // the scheduler gives empty values no kernel, and a reduction of nothing is its identity
    TINYT_ASSERT(!(end.is_const() && end.const_int() <= 0), "lower: a loop of ", expr_string(end), " iterations");
    return range(end, next_axis_++, kind);
  }
  /// The values the sizes lowered so far bind their variables to.
  const VarVals& var_vals() const { return vars_; }

  /// A size as an index UOp: a bound variable is unbound (the kernel takes its value).
  UOp size(const sint& s) {
    if (s.is_int()) return index_const(s.as_int());
    vars_.bind_all(s.as_uop());
    return s.unbound();
  }
  std::vector<UOp> sizes(const Shape& shape) {
    std::vector<UOp> out;
    for (const sint& d : shape) out.push_back(size(d));
    return out;
  }

  /// The value of tensor-level node `u` at index `idx` (one index per dim), where `valid` holds.
  UOp lower(const UOp& u, const std::vector<UOp>& idx, const UOp& valid) {
    Key key{u.get(), {}, valid.get()};
    for (const UOp& i : idx) key.idx.push_back(i.get());
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    UOp out = lower_uncached(u, idx, valid);
    memo_.emplace(std::move(key), out);
    keep_.push_back(u), keep_.insert(keep_.end(), idx.begin(), idx.end()), keep_.push_back(valid);
    return out;
  }

  /// A load of buffer element `flat` where `valid` holds (0 elsewhere), its index simplified.
  UOp load(const UOp& buffer, const UOp& flat, const UOp& valid) {
    // no element of an empty buffer is ever read: whatever reads it is masked off (a pad of
    // an empty dim, a part of a cat)
    if (buffer.arg().as_int() == 0) return UOp::const_(buffer.dtype(), 0);
    auto [unwrapped, address] = unwrap_mod_clauses(simplify(valid), simplify(flat));
    UOp gate = simplify_valid(unwrapped);
    if (gate.is_const() && !gate.const_int()) return UOp::const_(buffer.dtype(), 0);
    UOp g = global(buffer);
    if (gate.is_const()) return UOp(Ops::LOAD, buffer.dtype(), {UOp(Ops::INDEX, g.dtype(), {g, address})});
    UOp i = uop_given_valid(gate, address);
    return UOp(Ops::LOAD, buffer.dtype(), {UOp(Ops::INDEX, g.dtype(), {g, i, gate})});
  }

 private:
  struct Key {
    const UOpNode* u;
    std::vector<const UOpNode*> idx;
    const UOpNode* valid;
    bool operator<(const Key& o) const { return std::tie(u, idx, valid) < std::tie(o.u, o.idx, o.valid); }
  };

  UOp lower_uncached(const UOp& u, const std::vector<UOp>& idx, const UOp& valid) {
    if (u.op() == Ops::BUFFER) return load(u, idx[0], valid);
    // a symbolic size used as a value (a mean's count): the kernel takes its variables
    if (u.op() == Ops::BIND || u.op() == Ops::DEFINE_VAR) return size(sint(u));
    if (UOp view = input_view_(u)) return lower(view, idx, valid);
    const std::vector<UOp> in = u.src().empty() ? std::vector<UOp>{} : sizes(graph::shape_of(u.src(0)));
    auto is_one = [](const UOp& d) { return d.is_const() && d.const_int() == 1; };
    switch (u.op()) {
      case Ops::CONST: return UOp(Ops::CONST, u.dtype(), {}, u.arg());
      case Ops::RESHAPE: return lower(u.src(0), reshape_index(idx, sizes(graph::shape_of(u)), in), valid);
      case Ops::PERMUTE: {
        std::vector<UOp> src_idx(idx.size());
        const auto perm = u.arg().ints();
        for (size_t i = 0; i < perm.size(); ++i) src_idx[static_cast<size_t>(perm[i])] = idx[i];
        return lower(u.src(0), src_idx, valid);
      }
      case Ops::EXPAND: {
        std::vector<UOp> src_idx = idx;
        for (size_t i = 0; i < in.size(); ++i)
          if (is_one(in[i])) src_idx[i] = index_const(0);
        return lower(u.src(0), src_idx, valid);
      }
      case Ops::SHRINK: {
        std::vector<UOp> src_idx = idx;
        const auto bounds = graph::pairs(u.arg());
        for (size_t i = 0; i < in.size(); ++i) src_idx[i] = idx[i] + size(bounds[i].first);
        return lower(u.src(0), src_idx, valid);
      }
      case Ops::FLIP: {
        std::vector<UOp> src_idx = idx;
        for (size_t i = 0; i < in.size(); ++i)
          if (u.arg()[i].get<bool>()) src_idx[i] = in[i] - 1 - idx[i];
        return lower(u.src(0), src_idx, valid);
      }
      case Ops::PAD: {
        std::vector<UOp> src_idx = idx;
        UOp inside = UOp::const_(dtypes::bool_, true);
        const auto padding = graph::pairs(u.arg());
        for (size_t i = 0; i < in.size(); ++i) {
          if (padding[i].first == 0 && padding[i].second == 0) continue;
          const UOp before = size(padding[i].first);
          src_idx[i] = idx[i] - before;
          inside = inside & idx[i].lt(before).logical_not() & idx[i].lt(before + in[i]);
        }
        inside = simplify(inside);
        UOp value = lower(u.src(0), src_idx, simplify(valid & inside));
        // the padded region is 0 whatever the value computes there (exp(0) is not 0)
        return inside.where(value, UOp::const_(u.dtype(), 0));
      }
      case Ops::REDUCE_AXIS: {
        std::vector<UOp> src_idx = idx, ranges;
        for (int64_t a : u.arg()[1].ints()) {
          const auto ax = static_cast<size_t>(a);
          if (in[ax].is_const() && in[ax].const_int() == 0) return reduce_identity(u.arg()[0].get<Ops>(), u.dtype());
          if (is_one(in[ax])) continue;
          ranges.push_back(new_range(in[ax], RangeKind::reduce));
          src_idx[ax] = ranges.back();
        }
        UOp value = lower(u.src(0), src_idx, valid);
        if (ranges.empty()) return value;
        std::vector<UOp> src{value};
        src.insert(src.end(), ranges.begin(), ranges.end());
        return UOp(Ops::REDUCE, u.dtype(), std::move(src), u.arg()[0]);
      }
      case Ops::CONTIGUOUS: case Ops::DETACH: case Ops::CONTIGUOUS_BACKWARD:
        return lower(u.src(0), idx, valid);
      default: break;
    }
    if (GroupOp::ALU.contains(u.op()) || u.op() == Ops::CAST || u.op() == Ops::BITCAST) {
      std::vector<UOp> src;
      for (const UOp& s : u.src()) src.push_back(lower(s, idx, valid));
      return UOp(u.op(), u.dtype(), std::move(src), u.arg());
    }
    throw InternalError(tinyt::detail::cat("lower: no lowering for ", op_name(u.op()), " (it should have been realized)"));
  }

  InputFn input_view_;
  std::vector<UOp> bufs_;
  std::unordered_map<const UOpNode*, int64_t> buf_index_;
  int64_t next_axis_ = 0;
  VarVals vars_;
  std::map<Key, UOp> memo_;
  std::vector<UOp> keep_;  // keeps the nodes behind memo keys alive
};

}  // namespace schedule
}  // namespace tinyt::inline v0
