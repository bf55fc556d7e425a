// WGSL, for WebGPU: a dialect of the C-style renderer. What differs from C is spelled by its
// hooks: typed `let` and `var` declarations, conversions as constructors (`f32(x)`), `select`
// for the conditional operator, braces around guarded statements, buffers as bindings at module
// scope (backend/webgpu.hpp's order: storage buffers, then the variables' uniform array) and work-
// group memory there too, the work-item's index from the entry point's builtins.
//
// What WGSL lacks is made here from 32-bit integer operations:
// - No 64-bit types: a kernel whose index math does not fit 32 bits, or that touches float64 or
//   int64, is a CompileError naming what (tensors of them never reach a WEBGPU buffer: DeviceError).
// - No types narrower than 32 bits in memory. A buffer of bool, int8/16, uint8/16, float16 or
//   bfloat16 is an array of u32 words, 4 (or 2) elements to a word as the host lays them out;
//   a load shifts its element down and widens it, a store clears its bits and sets them with two
//   atomic ops (neighbouring elements of one word are other work-items' stores), so a kernel that
//   stores into such a buffer declares it `array<atomic<u32>>`. In registers they are i32 / u32
//   holding the value sign- or zero-extended (wrapped again after each op, as C's casts do), or
//   f32 holding a float16 / bfloat16 value (rounded by bit operations: WGSL's pack2x16float leaves
//   out-of-range values undefined and needs no particular rounding). Work-group memory keeps
//   one element per u32, its bits zero-extended.
// - No inf or NaN literals, and compilers may assume no value is NaN: NaN tests (a NaN-propagating
//   max, isnan's x != x) look at the bits.
// - Shifts take a u32 count; bool has no ^ or <.
#pragma once

#include "cstyle.hpp"

namespace tinyt::inline v0 {
namespace renderer {

// float16 <-> its bits in a u32, nearest even, NaN kept NaN (quiet), overflow to infinity
inline constexpr const char* wgsl_float16_helpers = R"(fn tinyt_f16_to_f32(h: u32) -> f32 {
  let sign = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>(sign | 0x7f800000u | (m << 13u)); }
  if (e == 0u) { return bitcast<f32>(sign | bitcast<u32>(f32(m) * 5.9604644775390625e-8f)); }
  return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));
}
fn tinyt_f32_to_f16(f: f32) -> u32 {
  let x = bitcast<u32>(f);
  let sign = (x >> 16u) & 0x8000u;
  let a = x & 0x7fffffffu;
  if (a > 0x7f800000u) { return sign | 0x7e00u | ((a >> 13u) & 0x3ffu); }
  if (a >= 0x477ff000u) { return sign | 0x7c00u; }
  if (a >= 0x38800000u) { return sign | ((a + 0xfffu + ((a >> 13u) & 1u) - 0x38000000u) >> 13u); }
  let s = 126u - (a >> 23u);
  if (s > 24u) { return sign; }
  let m = (a & 0x7fffffu) | 0x800000u;
  let q = m >> s;
  let rest = m & ((1u << s) - 1u);
  let half = 1u << (s - 1u);
  return sign | (q + select(0u, 1u, rest > half || (rest == half && (q & 1u) == 1u)));
}
fn tinyt_f16_round(f: f32) -> f32 { return tinyt_f16_to_f32(tinyt_f32_to_f16(f)); }
)";
inline constexpr const char* wgsl_bfloat16_helpers = R"(fn tinyt_bf16_to_f32(b: u32) -> f32 { return bitcast<f32>(b << 16u); }
fn tinyt_f32_to_bf16(f: f32) -> u32 {
  let u = bitcast<u32>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) { return (u >> 16u) | 0x40u; }
  return (u + 0x7fffu + ((u >> 16u) & 1u)) >> 16u;
}
fn tinyt_bf16_round(f: f32) -> f32 { return tinyt_bf16_to_f32(tinyt_f32_to_bf16(f)); }
)";
// A float of the bits given: how a kernel spells inf and NaN. WGSL has no literals for them, and a
// constant bitcast<f32>(0x7f800000u) is evaluated when the shader is created, where Chromium's
// compiler (Tint) rejects a value f32 cannot represent; a function's result is not a constant.
inline constexpr const char* wgsl_bits_helper = "fn tinyt_bits_f32(b: u32) -> f32 { return bitcast<f32>(b); }\n";
// C's pow where WGSL's is undefined: a negative base (to an integer power, else NaN), a zero base
inline constexpr const char* wgsl_pow_helper = R"(fn tinyt_pow(x: f32, y: f32) -> f32 {
  if (y == 0.0f) { return 1.0f; }
  var r: f32;
  if (x == 0.0f) { r = select(tinyt_bits_f32(0x7f800000u), 0.0f, y > 0.0f); } else { r = pow(abs(x), y); }
  if (x < 0.0f) {
    if (trunc(y) != y) { return tinyt_bits_f32(0x7fc00000u); }
    if (trunc(y * 0.5f) != y * 0.5f) { return -r; }
  }
  return r;
}
)";

