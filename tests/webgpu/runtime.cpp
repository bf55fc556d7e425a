// WebGPU (backend/webgpu.hpp, renderer/wgsl.hpp) on wgpu-native and Mesa's lavapipe: the
// runtime with hand-written WGSL (memory, compiling and its errors, dispatches with buffers and
// variables, misuse as errors), then tinyt's own kernels rendered to WGSL against the CPU's.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include <tinyt.hpp>
#include <tinyt/backend/webgpu.hpp>

using namespace tinyt;
using backend::LaunchDims;

namespace {
backend::WebGPUDevice& device() {
  static backend::WebGPUDevice d(0);
  return d;
}
// out[i] = x[i] + y[i] * 0.5 for i < n (a variable), 64 work-items a group
const std::string axpy = R"(@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> vars: array<vec4<i32>, 1>;
@compute @workgroup_size(64) fn axpy(@builtin(global_invocation_id) g: vec3<u32>) {
  let i = i32(g.x);
  if (i < vars[0].x) { out[i] = x[i] + y[i] * 0.5; }
}
)";
}  // namespace

TEST_CASE("webgpu runtime: memory in and out, whole and in odd sizes, and copied on the device") {
  backend::Allocator& a = device().allocator();
  for (size_t n : {size_t{1}, size_t{7}, size_t{4096}, size_t{1} << 20}) {
    std::vector<uint8_t> in(n), out(n, 0), copied(n, 0);
    for (size_t i = 0; i < n; ++i) in[i] = static_cast<uint8_t>(i * 7 + 3);
    void* h = a.alloc(n);
    void* h2 = a.alloc(n);
    a.copyin(h, in.data(), n);
    a.copyout(out.data(), h, n);
    CHECK(out == in);
    a.copy(h2, h, n);
    a.copyout(copied.data(), h2, n);
    CHECK(copied == in);
    a.free(h, n);
    a.free(h2, n);
  }
}

TEST_CASE("webgpu runtime: a WGSL kernel runs on the buffers and variables given") {
  backend::Allocator& a = device().allocator();
  const int n = 1000;  // not a whole number of groups: the kernel's bound check leaves the rest
  std::vector<float> x(1024), y(1024), out(1024, -1.0f);
  std::iota(x.begin(), x.end(), 0.0f);
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i % 13) - 6.0f;
  void *hx = a.alloc(4096), *hy = a.alloc(4096), *ho = a.alloc(4096);
  a.copyin(hx, x.data(), 4096), a.copyin(hy, y.data(), 4096), a.copyin(ho, out.data(), 4096);
  const std::string binary = device().compiler().compile(axpy, "axpy");
  auto program = device().load(binary, "axpy");
  const double seconds = program->launch({ho, hx, hy}, {n}, LaunchDims{{1024, 1, 1}, {64, 1, 1}}, true);
  CHECK(seconds > 0);
  a.copyout(out.data(), ho, 4096);
  size_t bad = 0;
  for (int i = 0; i < 1024; ++i) bad += out[static_cast<size_t>(i)] != (i < n ? x[static_cast<size_t>(i)] + y[static_cast<size_t>(i)] * 0.5f : -1.0f);
  CHECK(bad == 0);
  // launched again untimed, with another bound: the queue runs it before the copy out
  program->launch({ho, hy, hx}, {10}, LaunchDims{{64, 1, 1}, {64, 1, 1}}, false);
  a.copyout(out.data(), ho, 4096);
  CHECK(out[9] == y[9] + x[9] * 0.5f);
  CHECK(out[10] == x[10] + y[10] * 0.5f);  // (from the first launch)
  // misuse: groups that do not divide the work-items, another number of buffers
  CHECK_THROWS_AS(program->launch({ho, hx, hy}, {n}, LaunchDims{{1000, 1, 1}, {64, 1, 1}}, true), DeviceError);
  CHECK_THROWS_AS(program->launch({ho, hx}, {n}, LaunchDims{{64, 1, 1}, {64, 1, 1}}, true), DeviceError);
  CHECK_THROWS_AS(program->launch({ho, hx, hy}, {int64_t{1} << 40}, LaunchDims{{64, 1, 1}, {64, 1, 1}}, true), DeviceError);
  a.free(hx, 4096), a.free(hy, 4096), a.free(ho, 4096);
}

