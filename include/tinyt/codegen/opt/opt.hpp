// Kernel optimizations as in tinygrad: each Opt splits one range of a kernel's AST, and what the
// new range becomes (a thread, a cache tile, registers) decides how the kernel runs. Opts name
// axes by their position in `axes(ast)`, so a list of opts is a replayable recipe (BEAM caches it).
//   UPCAST(axis, n)  output axis → n copies of the work, in registers (expanded before rendering)
//   UNROLL(axis, n)  reduce axis → n accumulators, combined after the loop (expanded)
//   LOCAL(axis, n)   output axis → an inner loop of n (cache tiling: outer loops walk tiles)
//   THREAD(axis, n)  output axis → n parts run by n threads, one part each
//   PADTO(axis, n)   axis → rounded up to a multiple of n, the extra iterations masked off
//   GROUP(axis, n)   reduce axis → n work-items of a GPU work-group each reduce every n-th
//                    element; their partial results meet in registers (warp shuffles) and local
//                    memory (work_items.hpp)
//   GROUPTOP(axis, n) the same, each work-item reducing a contiguous n-th of the axis (the
//                    group is the axis' outer part: tinygrad's GROUPTOP)
//   TC(axis, 0)      a float32 sum (over reduce axis `axis` and any others) of products of float16 or
//                    bfloat16 values (a matmul's, a conv's) → tensor-core ops (tensor_cores.hpp): a warp's
//                    32 lanes each hold their fragment of a 16×16 tile of A and a 16×8 tile of B,
//                    and each multiply-accumulate of the tiles is one WMMA; each lane keeps 4 of
//                    the 16×8 outputs. GPUs with tensor cores only.
//   TC(axis, 1)      the same for a float32 sum of products of float32 values, the inputs rounded
//                    to TF32 (10 bits of mantissa) by m16n8k8 ops: only when asked (TF32=1), as
//                    PyTorch's matmuls are float32 unless asked too.
//   STAGE(axis, n)   reduce axis → loops over tiles of n; at each, the work-group copies what its
//                    reduction reads in the tile (each load that moves with it) from global to
//                    local memory, every work-item a share of each copy, and after a barrier reads
//                    it from there: a matmul's work-group reads each operand value once, not once
//                    per work-item that uses it (tiles of work-items first: LOCAL, TC). GPUs only;
//                    the last opt of a kernel.
//   PACK(axis, 0)    the loads a reduction reads that stay put along `axis` (a loop or tile) are
//                    copied, before its loop, into a contiguous buffer of the thread, in the order
//                    the loops inside read them; each pass of the axis reads them from there
//                    (a BLAS's packed panels: a matmul's column panel of B, read row after row
//                    without a page or a cache set per row). CPUs only.
// An amount of 0 means the whole axis.
#pragma once

#include <array>
#include <numeric>
#include <optional>
#include <unordered_set>

#include "../../schedule/lower.hpp"
#include "../../symbolic.hpp"
#include "../../tensor_cores.hpp"
#include "../../valid.hpp"

