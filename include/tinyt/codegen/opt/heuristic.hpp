// Hand-coded opts, used when BEAM is off: a register tile for reductions that reuse a load
// across outputs (matmul, conv), sized to the machine's vector registers, with a cache tile over
// its rows when the reduction is long; on a CPU, copies (PACK) of the panels a tile reads, and a
// vector side that only a copy makes contiguous (a conv's input gradient); separate accumulators
// for reductions over contiguous memory; copies of an innermost loop an address divides or
// strides through; and threads over the outermost loop when there is enough work to share.
#pragma once

#include "opt.hpp"

namespace tinyt::inline v0 {
namespace codegen {

namespace detail {
struct Access {
  bool store;
  UOp index;   // the address
  DType type;  // of the element
  UOp gate;    // where it is masked: the condition, else empty
};
inline std::vector<Access> accesses(const UOp& ast) {
  std::vector<Access> out;
  for (const UOp& u : toposort(ast))
    if ((u.op() == Ops::LOAD || u.op() == Ops::STORE) && u.src(0).op() == Ops::INDEX &&
        u.src(0).src(0).op() == Ops::DEFINE_GLOBAL)
      out.push_back({u.op() == Ops::STORE, u.src(0).src(1), u.op() == Ops::STORE ? u.src(1).dtype() : u.dtype(),
                     u.src(0).src().size() > 2 ? u.src(0).src(2) : UOp{}});
  return out;
}

/// The largest divisor of n that is at most `limit` (1 when n < 1).
inline int64_t divisor_up_to(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

inline int64_t largest_divisor(int64_t n, const std::vector<int64_t>& choices) {
  for (int64_t c : choices)
    if (n % c == 0 && n >= c) return c;
  return 1;
}
}  // namespace detail

/// What the hand-coded opts know of the machine: the threads a kernel may use and the SIMD
/// registers its compiler vectorizes into (AVX2: 16 of 32 bytes; AVX-512: 32 of 64 bytes).
struct MachineShape {
  int64_t threads = 1;
  int64_t vector_bytes = 32;
  int64_t vector_registers = 16;
  bool packs = false;  // whether a thread may copy a kernel's panels into its own buffer (PACK: CPUs)
  int64_t stream_bytes = 0;  // outputs this big or bigger are written past the caches (0: never)
  bool gpu = false;  // a GPU's: LOCAL makes tiles of work-items, not of a cache
};

namespace detail {
/// hand_coded_opts' rules. With `pad_gathers`, a row whose loads are strided along it (gathers)
/// may be padded to whole vectors too, on the promise that those loads read a copy; `unkept` is
/// set when that copy could not be made, and the caller asks again without.
inline std::vector<Opt> hand_coded_opts(const UOp& ast, const MachineShape& machine, bool pad_gathers, bool& unkept) {
  const int64_t threads = machine.threads;
  std::vector<Opt> opts;
  UOp k = ast;
  auto apply = [&](Opt o) {
    try {
      k = apply_opt(k, o);
      opts.push_back(o);
      return true;
    } catch (const OptError&) {
      return false;
    }
  };
  std::vector<UOp> ax = axes(k);
  const std::vector<UOp> every = all_ranges(k);
  const std::vector<detail::Access> acc = detail::accesses(k);
  std::vector<size_t> loops, reduces;
  for (size_t i = 0; i < ax.size(); ++i) (range_kind(ax[i]) == RangeKind::reduce ? reduces : loops).push_back(i);
  auto stride = [&](const detail::Access& a, size_t axis) { return detail::stride_of(a.index, ax[axis], every); };

  if (!reduces.empty()) {
    // output axes along which some load that the reduction reads stays put: copies share it
    std::vector<size_t> reuse;
    for (size_t a : loops)
      for (const detail::Access& x : acc)
        if (!x.store && stride(x, a) == 0 && depends_on(x.index, ax[reduces.back()])) {
          reuse.push_back(a);
          break;
        }
    if (reuse.size() >= 2) {
      const detail::Access& out = *std::find_if(acc.begin(), acc.end(), [](const detail::Access& x) { return x.store; });
      auto unit = [&](size_t a) { return stride(out, a) == 1; };
      // a load masked along an axis branches per element there: no vector along it
      auto masked = [&](size_t a) {
        return std::any_of(acc.begin(), acc.end(), [&](const detail::Access& x) { return x.gate && depends_on(x.gate, ax[a]); });
      };
      // the wide side first: the axis the output is contiguous along, unless a load is masked along it
      std::stable_sort(reuse.begin(), reuse.end(), [&](size_t a, size_t b) { return (unit(a) && !masked(a)) > (unit(b) && !masked(b)); });
      // the tall side next: an axis along which the loads that vary along the wide side stay put, so
      // each of their values feeds a whole column of the tile (a conv's output channels, not its
      // batch); then a third side along which the other loads stay put (a conv's batch), so both
      // kinds of load are shared
      auto varies = [&](const detail::Access& x, size_t a) { return !x.store && stride(x, a) != 0; };
      auto stays_with = [&](size_t a, bool along_wide) {
        for (const detail::Access& x : acc)
          if (varies(x, reuse[0]) == along_wide && varies(x, a)) return false;
        return true;
      };
      const auto tall_sides = std::stable_partition(reuse.begin() + 1, reuse.end(), [&](size_t a) { return stays_with(a, true); });
      // of those, the one that splits into the most rows first (the recognizer's classifier reads
      // its weight for 40 rows of 6 images: a tile 8 rows tall, not 2; 62 -> 147 GFLOPS)
      std::stable_sort(reuse.begin() + 1, tall_sides, [&](size_t a, size_t b) {
        return detail::largest_divisor(range_size(ax[a]), {16, 8, 4, 2}) > detail::largest_divisor(range_size(ax[b]), {16, 8, 4, 2});
      });
      std::optional<size_t> third;
      for (size_t i = 2; i < reuse.size() && !third; ++i)
        if (!masked(reuse[i]) && stays_with(reuse[i], false)) third = reuse[i];
      // A vector side when the output row splits into whole vectors (or halves: a 256-bit row of
      // an AVX-512 machine), with accumulators for half the vector registers; the other half holds
      // the loaded row and the broadcasts, so nothing spills. Otherwise a tile of at most 32 scalar
      // accumulators, a short row (a 5x5 kernel's) whole. Lanes are counted in the accumulators'
      // dtype, the widest (a bfloat16 matmul adds up in float32).
      int64_t acc_bytes = out.type.itemsize();
      for (const UOp& u : toposort(k))
        if (u.op() == Ops::REDUCE) acc_bytes = std::max<int64_t>(acc_bytes, u.dtype().itemsize());
      const int64_t lanes = std::max<int64_t>(machine.vector_bytes / acc_bytes, 1);
      int64_t n0 = range_size(ax[reuse[0]]);
      // On a CPU, a row that splits into no whole vectors (nor halves) is padded to one that does:
      // the widest vector that pads it by at most an eighth, else half a vector. The padded lanes
      // are masked, but only in the last tile (split_masked_loops gives it a loop of its own) or in
      // a row that is one tile, where each lane's mask is a constant. (PaddleOCR's recognizer: its
      // classifier's row of 6625, 8.8 -> 186 GFLOPS; the detector's 1x1 convs on 23x23 and 92x92.)
      // (Only where every load is contiguous along it too: a strided conv's loads are gathers.)
      // With 16 registers (AVX2) the half vector is too narrow a row to keep: the row of 2116
      // pixels of the detector's 46x46 image pads to 2128 for a tile 16 wide.
      // (Or, on a CPU that copies panels, where a load is a gather along it that a copy, made below,
      // turns contiguous: attention's scores q k^T over 58 tokens, 16 -> 79 GFLOPS.)
      const bool contiguous = std::all_of(acc.begin(), acc.end(), [&](const detail::Access& x) {
        const std::optional<int64_t> step = stride(x, reuse[0]);
        return x.store || (step && (*step == 0 || *step == 1));
      });
      bool padded = false;  // whether the row was padded: its last tile's accesses are masked
      if (const int64_t least = lanes / 2 >= 4 && machine.vector_registers > 16 ? lanes / 2 : lanes;
          !machine.gpu && unit(reuse[0]) && (contiguous || (pad_gathers && machine.packs)) && !masked(reuse[0]) && n0 > least &&
          n0 % least != 0) {
        int64_t to = least;  // (which pads least: the others are its multiples)
        for (int64_t c : {2 * lanes, lanes})
          if (((n0 + c - 1) / c * c - n0) * 8 <= n0) {
            to = c;
            break;
          }
        if (apply({OptOp::PADTO, static_cast<int64_t>(reuse[0]), to})) n0 = range_size(axes(k)[reuse[0]]), padded = true;
      }
      std::vector<int64_t> vector_widths{2 * lanes, lanes};
      // a row of whole and half vectors, up to four, whole: a row of 24 or 56 on AVX-512 is one
      // tile wide, not three or seven of 8 (the CNN's conv 1, 24 wide: 124 -> 200 GFLOPS; conv2d
      // 8x64x56x56: 174 -> 319 GFLOPS)
      const bool whole_row = n0 > lanes && n0 <= 4 * lanes && n0 % lanes != 0 && lanes / 2 >= 4 && n0 % (lanes / 2) == 0;
      if (whole_row) vector_widths.push_back(n0);
      if (lanes / 2 >= 4) vector_widths.push_back(lanes / 2);
      int64_t wide = unit(reuse[0]) && !masked(reuse[0]) ? detail::largest_divisor(n0, vector_widths) : 1, budget;
      const bool vector = wide > 1, long_row = vector && wide == n0 && n0 > 2 * lanes;
      // With 16 registers (AVX2) and a row of two vectors or more, the accumulators take what the
      // row and a broadcast leave, as BLIS's Haswell kernel (6 rows of 16 floats: 12 of the 16), and
      // the tall side takes all of them before any third side: each tile of rows reads the whole
      // of the row side's operand again (a 1x1 conv's input, from L3 once it outgrows L2), so the
      // fewer such tiles the better. (Zen 3: the recognizer's 1x1 conv 6x240x12x80 by 240, 92 ->
      // 161 GFLOPS as 16 x 6 rather than 16 x 2 x 2; a 3x3 conv 8x16x16x16 by 32, 83 -> 161 as
      // 16 x 4 rather than 16 x 2 x 2.)
      // A row of one vector takes 12 accumulators too, in a tile square along two other sides (6 x 2:
      // 6 broadcasts and 2 loads feed 12 FMAs), where the 6 rows' panel of the broadcast operand
      // stays in L1: the detector's 3x3 conv 96x184x184 by 24 (a panel of 20 KB), 155 GFLOPS as
      // 8 x 6 x 2, 138 as 8 x 4 x 2; not the recognizer's 1x3 conv 6x960x1x42 by 60 (69 KB: 6
      // streams from L2), 81 GFLOPS as 8 x 6 x 2, 140 as 8 x 4 x 2.
      // A padded row's masks take a row of registers more in its last tile: kept free where that
      // tile is one of at most 4 (the detector's 3x3 conv 96x46x46, padded to 48: 16 x 4, 145
      // GFLOPS, not 16 x 6, 107), not where it is one of many (its 1x1 conv 192x2116 by 192, padded
      // to 2128: 16 x 6, 169-178, not 16 x 4, 153; the 3x3 conv 96x92x92, padded to 96: 164, 144).
      // With 32 (AVX-512) half of them, measured so on Zen 4 (BLIS's SkylakeX kernel takes 24).
      const int64_t row_vectors = vector ? (wide + lanes - 1) / lanes : 1;
      int64_t reduce_length = 1;
      for (size_t r : reduces) reduce_length *= range_size(ax[r]);
      const bool tall_first = vector && machine.vector_registers <= 16 && row_vectors >= 2;
      const bool haswell_tile = tall_first || (vector && machine.vector_registers <= 16 && reduce_length * 6 * acc_bytes <= 32 * 1024);
      const bool masks_kept_free = padded && n0 / wide <= 4;
      if (vector) {
        budget = (haswell_tile ? machine.vector_registers - row_vectors * (masks_kept_free ? 2 : 1) - 2 : machine.vector_registers / 2) / row_vectors;
      } else {
        wide = unit(reuse[0]) && !masked(reuse[0]) && n0 <= 8 ? n0 : detail::largest_divisor(n0, {4, 2});
        budget = 32 / wide;
      }
      // the sides' sizes: powers of two, and in a Haswell tile 12, 6 and 3 too
      auto up_to = [haswell_tile](int64_t limit) {
        std::vector<int64_t> out;
        for (int64_t t : {16, 12, 8, 6, 4, 3, 2})
          if (t <= limit && ((t & (t - 1)) == 0 || haswell_tile)) out.push_back(t);
        return out;
      };
      // (scalar tiles stay two-sided: there every load is one, and a square tile needs the fewest;
      // so do rows of more than two vectors, whose loads outnumber the broadcasts: 56 x 4 runs at
      // 1.8x the speed of 56 x 2 x 2)
      const bool three = vector && third && range_size(ax[*third]) % 2 == 0 && !long_row;
      const int64_t tall = detail::largest_divisor(range_size(ax[reuse[1]]), up_to(three && !tall_first ? budget / 2 : budget));
      const int64_t deep = three ? detail::largest_divisor(range_size(ax[*third]), up_to(budget / tall)) : 1;
      const int64_t rows_id = ax[reuse[1]].arg()[0].as_int(), deep_id = three ? ax[*third].arg()[0].as_int() : -1;
      // each UPCAST removes or shrinks its axis: later ones find theirs by range id
      auto upcast = [&](int64_t id, int64_t amount) {
        if (amount <= 1) return;
        ax = axes(k);
        for (size_t i = 0; i < ax.size(); ++i)
          if (ax[i].arg()[0].as_int() == id && range_kind(ax[i]) == RangeKind::loop) {
            apply({OptOp::UPCAST, static_cast<int64_t>(i), amount});
            return;
          }
      };
      // Without a vector side along the output's row, on a CPU: a side along which the loads that
      // vary there are copied (PACK), so that it runs contiguous in the copy, while the other loads
      // stay put and are broadcast. A conv's input gradient: its weight varies along the input
      // channels (25 floats apart in memory, neighbours in the copy) and the output gradient stays
      // put. The tall side is one no mask depends on (the batch), so a column of broadcasts shares
      // one branch. (CNN conv 2 input gradient, batch 512: 26 -> 180 GFLOPS.)
      auto packed_vector_tile = [&] {
        const UOp plain = k;
        const std::vector<Opt> plain_opts = opts;
        const std::vector<UOp> plain_axes = ax;
        for (size_t a : reuse) {
          const int64_t w = unit(a) || masked(a) ? 1 : detail::largest_divisor(range_size(plain_axes[a]), {4 * lanes, 2 * lanes, lanes});
          if (w <= 1) continue;
          // the column: the longest (up to the budget) along which the varying loads stay put; not
          // the output's row, along which the compiler's vectorizer would line up the copies instead
          const std::vector<int64_t> heights = up_to(machine.vector_registers / 2 / (w / lanes));
          std::optional<size_t> column;
          int64_t height = 1;
          for (size_t t : reuse) {
            const int64_t h = detail::largest_divisor(range_size(plain_axes[t]), heights);
            if (t != a && !masked(t) && !unit(t) && h > height &&
                std::none_of(acc.begin(), acc.end(), [&](const detail::Access& x) { return varies(x, a) && varies(x, t); }))
              column = t, height = h;
          }
          if (!column) continue;
          const int64_t side = detail::next_axis_id(k);  // the id of the vector side's upcast range
          upcast(plain_axes[a].arg()[0].as_int(), w);
          upcast(plain_axes[*column].arg()[0].as_int(), height);
          // the copy goes before the outermost loop it can; it must take every load that varies
          // along the vector side, or that side is no vector
          ax = axes(k);
          for (size_t i = 0; i < ax.size(); ++i)
            if (range_kind(ax[i]) == RangeKind::loop && apply({OptOp::PACK, static_cast<int64_t>(i), 0})) {
              const std::vector<UOp> ranges = all_ranges(k);
              const auto found = std::find_if(ranges.begin(), ranges.end(), [&](const UOp& r) { return r.arg()[0].as_int() == side; });
              if (found == ranges.end()) break;  // the vector side's upcast did not apply
              const UOp& vector_side = *found;
              const std::vector<detail::Access> left = detail::accesses(k);  // what still reads memory in place
              if (std::none_of(left.begin(), left.end(), [&](const detail::Access& x) {
                    return !x.store && (depends_on(x.index, vector_side) || (x.gate && depends_on(x.gate, vector_side)));
                  }))
                return true;
              break;
            }
          k = plain, opts = plain_opts, ax = plain_axes;
        }
        return false;
      };
      const bool packed_tile = !vector && machine.packs && packed_vector_tile();
      const int64_t side = detail::next_axis_id(k);  // the id of the vector side's upcast range
      // whether a load from memory still gathers along the vector side (strided along it)
      auto gathers = [&] {
        const std::vector<UOp> ranges = all_ranges(k);
        const auto found = std::find_if(ranges.begin(), ranges.end(), [&](const UOp& r) { return r.arg()[0].as_int() == side; });
        const std::vector<detail::Access> left = detail::accesses(k);  // what still reads memory in place
        return found != ranges.end() && std::any_of(left.begin(), left.end(), [&](const detail::Access& x) {
                 return !x.store && detail::stride_of(x.index, *found, ranges).value_or(2) > 1;
               });
      };
      bool gathers_copied = false;
      if (!packed_tile) {
        upcast(ax[reuse[0]].arg()[0].as_int(), wide);
        upcast(rows_id, tall);
        upcast(deep_id, deep);
        // A vector side along which a load is a gather (k in q k^T, read across its rows): on a CPU,
        // the load reads a copy (PACK) where the vector side runs contiguous, made before a loop
        // of 4 turns or more that it does not depend on, so each copy serves those turns (the
        // rows of q). (Attention's scores over 64 tokens: 72 -> 153 GFLOPS.) Where that copy is
        // too big for a thread's stack (a Linear's weight, x.matmul(W.T())), the cache tile below
        // copies a panel of it.
        if (vector && !contiguous && machine.packs) {
          const UOp plain = k;
          const std::vector<Opt> plain_opts = opts;
          ax = axes(k);
          for (size_t i = 0; i < ax.size() && !gathers_copied; ++i) {
            if (range_kind(ax[i]) != RangeKind::loop || range_size(ax[i]) < 4 || !apply({OptOp::PACK, static_cast<int64_t>(i), 0})) continue;
            gathers_copied = !gathers();
            if (!gathers_copied) k = plain, opts = plain_opts;
          }
          ax = axes(k);
        }
      }
      // A cache tile over the rows: each column tile is used by `local` row tiles in a row, so the
      // columns it reads (reduce length x wide) come from cache but once, when they fill L1 (a
      // panel of 32 KB, 512 x 16 floats, leaves no room for the rows: matmul 512, 132 -> 181
      // GFLOPS with it copied; 1856x512 by 512x384, 78 -> 168).
      // On a CPU the columns are copied first into one contiguous panel (PACK) that the row tiles
      // read in order: read in place, each step of the reduction jumps a row of the input (a page
      // of a 2048-wide matrix), and the rows contend for the same cache sets and TLB entries. A
      // panel then serves a thread's whole share of the rows, up to 128 tiles (matmul 512-2048:
      // 1.1-1.2x the speed of 16 tiles a panel), any divisor of it (MiniLM's 1856 rows in 464
      // tiles of 4: 116 a panel, not 8; 1856x384 by 384x1536, 137 -> 168 GFLOPS).
      // (Not for a whole row of more than two vectors: its columns are one contiguous run per step
      // already; conv2d 8x64x56x56 with the cache tile and copy: 319 -> 226 GFLOPS.)
      // (A scalar tile's columns are not copied: the CNN's conv 1 weight gradient, 5 wide, ran at
      // 0.8x with its panel packed.)
      // (A CPU's: on a GPU, LOCAL makes tiles of work-items.)
      // Where the tall side comes first (16 registers), also when all that the loops inside a row
      // tile read of the row side's operand outgrows half of L2 (256 KB): without it each tile of
      // rows reads all of that again from L3; with it `local` row tiles use each column tile in a
      // row, from L1 (not copied: the copy is for panels that fill L1). (Zen 3: the recognizer's
      // 1x1 convs 6x240x12x80 by 240, 161 -> 180 GFLOPS; 6x480x6x80 by 480, 125 -> 178.)
      // Sixteen row tiles or fewer (a batch of a few rows: one sentence's 16 tokens) are all
      // `local`, and the threads split the columns instead: each column tile then comes from
      // memory once, where each thread's share of the rows read all of them (MiniLM's 16x384 by
      // 384x1536 with weights not in cache: 5.6 -> 10.5 GB/s, 418 -> 225 us).
      const int64_t panel_bytes = reduce_length * wide * out.type.itemsize();
      int64_t inside_rows = panel_bytes;
      {
        const std::vector<UOp> now = axes(k);
        bool after = false;
        for (const UOp& r : now) {
          if (after && range_kind(r) == RangeKind::loop) inside_rows *= range_size(r);
          after |= r.arg()[0].as_int() == rows_id;
        }
      }
      const bool panel_fills_l1 = panel_bytes >= 32 * 1024;
      // (and where the columns are gathers that no copy took yet: x.matmul(W.T()), 512: 55 -> 187 GFLOPS; 1856x384 by 384x1536: 75 -> 136)
      const bool panel_gathered = machine.packs && vector && !contiguous && !gathers_copied;
      if (!machine.gpu && !packed_tile && !long_row && (panel_fills_l1 || panel_gathered || (tall_first && inside_rows > 256 * 1024))) {
        const bool pack_panel = machine.packs && vector && (panel_fills_l1 || panel_gathered);
        ax = axes(k);
        for (size_t i = 0; i < ax.size(); ++i)
          if (ax[i].arg()[0].as_int() == rows_id && range_kind(ax[i]) == RangeKind::loop)
            if (const int64_t tiles = range_size(ax[i]),
                local = tiles <= 16 ? tiles
                        : pack_panel ? detail::divisor_up_to(tiles / std::max<int64_t>(threads, 1), 128)
                                     : detail::largest_divisor(tiles / 2, {16, 8, 4});
                local > 1 && apply({OptOp::LOCAL, static_cast<int64_t>(i), local}) && pack_panel) {
              ax = axes(k);
              for (size_t j = 0; j < ax.size(); ++j)
                if (range_kind(ax[j]) == RangeKind::local && apply({OptOp::PACK, static_cast<int64_t>(j), 0})) break;
              break;
            }
      }
      if (padded && !contiguous && gathers()) {
        unkept = true;  // padded for a copy that was not made: masked gathers are slower than none
        return opts;
      }
    } else {
      // separate accumulators over each reduce axis that walks memory in order (a kernel may
      // hold several reductions: a softmax's maximum and sum); the last first, so the axis
      // numbers of the others stay put
      // (a short row, 4 to 32 long, whole: a batchnorm's sum over 24x24 images adds 24 rows of 24
      // at once, not one element after another at an add's latency)
      bool unrolled = false;
      int64_t reduce_length = 1;
      for (auto it = reduces.rbegin(); it != reduces.rend(); ++it) {
        bool contiguous = false;
        for (const detail::Access& x : acc) contiguous |= !x.store && stride(x, *it) == 1;
        const int64_t n = range_size(ax[*it]);
        reduce_length *= n;
        // (32 where the row is long: four vectors of AVX2 side by side hide an FMA's latency, and a
        // Q4_0 block's 32 nibbles, both halves of its 16 bytes, are one turn; a decoding step's
        // matrix times a vector, 5632x2048 Q4_0: 12.6 -> 17.0 GB/s, Q8_0 9.5 -> 14.2, on a loaded
        // Zen 3)
        const int64_t amount = n >= 256 ? detail::largest_divisor(n, {32, 16, 8, 4})
                               : n >= 64 ? detail::largest_divisor(n, {16, 8, 4})
                               : n >= 4 && n <= 32 ? n : 1;
        if (contiguous && amount > 1) unrolled |= apply({OptOp::UNROLL, static_cast<int64_t>(*it), amount});
      }
      // Without that, each output's sum is one chain of dependent adds (a matrix times a vector
      // whose rows are strided, silero-vad's convs over 3 taps; a column sum): copies of the
      // innermost output loop in registers run 8 chains (or 4, 2) side by side. (silero-vad's
      // r_128_64_3, 128 sums of 192: 59 -> 51 us a call with its launch.)
      if (!unrolled && reduce_length >= 16 && !loops.empty()) {
        const size_t inner = loops.back();
        const int64_t copies = detail::largest_divisor(range_size(ax[inner]), {8, 4, 2});
        if (copies > 1) apply({OptOp::UPCAST, static_cast<int64_t>(inner), copies});
      }
    }
  }

  // An innermost output loop that an address divides by a constant (a max pool's backward reads
  // x // 2) or strides through (its forward reads 2x and 2x + 1): its copies in registers share
  // the quotient, so the division folds away, and read neighbouring elements. 8 copies, or 4 or 2,
  // a multiple of the divisor. (The CNN's pool backward, 512x32x24x24: 9.3 -> 3.0 ms; its forward,
  // 4.9 -> 2.9 ms.)
  if (std::none_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::UPCAST; })) {
    ax = axes(k);
    auto innermost = std::find_if(ax.rbegin(), ax.rend(), [](const UOp& r) { return range_kind(r) == RangeKind::loop; });
    if (innermost != ax.rend()) {
      const std::vector<UOp> every_range = all_ranges(k);
      int64_t divisor = 1;
      bool strided = false;
      for (const detail::Access& x : detail::accesses(k)) {
        for (const UOp& u : toposort(x.index))
          if ((u.op() == Ops::IDIV || u.op() == Ops::MOD) && u.src(1).is_const() && depends_on(u.src(0), *innermost))
            divisor = std::max<int64_t>(divisor, static_cast<int64_t>(u.src(1).const_int()));
        const std::optional<int64_t> step = detail::stride_of(x.index, *innermost, every_range);
        strided |= !x.store && step && *step >= 2 && *step <= 4;
      }
      const int64_t n = range_size(*innermost), axis = ax.rend() - innermost - 1;
      for (int64_t c : {8, 4, 2})
        if ((divisor > 1 || strided) && n % c == 0 && c % divisor == 0 && apply({OptOp::UPCAST, axis, c})) break;
      // Or a cache line's worth of copies where the kernel fills a buffer past the caches along
      // it: the expander makes them one streaming store (elementwise chain over 16M floats, 64 MiB
      // out: 22 -> 40 GB/s).
      if (divisor == 1 && !strided && machine.stream_bytes > 0)
        for (const UOp& store : k.src())
          if (const int64_t line = stream_lanes(store, *innermost, machine.stream_bytes); line > 0) {
            apply({OptOp::UPCAST, axis, line});
            break;
          }
    }
  }

