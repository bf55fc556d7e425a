// The LLVM IR renderer: a linearized kernel as a textual LLVM IR module that LLVM 14 through 20
// all parse. Pointers are written typed (`float*`): LLVM 14 needs them, and LLVM 17+ reads them
// as opaque `ptr`.
//
// The module defines `void NAME(i8** bufs, i64* vars, i32 core_id, i32 core_count)`, the C ABI
// of the C renderer's `void NAME(void**, const long long*, int, int)`. It loads the buffer
// pointers and calls a body whose pointer parameters are `noalias`, the
// `restrict` of the C kernels. Each UOp is one SSA value (or a constant written in place); loops
// are phi-counted blocks; accumulators are allocas that mem2reg promotes.
//
// The numerics are the C renderer's: NaN-propagating MAX, integer division that never traps
// (codegen::division_rules makes every divisor safe before either renders),
// bool as i1 (one byte in memory). float16 and bfloat16 arithmetic reaches the renderer already
// lowered to float32 (codegen/narrow_floats.hpp): they appear only in memory, constants and
// casts; bfloat16 is stored as its 16 bits and held in a float. Float ops carry no fast-math
// flag, so nothing is contracted into an FMA; a fused multiply-add is MULACC (llvm.fma), where
// codegen chose it.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_map>

#include "../codegen/linearize.hpp"

