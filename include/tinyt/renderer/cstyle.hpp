// The C-style renderer: a linearized kernel as C source, one statement per value that is used
// more than once (or must stay in order), everything else inlined into its one use.
//
// The function it renders is `void NAME(void** bufs, const long long* vars, int core_id,
// int core_count)`: bufs are the kernel's buffers by DEFINE_GLOBAL index.
//
// float16 and bfloat16 arithmetic reaches the renderer already lowered to float32
// (codegen/narrow_floats.hpp): `_Float16` appears only in memory, constants and casts, so the C
// compiler never computes in half, whatever the host supports. bfloat16 is held in a float and
// stored as its 16 bits. The kernels are compiled with -ffp-contract=off: a fused multiply-add is
// MULACC (C's fma), where codegen chose it.
#pragma once

#include <cstdio>
#include <sstream>
#include <unordered_map>

#include "../bounds.hpp"
#include "../codegen/linearize.hpp"

namespace tinyt::inline v0 {
namespace renderer {

namespace detail {
using tinyt::detail::cat;

// index arithmetic is int where its bounds provably fit, long long otherwise
inline bool fits_int32(const UOp& u) {
  const Bounds b = bounds(u);
  return b.lo >= INT32_MIN && b.hi <= INT32_MAX;
}

inline std::string c_type(DType dt) {
  switch (dt.scalar_type()) {
    case ScalarType::bool_: return "bool";
    case ScalarType::int8: return "signed char";
    case ScalarType::uint8: return "unsigned char";
    case ScalarType::int16: return "short";
    case ScalarType::uint16: return "unsigned short";
    case ScalarType::int32: return "int";
    case ScalarType::uint32: return "unsigned int";
    case ScalarType::int64: return "long long";
    case ScalarType::uint64: return "unsigned long long";
    case ScalarType::float16: return "_Float16";
    case ScalarType::bfloat16: return "float";  // a float holding a bfloat16 value
    case ScalarType::float32: return "float";
    case ScalarType::float64: return "double";
    case ScalarType::index: return "long long";
    default: throw CompileError(cat("C renderer: no C type for ", dt.name()));
  }
}

// bfloat16 lives in memory as its 16 bits; C has no arithmetic type for it before C23
inline std::string memory_type(DType dt) { return dt.scalar() == dtypes::bfloat16 ? "unsigned short" : c_type(dt); }
inline constexpr const char* bfloat16_helpers =
    "static inline float tinyt_bf16_to_f32(unsigned short b) {\n"
    "  union { unsigned int u; float f; } v; v.u = (unsigned int)b << 16; return v.f;\n}\n"
    "static inline unsigned short tinyt_f32_to_bf16(float f) {\n"
    "  union { unsigned int u; float f; } v; v.f = f;\n"
    "  if (f != f) return (unsigned short)((v.u >> 16) | 0x40u);  /* NaN stays NaN */\n"
    "  return (unsigned short)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);  /* nearest even */\n}\n"
    "static inline float tinyt_bf16_round(float f) { return tinyt_bf16_to_f32(tinyt_f32_to_bf16(f)); }\n\n";

inline std::string float_literal(double v, DType dt) {
  const bool f32 = dt.scalar() != dtypes::float64;
  std::string s;
  if (std::isnan(v)) s = "NAN";
  else if (std::isinf(v)) s = v > 0 ? "INFINITY" : "-INFINITY";
  else {
    char buf[40];
    std::snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", v);
    s = buf;
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    if (f32) s += "f";
  }
  if (dt.scalar() == dtypes::float16) return "((_Float16)" + s + ")";
  if (dt.scalar() == dtypes::float64 && (std::isnan(v) || std::isinf(v))) return "((double)" + s + ")";
  return s;
}

inline std::string literal(const UOp& c, bool as_int32) {
  const DType dt = c.dtype().scalar();
  if (dt.is_float()) return float_literal(c.const_float(), dt);
  if (dt.is_bool()) return c.const_int() ? "1" : "0";
  const i128 v = c.const_int();
  if (dt.is_index() && as_int32) return cat(static_cast<long long>(v));
  if (dt.is_unsigned()) return cat(static_cast<unsigned long long>(v), dt.itemsize() == 8 ? "ULL" : "u");
  if (v == dtypes::min_int(dt)) return cat("(", static_cast<long long>(v + 1), dt.itemsize() == 8 ? "LL" : "", "-1)");
  return cat(static_cast<long long>(v), dt.itemsize() == 8 || dt.is_index() ? "LL" : "");
}

inline const char* math_fn(Ops op) {
  switch (op) {
    case Ops::EXP2: return "exp2";
    case Ops::LOG2: return "log2";
    case Ops::SIN: return "sin";
    case Ops::SQRT: return "sqrt";
    case Ops::TRUNC: return "trunc";
    case Ops::POW: return "pow";
    default: return nullptr;
  }
}
}  // namespace detail

/// Renders a program as a C function.
class CRenderer {
 public:
  std::string render(const codegen::Program& p) {
    for (const UOp& u : p.ops) {
      // an op that spells an operand more than once (NaN-aware max, guarded division) needs it named
      const int n = repeats_operands(u) ? 2 : 1;
      for (const UOp& s : u.src()) uses_[s.get()] += n;
    }
    body_ << "void " << p.name << "(void** bufs, const long long* vars, int core_id, int core_count) {\n";
    body_ << "  (void)vars; (void)core_id; (void)core_count;\n";
    bool bf16 = false;
    for (const UOp& u : p.ops) bf16 |= u.dtype().scalar() == dtypes::bfloat16;
    for (size_t i = 0; i < p.globals.size(); ++i) {
      const std::string t = detail::memory_type(p.globals[i].base());
      body_ << "  " << t << "* restrict data" << i << " = (" << t << "*)bufs[" << i << "];\n";
    }
    for (const UOp& u : p.ops) line(u);
    body_ << "}\n";
    return std::string("#include <math.h>\n#include <stdbool.h>\n\n") + (bf16 ? detail::bfloat16_helpers : "") + body_.str();
  }

