// Linearizing a kernel: its AST (a DAG over RANGEs) becomes a flat list of UOps in program
// order, with loops opened (RANGE) and closed (END), and each REDUCE turned into an accumulator
// (DEFINE_REG) that is initialized before its loops, updated inside, and read after them.
#pragma once

#include <unordered_map>

#include "../schedule/lower.hpp"

namespace tinyt::inline v0 {
namespace codegen {

/// A linearized kernel: ops in program order; every source of an op comes earlier in the list.
struct Program {
  std::string name;
  std::vector<UOp> ops;
  std::vector<DType> globals;  // pointer dtypes of the DEFINE_GLOBALs, by index
};

namespace detail {
inline UOp identity_element(Ops op, DType dt) {
  switch (op) {
    case Ops::ADD: return UOp::const_(dt, 0);
    case Ops::MUL: return UOp::const_(dt, 1);
    case Ops::MAX:
      if (dt.scalar().is_float()) return UOp::const_(dt, -INFINITY);
      return UOp::const_(dt, dtypes::min_int(dt));
    default: throw InternalError(tinyt::detail::cat("no identity element for reduce op ", op_name(op)));
  }
}

// The RANGEs a value depends on and that are still open where it is used.
inline std::vector<UOp> free_ranges(const UOp& root) {
  std::unordered_map<const UOpNode*, std::vector<UOp>> free;
  for (const UOp& u : toposort(root)) {
    std::vector<UOp> r;
    if (u.op() == Ops::RANGE) r.push_back(u);
    for (size_t i = 0; i < u.src().size(); ++i) {
      if (u.op() == Ops::REDUCE && i > 0) break;
      for (const UOp& x : free.at(u.src(i).get()))
        if (std::find(r.begin(), r.end(), x) == r.end()) r.push_back(x);
    }
    if (u.op() == Ops::REDUCE)
      std::erase_if(r, [&](const UOp& x) { return std::find(u.src().begin() + 1, u.src().end(), x) != u.src().end(); });
    free[u.get()] = std::move(r);
  }
  std::vector<UOp> out = free.at(root.get());
  std::sort(out.begin(), out.end(), [](const UOp& a, const UOp& b) { return a.arg()[0].as_int() < b.arg()[0].as_int(); });
  return out;
}

class Linearizer {
 public:
  std::vector<UOp> ops;

  void emit_store(const UOp& store) {
    const std::vector<UOp> loops = free_ranges(store);
    for (const UOp& r : loops) open(r);
    emit(store);
    for (auto it = loops.rbegin(); it != loops.rend(); ++it) close(*it, ops.back());
  }

 private:
  std::vector<std::unordered_map<const UOpNode*, UOp>> scopes_{1};
  int64_t accumulators_ = 0;

  UOp push(UOp u) {
    ops.push_back(u);
    return u;
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
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->find(u.get()); f != it->end()) return f->second;
    UOp out;
    if (u.op() == Ops::RANGE) throw InternalError("linearize: a RANGE is used outside its loop");
    if (u.op() == Ops::REDUCE) out = emit_reduce(u);
    else {
      std::vector<UOp> src;
      for (const UOp& s : u.src()) src.push_back(emit(s));
      out = push(u.replace(std::move(src)));
    }
    scopes_.back()[u.get()] = out;
    return out;
  }

  // acc = identity; for (ranges) acc = acc <op> value; then the value is acc
  UOp emit_reduce(const UOp& u) {
    const Ops op = u.arg().get<Ops>();
    UOp acc = push(UOp(Ops::DEFINE_REG, u.dtype().ptr(1, AddrSpace::reg), {}, accumulators_++));
    UOp slot = push(UOp(Ops::INDEX, acc.dtype(), {acc, schedule::index_const(0)}));
    UOp last = push(UOp(Ops::STORE, dtypes::void_, {slot, push(identity_element(op, u.dtype()))}));
    std::vector<UOp> ranges(u.src().begin() + 1, u.src().end());
    for (const UOp& r : ranges) open(r);
    UOp value = emit(u.src(0));
    // the loads carry what they must come after, so the in-loop and the final read differ
    UOp current = push(UOp(Ops::LOAD, u.dtype(), {slot, ranges.back()}));
    last = push(UOp(Ops::STORE, dtypes::void_, {slot, push(current.alu(op, {value}))}));
    for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) last = close(*it, last);
    return push(UOp(Ops::LOAD, u.dtype(), {slot, last}));
  }
};
}  // namespace detail

/// The program of a kernel AST (a SINK of STOREs).
inline Program linearize(const UOp& ast, std::string name) {
  TINYT_ASSERT(ast.op() == Ops::SINK, "linearize takes a SINK, not ", op_name(ast.op()));
  detail::Linearizer lin;
  for (const UOp& store : ast.src()) lin.emit_store(store);
  Program p{std::move(name), std::move(lin.ops), {}};
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::DEFINE_GLOBAL) {
      const auto i = static_cast<size_t>(u.arg().as_int());
      if (p.globals.size() <= i) p.globals.resize(i + 1);
      p.globals[i] = u.dtype();
    }
  return p;
}

}  // namespace codegen
}  // namespace tinyt::inline v0