namespace tinyt::inline v0 {
namespace renderer {

namespace detail {
using tinyt::detail::cat;


/// The IR type a value of `dt` is computed in.
inline std::string llvm_type(DType dt) {
  switch (dt.scalar_type()) {
    case ScalarType::bool_:
      return "i1";
    case ScalarType::int8:
    case ScalarType::uint8:
      return "i8";
    case ScalarType::int16:
    case ScalarType::uint16:
      return "i16";
    case ScalarType::int32:
    case ScalarType::uint32:
      return "i32";
    case ScalarType::int64:
    case ScalarType::uint64:
    case ScalarType::index:
      return "i64";
    case ScalarType::float16:
      return "half";
    case ScalarType::bfloat16:
      return "float";  // a float holding a bfloat16 value
    case ScalarType::float32:
      return "float";
    case ScalarType::float64:
      return "double";
    default:
      throw CompileError(cat("LLVM renderer: no IR type for ", dt.name()));
  }
}
/// The IR type a value of `dt` has in memory: bool is a byte, bfloat16 its 16 bits.
inline std::string llvm_memory_type(DType dt) {
  if (dt.scalar().is_bool()) return "i8";
  if (dt.scalar() == dtypes::bfloat16) return "i16";
  return llvm_type(dt);
}
/// The IR type of a vector dtype's value: `<16 x float>`.
inline std::string llvm_vector_type(DType dt) { return cat("<", dt.count(), " x ", llvm_type(dt.scalar()), ">"); }
/// A vector type in an intrinsic's name: `v16f32`.
inline std::string llvm_vector_suffix(DType dt) {
  const std::string t = llvm_type(dt.scalar());
  return cat("v", dt.count(), t == "float" ? "f32" : t == "double" ? "f64" : t == "half" ? "f16" : t);
}
inline int llvm_align(DType dt) {
  return dt.scalar().is_index() ? 8 : std::max(dt.scalar().itemsize(), 1);
}

/// A float constant as IR spells it: the exact double in hex (half: its own 16 bits). NaN is the
/// positive quiet NaN, as C's NAN.
inline std::string llvm_float(double v, DType dt) {
  char buf[24];
  if (dt.scalar() == dtypes::float16) {
    const auto bits =
        std::isnan(v) ? uint16_t{0x7e00} : std::bit_cast<uint16_t>(half_t(static_cast<float>(v)));
    std::snprintf(buf, sizeof buf, "0xH%04X", static_cast<unsigned>(bits));
    return buf;
  }
  if (std::isnan(v))
    v = std::numeric_limits<double>::quiet_NaN();
  else if (dt.scalar() != dtypes::float64)
    v = static_cast<float>(v);  // float and bfloat16
  std::snprintf(buf, sizeof buf, "0x%016llX",
                static_cast<unsigned long long>(std::bit_cast<uint64_t>(v)));
  return buf;
}

/// A constant of any dtype; integers as the signed value of their bits.
inline std::string llvm_literal(const UOp& c) {
  const DType dt = c.dtype().scalar();
  if (dt.is_float()) return llvm_float(c.const_float(), dt);
  if (dt.is_bool()) return c.const_int() ? "true" : "false";
  // IR integers have no sign: an unsigned value with its top bit set is written negative
  const int bits = 8 * dt.itemsize();
  i128 v = wrap_int(c.const_int(), dt);
  if (v > INT64_MAX || (dt.is_unsigned() && v >> (bits - 1))) v -= static_cast<i128>(1) << bits;
  return cat(static_cast<long long>(v));
}

/// A name IR can quote: `"` and `\` and control characters are escaped.
inline std::string llvm_quoted(const std::string& name) {
  std::string out = "\"";
  for (char ch : name) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || ch == '"' || ch == '\\') {
      char esc[4];
      std::snprintf(esc, sizeof esc, "\\%02X", u);
      out += esc;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

inline const char* llvm_intrinsic(Ops op) {
  switch (op) {
    case Ops::EXP2:
      return "exp2";
    case Ops::LOG2:
      return "log2";
    case Ops::SIN:
      return "sin";
    case Ops::SQRT:
      return "sqrt";
    case Ops::TRUNC:
      return "trunc";
    case Ops::POW:
      return "pow";
    default:
      return nullptr;
  }
}

// The C renderer's tinyt_f32_to_bf16 / tinyt_bf16_to_f32, bit for bit.
inline constexpr const char* llvm_bf16_helpers =
    "define internal i16 @tinyt.f32_to_bf16(float %f) #0 {\n"
    "  %u = bitcast float %f to i32\n"
    "  %hi = lshr i32 %u, 16\n"
    "  %lsb = and i32 %hi, 1\n"
    "  %bias = add i32 %lsb, 32767\n"
    "  %sum = add i32 %u, %bias\n"
    "  %nearest = lshr i32 %sum, 16\n"
    "  %quiet = or i32 %hi, 64\n"  // NaN stays NaN
    "  %nan = fcmp uno float %f, 0.0\n"
    "  %bits = select i1 %nan, i32 %quiet, i32 %nearest\n"
    "  %r = trunc i32 %bits to i16\n"
    "  ret i16 %r\n}\n"
    "define internal float @tinyt.bf16_to_f32(i16 %b) #0 {\n"
    "  %w = zext i16 %b to i32\n"
    "  %s = shl i32 %w, 16\n"
    "  %f = bitcast i32 %s to float\n"
    "  ret float %f\n}\n"
    "define internal float @tinyt.bf16_round(float %f) #0 {\n"
    "  %b = call i16 @tinyt.f32_to_bf16(float %f)\n"
    "  %r = call float @tinyt.bf16_to_f32(i16 %b)\n"
    "  ret float %r\n}\n";
}  // namespace detail

/// Renders a program as an LLVM IR module.
class LLVMRenderer {
 public:
  std::string render(const codegen::Program& p) {
    program_ = &p;
    for (const UOp& u : p.ops) line(u);
    const std::string fn = detail::llvm_quoted(p.name),
                      body = detail::llvm_quoted(p.name + ".body");
    std::string params, args, loads;
    for (size_t i = 0; i < p.globals.size(); ++i) {
      const std::string t =
          detail::llvm_memory_type(p.globals[i].is_void() ? dtypes::uint8 : p.globals[i].base()) +
          "*";
      params += detail::cat(t, " noalias %data", i, ", ");
      args += detail::cat(t, " %p", i, ", ");
      loads += detail::cat("  %a", i, " = getelementptr i8*, i8** %bufs, i64 ", i, "\n  %b", i,
                           " = load i8*, i8** %a", i, ", align 8\n  %p", i, " = bitcast i8* %b", i,
                           " to ", t, "\n");
    }
    std::ostringstream out;
    out << "; tinyt kernel " << p.name << "\n";
    // the body is called, not inlined: one call per launch and thread, and LLVM's inliner does
    // not copy a tile of thousands of instructions (3.7 of the 512 matmul's 33 ms of passes)
    out << "define internal void @" << body << "(" << params
        << "i64* %vars, i32 %core_id, i32 %core_count) #1 {\n"
        << "entry:\n"
        << allocas_.str() << body_.str()
        // streaming stores are weakly ordered: drained before the kernel returns and another
        // thread may read what they wrote
        << (streams_ ? "  fence seq_cst\n" : "") << "  ret void\n}\n\n";
    out << "define void @" << fn
        << "(i8** %bufs, i64* %vars, i32 %core_id, i32 %core_count) #1 {\nentry:\n"
        << loads << "  call void @" << body << "(" << args
        << "i64* %vars, i32 %core_id, i32 %core_count)\n  ret void\n}\n\n";
    if (bf16_) out << detail::llvm_bf16_helpers << "\n";
    if (streams_) out << "!0 = !{i32 1}\n";  // !nontemporal
    for (const std::string& d : declares_) out << d << "\n";
    // 512-bit vectors where the target has them (LLVM's default on Intel is 256): a matmul's
    // register tile of fused multiply-adds spills out of 32 ymm registers and fits in 32 zmm
    out << "attributes #0 = { alwaysinline nounwind \"prefer-vector-width\"=\"512\" }\n"
        << "attributes #1 = { nounwind \"prefer-vector-width\"=\"512\" }\n";
    return out.str();
  }