TEST_CASE("webgpu runtime: WGSL that does not compile is a CompileError quoting the message and the numbered source") {
  const std::string bad = "@compute @workgroup_size(1) fn k() {\n  let x: f32 = 1;\n  undefined_thing = x;\n}\n";
  try {
    (void)device().compiler().compile(bad, "k");
    FAIL("compiled");
  } catch (const CompileError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("WEBGPU") != std::string::npos);
    CHECK(what.find("'k'") != std::string::npos);
    CHECK(what.find("undefined_thing") != std::string::npos);
    CHECK(what.find("3 |") != std::string::npos);  // the numbered source
  }
  // the device stays usable after the error
  CHECK_NOTHROW((void)device().compiler().compile(axpy, "axpy"));
}

TEST_CASE("webgpu runtime: a device other than WEBGPU (index 0) is a DeviceError") {
  CHECK_THROWS_AS(backend::WebGPUDevice(1), DeviceError);
}

namespace {
// the largest difference between `t` computed on WEBGPU and on the CPU, relative to 1 + |CPU's|
double worst_difference(const Tensor& on_webgpu, const Tensor& on_cpu) {
  const std::vector<float> got = on_webgpu.to_vector<float>(), want = on_cpu.to_vector<float>();
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::isnan(want[i]) ? (std::isnan(got[i]) ? 0.0 : INFINITY) : std::fabs(got[i] - want[i]) / (1 + std::fabs(want[i]));
    worst = std::max(worst, d);
  }
  return worst;
}
}  // namespace

TEST_CASE("webgpu: elementwise math, reductions, matmul and a padded conv rendered to WGSL compute what the CPU computes") {
  const Tensor a = Tensor::randn({37, 45}).realize(), b = Tensor::randn({37, 45}).realize();
  const Tensor w = Tensor::randn({45, 20}).realize();
  const Tensor x = Tensor::randn({2, 3, 9, 11}).realize(), k = Tensor::randn({4, 3, 3, 3}).realize();
  const Tensor ga = a.to("WEBGPU"), gb = b.to("WEBGPU"), gw = w.to("WEBGPU"), gx = x.to("WEBGPU"), gk = k.to("WEBGPU");
  CHECK(ga.device() == "WEBGPU");
  const auto both = [&](const std::string& what, auto f) {
    INFO(what);
    const Tensor g = f(ga, gb, gw, gx, gk), c = f(a, b, w, x, k);
    CHECK(g.device() == "WEBGPU");
    CHECK(worst_difference(g, c) <= 1e-5);
  };
  both("a * b + 1", [](const Tensor& p, const Tensor& q, auto&&...) { return p * q + 1; });
  both("exp2, log2 of |a|, sqrt, sin", [](const Tensor& p, const Tensor& q, auto&&...) { return p.exp2() + (p.abs() + 1).log2() * (q.abs()).sqrt() - p.sin(); });
  both("relu, maximum with NaN-free operands, where", [](const Tensor& p, const Tensor& q, auto&&...) { return p.relu() + p.maximum(q) + (p > q).where(p, q * 2); });
  both("a row sum and a column max", [](const Tensor& p, const Tensor& q, auto&&...) { return p.sum(1, true) + (p * q).max(0, true); });
  both("softmax", [](const Tensor& p, auto&&...) { return p.softmax(1); });
  both("matmul", [](const Tensor& p, const Tensor&, const Tensor& r, auto&&...) { return p.matmul(r); });
  both("conv2d padded", [](const Tensor&, const Tensor&, const Tensor&, const Tensor& s, const Tensor& t) { return s.conv2d(t, {}, 1, 1, 1, 1); });
  both("transpose, pad, flip", [](const Tensor& p, auto&&...) { return p.permute({1, 0}).pad({{1, 2}, {0, 3}}).flip(0) * 3; });
}

TEST_CASE("webgpu: a kernel WGSL cannot express is a CompileError naming what") {
  const Tensor d = Tensor::ones({4}, dtypes::float64).to("WEBGPU");
  CHECK_THROWS_AS((d * 2).realize(), CompileError);
}
