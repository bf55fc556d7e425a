// An assign into part of a tensor (`cache[{Slice(), Slice(p, p + 1)}] = row`, a KV cache's new
// position) is built as a select over the whole tensor: where(in the region, value, old value).
// Stored as it is, its kernel reads and writes every element to change a few: a KV cache of 1024
// positions costs 1024 positions' traffic per token. Its in-place kernel is made to touch only the
// region, in two steps:
//   1. storing where(c, x, the element being overwritten) is storing x where c holds: the old
//      value stored back changes nothing. The store is gated by c instead.
//   2. a loop whose store gate holds on a stretch of k turns, a <= r < a + k (a may be a
//      variable, as the position is), runs those k turns only: r becomes a + r', r' in [0, k).
#pragma once

#include <optional>
#include <vector>

#include "../bounds.hpp"
#include "../linear.hpp"
#include "lower.hpp"

namespace tinyt::inline v0::schedule {

namespace detail {
/// The parts of a conjunction.
inline void conjuncts(const UOp& gate, std::vector<UOp>& out) {
  if (gate.op() == Ops::AND && gate.dtype().is_bool()) {
    for (const UOp& s : gate.src()) conjuncts(s, out);
  } else {
    out.push_back(gate);
  }
}

/// `part` as a bound of r: r >= at (lower) or r < at, when it compares r (coefficient 1 or -1)
/// with an expression free of r.
struct RangeBound {
  bool lower;
  UOp at;
};
inline std::optional<RangeBound> bound_of(const UOp& part, const UOp& r) {
  // a < b, or (a < b) != true: a - b < 0, or a - b >= 0
  const bool negated = part.op() == Ops::CMPNE && part.src(1).is_const() && part.src(1).dtype().is_bool() && part.src(1).const_int() == 1;
  const UOp& cmp = negated ? part.src(0) : part;
  if (cmp.op() != Ops::CMPLT || !(cmp.src(0).dtype().is_int() || cmp.src(0).dtype().is_index())) return std::nullopt;
  Linear form = linear_form(cmp.src(0) - cmp.src(1));
  i128 coef = 0;
  for (auto it = form.terms.begin(); it != form.terms.end(); ++it)
    if (it->atom == r) {
      coef = it->coef;
      form.terms.erase(it);
      break;
    }
  const UOp rest = form.build();
  if ((coef != 1 && coef != -1) || depends_on(rest, r)) return std::nullopt;
  auto canonical = [](const UOp& u) { return linear_form(u).build(); };
  if (coef == 1)  // r + rest < 0: r < -rest; r + rest >= 0: r >= -rest
    return RangeBound{negated, canonical(rest.const_like(0) - rest)};
  // -r + rest < 0: r >= rest + 1; -r + rest >= 0: r < rest + 1
  return RangeBound{!negated, canonical(rest + rest.const_like(1))};
}

/// 1: the store of where(c, x, old) as a store of x gated by c, when old is the element stored to.
inline UOp gate_unchanged(const UOp& store) {
  const UOp& at = store.src(0);
  const UOp& value = store.src(1);
  if (at.src().size() != 2 || value.op() != Ops::WHERE) return store;
  auto is_old = [&](const UOp& u) { return u.op() == Ops::LOAD && u.src(0).src().size() == 2 && u.src(0).src(0) == at.src(0) && u.src(0).src(1) == at.src(1); };
  UOp gate, x;
  if (is_old(value.src(2))) gate = value.src(0), x = value.src(1);
  else if (is_old(value.src(1))) gate = value.src(0).logical_not(), x = value.src(2);
  else return store;
  return UOp(Ops::STORE, dtypes::void_, {UOp(Ops::INDEX, at.dtype(), {at.src(0), at.src(1), gate}), x});
}

/// 2: the store with each loop narrowed to the stretch its gate holds on, where that stretch has
/// a constant length and always lies within the loop. The gate's two bounds, true there, are
/// dropped from it.
inline UOp narrow_to_gate(UOp store) {
  for (const UOp& r : all_ranges(store)) {
    if (range_kind(r) != RangeKind::loop || is_symbolic(r) || store.src(0).src().size() != 3) continue;
    std::vector<UOp> parts;
    conjuncts(store.src(0).src(2), parts);
    std::vector<std::pair<size_t, UOp>> lows, highs;  // (part, bound)
    for (size_t i = 0; i < parts.size(); ++i)
      if (const auto b = bound_of(parts[i], r)) (b->lower ? lows : highs).emplace_back(i, b->at);
    const int64_t n = range_size(r);
    auto narrow = [&]() -> UOp {
      for (const auto& [lo_part, lo] : lows)
        for (const auto& [hi_part, hi] : highs) {
          const Linear length = linear_form(hi - lo);
          if (!length.terms.empty() || length.constant <= 0 || length.constant >= n) continue;
          const auto k = static_cast<int64_t>(length.constant);
          if (vmin(lo) < 0 || vmax(lo) + k > n) continue;  // the stretch may leave the loop: the gate keeps it
          UOp gate;
          for (size_t i = 0; i < parts.size(); ++i)
            if (i != lo_part && i != hi_part) gate = gate ? (gate & parts[i]) : parts[i];
          const UOp& at = store.src(0);
          const UOp index = gate ? UOp(Ops::INDEX, at.dtype(), {at.src(0), at.src(1), gate}) : UOp(Ops::INDEX, at.dtype(), {at.src(0), at.src(1)});
          const UOp turn = k == 1 ? lo : lo + range(k, r.arg()[0].as_int(), RangeKind::loop);
          return substitute(UOp(Ops::STORE, dtypes::void_, {index, store.src(1)}), {{r.get(), turn}});
        }
      return store;
    };
    store = narrow();
    if (store.src(0).src().size() != 3) break;  // no gate left
  }
  return store;
}
}  // namespace detail

/// An in-place kernel's AST made to touch only the elements its value changes (see above):
/// a kernel of one store, whose value selects between a new value and the element it overwrites.
inline UOp store_only_changes(const UOp& ast, const PatternMatcher& simplify) {
  if (ast.src().size() != 1) return ast;
  const UOp gated = detail::gate_unchanged(ast.src(0));
  if (gated == ast.src(0)) return ast;
  return graph_rewrite(ast.replace({detail::narrow_to_gate(gated)}), simplify);
}

}  // namespace tinyt::inline v0::schedule