 private:
  const codegen::Program* program_ = nullptr;
  std::unordered_map<const UOpNode*, std::string> name_;
  std::unordered_map<const UOpNode*, int> loop_;  // RANGE -> its loop's number, -1 for THREAD
  std::ostringstream allocas_, body_;
  std::string block_ = "entry";  // the basic block being written
  std::set<std::string> declares_;
  int values_ = 0, blocks_ = 0;
  bool bf16_ = false, streams_ = false;

  const std::string& ref(const UOp& u) { return name_.at(u.get()); }
  void inst(const std::string& s) { body_ << "  " << s << "\n"; }
  std::string emit(const std::string& rhs) {
    std::string n = "%v" + std::to_string(values_++);
    inst(n + " = " + rhs);
    return n;
  }
  void label(const std::string& l) {
    body_ << l << ":\n";
    block_ = l;
  }
  std::string bf16_call(const char* fn, const char* ret, const char* arg_type,
                        const std::string& v) {
    bf16_ = true;
    return emit(detail::cat("call ", ret, " @tinyt.", fn, "(", arg_type, " ", v, ")"));
  }

  // a float16 value as float (exact); a float rounded to float16 or bfloat16 (for conversions)
  std::string widen(const std::string& v, DType dt) {
    return dt.scalar() == dtypes::float16 ? emit("fpext half " + v + " to float") : v;
  }
  std::string narrow(const std::string& v, DType dt) {
    if (dt.scalar() == dtypes::float16) return emit("fptrunc float " + v + " to half");
    if (dt.scalar() == dtypes::bfloat16) return bf16_call("bf16_round", "float", "float", v);
    return v;
  }
  static std::string arith_type(DType dt) {
    return dt.scalar() == dtypes::float64 ? "double" : "float";
  }

