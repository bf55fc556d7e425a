// The IR: one generic, immutable, hash-consed node, UOp(op, dtype, src, arg).
//
// Structurally equal UOps are the same object (interning), so equality is pointer equality and
// a graph can be used as a cache key. Nodes are reference counted and freed, without recursion,
// when the last handle goes away.
#pragma once

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "dtype.hpp"
#include "error.hpp"

namespace tinyt::inline v0 {

// clang-format off
/// Every op, with its kind. The order matters: it is the order of operands in canonical forms
/// (constants last). Adding an op is one line here plus the rules that give it meaning.
#define TINYT_FOR_EACH_OP(X)                                                                      \
  /* graph structure (never rendered) */                                                          \
  X(SINK, meta) X(NOOP, meta) X(GROUP, meta) X(AFTER, meta) X(UNIQUE, meta) X(DEVICE, meta)       \
  X(KERNEL, meta) X(CUSTOM, meta)                                                                 \
  /* on several devices: MULTI(shards) arg=axis (-1: replicated); MSELECT(x) arg=shard */         \
  X(MULTI, meta) X(MSELECT, meta)                                                                 \
  /* buffers and what steers the scheduler */                                                     \
  X(BUFFER, buffer) X(BUFFER_VIEW, buffer) X(COPY, buffer) X(CONTIGUOUS, buffer)                  \
  X(CONTIGUOUS_BACKWARD, buffer) X(DETACH, buffer) X(ASSIGN, buffer)                              \
  X(ALLREDUCE, buffer)                                                                            \
  /* movement: views, never copies */                                                             \
  X(RESHAPE, movement) X(PERMUTE, movement) X(EXPAND, movement) X(PAD, movement)                  \
  X(SHRINK, movement) X(FLIP, movement)                                                           \
  /* kernel parameters and variables */                                                           \
  X(DEFINE_GLOBAL, define) X(DEFINE_LOCAL, define) X(DEFINE_REG, define) X(DEFINE_VAR, define)    \
  X(BIND, define) X(SPECIAL, define)                                                              \
  /* reductions */                                                                                \
  X(REDUCE_AXIS, reduce) X(REDUCE, reduce)                                                        \
  /* vectors */                                                                                   \
  X(UNROLL, vector) X(CONTRACT, vector) X(GEP, vector) X(VECTORIZE, vector)                       \
  /* conversions */                                                                               \
  X(CAST, cast) X(BITCAST, cast)                                                                  \
  /* unary math */                                                                                \
  X(EXP2, unary) X(LOG2, unary) X(SIN, unary) X(SQRT, unary) X(RECIPROCAL, unary) X(NEG, unary)   \
  X(TRUNC, unary)                                                                                 \
  /* memory */                                                                                    \
  X(INDEX, memory) X(LOAD, memory) X(STORE, memory) X(WMMA, memory) \
  /* LDMATRIX(INDEX(local, row address)) arg="n[ trans]": a warp's tensor-core fragments (codegen/ldmatrix.hpp) */ \
  X(LDMATRIX, memory)                                                                             \
  /* SHFL_XOR(x) arg=mask: x of the work-item whose lane in the warp is this one's xor mask */ \
  X(SHFL_XOR, memory)                               \
  /* binary math */                                                                               \
  X(ADD, binary) X(MUL, binary) X(SHL, binary) X(SHR, binary) X(IDIV, binary) X(MAX, binary)      \
  X(MOD, binary) X(CMPLT, binary) X(CMPNE, binary) X(CMPEQ, binary) X(XOR, binary) X(OR, binary)  \
  X(AND, binary) X(THREEFRY, binary) X(SUB, binary) X(FDIV, binary) X(POW, binary)                \
  /* ternary math */                                                                              \
  X(WHERE, ternary) X(MULACC, ternary)                                                            \
  /* control flow */                                                                              \
  X(BARRIER, control) X(RANGE, control) X(IF, control) X(ENDIF, control) X(END, control)          \
  /* constants */                                                                                 \
  X(VCONST, constant) X(CONST, constant)
// clang-format on

/// The op of a UOp.
enum class Ops : uint8_t {
#define TINYT_OP_ENUM(name, kind) name,
  TINYT_FOR_EACH_OP(TINYT_OP_ENUM)
#undef TINYT_OP_ENUM
};

/// The kind of an op: which group of TINYT_FOR_EACH_OP it is listed in.
// clang-format off
enum class OpKind : uint8_t {
  meta, buffer, movement, define, reduce, vector, cast, unary, memory, binary, ternary, control, constant
};
// clang-format on

namespace detail {
#define TINYT_OP_NAME(name, kind) #name,
inline constexpr const char* op_names[] = {TINYT_FOR_EACH_OP(TINYT_OP_NAME)};
#undef TINYT_OP_NAME
#define TINYT_OP_KIND(name, kind) OpKind::kind,
inline constexpr OpKind op_kinds[] = {TINYT_FOR_EACH_OP(TINYT_OP_KIND)};
#undef TINYT_OP_KIND
}  // namespace detail

inline constexpr size_t op_count = std::size(detail::op_names);
static_assert(op_count <= 128, "OpSet holds at most 128 ops");

/// The name of an op ("ADD").
constexpr const char* op_name(Ops op) { return detail::op_names[static_cast<size_t>(op)]; }
constexpr OpKind op_kind(Ops op) { return detail::op_kinds[static_cast<size_t>(op)]; }
inline std::ostream& operator<<(std::ostream& os, Ops op) { return os << "Ops." << op_name(op); }

/// A set of ops, as a 128-bit mask.
struct OpSet {
  uint64_t bits[2] = {0, 0};
  constexpr OpSet() = default;
  constexpr OpSet(std::initializer_list<Ops> ops) {
    for (Ops op : ops)
      bits[static_cast<size_t>(op) / 64] |= uint64_t{1} << (static_cast<size_t>(op) % 64);
  }
  constexpr bool contains(Ops op) const {
    return (bits[static_cast<size_t>(op) / 64] >> (static_cast<size_t>(op) % 64)) & 1;
  }
  constexpr bool empty() const { return bits[0] == 0 && bits[1] == 0; }
  friend constexpr OpSet operator|(OpSet a, OpSet b) {
    a.bits[0] |= b.bits[0], a.bits[1] |= b.bits[1];
    return a;
  }
  friend constexpr bool operator==(const OpSet&, const OpSet&) = default;
  template <class F> void for_each(F&& f) const {
    for (size_t i = 0; i < op_count; ++i)
      if (contains(static_cast<Ops>(i))) f(static_cast<Ops>(i));
  }
};

/// Named groups of ops, as in tinygrad's GroupOp.
namespace GroupOp {
namespace detail {
constexpr OpSet of_kind(OpKind k) {
  OpSet s;
  for (size_t i = 0; i < op_count; ++i)
    if (tinyt::detail::op_kinds[i] == k) s.bits[i / 64] |= uint64_t{1} << (i % 64);
  return s;
}
}  // namespace detail
inline constexpr OpSet Unary = detail::of_kind(OpKind::unary);
inline constexpr OpSet Binary = detail::of_kind(OpKind::binary);
inline constexpr OpSet Ternary = detail::of_kind(OpKind::ternary);
inline constexpr OpSet ALU = Unary | Binary | Ternary;
inline constexpr OpSet Movement = detail::of_kind(OpKind::movement);
inline constexpr OpSet Buffer = detail::of_kind(OpKind::buffer);
inline constexpr OpSet Commutative{Ops::ADD,   Ops::MUL, Ops::MAX, Ops::CMPNE,
                                   Ops::CMPEQ, Ops::XOR, Ops::AND, Ops::OR};
inline constexpr OpSet Associative{Ops::ADD, Ops::MUL, Ops::AND, Ops::OR, Ops::MAX};
inline constexpr OpSet Comparison{Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ};
/// Ops whose result is wrong, not just different, when their input is garbage (a masked load):
/// they must not run on values a pad or where masks away.
inline constexpr OpSet UnsafePad{Ops::RECIPROCAL, Ops::LOG2, Ops::EXP2, Ops::IDIV, Ops::POW};
/// Ops a CPU computes as a polynomial or a library call, a dozen instructions or more.
inline constexpr OpSet Transcendental{Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::POW};
}  // namespace GroupOp

struct UOpNode;
class UOp;
namespace detail {
void release(const UOpNode* n);
void acquire_node(const UOpNode* n);
size_t hash_of_node(const UOpNode* n);
std::string text_of_node(const UOpNode* n);
}  // namespace detail

/// A UOp inside an arg, held by reference: a symbolic size in a movement op's arg. Equal when it
/// is the same (interned) node; hashed by the node's structural hash, so the same in every run.
class ArgUOp {
 public:
  explicit ArgUOp(const UOpNode* n) : n_(n) {
    if (n_) detail::acquire_node(n_);
  }
  ArgUOp(const ArgUOp& o) : n_(o.n_) {
    if (n_) detail::acquire_node(n_);
  }
  ArgUOp& operator=(const ArgUOp& o) {
    ArgUOp copy(o);
    std::swap(n_, copy.n_);
    return *this;
  }
  ~ArgUOp() {
    if (n_) detail::release(n_);
  }
  const UOpNode* node() const { return n_; }
  friend bool operator==(const ArgUOp& a, const ArgUOp& b) { return a.n_ == b.n_; }
  friend bool operator<(const ArgUOp& a, const ArgUOp& b) {
    const size_t ha = detail::hash_of_node(a.n_), hb = detail::hash_of_node(b.n_);
    return ha != hb ? ha < hb : std::less<const UOpNode*>()(a.n_, b.n_);
  }

