// A tour of the pipeline: lazy tensors become a graph, the scheduler fuses it into kernels,
// movement ops turn into index math, and each kernel is compiled and run on the CPU (by LLVM's
// ORC JIT, or by the system C compiler with CPU_LLVM=0).
// Run with DEBUG=2 to see each kernel, DEBUG=4 to see its generated source (LLVM IR or C).
#include <iomanip>
#include <iostream>

#include <tinyt.hpp>

using namespace tinyt;

int main() {
  // pi as the integral of 4 / (1 + x^2) over [0, 1], by the midpoint rule on 10^6 points in
  // float64: the points (an arange), the function and the sum are one kernel
  const int64_t n = 1'000'000;
  GlobalCounters::reset();
  Tensor x = (Tensor::arange(n).cast(dtypes::float64) + 0.5) / static_cast<double>(n);
  Tensor pi = (4.0 / (x * x + 1)).sum() / static_cast<double>(n);
  const double value = pi.item<double>();
  std::cout << "pi ~ " << std::setprecision(12) << value << std::setprecision(6) << "  ("
            << GlobalCounters::kernel_count << " kernel)\n";

  // heat spreading on a 12x24 plate: each step averages every cell with its four neighbours,
  // read through padded views of the previous step (no copies), fused into one kernel per step
  Tensor plate = Tensor::zeros({12, 24});
  plate = plate + (Tensor::arange(12 * 24).reshape({12, 24}) == 6 * 24 + 12).float_() * 100.0;
  GlobalCounters::reset();
  for (int step = 0; step < 20; ++step) {
    Tensor p = plate.pad({{1, 1}, {1, 1}});
    Tensor up = p.shrink({{0, 12}, {1, 25}}), down = p.shrink({{2, 14}, {1, 25}});
    Tensor left = p.shrink({{1, 13}, {0, 24}}), right = p.shrink({{1, 13}, {2, 26}});
    plate = ((plate + up + down + left + right) / 5.0).realize();
  }
  std::cout << "heat after 20 steps (" << GlobalCounters::kernel_count << " kernels, total "
            << plate.sum().item<float>() << "):\n";
  const char* shades = " .:-=+*#%@";
  const auto cells = plate.to_vector<float>();
  for (int r = 0; r < 12; ++r) {
    std::cout << "  ";
    for (int c = 0; c < 24; ++c) {
      const double v = std::min(1.0, static_cast<double>(cells[static_cast<size_t>(r * 24 + c)]) / 2.0);
      std::cout << shades[static_cast<int>(v * 9.0)];
    }
    std::cout << "\n";
  }

  // a softmax-like normalization of each row: exp, a row sum broadcast back, a divide
  Tensor scores = Tensor::arange(6).reshape({2, 3}).float_();
  Tensor e = (scores - scores.max(1, true)).exp();
  std::cout << "row-normalized exp:\n" << e / e.sum(1, true) << "\n";
  return 0;
}
