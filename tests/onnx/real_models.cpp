// Real models no one here wrote, run by tinyt and compared with onnxruntime: PaddleOCR's detector,
// recognizer and direction classifier (rapidocr-onnxruntime) and silero-vad's voice detectors
// (nested If, LSTM), on the inputs and onnxruntime outputs that tools/onnx_model_references.py
// wrote into the build folder (the ctest fixture onnx_real_models_written), on each device named.
//   tinyt_onnx_real_models CASES_DIR DEVICE...
#include <tinyt/onnx.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace fs = std::filesystem;
using namespace tinyt;

namespace {
// the case's worst error relative to its tolerance (<= 1 passes), printed with the run's time
double check(const fs::path& dir, const std::string& device) {
  std::string model_path;
  std::getline(std::ifstream(dir / "model.txt"), model_path);
  double rtol = 0, atol = 0;
  std::ifstream(dir / "tolerance.txt") >> rtol >> atol;
  const onnx::Model m = onnx::load(model_path);
  std::map<std::string, Tensor> inputs;
  const std::vector<onnx::ValueInfo> wanted = m.inputs();
  for (size_t k = 0; k < wanted.size(); ++k) inputs.emplace(wanted[k].name, onnx::load_tensor((dir / ("input_" + std::to_string(k) + ".pb")).string()).to(device));
  const auto start = std::chrono::steady_clock::now();
  const std::map<std::string, Tensor> out = m.run(inputs);
  double worst = 0;
  for (size_t k = 0; k < m.outputs().size(); ++k) {
    const Tensor want = onnx::load_tensor((dir / ("output_" + std::to_string(k) + ".pb")).string());
    const Tensor& got = out.at(m.outputs()[k].name);
    if (got.shape().to_vector() != want.shape().to_vector() || got.dtype() != want.dtype()) {
      std::cout << dir.filename().string() << " on " << device << ": output " << k << " is " << got.dtype().name() << " " << got.shape() << ", onnxruntime's "
                << want.dtype().name() << " " << want.shape() << "\n";
      return INFINITY;
    }
    const std::vector<double> g = got.to("CPU").cast(dtypes::float64).reshape({-1}).to_vector<double>();
    const std::vector<double> w = want.cast(dtypes::float64).reshape({-1}).to_vector<double>();
    for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(g[i] - w[i]) / (atol + rtol * std::abs(w[i])));
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << dir.filename().string() << " on " << device << ": worst error " << worst << " of the tolerance (" << rtol << " relative, " << atol << " absolute), "
            << ms << " ms with compiling\n";
  return worst;
}
}  // namespace

int main(int argc, char** argv) try {
  if (argc < 3) {
    std::cerr << "usage: tinyt_onnx_real_models CASES_DIR DEVICE...\n";
    return 2;
  }
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(argv[1]))
    if (e.is_directory()) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  if (cases.empty()) throw Error(std::string("no cases in ") + argv[1]);
  bool ok = true;
  for (int d = 2; d < argc; ++d)
    for (const fs::path& c : cases) ok = check(c, argv[d]) <= 1 && ok;
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << e.what() << "\n";
  return 1;
}
