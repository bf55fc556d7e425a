// BEAM search over opt sequences: from the unoptimized kernel, each round tries every action on
// each of the `width` fastest kernels so far, times the candidates on the device and keeps the
// fastest; it stops when a round finds nothing faster. Timing is the caller's (a callback), so
// codegen knows nothing about devices.
#pragma once

#include <cmath>
#include <functional>
#include <set>
#include <sstream>

#include "opt.hpp"

namespace tinyt::inline v0 {
namespace codegen {

/// Every opt BEAM may try next: one per axis, kind and amount that might apply (PACK where
/// `packs`: on a CPU; TC, GROUP, GROUPTOP and STAGE elsewhere, on a GPU).
inline std::vector<Opt> beam_actions(int64_t threads, bool packs = false) {
  std::vector<Opt> out;
  for (int64_t axis = 0; axis < 8; ++axis) {
    if (packs) out.push_back({OptOp::PACK, axis, 0});
    if (!packs)
      for (int64_t kind : {0, 1}) out.push_back({OptOp::TC, axis, kind});  // (TF32's, timed only where TF32=1)
    if (!packs)
      for (int64_t amount : {16, 32, 64, 128, 256})
        for (OptOp op : {OptOp::GROUP, OptOp::GROUPTOP}) out.push_back({op, axis, amount});
    if (!packs)
      for (int64_t amount : {8, 16, 32}) out.push_back({OptOp::STAGE, axis, amount});
    for (int64_t amount : {2, 3, 4, 8, 16, 32}) out.push_back({OptOp::UPCAST, axis, amount});
    for (int64_t amount : {0, 2, 4, 8, 16}) out.push_back({OptOp::UNROLL, axis, amount});
    for (int64_t amount : {8, 16, 32, 64}) out.push_back({OptOp::LOCAL, axis, amount});
    for (int64_t amount : {16, 32}) out.push_back({OptOp::PADTO, axis, amount});
    if (threads > 1) out.push_back({OptOp::THREAD, axis, threads});
  }
  return out;
}

/// The opts BEAM found best for `ast`. `seconds(opts)` compiles and times the kernel with those
/// opts (infinity when it cannot run). A candidate expands to at most 256 registers.
inline std::vector<Opt> beam_search(const UOp& ast, int64_t width, int64_t threads, bool packs,
                                    const std::function<double(const std::vector<Opt>&)>& seconds) {
  struct Candidate {
    std::vector<Opt> opts;
    double time;
  };
  std::vector<Candidate> beam{{{}, seconds({})}};
  Candidate best = beam[0];
  std::set<const UOpNode*> seen{ast.get()};  // kernels already timed (opts in a different order)
  std::vector<UOp> keep{ast};
  for (int round = 0; round < 8; ++round) {
    std::vector<Candidate> next;
    for (const Candidate& c : beam) {
      const UOp base = apply_opts(ast, c.opts);
      for (const Opt& action : beam_actions(threads, packs)) {
        UOp k;
        try {
          k = apply_opt(base, action);
        } catch (const OptError&) {
          continue;
        }
        int64_t registers = 1;
        for (const UOp& r : all_ranges(k))
          if (range_kind(r) == RangeKind::upcast || range_kind(r) == RangeKind::unroll) registers *= range_size(r);
        if (registers > 256 || !seen.insert(k.get()).second) continue;
        keep.push_back(k);
        std::vector<Opt> opts = c.opts;
        opts.push_back(action);
        next.push_back({opts, seconds(opts)});
      }
    }
    std::sort(next.begin(), next.end(), [](const Candidate& a, const Candidate& b) { return a.time < b.time; });
    if (next.empty() || !(next[0].time < best.time)) break;
    best = next[0];
    next.resize(std::min<size_t>(next.size(), static_cast<size_t>(std::max<int64_t>(width, 1))));
    beam = std::move(next);
  }
  return best.opts;
}

/// Opts as text ("UPCAST 1 32;THREAD 0 2") and back, for the on-disk cache; empty on bad text.
inline std::string serialize(const std::vector<Opt>& opts) {
  std::string s;
  for (const Opt& o : opts) s += tinyt::detail::cat(static_cast<int>(o.op), " ", o.axis, " ", o.amount, ";");
  return s;
}
inline std::optional<std::vector<Opt>> deserialize_opts(const std::string& text) {
  std::vector<Opt> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ';');) {
    if (item.empty() || item == "\n") continue;
    std::istringstream fields(item);
    int op = -1;
    Opt o{};
    if (!(fields >> op >> o.axis >> o.amount) || op < 0 || op > static_cast<int>(OptOp::STAGE)) return std::nullopt;
    o.op = static_cast<OptOp>(op);
    out.push_back(o);
  }
  return out;
}

}  // namespace codegen
}  // namespace tinyt::inline v0