 private:
  std::unordered_map<const UOpNode*, std::string> name_;
  std::unordered_map<const UOpNode*, int> uses_;
  std::ostringstream body_;
  int depth_ = 1;
  int counter_ = 0;

  std::string type_of(const UOp& u) {
    if (u.dtype().is_index()) return detail::fits_int32(u) ? "int" : "long long";
    return detail::c_type(u.dtype());
  }
  const std::string& ref(const UOp& u) { return name_.at(u.get()); }
  void out(const std::string& s) { body_ << std::string(static_cast<size_t>(depth_) * 2, ' ') << s << "\n"; }
  // a value used once becomes part of its user's expression; others get a named variable
  void define(const UOp& u, const std::string& expr, const char* prefix) {
    if (uses_[u.get()] <= 1 && u.op() != Ops::LOAD) {
      name_[u.get()] = expr;
      return;
    }
    const std::string n = prefix + std::to_string(counter_++);
    out(type_of(u) + " " + n + " = " + expr + ";");
    name_[u.get()] = n;
  }
  // an operand, cast to the type the op computes in when index math widens
  std::string operand(const UOp& s, const UOp& user) {
    if (s.dtype().is_index() && user.dtype().is_index() && type_of(user) != type_of(s)) return "((long long)" + ref(s) + ")";
    return ref(s);
  }

