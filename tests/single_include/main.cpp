// Built with single_include/ as the only tinyt include path: proves the amalgamation stands alone,
// from the graph to a compiled kernel on both CPU compilers, not only that it parses.
// this file is the program's implementation file: it sees the whole engine (cpu_compiler below)
#define TINYT_IMPLEMENTATION
#include <tinyt.hpp>

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#if __has_include(<tinyt/error.hpp>)
#error "include/ is on this test's include path; it must see single_include/tinyt.hpp only"
#endif

using tinyt::Tensor;

namespace {
// Small integers: every value below is exact in float32, so the checks are exact comparisons.
const std::vector<float> x_values{1, -2, 3, -4, 5, -6};  // 2 x 3
const std::vector<float> w_values{1, 2, 0, 1, -1, 0};    // 3 x 2
}  // namespace

TEST_CASE("single_include: a small graph gives hand-computed values on both CPU compilers") {
  for (const int cpu_llvm : {1, 0}) {
    INFO("CPU_LLVM=", cpu_llvm);
    const tinyt::Context compiler{{"CPU_LLVM", cpu_llvm}};
    REQUIRE(tinyt::cpu_compiler() ==
            (cpu_llvm ? tinyt::CpuCompiler::llvm : tinyt::CpuCompiler::cc));
    // fresh inputs per compiler: equal graphs are one node, which would remember its value
    const Tensor x = Tensor::from_vector(x_values, {2, 3});
    const Tensor w = Tensor::from_vector(w_values, {3, 2});

    // a fused elementwise chain: x*2+1 = [3, -3, 7, -7, 11, -11], then relu
    CHECK((x * 2 + 1).relu().to_vector<float>() == std::vector<float>{3, 0, 7, 0, 11, 0});
    // reductions: row sums 1-2+3 and -4+5-6; the sum of squares 1+4+9+16+25+36; the max
    CHECK(x.sum(1).to_vector<float>() == std::vector<float>{2, -5});
    CHECK(x.square().sum().item<float>() == 91.0f);
    CHECK(x.max().item<float>() == 5.0f);
    // matmul: [1*1 + -2*0 + 3*-1, 1*2 + -2*1 + 3*0; -4*1 + 5*0 + -6*-1, -4*2 + 5*1 + -6*0]
    CHECK(x.matmul(w).to_vector<float>() == std::vector<float>{-2, 0, 2, -3});
    // all three in one graph: relu([-1, 1, 3, -2]) sums to 4
    CHECK((x.matmul(w) + 1).relu().sum().item<float>() == 4.0f);
  }
}

TEST_CASE("single_include: errors are tinyt::Error subclasses that name the op and shapes") {
  CHECK_THROWS_AS(throw tinyt::Error("boom"), std::runtime_error);
  CHECK_THROWS_AS(throw tinyt::ShapeError("bad shape"), tinyt::Error);
  const Tensor x = Tensor::from_vector(x_values, {2, 3});
  std::string message;
  try {
    (void)x.matmul(x);  // (2, 3) by (2, 3): the inner dimensions differ
  } catch (const tinyt::ShapeError& e) {
    message = e.what();
  }
  CHECK(message.find("matmul") != std::string::npos);
  CHECK(message.find(tinyt::to_string(x.shape())) != std::string::npos);
}
