// What EMU runs (backend/emu.hpp): the device it emulates (Spec), one work-item's values and C's
// arithmetic on them as the renderers spell it (integers wrap at their width, float16 and
// bfloat16 held in floats and rounded where the generated code rounds them), and a listing
// (renderer/listing.hpp) parsed and checked into the ops a launch runs.
#pragma once

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "../dtype.hpp"
#include "../tensor_cores.hpp"
#include "../uop.hpp"
#include "compiled.hpp"

namespace tinyt::inline v0 {
namespace backend {
namespace emu {

/// The device EMU emulates.
struct Spec {
  std::string name;              // "cuda_sm80", "cl"
  int64_t warp = 32;             // work-items that shuffle and share a tensor-core op (0: none)
  int64_t max_threads = 1024;    // work-items in a work-group at most
  int64_t shared_bytes = 48 << 10;
  int64_t compute_units = 108;   // multiprocessors (an A100's count)
  int64_t launch_local = 256;    // the work-group size the code generator may choose (as CUDA's device)
  bool tensor_cores = true;      // runs WMMA m16n8k16 (tensor_cores.hpp)
};

/// The Spec of EMU_TARGET `name`; DeviceError naming the known ones otherwise.
inline Spec spec(const std::string& name) {
  if (name.empty() || name == "cuda_sm80") return {"cuda_sm80", 32, 1024, 48 << 10, 108, 256, true};
  if (name == "cl") return {"cl", 0, 256, 32 << 10, 16, 256, false};
  throw DeviceError(tinyt::detail::cat("EMU: unknown EMU_TARGET '", name, "'; EMU emulates cuda_sm80 (the default) or cl"));
}

/// One value of one work-item: integers sign- or zero-extended to 64 bits, bool 0 or 1, float16,
/// bfloat16 and float32 in a float (a narrow float holds a value it can represent), float64.
union Slot {
  int64_t i;
  uint64_t u;
  float f;
  double d;
};

/// How a dtype's values are held and computed.
enum class Kind : uint8_t { sint, uint, f32, f64 };
inline Kind kind_of(DType dt) {
  const DType s = dt.scalar();
  if (s == dtypes::float64) return Kind::f64;
  if (s.is_float()) return Kind::f32;
  if (s.is_unsigned()) return Kind::uint;
  return Kind::sint;  // signed integers, index, bool
}

/// An integer (its 64 bits) wrapped to `dt`'s width, as the generated code's arithmetic wraps
/// (dtype.hpp's wrap_int; index, 64 bits in a kernel, keeps them).
inline Slot wrap(uint64_t v, DType dt) {
  Slot out;
  out.i = static_cast<int64_t>(wrap_int(static_cast<i128>(v), dt));
  return out;
}

/// A float rounded to a narrow float's precision (float16 or bfloat16), kept in a float.
inline float round_narrow(float f, DType dt) {
  if (dt.scalar() == dtypes::float16) return static_cast<float>(half_t(f));
  if (dt.scalar() == dtypes::bfloat16) return static_cast<float>(bfloat16_t(f));
  return f;
}

/// A value's bits as it is stored in memory of dtype `dt` (little end first).
inline uint64_t to_bits(Slot v, DType dt) {
  switch (dt.scalar_type()) {
    case ScalarType::float16: return std::bit_cast<uint16_t>(half_t(v.f));
    case ScalarType::bfloat16: return bfloat16_t(v.f).bits;
    case ScalarType::float32: return std::bit_cast<uint32_t>(v.f);
    case ScalarType::float64: return v.u;
    default: {
      const int bytes = dt.scalar().itemsize();
      return bytes == 8 ? v.u : v.u & ((uint64_t{1} << (8 * bytes)) - 1);
    }
  }
}
/// The value memory of dtype `dt` holds as `bits`.
inline Slot from_bits(uint64_t bits, DType dt) {
  Slot out;
  switch (dt.scalar_type()) {
    case ScalarType::float16: out.f = static_cast<float>(std::bit_cast<half_t>(static_cast<uint16_t>(bits))); return out;
    case ScalarType::bfloat16: {
      bfloat16_t b;
      b.bits = static_cast<uint16_t>(bits);
      out.f = static_cast<float>(b);
      return out;
    }
    case ScalarType::float32: out.f = std::bit_cast<float>(static_cast<uint32_t>(bits)); return out;
    case ScalarType::float64: out.u = bits; return out;
    default: return wrap(bits, dt);
  }
}

/// `v` of dtype `from` converted to dtype `to`, as C converts (a float out of an integer's range,
/// undefined in C, saturates; NaN becomes 0).
inline Slot convert(Slot v, DType from, DType to) {
  const Kind kf = kind_of(from), kt = kind_of(to);
  Slot out;
  if (to.scalar().is_bool()) {
    out.i = kf == Kind::f32 ? v.f != 0 : kf == Kind::f64 ? v.d != 0 : v.u != 0;
    return out;
  }
  if (kt == Kind::f32 || kt == Kind::f64) {
    double d = 0;
    float f = 0;
    switch (kf) {
      case Kind::sint: f = static_cast<float>(v.i), d = static_cast<double>(v.i); break;
      case Kind::uint: f = static_cast<float>(v.u), d = static_cast<double>(v.u); break;
      case Kind::f32: f = v.f, d = v.f; break;
      case Kind::f64: f = static_cast<float>(v.d), d = v.d; break;
    }
    if (kt == Kind::f64) out.d = d;
    else out.f = round_narrow(f, to);  // (a double reaches a narrow float through float, as GPU code rounds it)
    return out;
  }
  if (kf == Kind::sint || kf == Kind::uint) return wrap(v.u, to);
  const double d = kf == Kind::f32 ? static_cast<double>(v.f) : v.d;
  const double lo = static_cast<double>(dtypes::min_int(to)), hi = static_cast<double>(dtypes::max_int(to));
  if (std::isnan(d)) return wrap(0, to);
  if (d <= lo) return kt == Kind::uint ? wrap(0, to) : wrap(static_cast<uint64_t>(static_cast<int64_t>(dtypes::min_int(to))), to);
  if (d >= hi) return wrap(static_cast<uint64_t>(dtypes::max_int(to)), to);
  return kt == Kind::uint ? wrap(static_cast<uint64_t>(std::trunc(d)), to) : wrap(static_cast<uint64_t>(static_cast<int64_t>(std::trunc(d))), to);
}

/// One op of a parsed listing.
struct Instr {
  Ops op = Ops::NOOP;
  DType dtype;
  std::vector<int32_t> src;
  Slot value{};            // CONST
  int64_t number = 0;      // DEFINE_*: its number; RANGE: its launch dimension (-1: a loop)
  // RANGE: a loop, or not a loop but a work-item's index (in the launch, of its work-group, in its work-group)
  enum class Index : uint8_t { loop, global, group, local } index = Index::loop;
  bool work_item() const { return index != Index::loop; }
  int32_t partner = -1;    // RANGE: its END; END: its RANGE
  DType input;             // WMMA: the type of its operands (float32: rounded to TF32)
  bool trans = false;      // LDMATRIX: transposed (number: its tiles)
  const TensorCore* tc = nullptr;  // WMMA: its instruction
};

/// A listing parsed and checked: what EMU's compiler makes of a kernel.
struct Kernel {
  std::string name;
  std::vector<Instr> code;
  int64_t local_bytes = 0;  // the local memory one work-group uses
};

namespace detail {
inline Ops parse_op(const std::string& name) {
  for (size_t i = 0; i < op_count; ++i)
    if (name == op_name(static_cast<Ops>(i))) return static_cast<Ops>(i);
  throw CompileError(tinyt::detail::cat("EMU: unknown op '", name, "'"));
}
inline DType parse_dtype(const std::string& text) {
  const size_t star = text.find('*');
  std::string scalar = text.substr(0, star);
  int lanes = 1;  // "float32.vec(4)"
  if (const size_t vec = scalar.find(".vec("); vec != std::string::npos) lanes = std::stoi(scalar.substr(vec + 5)), scalar.resize(vec);
  DType base = scalar == "index" ? dtypes::index : scalar == "void" ? dtypes::void_ : dtypes::from_name(scalar);
  if (lanes > 1) base = base.vec(lanes);
  if (star == std::string::npos) return base;
  const std::string rest = text.substr(star + 1);
  if (rest == "global") return base.ptr();
  const size_t bracket = rest.find('[');
  if (bracket == std::string::npos || rest.back() != ']') throw CompileError("EMU: bad pointer type '" + text + "'");
  const std::string space = rest.substr(0, bracket);
  const int64_t size = std::stoll(rest.substr(bracket + 1));
  if (space == "local") return base.ptr(size, AddrSpace::local);
  if (space == "reg") return base.ptr(size, AddrSpace::reg);
  throw CompileError("EMU: bad address space in '" + text + "'");
}
inline Slot parse_value(const std::string& text, DType dt) {
  Slot v;
  const Kind k = kind_of(dt);
  if (k == Kind::f32 || k == Kind::f64) {
    const double d = text == "nan" ? NAN : text == "inf" ? INFINITY : text == "-inf" ? -INFINITY : std::strtod(text.c_str(), nullptr);
    if (k == Kind::f64) v.d = d;
    else v.f = round_narrow(static_cast<float>(d), dt);
    return v;
  }
  return wrap(k == Kind::uint ? std::stoull(text) : static_cast<uint64_t>(std::stoll(text)), dt);
}
}  // namespace detail

/// Parses and checks a listing: every source defined before its use, loops closed, vectors and
/// ops EMU does not run refused (CompileError), local memory within the emulated device's.
inline Kernel parse(const std::string& listing, const Spec& spec) {
  Kernel k;
  std::istringstream in(listing);
  std::string line;
  std::vector<int32_t> open;  // the RANGEs open at each line
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    std::istringstream words(line);
    std::string first;
    words >> first;
    if (first == "kernel") {
      words >> k.name;
      continue;
    }
    const auto fail = [&](const std::string& why) {
      return CompileError(tinyt::detail::cat("EMU: ", k.name, " line ", line_number, " (", line, "): ", why));
    };
    if (first != tinyt::detail::cat("%", k.code.size())) throw fail("ops must be numbered in order");
    Instr ins;
    std::string op, dtype, word;
    words >> op >> dtype;
    try {
      ins.op = detail::parse_op(op);
      ins.dtype = detail::parse_dtype(dtype);
    } catch (const Error& e) {
      throw fail(e.what());
    }
    std::vector<std::string> arg;
    bool in_arg = false;
    while (words >> word) {
      if (word == ":") in_arg = true;
      else if (in_arg) arg.push_back(word);
      else if (word.size() > 1 && word[0] == '%') {
        const long s = std::stol(word.substr(1));
        if (s < 0 || static_cast<size_t>(s) >= k.code.size()) throw fail("a source that is not an earlier op");
        ins.src.push_back(static_cast<int32_t>(s));
      } else {
        throw fail("cannot read '" + word + "'");
      }
    }
    // vectors: a tensor-core op's results, a wide copy's 16 bytes (a load whose users store them)
    if ((ins.dtype.count() > 1 && ins.op != Ops::WMMA && ins.op != Ops::LDMATRIX && (ins.op != Ops::LOAD || ins.dtype.itemsize() != 16)) ||
        (ins.dtype.is_ptr() && ins.dtype.base().count() > 1))
      throw fail("EMU runs scalar programs; vectors are for the CPU's registers, tensor cores and 16-byte copies");
    for (size_t i = 0; i < ins.src.size(); ++i) {
      const Instr& from = k.code[static_cast<size_t>(ins.src[i])];
      if (from.op == Ops::LOAD && from.dtype.count() > 1 && !(ins.op == Ops::STORE && i == 1))
        throw fail("a 16-byte load is only stored: it is a copy's");
    }
    const auto need_args = [&](size_t n) {
      if (arg.size() != n) throw fail(tinyt::detail::cat("expects ", n, " argument(s) after ':'"));
    };
    switch (ins.op) {
      case Ops::CONST: need_args(1), ins.value = detail::parse_value(arg[0], ins.dtype); break;
      case Ops::DEFINE_GLOBAL:
      case Ops::DEFINE_REG:
      case Ops::DEFINE_VAR: need_args(1), ins.number = std::stoll(arg[0]); break;
      case Ops::WMMA:
        need_args(2);
        if (spec.warp != TensorCore::warp || !spec.tensor_cores) throw fail(tinyt::detail::cat(spec.name, " has no tensor cores"));
        ins.tc = tensor_core_of(arg[0] + " " + arg[1]);
        if (!ins.tc ||
            (ins.src.size() != static_cast<size_t>(ins.tc->a_count + ins.tc->b_count) &&
             ins.src.size() != static_cast<size_t>(ins.tc->a_count + ins.tc->b_count + TensorCore::c_count)) ||
            ins.dtype != dtypes::float32.vec(TensorCore::c_count))
          throw fail("EMU runs the tensor-core ops m16n8k16 of float16 or bfloat16 (8 + 4 operands) and m16n8k8 of tf32 (4 + 2), "
                     "each with 4 float32 values to add or none, 4 float32 results");
        ins.input = tensor_core_input(arg[0] + " " + arg[1]);
        break;
      case Ops::GEP: {
        need_args(1), ins.number = std::stoll(arg[0]);
        const Instr* from = ins.src.size() == 1 ? &k.code[static_cast<size_t>(ins.src[0])] : nullptr;
        if (!from || (from->op != Ops::WMMA && from->op != Ops::LDMATRIX) || ins.number < 0 || ins.number >= from->dtype.count())
          throw fail("a GEP reads one of a WMMA's 4 results or one of an LDMATRIX's values");
        break;
      }
      case Ops::LDMATRIX: {  // (codegen/ldmatrix.hpp)
        if (arg.empty() || arg.size() > 2 || (arg.size() == 2 && arg[1] != "trans")) throw fail("LDMATRIX takes its tiles, and 'trans' or not");
        ins.number = std::stoll(arg[0]), ins.trans = arg.size() == 2;
        if (spec.warp != TensorCore::warp || !spec.tensor_cores) throw fail(tinyt::detail::cat(spec.name, " has no ldmatrix"));
        if ((ins.number != 1 && ins.number != 2 && ins.number != 4) || ins.dtype.count() != 2 * ins.number || ins.dtype.scalar().itemsize() != 2)
          throw fail("LDMATRIX loads 1, 2 or 4 tiles of 8x8 16-bit values: a vector of 2, 4 or 8 of them");
        if (ins.src.empty() || k.code[static_cast<size_t>(ins.src[0])].op != Ops::INDEX ||
            k.code[static_cast<size_t>(k.code[static_cast<size_t>(ins.src[0])].src[0])].op != Ops::DEFINE_LOCAL)
          throw fail("LDMATRIX reads local memory through an INDEX");
        break;
      }
      case Ops::SHFL_XOR:
        need_args(1), ins.number = std::stoll(arg[0]);
        if (spec.warp == 0) throw fail(tinyt::detail::cat(spec.name, " has no warps to shuffle across"));
        if (ins.number < 1 || ins.number >= spec.warp) throw fail(tinyt::detail::cat("a shuffle's mask must be within a warp of ", spec.warp));
        break;
      case Ops::DEFINE_LOCAL:
        need_args(1), ins.number = std::stoll(arg[0]);
        k.local_bytes += ins.dtype.size() * ins.dtype.base().itemsize();
        break;
      case Ops::RANGE:
        need_args(2);
        if (arg[0] == "thread") throw fail("a CPU thread's range in a GPU kernel");
        ins.index = arg[0] == "global" ? Instr::Index::global : arg[0] == "group" ? Instr::Index::group
                  : arg[0] == "local"    ? Instr::Index::local  : Instr::Index::loop;
        if (!ins.work_item() && arg[0] != "loop") throw fail("a RANGE is a loop, or a global, group or local index");
        ins.number = std::stoll(arg[1]);
        if (ins.work_item() && (ins.number < 0 || ins.number > 2)) throw fail("a work-item's launch dimension must be 0, 1 or 2");
        if (!ins.work_item()) open.push_back(static_cast<int32_t>(k.code.size()));
        break;
      case Ops::END:
        if (ins.src.empty() || k.code[static_cast<size_t>(ins.src[0])].op != Ops::RANGE) throw fail("END must close a RANGE");
        if (!k.code[static_cast<size_t>(ins.src[0])].work_item()) {
          if (open.empty() || open.back() != ins.src[0]) throw fail("END closes a loop that is not the innermost one open");
          ins.partner = open.back();
          k.code[static_cast<size_t>(open.back())].partner = static_cast<int32_t>(k.code.size());
          open.pop_back();
        }
        break;
      case Ops::INDEX:
        if (ins.src.size() < 2) throw fail("INDEX takes a buffer and an index");
        break;
      case Ops::LOAD:
      case Ops::STORE:
        if (ins.src.empty() || k.code[static_cast<size_t>(ins.src[0])].op != Ops::INDEX) throw fail("a LOAD or STORE goes through an INDEX");
        if (ins.op == Ops::STORE && ins.src.size() < 2) throw fail("a STORE needs a value");
        break;
      case Ops::BARRIER:
        break;
      default:
        if (!GroupOp::ALU.contains(ins.op) && ins.op != Ops::CAST && ins.op != Ops::BITCAST)
          throw fail(tinyt::detail::cat("EMU does not run ", op_name(ins.op)));
        if (ins.op == Ops::THREEFRY) throw fail("THREEFRY must be decomposed before a program is linearized");
    }
    k.code.push_back(std::move(ins));
  }
  if (!open.empty()) throw CompileError(tinyt::detail::cat("EMU: ", k.name, ": a loop is never closed"));
  if (k.local_bytes > spec.shared_bytes)
    throw CompileError(tinyt::detail::cat("EMU: ", k.name, " uses ", k.local_bytes, " bytes of local memory; ", spec.name,
                                          " has ", spec.shared_bytes));
  return k;
}

}  // namespace emu
}  // namespace backend
}  // namespace tinyt::inline v0
