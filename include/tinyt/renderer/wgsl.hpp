// WGSL, for WebGPU: a dialect of the C-style renderer. What differs from C is spelled by its
// hooks: typed `let` and `var` declarations, conversions as constructors (`f32(x)`), `select`
// for the conditional operator, braces around guarded statements, buffers as bindings at module
// scope (backend/webgpu.hpp's order: storage buffers, then the variables' uniform array) and work-
// group memory there too, the work-item's index from the entry point's builtins.
//
// WGSL has no 64-bit types: a kernel whose index math does not fit 32 bits, or that touches
// float64 or int64, is a CompileError naming what. (So far also the types WebGPU cannot keep in
// a buffer as they are, narrower than 32 bits: bool, int8/16, float16 and bfloat16.)
#pragma once

#include "cstyle.hpp"

namespace tinyt::inline v0 {
namespace renderer {

class WGSLRenderer : public CStyleRenderer {
 protected:
  const char* language() const override { return "WGSL"; }
  std::string scalar_type(DType dt) const override {
    switch (dt.scalar_type()) {
      case ScalarType::bool_: return "bool";
      case ScalarType::int32: return "i32";
      case ScalarType::uint32: return "u32";
      case ScalarType::float32: return "f32";
      case ScalarType::index: throw CompileError("WGSL renderer: index math past 32 bits (WGSL has no 64-bit integers)");
      default: throw CompileError(detail::cat("WGSL renderer: WebGPU has no ", dt.name()));
    }
  }
  std::string memory_type(DType dt) const override {
    if (dt.scalar().itemsize() != 4) throw CompileError(detail::cat("WGSL renderer: a buffer of ", dt.name(), " (WebGPU keeps 32-bit words)"));
    return scalar_type(dt);
  }
  bool held_in_float(DType) const override { return false; }
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
    return module_scope_;
  }
  void open_kernel(const codegen::Program& p) override {
    std::string& m = module_scope_;
    for (size_t i = 0; i < p.globals.size(); ++i)
      m += detail::cat("@group(0) @binding(", i, ") var<storage, read_write> data", i, ": array<", memory_type(p.globals[i].base()), ">;\n");
    if (!p.vars.empty()) m += detail::cat("@group(0) @binding(", p.globals.size(), ") var<uniform> vars: array<vec4<i32>, ", p.vars.size(), ">;\n");
    body_ << "@compute @workgroup_size(" << p.local_size[0] << ", " << p.local_size[1] << ", " << p.local_size[2] << ")\nfn " << p.name
          << "(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {\n";
  }
  std::string read_variable(size_t k) const override { return detail::cat("vars[", k, "].x"); }
  std::string work_item(int dim) const override { return detail::cat("i32(gid.", "xyz"[dim], ")"); }
  std::string group_index(int dim) const override { return detail::cat("i32(wid.", "xyz"[dim], ")"); }
  std::string local_index(int dim) const override { return detail::cat("i32(lid.", "xyz"[dim], ")"); }
  // (work-group memory is declared at module scope: nothing in the function)
  std::string local_buffer(const std::string& type, const std::string& name, int64_t size) const override {
    module_scope_ += detail::cat("var<workgroup> ", name, ": array<", type, ", ", size, ">;\n");
    return "";
  }
  std::string barrier() const override { return "workgroupBarrier()"; }
  std::string bitcast(const std::string&, const std::string& to, const std::string& v) const override { return "bitcast<" + to + ">(" + v + ")"; }
  std::string math_function(const std::string& name, DType) const override { return name; }  // overloaded
  // no literals for them: made from their bits
  std::string special_float(double v, DType) const override {
    return std::isnan(v) ? "bitcast<f32>(0x7fc00000u)" : v > 0 ? "bitcast<f32>(0x7f800000u)" : "bitcast<f32>(0xff800000u)";
  }

 private:
  mutable std::string module_scope_;  // bindings and work-group memory, before the entry point
};

/// A linearized program as a WGSL compute shader whose entry point is the program's name.
inline std::string render_wgsl(const codegen::Program& p) { return WGSLRenderer().render(p); }

}  // namespace renderer
}  // namespace tinyt::inline v0