 private:
  const UOpNode* n_;
};

/// The arg of a UOp: like a Python value in tinygrad (None, bool, int, float, str, an op, or a
/// tuple of these). Hashable, comparable, printable; floats compare by bits so NaN == NaN.
class Arg {
 public:
  using Tuple = std::vector<Arg>;
  using Value = std::variant<std::monostate, bool, int64_t, double, std::string, Ops, Tuple, ArgUOp>;

  Arg() = default;
  Arg(bool b) : v_(b) {}  // NOLINT
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  Arg(I i) : v_(static_cast<int64_t>(i)) {}            // NOLINT
  Arg(double d) : v_(d) {}                             // NOLINT
  Arg(std::string s) : v_(std::move(s)) {}             // NOLINT
  Arg(const char* s) : v_(std::string(s)) {}           // NOLINT
  Arg(Ops op) : v_(op) {}                              // NOLINT
  Arg(Tuple t) : v_(std::move(t)) {}                   // NOLINT
  Arg(std::initializer_list<Arg> t) : v_(Tuple(t)) {}  // NOLINT
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  Arg(const std::vector<I>& v) : v_(Tuple(v.begin(), v.end())) {}  // NOLINT
  /// A UOp (a symbolic size).
  Arg(const UOp& u);  // NOLINT