  // `v` of dtype `from` converted to `to` as a C cast converts it
  std::string convert(const std::string& v, DType from, DType to) {
    from = from.scalar(), to = to.scalar();
    if (from == to) return v;
    const std::string ft = detail::llvm_type(from), tt = detail::llvm_type(to);
    if (to.is_bool()) {
      if (from.is_float())
        return emit(detail::cat("fcmp une ", arith_type(from), " ", widen(v, from), ", 0.0"));
      return emit(detail::cat("icmp ne ", ft, " ", v, ", 0"));
    }
    if (!from.is_float() && !to.is_float()) {
      const int fb = from.is_bool() ? 1 : from.is_index() ? 64 : 8 * from.itemsize();
      const int tb = to.is_index() ? 64 : 8 * to.itemsize();
      if (fb == tb) return v;
      if (fb > tb) return emit(detail::cat("trunc ", ft, " ", v, " to ", tt));
      const bool sign = !from.is_bool() && !from.is_unsigned();
      return emit(detail::cat(sign ? "sext " : "zext ", ft, " ", v, " to ", tt));
    }
    if (!from.is_float()) {  // int or bool -> float: convert in float (double), then round down
      const bool sign = !from.is_bool() && !from.is_unsigned();
      const std::string f =
          emit(detail::cat(sign ? "sitofp " : "uitofp ", ft, " ", v, " to ", arith_type(to)));
      return narrow(f, to);
    }
    if (!to.is_float()) {
      // float -> int: small targets go through int (and uint32 through int64), as x86 C does;
      // out-of-range values are undefined in C either way
      const std::string w = widen(v, from), at = arith_type(from);
      if (to.itemsize() < 4 || to == dtypes::uint32) {
        const std::string wide = to == dtypes::uint32 ? "i64" : "i32";
        return emit(detail::cat("trunc ", wide, " ",
                                emit(detail::cat("fptosi ", at, " ", w, " to ", wide)), " to ",
                                tt));
      }
      return emit(detail::cat(to.is_unsigned() ? "fptoui " : "fptosi ", at, " ", w, " to ", tt));
    }
    // float -> float
    if (to == dtypes::float64)
      return emit(detail::cat("fpext float ", widen(v, from), " to double"));
    if (to == dtypes::float16)
      return emit(
          detail::cat("fptrunc float ", from == dtypes::float64 ? round_to_odd(v) : v, " to half"));
    // to float32 or bfloat16: in float first, then bfloat16 rounds
    std::string f = v;
    if (from == dtypes::float16) f = emit("fpext half " + v + " to float");
    if (from == dtypes::float64) f = emit("fptrunc double " + v + " to float");
    return to == dtypes::bfloat16 ? narrow(f, to) : f;
  }
  // double -> float rounded to odd (toward zero, then the last bit set if inexact), so that
  // rounding that float to half is the correctly rounded double -> half. LLVM would call
  // __truncdfhf2, whose half return ABI LLVM 14 and libgcc disagree on.
  std::string round_to_odd(const std::string& d) {
    declares_.insert("declare double @llvm.fabs.f64(double)");
    const std::string f = emit("fptrunc double " + d + " to float"),
                      back = emit("fpext float " + f + " to double");
    const std::string inexact =
        emit(detail::cat("zext i1 ", emit("fcmp une double " + back + ", " + d), " to i32"));
    const std::string away = emit(
        detail::cat("fcmp ogt double ", emit("call double @llvm.fabs.f64(double " + back + ")"),
                    ", ", emit("call double @llvm.fabs.f64(double " + d + ")")));
    const std::string toward_zero =
        emit(detail::cat("sub i32 ", emit("bitcast float " + f + " to i32"), ", ",
                         emit("zext i1 " + away + " to i32")));
    return emit(detail::cat("bitcast i32 ",
                            emit(detail::cat("or i32 ", toward_zero, ", ", inexact)), " to float"));
  }
  // source i of u, as a value of dtype `dt`
  std::string operand(const UOp& u, size_t i, DType dt) {
    return convert(ref(u.src(i)), u.src(i).dtype(), dt);
  }

