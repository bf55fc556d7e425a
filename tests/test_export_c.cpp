// A captured step exported as one C file plus its weights (engine/export_c.hpp): the MNIST CNN of
// the examples, in inference, built here by the system C compiler with no tinyt, gives the
// logits tinyt gives for the same images.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>

#include <tinyt.hpp>

#include "../examples/fashion_mnist_model.hpp"
#include "helpers.hpp"

using namespace tinyt;

namespace {
// The program the test builds: reads `inputs` images, runs the step, writes the logits.
constexpr const char* harness = R"(#include <stdio.h>
#include <stdlib.h>
int tinyt_step_init(const char* weights_path);
void tinyt_step_run(void* const* inputs, void* const* outputs, const long long* vars);
void tinyt_step_free(void);
int main(int argc, char** argv) {
  static float image[2 * 28 * 28], logits[2 * 10];
  void* in[1] = {image};
  void* out[1] = {logits};
  FILE* f;
  if (argc != 4 || tinyt_step_init(argv[1]) != 0) return 2;
  f = fopen(argv[2], "rb");
  if (!f || fread(image, sizeof image, 1, f) != 1) return 3;
  fclose(f);
  tinyt_step_run(in, out, 0);
  f = fopen(argv[3], "wb");
  if (!f || fwrite(logits, sizeof logits, 1, f) != 1) return 4;
  fclose(f);
  tinyt_step_free();
  return 0;
}
)";

std::vector<float> images(int seed) {
  std::vector<float> v = tinyt_test::values(2 * 28 * 28, seed);
  for (float& x : v) x = (x + 2.f) / 4.f;  // pixels in [0, 1)
  return v;
}
}  // namespace

TEST_CASE("export_c: the exported MNIST inference builds with a plain C compiler and gives tinyt's logits") {
  if (Device::DEFAULT != "CPU") {  // the export is of a step captured on the CPU
    MESSAGE("skipped: the export is of a step captured on the CPU, and DEV is ", Device::DEFAULT);
    return;
  }
  Tensor::manual_seed(7);
  FashionNet net;
  for (Tensor& p : nn::state::get_parameters(net)) p.realize();  // the weights, computed once
  TinyJit infer([&](const Tensor& x) { return net(x); });
  for (int seed = 0; seed < 3; ++seed) (void)infer(Tensor::from_vector(images(seed), {2, 1, 28, 28})).realize();
  REQUIRE(infer.captured_count() > 0);

  tinyt_test::TempDir dir;
  const std::string c_file = (dir.path / "step.c").string(), weights = (dir.path / "step.safetensors").string();
  infer.export_c(c_file, weights);
  std::ofstream(dir.path / "main.c") << harness;
  const std::string program = (dir.path / "mnist").string();
  // -ffp-contract=off: as tinyt compiles its C, a multiply and an add stay apart
  const std::string build = "cc -std=c99 -O2 -ffp-contract=off -fno-math-errno -o " + program + " " +
                            (dir.path / "main.c").string() + " " + c_file + " -lm";
  REQUIRE(std::system(build.c_str()) == 0);

  const std::vector<float> x = images(11);
  std::ofstream((dir.path / "x.bin").string(), std::ios::binary).write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(x.size() * sizeof(float)));
  const std::string run = program + " " + weights + " " + (dir.path / "x.bin").string() + " " + (dir.path / "y.bin").string();
  REQUIRE(std::system(run.c_str()) == 0);
  std::vector<float> got(20);
  std::ifstream((dir.path / "y.bin").string(), std::ios::binary).read(reinterpret_cast<char*>(got.data()), 20 * sizeof(float));

  const std::vector<float> want = infer(Tensor::from_vector(x, {2, 1, 28, 28})).to_vector<float>();
  // the same kernels (fused multiply-adds written out, transcendentals as tinyt's own polynomials),
  // the same IEEE operations: the same bits
  CHECK(got == want);
  // and they are the network's logits, not anything the JIT kept from an earlier call
  const std::vector<float> fresh = net(Tensor::from_vector(x, {2, 1, 28, 28})).to_vector<float>();
  tinyt_test::check_close(got, std::vector<double>(fresh.begin(), fresh.end()), tinyt_test::Tol::exact());
}

TEST_CASE("export_c: a step not captured yet, or captured on a GPU, is a clear error") {
  TinyJit f([](const Tensor& x) { return x + 1; });
  tinyt_test::TempDir dir;
  const std::string c_file = (dir.path / "a.c").string(), weights = (dir.path / "a.st").string();
  CHECK(tinyt_test::message_of<Error>([&] { f.export_c(c_file, weights); }).find("not captured") != std::string::npos);
  // OpenCL (PoCL here) is the GPU a test can reach: a step captured there names its device
  if (!tinyt_test::device_available("CL")) {
    MESSAGE("skipped part: a step captured on a GPU (no CL device here)");
    return;
  }
  TinyJit g([](const Tensor& x) { return x * 2 + 1; });
  for (int i = 0; i < 3; ++i) (void)g(Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}, "CL")).realize();
  REQUIRE(g.captured_count() > 0);
  const std::string message = tinyt_test::message_of<DeviceError>([&] { g.export_c(c_file, weights); });
  CHECK(message.find("export_c") != std::string::npos);
  CHECK(message.find("CL") != std::string::npos);
  CHECK(message.find("capture") != std::string::npos);
}