namespace tinyt::inline v0 {
namespace codegen {

enum class OptOp : uint8_t { UPCAST, UNROLL, LOCAL, THREAD, PADTO, GROUP, PACK, GROUPTOP, TC, STAGE };

inline constexpr std::array<const char*, 10> opt_op_names{"UPCAST", "UNROLL", "LOCAL", "THREAD", "PADTO", "GROUP", "PACK", "GROUPTOP", "TC", "STAGE"};
inline const char* opt_op_name(OptOp op) {
  return opt_op_names[static_cast<size_t>(op)];
}

/// One optimization: `op` applied to the `axis`-th entry of `axes(ast)`.
struct Opt {
  OptOp op;
  int64_t axis;
  int64_t amount;
  bool operator==(const Opt&) const = default;
  std::string str() const { return tinyt::detail::cat(opt_op_name(op), "(", axis, ",", amount, ")"); }
};

inline std::string to_string(const std::vector<Opt>& opts) {
  std::string s;
  for (const Opt& o : opts) s += (s.empty() ? "" : " ") + o.str();
  return s.empty() ? "none" : s;
}

/// An opt that does not apply to a kernel (wrong axis kind, amount that does not divide, ...).
struct OptError : Error {
  using Error::Error;
};

using schedule::RangeKind;

// the ranges' kinds, lengths and loop order live with RangeKind (schedule/lower.hpp): the
// scheduler's rewrites read them too
using schedule::all_ranges;
using schedule::is_symbolic;
using schedule::range_before;
using schedule::range_kind;
using schedule::range_rank;
using schedule::range_size;

/// The ranges an opt can name: every loop, tile and reduce range of a known length, in loop order
/// (threads and register ranges are final; a symbolic length has no divisors to split by).
inline std::vector<UOp> axes(const UOp& ast) {
  std::vector<UOp> out;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::RANGE && !is_symbolic(u) &&
        (range_kind(u) == RangeKind::loop || range_kind(u) == RangeKind::reduce || range_kind(u) == RangeKind::local))
      out.push_back(u);
  std::sort(out.begin(), out.end(), range_before);
  return out;
}

/// Whether a BARRIER publishes a STAGE's copies.
inline bool is_stage(const UOp& u) {
  return u.op() == Ops::BARRIER && u.arg().is<std::string>() && u.arg().get<std::string>() == "stage";
}

/// The INDEX `index` valid only where `gate` holds too (its gate, if it has one, and `gate`).
inline UOp gated(const UOp& index, const UOp& gate) {
  std::vector<UOp> src = index.src();
  if (src.size() > 2) src[2] = src[2] & gate;
  else src.push_back(gate);
  return index.replace(std::move(src));
}

/// The rules every kernel AST is kept simplified with.
inline const PatternMatcher& kernel_rules() {
  static const PatternMatcher pm = symbolic() + schedule::gated_load_rules();
  return pm;
}

namespace detail {
/// The element stride of `range` in the address `idx` (its value at range=1 minus at range=0,
/// every other range at 0); empty when that is not a constant.
inline std::optional<int64_t> stride_of(const UOp& idx, const UOp& range, const std::vector<UOp>& ranges) {
  std::unordered_map<const UOpNode*, UOp> at0, at1;
  for (const UOp& r : ranges) at0[r.get()] = at1[r.get()] = schedule::index_const(0);
  at1[range.get()] = schedule::index_const(1);
  const UOp a = simplify(substitute(idx, at0)), b = simplify(substitute(idx, at1));
  if (!a.is_const() || !b.is_const()) return std::nullopt;
  return static_cast<int64_t>(b.const_int() - a.const_int());
}

inline int64_t next_axis_id(const UOp& ast) {
  int64_t next = 0;
  for (const UOp& r : all_ranges(ast)) next = std::max(next, r.arg()[0].as_int() + 1);
  return next;
}

// Rebuilds `ast` with range `r` replaced by `value`; in REDUCE range lists r becomes `ranges`.
inline UOp replace_range(const UOp& ast, const UOp& r, const UOp& value, const std::vector<UOp>& ranges) {
  std::unordered_map<const UOpNode*, UOp> done;
  for (const UOp& u : toposort(ast)) {
    if (u == r) {
      done[u.get()] = value;
      continue;
    }
    std::vector<UOp> src;
    for (size_t i = 0; i < u.src().size(); ++i) {
      if (u.op() == Ops::REDUCE && i > 0 && u.src(i) == r) src.insert(src.end(), ranges.begin(), ranges.end());
      else src.push_back(done.at(u.src(i).get()));
    }
    done[u.get()] = u.replace(std::move(src));
  }
  return graph_rewrite(done.at(ast.get()), kernel_rules());
}

// Splits `r` (size n) into a range of `amount` of kind `kind` and the rest; the new range is the
// inner part (varies fastest) unless `outer`. A rest of size 1 disappears.
inline UOp split_range(const UOp& ast, const UOp& r, int64_t amount, RangeKind kind, bool outer) {
  const int64_t n = range_size(r), rest_size = n / amount;
  const UOp fresh = schedule::range(amount, next_axis_id(ast), kind);
  const UOp rest = schedule::range(rest_size, r.arg()[0].as_int(), range_kind(r));
  if (rest_size == 1) return replace_range(ast, r, fresh, {fresh});
  if (outer) return replace_range(ast, r, fresh * rest_size + rest, {fresh, rest});
  return replace_range(ast, r, rest * amount + fresh, {rest, fresh});
}

// Whether a reduce value is 0 wherever the loads that depend on `r` read 0 (their gate is false),
// so padding a reduce axis adds only zeros to a sum.
inline bool zero_where_masked(const UOp& v, const UOp& r) {
  switch (v.op()) {
    case Ops::LOAD: return v.src(0).src().size() > 2 && depends_on(v.src(0).src(2), r);
    case Ops::MUL: return zero_where_masked(v.src(0), r) || zero_where_masked(v.src(1), r);
    case Ops::ADD: case Ops::WHERE: {
      const size_t first = v.op() == Ops::WHERE ? 1 : 0;
      return zero_where_masked(v.src(first), r) && zero_where_masked(v.src(first + 1), r);
    }
    case Ops::CAST: case Ops::NEG: return zero_where_masked(v.src(0), r);
    default: return false;
  }
}

// PADTO: `r` grows to a multiple of amount; every memory access that depends on it is masked
// to the old size.
inline UOp pad_range(const UOp& ast, const UOp& r, int64_t amount) {
  const int64_t n = range_size(r), padded = (n + amount - 1) / amount * amount;
  if (padded == n) throw OptError(tinyt::detail::cat("PADTO: axis of size ", n, " is already a multiple of ", amount));
  if (padded > n * 2) throw OptError(tinyt::detail::cat("PADTO: padding ", n, " to ", padded, " more than doubles it"));
  // a copy (PACK) is sized by the loops as they were: the padded turns would write past it
  for (const UOp& x : all_ranges(ast))
    if (range_kind(x) == RangeKind::pack) throw OptError("PADTO: the kernel copies panels (PACK) sized by its loops as they are; pad first");
  const UOp grown = schedule::range(padded, r.arg()[0].as_int(), range_kind(r));
  const UOp inside = grown.lt(n);
  // mask every INDEX whose address depends on the range
  std::unordered_map<const UOpNode*, UOp> done;
  for (const UOp& u : toposort(ast)) {
    if (u == r) {
      done[u.get()] = grown;
      continue;
    }
    std::vector<UOp> src;
    for (const UOp& s : u.src()) src.push_back(done.at(s.get()));
    UOp out = u.replace(std::move(src));
    if (u.op() == Ops::INDEX && u.src(0).op() == Ops::DEFINE_GLOBAL && depends_on(u.src(1), r)) out = gated(out, inside);
    if (u.op() == Ops::REDUCE && std::find(u.src().begin() + 1, u.src().end(), r) != u.src().end() &&
        !(u.arg().get<Ops>() == Ops::ADD && zero_where_masked(out.src(0), grown)))
      throw OptError("PADTO: the padded iterations of this reduction would change its result");
    done[u.get()] = std::move(out);
  }
  return graph_rewrite(done.at(ast.get()), kernel_rules());
}

// `copies` (loads of global memory → reads of their copies) with each masked load's select of 0
// where its gate is false (gated_load_rules) read from the copy too: the copy holds those zeros.
inline std::unordered_map<const UOpNode*, UOp> with_masked_selects(const UOp& ast, std::unordered_map<const UOpNode*, UOp> copies) {
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::WHERE && copies.count(u.src(1).get()) && u.src(1).src(0).src().size() > 2 &&
        u.src(0) == u.src(1).src(0).src(2) && u.src(2).is_const() && u.src(2).const_float() == 0)
      copies[u.get()] = copies.at(u.src(1).get());
  return copies;
}

/// The largest buffer PACK copies into: it lives on the stack of the thread that runs the kernel.
inline constexpr int64_t max_pack_bytes = 512 * 1024;

// PACK: each value a reduction reads that does not depend on `at` but on a reduce range inside it,
// computed from memory, reads a copy. The copy holds the value over the ranges inside `at` that
// it depends on, in loop order (the last range fastest); it is made by a nest of `pack` ranges,
// one per such range, and published by a BARRIER that every read of it waits for, so the
// linearizer puts the nest before `at`'s loop. A value is a load, or the largest elementwise
// expression of loads, constants and ranges (a quantized weight's decoding: its bytes, nibbles
// and block scale to a float), so the copy is computed once per pass of the nest, not once per
// row tile that reads it (a prompt's matmul with Q4_0 weights). A masked load whose address
// stays in its buffer everywhere (a conv's weight under its input gradient's window mask) is
// copied alone, every value, and keeps its mask where it reads the copy; one whose address
// leaves the buffer where masked copies its zeros, over the ranges of its mask too.
inline UOp pack_loads(const UOp& ast, const UOp& at, const std::string& what) {
  using tinyt::detail::cat;
  std::vector<UOp> inner;
  for (const UOp& r : all_ranges(ast))
    if (range_before(at, r)) inner.push_back(r);
  int64_t next_axis = next_axis_id(ast), buffers = 0;
  std::unordered_set<const UOpNode*> written;  // a buffer the kernel writes is read where it is
  const std::vector<UOp> order = toposort(ast);
  for (const UOp& u : order) {
    buffers += u.op() == Ops::DEFINE_LOCAL;
    if (u.op() == Ops::STORE) written.insert(u.src(0).src(0).get());
  }
  auto global_load = [&](const UOp& u) {
    return u.op() == Ops::LOAD && u.src(0).op() == Ops::INDEX && u.src(0).src(0).op() == Ops::DEFINE_GLOBAL &&
           !written.count(u.src(0).src(0).get());
  };
  // the values computed from unmasked loads, constants and ranges by elementwise ops, that do not
  // depend on `at` (1: with a load); a value is copied where something else reads it
  std::unordered_map<const UOpNode*, int> computed;
  std::unordered_set<const UOpNode*> moves_with_at;
  for (const UOp& u : order) {
    if (u == at || std::any_of(u.src().begin(), u.src().end(), [&](const UOp& s) { return moves_with_at.count(s.get()); })) {
      moves_with_at.insert(u.get());
      continue;
    }
    int kind = -1;
    if (global_load(u) && u.src(0).src().size() == 2) {
      kind = 1;
    } else if (u.op() == Ops::CONST || u.op() == Ops::RANGE || u.op() == Ops::DEFINE_VAR) {
      kind = 0;
    } else if (GroupOp::ALU.contains(u.op()) || u.op() == Ops::CAST || u.op() == Ops::BITCAST) {
      kind = 0;
      for (const UOp& s : u.src()) {
        const auto it = computed.find(s.get());
        if (it == computed.end()) {
          kind = -1;
          break;
        }
        kind = std::max(kind, it->second);
      }
    }
    // (a value from memory that is a flag, an address or a vector is not copied; what it reads is)
    if (kind == 1 && (u.dtype().count() != 1 || u.dtype() == dtypes::bool_ || u.dtype() == dtypes::index)) kind = -1;
    if (kind >= 0) computed[u.get()] = kind;
  }
  std::unordered_set<const UOpNode*> read_elsewhere;  // computed values something not computed reads
  for (const UOp& u : order)
    if (!computed.count(u.get()))
      for (const UOp& s : u.src())
        if (computed.count(s.get())) read_elsewhere.insert(s.get());
  std::unordered_map<const UOpNode*, UOp> packed;
  for (const UOp& u : order) {
    const bool value = read_elsewhere.count(u.get()) && computed.at(u.get()) == 1;
    const bool masked_load = global_load(u) && u.src(0).src().size() > 2;
    if (!value && !masked_load) continue;
    const UOp& index = u.src(0);
    const Bounds where = masked_load ? bounds(index.src(1)) : Bounds{};
    const bool inside = masked_load && where.lo >= 0 && where.hi < index.src(0).dtype().size();
    const UOp& copied = value ? u : inside ? index.src(1) : index;  // what the copy depends on
    if (moves_with_at.count(copied.get())) continue;
    std::vector<UOp> own;
    for (const UOp& r : inner)
      if (depends_on(copied, r)) own.push_back(r);
    if (std::none_of(own.begin(), own.end(), [](const UOp& r) { return range_kind(r) == RangeKind::reduce; })) continue;
    int64_t size = 1;
    for (const UOp& r : own) {
      if (is_symbolic(r)) throw OptError(cat(what, ": a load depends on a range of symbolic length"));
      size *= range_size(r);
    }
    const int64_t bytes = size * u.dtype().itemsize();
    if (bytes > max_pack_bytes)
      throw OptError(cat(what, ": a copy of ", size, " elements (", bytes, " bytes) outgrows the ", max_pack_bytes, " a thread's stack holds"));
    // the copy's own loops, and the element each value goes to: the last range varies fastest
    std::unordered_map<const UOpNode*, UOp> to_copy;
    UOp in_copy = schedule::index_const(0), in_read = schedule::index_const(0);
    for (const UOp& r : own) {
      const UOp copy = schedule::range(range_size(r), next_axis++, RangeKind::pack);
      to_copy[r.get()] = copy;
      in_copy = in_copy * range_size(r) + copy;
      in_read = in_read * range_size(r) + r;
    }
    const UOp buffer(Ops::DEFINE_LOCAL, u.dtype().ptr(size, AddrSpace::local), {}, buffers++);
    const UOp source = inside ? UOp(Ops::LOAD, u.dtype(), {UOp(Ops::INDEX, index.dtype(), {index.src(0), index.src(1)})}) : u;
    const UOp fill(Ops::STORE, dtypes::void_, {UOp(Ops::INDEX, buffer.dtype(), {buffer, in_copy}), substitute(source, to_copy)});
    const UOp filled(Ops::BARRIER, dtypes::void_, {fill});
    const UOp read(Ops::LOAD, u.dtype(), {UOp(Ops::INDEX, buffer.dtype(), {buffer, in_read}), filled});
    packed[u.get()] = inside ? index.src(2).where(read, UOp::const_(u.dtype(), 0)) : read;
  }
  if (packed.empty()) throw OptError(cat(what, ": no load that a reduction reads stays put along the axis"));
  return graph_rewrite(substitute(ast, with_masked_selects(ast, std::move(packed))), kernel_rules());
}
/// The most local memory a kernel's STAGE copies take: what every OpenCL device has (CUDA's
/// static shared memory is 48 KiB).
inline constexpr int64_t max_stage_bytes = 32 * 1024;

/// One dimension of a box of addresses: `size` steps of `stride` elements.
struct BoxDim {
  int64_t stride, size;
};

/// Distinct ascending offsets from 0 as a box: the sums of d_i·stride_i over 0 ≤ d_i < size_i,
/// the smallest stride first and each past the span of those before it (a tile of rows of a
/// matrix: {1, columns}, {row stride, rows}); empty when they are not one.
inline std::optional<std::vector<BoxDim>> as_box(const std::vector<int64_t>& offsets) {
  std::vector<BoxDim> dims;
  size_t block = 1;  // the offsets the dimensions so far span: the first `block` ones
  while (block < offsets.size()) {
    const int64_t stride = offsets[block] - offsets[0];
    const auto shifted = [&](size_t copy) {  // the copy-th block is the first moved by copy·stride
      for (size_t i = 0; i < block; ++i)
        if (offsets[copy * block + i] != offsets[i] + static_cast<int64_t>(copy) * stride) return false;
      return true;
    };
    size_t count = 1;
    while ((count + 1) * block <= offsets.size() && shifted(count)) ++count;
    if (count == 1) return std::nullopt;
    dims.push_back({stride, static_cast<int64_t>(count)});
    block *= count;
  }
  return dims;
}

// An address as base + offset, the offset's terms depending on the ranges `inside` only and the
// base's on none of them; empty when a term depends on both (a convolution's window position,
// whose division mixes the tile's steps of K with the loop over tiles).
inline std::optional<std::pair<UOp, UOp>> split_address(const UOp& address, const std::unordered_set<const UOpNode*>& inside) {
  const Linear whole = linear_form(address);
  Linear base{{}, 0, address.dtype()}, offset{{}, whole.constant, address.dtype()};
  for (const Linear::Term& t : whole.terms) {
    bool in = false, out = false;
    for (const UOp& x : toposort(t.atom)) {
      if (x.op() == Ops::RANGE) (inside.count(x.get()) ? in : out) = true;
      out = out || x.op() == Ops::DEFINE_VAR;
    }
    if (in && out) return std::nullopt;
    (in ? offset : base).terms.push_back(t);
  }
  return std::pair{base.build(), offset.build()};
}

// The values of `expr` over every combination of the values of the ranges of `ranges` it depends
// on, appended to `out`; false (and nothing appended) past `limit` combinations.
inline bool enumerate_values(const UOp& expr, const std::vector<UOp>& ranges, size_t limit, std::vector<int64_t>& out) {
  std::vector<UOp> own;
  size_t combinations = 1;
  for (const UOp& x : ranges)
    if (depends_on(expr, x)) own.push_back(x), combinations *= static_cast<size_t>(range_size(x));
  if (combinations > limit) return false;
  std::unordered_map<const UOpNode*, int64_t> at;
  for (const UOp& x : own) at[x.get()] = 0;
  for (size_t i = 0; i < combinations; ++i) {
    out.push_back(evaluate(expr, at));
    for (auto x = own.rbegin(); x != own.rend() && ++at[x->get()] == range_size(*x); ++x) at[x->get()] = 0;  // the next combination
  }
  return true;
}

// STAGE (see the top of this file). `r` splits into loops over tiles (keeping its id) and a
// fresh reduce range of `amount` inside. The ranges that vary inside a pass of the tile loop are
// the work-group's (LOCAL tiles, TC's lanes: the team), register ranges, and reduce ranges after
// the tile loop; a load of a read-only buffer that a reduction reads and that moves with one of
// those reduce ranges is copied. Work-item t of the team's G copies elements t, t+G, ... of a
// copy (a `pack` loop); one BARRIER (arg "stage") publishes all the copies, and the linearizer
// puts another before them where they are made in a loop.
// The loads of one buffer whose addresses differ only by what varies inside the pass (the
// fragments of a matmul's operand) share one copy where the elements they read together make a
// box (a tile of the operand's rows): the box in the buffer's order, so that neighbouring
// work-items copy neighbouring elements, its rows padded by 16 bytes where a warp would find a
// column of it in one bank. Each other load (a convolution's, whose window mixes the tile with
// the loop over tiles) has a copy of its own: its values over the inside ranges its address
// depends on, the range with the smallest stride in global memory fastest.
inline UOp stage_loads(const UOp& ast, const UOp& r, int64_t amount, const std::string& what) {
  using tinyt::detail::cat;
  const int64_t fresh_id = next_axis_id(ast);
  const UOp split = split_range(ast, r, amount, RangeKind::reduce, false);  // (a whole axis: only the fresh range)
  // the team: a warp's lanes, then the tiles of work-items in the order they were made
  std::vector<UOp> team, inside;
  UOp outer;
  for (const UOp& x : all_ranges(split)) {
    if (range_kind(x) == RangeKind::warp) team.insert(team.begin(), x);
    if (range_kind(x) == RangeKind::local) team.push_back(x);
    if (x.arg()[0].as_int() == r.arg()[0].as_int()) outer = x;
  }
  if (team.empty()) throw OptError(cat(what, ": the kernel has no work-group to share the copies (LOCAL or TC first)"));
  const auto tile_range = [&](const UOp& x) {
    const RangeKind k = range_kind(x);
    if (k == RangeKind::local || k == RangeKind::warp || k == RangeKind::upcast || k == RangeKind::unroll) return true;
    return k == RangeKind::reduce && (!outer || range_before(outer, x));
  };
  std::unordered_set<const UOpNode*> inside_set;
  for (const UOp& x : all_ranges(split))
    if (tile_range(x)) inside.push_back(x), inside_set.insert(x.get());
  int64_t team_size = 1;
  UOp tid = schedule::index_const(0);
  for (auto it = team.rbegin(); it != team.rend(); ++it) tid = tid * range_size(*it) + *it, team_size *= range_size(*it);
  std::unordered_set<const UOpNode*> written;
  int64_t next_axis = next_axis_id(split), buffers = 0, bytes = 0;
  for (const UOp& u : toposort(split)) {
    buffers += u.op() == Ops::DEFINE_LOCAL;
    if (u.op() == Ops::STORE) written.insert(u.src(0).src(0).get());
  }
  std::unordered_set<const UOpNode*> read;  // what the reductions over the tile read
  for (const UOp& u : toposort(split))
    if (u.op() == Ops::REDUCE &&
        std::any_of(u.src().begin() + 1, u.src().end(), [&](const UOp& x) { return x.arg()[0].as_int() == fresh_id; }))
      for (const UOp& x : toposort(u.src(0))) read.insert(x.get());
  const std::vector<UOp> ranges = all_ranges(split);
  const auto local_buffer = [&](DType dt, int64_t size) {
    bytes += size * dt.itemsize();
    if (bytes > max_stage_bytes) throw OptError(cat(what, ": the copies take more than ", max_stage_bytes, " bytes of local memory"));
    return UOp(Ops::DEFINE_LOCAL, dt.ptr(size, AddrSpace::local), {}, buffers++);
  };
  // element f = pass·team + tid of a copy of `size` elements, and where the team does not divide
  // the copy, the gate of the last pass, which copies only up to its end
  const auto team_copy = [&](int64_t size) {
    const int64_t passes = (size + team_size - 1) / team_size;
    const UOp pass = passes == 1 ? schedule::index_const(0) : schedule::range(passes, next_axis++, RangeKind::pack);
    const UOp f = pass * team_size + tid;
    return std::pair{f, size % team_size == 0 ? UOp() : f.lt(size)};
  };
  std::unordered_map<const UOpNode*, UOp> staged;
  std::vector<UOp> fills;
  const auto fill = [&](UOp to, UOp value, const UOp& in_copy) {
    if (in_copy) value = UOp(Ops::LOAD, value.dtype(), {gated(value.src(0), in_copy)}), to = gated(to, in_copy);
    fills.emplace_back(Ops::STORE, dtypes::void_, std::vector<UOp>{to, value});
  };
  // the loads to copy, each in a tile of its buffer's loads with the same base, or alone
  struct Tile {
    UOp index;  // the INDEX of the first load: its buffer, and what a copy's INDEX is made as
    UOp base;
    std::vector<std::pair<UOp, UOp>> loads;  // each with its offset from the base
  };
  std::vector<Tile> tiles;
  std::vector<UOp> alone;
  for (const UOp& u : toposort(split)) {
    if (u.op() != Ops::LOAD || !read.count(u.get()) || u.src(0).op() != Ops::INDEX || u.src(0).src(0).op() != Ops::DEFINE_GLOBAL ||
        written.count(u.src(0).src(0).get()))
      continue;
    if (std::none_of(inside.begin(), inside.end(), [&](const UOp& x) { return range_kind(x) == RangeKind::reduce && depends_on(u.src(0), x); }))
      continue;
    const std::optional<std::pair<UOp, UOp>> parts = u.src(0).src().size() > 2 ? std::nullopt : split_address(u.src(0).src(1), inside_set);
    if (!parts) {
      alone.push_back(u);
      continue;
    }
    auto same = std::find_if(tiles.begin(), tiles.end(), [&](const Tile& t) { return t.index.src(0) == u.src(0).src(0) && t.base == parts->first; });
    if (same == tiles.end()) same = tiles.insert(tiles.end(), {u.src(0), parts->first, {}});
    same->loads.emplace_back(u, parts->second);
  }
  for (const Tile& tile : tiles) {
    std::vector<int64_t> offsets;
    bool few = true;  // (a copy within local memory has at most max_stage_bytes elements; more is no tile)
    for (const auto& [load, offset] : tile.loads) few = few && enumerate_values(offset, inside, max_stage_bytes, offsets);
    std::sort(offsets.begin(), offsets.end());
    offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
    const int64_t lo = offsets.empty() ? 0 : offsets.front();
    for (int64_t& o : offsets) o -= lo;
    const std::optional<std::vector<BoxDim>> box = few ? as_box(offsets) : std::nullopt;
    if (!box) {
      for (const auto& [load, offset] : tile.loads) alone.push_back(load);
      continue;
    }
    const std::vector<BoxDim>& dims = *box;
    const DType dt = tile.loads.front().first.dtype();
    // where in the copy each step of each dimension goes: dimension 0 the fastest, its rows
    // padded by 16 bytes where they are a multiple of 64 (lanes reading down a column would find
    // their words in a few banks) but not shorter than a warp's 32 copied elements (which would
    // then straddle a padded row's end and meet the next row's in one bank)
    const int64_t row_bytes = dims.empty() ? 0 : dims[0].size * dt.itemsize();
    const bool pad = dims.size() > 1 && row_bytes % 64 == 0 && row_bytes >= 32 * dt.itemsize();
    std::vector<int64_t> in_local;
    int64_t span = 1, count = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      in_local.push_back(span);
      span = span * dims[i].size + (i == 0 && pad ? 16 / dt.itemsize() : 0), count *= dims[i].size;
    }
    const UOp buffer = local_buffer(dt, span);
    // a work-item copies 16 bytes at once where both copies' rows are made of whole 16-byte
    // blocks, each block aligned (the buffers' starts are: allocations and local arrays are)
    const int64_t block = 16 / std::min<int64_t>(dt.itemsize(), 16);
    const bool wide = block > 1 && !dims.empty() && dims[0].stride == 1 && dims[0].size % block == 0 &&
                      linear_form(tile.base + schedule::index_const(lo)).divisible_by(block) &&
                      std::all_of(dims.begin() + 1, dims.end(), [&](const BoxDim& d) { return d.stride % block == 0; }) &&
                      std::all_of(in_local.begin() + 1, in_local.end(), [&](int64_t st) { return st % block == 0; });
    const int64_t per_item = wide ? block : 1;
    const auto [f, in_copy] = team_copy(count / per_item);
    UOp from = tile.base + schedule::index_const(lo), to = schedule::index_const(0);
    int64_t below = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      const UOp step = (f * per_item / below).alu(Ops::MOD, {schedule::index_const(dims[i].size)});
      from = from + step * dims[i].stride, to = to + step * in_local[i], below *= dims[i].size;
    }
    const DType moved = wide ? dt.vec(static_cast<int>(block)) : dt;
    fill(UOp(Ops::INDEX, buffer.dtype(), {buffer, to}),
         UOp(Ops::LOAD, moved, {UOp(Ops::INDEX, tile.index.dtype(), {tile.index.src(0), from})}), in_copy);
    for (const auto& [load, offset] : tile.loads) {  // an offset's steps: its remainder below each stride, divided by it
      const UOp v = offset - schedule::index_const(lo);
      UOp at = schedule::index_const(0);
      for (size_t i = 0; i < dims.size(); ++i) {
        const UOp below_next = i + 1 < dims.size() ? v.alu(Ops::MOD, {schedule::index_const(dims[i + 1].stride)}) : v;
        at = at + below_next / dims[i].stride * in_local[i];
      }
      staged[load.get()] = UOp(Ops::LOAD, dt, {UOp(Ops::INDEX, buffer.dtype(), {buffer, simplify(at)})});
    }
  }
  for (const UOp& u : alone) {
    std::vector<UOp> own;
    for (const UOp& x : inside)
      if (depends_on(u.src(0), x)) own.push_back(x);
    // the largest stride in global memory outermost (unknown strides, as a gate's ranges, first)
    const auto stride = [&](const UOp& x) {
      const std::optional<int64_t> st = detail::stride_of(u.src(0).src(1), x, ranges);
      return st ? std::abs(*st) : std::numeric_limits<int64_t>::max();
    };
    std::stable_sort(own.begin(), own.end(), [&](const UOp& a, const UOp& b) { return stride(a) > stride(b); });
    int64_t size = 1;
    for (const UOp& x : own) size *= range_size(x);
    const UOp buffer = local_buffer(u.dtype(), size);
    const auto [f, in_copy] = team_copy(size);
    // the value of each of the copy's ranges at element f
    std::unordered_map<const UOpNode*, UOp> at_f;
    UOp in_read = schedule::index_const(0);
    int64_t inner = 1;
    for (auto x = own.rbegin(); x != own.rend(); ++x) {
      at_f[x->get()] = (f / inner).alu(Ops::MOD, {schedule::index_const(range_size(*x))});
      inner *= range_size(*x);
    }
    for (const UOp& x : own) in_read = in_read * range_size(x) + x;
    fill(UOp(Ops::INDEX, buffer.dtype(), {buffer, f}), substitute(u, at_f), in_copy);
    staged[u.get()] = UOp(Ops::LOAD, u.dtype(), {UOp(Ops::INDEX, buffer.dtype(), {buffer, in_read})});
  }
  if (staged.empty()) throw OptError(cat(what, ": no load of the reduction moves with the tile"));
  // every read waits for the one barrier after all the copies
  const UOp published(Ops::BARRIER, dtypes::void_, fills, std::string("stage"));
  for (auto& [load, read_copy] : staged) read_copy = UOp(Ops::LOAD, read_copy.dtype(), {read_copy.src(0), published});
  return graph_rewrite(substitute(split, with_masked_selects(split, std::move(staged))), kernel_rules());
}

