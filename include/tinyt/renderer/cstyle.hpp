// The C-style renderer: a linearized kernel as source in C (here), OpenCL C (opencl.hpp), CUDA
// C++ (cuda.hpp) or WGSL (wgsl.hpp), one statement per value that is used more than once (or must
// stay in order, or is a warp shuffle that every lane must run), everything else inlined into its
// one use. The languages share everything here (statement forms, integer widening, NaN-propagating
// max, division that never traps) and differ only in the dialect hooks of CStyleRenderer: type
// names, declarations and conversions, the kernel's signature, how a work-item finds its index,
// how narrow floats are read and written, literal suffixes, math function names.
//
// The C kernel is `void NAME(void** bufs, const long long* vars, int core_id, int core_count)`:
// bufs are its buffers by DEFINE_GLOBAL index. An OpenCL or CUDA kernel takes its buffers as
// parameters `data0, data1, ...` in that order; its RANGEs of kind `global` are work-item ids.
//
// float16 and bfloat16 arithmetic reaches the renderer already lowered to float32
// (codegen/narrow_floats.hpp): narrow floats appear only in memory, constants and casts, so no
// compiler computes in half, whatever the device supports. C keeps float16 as `_Float16`; every
// other narrow float is held in a float register and converted where it is loaded, stored or
// rounded (OpenCL reads and writes halves with the core vload_half/vstore_half, so no device
// needs cl_khr_fp16). Kernels are compiled without contraction (-ffp-contract=off, OpenCL's
// FP_CONTRACT OFF, NVRTC's --fmad=false): a fused multiply-add is MULACC, where codegen chose it.
#pragma once

#include <cstdio>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "../bounds.hpp"
#include "../codegen/linearize.hpp"
#include "../tensor_cores.hpp"