  // threads over the outermost loop that splits evenly, when the kernel does enough work; where
  // none does, the outermost loop of at least 4 turns a thread is padded to split evenly, its
  // extra turns masked off (PaddleOCR's 1x1 convs at 23x23 over 360 channels, 45 tiles of 8: they
  // ran on one core). (Not where a panel is copied: PADTO refuses, the copy holds the turns as
  // they were.)
  int64_t work = 1;
  for (const UOp& r : all_ranges(k)) work *= range_size(r);
  if (threads > 1 && work >= (int64_t{1} << 16)) {
    ax = axes(k);
    bool split = false;
    for (size_t i = 0; i < ax.size() && !split; ++i)
      split = range_kind(ax[i]) == RangeKind::loop && range_size(ax[i]) % threads == 0 &&
              apply({OptOp::THREAD, static_cast<int64_t>(i), threads});
    for (size_t i = 0; i < ax.size() && !split; ++i)
      if (range_kind(ax[i]) == RangeKind::loop && range_size(ax[i]) >= 4 * threads) {
        split = apply({OptOp::PADTO, static_cast<int64_t>(i), threads}) && apply({OptOp::THREAD, static_cast<int64_t>(i), threads});
        break;
      }
  }
  return opts;
}
}  // namespace detail

/// The opts chosen by hand-written rules for a kernel run on `machine`.
/// A row padded for a copy of its gathers is the second choice, where the first copies nothing:
/// a strided conv whose weights are copied along its output channels keeps that (8x64x56x56 by
/// 128, stride 2: 55 GFLOPS, 17 with its input's row padded and copied), one with no copy at all
/// takes it (1x96x92x92 by 96, stride 2: 6 -> 45-77 GFLOPS; 1x3x736x736 by 16: 6.5 -> 32).
inline std::vector<Opt> hand_coded_opts(const UOp& ast, const MachineShape& machine) {
  bool unkept = false;
  std::vector<Opt> plain = detail::hand_coded_opts(ast, machine, false, unkept);
  if (!machine.packs || std::any_of(plain.begin(), plain.end(), [](const Opt& o) { return o.op == OptOp::PACK; })) return plain;
  std::vector<Opt> padded = detail::hand_coded_opts(ast, machine, true, unkept);
  return unkept ? plain : padded;
}

}  // namespace codegen
}  // namespace tinyt::inline v0
