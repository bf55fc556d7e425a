// matmul of two square n x n matrices (default n = 512, 1024 and 2048), in GFLOPS (2 n^3 flops
// per product; n = 64 with --quick). fp32, or bf16 / fp16 (inputs and output; `bf16` or `fp16`
// before the sizes it applies to); with `t`, a.matmul(b.T()) where b is stored as PyTorch's Linear
// stores its weight, (out, in). Usage: bench_matmul [options] [bf16|fp16] [t] [n...]
#include <cmath>
#include <random>

#include <tinyt.hpp>

#include "bench.hpp"

using namespace tinyt;

int main(int argc, char** argv) {
  bench::Options opt(argc, argv);
  std::vector<int64_t> sizes;
  DType dtype = dtypes::float32;
  bool transposed = false;
  for (const std::string& a : opt.args) {
    if (a == "t") transposed = true;
    else if (a == "bf16") dtype = dtypes::bfloat16;
    else if (a == "fp16") dtype = dtypes::float16;
    else sizes.push_back(std::stoll(a));
  }
  if (sizes.empty())
    sizes = opt.quick ? std::vector<int64_t>{64} : std::vector<int64_t>{512, 1024, 2048};
  const bool narrow = dtype != dtypes::float32;
  const std::string tag = dtype == dtypes::bfloat16 ? "bf16" : dtype == dtypes::float16 ? "fp16" : "fp32";
  for (const int64_t n : sizes) {
    Tensor a = Tensor::rand({n, n}).cast(dtype).realize(), b = Tensor::rand({n, n}).cast(dtype).realize();
    Tensor c;
    const bench::Timing t = bench::measure(opt, [&] { c = (transposed ? a.matmul(b.T()) : a.matmul(b)).realize(); });
    const double gflops = 2.0 * static_cast<double>(n * n * n) / t.best_s / 1e9;
    const std::string name = "matmul_" + std::string(transposed ? "t_" : "") + (narrow ? tag + "_" : "") + std::to_string(n);
    bench::report(name, "matmul " + std::to_string(n) + "^2 " + tag + (transposed ? ", a.matmul(b.T())" : ""), gflops, "GFLOPS", t);

    // Spot-check a few entries against a double-precision dot product of the same inputs (a bf16
    // result is rounded to 8 bits: 1 part in 256; fp16's to 11).
    const std::vector<float> av = a.cast(dtypes::float32).to_vector<float>(), bv = b.cast(dtypes::float32).to_vector<float>(),
                             cv = c.cast(dtypes::float32).to_vector<float>();
    std::mt19937 rng(1);
    for (int k = 0; k < 8; ++k) {
      const int64_t i = static_cast<int64_t>(rng() % n), j = static_cast<int64_t>(rng() % n);
      double want = 0;
      for (int64_t l = 0; l < n; ++l) want += double(av[i * n + l]) * double(transposed ? bv[j * n + l] : bv[l * n + j]);
      const bool ok = narrow ? std::abs(cv[i * n + j] - want) <= 1e-2 * std::abs(want) : bench::close(cv[i * n + j], want);
      bench::check(ok, name + " entry (" +
                                                          std::to_string(i) + ", " +
                                                          std::to_string(j) + ")");
    }
  }
  return 0;
}
