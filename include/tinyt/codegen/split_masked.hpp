// Splitting masked loops (index-set splitting): a loop whose masks (the gates of its loads and
// stores: a pad's border, a PADTO's extra turns) hold for every value of the other ranges on one
// stretch of its turns becomes up to three loops: before the stretch, the stretch, after it. In
// the stretch every mask that depends on the loop folds away, so its loads and stores are plain
// and neighbouring lanes vectorize; outside it the masks are false (a border of zeros) or stay
// (the last tile of a padded row). A padded copy's interior (PaddleOCR's E_6_200_6_100) and a
// matmul whose row was padded to whole vectors (6625 -> 6656: 207 tiles plain, 1 masked) keep
// the speed of their unmasked forms.
//
// The parts of a loop keep its range id (they sort where it did among the kernel's loops); parts
// of one length are one RANGE, so the linearizer may run two of them in one loop: they write
// different elements, so that is the same program.
#pragma once

#include "../bounds.hpp"
#include "../linear.hpp"
#include "opt/opt.hpp"

namespace tinyt::inline v0 {
namespace codegen {

namespace detail {
// The turns [lo, hi) of `r` on which the mask `gate` holds whatever the other ranges are; empty
// when some part of the gate that depends on r is not a comparison of a linear form of r.
inline std::optional<std::pair<i128, i128>> always_true(const UOp& gate, const UOp& r) {
  std::pair<i128, i128> turns{0, range_size(r)};
  if (!depends_on(gate, r)) return turns;
  if (gate.op() == Ops::AND) {
    for (const UOp& part : gate.src()) {
      const auto in = always_true(part, r);
      if (!in) return std::nullopt;
      turns = {std::max(turns.first, in->first), std::min(turns.second, in->second)};
    }
    return turns;
  }
  // a < b, or (a < b) != true: holds where a - b < 0, or >= 0
  const bool negated = gate.op() == Ops::CMPNE && gate.src(1).is_const() && gate.src(1).dtype().is_bool() && gate.src(1).const_int() == 1;
  const UOp& cmp = negated ? gate.src(0) : gate;
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
  if (coef == 0 || depends_on(rest, r)) return std::nullopt;
  // coef * t + rest, rest in [lo, hi] over the other ranges (its constant included)
  const Bounds b = bounds(rest);
  if (!negated) {  // coef * t + b.hi < 0
    if (coef > 0) turns.second = std::min(turns.second, floordiv128(-b.hi - 1, coef) + 1);
    else turns.first = std::max(turns.first, floordiv128(b.hi, -coef) + 1);
  } else {  // coef * t + b.lo >= 0
    if (coef > 0) turns.first = std::max(turns.first, -floordiv128(b.lo, coef));
    else turns.second = std::min(turns.second, floordiv128(b.lo, -coef) + 1);
  }
  return turns;
}

// The masks of a store's memory accesses.
inline std::vector<UOp> masks_of(const UOp& store) {
  std::vector<UOp> out;
  for (const UOp& u : toposort(store))
    if (u.op() == Ops::INDEX && u.src().size() > 2 && u.src(0).op() == Ops::DEFINE_GLOBAL) out.push_back(u.src(2));
  return out;
}

// `store` cut into parts along its masked loops, outermost first, into `out`; at most `parts` of
// them (each part is a copy of the code).
inline void split_store(const UOp& store, int64_t parts, std::vector<UOp>& out) {
  std::vector<UOp> loops;
  for (const UOp& r : all_ranges(store))
    if (range_kind(r) == RangeKind::loop && !is_symbolic(r)) loops.push_back(r);
  std::sort(loops.begin(), loops.end(), range_before);
  const std::vector<UOp> masks = masks_of(store);
  for (const UOp& r : loops) {
    const i128 n = range_size(r);
    std::pair<i128, i128> turns{0, n};
    bool linear = false;
    for (const UOp& m : masks) {
      if (!depends_on(m, r)) continue;
      const auto in = always_true(m, r);
      if (!in) {
        linear = false;
        break;
      }
      linear = true;
      turns = {std::max(turns.first, in->first), std::min(turns.second, in->second)};
    }
    if (!linear || turns.first >= turns.second || (turns.first == 0 && turns.second == n)) continue;
    std::vector<std::pair<i128, i128>> cuts;
    for (const auto& c : {std::pair<i128, i128>{0, turns.first}, turns, std::pair<i128, i128>{turns.second, n}})
      if (c.first < c.second) cuts.push_back(c);
    if (static_cast<int64_t>(cuts.size()) > parts) continue;
    for (const auto& [lo, hi] : cuts) {
      const UOp part = schedule::range(static_cast<int64_t>(hi - lo), r.arg()[0].as_int(), RangeKind::loop);
      const UOp value = lo == 0 ? part : part + schedule::index_const(static_cast<int64_t>(lo));
      split_store(graph_rewrite(substitute(store, {{r.get(), value}}), kernel_rules()), parts / static_cast<int64_t>(cuts.size()), out);
    }
    return;
  }
  out.push_back(store);  // (a part whose store's mask never holds is dropped by the expander)
}
}  // namespace detail

/// The kernel AST with its masked loops split where their masks hold on a stretch (CPUs: for
/// the vectorizer); at most `parts` copies of each store.
inline UOp split_masked_loops(const UOp& ast, int64_t parts = 9) {
  std::vector<UOp> stores;
  for (const UOp& s : ast.src()) detail::split_store(s, parts, stores);
  return stores == ast.src() ? ast : ast.replace(std::move(stores));
}

}  // namespace codegen
}  // namespace tinyt::inline v0
