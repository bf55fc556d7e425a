// Out-of-line parts of uop.hpp: the intern table, constants, builders, walks and printers.
#pragma once

#include <unordered_set>

#include "uop.hpp"

namespace tinyt::inline v0 {

TINYT_INLINE UOpNode::~UOpNode() { delete extra.load(std::memory_order_acquire); }

namespace detail {

// The intern table is sharded by hash so threads building different graphs rarely contend. Each
// shard chains its nodes through UOpNode::next_in_bucket, so interning allocates only the node.
struct InternShard {
  std::mutex mu;
  std::vector<UOpNode*> buckets = std::vector<UOpNode*>(64, nullptr);  // a power of two
  size_t count = 0;
  UOpNode*& bucket(size_t hash) { return buckets[(hash ^ (hash >> 29)) & (buckets.size() - 1)]; }
  void insert(UOpNode* n) {
    if (++count > buckets.size()) grow();
    UOpNode*& head = bucket(n->hash);
    n->next_in_bucket = head;
    head = n;
  }
  void erase(const UOpNode* n) {
    for (UOpNode** p = &bucket(n->hash); *p; p = &(*p)->next_in_bucket)
      if (*p == n) {
        *p = n->next_in_bucket;
        --count;
        return;
      }
  }
  void grow() {
    std::vector<UOpNode*> old(buckets.size() * 2, nullptr);
    old.swap(buckets);
    for (UOpNode* head : old)
      while (head) {
        UOpNode* next = head->next_in_bucket;
        UOpNode*& b = bucket(head->hash);
        head->next_in_bucket = b;
        b = head;
        head = next;
      }
  }
};
struct InternTable {
  static constexpr size_t shard_count = 64;
  InternShard shards[shard_count];
  InternShard& shard(size_t hash) { return shards[(hash >> 7) % shard_count]; }
};
// Never destroyed: UOps held by static objects may be released after any static destructor.
inline InternTable& intern_table() {
  static auto* table = new InternTable;
  return *table;
}

TINYT_INLINE size_t live_uop_count() {
  size_t n = 0;
  for (InternShard& s : intern_table().shards) {
    std::lock_guard lock(s.mu);
    n += s.count;
  }
  return n;
}

inline size_t node_hash(Ops op, DType dtype, const std::vector<UOp>& src, const Arg& arg) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(op);
  auto mix = [&h](uint64_t x) { h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(dtype.hash());
  mix(arg.hash());
  for (const UOp& s : src) mix(s->hash);
  return static_cast<size_t>(h);
}

// Takes a reference unless the node is already dying (count 0): a dying node is never revived.
inline bool try_acquire(const UOpNode* n) {
  uint32_t r = n->refs.load(std::memory_order_relaxed);
  while (r != 0)
    if (n->refs.compare_exchange_weak(r, r + 1, std::memory_order_acquire)) return true;
  return false;
}

TINYT_INLINE UOpNode* intern(Ops op, DType dtype, std::vector<UOp>&& src, Arg&& arg) {
  for (const UOp& s : src)
    if (!s) throw InternalError(detail::cat("UOp(", op_name(op), "): a source is the empty UOp"));
  const size_t h = node_hash(op, dtype, src, arg);
  InternShard& shard = intern_table().shard(h);
  std::lock_guard lock(shard.mu);
  for (UOpNode* n = shard.bucket(h); n; n = n->next_in_bucket)
    if (n->hash == h && n->op == op && n->dtype == dtype && n->src == src && n->arg == arg && try_acquire(n))
      return n;
  auto* n = new UOpNode{op, dtype, std::move(src), std::move(arg), h};
  shard.insert(n);
  return n;
}

// Frees a node whose count reached zero, and the sources that die with it, with a worklist
// instead of recursion so a 10^6-node chain is freed without overflowing the stack. The worklist
// lives on the stack of the outermost release of this thread; a release it causes (a node's arg
// holding UOps) adds to it. No thread_local object with a destructor: a static UOp released at
// exit runs after the main thread's thread_locals are destroyed.
TINYT_INLINE void release(const UOpNode* node) {
  if (node->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  thread_local std::vector<UOpNode*>* draining = nullptr;
  if (draining) {
    draining->push_back(const_cast<UOpNode*>(node));
    return;
  }
  std::vector<UOpNode*> dying{const_cast<UOpNode*>(node)};
  draining = &dying;
  while (!dying.empty()) {
    UOpNode* d = dying.back();
    dying.pop_back();
    {
      InternShard& shard = intern_table().shard(d->hash);
      std::lock_guard lock(shard.mu);
      shard.erase(d);
    }
    for (UOp& s : d->src) {
      const UOpNode* c = std::exchange(s.n_, nullptr);
      if (c->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
        dying.push_back(const_cast<UOpNode*>(c));
    }
    delete d;
  }
  draining = nullptr;
}

inline size_t arity(Ops op) {
  switch (op_kind(op)) {
    case OpKind::unary:
    case OpKind::cast:
      return 1;
    case OpKind::binary:
      return 2;
    case OpKind::ternary:
      return 3;
    default:
      return 0;
  }
}
}  // namespace detail

// -- constants --------------------------------------------------------------------------------

TINYT_INLINE UOp UOp::const_(DType dt, i128 v) {
  const DType s = dt.scalar();
  if (dt.is_ptr() || s.is_void())
    throw DTypeError(detail::cat("UOp.const: no constants of ", dt.name()));
  if (s.is_float()) return const_(dt, static_cast<double>(v));
  if (s.is_bool()) return UOp(Ops::CONST, dt, {}, Arg(v != 0));
  if (s.is_index() && (v < dtypes::min_int(s) || v > dtypes::max_int(s)))
    throw InternalError("UOp.const: index constant out of the int64 range");
  // uint64 values above INT64_MAX are kept as their two's complement bits; const_int reads them
  // back
  return UOp(Ops::CONST, dt, {}, Arg(static_cast<int64_t>(static_cast<uint64_t>(wrap_int(v, s)))));
}

TINYT_INLINE UOp UOp::const_(DType dt, double v) {
  const DType s = dt.scalar();
  if (dt.is_ptr() || s.is_void())
    throw DTypeError(detail::cat("UOp.const: no constants of ", dt.name()));
  if (s.is_float()) return UOp(Ops::CONST, dt, {}, Arg(round_float(v, s)));
  if (s.is_bool()) return UOp(Ops::CONST, dt, {}, Arg(v != 0));
  // float -> int truncates toward zero like C; NaN and values past 2^126 have no C meaning
  if (!(std::fabs(v) < 0x1p126))
    throw DTypeError(detail::cat("UOp.const: ", v, " does not convert to ", dt.name()));
  return const_(dt, static_cast<i128>(std::trunc(v)));
}

TINYT_INLINE i128 UOp::const_int() const {
  if (op() != Ops::CONST)
    throw InternalError(detail::cat("const_int of a non-constant ", op_name(op())));
  if (arg().is<bool>()) return arg().get<bool>();
  if (!arg().is<int64_t>())
    throw InternalError(detail::cat("const_int of the float constant ", arg()));
  const int64_t x = arg().as_int();
  return dtype().scalar() == dtypes::uint64 ? static_cast<i128>(static_cast<uint64_t>(x)) : x;
}

TINYT_INLINE double UOp::const_float() const {
  if (op() == Ops::CONST && arg().is<double>()) return arg().get<double>();
  return static_cast<double>(const_int());
}

TINYT_INLINE UOp UOp::variable(const std::string& name, int64_t min, int64_t max, DType dtype) {
  if (min > max)
    throw Error(detail::cat("Variable('", name, "', ", min, ", ", max, "): min > max"));
  if (!dtype.is_int())
    throw DTypeError(
        detail::cat("Variable('", name, "'): ", dtype.name(), " is not an integer dtype"));
  return UOp(Ops::DEFINE_VAR, dtype, {}, Arg{name, min, max});
}

TINYT_INLINE UOp UOp::bind(int64_t value) const {
  if (op() != Ops::DEFINE_VAR)
    throw Error(detail::cat("bind: ", op_name(op()), " is not a Variable"));
  if (value < arg()[1].as_int() || value > arg()[2].as_int())
    throw IndexError(detail::cat("bind: ", value, " is outside the range [", arg()[1].as_int(),
                                 ", ", arg()[2].as_int(), "] of Variable '",
                                 arg()[0].get<std::string>(), "'"));
  return UOp(Ops::BIND, dtype(), {*this, const_like(value)});
}

// -- math builders ----------------------------------------------------------------------------

TINYT_INLINE UOp UOp::alu(Ops op, std::vector<UOp> others) const {
  std::vector<UOp> src{*this};
  src.insert(src.end(), others.begin(), others.end());
  if (detail::arity(op) != src.size())
    throw InternalError(detail::cat("alu: ", op_name(op), " takes ", detail::arity(op),
                                    " sources, got ", src.size()));
  DType out = dtype();
  if (op == Ops::WHERE) {
    if (!src[0].dtype().scalar().is_bool())
      throw DTypeError(
          detail::cat("where: the condition is ", src[0].dtype().name(), ", not bool"));
    if (src[1].dtype() != src[2].dtype())
      throw DTypeError(detail::cat("where: branches differ, ", src[1].dtype().name(), " vs ",
                                   src[2].dtype().name()));
    out = src[1].dtype();
  } else {
    for (const UOp& s : src)
      if (s.dtype() != dtype())
        throw DTypeError(detail::cat(op_name(op), ": operands differ, ", dtype().name(), " vs ",
                                     s.dtype().name()));
    if (GroupOp::Comparison.contains(op)) out = DType(dtypes::bool_).vec(dtype().count());
  }
  return UOp(op, out, std::move(src));
}

// -- graph walks ------------------------------------------------------------------------------

TINYT_INLINE std::vector<UOp> toposort(const UOp& root) {
  std::vector<UOp> order;
  if (!root) return order;
  // handles point into their users' src vectors, which live as long as root does
  std::unordered_set<const UOpNode*> seen{root.get()};
  std::vector<std::pair<const UOp*, size_t>> stack{{&root, 0}};
  while (!stack.empty()) {
    auto& [u, next] = stack.back();
    if (next < u->get()->src.size()) {
      const UOp* s = &(*u)->src[next++];
      if (seen.insert(s->get()).second) stack.emplace_back(s, 0);
    } else {
      order.push_back(*u);
      stack.pop_back();
    }
  }
  return order;
}

TINYT_INLINE bool depends_on(const UOp& root, const UOp& node) {
  for (const UOp& x : toposort(root))
    if (x == node) return true;
  return false;
}

TINYT_INLINE UOp substitute(const UOp& root, const std::unordered_map<const UOpNode*, UOp>& map) {
  std::unordered_map<const UOpNode*, UOp> done;
  for (const UOp& u : toposort(root)) {
    if (auto it = map.find(u.get()); it != map.end()) {
      done[u.get()] = it->second;
      continue;
    }
    std::vector<UOp> src;
    bool changed = false;
    for (const UOp& s : u.src()) {
      src.push_back(done.at(s.get()));
      changed |= !(src.back() == s);
    }
    done[u.get()] = changed ? u.replace(std::move(src)) : u;
  }
  return done.at(root.get());
}

TINYT_INLINE std::string to_string(const UOp& root) {
  std::unordered_map<const UOpNode*, size_t> id;
  std::ostringstream out;
  for (const UOp& u : toposort(root)) {
    id[u.get()] = id.size();
    std::string line = detail::cat(std::string(id[u.get()] < 10    ? "  "
                                               : id[u.get()] < 100 ? " "
                                                                   : ""),
                                   id[u.get()], " ", op_name(u.op()));
    line.resize(std::max<size_t>(line.size(), 20), ' ');
    line += ": " + u.dtype().name();
    line.resize(std::max<size_t>(line.size(), 38), ' ');
    std::string srcs = "[";
    for (size_t i = 0; i < u.src().size(); ++i)
      srcs += (i ? ", " : "") + std::to_string(id.at(u.src(i).get()));
    out << line << srcs << "]  " << u.arg() << '\n';
  }
  return out.str();
}

namespace detail {
inline const char* infix_symbol(Ops op) {
  switch (op) {
    case Ops::ADD:
      return "+";
    case Ops::MUL:
      return "*";
    case Ops::IDIV:
      return "//";
    case Ops::FDIV:
      return "/";
    case Ops::MOD:
      return "%";
    case Ops::CMPLT:
      return "<";
    case Ops::CMPNE:
      return "!=";
    case Ops::CMPEQ:
      return "==";
    case Ops::AND:
      return "&";
    case Ops::OR:
      return "|";
    case Ops::XOR:
      return "^";
    case Ops::SHL:
      return "<<";
    case Ops::SHR:
      return ">>";
    case Ops::SUB:
      return "-";
    default:
      return nullptr;
  }
}
}  // namespace detail

TINYT_INLINE std::string expr_string(const UOp& root) {
  if (!root) return "UOp()";
  std::unordered_map<const UOpNode*, std::string> text;
  for (const UOp& u : toposort(root)) {
    std::vector<const std::string*> s;
    for (const UOp& x : u.src()) s.push_back(&text.at(x.get()));
    std::string& t = text[u.get()];
    if (u.op() == Ops::CONST)
      t = u.arg().is<int64_t>() ? detail::cat(static_cast<long long>(u.const_int()))
                                : detail::cat(u.arg());
    else if (u.op() == Ops::DEFINE_VAR)
      t = u.arg()[0].get<std::string>();
    else if (u.op() == Ops::BIND && u.src(1).is_const())  // a bound variable: "i=7"
      t = detail::cat(*s[0], "=", static_cast<long long>(u.src(1).const_int()));
    else if (u.op() == Ops::RANGE)
      t = detail::cat("r", u.arg().is<Arg::Tuple>() ? u.arg()[0] : u.arg());
    else if (const char* sym = detail::infix_symbol(u.op()); sym && s.size() == 2)
      t = "(" + *s[0] + sym + *s[1] + ")";
    else if (u.op() == Ops::CAST)
      t = detail::cat("(", u.dtype().name(), ")", *s[0]);
    else {
      t = u.op() == Ops::MAX ? "max(" : std::string(op_name(u.op())) + "(";
      for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + *s[i];
      if (!u.arg().is_none() && s.empty()) t += detail::cat(u.arg());
      t += ")";
    }
  }
  return text.at(root.get());
}

namespace detail {
TINYT_INLINE std::string text_of_node(const UOpNode* n) { return expr_string(UOp(n)); }

inline int structural_compare(const UOp& a, const UOp& b, int depth) {
  if (a == b) return 0;
  if (a.op() != b.op()) return a.op() < b.op() ? -1 : 1;
  if (a.dtype() != b.dtype()) return a.dtype() < b.dtype() ? -1 : 1;
  if (!(a.arg() == b.arg())) return a.arg() < b.arg() ? -1 : 1;
  if (a.src().size() != b.src().size()) return a.src().size() < b.src().size() ? -1 : 1;
  if (depth > 32)
    return a->hash != b->hash ? (a->hash < b->hash ? -1 : 1) : (a.get() < b.get() ? -1 : 1);
  for (size_t i = 0; i < a.src().size(); ++i)
    if (int c = structural_compare(a.src(i), b.src(i), depth + 1)) return c;
  return 0;
}
}  // namespace detail

TINYT_INLINE bool structural_less(const UOp& a, const UOp& b) {
  return detail::structural_compare(a, b, 0) < 0;
}

}  // namespace tinyt::inline v0