  void line(const UOp& u) {
    const auto& s = u.src();
    switch (u.op()) {
      case Ops::DEFINE_GLOBAL: name_[u.get()] = "data" + std::to_string(u.arg().as_int()); return;
      case Ops::CONST: name_[u.get()] = detail::literal(u, u.dtype().is_index() && detail::fits_int32(u)); return;
      case Ops::RANGE: {
        const std::string n = "ridx" + std::to_string(u.arg()[0].as_int());
        const std::string t = type_of(u);
        if (codegen::range_kind(u) == codegen::RangeKind::thread) {  // one thread runs each value
          out(t + " " + n + " = core_id;");
          name_[u.get()] = n;
          return;
        }
        out("for (" + t + " " + n + " = 0; " + n + " < " + ref(s[0]) + "; " + n + "++) {");
        name_[u.get()] = n;
        ++depth_;
        return;
      }
      case Ops::END:
        if (codegen::range_kind(s[0]) == codegen::RangeKind::thread) return;
        --depth_;
        out("}");
        return;
      case Ops::DEFINE_REG: {
        const std::string n = "acc" + std::to_string(u.arg().as_int());
        out(detail::c_type(u.dtype().base()) + " " + n + ";");
        name_[u.get()] = n;
        return;
      }
      case Ops::INDEX:
        if (s[0].op() == Ops::DEFINE_REG) name_[u.get()] = ref(s[0]);
        else name_[u.get()] = ref(s[0]) + "[" + ref(s[1]) + "]";
        return;
      case Ops::LOAD: {
        const UOp& idx = s[0];
        if (idx.src(0).op() == Ops::DEFINE_REG) { name_[u.get()] = ref(idx); return; }
        std::string e = ref(idx);
        if (u.dtype().scalar() == dtypes::bfloat16) e = "tinyt_bf16_to_f32(" + e + ")";
        if (idx.src().size() > 2) e = "(" + ref(idx.src(2)) + " ? " + e + " : " + detail::literal(UOp::const_(u.dtype(), 0), false) + ")";
        define(u, e, "val");
        return;
      }
      case Ops::STORE: {
        const bool bf16_memory = s[0].src(0).op() == Ops::DEFINE_GLOBAL && s[1].dtype().scalar() == dtypes::bfloat16;
        const std::string assign = ref(s[0]) + " = " + (bf16_memory ? "tinyt_f32_to_bf16(" + ref(s[1]) + ")" : ref(s[1])) + ";";
        out(s[0].src().size() > 2 ? "if (" + ref(s[0].src(2)) + ") " + assign : assign);
        return;
      }
      default: break;
    }
    std::string e = expr(u);
    if (computed_wider(u)) e = "((" + type_of(u) + ")" + e + ")";
    define(u, e, "alu");
  }

  // C computes bool and integers narrower than int in int, wrapping only where a value is
  // stored: inlined into a bigger expression, 100 + 100 in int8 would stay 200. A cast after
  // each such op wraps where LLVM's i1/i8/i16 instructions do, as PyTorch computes.
  static bool computed_wider(const UOp& u) {
    const DType dt = u.dtype().scalar();
    const bool narrow = dt.is_bool() || (dt.is_int() && !dt.is_index() && dt.itemsize() < 4);
    const bool arithmetic = (infix_symbol(u.op()) && !GroupOp::Comparison.contains(u.op())) || u.op() == Ops::NEG ||
                            u.op() == Ops::RECIPROCAL;
    return narrow && arithmetic;
  }

