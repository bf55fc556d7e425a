// The listing renderer: a linearized program as text, one op per line, exactly what the code
// generator produced and nothing a compiler could change. It is the emulated GPU's source
// (backend/emu.hpp parses it back and runs it), so the emulator checks the code generator itself,
// apart from any renderer; it is also what DEBUG=4 prints for that device.
//
//   kernel r_64_16
//   %0 DEFINE_GLOBAL float32*global : 0
//   %1 CONST index : 64
//   %2 RANGE index %1 : global 0          (kind: loop, global, group or local; launch dimension or -1)
//   %3 DEFINE_LOCAL float32*local[16] : 0
//   %9 CONST float32 : 0x1.8p+1           (floats exactly, as C's %a)
//
// Lines are numbered in order; sources are earlier lines (a constant the program uses without
// listing it gets a line of its own before its first user); the text after ':' is the op's argument: a CONST's value, a
// DEFINE_GLOBAL's, DEFINE_LOCAL's or DEFINE_REG's number, a DEFINE_VAR's position in the
// program's variables, a RANGE's kind and launch dimension, a SHFL_XOR's mask, a WMMA's
// instruction and input type ("m16n8k16 float16"), a GEP's element.
#pragma once

#include <cmath>
#include <cstdio>
#include <sstream>
#include <unordered_map>

#include "../codegen/linearize.hpp"

namespace tinyt::inline v0 {
namespace renderer {

namespace detail {
inline const char* addr_space_name(AddrSpace a) {
  switch (a) {
    case AddrSpace::global: return "global";
    case AddrSpace::local: return "local";
    case AddrSpace::reg: return "reg";
  }
  return "?";
}

/// A dtype as the listing spells it: "float32", "float32*global", "float32*local[16]".
inline std::string listing_dtype(DType dt) {
  if (!dt.is_ptr()) return dt.name();
  std::string s = dt.base().name() + "*" + addr_space_name(dt.addrspace());
  if (dt.addrspace() != AddrSpace::global) s += tinyt::detail::cat("[", dt.size(), "]");
  return s;
}

/// A constant's value: integers in decimal, floats exactly (hex digits, or nan/inf/-inf).
inline std::string listing_value(const UOp& c) {
  const DType dt = c.dtype().scalar();
  if (!dt.is_float()) return tinyt::detail::cat(static_cast<long long>(c.const_int()));
  const double v = c.const_float();
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}
}  // namespace detail

/// The listing of a program (see the top of this file).
inline std::string render_listing(const codegen::Program& p) {
  std::ostringstream out;
  out << "kernel " << p.name << "\n";
  std::unordered_map<const UOpNode*, size_t> number;  // the latest line of each op (one may be emitted in several loops)
  size_t lines = 0;
  auto line = [&](const UOp& u) {
    std::string sources;
    for (const UOp& s : u.src()) {
      auto it = number.find(s.get());
      if (it == number.end() && s.op() != Ops::CONST)
        throw InternalError(tinyt::detail::cat("listing: ", op_name(u.op()), " uses ", op_name(s.op()),
                                               ", which the program does not define before it"));
      sources += tinyt::detail::cat(" %", it != number.end() ? it->second : 0);
    }
    const size_t n = lines++;
    number[u.get()] = n;
    out << "%" << n << " " << op_name(u.op()) << " " << detail::listing_dtype(u.dtype()) << sources;
    switch (u.op()) {
      case Ops::CONST: out << " : " << detail::listing_value(u); break;
      case Ops::DEFINE_GLOBAL:
      case Ops::DEFINE_LOCAL:
      case Ops::DEFINE_REG:
      case Ops::SHFL_XOR:
      case Ops::GEP: out << " : " << u.arg().as_int(); break;
      case Ops::WMMA:
      case Ops::LDMATRIX: out << " : " << u.arg().get<std::string>(); break;
      case Ops::DEFINE_VAR: {
        const auto it = std::find(p.vars.begin(), p.vars.end(), u);
        if (it == p.vars.end()) throw InternalError("listing: a variable the program does not list");
        out << " : " << (it - p.vars.begin());
        break;
      }
      case Ops::RANGE: {
        switch (codegen::range_kind(u)) {
          case codegen::RangeKind::global: out << " : global " << u.arg()[2].as_int(); break;
          case codegen::RangeKind::group_id: out << " : group " << u.arg()[2].as_int(); break;
          case codegen::RangeKind::local_id: out << " : local " << u.arg()[2].as_int(); break;
          case codegen::RangeKind::thread: out << " : thread -1"; break;
          default: out << " : loop -1"; break;
        }
        break;
      }
      default: break;
    }
    out << "\n";
  };
  for (const UOp& u : p.ops) {
    // a constant an op uses without the program listing it (an accumulator's slot) gets a line first
    for (const UOp& s : u.src())
      if (s.op() == Ops::CONST && !number.count(s.get())) line(s);
    line(u);
  }
  return out.str();
}

}  // namespace renderer
}  // namespace tinyt::inline v0
