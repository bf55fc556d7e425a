// EMU: a GPU emulated on the CPU, exact and slow, so GPU code generation is tested where no GPU
// is (tinygrad's PYTHON device with EMULATE). It runs a kernel's linearized program, as the
// listing renderer writes it (renderer/listing.hpp), with a GPU's semantics: a grid of work-groups
// of work-items, each work-item with its own registers, each work-group with its own local
// memory. The work-items of a group run in lockstep, one op at a time for all of them, so a
// barrier is where they all are; loops must be uniform across a group (their bounds are). A
// warp is `warp` consecutive work-items of a group (by x, then y, then z, as CUDA numbers them);
// a shuffle (SHFL_XOR) reads the register of another lane of the warp.
//
// It checks what a GPU would silently get wrong: an access outside a global buffer or a local
// array, a read of local memory another work-item wrote with no barrier between (or a write over
// what another read or wrote), two work-items writing one element of a global buffer, a launch
// past the emulated device's limits, more local memory than it has. Each is a DeviceError naming
// the kernel, the op, the buffer, the element and the work-items. Memory starts out holding
// garbage (0xA5 bytes), as a GPU's does, so a kernel that reads what nobody wrote shows.
//
// EMU_TARGET names what is emulated (Spec): `cuda_sm80` (the default: warps of 32, 1024 threads a
// block, 48 KiB of shared memory, 108 multiprocessors) or `cl` (an OpenCL GPU without
// sub-groups or tensor cores). The code generator sees the target a real device of that kind
// would give it, so EMU runs the very kernels that device would.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
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