  std::string expr(const UOp& u) {
    const auto& s = u.src();
    auto a = [&](size_t i) { return operand(s[i], u); };
    const DType dt = u.dtype().scalar();
    const bool is_float = s.empty() ? false : s[0].dtype().scalar().is_float();
    if (GroupOp::ALU.contains(u.op()))
      for (const UOp& x : s)
        if (x.dtype().scalar() == dtypes::float16 || x.dtype().scalar() == dtypes::bfloat16)
          throw InternalError(detail::cat("C renderer: ", op_name(u.op()), " of ", x.dtype().name(), " was not lowered to float32"));
    if (const char* sym = infix_symbol(u.op()); sym && s.size() == 2) {
      if ((u.op() == Ops::IDIV || u.op() == Ops::MOD) && !(s[1].is_const() && s[1].const_int() > 0)) {
        // C traps on x/0 and INT_MIN/-1; a kernel must not crash the process. An unsigned divisor
        // is never -1: UINT_MAX == -1 would hold in C, and x / UINT_MAX is not -x.
        if (dt.is_unsigned()) return "(" + a(1) + " == 0 ? 0 : " + a(0) + sym + a(1) + ")";
        return "(" + a(1) + " == 0 ? 0 : (" + a(1) + " == -1 ? " + (u.op() == Ops::MOD ? std::string("0") : "-" + a(0)) + " : " + a(0) + " " + sym + " " + a(1) + "))";
      }
      return "(" + a(0) + sym + a(1) + ")";
    }
    switch (u.op()) {
      case Ops::NEG: return "(-" + a(0) + ")";
      case Ops::MAX:
        if (is_float) return "((" + a(0) + " != " + a(0) + " || " + a(0) + " > " + a(1) + ") ? " + a(0) + " : " + a(1) + ")";
        return "(" + a(0) + " > " + a(1) + " ? " + a(0) + " : " + a(1) + ")";
      case Ops::WHERE: return "(" + a(0) + " ? " + a(1) + " : " + a(2) + ")";
      case Ops::RECIPROCAL: return "(" + detail::float_literal(1.0, dt) + " / " + a(0) + ")";
      case Ops::MULACC: return std::string(dt == dtypes::float64 ? "fma(" : "fmaf(") + a(0) + ", " + a(1) + ", " + a(2) + ")";
      case Ops::CAST:
        if (dt.is_bool()) return "(" + a(0) + " != 0)";
        if (dt == dtypes::bfloat16 && s[0].dtype().scalar() != dtypes::bfloat16) return "tinyt_bf16_round((float)" + a(0) + ")";
        return "((" + type_of(u) + ")" + a(0) + ")";
      case Ops::BITCAST: {
        // bfloat16 values are floats here: bitcasts go through their 16 bits
        const bool from_bf16 = s[0].dtype().scalar() == dtypes::bfloat16, to_bf16 = dt == dtypes::bfloat16;
        const std::string from = from_bf16 ? "tinyt_f32_to_bf16(" + a(0) + ")" : a(0);
        const std::string bits = "((union { " + detail::memory_type(s[0].dtype()) + " from; " + detail::memory_type(u.dtype()) +
                                 " to; }){.from = " + from + "}).to";
        return to_bf16 ? "tinyt_bf16_to_f32(" + bits + ")" : bits;
      }
      default: break;
    }
    if (const char* fn = detail::math_fn(u.op()))  // float64 uses the double functions
      return std::string(fn) + (dt == dtypes::float64 ? "" : "f") + "(" + a(0) + (s.size() > 1 ? ", " + a(1) : "") + ")";
    throw CompileError(detail::cat("C renderer: cannot render ", op_name(u.op()), " of ", u.dtype().name()));
  }

  static bool repeats_operands(const UOp& u) {
    if (u.op() == Ops::MAX) return true;
    return (u.op() == Ops::IDIV || u.op() == Ops::MOD) && !(u.src(1).is_const() && u.src(1).const_int() > 0);
  }

  static const char* infix_symbol(Ops op) {
    switch (op) {
      case Ops::ADD: return " + ";
      case Ops::SUB: return " - ";
      case Ops::MUL: return " * ";
      case Ops::FDIV: return " / ";
      case Ops::IDIV: return " / ";
      case Ops::MOD: return " % ";
      case Ops::CMPLT: return " < ";
      case Ops::CMPNE: return " != ";
      case Ops::CMPEQ: return " == ";
      case Ops::AND: return " & ";
      case Ops::OR: return " | ";
      case Ops::XOR: return " ^ ";
      case Ops::SHL: return " << ";
      case Ops::SHR: return " >> ";
      default: return nullptr;
    }
  }
};

/// C source for a program.
inline std::string render_c(const codegen::Program& p) { return CRenderer().render(p); }

}  // namespace renderer
}  // namespace tinyt::inline v0
