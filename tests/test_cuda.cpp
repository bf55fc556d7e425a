// The CUDA backend where no GPU is: its renderer's kernels compile with NVRTC for sm_80 and sm_90
// (what NVRTC accepts, not what a GPU computes: `make test-cuda` runs the suite on a GPU). With
// TINYT_TEST_CUDA_ARCHS set (ctest's cl_* runs set it), every kernel the run compiled for its own
// device is compiled for CUDA as well once the tests end (tinyt_test_after_run below).
#include <doctest/doctest.h>

#include <iostream>
#include <sstream>

#include "helpers.hpp"

using namespace tinyt;

namespace {
/// What the CUDA code generator is told about the GPUs these kernels are compiled for.
backend::Target cuda_target() {
  backend::Target t;
  t.language = backend::Language::cuda;
  t.gpu = true;
  t.max_local = 256;
  t.compute_units = 132;  // an H100's SMs
  t.warp = 32;
  t.tensor_cores = true;  // sm_80 and sm_90 both have them
  t.half = true;
  return t;
}

/// Why NVRTC cannot be used here, or nothing when it can.
std::string nvrtc_missing() {
  try {
    backend::nvrtc_version();
    return "";
  } catch (const DeviceError& e) {
    return e.what();
  }
}

/// The kernel AST as the CUDA device would compile it: a GPU's hand-coded opts, work-items, CUDA C++.
std::string cuda_source(const UOp& ast) {
  const backend::Target t = cuda_target();
  return engine::render(engine::lower_kernel(ast, engine::detail::gpu_opts(ast, t), t, true), t);
}

/// Compiles each AST for each architecture; returns the failures' messages.
std::vector<std::string> compile_for_cuda(const std::vector<UOp>& asts, const std::vector<std::string>& archs) {
  std::vector<std::string> failures;
  for (const std::string& arch : archs) {
    backend::CudaCompiler compiler(arch);
    for (const UOp& ast : asts) {
      const std::string name = schedule::detail::kernel_name(ast);
      try {
        const std::string ptx = backend::cached_compile(compiler, cuda_source(ast), name);
        if (ptx.find(".entry " + name) == std::string::npos) failures.push_back(name + ": the PTX has no entry " + name);
      } catch (const Error& e) {
        failures.push_back(e.what());
      }
    }
  }
  return failures;
}

std::vector<std::string> split_archs(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string arch; std::getline(in, arch, ',');)
    if (!arch.empty()) out.push_back(arch);
  return out;
}
}  // namespace

int tinyt_test_after_run() {
  const std::vector<std::string> archs = split_archs(getenv_str("TINYT_TEST_CUDA_ARCHS"));
  if (archs.empty()) return 0;
  if (const std::string why = nvrtc_missing(); !why.empty()) {
    std::cout << "cuda: skipped: the kernels of this run were not compiled for CUDA, NVRTC cannot be opened: " << why << "\n";
    return 0;
  }
  const std::vector<UOp> asts = engine::kernel_cache().asts();
  const std::vector<std::string> failures = compile_for_cuda(asts, archs);
  for (const std::string& f : failures) std::cout << "cuda: " << f << "\n";
  std::cout << "cuda: " << asts.size() << " kernels of this run compiled with NVRTC for " << getenv_str("TINYT_TEST_CUDA_ARCHS")
            << ": " << failures.size() << " failed\n";
  return failures.empty() ? 0 : 1;
}

TEST_CASE("cuda: kernels of every kind compile with NVRTC for sm_80 and sm_90") {
  if (const std::string why = nvrtc_missing(); !why.empty()) {
    MESSAGE("skipped: NVRTC cannot be opened: ", why);
    return;
  }
  const Tensor f = Tensor::arange(64).reshape({8, 8}).cast(dtypes::float32) / 7;
  const Tensor i = Tensor::arange(64).reshape({8, 8});
  const std::vector<Tensor> outputs{
      (f.exp() + f.sin() * f.sqrt()).log2(),                   // transcendentals (decomposed) and sqrt
      f.max(1) + f.sum(0),                                     // reductions
      f.matmul(f.T()),                                         // a MULACC accumulation
      f.cast(dtypes::float16) * 3,                             // halves: memory, rounding
      Tensor(Tensor::arange(256).reshape({16, 16}).cast(dtypes::float16) / 64).matmul(f.cast(dtypes::float16).pad({{0, 8}, {0, 0}})),  // tensor cores
      f.cast(dtypes::bfloat16).cast(dtypes::float32),          // bfloat16
      f.cast(dtypes::float64).sqrt(),                          // double
      Tensor(i / (i % 5 - 2)) + (i << 3),                      // safe integer division, shifts
      i.cast(dtypes::int8) * 100,                              // narrow integers wrap
      f.bitcast(dtypes::int32) ^ 0x1234,                       // bitcasts
      f.cast(dtypes::float16).bitcast(dtypes::int16),          // a half's bits
      (f > 3).where(f, -f).maximum(Tensor::full({8, 8}, NAN)),  // where, NaN-propagating max
      f.pad({{1, 1}, {2, 0}}).reshape({-1}),                   // gated loads
  };
  std::vector<UOp> asts;
  for (const Tensor& t : outputs)
    for (const schedule::Kernel& k : schedule::create_schedule({t.uop()}))
      if (k.ast.op() != Ops::COPY) asts.push_back(k.ast);
  REQUIRE(asts.size() >= outputs.size());
  const std::vector<std::string> failures = compile_for_cuda(asts, {"sm_80", "sm_90"});
  for (const std::string& f : failures) FAIL_CHECK(f);
  // what the dialect must say, in one kernel
  const std::string half = cuda_source(schedule::create_schedule({Tensor(f.cast(dtypes::float16) * 3).uop()}).back().ast);
  CHECK(half.find("extern \"C\" __global__ void __launch_bounds__(256)") != std::string::npos);
  CHECK(half.find("cvt.rn.f16.f32") != std::string::npos);
  CHECK(half.find("blockIdx.x * blockDim.x + threadIdx.x") != std::string::npos);
  // a long reduction is split across a block: its partials are combined within each warp by
  // shuffles, and the 8 warps' results meet in shared memory
  const std::string sum = cuda_source(schedule::create_schedule({Tensor(Tensor::empty({4, 8192}).sum(1)).uop()}).back().ast);
  CHECK(sum.find("__shfl_xor_sync(0xffffffffu, ") != std::string::npos);
  CHECK(sum.find("__shared__ __align__(16) float temp0[8];") != std::string::npos);
  CHECK(sum.find("__syncthreads();") != std::string::npos);
}

TEST_CASE("cuda: without a driver, the device is a DeviceError naming the libraries tried") {
  bool has_driver = true;
  try {
    backend::device("CUDA");
  } catch (const DeviceError& e) {
    has_driver = false;
    const std::string what = e.what();
    CHECK(what.find("libcuda.so.1") != std::string::npos);
  }
  // this case checks the message of a missing driver: with one, it checks nothing
  if (has_driver) MESSAGE("skipped: a CUDA driver is present here; `make test-cuda` runs the suite on it");
  else MESSAGE("cuda: no CUDA driver here: kernels compiled with NVRTC, not run");
}