class WGSLRenderer : public CStyleRenderer {
 protected:
  const char* language() const override { return "WGSL"; }
  std::string scalar_type(DType dt) const override {
    switch (dt.scalar_type()) {
      case ScalarType::bool_: return "bool";
      case ScalarType::int8:
      case ScalarType::int16:
      case ScalarType::int32: return "i32";
      case ScalarType::uint8:
      case ScalarType::uint16:
      case ScalarType::uint32: return "u32";
      case ScalarType::float16:
      case ScalarType::bfloat16:
      case ScalarType::float32: return "f32";
      case ScalarType::index: throw CompileError("WGSL renderer: index math past 32 bits (WGSL has no 64-bit integers)");
      default: throw CompileError(detail::cat("WGSL renderer: WebGPU has no ", dt.name()));
    }
  }
  std::string memory_type(DType dt) const override { return narrow(dt) ? "u32" : scalar_type(dt); }
  // Index math is i32. Where its bounds do not fit, they are a value read at run time (an index
  // tensor's, a variable's) that a load's gate checks before it is used, or wrong: a kernel whose
  // loops alone reach past 2^31 (WebGPU buffers are far smaller) is a CompileError.
  std::string index_type(const UOp& u) const override {
    if (detail::fits_int32(u)) return "i32";
    for (const UOp& x : toposort(u))
      if (x.op() == Ops::LOAD || x.op() == Ops::DEFINE_VAR) return "i32";
    const Bounds b = bounds(u);
    throw CompileError(detail::cat("WGSL renderer: index math spans [", static_cast<long long>(b.lo), ", ", static_cast<long long>(b.hi),
                                   "], past 32 bits (WGSL has no 64-bit integers)"));
  }
  bool held_in_float(DType dt) const override { return dt.scalar() == dtypes::float16 || dt.scalar() == dtypes::bfloat16; }
  bool bits_in_register(DType) const override { return false; }
  std::string bool_literal(bool v) const override { return v ? "true" : "false"; }
  std::string declare(const std::string& type, const std::string& name, const std::string& expr) const override {
    return "let " + name + ": " + type + " = " + expr + ";";
  }
  std::string declare_variable(const std::string& type, const std::string& name, const std::string& read) const override {
    return declare(type, name, convert(type, read));
  }
  std::string declare_register(const std::string& type, const std::string& name) const override { return "var " + name + ": " + type + ";"; }
  std::string open_loop(const std::string& type, const std::string& name, const std::string& end) const override {
    return "for (var " + name + ": " + type + " = 0; " + name + " < " + end + "; " + name + "++) {";
  }
  std::string convert(const std::string& type, const std::string& e) const override { return type + "(" + e + ")"; }
  std::string choose(const std::string& c, const std::string& t, const std::string& f) const override {
    return "select(" + f + ", " + t + ", " + c + ")";
  }
  std::string guarded(const std::string& cond, const std::string& stmt) const override { return "if (" + cond + ") { " + stmt + " }"; }
  std::string preamble(const SourceFeatures& f) const override {
    if (f.float64) throw CompileError("WGSL renderer: WebGPU has no float64");
    return module_scope_ + "\n" + wgsl_bits_helper + (f.float16 ? wgsl_float16_helpers : "") + (f.bfloat16 ? wgsl_bfloat16_helpers : "") +
           (uses_pow_ ? wgsl_pow_helper : "");
  }
  void open_kernel(const codegen::Program& p) override {
    std::vector<bool> stored(p.globals.size());
    for (const UOp& u : p.ops) uses_pow_ |= u.op() == Ops::POW;
    for (const UOp& u : p.ops)
      if (u.op() == Ops::STORE && u.src(0).op() == Ops::INDEX && u.src(0).src(0).op() == Ops::DEFINE_GLOBAL)
        stored.at(static_cast<size_t>(u.src(0).src(0).arg().as_int())) = true;
    std::string& m = module_scope_;
    for (size_t i = 0; i < p.globals.size(); ++i) {
      const DType dt = p.globals[i].base();
      const std::string name = detail::cat("data", i);
      if (narrow(dt)) (stored[i] ? atomic_ : packed_).insert(name);
      const std::string element = narrow(dt) && stored[i] ? "atomic<u32>" : memory_type(dt);
      m += detail::cat("@group(0) @binding(", i, ") var<storage, read_write> ", name, ": array<", element, ">;\n");
    }
    if (!p.vars.empty()) m += detail::cat("@group(0) @binding(", p.globals.size(), ") var<uniform> vars: array<vec4<i32>, ", p.vars.size(), ">;\n");
    body_ << "@compute @workgroup_size(" << p.local_size[0] << ", " << p.local_size[1] << ", " << p.local_size[2] << ")\nfn " << p.name
          << "(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {\n";
  }
  std::string read_variable(size_t k) const override { return detail::cat("vars[", k, "].x"); }
  std::string work_item(int dim) const override { return detail::cat("i32(gid.", "xyz"[dim], ")"); }
  std::string group_index(int dim) const override { return detail::cat("i32(wid.", "xyz"[dim], ")"); }
  std::string local_index(int dim) const override { return detail::cat("i32(lid.", "xyz"[dim], ")"); }
  // (work-group memory is declared at module scope: nothing in the function; every element is a
  // 4-byte word, and a work-group has 16 KiB of them: maxComputeWorkgroupStorageSize's default)
  std::string local_buffer(const std::string& type, const std::string& name, int64_t size) const override {
    local_bytes_ += 4 * size;
    if (local_bytes_ > 16384)
      throw CompileError(detail::cat("WGSL renderer: ", local_bytes_, " bytes of work-group memory (", name, " of ", size,
                                     " words and the rest); WebGPU guarantees 16384"));
    module_scope_ += detail::cat("var<workgroup> ", name, ": array<", type, ", ", size, ">;\n");
    return "";
  }
  std::string barrier() const override { return "workgroupBarrier()"; }

