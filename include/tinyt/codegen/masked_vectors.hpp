// Masked vectors: the copies an upcast makes of a masked load or store (a padded axis, a conv's
// border) each read or write one element behind their own gate, which a compiler's vectorizer
// cannot turn into one vector access: it does not know the gated addresses are neighbours, and a
// gate is a branch or a select per element. Where such copies touch consecutive elements of one
// buffer, this pass makes them one masked vector access: a LOAD of `dtype.vec(n)` (or a STORE of
// a VECTORIZE) whose INDEX holds the lanes' gates as a VECTORIZE of bools; each lane's value is a
// GEP of the vector. Memory is touched only in the lanes whose gate holds, a masked lane reads 0,
// as a gated scalar load does. For renderers with masked vector instructions (LLVM:
// llvm.masked.load and llvm.masked.store; AVX-512 has them as masked moves, AVX2 as vmaskmov).
#pragma once

#include <map>

#include "../linear.hpp"
#include "opt/opt.hpp"

namespace tinyt::inline v0 {
namespace codegen {

namespace detail {
// A gated access of one element of a kernel's buffer, by its place in memory: the buffer, the
// element type, the address less its constant (the same for neighbours) and that constant.
struct MaskedAccess {
  UOp node;  // the LOAD or STORE
  UOp buffer;
  DType type;
  UOp base;  // the address without its constant part
  int64_t offset;
};
inline std::optional<MaskedAccess> masked_access(const UOp& u) {
  if (u.op() != Ops::LOAD && u.op() != Ops::STORE) return std::nullopt;
  const UOp& idx = u.src(0);
  if (idx.op() != Ops::INDEX || idx.src().size() != 3 || idx.src(0).op() != Ops::DEFINE_GLOBAL || idx.src(2).dtype().count() != 1)
    return std::nullopt;
  const DType dt = u.op() == Ops::LOAD ? u.dtype() : u.src(1).dtype();
  // (bools are bytes in memory and bfloat16s integers: their scalar code converts each)
  if (dt.count() != 1 || dt.is_bool() || dt == dtypes::bfloat16) return std::nullopt;
  Linear address = linear_form(idx.src(1));
  const i128 offset = address.constant;
  if (offset < INT64_MIN || offset > INT64_MAX) return std::nullopt;
  address.constant = 0;
  return MaskedAccess{u, idx.src(0), dt, address.build(), static_cast<int64_t>(offset)};
}

// Runs of accesses in `group` at consecutive offsets, each stretch of them cut from its start into
// runs of `max_lanes` (a power of two), then of the largest power of two that is left.
inline std::vector<std::vector<MaskedAccess>> lane_runs(std::vector<MaskedAccess> group, int64_t max_lanes) {
  std::stable_sort(group.begin(), group.end(), [](const MaskedAccess& a, const MaskedAccess& b) { return a.offset < b.offset; });
  std::vector<std::vector<MaskedAccess>> runs;
  size_t i = 0;
  while (i < group.size()) {
    size_t end = i + 1;  // [i, end) consecutive, each offset once
    while (end < group.size() && group[end].offset == group[end - 1].offset + 1) ++end;
    for (size_t at = i; at < end;) {
      int64_t n = max_lanes;
      while (n >= 2 && static_cast<int64_t>(end - at) < n) n /= 2;
      if (n < 2) {
        ++at;
        continue;
      }
      runs.emplace_back(group.begin() + static_cast<std::ptrdiff_t>(at), group.begin() + static_cast<std::ptrdiff_t>(at) + n);
      at += static_cast<size_t>(n);
    }
    // a second access of an offset (another gate) starts the next stretch
    i = end;
  }
  return runs;
}
}  // namespace detail

/// `sink` with its gated scalar loads and stores of consecutive elements made masked vector
/// accesses of up to `vector_bytes` (the expanded copies of an upcast along a padded or masked
/// axis); buffers the kernel writes are read as they are.
inline UOp masked_vectors(const UOp& sink, int64_t vector_bytes) {
  // (UOps are hash-consed: one node per address)
  std::map<std::tuple<const UOpNode*, std::string, const UOpNode*, bool>, std::vector<detail::MaskedAccess>> groups;
  auto add = [&](const detail::MaskedAccess& a, bool store) { groups[{a.buffer.get(), a.type.name(), a.base.get(), store}].push_back(a); };
  std::unordered_set<const UOpNode*> written;
  for (const UOp& s : sink.src())  // (a kernel's stores of global memory are its sink's sources)
    if (s.op() == Ops::STORE && s.src(0).op() == Ops::INDEX) {
      written.insert(s.src(0).src(0).get());
      if (std::optional<detail::MaskedAccess> a = detail::masked_access(s)) add(*a, true);
    }
  for (const UOp& u : toposort(sink))
    if (std::optional<detail::MaskedAccess> a = detail::masked_access(u); a && u.op() == Ops::LOAD && !written.count(a->buffer.get())) add(*a, false);
  if (groups.empty()) return sink;

  std::unordered_map<const UOpNode*, UOp> loads;       // a lane's LOAD -> its GEP of the vector
  std::unordered_map<const UOpNode*, UOp> stores;      // a run's first STORE -> the vector's
  std::unordered_set<const UOpNode*> merged;           // the run's other STOREs
  for (const auto& [key, group] : groups) {
    const DType dt = group[0].type;
    for (const std::vector<detail::MaskedAccess>& run : detail::lane_runs(group, std::max<int64_t>(vector_bytes / dt.itemsize(), 1))) {
      const int n = static_cast<int>(run.size());
      std::vector<UOp> gates, values;
      for (const detail::MaskedAccess& a : run) {
        gates.push_back(a.node.src(0).src(2));
        if (a.node.op() == Ops::STORE) values.push_back(a.node.src(1));
      }
      const UOp& first = run[0].node.src(0);
      const UOp index = first.replace({first.src(0), first.src(1), UOp(Ops::VECTORIZE, dtypes::bool_.vec(n), gates)});
      if (run[0].node.op() == Ops::STORE) {
        stores[run[0].node.get()] = UOp(Ops::STORE, dtypes::void_, {index, UOp(Ops::VECTORIZE, dt.vec(n), values)});
        for (int i = 1; i < n; ++i) merged.insert(run[static_cast<size_t>(i)].node.get());
        continue;
      }
      const UOp vector(Ops::LOAD, dt.vec(n), {index});
      for (int i = 0; i < n; ++i) loads[run[static_cast<size_t>(i)].node.get()] = UOp(Ops::GEP, dt, {vector}, int64_t{i});
    }
  }
  // (the stores' values read the new loads)
  std::vector<UOp> src;
  for (const UOp& s : sink.src()) {
    if (merged.count(s.get())) continue;
    const auto vec = stores.find(s.get());
    src.push_back(substitute(vec != stores.end() ? vec->second : s, loads));
  }
  return sink.replace(std::move(src));
}

}  // namespace codegen
}  // namespace tinyt::inline v0