namespace tinyt::inline v0 {
namespace renderer {

namespace detail {
using tinyt::detail::cat;

// index arithmetic is int where its bounds provably fit, 64-bit otherwise
inline bool fits_int32(const UOp& u) {
  const Bounds b = bounds(u);
  return b.lo >= INT32_MIN && b.hi <= INT32_MAX;
}

// the digits of a float constant; `f32` adds the f suffix
inline std::string float_digits(double v, bool f32) {
  char buf[40];
  std::snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return f32 ? s + "f" : s;
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

inline const char* infix_symbol(Ops op) {
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

// Rounding a float to bfloat16 (nearest even; NaN stays NaN), as bit operations every dialect
// spells the same once it can move a float's bits to an unsigned int and back.
inline std::string bfloat16_helpers(const std::string& fn, const std::string& to_bits, const std::string& from_bits,
                                    const std::string& u16, const std::string& u32) {
  return cat(fn, "float tinyt_bf16_to_f32(", u16, " b) { return ", from_bits, "((", u32, ")b << 16); }\n",
             fn, u16, " tinyt_f32_to_bf16(float f) {\n  ", u32, " u = ", to_bits, "(f);\n",
             "  if (f != f) return (", u16, ")((u >> 16) | 0x40u);  /* NaN stays NaN */\n",
             "  return (", u16, ")((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  /* nearest even */\n}\n",
             fn, "float tinyt_bf16_round(float f) { return tinyt_bf16_to_f32(tinyt_f32_to_bf16(f)); }\n\n");
}
}  // namespace detail

/// What a kernel's source needs beyond the language: which types it touches.
struct SourceFeatures {
  bool float16 = false, bfloat16 = false, float64 = false, tensor_cores = false, tf32 = false, ldmatrix = false;
};

// C moves a float's bits through a union
inline constexpr const char* c_bfloat16_helpers =
    "static inline float tinyt_bf16_to_f32(unsigned short b) {\n"
    "  union { unsigned int u; float f; } v; v.u = (unsigned int)b << 16; return v.f;\n}\n"
    "static inline unsigned short tinyt_f32_to_bf16(float f) {\n"
    "  union { unsigned int u; float f; } v; v.f = f;\n"
    "  if (f != f) return (unsigned short)((v.u >> 16) | 0x40u);  /* NaN stays NaN */\n"
    "  return (unsigned short)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);  /* nearest even */\n}\n"
    "static inline float tinyt_bf16_round(float f) { return tinyt_bf16_to_f32(tinyt_f32_to_bf16(f)); }\n\n";

/// Renders a program in a C-like language; the dialects below override the hooks.
class CStyleRenderer {
 public:
  virtual ~CStyleRenderer() = default;

  std::string render(const codegen::Program& p) {
    program_ = &p;
    for (const UOp& u : p.ops) {
      // an op that spells an operand more than once (NaN-aware max) needs it named
      const int n = repeats_operands(u) ? 2 : 1;
      for (const UOp& s : u.src()) uses_[s.get()] += n;
    }
    find_bit_copies(p);
    SourceFeatures features;
    for (const UOp& u : p.ops) {
      const DType dt = u.dtype().scalar();
      features.float16 |= dt == dtypes::float16;
      features.bfloat16 |= dt == dtypes::bfloat16;
      features.float64 |= dt == dtypes::float64;
      features.tensor_cores |= u.op() == Ops::WMMA;
      features.tf32 |= u.op() == Ops::WMMA && tensor_core_of(u.arg().get<std::string>()) == &mma_m16n8k8_tf32;
      features.ldmatrix |= u.op() == Ops::LDMATRIX;
    }
    open_kernel(p);
    for (const UOp& u : p.ops) line(u);
    body_ << "}\n";
    return preamble(features) + body_.str();
  }

 protected:
  std::ostringstream body_;
  const codegen::Program* program_ = nullptr;

  // ---- dialect hooks; the defaults are C's ----

  /// The type a scalar value of `dt` has in registers.
  virtual std::string scalar_type(DType dt) const {
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
      case ScalarType::float16: return held_in_float(dt) ? "float" : "_Float16";
      case ScalarType::bfloat16: return "float";  // a float holding a bfloat16 value
      case ScalarType::float32: return "float";
      case ScalarType::float64: return "double";
      case ScalarType::index: return scalar_type(dtypes::int64);
      default: throw CompileError(detail::cat(language(), " renderer: no type for ", dt.name()));
    }
  }
  /// The type index value `u` computes in: int where its bounds provably fit, 64-bit otherwise.
  virtual std::string index_type(const UOp& u) const { return scalar_type(detail::fits_int32(u) ? dtypes::int32 : dtypes::int64); }
  /// The language's name, for messages.
  virtual const char* language() const { return "C"; }
  /// The statement naming value `expr` of type `type` as `name`.
  virtual std::string declare(const std::string& type, const std::string& name, const std::string& expr) const {
    return type + " " + name + " = " + expr + ";";
  }
  /// The statement naming symbolic variable `name` of type `type`, read as `read`.
  virtual std::string declare_variable(const std::string& type, const std::string& name, const std::string& read) const {
    return "const " + type + " " + name + " = (" + type + ")" + read + ";";
  }
  /// The declaration of an accumulator register (assigned later).
  virtual std::string declare_register(const std::string& type, const std::string& name) const { return type + " " + name + ";"; }
  /// The opening line of a loop of `name` (of `type`) from 0 while below `end`.
  virtual std::string open_loop(const std::string& type, const std::string& name, const std::string& end) const {
    return "for (" + type + " " + name + " = 0; " + name + " < " + end + "; " + name + "++) {";
  }
  /// `e` converted to `type`.
  virtual std::string convert(const std::string& type, const std::string& e) const { return "((" + type + ")" + e + ")"; }
  /// `t` where `c` holds, else `f`.
  virtual std::string choose(const std::string& c, const std::string& t, const std::string& f) const {
    return "(" + c + " ? " + t + " : " + f + ")";
  }
  /// Statement `stmt` (with its semicolon) run only where `cond` holds.
  virtual std::string guarded(const std::string& cond, const std::string& stmt) const { return "if (" + cond + ") " + stmt; }
  /// A bool literal.
  virtual std::string bool_literal(bool v) const { return v ? "1" : "0"; }
  /// Whether a narrow float is held in a float register (converted at loads, stores, casts).
  virtual bool held_in_float(DType dt) const { return dt.scalar() == dtypes::bfloat16; }
  /// Whether a value of narrow float `dt` may be held as its 16 bits in memory's type, where that
  /// is all its users need (copies, tensor-core operands): memory's type is an integer then.
  virtual bool bits_in_register(DType dt) const { return dt.scalar() == dtypes::bfloat16; }
  /// The element type of a buffer of `dt` in memory.
  virtual std::string memory_type(DType dt) const {
    if (dt.scalar() == dtypes::bfloat16) return "unsigned short";  // its 16 bits: C has no bfloat16 before C23
    return scalar_type(dt);
  }
  /// The suffix of a 64-bit integer literal ("LL"; OpenCL's long is "L").
  virtual const char* int64_suffix() const { return "LL"; }
  /// What comes before the kernel: includes, pragmas, helper functions.
  virtual std::string preamble(const SourceFeatures& f) const {
    return std::string("#include <math.h>\n#include <stdbool.h>\n\n") + (f.bfloat16 ? c_bfloat16_helpers : "");
  }
  /// Writes the kernel's signature and its opening lines.
  virtual void open_kernel(const codegen::Program& p) {
    body_ << "void " << p.name << "(void** bufs, const long long* vars, int core_id, int core_count) {\n";
    body_ << "  (void)vars; (void)core_id; (void)core_count;\n";
    for (size_t i = 0; i < p.globals.size(); ++i) {
      const std::string t = memory_type(p.globals[i].base());
      body_ << "  " << t << "* restrict data" << i << " = (" << t << "*)bufs[" << i << "];\n";
    }
  }
  /// How the kernel reads symbolic variable `k` (C: from the array `vars`); empty where it is a
  /// parameter of its own (GPU dialects: `int var0` after the buffers).
  virtual std::string read_variable(size_t k) const { return detail::cat("vars[", k, "]"); }
  static std::string variable_name(size_t k) { return detail::cat("var", k); }
  size_t variable_index(const UOp& var) const {
    const auto& vars = program_->vars;
    const auto it = std::find(vars.begin(), vars.end(), var);
    if (it == vars.end()) throw InternalError(detail::cat(language(), " renderer: a variable the program does not list"));
    return static_cast<size_t>(it - vars.begin());
  }
  /// The index of this work-item along launch dimension `dim` (GPU dialects).
  virtual std::string work_item(int dim) const {
    throw CompileError(detail::cat(language(), " renderer: no work-items (launch dimension ", dim, ")"));
  }
  /// The index of this work-group, and of this work-item inside it, along launch dimension `dim`
  /// (GPU dialects).
  virtual std::string group_index(int dim) const {
    throw CompileError(detail::cat(language(), " renderer: no work-groups (launch dimension ", dim, ")"));
  }
  virtual std::string local_index(int dim) const {
    throw CompileError(detail::cat(language(), " renderer: no work-groups (launch dimension ", dim, ")"));
  }
  /// The declaration of `size` elements of `type` in a work-group's local memory (GPU dialects).
  virtual std::string local_buffer(const std::string& type, const std::string& name, int64_t size) const {
    throw CompileError(detail::cat(language(), " renderer: no local memory (", type, " ", name, "[", size, "])"));
  }
  /// The pointer type through which 16 bytes of a global or local buffer move at once, as the
  /// value type `uint4` (a wide copy's, STAGE's; GPU dialects).
  virtual std::string wide_pointer(bool local) const {
    throw CompileError(detail::cat(language(), " renderer: no 16-byte copies (", local ? "local" : "global", " memory)"));
  }
  /// The statement that waits for every work-item of the work-group, local memory written.
  virtual std::string barrier() const { throw CompileError(detail::cat(language(), " renderer: no work-group barrier")); }
  /// A value of `dt` read from `buf[idx]`, as a register value.
  virtual std::string load_memory(DType dt, const std::string& buf, const std::string& idx) const {
    const std::string e = buf + "[" + idx + "]";
    return dt.scalar() == dtypes::bfloat16 ? "tinyt_bf16_to_f32(" + e + ")" : e;
  }
  /// The statement writing register value `v` of `dt` to `buf[idx]` (no semicolon).
  virtual std::string store_memory(DType dt, const std::string& buf, const std::string& idx, const std::string& v) const {
    return buf + "[" + idx + "] = " + (dt.scalar() == dtypes::bfloat16 ? "tinyt_f32_to_bf16(" + v + ")" : v);
  }
  // A narrow float held in a float: rounded to it, and moved to and from its 16 bits, by the
  // helper functions each dialect's preamble defines (tinyt_f16_* and tinyt_bf16_*).
  virtual std::string round_narrow(DType dt, const std::string& v) const {
    return std::string(dt.scalar() == dtypes::bfloat16 ? "tinyt_bf16_round" : "tinyt_f16_round") + "((float)" + v + ")";
  }
  static std::string narrow_bits(DType dt, const std::string& v) {
    return std::string(dt.scalar() == dtypes::bfloat16 ? "tinyt_f32_to_bf16(" : "tinyt_f32_to_f16(") + v + ")";
  }
  static std::string narrow_from_bits(DType dt, const std::string& bits) {
    return std::string(dt.scalar() == dtypes::bfloat16 ? "tinyt_bf16_to_f32(" : "tinyt_f16_to_f32(") + bits + ")";
  }
  /// `v`, of memory type `from`, reinterpreted as memory type `to` (equal sizes).
  virtual std::string bitcast(const std::string& from, const std::string& to, const std::string& v) const {
    return "((union { " + from + " from; " + to + " to; }){.from = " + v + "}).to";
  }
  /// Register value `v` of `from` reinterpreted as a value of `to` (a BITCAST; equal sizes):
  /// narrow floats held in floats go through their 16 bits, as an unsigned integer (not as a half:
  /// OpenCL without cl_khr_fp16 has no as_half).
  virtual std::string bitcast_value(DType from, DType to, const std::string& v) const {
    auto type = [&](DType d) { return held_in_float(d) ? scalar_type(dtypes::uint16) : memory_type(d); };
    const std::string bits = bitcast(type(from), type(to), held_in_float(from) ? narrow_bits(from, v) : v);
    return held_in_float(to) ? narrow_from_bits(to, bits) : bits;
  }
  /// Expression `e` converted to a register of `dt` (whose type is `type`): a CAST, and the wrap of
  /// an integer narrower than int after arithmetic.
  virtual std::string cast_to(DType dt, const std::string& type, const std::string& e) const {
    (void)dt;
    return convert(type, e);
  }
  /// An ALU op this dialect spells its own way, from its operands' expressions; empty where the
  /// shared spelling below holds.
  virtual std::string dialect_alu(const UOp& u, const std::vector<std::string>& operands) const {
    (void)u, (void)operands;
    return "";
  }
  /// The statement declaring `name`, the 16 bytes at `buf[i]` of a global or local buffer of
  /// elements `dt` (read only where `gate` holds, if not empty): a wide copy's load.
  virtual std::string wide_load(const std::string& name, DType dt, const std::string& buf, const std::string& i, bool local,
                                const std::string& gate) const {
    (void)dt;
    const std::string read = "*((" + wide_pointer(local) + ")(&" + buf + "[" + i + "]))";
    return gate.empty() ? "uint4 " + name + " = " + read + ";" : "uint4 " + name + "; if (" + gate + ") " + name + " = " + read + ";";
  }
  /// The statement writing a wide copy's 16 bytes `v` to `buf[i]` (elements `dt`).
  virtual std::string wide_store(DType dt, const std::string& buf, const std::string& i, bool local, const std::string& v) const {
    (void)dt;
    return "*((" + wide_pointer(local) + ")(&" + buf + "[" + i + "])) = " + v + ";";
  }
  /// The statements of tensor-core op `kind` ("m16n8k16 float16") that leave its 4 results in the
  /// array `name`, from the lane's fragments (8 of A, then 4 of B: float registers) and the 4 values
  /// of C they add to (none: zeros).
  virtual std::string tensor_core(const std::string& kind, const std::string& name, const std::vector<std::string>& operands,
                                  const std::vector<std::string>& accumulators) const {
    throw CompileError(detail::cat(language(), " renderer: no tensor cores (", kind, " into ", name, " of ", operands.size(), " operands and ",
                                   accumulators.size(), " accumulators)"));
  }
  /// The statements of an LDMATRIX of `tiles` 8x8 tiles (transposed or not) whose row this lane
  /// names at `address` (a pointer into local memory), leaving its registers in the array `name`.
  virtual std::string ldmatrix(const std::string& name, int tiles, bool trans, const std::string& address) const {
    throw CompileError(detail::cat(language(), " renderer: no ldmatrix (", tiles, trans ? " transposed" : "", " tiles into ", name, " from ", address, ")"));
  }
  static std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  /// `v` of the work-item whose lane in the warp is this one's xor `mask` (GPU dialects with warps).
  virtual std::string shuffle_xor(const std::string& v, int64_t mask) const {
    throw CompileError(detail::cat(language(), " renderer: no warp shuffles (SHFL_XOR ", mask, " of ", v, ")"));
  }
  /// The name of a math function for `dt` (C: expf for float, exp for double).
  virtual std::string math_function(const std::string& name, DType dt) const {
    return dt.scalar() == dtypes::float64 ? name : name + "f";
  }
  /// NaN and the infinities of `dt` (float or double).
  virtual std::string special_float(double v, DType dt) const {
    const std::string s = std::isnan(v) ? "NAN" : v > 0 ? "INFINITY" : "-INFINITY";
    return dt.scalar() == dtypes::float64 ? "((double)" + s + ")" : s;
  }

  std::string float_literal(double v, DType dt) const {
    const DType s = dt.scalar();
    const std::string digits = std::isnan(v) || std::isinf(v) ? special_float(v, s) : detail::float_digits(v, s != dtypes::float64);
    return s == dtypes::float16 && !held_in_float(s) ? "((" + scalar_type(s) + ")" + digits + ")" : digits;
  }
  std::string literal(const UOp& c, bool as_int32) const {
    const DType dt = c.dtype().scalar();
    if (dt.is_float()) return float_literal(c.const_float(), dt);
    if (dt.is_bool()) return bool_literal(c.const_int() != 0);
    const i128 v = c.const_int();
    const std::string wide = int64_suffix();
    if (dt.is_index() && as_int32) return detail::cat(static_cast<long long>(v));
    if (dt.is_unsigned()) return detail::cat(static_cast<unsigned long long>(v), dt.itemsize() == 8 ? "U" + wide : "u");
    if (v == dtypes::min_int(dt)) return detail::cat("(", static_cast<long long>(v + 1), dt.itemsize() == 8 ? wide : "", "-1)");
    return detail::cat(static_cast<long long>(v), dt.itemsize() == 8 || dt.is_index() ? wide : "");
  }

 private:
  std::unordered_map<const UOpNode*, std::string> name_;
  std::unordered_map<const UOpNode*, std::pair<std::string, std::string>> address_;  // INDEX -> (buffer, index)
  std::unordered_map<const UOpNode*, int> uses_;
  // narrow-float loads (and their casts to float32) whose users need only their 16 bits: a store
  // to memory of the same type (a copy: STAGE's, to shared memory) or a tensor-core operand, which
  // takes 16-bit values packed two to a register. Held as those bits, no value makes a round trip
  // through float32 (two conversions per element copied or per operand).
  std::unordered_set<const UOpNode*> bits_;

  void find_bit_copies(const codegen::Program& p) {
    std::unordered_map<const UOpNode*, std::vector<UOp>> users;
    for (const UOp& u : p.ops)
      for (const UOp& s : u.src()) users[s.get()].push_back(u);
    const auto in_memory = [](const UOp& index) {
      return index.op() == Ops::INDEX && index.src().size() == 2 &&  // (a gated load reads 0 where off)
             (index.src(0).op() == Ops::DEFINE_GLOBAL || index.src(0).op() == Ops::DEFINE_LOCAL);
    };
    for (const UOp& u : p.ops) {
      if (u.op() != Ops::LOAD || u.dtype().count() != 1 || !bits_in_register(u.dtype()) || !in_memory(u.src(0))) continue;
      std::vector<const UOpNode*> casts;
      bool only_bits = true;
      for (const UOp& x : users[u.get()]) {
        if (x.op() == Ops::STORE && x.src(1) == u && !codegen::streams(x) && in_memory(x.src(0)) &&
            x.src(0).dtype().scalar() == u.dtype() && x.src(0).dtype().count() == 1)
          continue;
        if (x.op() == Ops::CAST && x.dtype() == dtypes::float32) {
          casts.push_back(x.get());
          for (const UOp& c : users[x.get()]) only_bits &= c.op() == Ops::WMMA && tensor_core_input(c.arg().get<std::string>()) == u.dtype();
          continue;
        }
        only_bits = false;
      }
      if (!only_bits) continue;
      bits_.insert(u.get());
      bits_.insert(casts.begin(), casts.end());
    }
  }

  int depth_ = 1;
  int counter_ = 0;

  std::string type_of(const UOp& u) const {
    if (u.dtype().is_index()) return index_type(u);
    return scalar_type(u.dtype());
  }
  const std::string& ref(const UOp& u) { return name_.at(u.get()); }
  void out(const std::string& s) { body_ << std::string(static_cast<size_t>(depth_) * 2, ' ') << s << "\n"; }
  // a value used once becomes part of its user's expression; others get a named variable. A load
  // stays where it is in order; a warp shuffle is a statement of its own, run by every lane: inlined
  // into a store gated to one lane (`if (lane == 0) temp[w] = acc + shfl(acc, 1)`), its other lanes
  // never arrive and the warp waits forever on a real GPU.
  void define(const UOp& u, const std::string& expr, const char* prefix) {
    if (uses_[u.get()] <= 1 && u.op() != Ops::LOAD && u.op() != Ops::SHFL_XOR) {
      name_[u.get()] = expr;
      return;
    }
    const std::string n = prefix + std::to_string(counter_++);
    out(declare(type_of(u), n, expr));
    name_[u.get()] = n;
  }
  // an operand, cast to the type the op computes in when index math widens
  std::string operand(const UOp& s, const UOp& user) {
    if (s.dtype().is_index() && user.dtype().is_index() && type_of(user) != type_of(s))
      return convert(scalar_type(dtypes::int64), ref(s));
    return ref(s);
  }
  // the launch dimension a work-item range runs along
  int work_item_dim(const UOp& range) const {
    const auto& axes = program_->global_axes;
    const auto it = std::find(axes.begin(), axes.end(), range.arg()[0].as_int());
    if (it == axes.end()) throw InternalError(detail::cat(language(), " renderer: a work-item range with no launch dimension"));
    return static_cast<int>(it - axes.begin());
  }

  void line(const UOp& u) {
    const auto& s = u.src();
    switch (u.op()) {
      case Ops::DEFINE_GLOBAL: name_[u.get()] = "data" + std::to_string(u.arg().as_int()); return;
      case Ops::DEFINE_VAR: {
        const size_t k = variable_index(u);
        name_[u.get()] = variable_name(k);
        if (std::string read = read_variable(k); !read.empty()) out(declare_variable(type_of(u), name_[u.get()], read));
        return;
      }
      case Ops::CONST: name_[u.get()] = literal(u, u.dtype().is_index() && detail::fits_int32(u)); return;
      case Ops::RANGE: {
        const std::string n = "ridx" + std::to_string(u.arg()[0].as_int());
        const std::string t = type_of(u);
        name_[u.get()] = n;
        switch (codegen::range_kind(u)) {
          case codegen::RangeKind::thread: out(declare(t, n, "core_id")); return;  // one thread runs each value
          case codegen::RangeKind::global: out(declare(t, n, work_item(work_item_dim(u)))); return;
          case codegen::RangeKind::group_id: out(declare(t, n, group_index(static_cast<int>(u.arg()[2].as_int())))); return;
          case codegen::RangeKind::local_id: out(declare(t, n, local_index(static_cast<int>(u.arg()[2].as_int())))); return;
          default: break;
        }
        out(open_loop(t, n, ref(s[0])));
        ++depth_;
        return;
      }
      case Ops::END:
        if (codegen::range_rank(codegen::range_kind(s[0])) == 0) return;  // a thread's or a work-item's: no loop
        --depth_;
        out("}");
        return;
      case Ops::DEFINE_REG: {
        const std::string n = "acc" + std::to_string(u.arg().as_int());
        out(declare_register(scalar_type(u.dtype().base()), n));
        name_[u.get()] = n;
        return;
      }
      case Ops::DEFINE_LOCAL: {
        const std::string n = "temp" + std::to_string(u.arg().as_int());
        // its elements in their memory format, as a global buffer's: loads and stores convert
        // (a STAGE's copy of halves holds halves)
        if (std::string declared = local_buffer(memory_type(u.dtype().base()), n, u.dtype().size()); !declared.empty()) out(declared + ";");
        name_[u.get()] = n;
        return;
      }
      case Ops::BARRIER:
        if (std::string b = barrier(); !b.empty()) out(b + ";");
        return;
      case Ops::WMMA: {  // a warp's tensor-core op: its 4 results in an array the GEPs read
        const std::string n = "wmma" + std::to_string(counter_++);
        // 16-bit inputs as their bits (a value held in a float converted to them); TF32's as floats
        const std::string& kind = u.arg().get<std::string>();
        const DType input = tensor_core_input(kind);
        const TensorCore* tc = tensor_core_of(kind);
        const size_t fragments = tc ? static_cast<size_t>(tc->a_count + tc->b_count) : s.size();
        std::vector<std::string> operands, accumulators;  // (C: the lane's accumulators, or none: zeros)
        // an operand that is an element of an LDMATRIX (a GEP, cast to float32): its two of a register
        const auto fragment = [](const UOp& x) { return x.op() == Ops::CAST ? x.src(0) : x; };
        const auto from_ldmatrix = [&](const UOp& x) { return fragment(x).op() == Ops::GEP && fragment(x).src(0).op() == Ops::LDMATRIX; };
        for (size_t i = 0; i < s.size(); ++i)
          if (i >= fragments) {
            accumulators.push_back(ref(s[i]));
          } else if (from_ldmatrix(s[i])) {  // a register's two values: the register itself, then nothing
            const UOp& element = fragment(s[i]);
            const int64_t k = element.arg().as_int();
            if (k % 2 != 0 || i % 2 != 0 || i + 1 >= fragments || !from_ldmatrix(s[i + 1]) || !(fragment(s[i + 1]).src(0) == element.src(0)) ||
                fragment(s[i + 1]).arg().as_int() != k + 1)
              throw CompileError(detail::cat(language(), " renderer: a tensor-core operand pair is not one register of an ldmatrix"));
            operands.push_back(detail::cat(ref(element.src(0)), "[", k / 2, "]")), operands.emplace_back();
            ++i;
          } else {
            operands.push_back(input == dtypes::float32 || bits_.count(s[i].get()) ? ref(s[i]) : narrow_bits(input, ref(s[i])));
          }
        for (const std::string& line : split_lines(tensor_core(kind, n, operands, accumulators))) out(line);
        name_[u.get()] = n;
        return;
      }
      case Ops::LDMATRIX: {  // a warp's fragments: registers of two 16-bit values each
        const auto [tiles, trans] = ldmatrix_kind(u.arg().get<std::string>());
        const auto& [buf, i] = address_.at(s[0].get());
        const std::string n = "frag" + std::to_string(counter_++);
        for (const std::string& line : split_lines(ldmatrix(n, tiles, trans, "&" + buf + "[" + i + "]"))) out(line);
        name_[u.get()] = n;
        return;
      }
      case Ops::GEP: name_[u.get()] = ref(s[0]) + "[" + std::to_string(u.arg().as_int()) + "]"; return;
      case Ops::CAST:
        if (bits_.count(u.get())) {  // a tensor-core operand: the loaded bits themselves
          name_[u.get()] = ref(s[0]);
          return;
        }
        if (s[0].op() == Ops::GEP && s[0].src(0).op() == Ops::LDMATRIX) {  // an operand read with its register (WMMA above)
          name_[u.get()] = ref(s[0]);
          return;
        }
        break;
      case Ops::INDEX:
        if (s[0].op() == Ops::DEFINE_REG) {
          name_[u.get()] = ref(s[0]);
        } else {
          address_[u.get()] = {ref(s[0]), ref(s[1])};
          name_[u.get()] = ref(s[0]) + "[" + ref(s[1]) + "]";
        }
        return;
      case Ops::LOAD: {
        const UOp& idx = s[0];
        if (idx.src(0).op() == Ops::DEFINE_REG) { name_[u.get()] = ref(idx); return; }
        const auto& [buf, i] = address_.at(idx.get());
        if (u.dtype().count() > 1) {  // a wide copy's 16 bytes, for its store
          const std::string n = "wide" + std::to_string(counter_++);
          for (const std::string& l : split_lines(wide_load(n, u.dtype().scalar(), buf, i, idx.src(0).op() == Ops::DEFINE_LOCAL,
                                                            idx.src().size() > 2 ? ref(idx.src(2)) : std::string())))
            out(l);
          name_[u.get()] = n;
          return;
        }
        if (bits_.count(u.get())) {  // its 16 bits, as memory holds them
          const std::string n = "bits" + std::to_string(counter_++);
          out(memory_type(u.dtype()) + " " + n + " = " + buf + "[" + i + "];");
          name_[u.get()] = n;
          return;
        }
        std::string e = load_memory(u.dtype(), buf, i);
        if (idx.src().size() > 2) e = choose(ref(idx.src(2)), e, literal(UOp::const_(u.dtype(), 0), false));
        define(u, e, "val");
        return;
      }
      case Ops::VECTORIZE:  // only a streaming store's lanes: stored one by one below
        return;
      case Ops::STORE: {
        std::string assign;
        if (codegen::streams(u)) {  // C has no portable non-temporal store: each lane plainly
          const auto& [buf, i] = address_.at(s[0].get());
          for (size_t k = 0; k < s[1].src().size(); ++k)
            assign += store_memory(s[1].dtype().scalar(), buf, detail::cat("(", i, ") + ", k), ref(s[1].src(k))) + "; ";
          assign.pop_back();
        } else if (s[1].dtype().count() > 1) {  // a wide copy's 16 bytes
          const auto& [buf, i] = address_.at(s[0].get());
          assign = wide_store(s[1].dtype().scalar(), buf, i, s[0].src(0).op() == Ops::DEFINE_LOCAL, ref(s[1]));
        } else if (s[0].src(0).op() == Ops::DEFINE_GLOBAL || s[0].src(0).op() == Ops::DEFINE_LOCAL) {  // memory, in its format
          const auto& [buf, i] = address_.at(s[0].get());
          assign = bits_.count(s[1].get()) ? buf + "[" + i + "] = " + ref(s[1]) + ";" : store_memory(s[1].dtype(), buf, i, ref(s[1])) + ";";
        } else {
          assign = ref(s[0]) + " = " + ref(s[1]) + ";";
        }
        out(s[0].src().size() > 2 ? guarded(ref(s[0].src(2)), assign) : assign);
        return;
      }
      default: break;
    }
    std::string e = expr(u);
    if (computed_wider(u)) e = cast_to(u.dtype().scalar(), type_of(u), e);
    define(u, e, "alu");
  }

  // C computes bool and integers narrower than int in int, wrapping only where a value is
  // stored: inlined into a bigger expression, 100 + 100 in int8 would stay 200. A cast after
  // each such op wraps where LLVM's i1/i8/i16 instructions do, as PyTorch computes.
  static bool computed_wider(const UOp& u) {
    const DType dt = u.dtype().scalar();
    const bool narrow = dt.is_bool() || (dt.is_int() && !dt.is_index() && dt.itemsize() < 4);
    const bool arithmetic = (detail::infix_symbol(u.op()) && !GroupOp::Comparison.contains(u.op())) ||
                            u.op() == Ops::NEG || u.op() == Ops::RECIPROCAL;
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
          throw InternalError(detail::cat(language(), " renderer: ", op_name(u.op()), " of ", x.dtype().name(), " was not lowered to float32"));
    {
      std::vector<std::string> operands;
      for (size_t i = 0; i < s.size(); ++i) operands.push_back(a(i));
      if (std::string own = dialect_alu(u, operands); !own.empty()) return own;
    }
    // (an integer division's divisor is never 0 or -1 here: codegen::division_rules saw to it)
    if (const char* sym = detail::infix_symbol(u.op()); sym && s.size() == 2) return "(" + a(0) + sym + a(1) + ")";
    switch (u.op()) {
      case Ops::NEG: return "(-" + a(0) + ")";
      case Ops::MAX:
        if (is_float) return choose("(" + a(0) + " != " + a(0) + " || " + a(0) + " > " + a(1) + ")", a(0), a(1));
        return choose(a(0) + " > " + a(1), a(0), a(1));
      case Ops::WHERE: return choose(a(0), a(1), a(2));
      case Ops::RECIPROCAL: return "(" + float_literal(1.0, dt) + " / " + a(0) + ")";
      case Ops::MULACC: return math_function("fma", dt) + "(" + a(0) + ", " + a(1) + ", " + a(2) + ")";
      case Ops::SHFL_XOR: return shuffle_xor(a(0), u.arg().as_int());
      case Ops::CAST:
        if (dt.is_bool()) return "(" + a(0) + " != 0)";
        if (held_in_float(dt) && s[0].dtype().scalar() != dt) return round_narrow(dt, a(0));
        return cast_to(dt, type_of(u), a(0));
      case Ops::BITCAST: return bitcast_value(s[0].dtype().scalar(), dt, a(0));
      default: break;
    }
    if (const char* fn = detail::math_fn(u.op()))
      return math_function(fn, dt) + "(" + a(0) + (s.size() > 1 ? ", " + a(1) : "") + ")";
    throw CompileError(detail::cat(language(), " renderer: cannot render ", op_name(u.op()), " of ", u.dtype().name()));
  }

  static bool repeats_operands(const UOp& u) { return u.op() == Ops::MAX; }
};

/// C, for the CPU: the base's defaults. A local buffer (a PACK's copy) is an array on the stack
/// of the one thread that fills and reads it, so nothing waits at its barrier.
class CRenderer : public CStyleRenderer {
  std::string local_buffer(const std::string& type, const std::string& name, int64_t size) const override {
    return detail::cat(type, " ", name, "[", size, "] __attribute__((aligned(64)))");
  }
  std::string barrier() const override { return ""; }
};

/// C source for a program.
inline std::string render_c(const codegen::Program& p) { return CRenderer().render(p); }

}  // namespace renderer
}  // namespace tinyt::inline v0