  bool is_uop() const { return std::holds_alternative<ArgUOp>(v_); }
  /// The UOp held (is_uop()).
  UOp uop() const;

  bool is_none() const { return std::holds_alternative<std::monostate>(v_); }
  template <class T> bool is() const { return std::holds_alternative<T>(v_); }
  template <class T> const T& get() const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    throw InternalError(detail::cat("Arg: ", *this, " does not hold the requested type"));
  }
  int64_t as_int() const { return get<int64_t>(); }
  const Tuple& tuple() const { return get<Tuple>(); }
  const Arg& operator[](size_t i) const {
    const Tuple& t = tuple();
    if (i >= t.size())
      throw InternalError(detail::cat("Arg: index ", i, " out of range in ", *this));
    return t[i];
  }
  size_t size() const { return tuple().size(); }
  /// A tuple of ints as a vector.
  std::vector<int64_t> ints() const {
    std::vector<int64_t> out;
    for (const Arg& a : tuple()) out.push_back(a.as_int());
    return out;
  }
  const Value& value() const { return v_; }

  friend bool operator==(const Arg& a, const Arg& b) {
    if (a.v_.index() != b.v_.index()) return false;
    if (auto* d = std::get_if<double>(&a.v_))
      return std::bit_cast<uint64_t>(*d) == std::bit_cast<uint64_t>(std::get<double>(b.v_));
    return a.v_ == b.v_;
  }
  friend bool operator<(const Arg& a, const Arg& b) {
    if (a.v_.index() != b.v_.index()) return a.v_.index() < b.v_.index();
    if (auto* d = std::get_if<double>(&a.v_)) {
      double x = *d, y = std::get<double>(b.v_);
      if (x < y || y < x) return x < y;
      return std::bit_cast<uint64_t>(x) < std::bit_cast<uint64_t>(y);  // NaN and signed zeros
    }
    if (auto* t = std::get_if<Tuple>(&a.v_))
      return std::lexicographical_compare(t->begin(), t->end(), std::get<Tuple>(b.v_).begin(),
                                          std::get<Tuple>(b.v_).end());
    return a.v_ < b.v_;
  }