  void line(const UOp& u) {
    const auto& s = u.src();
    switch (u.op()) {
      case Ops::DEFINE_GLOBAL:
        name_[u.get()] = "%data" + std::to_string(u.arg().as_int());
        return;
      case Ops::DEFINE_VAR: {  // symbolic variable k: vars[k]
        const auto k = std::find(program_->vars.begin(), program_->vars.end(), u) - program_->vars.begin();
        const std::string at = emit(detail::cat("getelementptr inbounds i64, i64* %vars, i64 ", k));
        name_[u.get()] = convert(emit("load i64, i64* " + at + ", align 8"), dtypes::int64, u.dtype());
        return;
      }
      case Ops::CONST:
        name_[u.get()] = detail::llvm_literal(u);
        return;
      case Ops::DEFINE_REG: {
        const std::string n = "%acc" + std::to_string(u.arg().as_int());
        allocas_ << "  " << n << " = alloca " << detail::llvm_type(u.dtype().base()) << ", align "
                 << detail::llvm_align(u.dtype().base()) << "\n";
        name_[u.get()] = n;
        return;
      }
      case Ops::DEFINE_LOCAL: {  // a PACK's copy: the running thread's own, on its stack
        const std::string n = "%temp" + std::to_string(u.arg().as_int());
        allocas_ << "  " << n << " = alloca " << detail::llvm_memory_type(u.dtype().base()) << ", i64 "
                 << u.dtype().size() << ", align 64\n";
        name_[u.get()] = n;
        return;
      }
      case Ops::BARRIER:  // one thread fills and reads a copy: nothing to wait for
        return;
      case Ops::RANGE:
        return range(u);
      case Ops::END:
        return end(u);
      case Ops::INDEX: {
        if (s[0].op() == Ops::DEFINE_REG) {
          name_[u.get()] = ref(s[0]);
          return;
        }
        const std::string t = detail::llvm_memory_type(u.dtype().base());
        // a gated index may be out of bounds where its gate is false: no inbounds promise then
        name_[u.get()] =
            emit(detail::cat("getelementptr ", s.size() > 2 ? "" : "inbounds ", t, ", ", t, "* ",
                             ref(s[0]), ", i64 ", operand(u, 1, dtypes::index)));
        return;
      }
      case Ops::LOAD:
        name_[u.get()] = u.dtype().count() > 1 ? masked_load(u) : load(u);
        return;
      case Ops::STORE:
        return codegen::streams(u) ? streaming_store(u) : u.src(1).dtype().count() > 1 ? masked_store(u) : store(u);
      case Ops::GEP:  // a lane of a masked vector load (codegen/masked_vectors.hpp)
        name_[u.get()] = emit(detail::cat("extractelement ", detail::llvm_vector_type(s[0].dtype()), " ", ref(s[0]), ", i32 ", u.arg().as_int()));
        return;
      case Ops::VECTORIZE: {
        std::string v = "undef";
        const std::string t = detail::llvm_vector_type(u.dtype());
        for (size_t i = 0; i < s.size(); ++i)
          v = emit(detail::cat("insertelement ", t, " ", v, ", ", detail::llvm_type(u.dtype().scalar()), " ",
                               operand(u, i, u.dtype().scalar()), ", i32 ", i));
        name_[u.get()] = v;
        return;
      }
      default:
        break;
    }
    if (GroupOp::ALU.contains(u.op()) || u.op() == Ops::CAST || u.op() == Ops::BITCAST) {
      name_[u.get()] = alu(u);
      return;
    }
    throw CompileError(
        detail::cat("LLVM renderer: cannot render ", op_name(u.op()), " of ", u.dtype().name()));
  }

  void range(const UOp& u) {
    if (codegen::range_kind(u) == codegen::RangeKind::thread) {  // one core's share: no loop
      loop_[u.get()] = -1;
      name_[u.get()] = emit("sext i32 %core_id to i64");
      return;
    }
    const int n = blocks_++;
    const std::string end = operand(u, 0, dtypes::index), i = detail::cat("%ridx", n),
                      from = block_;
    inst(detail::cat("br label %loop", n));
    label(detail::cat("loop", n));
    inst(detail::cat(i, " = phi i64 [ 0, %", from, " ], [ ", i, ".next, %latch", n, " ]"));
    inst(detail::cat("br i1 ", emit(detail::cat("icmp slt i64 ", i, ", ", end)), ", label %body", n,
                     ", label %exit", n));
    label(detail::cat("body", n));
    loop_[u.get()] = n;
    name_[u.get()] = i;
  }
  void end(const UOp& u) {
    const int n = loop_.at(u.src(0).get());
    if (n < 0) return;
    inst(detail::cat("br label %latch", n));
    label(detail::cat("latch", n));
    inst(detail::cat("%ridx", n, ".next = add nuw nsw i64 %ridx", n, ", 1"));
    inst(detail::cat("br label %loop", n));
    label(detail::cat("exit", n));
  }

