// CUDA C++ for NVRTC: a dialect of the C-style renderer (cstyle.hpp) for the CUDA backend, with
// the inline PTX of tensor-core ops and ldmatrix.
#pragma once

#include "cstyle.hpp"

namespace tinyt::inline v0 {
namespace renderer {

/// CUDA C++ for NVRTC: `extern "C" __global__` kernels; halves as their bits, converted in PTX.
class CUDARenderer : public CStyleRenderer {
 public:
  /// `max_local`: the most work-items a launch groups (its __launch_bounds__).
  explicit CUDARenderer(int64_t max_local = 256) : max_local_(max_local) {}

 protected:
  const char* language() const override { return "CUDA"; }
  bool held_in_float(DType dt) const override { return dt.scalar() == dtypes::bfloat16 || dt.scalar() == dtypes::float16; }
  bool bits_in_register(DType dt) const override { return held_in_float(dt); }
  std::string memory_type(DType dt) const override {
    if (dt.scalar() == dtypes::float16) return "unsigned short";
    return CStyleRenderer::memory_type(dt);
  }
  std::string preamble(const SourceFeatures& f) const override {
    // NVRTC compiles without the toolkit's headers: the few macros and helpers are defined here
    std::string s =
        "#define INFINITY __int_as_float(0x7f800000)\n#define NAN __int_as_float(0x7fffffff)\n"
        "template <class To, class From> __device__ inline To tinyt_bitcast(From x) {\n"
        "  union { From from; To to; } u; u.from = x; return u.to;\n}\n\n";
    if (f.bfloat16) s += detail::bfloat16_helpers("__device__ inline ", "__float_as_uint", "__uint_as_float", "unsigned short", "unsigned int");
    if (f.float16)
      s += "__device__ inline unsigned short tinyt_f32_to_f16(float f) {\n"
           "  unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h;\n}\n"
           "__device__ inline float tinyt_f16_to_f32(unsigned short h) {\n"
           "  float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f;\n}\n"
           "__device__ inline float tinyt_f16_round(float f) { return tinyt_f16_to_f32(tinyt_f32_to_f16(f)); }\n\n";
    if (f.tensor_cores && (f.float16 || f.bfloat16))
      s += "__device__ inline unsigned tinyt_pack16(unsigned short lo, unsigned short hi) {\n"
           "  return (unsigned)lo | ((unsigned)hi << 16);\n}\n\n";
    if (f.ldmatrix)  // a pointer into shared memory as the 32-bit address ldmatrix takes
      s += "__device__ inline unsigned tinyt_shared(const void* p) {\n"
           "  unsigned long long a; asm(\"cvta.to.shared.u64 %0, %1;\" : \"=l\"(a) : \"l\"(p)); return (unsigned)a;\n}\n\n";
    if (f.tf32)
      s += "__device__ inline unsigned tinyt_tf32(float f) {\n"
           "  unsigned t; asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(t) : \"f\"(f)); return t;\n}\n\n";
    return s;
  }
  void open_kernel(const codegen::Program& p) override {
    body_ << "extern \"C\" __global__ void __launch_bounds__(" << max_local_ << ") " << p.name << "(";
    for (size_t i = 0; i < p.globals.size(); ++i)
      body_ << (i ? ", " : "") << memory_type(p.globals[i].base()) << "* __restrict__ data" << i;
    for (size_t k = 0; k < p.vars.size(); ++k) body_ << (k + p.globals.size() ? ", " : "") << "int " << variable_name(k);
    body_ << ") {\n";
  }
  std::string read_variable(size_t) const override { return ""; }
  std::string work_item(int dim) const override {
    const char* d = dim == 0 ? "x" : dim == 1 ? "y" : "z";
    return detail::cat("(int)(blockIdx.", d, " * blockDim.", d, " + threadIdx.", d, ")");
  }
  std::string group_index(int dim) const override { return detail::cat("(int)blockIdx.", dim == 0 ? "x" : dim == 1 ? "y" : "z"); }
  std::string local_index(int dim) const override { return detail::cat("(int)threadIdx.", dim == 0 ? "x" : dim == 1 ? "y" : "z"); }
  std::string wide_pointer(bool) const override { return "uint4*"; }  // NVRTC's built-in vector type
  std::string ldmatrix(const std::string& name, int tiles, bool trans, const std::string& address) const override {
    std::string regs, outs;
    for (int r = 0; r < tiles; ++r) regs += detail::cat(r ? ", %" : "%", r), outs += detail::cat(r ? ", " : "", "\"=r\"(", name, "[", r, "])");
    return detail::cat("unsigned ", name, "[", tiles, "];\n", "asm volatile(\"ldmatrix.sync.aligned.m8n8.x", tiles, trans ? ".trans" : "",
                       ".shared.b16 {", regs, "}, [%", tiles, "];\" : ", outs, " : \"r\"(tinyt_shared(", address, ")));");
  }
  std::string local_buffer(const std::string& type, const std::string& name, int64_t size) const override {
    return detail::cat("__shared__ __align__(16) ", type, " ", name, "[", size, "]");  // (a wide copy's 16 bytes)
  }
  std::string barrier() const override { return "__syncthreads()"; }
  std::string shuffle_xor(const std::string& v, int64_t mask) const override {
    return detail::cat("__shfl_xor_sync(0xffffffffu, ", v, ", ", mask, ")");  // every lane of the warp takes part
  }
  // mma.sync through inline PTX (no CUDA header): the fragments' 16-bit values (`operands` are
  // their bits) two to a 32-bit register (the first in the low half), or float32 values rounded to
  // TF32, one to a register; the product of the tiles comes out as 4 floats (C is 0: the REDUCE
  // around it adds it to the sum)
  std::string tensor_core(const std::string& kind, const std::string& name, const std::vector<std::string>& operands,
                          const std::vector<std::string>& accumulators) const override {
    const TensorCore* tc = tensor_core_of(kind);
    if (!tc || operands.size() != static_cast<size_t>(tc->a_count + tc->b_count))
      throw CompileError(detail::cat("CUDA renderer: no tensor-core op ", kind, " of ", operands.size(), " operands"));
    const DType input = tensor_core_input(kind);
    const std::string type = input == dtypes::bfloat16 ? "bf16" : input == dtypes::float16 ? "f16" : "tf32";
    std::vector<std::string> regs;
    if (type == "tf32") {
      for (const std::string& v : operands) regs.push_back(detail::cat("\"r\"(tinyt_tf32(", v, "))"));
    } else {  // (a pair whose second is empty: a register of an ldmatrix)
      for (size_t i = 0; i < operands.size(); i += 2)
        regs.push_back(operands[i + 1].empty() ? detail::cat("\"r\"(", operands[i], ")")
                                               : detail::cat("\"r\"(tinyt_pack16(", operands[i], ", ", operands[i + 1], "))"));
    }
    const size_t a_regs = regs.size() * static_cast<size_t>(tc->a_count) / operands.size();
    std::string list, in;
    for (size_t i = 0; i < regs.size(); ++i) {
      list += detail::cat(i == 0 ? "{" : i == a_regs ? "}, {" : ", ", "%", i + 4);
      in += (i ? ", " : "") + regs[i];
    }
    // C: the accumulators, or one zero four times
    const size_t c = regs.size() + 4;
    std::string c_list;
    for (size_t i = 0; i < TensorCore::c_count; ++i) c_list += detail::cat(i ? ", %" : "%", accumulators.empty() ? c : c + i);
    for (size_t i = 0; i < std::max<size_t>(accumulators.size(), 1); ++i)
      in += detail::cat(", \"f\"(", accumulators.empty() ? "0.0f" : accumulators[i], ")");
    return detail::cat("float ", name, "[4];\n",
                       "asm volatile(\"mma.sync.aligned.", tc->shape, ".row.col.f32.", type, ".", type, ".f32 {%0, %1, %2, %3}, ", list,
                       "}, {", c_list, "};\"\n",
                       "    : \"=f\"(", name, "[0]), \"=f\"(", name, "[1]), \"=f\"(", name, "[2]), \"=f\"(", name, "[3])\n",
                       "    : ", in, ");");
  }
  std::string load_memory(DType dt, const std::string& buf, const std::string& idx) const override {
    if (dt.scalar() == dtypes::float16) return "tinyt_f16_to_f32(" + buf + "[" + idx + "])";
    return CStyleRenderer::load_memory(dt, buf, idx);
  }
  std::string store_memory(DType dt, const std::string& buf, const std::string& idx, const std::string& v) const override {
    if (dt.scalar() == dtypes::float16) return buf + "[" + idx + "] = tinyt_f32_to_f16(" + v + ")";
    return CStyleRenderer::store_memory(dt, buf, idx, v);
  }
  std::string bitcast(const std::string& from, const std::string& to, const std::string& v) const override {
    return "tinyt_bitcast<" + to + ", " + from + ">(" + v + ")";
  }

 private:
  int64_t max_local_;
};

/// CUDA C++ source for a program.
inline std::string render_cuda(const codegen::Program& p, int64_t max_local = 256) { return CUDARenderer(max_local).render(p); }

}  // namespace renderer
}  // namespace tinyt::inline v0