  std::string load_memory(DType dt, const std::string& buf, const std::string& idx) const override {
    if (!narrow(dt)) return buf + "[" + idx + "]";
    if (!packed(buf)) return from_word(dt, buf + "[" + idx + "]");  // work-group memory: one element per word
    const std::string word = buf + "[" + word_index(dt, idx) + "]";
    return from_word(dt, "(" + (atomic_.count(buf) ? "atomicLoad(&" + word + ")" : word) + " >> " + bit_offset(dt, idx) + ")");
  }
  std::string store_memory(DType dt, const std::string& buf, const std::string& idx, const std::string& v) const override {
    if (!narrow(dt)) return buf + "[" + idx + "] = " + v;
    if (!packed(buf)) return buf + "[" + idx + "] = " + to_word(dt, v);
    // its bits cleared, then set: each an atomic op on the word, which other work-items' elements share
    return detail::cat("{ let at = ", idx, "; let shift = ", bit_offset(dt, "at"), "; atomicAnd(", word_of(dt, buf, "at"), ", ~(", mask(dt),
                       " << shift)); atomicOr(", word_of(dt, buf, "at"), ", ", to_word(dt, v), " << shift); }");
  }
  std::string wide_load(const std::string& name, DType dt, const std::string& buf, const std::string& i, bool local,
                        const std::string& gate) const override {
    // 16 bytes as 4 words (a STAGE's copy reads global memory)
    if (local) throw CompileError("WGSL renderer: a 16-byte copy out of work-group memory");
    const std::string w = narrow(dt) ? word_index(dt, i) : i;
    const bool atomic = atomic_.count(buf) > 0;
    std::string words;
    for (int k = 0; k < 4; ++k) {
      const std::string at = detail::cat(buf, "[", w, " + ", k, "]");
      words += (k ? ", " : "") + (atomic ? "atomicLoad(&" + at + ")" : at);
    }
    const std::string type = "vec4<" + memory_type(dt) + ">";
    if (gate.empty()) return "let " + name + " = " + type + "(" + words + ");";
    return "var " + name + " = " + type + "();\nif (" + gate + ") { " + name + " = " + type + "(" + words + "); }";
  }
  std::string wide_store(DType dt, const std::string& buf, const std::string& i, bool local, const std::string& v) const override {
    if (!local) throw CompileError("WGSL renderer: a 16-byte copy into global memory");
    if (!narrow(dt)) return detail::cat("{ let at = ", i, "; ", buf, "[at] = ", v, ".x; ", buf, "[at + 1] = ", v, ".y; ", buf, "[at + 2] = ", v,
                                        ".z; ", buf, "[at + 3] = ", v, ".w; }");
    // work-group memory holds one element per word: the 4 words' elements, one by one
    const int64_t per_word = 4 / dt.itemsize(), bits = 8 * dt.itemsize();
    std::string s = detail::cat("{ let at = ", i, ";");
    for (int64_t e = 0; e < 4 * per_word; ++e)
      s += detail::cat(" ", buf, "[at + ", e, "] = (", v, "[", e / per_word, "] >> ", (e % per_word) * bits, "u) & ", mask(dt), ";");
    return s + " }";
  }