  /// A deterministic hash (the same in every run, so it can key caches on disk).
  size_t hash() const {
    uint64_t h = 0xcbf29ce484222325ULL ^ v_.index();
    auto mix = [&h](uint64_t x) {
      h = (h ^ x) * 0x100000001b3ULL;
      h ^= h >> 29;
    };
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int64_t>)
            mix(static_cast<uint64_t>(x));
          else if constexpr (std::is_same_v<T, double>)
            mix(std::bit_cast<uint64_t>(x));
          else if constexpr (std::is_same_v<T, Ops>)
            mix(static_cast<uint64_t>(x));
          else if constexpr (std::is_same_v<T, std::string>)
            for (char c : x) mix(static_cast<uint8_t>(c));
          else if constexpr (std::is_same_v<T, Tuple>)
            for (const Arg& a : x) mix(a.hash());
          else if constexpr (std::is_same_v<T, ArgUOp>)
            mix(detail::hash_of_node(x.node()));
        },
        v_);
    return static_cast<size_t>(h);
  }

  friend std::ostream& operator<<(std::ostream& os, const Arg& a) {
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::monostate>)
            os << "None";
          else if constexpr (std::is_same_v<T, bool>)
            os << (x ? "True" : "False");
          else if constexpr (std::is_same_v<T, double>)
            os << format_double(x);
          else if constexpr (std::is_same_v<T, std::string>)
            os << '\'' << x << '\'';
          else if constexpr (std::is_same_v<T, Tuple>) {
            os << '(';
            for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
            os << (x.size() == 1 ? ",)" : ")");
          } else if constexpr (std::is_same_v<T, ArgUOp>)
            os << detail::text_of_node(x.node());
          else
            os << x;
        },
        a.v_);
    return os;
  }

  /// The shortest text that reads back as the same double ("inf", "nan" as Python spells them).
  static std::string format_double(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    char buf[32];
    auto res = std::to_chars(buf, buf + sizeof buf, d);
    std::string s(buf, res.ptr);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s;
  }

 private:
  Value v_;
};

class UOp;

/// The data of one node. Reached only through a UOp handle; never mutated after interning
/// (the `cache_*` fields are derived data, filled once, identical for every thread).
struct UOpNode {
  /// Data a later stage attaches to a node (shape, device, realized buffer): owned by the node.
  struct Extra {
    virtual ~Extra() = default;
  };

  Ops op;
  DType dtype;
  std::vector<UOp> src;
  Arg arg;
  size_t hash;
  mutable std::atomic<uint32_t> refs{1};
  // interval bounds of integer values, computed on demand by symbolic.hpp
  mutable std::atomic<bool> cache_bounds_ready{false};
  mutable i128 cache_vmin = 0, cache_vmax = 0;
  // set once (compare-and-swap), deleted with the node
  mutable std::atomic<Extra*> extra{nullptr};
  // the next node in its intern-table bucket (uop_impl.hpp), guarded by the table's lock
  UOpNode* next_in_bucket = nullptr;

  ~UOpNode();  // defined where UOp is complete
};

namespace detail {
UOpNode* intern(Ops op, DType dtype, std::vector<UOp>&& src, Arg&& arg);
/// How many UOps are alive now (for tests of freeing and interning).
size_t live_uop_count();
inline void acquire(const UOpNode* n) { n->refs.fetch_add(1, std::memory_order_relaxed); }
inline void acquire_node(const UOpNode* n) { acquire(n); }
inline size_t hash_of_node(const UOpNode* n) { return n->hash; }
}  // namespace detail