// TC (see the top of this file): the one reduction, a float32 sum of x·y, x and y float32 casts of
// float16 or bfloat16 values. Its ranges are three sets, each seen as one flat range (the last
// range fastest, its values recovered by division and remainder): M, the output loops x moves
// with and y does not; N, those y moves with and x does not; K, the reduction's. A matmul's are
// one range each; a convolution's M is its batch and output pixels, N its output channels, K its
// input channels and window. M, N and K split into tiles of the instruction's 16, 8 and 16 and
// what is left (loops, and the reduction over K's tiles); a new range of the warp's 32 lanes
// picks each lane's elements of the tiles (TensorCore's layout); each of the lane's 4 outputs is
// its own sum, over K's tiles, of one element of the WMMA of its fragments, and its own store.
// A set whose size is not a multiple of its tile is padded to one (its last range grows, as
// PADTO's does): the tiles' extra rows and columns read zeros and store nothing.
inline UOp tensor_core(const UOp& ast, const std::string& what, bool tf32) {
  using tinyt::detail::cat;
  const TensorCore& tc = tf32 ? mma_m16n8k8_tf32 : mma_m16n8k16;
  UOp red;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::REDUCE) {
      if (red) throw OptError(cat(what, ": the kernel has more than one reduction"));
      red = u;
    }
  if (!red || red.arg().get<Ops>() != Ops::ADD || red.dtype() != dtypes::float32 || red.src(0).op() != Ops::MUL)
    throw OptError(cat(what, ": tensor cores compute a float32 sum of products"));
  const auto narrow = [](const UOp& v) {
    return v.op() == Ops::CAST && v.dtype() == dtypes::float32 &&
                   (v.src(0).dtype() == dtypes::float16 || v.src(0).dtype() == dtypes::bfloat16)
               ? v.src(0).dtype()
               : dtypes::void_;
  };
  const DType in = tf32 ? dtypes::float32 : narrow(red.src(0).src(0));
  if (tf32 ? red.src(0).src(0).dtype() != dtypes::float32 || red.src(0).src(1).dtype() != dtypes::float32
           : in == dtypes::void_ || narrow(red.src(0).src(1)) != in)
    throw OptError(cat(what, tf32 ? ": the products are not of two float32 values" : ": the products are not of two float16 or two bfloat16 values"));
  if (ast.src().size() != 1) throw OptError(cat(what, ": the kernel stores more than one value"));
  const std::vector<UOp> k(red.src().begin() + 1, red.src().end());
  for (const UOp& r : all_ranges(ast))
    if (range_kind(r) != RangeKind::loop && std::find(k.begin(), k.end(), r) == k.end())
      throw OptError(cat(what, ": comes before every other opt (the kernel has a range of kind ", static_cast<int>(range_kind(r)), ")"));
  // M: the loops only one operand (then called x: A's side) moves with; N: only the other's
  UOp x = red.src(0).src(0), y = red.src(0).src(1);
  const auto only = [&](const UOp& a, const UOp& b) {
    std::vector<UOp> out;
    for (const UOp& r : all_ranges(ast))
      if (range_kind(r) == RangeKind::loop && depends_on(a, r) && !depends_on(b, r)) out.push_back(r);
    return out;
  };
  const auto flat_size = [](const std::vector<UOp>& rs) {
    int64_t n = 1;
    for (const UOp& r : rs) n = is_symbolic(r) ? 0 : n * range_size(r);
    return n;
  };
  std::vector<UOp> m = only(x, y), n = only(y, x);
  const auto divides = [&] { return flat_size(m) % tc.m == 0 && flat_size(n) % tc.n == 0; };
  if (m.empty() || n.empty() || (!divides() && !only(x, y).empty() && !only(y, x).empty() &&
                                 flat_size(only(y, x)) % tc.m == 0 && flat_size(only(x, y)) % tc.n == 0)) {
    std::swap(x, y);
    std::swap(m, n);
  }
  if (m.empty() || n.empty() || flat_size(m) == 0 || flat_size(n) == 0 || flat_size(k) == 0)
    throw OptError(cat(what, ": needs output loops only one operand moves with, others only the other does, and a reduction, all of known sizes"));
  // a set whose size is not a multiple of its tile grows its last range to one (PADTO: the new
  // iterations read zeros and store nothing), then the padded kernel is taken from the top
  UOp padded = ast;
  for (const auto& [set, tile] : {std::pair<const std::vector<UOp>*, int64_t>{&m, tc.m}, {&n, tc.n}, {&k, tc.k}}) {
    if (flat_size(*set) % tile == 0) continue;
    const UOp& last = set->back();
    const int64_t rest = flat_size(*set) / range_size(last), amount = tile / std::gcd(rest, tile);
    UOp now;
    for (const UOp& r : all_ranges(padded))
      if (r.arg()[0].as_int() == last.arg()[0].as_int()) now = r;
    try {
      padded = pad_range(padded, now, amount);
    } catch (const OptError& e) {
      throw OptError(cat(what, ": ", flat_size(*set), " is not a multiple of ", tile, " and cannot be padded to one (", e.what(), ")"));
    }
  }
  if (padded != ast) return tensor_core(padded, what, tf32);
  int64_t next = next_axis_id(ast);
  const UOp m_tile = schedule::range(flat_size(m) / tc.m, m.front().arg()[0].as_int(), RangeKind::loop);
  const UOp n_tile = schedule::range(flat_size(n) / tc.n, n.front().arg()[0].as_int(), RangeKind::loop);
  const UOp k_tile = schedule::range(flat_size(k) / tc.k, k.front().arg()[0].as_int(), RangeKind::reduce);
  const UOp lane = schedule::range(TensorCore::warp, next++, RangeKind::warp);
  const UOp group = lane / 4, thread = lane.alu(Ops::MOD, {schedule::index_const(4)});
  // each range of a set at a flat position of the set: tile * size + offset
  using Map = std::unordered_map<const UOpNode*, UOp>;
  const auto at = [](Map& map, const std::vector<UOp>& set, const UOp& tile, int64_t size, const UOp& offset) {
    UOp flat = tile * size + offset;
    int64_t stride = 1;
    for (auto r = set.rbegin(); r != set.rend(); ++r) {
      map[r->get()] = set.size() == 1 ? flat : (flat / stride).alu(Ops::MOD, {schedule::index_const(range_size(*r))});
      stride *= range_size(*r);
    }
  };
  std::vector<UOp> operands;
  for (int i = 0; i < tc.a_count; ++i) {
    Map map;
    at(map, m, m_tile, tc.m, group + tc.a_row[static_cast<size_t>(i)]);
    at(map, k, k_tile, tc.k, thread * tc.per_thread + tc.a_col[static_cast<size_t>(i)]);
    operands.push_back(substitute(x, map));
  }
  for (int i = 0; i < tc.b_count; ++i) {
    Map map;
    at(map, k, k_tile, tc.k, thread * tc.per_thread + tc.b_k[static_cast<size_t>(i)]);
    at(map, n, n_tile, tc.n, group);
    operands.push_back(substitute(y, map));
  }
  const UOp wmma(Ops::WMMA, dtypes::float32.vec(TensorCore::c_count), std::move(operands), cat(tc.shape, " ", tf32 ? "tf32" : in.name()));
  std::vector<UOp> stores;
  for (int c = 0; c < TensorCore::c_count; ++c) {
    Map map{{red.get(), UOp(Ops::REDUCE, dtypes::float32, {UOp(Ops::GEP, dtypes::float32, {wmma}, c), k_tile}, Ops::ADD)}};
    at(map, m, m_tile, tc.m, group + TensorCore::c_row[static_cast<size_t>(c)]);
    at(map, n, n_tile, tc.n, thread * 2 + TensorCore::c_col[static_cast<size_t>(c)]);
    stores.push_back(substitute(ast.src(0), map));
  }
  return graph_rewrite(UOp(Ops::SINK, dtypes::void_, std::move(stores)), kernel_rules());
}
}  // namespace detail