/// An integer wrapped to `dt`'s width, as the generated code's arithmetic wraps.
inline Slot wrap(uint64_t v, DType dt) {
  const DType s = dt.scalar();
  Slot out;
  if (s.is_bool()) {
    out.i = v != 0;
    return out;
  }
  const int bits = s.is_index() ? 64 : 8 * s.itemsize();
  if (bits == 64) {
    out.u = v;
  } else if (s.is_unsigned()) {
    out.u = v & ((uint64_t{1} << bits) - 1);
  } else {
    const uint64_t m = uint64_t{1} << (bits - 1), low = v & ((uint64_t{1} << bits) - 1);
    out.i = static_cast<int64_t>(low ^ m) - static_cast<int64_t>(m);
  }
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
  bool work_item = false;  // RANGE: a work-item's index, not a loop
  int32_t partner = -1;    // RANGE: its END; END: its RANGE
  DType input;             // WMMA: the type of its operands
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
    if ((ins.dtype.count() > 1 && ins.op != Ops::WMMA) || (ins.dtype.is_ptr() && ins.dtype.base().count() > 1))
      throw fail("EMU runs scalar programs; vectors are for the CPU's registers");
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
        if (arg[0] != "m16n8k16" || (arg[1] != "float16" && arg[1] != "bfloat16") ||
            ins.src.size() != static_cast<size_t>(TensorCore::a_count + TensorCore::b_count) || ins.dtype != dtypes::float32.vec(TensorCore::c_count))
          throw fail("EMU runs the tensor-core op m16n8k16 of float16 or bfloat16 (8 + 4 operands, 4 float32 results)");
        ins.input = arg[1] == "float16" ? dtypes::float16 : dtypes::bfloat16;
        break;
      case Ops::GEP:
        need_args(1), ins.number = std::stoll(arg[0]);
        if (ins.src.size() != 1 || k.code[static_cast<size_t>(ins.src[0])].op != Ops::WMMA || ins.number < 0 || ins.number >= TensorCore::c_count)
          throw fail("a GEP reads one of a WMMA's 4 results");
        break;
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
        ins.work_item = arg[0] == "global";
        ins.number = std::stoll(arg[1]);
        if (ins.work_item && (ins.number < 0 || ins.number > 2)) throw fail("a work-item's launch dimension must be 0, 1 or 2");
        if (!ins.work_item) open.push_back(static_cast<int32_t>(k.code.size()));
        break;
      case Ops::END:
        if (ins.src.empty() || k.code[static_cast<size_t>(ins.src[0])].op != Ops::RANGE) throw fail("END must close a RANGE");
        if (!k.code[static_cast<size_t>(ins.src[0])].work_item) {
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

/// EMU's memory: host memory, filled with garbage when allocated, each block's size known so a
/// kernel's access past its end is caught.
class Memory final : public Allocator {
 public:
  void* alloc(size_t nbytes) override {
    void* p = std::aligned_alloc(64, (std::max<size_t>(nbytes, 1) + 63) / 64 * 64);
    if (!p) throw OutOfMemoryError(tinyt::detail::cat("EMU: cannot allocate ", nbytes, " bytes"));
    std::memset(p, 0xA5, nbytes);
    std::lock_guard lock(mu_);
    sizes_[p] = nbytes;
    return p;
  }
  void free(void* p, size_t) override {
    {
      std::lock_guard lock(mu_);
      sizes_.erase(p);
    }
    std::free(p);
  }
  void copyin(void* dst, const void* src, size_t nbytes) override { std::memcpy(checked(dst, nbytes, "copyin"), src, nbytes); }
  void copyout(void* dst, void* src, size_t nbytes) override { std::memcpy(dst, checked(src, nbytes, "copyout"), nbytes); }
  void copy(void* dst, void* src, size_t nbytes) override {
    std::memmove(checked(dst, nbytes, "copy"), checked(src, nbytes, "copy"), nbytes);
  }
  /// The size of the block `p` starts; DeviceError when it is no block of this memory.
  size_t size_of(void* p) const {
    std::lock_guard lock(mu_);
    const auto it = sizes_.find(p);
    if (it == sizes_.end()) throw DeviceError("EMU: a kernel was given memory EMU did not allocate");
    return it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<void*, size_t> sizes_;
  void* checked(void* p, size_t nbytes, const char* what) const {
    if (nbytes > size_of(p)) throw DeviceError(tinyt::detail::cat("EMU: ", what, " of ", nbytes, " bytes into a block of ", size_of(p)));
    return p;
  }
};

/// A kernel loaded on EMU: runs its work-groups one after another.
class Program final : public backend::Program {
 public:
  Program(Kernel kernel, Spec spec, Memory& memory) : k_(std::move(kernel)), spec_(std::move(spec)), memory_(memory) {}

  double launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vars, const LaunchDims& dims, bool) override {
    const auto start = std::chrono::steady_clock::now();
    Launch run(k_, spec_, memory_, bufs, vars, dims);
    run.all_groups();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

 private:
  // One launch: the buffers and their sizes, the grid, and one work-group's state at a time.
  class Launch {
   public:
    Launch(const Kernel& k, const Spec& spec, Memory& memory, const std::vector<void*>& bufs, const std::vector<int64_t>& vars,
           const LaunchDims& dims)
        : k_(k), vars_(vars), dims_(dims), warp_(static_cast<size_t>(std::max<int64_t>(spec.warp, 1))) {
      int64_t lanes = 1;
      for (size_t d = 0; d < 3; ++d) {
        if (dims.local[d] < 1 || dims.global[d] < 1 || dims.global[d] % dims.local[d] != 0)
          throw fail(tinyt::detail::cat("launch dimension ", d, ": ", dims.global[d], " work-items in groups of ", dims.local[d],
                                        " (the groups must divide them)"));
        lanes *= dims.local[d];
      }
      if (lanes > spec.max_threads)
        throw fail(tinyt::detail::cat("a work-group of ", lanes, " work-items; ", spec.name, " runs at most ", spec.max_threads));
      lanes_ = static_cast<size_t>(lanes);
      for (const Instr& ins : k.code)
        if (ins.op == Ops::DEFINE_GLOBAL) {
          const auto n = static_cast<size_t>(ins.number);
          if (n >= bufs.size()) throw fail(tinyt::detail::cat("buffer ", n, " was not given (", bufs.size(), " were)"));
          globals_.resize(std::max(globals_.size(), n + 1));
          globals_[n] = {static_cast<uint8_t*>(bufs[n]), memory.size_of(bufs[n]), ins.dtype.base(), {}};
        }
      for (const Instr& ins : k.code)
        if (ins.op == Ops::DEFINE_VAR && static_cast<size_t>(ins.number) >= vars.size())
          throw fail(tinyt::detail::cat("variable ", ins.number, " was not given (", vars.size(), " were)"));
      values_.resize(k.code.size() * lanes_);
    }

    void all_groups() {
      for (int64_t z = 0; z < dims_.global[2] / dims_.local[2]; ++z)
        for (int64_t y = 0; y < dims_.global[1] / dims_.local[1]; ++y)
          for (int64_t x = 0; x < dims_.global[0] / dims_.local[0]; ++x) group({x, y, z});
    }

   private:
    struct Global {
      uint8_t* data = nullptr;
      size_t nbytes = 0;
      DType dtype;
      std::vector<int64_t> writer;  // per element, the work-item that wrote it in this launch (-1: none)
    };
    struct Local {
      std::vector<Slot> data;
      // per element: who wrote and read it last, and in which interval between barriers
      std::vector<int32_t> writer, reader;  // reader -2: several work-items
      std::vector<int64_t> written, read;
    };
    const Kernel& k_;
    const std::vector<int64_t>& vars_;
    LaunchDims dims_;
    size_t warp_ = 1;
    size_t lanes_ = 1;
    std::array<int64_t, 3> group_{};
    int64_t epoch_ = 0;  // barriers passed in this work-group
    std::vector<Global> globals_;
    std::vector<Slot> values_;                   // per op, per work-item
    std::vector<Local> locals_;              // by DEFINE_LOCAL number
    std::vector<std::vector<Slot>> regs_;    // by DEFINE_REG number: per element, per work-item
    std::map<size_t, std::vector<Slot>> wmma_;  // by WMMA op: its 4 results, per element, per work-item

    DeviceError fail(const std::string& why) const { return DeviceError(tinyt::detail::cat("EMU: ", k_.name, ": ", why)); }
    Slot* at(size_t op) { return values_.data() + op * lanes_; }
    // a work-item's position, as "(x, y, z) of group (x, y, z)"
    std::string who(size_t lane) const {
      const auto l = static_cast<int64_t>(lane);
      return tinyt::detail::cat("work-item (", l % dims_.local[0], ", ", l / dims_.local[0] % dims_.local[1], ", ",
                                l / (dims_.local[0] * dims_.local[1]), ") of group (", group_[0], ", ", group_[1], ", ", group_[2], ")");
    }
    int64_t global_id(size_t lane) const {  // a work-item's number in the whole launch
      const auto l = static_cast<int64_t>(lane);
      const int64_t x = group_[0] * dims_.local[0] + l % dims_.local[0];
      const int64_t y = group_[1] * dims_.local[1] + l / dims_.local[0] % dims_.local[1];
      const int64_t z = group_[2] * dims_.local[2] + l / (dims_.local[0] * dims_.local[1]);
      return x + dims_.global[0] * (y + dims_.global[1] * z);
    }

    void group(std::array<int64_t, 3> g) {
      group_ = g;
      epoch_ = 0;
      const std::vector<Instr>& code = k_.code;
      for (size_t pc = 0; pc < code.size(); ++pc) {
        const Instr& ins = code[pc];
        Slot* out = at(pc);
        switch (ins.op) {
          case Ops::RANGE: {
            if (ins.work_item) {
              const auto d = static_cast<size_t>(ins.number);
              for (size_t l = 0; l < lanes_; ++l) {
                const auto lane = static_cast<int64_t>(l);
                const int64_t local = d == 0 ? lane % dims_.local[0] : d == 1 ? lane / dims_.local[0] % dims_.local[1]
                                                                              : lane / (dims_.local[0] * dims_.local[1]);
                out[l].i = group_[d] * dims_.local[d] + local;
              }
              break;
            }
            const int64_t end = uniform(at(static_cast<size_t>(ins.src[0])), "a loop's bound");
            if (end <= 0) {
              pc = static_cast<size_t>(ins.partner);  // no iteration: on after its END
              break;
            }
            for (size_t l = 0; l < lanes_; ++l) out[l].i = 0;
            break;
          }
          case Ops::END: {
            if (ins.partner < 0) break;  // a work-item's range
            const auto r = static_cast<size_t>(ins.partner);
            Slot* counter = at(r);
            const int64_t next = counter[0].i + 1;
            if (next < at(static_cast<size_t>(code[r].src[0]))[0].i) {
              for (size_t l = 0; l < lanes_; ++l) counter[l].i = next;
              pc = r;  // the loop's body again
            }
            break;
          }
          case Ops::CONST:
            for (size_t l = 0; l < lanes_; ++l) out[l] = ins.value;
            break;
          case Ops::DEFINE_VAR:
            for (size_t l = 0; l < lanes_; ++l) out[l].i = vars_[static_cast<size_t>(ins.number)];
            break;
          case Ops::DEFINE_GLOBAL: break;
          case Ops::DEFINE_LOCAL: {
            const auto n = static_cast<size_t>(ins.dtype.size());
            if (locals_.size() <= static_cast<size_t>(ins.number)) locals_.resize(static_cast<size_t>(ins.number) + 1);
            Local& mem = locals_[static_cast<size_t>(ins.number)];
            mem.data.assign(n, Slot{});
            for (Slot& s : mem.data) s.u = 0xA5A5A5A5A5A5A5A5ull;  // garbage, as a GPU's shared memory holds
            mem.writer.assign(n, -1), mem.reader.assign(n, -1), mem.written.assign(n, -1), mem.read.assign(n, -1);
            break;
          }
          case Ops::DEFINE_REG:
            if (regs_.size() <= static_cast<size_t>(ins.number)) regs_.resize(static_cast<size_t>(ins.number) + 1);
            regs_[static_cast<size_t>(ins.number)].assign(static_cast<size_t>(ins.dtype.size()) * lanes_, Slot{});
            break;
          case Ops::INDEX:
            std::copy_n(at(static_cast<size_t>(ins.src[1])), lanes_, out);
            break;
          case Ops::LOAD: load(ins, out); break;
          case Ops::STORE: store(ins); break;
          case Ops::BARRIER: ++epoch_; break;
          case Ops::WMMA: tensor_core(pc, ins); break;
          case Ops::GEP: {
            const std::vector<Slot>& d = wmma_.at(static_cast<size_t>(ins.src[0]));
            std::copy_n(d.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(ins.number) * lanes_), lanes_, out);
            break;
          }
          case Ops::SHFL_XOR: {
            // lanes exchange within their warp: consecutive work-items, warp_ at a time
            if (lanes_ % warp_ != 0)
              throw fail(tinyt::detail::cat("a shuffle in a work-group of ", lanes_, " work-items, not whole warps of ", warp_));
            const Slot* v = at(static_cast<size_t>(ins.src[0]));
            for (size_t l = 0; l < lanes_; ++l) out[l] = v[l ^ static_cast<size_t>(ins.number)];
            break;
          }
          default: alu(ins, out);
        }
      }
    }

    // D = A·B for each warp: the lanes' fragments put back into the tiles by TensorCore's layout
    // (each element held by exactly one lane, rounded to the operands' type, as the hardware reads
    // it), products summed in float32 in k's order, each lane given its 4 elements of D
    void tensor_core(size_t pc, const Instr& ins) {
      using TC = TensorCore;
      if (lanes_ % TC::warp != 0)
        throw fail(tinyt::detail::cat("a tensor-core op in a work-group of ", lanes_, " work-items, not whole warps of ", TC::warp));
      std::vector<Slot>& d = wmma_[pc];
      d.assign(static_cast<size_t>(TC::c_count) * lanes_, Slot{});
      for (size_t w = 0; w < lanes_; w += TC::warp) {
        float a[TC::m][TC::k], b[TC::k][TC::n];
        for (int lane = 0; lane < TC::warp; ++lane) {
          for (int i = 0; i < TC::a_count; ++i) {
            const auto [row, col] = TC::a(lane, i);
            a[row][col] = round_narrow(at(static_cast<size_t>(ins.src[static_cast<size_t>(i)]))[w + static_cast<size_t>(lane)].f, ins.input);
          }
          for (int i = 0; i < TC::b_count; ++i) {
            const auto [kk, col] = TC::b(lane, i);
            b[kk][col] = round_narrow(at(static_cast<size_t>(ins.src[static_cast<size_t>(TC::a_count + i)]))[w + static_cast<size_t>(lane)].f, ins.input);
          }
        }
        for (int lane = 0; lane < TC::warp; ++lane)
          for (int i = 0; i < TC::c_count; ++i) {
            const auto [row, col] = TC::c(lane, i);
            float sum = 0;
            for (int kk = 0; kk < TC::k; ++kk) sum = std::fma(a[row][kk], b[kk][col], sum);
            d[static_cast<size_t>(i) * lanes_ + w + static_cast<size_t>(lane)].f = sum;
          }
      }
    }

    int64_t uniform(const Slot* v, const char* what) const {
      for (size_t l = 1; l < lanes_; ++l)
        if (v[l].i != v[0].i)
          throw fail(tinyt::detail::cat(what, " differs across a work-group (", v[0].i, " for ", who(0), ", ", v[l].i, " for ",
                                        who(l), "): its work-items must run it together"));
      return v[0].i;
    }

    // the gate of an INDEX for lane l (no gate: every lane)
    bool gated_off(const Instr& index, size_t l) {
      return index.src.size() > 2 && at(static_cast<size_t>(index.src[2]))[l].i == 0;
    }

    void load(const Instr& ins, Slot* out) {
      const Instr& index = k_.code[static_cast<size_t>(ins.src[0])];
      const Instr& buffer = k_.code[static_cast<size_t>(index.src[0])];
      const Slot* idx = at(static_cast<size_t>(index.src[1]));
      const Slot* gate = index.src.size() > 2 ? at(static_cast<size_t>(index.src[2])) : nullptr;
      const Slot zero = convert(Slot{0}, dtypes::int32, ins.dtype);
      switch (buffer.op) {
        case Ops::DEFINE_GLOBAL: {
          const Global& g = globals_[static_cast<size_t>(buffer.number)];
          const auto size = static_cast<size_t>(g.dtype.itemsize());
          for (size_t l = 0; l < lanes_; ++l) {
            if (gate && !gate[l].i) {
              out[l] = zero;
              continue;
            }
            check_global(buffer, g, idx[l].i, l, "reads");
            uint64_t bits = 0;
            std::memcpy(&bits, g.data + static_cast<size_t>(idx[l].i) * size, size);
            out[l] = from_bits(bits, g.dtype);
          }
          return;
        }
        case Ops::DEFINE_LOCAL: {
          Local& mem = locals_[static_cast<size_t>(buffer.number)];
          for (size_t l = 0; l < lanes_; ++l) {
            if (gate && !gate[l].i) {
              out[l] = zero;
              continue;
            }
            const int64_t i = idx[l].i;
            check_local(buffer, i, l, "reads");
            const auto e = static_cast<size_t>(i);
            const auto lane = static_cast<int32_t>(l);
            if (mem.written[e] == epoch_ && mem.writer[e] != lane)
              throw fail(tinyt::detail::cat(who(l), " reads element ", i, " of local buffer ", buffer.number, ", which ",
                                            who(static_cast<size_t>(mem.writer[e])), " wrote with no barrier between"));
            mem.reader[e] = mem.read[e] == epoch_ && mem.reader[e] != lane ? -2 : lane;
            mem.read[e] = epoch_;
            out[l] = mem.data[e];
          }
          return;
        }
        default: {
          Slot* regs = registers(buffer);
          for (size_t l = 0; l < lanes_; ++l) out[l] = gate && !gate[l].i ? zero : regs[reg_index(buffer, idx[l].i, l) + l];
          return;
        }
      }
    }

    void store(const Instr& ins) {
      const Instr& index = k_.code[static_cast<size_t>(ins.src[0])];
      const Instr& buffer = k_.code[static_cast<size_t>(index.src[0])];
      const Slot* idx = at(static_cast<size_t>(index.src[1]));
      const Slot* gate = index.src.size() > 2 ? at(static_cast<size_t>(index.src[2])) : nullptr;
      const Slot* value = at(static_cast<size_t>(ins.src[1]));
      switch (buffer.op) {
        case Ops::DEFINE_GLOBAL: {
          Global& g = globals_[static_cast<size_t>(buffer.number)];
          const auto size = static_cast<size_t>(g.dtype.itemsize());
          if (g.writer.empty()) g.writer.assign(g.nbytes / size, -1);
          for (size_t l = 0; l < lanes_; ++l) {
            if (gate && !gate[l].i) continue;
            const int64_t i = idx[l].i;
            check_global(buffer, g, i, l, "writes");
            const auto e = static_cast<size_t>(i);
            const int64_t id = global_id(l);
            if (g.writer[e] >= 0 && g.writer[e] != id)
              throw fail(tinyt::detail::cat(who(l), " writes element ", i, " of buffer ", buffer.number, ", which work-item ", g.writer[e],
                                            " of the launch wrote too"));
            g.writer[e] = id;
            const uint64_t bits = to_bits(value[l], g.dtype);
            std::memcpy(g.data + e * size, &bits, size);
          }
          return;
        }
        case Ops::DEFINE_LOCAL: {
          Local& mem = locals_[static_cast<size_t>(buffer.number)];
          for (size_t l = 0; l < lanes_; ++l) {
            if (gate && !gate[l].i) continue;
            const int64_t i = idx[l].i;
            check_local(buffer, i, l, "writes");
            const auto e = static_cast<size_t>(i);
            const auto lane = static_cast<int32_t>(l);
            if (mem.written[e] == epoch_ && mem.writer[e] != lane)
              throw fail(tinyt::detail::cat(who(l), " and ", who(static_cast<size_t>(mem.writer[e])), " both write element ", i,
                                            " of local buffer ", buffer.number, " with no barrier between"));
            if (mem.read[e] == epoch_ && mem.reader[e] != lane)
              throw fail(tinyt::detail::cat(who(l), " writes element ", i, " of local buffer ", buffer.number,
                                            ", which another work-item read with no barrier between"));
            mem.writer[e] = lane, mem.written[e] = epoch_;
            mem.data[e] = value[l];
          }
          return;
        }
        default: {
          Slot* regs = registers(buffer);
          for (size_t l = 0; l < lanes_; ++l)
            if (!gate || gate[l].i) regs[reg_index(buffer, idx[l].i, l) + l] = value[l];
          return;
        }
      }
    }

    void check_global(const Instr& buffer, const Global& g, int64_t i, size_t l, const char* what) const {
      const auto size = static_cast<int64_t>(g.dtype.itemsize());
      if (i < 0 || (i + 1) * size > static_cast<int64_t>(g.nbytes))
        throw fail(tinyt::detail::cat(who(l), " ", what, " element ", i, " of buffer ", buffer.number, " (", g.dtype.name(), "), which has ",
                                      static_cast<int64_t>(g.nbytes) / size));
    }
    void check_local(const Instr& buffer, int64_t i, size_t l, const char* what) const {
      if (i < 0 || i >= buffer.dtype.size())
        throw fail(tinyt::detail::cat(who(l), " ", what, " element ", i, " of local buffer ", buffer.number, ", which has ", buffer.dtype.size()));
    }
    Slot* registers(const Instr& buffer) { return regs_[static_cast<size_t>(buffer.number)].data(); }
    // where element i of an accumulator is, for lane l (plus l)
    size_t reg_index(const Instr& buffer, int64_t i, size_t l) const {
      if (i < 0 || i >= buffer.dtype.size())
        throw fail(tinyt::detail::cat(who(l), " uses register ", i, " of accumulator ", buffer.number, ", which has ", buffer.dtype.size()));
      return static_cast<size_t>(i) * lanes_;
    }

    template <class F> void each(Slot* out, F&& f) {
      for (size_t l = 0; l < lanes_; ++l) out[l] = f(l);
    }
    static Slot f32(float f) {
      Slot s;
      s.f = f;
      return s;
    }
    static Slot f64(double d) {
      Slot s;
      s.d = d;
      return s;
    }
    static Slot boolean(bool b) {
      Slot s;
      s.i = b;
      return s;
    }

    void alu(const Instr& ins, Slot* out) {
      const Slot* a = at(static_cast<size_t>(ins.src[0]));
      const Slot* b = ins.src.size() > 1 ? at(static_cast<size_t>(ins.src[1])) : nullptr;
      const Slot* c = ins.src.size() > 2 ? at(static_cast<size_t>(ins.src[2])) : nullptr;
      const DType dt = ins.dtype;
      // what the operands are: a WHERE's are its branches, a comparison's are not its bool result
      const DType in = k_.code[static_cast<size_t>(ins.op == Ops::WHERE ? ins.src[1] : ins.src[0])].dtype;
      const Kind k = kind_of(in);
      if (ins.op == Ops::CAST) return each(out, [&](size_t l) { return convert(a[l], in, dt); });
      if (ins.op == Ops::BITCAST) return each(out, [&](size_t l) { return from_bits(to_bits(a[l], in), dt); });
      if (ins.op == Ops::WHERE) return each(out, [&](size_t l) { return a[l].i ? b[l] : c[l]; });
      if (k == Kind::f32) {
        switch (ins.op) {
          case Ops::ADD: return each(out, [&](size_t l) { return f32(a[l].f + b[l].f); });
          case Ops::SUB: return each(out, [&](size_t l) { return f32(a[l].f - b[l].f); });
          case Ops::MUL: return each(out, [&](size_t l) { return f32(a[l].f * b[l].f); });
          case Ops::FDIV: return each(out, [&](size_t l) { return f32(a[l].f / b[l].f); });
          case Ops::MAX: return each(out, [&](size_t l) { return f32(a[l].f != a[l].f || a[l].f > b[l].f ? a[l].f : b[l].f); });
          case Ops::CMPLT: return each(out, [&](size_t l) { return boolean(a[l].f < b[l].f); });
          case Ops::CMPNE: return each(out, [&](size_t l) { return boolean(a[l].f != b[l].f); });
          case Ops::CMPEQ: return each(out, [&](size_t l) { return boolean(a[l].f == b[l].f); });
          case Ops::NEG: return each(out, [&](size_t l) { return f32(-a[l].f); });
          case Ops::RECIPROCAL: return each(out, [&](size_t l) { return f32(1.0f / a[l].f); });
          case Ops::EXP2: return each(out, [&](size_t l) { return f32(std::exp2(a[l].f)); });
          case Ops::LOG2: return each(out, [&](size_t l) { return f32(std::log2(a[l].f)); });
          case Ops::SIN: return each(out, [&](size_t l) { return f32(std::sin(a[l].f)); });
          case Ops::SQRT: return each(out, [&](size_t l) { return f32(std::sqrt(a[l].f)); });
          case Ops::TRUNC: return each(out, [&](size_t l) { return f32(std::trunc(a[l].f)); });
          case Ops::POW: return each(out, [&](size_t l) { return f32(std::pow(a[l].f, b[l].f)); });
          case Ops::MULACC: return each(out, [&](size_t l) { return f32(std::fma(a[l].f, b[l].f, c[l].f)); });
          default: break;
        }
      } else if (k == Kind::f64) {
        switch (ins.op) {
          case Ops::ADD: return each(out, [&](size_t l) { return f64(a[l].d + b[l].d); });
          case Ops::SUB: return each(out, [&](size_t l) { return f64(a[l].d - b[l].d); });
          case Ops::MUL: return each(out, [&](size_t l) { return f64(a[l].d * b[l].d); });
          case Ops::FDIV: return each(out, [&](size_t l) { return f64(a[l].d / b[l].d); });
          case Ops::MAX: return each(out, [&](size_t l) { return f64(a[l].d != a[l].d || a[l].d > b[l].d ? a[l].d : b[l].d); });
          case Ops::CMPLT: return each(out, [&](size_t l) { return boolean(a[l].d < b[l].d); });
          case Ops::CMPNE: return each(out, [&](size_t l) { return boolean(a[l].d != b[l].d); });
          case Ops::CMPEQ: return each(out, [&](size_t l) { return boolean(a[l].d == b[l].d); });
          case Ops::NEG: return each(out, [&](size_t l) { return f64(-a[l].d); });
          case Ops::RECIPROCAL: return each(out, [&](size_t l) { return f64(1.0 / a[l].d); });
          case Ops::EXP2: return each(out, [&](size_t l) { return f64(std::exp2(a[l].d)); });
          case Ops::LOG2: return each(out, [&](size_t l) { return f64(std::log2(a[l].d)); });
          case Ops::SIN: return each(out, [&](size_t l) { return f64(std::sin(a[l].d)); });
          case Ops::SQRT: return each(out, [&](size_t l) { return f64(std::sqrt(a[l].d)); });
          case Ops::TRUNC: return each(out, [&](size_t l) { return f64(std::trunc(a[l].d)); });
          case Ops::POW: return each(out, [&](size_t l) { return f64(std::pow(a[l].d, b[l].d)); });
          case Ops::MULACC: return each(out, [&](size_t l) { return f64(std::fma(a[l].d, b[l].d, c[l].d)); });
          default: break;
        }
      } else {
        const bool u = k == Kind::uint;
        const DType s = in.scalar();
        const int bits = s.is_index() ? 64 : 8 * std::max(s.itemsize(), 1);
        switch (ins.op) {
          case Ops::ADD: return each(out, [&](size_t l) { return wrap(a[l].u + b[l].u, dt); });
          case Ops::SUB: return each(out, [&](size_t l) { return wrap(a[l].u - b[l].u, dt); });
          case Ops::MUL: return each(out, [&](size_t l) { return wrap(a[l].u * b[l].u, dt); });
          case Ops::NEG: return each(out, [&](size_t l) { return wrap(0 - a[l].u, dt); });
          case Ops::AND: return each(out, [&](size_t l) { return wrap(a[l].u & b[l].u, dt); });
          case Ops::OR: return each(out, [&](size_t l) { return wrap(a[l].u | b[l].u, dt); });
          case Ops::XOR: return each(out, [&](size_t l) { return wrap(a[l].u ^ b[l].u, dt); });
          case Ops::SHL:  // a shift past the width is undefined in C: 0 here
            return each(out, [&](size_t l) { return b[l].i < 0 || b[l].i >= bits ? wrap(0, dt) : wrap(a[l].u << b[l].i, dt); });
          case Ops::SHR:
            return each(out, [&](size_t l) {
              if (b[l].i < 0 || b[l].i >= bits) return wrap(0, dt);
              return u ? wrap(a[l].u >> b[l].i, dt) : wrap(static_cast<uint64_t>(a[l].i >> b[l].i), dt);
            });
          case Ops::IDIV:  // as the renderers guard it: x/0 is 0, x/-1 is -x
            return each(out, [&](size_t l) {
              if (b[l].u == 0) return wrap(0, dt);
              if (u) return wrap(a[l].u / b[l].u, dt);
              if (b[l].i == -1) return wrap(0 - a[l].u, dt);
              return wrap(static_cast<uint64_t>(a[l].i / b[l].i), dt);
            });
          case Ops::MOD:
            return each(out, [&](size_t l) {
              if (b[l].u == 0) return wrap(0, dt);
              if (u) return wrap(a[l].u % b[l].u, dt);
              if (b[l].i == -1) return wrap(0, dt);
              return wrap(static_cast<uint64_t>(a[l].i % b[l].i), dt);
            });
          case Ops::MAX: return each(out, [&](size_t l) { return (u ? a[l].u > b[l].u : a[l].i > b[l].i) ? a[l] : b[l]; });
          case Ops::CMPLT: return each(out, [&](size_t l) { return boolean(u ? a[l].u < b[l].u : a[l].i < b[l].i); });
          case Ops::CMPNE: return each(out, [&](size_t l) { return boolean(a[l].u != b[l].u); });
          case Ops::CMPEQ: return each(out, [&](size_t l) { return boolean(a[l].u == b[l].u); });
          case Ops::MULACC: return each(out, [&](size_t l) { return wrap(a[l].u * b[l].u + c[l].u, dt); });
          default: break;
        }
      }
      throw fail(tinyt::detail::cat("cannot run ", op_name(ins.op), " of ", in.name()));
    }
  };

  Kernel k_;
  Spec spec_;
  Memory& memory_;
};

/// EMU's compiler: a listing is parsed and checked; the binary is the listing itself.
class Compiler final : public backend::Compiler {
 public:
  explicit Compiler(Spec spec) : spec_(std::move(spec)) {}
  std::string identity() const override { return "EMU " + spec_.name + " listing 1"; }
  std::string compile(const std::string& source, const std::string&) override {
    (void)parse(source, spec_);
    return source;
  }
  bool disk_cacheable() const override { return false; }  // nothing to save: parsing is the compile

 private:
  Spec spec_;
};

/// The emulated GPU EMU (or EMU:n, each its own memory).
class Device final : public backend::Device {
 public:
  Device(int index, Spec spec)
      : name_(index == 0 ? "EMU" : tinyt::detail::cat("EMU:", index)), spec_(std::move(spec)), compiler_(spec_) {}
  const std::string& name() const override { return name_; }
  Allocator& allocator() override { return memory_; }
  backend::Compiler& compiler() override { return compiler_; }
  Target target() const override {
    Target t;
    t.language = Language::listing;
    t.gpu = true;
    t.max_local = spec_.launch_local;
    t.compute_units = spec_.compute_units;
    t.warp = spec_.warp;
    t.tensor_cores = spec_.tensor_cores;
    t.half = spec_.name != "cl";
    return t;
  }
  std::unique_ptr<backend::Program> load(const std::string& binary, const std::string&) override {
    return std::make_unique<Program>(parse(binary, spec_), spec_, memory_);
  }
  /// What this device emulates.
  const Spec& spec() const { return spec_; }

 private:
  std::string name_;
  Spec spec_;
  Memory memory_;
  Compiler compiler_;
};

}  // namespace emu

/// The emulated GPU EMU:`index` (up to EMU:7), emulating $EMU_TARGET.
inline std::unique_ptr<Device> open_emu(int index) {
  if (index < 0 || index > 7) throw DeviceError(tinyt::detail::cat("EMU:", index, ": EMU has devices EMU to EMU:7"));
  return std::make_unique<emu::Device>(index, emu::spec(getenv_str("EMU_TARGET", "cuda_sm80")));
}

}  // namespace backend
}  // namespace tinyt::inline v0