  std::string bitcast(const std::string&, const std::string& to, const std::string& v) const override { return "bitcast<" + to + ">(" + v + ")"; }
  std::string bitcast_value(DType from, DType to, const std::string& v) const override {
    if (narrow(from) || narrow(to)) return from_word(to, to_word(from, v));
    return from == to ? v : "bitcast<" + scalar_type(to) + ">(" + v + ")";
  }
  std::string round_narrow(DType dt, const std::string& v) const override {
    return std::string(dt.scalar() == dtypes::bfloat16 ? "tinyt_bf16_round" : "tinyt_f16_round") + "(f32(" + v + "))";
  }
  // an integer narrower than 32 bits wraps as C's cast to it does (a float through i32: to an
  // unsigned one as PyTorch's casts do, -1.0 to uint8 is 255)
  std::string cast_to(DType dt, const std::string& type, const std::string& e) const override {
    switch (dt.scalar_type()) {
      case ScalarType::int8: return "(bitcast<i32>(bitcast<u32>(i32(" + e + ")) << 24u) >> 24u)";
      case ScalarType::int16: return "(bitcast<i32>(bitcast<u32>(i32(" + e + ")) << 16u) >> 16u)";
      case ScalarType::uint8: return "(bitcast<u32>(i32(" + e + ")) & 0xffu)";
      case ScalarType::uint16: return "(bitcast<u32>(i32(" + e + ")) & 0xffffu)";
      default: return convert(type, e);
    }
  }
  std::string dialect_alu(const UOp& u, const std::vector<std::string>& a) const override {
    const auto& s = u.src();
    if (s.empty()) return "";
    const DType operand = s[0].dtype().scalar();
    switch (u.op()) {
      case Ops::POW: return "tinyt_pow(" + a[0] + ", " + a[1] + ")";
      case Ops::FDIV:
        // by a constant zero (a variance with no degrees of freedom left): IEEE's infinities and NaN,
        // which WGSL leaves indeterminate
        if (s[1].is_const() && s[1].const_float() == 0.0) {
          const bool negative = std::signbit(s[1].const_float());
          return choose("(" + a[0] + " == 0.0f || " + is_nan(a[0]) + ")", special_float(NAN, operand),
                        choose("(" + a[0] + " > 0.0f)", special_float(negative ? -INFINITY : INFINITY, operand),
                               special_float(negative ? INFINITY : -INFINITY, operand)));
        }
        return "";
      case Ops::SHL: return "(" + a[0] + " << u32(" + a[1] + "))";
      case Ops::SHR: return "(" + a[0] + " >> u32(" + a[1] + "))";
      case Ops::CMPNE:
        if (operand.is_float() && s[0] == s[1]) return is_nan(a[0]);  // isnan
        return "";
      case Ops::XOR: return operand.is_bool() ? "(" + a[0] + " != " + a[1] + ")" : "";
      case Ops::CMPLT: return operand.is_bool() ? "(!" + a[0] + " && " + a[1] + ")" : "";
      case Ops::MAX:
        if (operand.is_bool()) return "(" + a[0] + " || " + a[1] + ")";
        if (operand.is_float()) return choose("(" + is_nan(a[0]) + " || " + a[0] + " > " + a[1] + ")", a[0], a[1]);
        return "";
      default: return "";
    }
  }
  std::string math_function(const std::string& name, DType) const override { return name; }  // overloaded
  // no literals for them: made from their bits at run time (wgsl_bits_helper)
  std::string special_float(double v, DType) const override {
    return std::isnan(v) ? "tinyt_bits_f32(0x7fc00000u)" : v > 0 ? "tinyt_bits_f32(0x7f800000u)" : "tinyt_bits_f32(0xff800000u)";
  }