/// Whether a STORE writes a whole vector past the caches (the expander's streaming stores).
inline bool streams(const UOp& store) {
  return store.op() == Ops::STORE && store.arg().is<std::string>() && store.arg().get<std::string>() == "stream";
}

/// The lanes of the streaming vectors a store copied along `range` (its fastest-varying upcast)
/// may be cut into, 0 when none: a buffer of at least `stream_bytes`, written ungated with stride 1
/// along the range, elements of 4 bytes or more (no bool, no narrow float), in whole 64-byte cache
/// lines (the allocators align buffers to 64). A part of a line written past the cache costs more
/// than a plain store: the CNN's conv 1, rows of 24 floats in vectors of 8, ran at half speed.
inline int64_t stream_lanes(const UOp& store, const UOp& range, int64_t stream_bytes) {
  const UOp& idx = store.src(0);
  if (stream_bytes <= 0 || idx.src(0).op() != Ops::DEFINE_GLOBAL || idx.src().size() > 2) return 0;
  const DType dt = idx.src(0).dtype().base();
  if (dt.itemsize() < 4 || idx.src(0).dtype().size() * dt.itemsize() < stream_bytes ||
      range_size(range) % (64 / dt.itemsize()) != 0 || detail::stride_of(idx.src(1), range, all_ranges(store)) != 1)
    return 0;
  return 64 / dt.itemsize();
}