  std::string load(const UOp& u) {
    const UOp& idx = u.src(0);
    const DType dt = u.dtype();
    if (idx.src(0).op() == Ops::DEFINE_REG)
      return emit(detail::cat("load ", detail::llvm_type(dt), ", ", detail::llvm_type(dt), "* ",
                              ref(idx), ", align ", detail::llvm_align(dt)));
    const std::string mt = detail::llvm_memory_type(dt);
    const std::string read =
        detail::cat("load ", mt, ", ", mt, "* ", ref(idx), ", align ", detail::llvm_align(dt));
    std::string v;
    const std::string zero = mt == "half"                      ? "0xH0000"
                             : mt == "float" || mt == "double" ? "0.0"
                                                               : "0";
    if (idx.src().size() > 2 && dt.count() == 1 && idx.src(0).op() == Ops::DEFINE_GLOBAL) {
      // gated, one element of a kernel's buffer: where the gate fails the load reads the
      // buffer's first element instead (a buffer a kernel reads has one) and its value is
      // dropped. No branch, so a padded copy's interior is straight-line code that the loop
      // vectorizer takes.
      const std::string gate = ref(idx.src(2));
      const std::string safe = emit(detail::cat("select i1 ", gate, ", ", mt, "* ", ref(idx), ", ", mt, "* ", ref(idx.src(0))));
      const std::string x = emit(detail::cat("load ", mt, ", ", mt, "* ", safe, ", align ", detail::llvm_align(dt)));
      v = emit(detail::cat("select i1 ", gate, ", ", mt, " ", x, ", ", mt, " ", zero));
    } else if (idx.src().size() > 2) {  // gated: memory is touched only where the gate holds
      const int n = blocks_++;
      const std::string from = block_;
      inst(detail::cat("br i1 ", ref(idx.src(2)), ", label %load", n, ", label %loaded", n));
      label(detail::cat("load", n));
      const std::string x = emit(read);
      inst(detail::cat("br label %loaded", n));
      label(detail::cat("loaded", n));
      v = emit(detail::cat("phi ", mt, " [ ", x, ", %load", n, " ], [ ", zero, ", %", from, " ]"));
    } else {
      v = emit(read);
    }
    if (dt.scalar().is_bool()) return emit("icmp ne i8 " + v + ", 0");
    if (dt.scalar() == dtypes::bfloat16) return bf16_call("bf16_to_f32", "float", "i16", v);
    return v;
  }

  void store(const UOp& u) {
    const UOp& idx = u.src(0);
    const bool reg = idx.src(0).op() == Ops::DEFINE_REG;
    const DType dt = reg ? idx.dtype().base() : idx.src(0).dtype().base();
    std::string v = operand(u, 1, dt);
    std::string t = detail::llvm_type(dt);
    if (!reg && dt.scalar().is_bool()) v = emit("zext i1 " + v + " to i8"), t = "i8";
    if (!reg && dt.scalar() == dtypes::bfloat16)
      v = bf16_call("f32_to_bf16", "i16", "float", v), t = "i16";
    const std::string write = detail::cat("store ", t, " ", v, ", ", t, "* ", ref(idx), ", align ", detail::llvm_align(dt));
    if (idx.src().size() <= 2) return inst(write);
    // gated (a padded axis): memory is written only where the gate holds
    const int n = blocks_++;
    inst(detail::cat("br i1 ", ref(idx.src(2)), ", label %store", n, ", label %stored", n));
    label(detail::cat("store", n));
    inst(write);
    inst(detail::cat("br label %stored", n));
    label(detail::cat("stored", n));
  }

  // Masked vector accesses (codegen/masked_vectors.hpp): the lanes whose gate holds, from
  // consecutive elements at the INDEX; a masked lane reads 0 and writes nothing.
  struct MaskedAccess {
    std::string type, fn, pointer, mask;  // the vector's type, the intrinsic, `T* p, i32 align, <n x i1> m`
  };
  MaskedAccess masked_access(const char* what, const UOp& idx, DType dt) {
    const std::string t = detail::llvm_vector_type(dt), mask = detail::cat("<", dt.count(), " x i1>");
    const std::string fn = detail::cat("@llvm.masked.", what, ".", detail::llvm_vector_suffix(dt), ".p0", detail::llvm_vector_suffix(dt));
    const std::string at = emit(detail::cat("bitcast ", detail::llvm_type(dt.scalar()), "* ", ref(idx), " to ", t, "*"));
    return {t, fn, detail::cat(t, "* ", at, ", i32 ", dt.scalar().itemsize(), ", ", mask, " ", ref(idx.src(2))), mask};
  }
  std::string masked_load(const UOp& u) {
    const MaskedAccess a = masked_access("load", u.src(0), u.dtype());
    declares_.insert(detail::cat("declare ", a.type, " ", a.fn, "(", a.type, "*, i32, ", a.mask, ", ", a.type, ")"));
    return emit(detail::cat("call ", a.type, " ", a.fn, "(", a.pointer, ", ", a.type, " zeroinitializer)"));
  }
  void masked_store(const UOp& u) {
    const MaskedAccess a = masked_access("store", u.src(0), u.src(1).dtype());
    declares_.insert(detail::cat("declare void ", a.fn, "(", a.type, ", ", a.type, "*, i32, ", a.mask, ")"));
    inst(detail::cat("call void ", a.fn, "(", a.type, " ", ref(u.src(1)), ", ", a.pointer, ")"));
  }

