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
#include <tinyt/internals.hpp>

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

TEST_CASE("webgpu: float64, int64 and uint64 tensors are a DeviceError naming the op and the dtype") {
  CHECK_THROWS_WITH_AS(Tensor::ones({4}, dtypes::float64, "CPU").to("WEBGPU"), doctest::Contains("to: WEBGPU has no float64"), DeviceError);
  CHECK_THROWS_WITH_AS(Tensor::ones({4}, dtypes::int64, "WEBGPU"), doctest::Contains("full: WEBGPU has no int64"), DeviceError);
  CHECK_THROWS_WITH_AS(Tensor::from_vector(std::vector<uint64_t>{1, 2}, {2}, "WEBGPU"), doctest::Contains("from_blob: WEBGPU has no uint64"),
                       DeviceError);
  const Tensor f = Tensor::ones({4}).to("WEBGPU");
  CHECK_THROWS_WITH_AS(f.cast(dtypes::int64), doctest::Contains("cast: WEBGPU has no int64"), DeviceError);
  CHECK_THROWS_WITH_AS(f.reshape({2, 2}).bitcast(dtypes::float64), doctest::Contains("bitcast"), DeviceError);
  CHECK_THROWS_AS(Tensor::empty({3}, dtypes::float64, "WEBGPU"), DeviceError);
  // integer sums accumulate in int32 there, and tinyt's own indices are int32
  const Tensor bytes = Tensor::from_vector(std::vector<int8_t>{100, 100, 100}, {3}, "WEBGPU");
  CHECK(bytes.sum().dtype() == dtypes::int32);
  CHECK(bytes.sum().item<int32_t>() == 300);
  CHECK(Device::widest_int("WEBGPU") == dtypes::int32);
  CHECK(f.sort().second.dtype() == dtypes::int32);
}

TEST_CASE("webgpu: bool, 8- and 16-bit elements, packed in words, are loaded and stored by neighbouring work-items") {
  // odd sizes: a word's elements belong to different work-items, and the last word is partly used
  const int64_t n = 1001;
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 300);
  const Tensor c = Tensor::from_vector(v), g = c.to("WEBGPU");
  const auto same = [&](const std::string& what, auto f) {
    INFO(what);
    const Tensor on_gpu = f(g), on_cpu = f(c);
    CHECK(on_gpu.dtype() == on_cpu.dtype());
    CHECK(on_gpu.to("CPU").cast(dtypes::float32).to_vector<float>() == on_cpu.cast(dtypes::float32).to_vector<float>());
  };
  same("int8 wraps", [](const Tensor& t) { return t.cast(dtypes::int8) * 3 + 1; });
  same("uint8 from negative floats and back", [](const Tensor& t) { return t.cast(dtypes::uint8) + t.cast(dtypes::uint8); });
  same("int16 and uint16", [](const Tensor& t) { return t.cast(dtypes::int16) * 200 - t.cast(dtypes::uint16); });
  same("bool", [](const Tensor& t) { return (t > 10.f).logical_xor(t < -100.f); });
  same("float16 rounds to nearest even", [](const Tensor& t) { return (t * 1.001f).cast(dtypes::float16) * 2; });
  same("bfloat16", [](const Tensor& t) { return t.cast(dtypes::bfloat16) + 0.5; });
  same("any, all, argmax of bytes", [](const Tensor& t) {
    const Tensor b = t.cast(dtypes::uint8);
    return (b > 250).any().cast(dtypes::int32) + (b > 0).all().cast(dtypes::int32) + b.argmax();
  });
  same("float16 overflow and underflow", [](const Tensor& t) { return (t * 1000).cast(dtypes::float16) + (t * 1e-6f).cast(dtypes::float16); });
}

TEST_CASE("webgpu: NaN survives max, sign and isnan; pow of a negative base; inf from a division by 0") {
  const Tensor x = Tensor::from_vector(std::vector<float>{1.f, NAN, -2.f, 0.f}, {4}, "WEBGPU");
  const std::vector<float> mx = x.maximum(0.5f).to_vector<float>(), sg = x.sign().to_vector<float>();
  CHECK(std::isnan(mx[1]));
  CHECK(mx[2] == 0.5f);
  CHECK(std::isnan(sg[1]));
  CHECK(sg[2] == -1.f);
  CHECK(x.isnan().to_vector<bool>() == std::vector<bool>{false, true, false, false});
  CHECK(std::isnan(x.max().item<float>()));
  const std::vector<float> cube = x.pow(3.f).to_vector<float>(), root = x.pow(0.5f).to_vector<float>();
  CHECK(cube[2] == -8.f);
  CHECK(cube[3] == 0.f);
  CHECK(std::isnan(root[2]));
  CHECK(std::isinf(Tensor::from_vector(std::vector<float>{1.f, 2.f}, {2}, "WEBGPU").var(false, 2).item<float>()));
}

TEST_CASE("webgpu: a kernel that would read more than 8 buffers is split into kernels that each bind at most 8") {
  std::vector<Tensor> cpu, gpu;
  for (int i = 0; i < 12; ++i) {
    cpu.push_back(Tensor::randn({100}).to("CPU").realize());
    gpu.push_back(cpu.back().to("WEBGPU").realize());
  }
  const auto total = [](const std::vector<Tensor>& t) {
    Tensor s = t[0];
    for (size_t i = 1; i < t.size(); ++i) s = s + t[i] * static_cast<double>(i + 1);
    return s;
  };
  const Tensor on_gpu = total(gpu);
  const auto kernels = schedule::create_schedule({on_gpu.uop()});
  CHECK(kernels.size() > 1);
  for (const auto& k : kernels) CHECK(k.buffers.size() <= 8);
  CHECK(worst_difference(on_gpu, total(cpu)) <= 1e-6);
  // on the CPU, with no limit, it is one kernel of 13 buffers
  CHECK(schedule::create_schedule({total(cpu).uop()}).size() == 1);
}

TEST_CASE("webgpu: a kernel past WebGPU's 16 KiB of work-group memory is a CompileError saying so") {
  // a program made by hand whose work-group memory is 4352 float32s (17 KiB)
  codegen::Program p;
  p.name = "big_local";
  p.local_size = {1, 1, 1};
  p.global_size = {1, 1, 1};
  const UOp local(Ops::DEFINE_LOCAL, dtypes::float32.ptr(4352, AddrSpace::local), {}, 0);
  p.ops = {local};
  CHECK_THROWS_WITH_AS(renderer::render_wgsl(p), doctest::Contains("17408 bytes of work-group memory"), CompileError);
}

TEST_CASE("webgpu: an in-place update reads each element's old value, as on the CPU") {
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5}, {5}, "WEBGPU").realize();
  for (int i = 0; i < 3; ++i) a.assign(a * a - 1).realize();
  CHECK(a.to_vector<float>() == std::vector<float>{0, 63, 3968, 50175, 330624});
}