 private:
  mutable std::string module_scope_;    // bindings and work-group memory, before the entry point
  std::unordered_set<std::string> packed_, atomic_;  // global buffers of narrow elements: read only, stored to
  bool uses_pow_ = false;
  mutable int64_t local_bytes_ = 0;

  static bool narrow(DType dt) { return dt.scalar().itemsize() < 4; }
  bool packed(const std::string& buf) const { return packed_.count(buf) || atomic_.count(buf); }
  static std::string mask(DType dt) { return dt.scalar().itemsize() == 1 ? "0xffu" : "0xffffu"; }
  // where element `idx` of a packed buffer lies: its word, and its lowest bit in that word
  static std::string word_index(DType dt, const std::string& idx) { return "(" + idx + (dt.scalar().itemsize() == 1 ? " >> 2u)" : " >> 1u)"); }
  static std::string bit_offset(DType dt, const std::string& idx) {
    return dt.scalar().itemsize() == 1 ? "((u32(" + idx + ") & 3u) * 8u)" : "((u32(" + idx + ") & 1u) * 16u)";
  }
  std::string word_of(DType dt, const std::string& buf, const std::string& idx) const { return "&" + buf + "[" + word_index(dt, idx) + "]"; }
  static std::string is_nan(const std::string& v) { return "((bitcast<u32>(" + v + ") & 0x7fffffffu) > 0x7f800000u)"; }
  // a narrow element's register value from a u32 whose low bits hold it, and back
  static std::string from_word(DType dt, const std::string& w) {
    switch (dt.scalar_type()) {
      case ScalarType::bool_: return "((" + w + " & 0xffu) != 0u)";
      case ScalarType::int8: return "(bitcast<i32>(" + w + " << 24u) >> 24u)";
      case ScalarType::int16: return "(bitcast<i32>(" + w + " << 16u) >> 16u)";
      case ScalarType::uint8: return "(" + w + " & 0xffu)";
      case ScalarType::uint16: return "(" + w + " & 0xffffu)";
      case ScalarType::float16: return "tinyt_f16_to_f32(" + w + " & 0xffffu)";
      case ScalarType::bfloat16: return "bitcast<f32>(" + w + " << 16u)";
      default: throw InternalError(detail::cat("WGSL renderer: ", dt.name(), " is not kept in part of a word"));
    }
  }
  static std::string to_word(DType dt, const std::string& v) {
    switch (dt.scalar_type()) {
      case ScalarType::bool_: return "select(0u, 1u, " + v + ")";
      case ScalarType::int8: return "(bitcast<u32>(" + v + ") & 0xffu)";
      case ScalarType::int16: return "(bitcast<u32>(" + v + ") & 0xffffu)";
      case ScalarType::uint8: return "(" + v + " & 0xffu)";
      case ScalarType::uint16: return "(" + v + " & 0xffffu)";
      case ScalarType::float16: return "tinyt_f32_to_f16(" + v + ")";
      case ScalarType::bfloat16: return "tinyt_f32_to_bf16(" + v + ")";
      default: throw InternalError(detail::cat("WGSL renderer: ", dt.name(), " is not kept in part of a word"));
    }
  }
};

/// A linearized program as a WGSL compute shader whose entry point is the program's name.
inline std::string render_wgsl(const codegen::Program& p) { return WGSLRenderer().render(p); }

}  // namespace renderer
}  // namespace tinyt::inline v0
