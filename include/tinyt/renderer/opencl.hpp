// OpenCL C: a dialect of the C-style renderer (cstyle.hpp) for the CL backend.
#pragma once

#include "cstyle.hpp"

namespace tinyt::inline v0 {
namespace renderer {

/// OpenCL C: buffers as `__global` kernel parameters, halves through vload_half/vstore_half.
class OpenCLRenderer : public CStyleRenderer {
 protected:
  const char* language() const override { return "OpenCL"; }
  std::string scalar_type(DType dt) const override {
    switch (dt.scalar_type()) {
      case ScalarType::int8: return "char";
      case ScalarType::uint8: return "uchar";
      case ScalarType::uint16: return "ushort";
      case ScalarType::uint32: return "uint";
      case ScalarType::int64: return "long";
      case ScalarType::uint64: return "ulong";
      default: return CStyleRenderer::scalar_type(dt);
    }
  }
  bool held_in_float(DType dt) const override { return dt.scalar() == dtypes::bfloat16 || dt.scalar() == dtypes::float16; }
  std::string memory_type(DType dt) const override {
    switch (dt.scalar_type()) {
      case ScalarType::bool_: return "uchar";  // bool may not be in a kernel's buffer
      case ScalarType::float16: return "half";  // a pointer to halves needs no cl_khr_fp16
      case ScalarType::bfloat16: return "ushort";
      default: return scalar_type(dt);
    }
  }
  const char* int64_suffix() const override { return "L"; }
  std::string preamble(const SourceFeatures& f) const override {
    std::string s = "#pragma OPENCL FP_CONTRACT OFF\n";
    if (f.float64) s += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
    s += "\n";
    if (f.bfloat16) s += detail::bfloat16_helpers("", "as_uint", "as_float", "ushort", "uint");
    if (f.float16)
      s += "ushort tinyt_f32_to_f16(float f) { ushort h; vstore_half(f, 0, (__private half*)&h); return h; }\n"
           "float tinyt_f16_to_f32(ushort h) { return vload_half(0, (__private const half*)&h); }\n"
           "float tinyt_f16_round(float f) { return tinyt_f16_to_f32(tinyt_f32_to_f16(f)); }\n\n";
    return s;
  }
  void open_kernel(const codegen::Program& p) override {
    body_ << "__kernel void " << p.name << "(";
    for (size_t i = 0; i < p.globals.size(); ++i)
      body_ << (i ? ", " : "") << "__global " << memory_type(p.globals[i].base()) << "* restrict data" << i;
    for (size_t k = 0; k < p.vars.size(); ++k) body_ << (k + p.globals.size() ? ", " : "") << "int " << variable_name(k);
    body_ << ") {\n";
  }
  std::string read_variable(size_t) const override { return ""; }
  std::string work_item(int dim) const override { return detail::cat("(int)get_global_id(", dim, ")"); }
  std::string group_index(int dim) const override { return detail::cat("(int)get_group_id(", dim, ")"); }
  std::string local_index(int dim) const override { return detail::cat("(int)get_local_id(", dim, ")"); }
  std::string local_buffer(const std::string& type, const std::string& name, int64_t size) const override {
    // halves held as their bits: without cl_khr_fp16 a half may be pointed to, not declared
    // (aligned for a wide copy's 16 bytes)
    if (type == "half")
      return detail::cat("__local ushort ", name, "_bits[", size, "] __attribute__((aligned(16)));\n  __local half* ", name, " = (__local half*)", name, "_bits");
    return detail::cat("__local ", type, " ", name, "[", size, "] __attribute__((aligned(16)))");
  }
  std::string wide_pointer(bool local) const override { return local ? "__local uint4*" : "__global uint4*"; }
  std::string barrier() const override { return "barrier(CLK_LOCAL_MEM_FENCE)"; }
  std::string load_memory(DType dt, const std::string& buf, const std::string& idx) const override {
    if (dt.scalar() == dtypes::float16) return "vload_half(" + idx + ", " + buf + ")";
    return CStyleRenderer::load_memory(dt, buf, idx);
  }
  std::string store_memory(DType dt, const std::string& buf, const std::string& idx, const std::string& v) const override {
    if (dt.scalar() == dtypes::float16) return "vstore_half(" + v + ", " + idx + ", " + buf + ")";
    return CStyleRenderer::store_memory(dt, buf, idx, v);
  }
  std::string bitcast(const std::string&, const std::string& to, const std::string& v) const override {
    return "as_" + to + "(" + v + ")";
  }
  std::string math_function(const std::string& name, DType) const override { return name; }  // overloaded
};

/// OpenCL C source for a program.
inline std::string render_opencl(const codegen::Program& p) { return OpenCLRenderer().render(p); }

}  // namespace renderer
}  // namespace tinyt::inline v0