/// A handle to an interned node: cheap to copy, compared by identity. Constructing one interns
/// it, so two UOps built from equal parts are the same node: `UOp(a) == UOp(b)` iff equal.
class UOp {
 public:
  UOp() = default;
  UOp(Ops op, DType dtype = dtypes::void_, std::vector<UOp> src = {}, Arg arg = {})
      : n_(detail::intern(op, dtype, std::move(src), std::move(arg))) {}
  UOp(const UOp& o) : n_(o.n_) {
    if (n_) detail::acquire(n_);
  }
  UOp(UOp&& o) noexcept : n_(std::exchange(o.n_, nullptr)) {}
  UOp& operator=(UOp o) noexcept {
    std::swap(n_, o.n_);
    return *this;
  }
  ~UOp() {
    if (n_) detail::release(n_);
  }

  const UOpNode* operator->() const { return n_; }
  const UOpNode& operator*() const { return *n_; }
  const UOpNode* get() const { return n_; }
  explicit operator bool() const { return n_ != nullptr; }
  friend bool operator==(const UOp& a, const UOp& b) { return a.n_ == b.n_; }

  Ops op() const { return n_->op; }
  DType dtype() const { return n_->dtype; }
  const std::vector<UOp>& src() const { return n_->src; }
  const UOp& src(size_t i) const { return n_->src.at(i); }
  const Arg& arg() const { return n_->arg; }

  /// This UOp with some parts replaced (interned again).
  UOp replace(std::vector<UOp> src) const { return UOp(op(), dtype(), std::move(src), arg()); }

  // -- constants ------------------------------------------------------------------------------
  /// A constant of `dtype`, canonicalized: ints wrap to the dtype, floats round to it.
  static UOp const_(DType dtype, double v);
  static UOp const_(DType dtype, i128 v);
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  static UOp const_(DType dtype, I v) {
    return const_(dtype, static_cast<i128>(v));
  }
  static UOp const_(DType dtype, bool v) { return const_(dtype, static_cast<i128>(v)); }
  /// A constant with this UOp's dtype.
  template <class T> UOp const_like(T v) const { return const_(dtype(), v); }
  bool is_const() const { return op() == Ops::CONST; }
  /// The value of an integer/bool CONST, exactly (uint64 included).
  i128 const_int() const;
  /// The value of any CONST as a double.
  double const_float() const;

  /// A ranged integer variable (`Variable("i", 1, 1024)`), DEFINE_VAR with arg (name, min, max).
  static UOp variable(const std::string& name, int64_t min, int64_t max,
                      DType dtype = dtypes::index);
  /// A bound variable: BIND(var, value), for a value known at run time.
  UOp bind(int64_t value) const;

  // -- math builders, as in tinygrad ----------------------------------------------------------
  UOp alu(Ops op, std::vector<UOp> others = {}) const;
  UOp cast(DType dt) const { return dt == dtype() ? *this : UOp(Ops::CAST, dt, {*this}); }
  UOp bitcast(DType dt) const { return UOp(Ops::BITCAST, dt, {*this}); }
  // the other operand may be a UOp or a C++ scalar (a constant of this dtype)
  template <class T> UOp lt(const T& o) const { return alu(Ops::CMPLT, {ufix(o)}); }
  template <class T> UOp ne(const T& o) const { return alu(Ops::CMPNE, {ufix(o)}); }
  template <class T> UOp eq(const T& o) const { return alu(Ops::CMPEQ, {ufix(o)}); }
  template <class T> UOp maximum(const T& o) const { return alu(Ops::MAX, {ufix(o)}); }
  template <class T> UOp minimum(const T& o) const { return lt(o).where(*this, ufix(o)); }
  /// C-style (truncating) integer division; `/` on ints means this too.
  template <class T> UOp idiv(const T& o) const { return alu(Ops::IDIV, {ufix(o)}); }
  template <class T> UOp mod(const T& o) const { return alu(Ops::MOD, {ufix(o)}); }
  UOp where(const UOp& a, const UOp& b) const { return alu(Ops::WHERE, {a, b}); }
  UOp logical_not() const { return ne(const_like(true)); }
  /// A scalar constant of this dtype, or the UOp itself.
  template <class T> UOp ufix(const T& v) const {
    if constexpr (std::is_same_v<T, UOp>)
      return v;
    else
      return const_like(v);
  }