  // a whole vector written past the caches, at an address a multiple of its size
  void streaming_store(const UOp& u) {
    const DType dt = u.src(1).dtype();
    const std::string t = detail::llvm_vector_type(dt);
    const std::string at = emit(detail::cat("bitcast ", detail::llvm_type(dt.scalar()), "* ", ref(u.src(0)), " to ", t, "*"));
    inst(detail::cat("store ", t, " ", ref(u.src(1)), ", ", t, "* ", at, ", align ", dt.itemsize(),
                     ", !nontemporal !0"));
    streams_ = true;
  }

  std::string alu(const UOp& u) {
    const auto& s = u.src();
    const DType dt = u.dtype().scalar();
    if (u.op() == Ops::CAST) return convert(ref(s[0]), s[0].dtype(), dt);
    if (u.op() == Ops::BITCAST) return bitcast(u);
    if (u.op() == Ops::WHERE)
      return emit(detail::cat("select i1 ", operand(u, 0, dtypes::bool_), ", ",
                              detail::llvm_type(dt), " ", operand(u, 1, dt), ", ",
                              detail::llvm_type(dt), " ", operand(u, 2, dt)));
    // the operands' dtype decides how to compute (comparisons make bools of any dtype)
    const DType in = s[0].dtype().scalar();
    return in.is_float() ? float_alu(u, in) : int_alu(u, in);
  }

  std::string float_alu(const UOp& u, DType in) {
    if (in != dtypes::float32 && in != dtypes::float64)  // narrow_floats.hpp lowers the others
      throw InternalError(detail::cat("LLVM renderer: ", op_name(u.op()), " of ", in.name(),
                                      " was not lowered to float32"));
    const std::string at = detail::llvm_type(in), suffix = in == dtypes::float64 ? ".f64" : ".f32";
    auto a = [&](size_t i) { return operand(u, i, in); };
    auto call = [&](const std::string& fn, size_t args) {
      std::string types, values;
      for (size_t i = 0; i < args; ++i) {
        types += (i ? ", " : "") + at;
        values += detail::cat(i ? ", " : "", at, " ", a(i));
      }
      declares_.insert(detail::cat("declare ", at, " @llvm.", fn, suffix, "(", types, ")"));
      return emit(detail::cat("call ", at, " @llvm.", fn, suffix, "(", values, ")"));
    };
    if (const char* fn = detail::llvm_intrinsic(u.op())) return call(fn, u.op() == Ops::POW ? 2 : 1);
    if (u.op() == Ops::MULACC) return call("fma", 3);  // a*b+c rounded once, on every CPU
    if (const char* op = float_instruction(u.op())) {
      const std::string args = u.op() == Ops::RECIPROCAL ? "1.0, " + a(0)
                               : u.op() == Ops::NEG      ? a(0)
                                                         : a(0) + ", " + a(1);
      return emit(detail::cat(op, " ", at, " ", args));
    }
    if (u.op() == Ops::MAX) {  // a when a is NaN or greater, else b: NaN in either operand wins
      const std::string x = a(0), y = a(1);
      const std::string nan = emit(detail::cat("fcmp uno ", at, " ", x, ", ", x));
      const std::string gt = emit(detail::cat("fcmp ogt ", at, " ", x, ", ", y));
      return emit(detail::cat("select i1 ", emit("or i1 " + nan + ", " + gt), ", ", at, " ", x,
                              ", ", at, " ", y));
    }
    throw CompileError(
        detail::cat("LLVM renderer: cannot render ", op_name(u.op()), " of ", in.name()));
  }

