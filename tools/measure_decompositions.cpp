// Measures the float32 decompositions of EXP2, LOG2 and SIN (include/tinyt/codegen/decompositions.hpp)
// over all 2^32 inputs, or an evenly spread subset, through the whole pipeline (Tensor -> kernel
// -> the CPU backend CPU_LLVM picks) against the C library in long double, and prints each
// function's largest error in ulps with the input that gives it. The claims at the top of
// decompositions.hpp come from here; tests/test_decompositions.cpp checks 2^20 inputs per run.
//
//   g++ -std=c++20 -O2 -DTINYT_HEADER_ONLY -Iinclude tools/measure_decompositions.cpp
//       -ldl -lpthread -o /tmp/measure        (one command; header-only: one file, no library)
//   /tmp/measure [exp2|log2|sin|all] [stride] [threads]
//
// stride 1 (the default) runs every input: a few minutes per function on one core, mostly the
// long double reference; stride 4096 runs 2^20 of them (each stride's block contributes one input,
// its low bits varying from block to block, so every binade and sign is covered). sin is measured
// where the claim is made, |x| <= 3.2e6 (2^21 pi/2); the inputs past that are counted, not measured.
#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <tinyt.hpp>

namespace {

// The error of `got` in ulps of the exact value `want` rounded to float32, as
// tests/test_decompositions.cpp counts it: an ulp is that of `want`'s binade (of the smallest
// normal's for denormals); a wrong NaN, infinity or overflow is infinitely wrong.
double ulps(float got, long double want) {
  constexpr double wrong = INFINITY;
  if (std::isnan(want)) return std::isnan(got) ? 0 : wrong;
  const long double overflow = FLT_MAX + std::ldexp(0.5L, FLT_MAX_EXP - FLT_MANT_DIG);  // rounds to inf
  if (std::fabs(want) >= overflow)
    return got == std::copysign(INFINITY, static_cast<double>(want)) ? 0 : wrong;
  if (!std::isfinite(got)) return wrong;
  const int e = want == 0 ? FLT_MIN_EXP - 1 : std::max(static_cast<int>(std::ilogb(want)), FLT_MIN_EXP - 1);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) /
                             std::ldexp(1.0L, e - FLT_MANT_DIG + 1));
}

struct Function {
  const char* name;
  tinyt::Tensor (*op)(const tinyt::Tensor&);
  long double (*ref)(long double);
  float limit;  // inputs with |x| above it are not measured
};
const Function functions[] = {
    {"exp2", [](const tinyt::Tensor& t) { return t.exp2(); }, [](long double x) { return exp2l(x); }, INFINITY},
    {"log2", [](const tinyt::Tensor& t) { return t.log2(); }, [](long double x) { return log2l(x); }, INFINITY},
    {"sin", [](const tinyt::Tensor& t) { return t.sin(); }, [](long double x) { return sinl(x); }, 3.2e6f},
};

struct Worst {
  double ulps = 0;
  float x = 0;
  uint64_t measured = 0, skipped = 0, above_half = 0;  // above_half: not correctly rounded
  void merge(const Worst& o) {
    if (!(o.ulps <= ulps)) ulps = o.ulps, x = o.x;
    measured += o.measured, skipped += o.skipped, above_half += o.above_half;
  }
};

void measure(const Function& f, uint64_t stride, unsigned threads) {
  const auto start = std::chrono::steady_clock::now();
  const uint64_t count = (uint64_t{1} << 32) / stride, chunk = uint64_t{1} << 22;
  Worst total;
  for (uint64_t first = 0; first < count; first += chunk) {
    const uint64_t n = std::min(chunk, count - first);
    std::vector<float> xs(n);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t k = first + i;
      // one input per block of `stride` bit patterns, at a position that varies from block to block
      const uint32_t bits = static_cast<uint32_t>(k * stride + (stride > 1 ? (k * 2654435761u) % stride : 0));
      std::memcpy(&xs[i], &bits, sizeof(float));
    }
    const std::vector<float> got = f.op(tinyt::Tensor::from_vector(xs)).to_vector<float>();
    std::vector<Worst> part(threads);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        Worst& w = part[t];
        for (uint64_t i = n * t / threads; i < n * (t + 1) / threads; ++i) {
          if (std::fabs(xs[i]) > f.limit) {
            ++w.skipped;
            continue;
          }
          const double u = ulps(got[i], f.ref(xs[i]));
          ++w.measured, w.above_half += u > 0.5;
          if (!(u <= w.ulps)) w.ulps = u, w.x = xs[i];
        }
      });
    for (std::thread& t : pool) t.join();
    for (const Worst& w : part) total.merge(w);
    if (stride == 1 && (first / chunk) % 64 == 63)
      std::fprintf(stderr, "  %s: %.0f%% done, max so far %.4f ulp\n", f.name,
                   100.0 * static_cast<double>(first + n) / static_cast<double>(count), total.ulps);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  uint32_t bits;
  std::memcpy(&bits, &total.x, sizeof bits);
  std::printf("%s float32: %llu inputs measured (%llu past |x| = %g skipped), max error %.4f ulp at "
              "x = %.9g (0x%08x); %llu not correctly rounded; %.0f s\n",
              f.name, static_cast<unsigned long long>(total.measured),
              static_cast<unsigned long long>(total.skipped), static_cast<double>(f.limit),
              total.ulps, static_cast<double>(total.x), bits,
              static_cast<unsigned long long>(total.above_half), seconds);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "all";
  const uint64_t stride = argc > 2 ? std::strtoull(argv[2], nullptr, 0) : 1;
  const unsigned threads =
      argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : std::max(1u, std::thread::hardware_concurrency());
  if (stride == 0 || (stride & (stride - 1)) != 0 || threads == 0) {
    std::fprintf(stderr, "usage: %s [exp2|log2|sin|all] [stride: a power of 2] [threads]\n", argv[0]);
    return 2;
  }
  bool any = false;
  for (const Function& f : functions)
    if (which == "all" || which == f.name) measure(f, stride, threads), any = true;
  if (!any) {
    std::fprintf(stderr, "no function %s: exp2, log2, sin or all\n", which.c_str());
    return 2;
  }
}