/// The kernel AST with `opt` applied; OptError when it does not apply.
inline UOp apply_opt(const UOp& ast, const Opt& opt) {
  using tinyt::detail::cat;
  const std::vector<UOp> ax = axes(ast);
  if (opt.axis < 0 || opt.axis >= static_cast<int64_t>(ax.size()))
    throw OptError(cat(opt.str(), ": the kernel has ", ax.size(), " axes"));
  const UOp& r = ax[static_cast<size_t>(opt.axis)];
  const int64_t n = range_size(r), amount = opt.amount == 0 ? n : opt.amount;
  const RangeKind kind = range_kind(r);
  for (const UOp& u : toposort(ast))
    if (is_stage(u)) throw OptError(cat(opt.str(), ": STAGE is a kernel's last opt"));
  if (opt.op == OptOp::PADTO) {
    if (amount <= 1) throw OptError(cat(opt.str(), ": the amount must be above 1"));
    return detail::pad_range(ast, r, amount);
  }
  if (opt.op == OptOp::TC) {  // (its axis: one of the reduction's; it takes them all)
    if (opt.amount != 0 && opt.amount != 1) throw OptError(cat(opt.str(), ": TC takes the amount 0 (16-bit inputs) or 1 (TF32)"));
    if (kind != RangeKind::reduce) throw OptError(cat(opt.str(), ": TC applies to a reduce axis"));
    return detail::tensor_core(ast, opt.str(), opt.amount == 1);
  }
  if (amount <= 1 || n % amount != 0) throw OptError(cat(opt.str(), ": ", amount, " does not divide the axis size ", n));
  const bool reduce = kind == RangeKind::reduce;
  switch (opt.op) {
    case OptOp::UPCAST:
      if (reduce) throw OptError(cat(opt.str(), ": UPCAST applies to output axes; UNROLL splits reductions"));
      if (amount > 64) throw OptError(cat(opt.str(), ": more than 64 copies"));
      return detail::split_range(ast, r, amount, RangeKind::upcast, false);
    case OptOp::UNROLL:
      if (!reduce) throw OptError(cat(opt.str(), ": UNROLL applies to reduce axes"));
      if (amount > 64) throw OptError(cat(opt.str(), ": more than 64 accumulators"));
      return detail::split_range(ast, r, amount, RangeKind::unroll, false);
    case OptOp::LOCAL:
      if (kind != RangeKind::loop) throw OptError(cat(opt.str(), ": LOCAL applies to output loops"));
      return detail::split_range(ast, r, amount, RangeKind::local, false);
    case OptOp::THREAD:
      if (kind != RangeKind::loop) throw OptError(cat(opt.str(), ": THREAD applies to output loops"));
      for (const UOp& x : all_ranges(ast))
        if (range_kind(x) == RangeKind::thread) throw OptError(cat(opt.str(), ": the kernel is already threaded"));
      return detail::split_range(ast, r, amount, RangeKind::thread, true);
    case OptOp::GROUP:
    case OptOp::GROUPTOP:
      if (!reduce) throw OptError(cat(opt.str(), ": ", opt_op_name(opt.op), " applies to reduce axes"));
      if (amount > 1024) throw OptError(cat(opt.str(), ": a work-group of more than 1024"));
      for (const UOp& x : all_ranges(ast))
        if (range_kind(x) == RangeKind::group) throw OptError(cat(opt.str(), ": the kernel is already grouped"));
      // GROUP: the work-items are the inner part, so neighbours read neighbouring elements;
      // GROUPTOP: the outer part, each work-item a contiguous run
      return detail::split_range(ast, r, amount, RangeKind::group, opt.op == OptOp::GROUPTOP);
    case OptOp::STAGE:
      if (!reduce) throw OptError(cat(opt.str(), ": STAGE applies to reduce axes"));
      return detail::stage_loads(ast, r, amount, opt.str());
    case OptOp::PACK:
      if (opt.amount != 0) throw OptError(cat(opt.str(), ": PACK takes the amount 0 (a whole axis)"));
      if (kind != RangeKind::loop && kind != RangeKind::local) throw OptError(cat(opt.str(), ": PACK applies to output loops and tiles"));
      return detail::pack_loads(ast, r, opt.str());
    default: break;
  }
  throw OptError(cat(opt.str(), ": unknown opt"));
}

/// The kernel AST with `opts` applied in order.
inline UOp apply_opts(UOp ast, const std::vector<Opt>& opts) {
  for (const Opt& o : opts) ast = apply_opt(ast, o);
  return ast;
}

}  // namespace codegen
}  // namespace tinyt::inline v0
