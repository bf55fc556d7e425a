// What a kernel costs, estimated once from its linearized program (as tinygrad's Estimates):
// the arithmetic it does, the memory it touches, and the bytes its loads and stores move. The
// engine adds them to GlobalCounters at each launch and prints them at DEBUG>=2 as rates.
//
// What counts, exactly:
// - ops: every ALU op (unary, binary, ternary) once per lane, times the trip counts of the loops
//   around it (a thread loop counts its whole size: the threads together run all of it); MULACC
//   counts 2. Address and mask arithmetic (what an INDEX's address and gate are computed from)
//   is not counted, nor casts, loads and stores: a matmul is 2*M*N*K, an elementwise add one op
//   per element. The transcendental decompositions count as the ops they became.
// - mem: for each buffer, the bytes of the span of elements the kernel can address in it (from
//   the bounds of its index, clipped to the buffer), once for its loads and once for its stores:
//   a matmul is the sizes of A, B and C; a buffer read and written in place counts twice; a
//   broadcast input counts once, not once per use.
// - lds: the bytes of every load and store of a buffer, times the trip counts around it (the
//   traffic the kernel asks of its caches; a matmul reads A and B N and M times over).
#pragma once

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>
#include <unordered_set>

#include "../codegen/linearize.hpp"

namespace tinyt::inline v0 {
namespace engine {

/// A kernel's work: ops (flops and integer ops), mem (bytes of the buffers it touches), lds
/// (bytes its loads and stores move).
struct Estimates {
  int64_t ops = 0, mem = 0, lds = 0;
};

namespace detail {
// The nodes an address or a mask is computed from: arithmetic there is indexing, not work.
inline std::unordered_set<const UOpNode*> indexing_nodes(const std::vector<UOp>& ops) {
  std::unordered_set<const UOpNode*> seen;
  std::vector<UOp> stack;
  for (const UOp& u : ops) {
    if (u.op() == Ops::INDEX)
      for (size_t i = 1; i < u.src().size(); ++i) stack.push_back(u.src(i));
    if (u.op() == Ops::IF) stack.push_back(u.src(0));
  }
  while (!stack.empty()) {
    UOp u = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(u.get()).second) continue;
    for (const UOp& s : u.src()) stack.push_back(s);
  }
  return seen;
}
inline bool is_alu(Ops op) {
  const OpKind k = op_kind(op);
  return k == OpKind::unary || k == OpKind::binary || k == OpKind::ternary;
}
}  // namespace detail

/// The estimates of a linearized program.
inline Estimates estimate(const codegen::Program& p) {
  Estimates e;
  const std::unordered_set<const UOpNode*> indexing = detail::indexing_nodes(p.ops);
  int64_t mult = 1;
  std::vector<int64_t> outer;  // the multiplier outside each open loop
  // (global, is store) -> the lowest and highest element addressed
  std::map<std::pair<int64_t, bool>, std::pair<i128, i128>> spans;
  std::map<int64_t, int64_t> sizes;  // global -> its elements
  for (const UOp& u : p.ops) {
    if (u.op() == Ops::RANGE) {
      outer.push_back(mult);
      mult *= codegen::range_size(u);
    } else if (u.op() == Ops::END) {
      mult = outer.back();
      outer.pop_back();
    } else if (u.op() == Ops::LOAD || u.op() == Ops::STORE) {
      const UOp& idx = u.src(0);
      if (idx.op() != Ops::INDEX || idx.src(0).op() != Ops::DEFINE_GLOBAL) continue;  // a register
      const DType value = u.op() == Ops::LOAD ? u.dtype() : u.src(1).dtype();
      e.lds += mult * value.itemsize();  // (a vector's itemsize is all of its lanes')
      const UOp& g = idx.src(0);
      const int64_t n = g.arg().as_int();
      sizes[n] = g.dtype().size();
      const bool scalar_address = idx.src(1).dtype().count() == 1;  // else: the whole buffer
      const i128 lo = scalar_address ? vmin(idx.src(1)) : 0;
      const i128 hi = scalar_address ? vmax(idx.src(1)) + value.count() - 1 : g.dtype().size() - 1;
      auto [it, fresh] = spans.try_emplace({n, u.op() == Ops::STORE}, lo, hi);
      if (!fresh) it->second = {std::min(it->second.first, lo), std::max(it->second.second, hi)};
    } else if (u.op() == Ops::WMMA) {  // each lane's share of its warp's multiply-accumulate
      const TensorCore* tc = tensor_core_of(u.arg().get<std::string>());
      if (tc) e.ops += mult * 2 * tc->m * tc->n * tc->k / TensorCore::warp;
    } else if (detail::is_alu(u.op()) && !indexing.count(u.get())) {
      e.ops += mult * (u.op() == Ops::MULACC ? 2 : 1) * u.dtype().count();
    }
  }
  for (const auto& [key, span] : spans) {
    const DType dt = p.globals.at(static_cast<size_t>(key.first)).base();
    const i128 size = sizes.at(key.first);
    const i128 elements = std::min(size, std::min(span.second, size - 1) - std::max<i128>(span.first, 0) + 1);
    e.mem += static_cast<int64_t>(std::max<i128>(elements, 0)) * dt.itemsize();
  }
  return e;
}

/// The DEBUG>=2 line of a launch, as tinygrad prints it: device, kernel number, name, buffers,
/// memory in use; its time and the running total; then GFLOPS and GB/s (mem|lds) at that time.
inline std::string kernel_line(const std::string& device, int64_t number, const std::string& name, size_t buffers,
                               const Estimates& e, double seconds) {
  const double t = std::max(seconds, 1e-20) * 1e9;
  std::ostringstream os;
  os << std::fixed << "*** " << std::left << std::setw(7) << device.substr(0, 7) << std::right << std::setw(5) << number
     << " " << std::left << std::setw(46) << name << std::right << " arg " << std::setw(2) << buffers << " mem "
     << std::setprecision(2) << std::setw(6) << static_cast<double>(GlobalCounters::mem_used.load()) / 1e9 << " GB tm "
     << std::setw(9) << seconds * 1e6 << "us/" << std::setw(9) << GlobalCounters::time_sum_s.load() * 1e3 << "ms ("
     << std::setw(9) << static_cast<double>(e.ops) / t << " GFLOPS " << std::setprecision(1) << std::setw(6)
     << static_cast<double>(e.mem) / t << "|" << std::left << std::setw(7) << static_cast<double>(e.lds) / t << " GB/s)";
  return os.str();
}

}  // namespace engine
}  // namespace tinyt::inline v0