 private:
  friend void detail::release(const UOpNode* n);
  friend class Arg;
  friend std::string detail::text_of_node(const UOpNode* n);
  explicit UOp(const UOpNode* n) : n_(n) { detail::acquire(n_); }
  const UOpNode* n_ = nullptr;
};

inline Arg::Arg(const UOp& u) : v_(ArgUOp(u.get())) {}
inline UOp Arg::uop() const { return UOp(get<ArgUOp>().node()); }

template <class T>
concept UOpOrScalar = std::is_same_v<T, UOp> || std::is_arithmetic_v<T>;
namespace detail {
template <class A, class B> UOp binary(Ops op, const A& a, const B& b) {
  if constexpr (std::is_same_v<A, UOp>)
    return a.alu(op, {a.ufix(b)});
  else
    return b.const_like(a).alu(op, {b});
}
}  // namespace detail
#define TINYT_UOP_BINARY(sym, OP)                                                           \
  template <UOpOrScalar A, UOpOrScalar B>                                                   \
  requires(std::is_same_v<A, UOp> || std::is_same_v<B, UOp>) UOp operator sym(const A& a,   \
                                                                              const B& b) { \
    return detail::binary(Ops::OP, a, b);                                                   \
  }
TINYT_UOP_BINARY(+, ADD)
TINYT_UOP_BINARY(*, MUL)
TINYT_UOP_BINARY(%, MOD)
TINYT_UOP_BINARY(&, AND)
TINYT_UOP_BINARY(|, OR)
TINYT_UOP_BINARY(^, XOR)
TINYT_UOP_BINARY(<<, SHL)
TINYT_UOP_BINARY(>>, SHR)
#undef TINYT_UOP_BINARY
/// `-x` is `x * -1` (a NOT for bools), the form index math canonicalizes to.
inline UOp operator-(const UOp& x) {
  if (x.dtype().is_bool()) return x.logical_not();
  if (x.is_const())
    return x.arg().is<double>() ? x.const_like(-x.const_float()) : x.const_like(-x.const_int());
  return x * x.const_like(-1);
}
template <UOpOrScalar A, UOpOrScalar B>
requires(std::is_same_v<A, UOp> || std::is_same_v<B, UOp>) UOp operator-(const A& a, const B& b) {
  if constexpr (std::is_same_v<A, UOp>)
    return a + (-a.ufix(b));
  else
    return b.const_like(a) + (-b);
}
/// C division: IDIV for integers, FDIV for floats.
template <UOpOrScalar A, UOpOrScalar B>
requires(std::is_same_v<A, UOp> || std::is_same_v<B, UOp>) UOp operator/(const A& a, const B& b) {
  DType dt = [&] {
    if constexpr (std::is_same_v<A, UOp>)
      return a.dtype();
    else
      return b.dtype();
  }();
  return detail::binary(dt.is_float() ? Ops::FDIV : Ops::IDIV, a, b);
}

// -- graph walks ----------------------------------------------------------------------------

/// Every node reachable from `root`, sources before users (iterative: deep graphs are fine).
std::vector<UOp> toposort(const UOp& root);
/// Whether `node` is `root` or reachable from it (`root` is computed from `node`).
bool depends_on(const UOp& root, const UOp& node);
/// `root` with every node found in `map` replaced by its value (rebuilt bottom-up, shared once).
UOp substitute(const UOp& root, const std::unordered_map<const UOpNode*, UOp>& map);
/// A listing of the graph, one node per line with its numbered sources (what DEBUG prints).
std::string to_string(const UOp& root);
/// An infix rendering for small expressions, e.g. "((x*4)+y)" (index math in tests and logs).
std::string expr_string(const UOp& root);
inline std::ostream& operator<<(std::ostream& os, const UOp& u) { return os << expr_string(u); }

/// Deterministic structural order: op, then dtype, then arg, then sources. Puts constants last.
bool structural_less(const UOp& a, const UOp& b);

}  // namespace tinyt::inline v0

template <> struct std::hash<tinyt::UOp> {
  size_t operator()(const tinyt::UOp& u) const { return std::hash<const void*>{}(u.get()); }
};

