// engine/estimates.hpp: the ops and bytes a kernel is counted for (GlobalCounters::global_ops
// and global_mem, the DEBUG=2 rates) against counts worked out by hand from the shapes.
#include <doctest/doctest.h>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;
using tinyt_test::input;

namespace {
// The counters one realize of t adds (its inputs are realized already).
std::pair<int64_t, int64_t> counted(const Tensor& t) {
  GlobalCounters::reset();
  Tensor(t).realize();
  CHECK(GlobalCounters::kernel_count == 1);
  return {GlobalCounters::global_ops.load(), GlobalCounters::global_mem.load()};
}
}  // namespace

TEST_CASE("estimates: a matmul is 2*M*N*K ops and the bytes of A, B and C") {
  const int64_t M = 8, K = 20, N = 12;
  Tensor a = input({M, K}, 1), b = input({K, N}, 2);
  // the same counts whatever the opts: tiling and unrolling move the work, they do not add to it
  for (int noopt : {1, 0}) {
    INFO("NOOPT=", noopt);
    Context c{{"NOOPT", noopt}};
    auto [ops, mem] = counted(a.matmul(b));
    CHECK(ops == 2 * M * N * K);
    CHECK(mem == (M * K + K * N + M * N) * 4);
  }
}

TEST_CASE("estimates: threaded and tiled kernels count the same work") {
  // big enough for the hand-coded opts to thread and tile them: a thread loop counts its whole
  // size (the threads together do all of it), an unrolled or upcast loop its lanes
  const int64_t M = 96, K = 128, N = 80;
  Tensor a = input({M, K}, 9), b = input({K, N}, 10);
  auto [ops, mem] = counted(a.matmul(b));
  CHECK(ops == 2 * M * N * K);
  CHECK(mem == (M * K + K * N + M * N) * 4);
  Tensor big = input({1 << 17}, 11);
  auto [eops, emem] = counted((big * 3 + 1).relu());
  CHECK(eops == 3 * (1 << 17));  // a mul, an add and a max per element
  CHECK(emem == 2 * (1 << 17) * 4);
}

TEST_CASE("estimates: elementwise kernels count one op per element per ALU op, and each buffer once") {
  Context c{{"NOOPT", 1}};
  Tensor a = input({300}, 3), b = input({300}, 4);
  auto [ops, mem] = counted(a * b + 1.5f);  // a mul and an add per element
  CHECK(ops == 2 * 300);
  CHECK(mem == 3 * 300 * 4);
  // a broadcast input is read 100 or 10 times but touched once: 10 + 100 inputs, 1000 outputs
  Tensor col = input({10, 1}, 5), row = input({1, 100}, 6);
  auto [bops, bmem] = counted(col - row);
  CHECK(bops == 2 * 1000);  // a - b is a + (-b) in the graph, as tinygrad's a + b*-1: two ops
  CHECK(bmem == (10 + 100 + 1000) * 4);
  // a reduction: one ADD per element summed, into 16 outputs
  Tensor x = input({16, 32}, 7);
  auto [rops, rmem] = counted(x.sum(1));
  CHECK(rops == 16 * 32);
  CHECK(rmem == (16 * 32 + 16) * 4);
  // an int8 copy touches its bytes: 1 per element in, 4 per int32 element out
  Tensor small = input({64}, 8).mul(8).cast(dtypes::int8).realize();
  auto [cops, cmem] = counted(small.cast(dtypes::int32));
  CHECK(cops == 0);  // a cast is not arithmetic
  CHECK(cmem == 64 * 1 + 64 * 4);
}

TEST_CASE("estimates: the kernel line shows the time and the rates") {
  const engine::Estimates e{2'000'000'000, 4'000'000'000, 8'000'000'000};
  const std::string line = engine::kernel_line("CPU", 7, "r_8_12_20", 3, e, 0.5);
  INFO(line);
  CHECK(line.rfind("*** CPU        7 r_8_12_20", 0) == 0);
  CHECK(line.find(" arg  3 mem ") != std::string::npos);
  CHECK(line.find("tm 500000.00us/") != std::string::npos);
  CHECK(line.find("(     4.00 GFLOPS    8.0|16.0    GB/s)") != std::string::npos);
}
