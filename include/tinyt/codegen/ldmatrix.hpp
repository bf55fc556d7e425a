// Tensor-core fragments read from local memory by `ldmatrix` (PTX: ldmatrix.sync.aligned.m8n8.x4
// and .x2, .trans): a warp loads up to four 8x8 tiles of 16-bit values in one instruction, each of
// its lanes naming a row (16 contiguous bytes) and receiving the values its fragment holds, two to
// a register, as mma.sync takes them. Without it a lane reads each 16-bit value of its fragment
// on its own (8 reads and 4 packs for A, 4 and 2 for B, per mma).
//
// A TC kernel whose operands STAGE copied reads its fragments from local memory; this pass finds
// an operand whose values are all in one local array, at addresses that make ldmatrix rows (a
// fragment register's two values neighbours: .x4/.x2; or a column's eight neighbours in rows:
// .trans), and replaces its reads by one LDMATRIX. The lane's addresses are worked out for the 32
// lanes and checked against every value the fragment holds, so a layout ldmatrix cannot read keeps
// its reads. LDMATRIX(INDEX(local, row address), after) arg "n" or "n trans": n tiles, the result
// a vector of 2n values, register r holding elements 2r and 2r+1 (GEP); it runs on EMU as the PTX
// ISA defines it.
#pragma once

#include <optional>

#include "../symbolic.hpp"
#include "../tensor_cores.hpp"
#include "opt/opt.hpp"

namespace tinyt::inline v0 {
namespace codegen {

namespace detail {

// The LDMATRIX reading fragment values `values` (a lane's, in register order: two a register),
// each a LOAD (or its cast to float32) of one local array; empty when ldmatrix cannot read them.
inline std::optional<UOp> ldmatrix_of(const std::vector<UOp>& values, const UOp& lane) {
  std::vector<UOp> loads;
  for (const UOp& v : values) {
    const UOp load = v.op() == Ops::CAST ? v.src(0) : v;
    if (load.op() != Ops::LOAD || load.dtype().itemsize() != 2 || load.src(0).op() != Ops::INDEX || load.src(0).src().size() != 2 ||
        load.src(0).src(0).op() != Ops::DEFINE_LOCAL || (!loads.empty() && !(load.src(0).src(0) == loads[0].src(0).src(0))))
      return std::nullopt;
    loads.push_back(load);
  }
  const int tiles = static_cast<int>(values.size()) / 2;
  if (tiles != 4 && tiles != 2) return std::nullopt;
  // each address: a part the lane does not move (the same for all, up to a constant) and the lane's
  std::vector<std::vector<int64_t>> at(values.size());  // [value][lane]: the address minus the first's part the lane does not move
  UOp fixed;
  for (size_t i = 0; i < loads.size(); ++i) {
    const std::optional<std::pair<UOp, UOp>> parts = split_address(loads[i].src(0).src(1), {lane.get()});
    if (!parts) return std::nullopt;
    if (i == 0) fixed = parts->first;
    const UOp apart = simplify(parts->first - fixed);
    if (!apart.is_const()) return std::nullopt;
    for (int64_t l = 0; l < TensorCore::warp; ++l)
      at[i].push_back(static_cast<int64_t>(apart.const_int()) + evaluate(parts->second, {{lane.get(), l}}));
  }
  // the row each lane names, from what the lanes receive: lane l gets, of tile m, row l/4's
  // elements 2(l%4) and 2(l%4)+1; transposed, row 2(l%4) and 2(l%4)+1's element l/4
  for (const bool trans : {false, true}) {
    std::vector<std::optional<int64_t>> row(static_cast<size_t>(tiles) * 8);
    bool fits = true;
    for (int m = 0; m < tiles && fits; ++m)
      for (int l = 0; l < TensorCore::warp && fits; ++l)
        for (int j = 0; j < 2 && fits; ++j) {
          const int64_t got = at[static_cast<size_t>(2 * m + j)][static_cast<size_t>(l)];
          const int r = trans ? 2 * (l % 4) + j : l / 4;
          const int64_t start = got - (trans ? l / 4 : 2 * (l % 4) + j);
          auto& named = row[static_cast<size_t>(8 * m + r)];
          fits = (!named || *named == start) && start % 8 == 0;  // (a row: 16 aligned bytes)
          named = start;
        }
    if (!fits || !linear_form(fixed).divisible_by(8)) continue;
    // the row address as lane bits: lane%8 (a stride when the rows are evenly apart), then bits 3 and 4
    const auto named = [&](int64_t l) { return *row[static_cast<size_t>(l % (8 * tiles))]; };
    UOp address = fixed + schedule::index_const(named(0));
    const int64_t stride = named(1) - named(0);
    bool even = true;
    for (int64_t r = 0; r < 8; ++r) even = even && named(r) - named(0) == r * stride;
    if (!even) continue;
    address = address + (lane % 8) * stride;
    for (int64_t bit = 8; bit < 8 * tiles; bit *= 2) address = address + (lane / bit % 2) * (named(bit) - named(0));
    const UOp own = simplify(address - fixed);  // (the formula against the table)
    for (const UOp& x : toposort(own)) fits = fits && ((x.op() != Ops::RANGE && x.op() != Ops::DEFINE_VAR) || x == lane);
    for (int64_t l = 0; l < TensorCore::warp && fits; ++l) fits = evaluate(own, {{lane.get(), l}}) == named(l);
    if (!fits) continue;
    const UOp& buffer = loads[0].src(0).src(0);
    std::vector<UOp> src{UOp(Ops::INDEX, loads[0].src(0).dtype(), {buffer, simplify(address)})};
    src.insert(src.end(), loads[0].src().begin() + 1, loads[0].src().end());  // (after what the reads were after: the copies' barrier)
    return UOp(Ops::LDMATRIX, loads[0].dtype().vec(2 * tiles), std::move(src), tinyt::detail::cat(tiles, trans ? " trans" : ""));
  }
  return std::nullopt;
}
}  // namespace detail

/// The kernel with each tensor-core operand that ldmatrix can read from local memory read by one
/// LDMATRIX (see the top of this file); unchanged without a warp range.
inline UOp ldmatrix_fragments(const UOp& ast, const UOp& lane) {
  if (!lane) return ast;
  std::unordered_map<const UOpNode*, UOp> replaced;
  for (const UOp& u : toposort(ast)) {
    if (u.op() != Ops::WMMA) continue;
    const TensorCore* tc = tensor_core_of(u.arg().get<std::string>());
    if (!tc || tc->per_thread != 2) continue;  // (16-bit inputs, two a register)
    for (const auto& [first, count] : {std::pair{0, tc->a_count}, {tc->a_count, tc->b_count}}) {
      const std::vector<UOp> values(u.src().begin() + first, u.src().begin() + first + count);
      if (replaced.count(values[0].get())) continue;  // (a fragment shared by several ops: done)
      const std::optional<UOp> ld = detail::ldmatrix_of(values, lane);
      if (!ld) continue;
      for (size_t i = 0; i < values.size(); ++i) {
        const UOp element(Ops::GEP, ld->dtype().scalar(), {*ld}, static_cast<int64_t>(i));
        replaced[values[i].get()] = values[i].op() == Ops::CAST ? element.cast(values[i].dtype()) : element;
      }
    }
  }
  return replaced.empty() ? ast : substitute(ast, replaced);
}

}  // namespace codegen
}  // namespace tinyt::inline v0