  static const char* float_instruction(Ops op) {
    switch (op) {
      case Ops::ADD:
        return "fadd";
      case Ops::SUB:
        return "fsub";
      case Ops::MUL:
        return "fmul";
      case Ops::FDIV:
        return "fdiv";
      case Ops::RECIPROCAL:
        return "fdiv";
      case Ops::NEG:
        return "fneg";
      case Ops::CMPLT:
        return "fcmp olt";  // false with NaN, like C's <
      case Ops::CMPNE:
        return "fcmp une";  // true with NaN, like C's !=
      case Ops::CMPEQ:
        return "fcmp oeq";
      default:
        return nullptr;
    }
  }

  std::string int_alu(const UOp& u, DType in) {
    const DType dt = u.dtype().scalar();
    const bool sign = !in.is_unsigned() && !in.is_bool();
    const bool cmp = GroupOp::Comparison.contains(u.op());
    const DType od = cmp ? in : dt;  // the dtype both operands are computed in
    auto a = [&](size_t i) { return operand(u, i, od); };
    auto bin = [&](const char* op) {
      return emit(detail::cat(op, " ", detail::llvm_type(od), " ", a(0), ", ", a(1)));
    };
    switch (u.op()) {
      // bools add as OR, multiply as AND and subtract as XOR (C then converts back to bool)
      case Ops::ADD:
        return bin(od.is_bool() ? "or" : "add");
      case Ops::SUB:
        return bin(od.is_bool() ? "xor" : "sub");
      case Ops::MUL:
        return bin(od.is_bool() ? "and" : "mul");
      case Ops::AND:
        return bin("and");
      case Ops::OR:
        return bin("or");
      case Ops::XOR:
        return bin("xor");
      case Ops::SHL:
        return bin("shl");
      case Ops::SHR:
        return bin(sign ? "ashr" : "lshr");
      case Ops::NEG:
        return od.is_bool() ? a(0) : emit(detail::cat("sub ", detail::llvm_type(od), " 0, ", a(0)));
      case Ops::CMPLT:
        return bin(sign ? "icmp slt" : "icmp ult");
      case Ops::CMPNE:
        return bin("icmp ne");
      case Ops::CMPEQ:
        return bin("icmp eq");
      case Ops::MAX: {
        const std::string x = a(0), y = a(1), ty = detail::llvm_type(od);
        const std::string gt =
            emit(detail::cat(sign ? "icmp sgt " : "icmp ugt ", ty, " ", x, ", ", y));
        return emit(detail::cat("select i1 ", gt, ", ", ty, " ", x, ", ", ty, " ", y));
      }
      case Ops::IDIV:
      case Ops::MOD:
        // (the divisor is never 0 or -1 here: codegen::division_rules saw to it)
        return bin(u.op() == Ops::MOD ? (sign ? "srem" : "urem") : (sign ? "sdiv" : "udiv"));
      default:
        break;
    }
    throw CompileError(
        detail::cat("LLVM renderer: cannot render ", op_name(u.op()), " of ", in.name()));
  }

  // the bits reinterpreted; bool is its byte and bfloat16 its 16 bits, as in memory
  std::string bitcast(const UOp& u) {
    const DType from = u.src(0).dtype().scalar(), to = u.dtype().scalar();
    std::string v = ref(u.src(0));
    if (from.is_bool()) v = emit("zext i1 " + v + " to i8");
    if (from == dtypes::bfloat16) v = bf16_call("f32_to_bf16", "i16", "float", v);
    const std::string fm = detail::llvm_memory_type(from), tm = detail::llvm_memory_type(to);
    if (fm != tm) v = emit(detail::cat("bitcast ", fm, " ", v, " to ", tm));
    if (to.is_bool()) return emit("icmp ne i8 " + v + ", 0");
    if (to == dtypes::bfloat16) return bf16_call("bf16_to_f32", "float", "i16", v);
    return v;
  }
};

/// LLVM IR for a program.
inline std::string render_llvm(const codegen::Program& p) { return LLVMRenderer().render(p); }

}  // namespace renderer
}  // namespace tinyt::inline v0
