// Real ONNX models no one here wrote, run by tinyt as benchmarks/vs_onnxruntime runs them in
// onnxruntime: PaddleOCR's models (rapidocr-onnxruntime) on an image batch, silero-vad streaming
// an audio clip window by window with its state carried. The inputs are formulas both sides
// compute, so the outputs can be compared: each run prints `SUM <sum of the outputs>`.
//
//   bench_onnx_models image MODEL.onnx N C H W   one run on an NxCxHxW image batch (ms)
//   bench_onnx_models vad MODEL.onnx SECONDS     SECONDS of 16 kHz audio in 512-sample windows (ms)
//   bench_onnx_models --quick                    both, tiny, on the models the tests installed
//
// Each model runs under TinyJit, as a program that runs one model again and again would: the
// first calls build, schedule and compile it, later calls replay its kernels. The figure without
// TinyJit (the graph built and scheduled each call, its kernels cached) is printed too.
#include <tinyt/onnx.hpp>

#include <cmath>
#include <fstream>

#include "bench.hpp"

using namespace tinyt;

namespace {

// The image both sides feed: 0.9 sin(0.37 i) at flat index i.
Tensor image(int64_t n, int64_t c, int64_t h, int64_t w) {
  std::vector<float> v(static_cast<size_t>(n * c * h * w));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(0.9 * std::sin(0.37 * static_cast<double>(i)));
  return Tensor::from_vector(v, {n, c, h, w});
}

// The audio both sides feed: a 220 Hz tone whose loudness swings three times a second.
std::vector<float> audio(double seconds) {
  std::vector<float> v(static_cast<size_t>(seconds * 16000));
  for (size_t i = 0; i < v.size(); ++i) {
    const double t = static_cast<double>(i) / 16000;
    v[i] = static_cast<float>(0.4 * std::sin(2 * M_PI * 220 * t) * (0.5 + 0.5 * std::sin(2 * M_PI * 3 * t)));
  }
  return v;
}

// a model's file name, for the figures' lines
std::string file_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

double sum_of(const Tensor& t) { return t.cast(dtypes::float64).sum().item<double>(); }

void bench_image(const bench::Options& opt, const std::string& path, int64_t n, int64_t c, int64_t h, int64_t w) {
  const onnx::Model model = onnx::load(path);
  const std::string input = model.inputs().at(0).name, output = model.outputs().at(0).name;
  const Tensor x = image(n, c, h, w).realize();
  TinyJit run([&](Tensor batch) { return model.run({{input, batch}}).at(output); });
  double sum = 0;
  const bench::Timing jit = bench::measure(opt, [&] { run(x); });
  sum = sum_of(run(x));
  const bench::Timing plain = bench::measure(opt, [&] { model.run({{input, x}}).at(output).realize(); });
  const std::string shape = std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
  std::printf("%s on %s: %.3f ms without TinyJit\n", file_name(path).c_str(), shape.c_str(), plain.best_s * 1e3);
  std::printf("SUM %.9g\n", sum);
  bench::report("onnx_image", file_name(path) + " " + shape + ", TinyJit", jit.best_s * 1e3, "ms", jit);
}

// silero-vad over `seconds` of audio: 512 new samples a call after the 64 before them, the state
// carried (as examples/vad.cpp and silero's own wrapper feed it); the sum of the probabilities.
void bench_vad(const bench::Options& opt, const std::string& path, double seconds) {
  constexpr int64_t window = 512, context = 64;
  const onnx::Model model = onnx::load(path);
  const std::vector<float> samples = audio(seconds);
  const Tensor sr = Tensor::full(Shape{}, 16000, dtypes::int64);
  TinyJit step([&](Tensor chunk, Tensor state) {
    std::map<std::string, Tensor> out = model.run({{"input", chunk}, {"state", state}, {"sr", sr}});
    return std::make_pair(out.at("output"), out.at("stateN"));
  });
  // the windows' inputs, made before the clock starts
  std::vector<Tensor> chunks;
  std::vector<float> chunk(static_cast<size_t>(context + window), 0.0f);
  for (size_t at = 0; at < samples.size(); at += window) {
    std::copy(chunk.end() - context, chunk.end(), chunk.begin());
    for (size_t i = 0; i < window; ++i) chunk[context + i] = at + i < samples.size() ? samples[at + i] : 0.0f;
    chunks.push_back(Tensor::from_vector(chunk, {1, context + window}).realize());
  }
  double sum = 0;
  const auto stream = [&] {
    Tensor state = Tensor::zeros({2, 1, 128}).realize();
    sum = 0;
    for (const Tensor& c : chunks) {
      auto [probability, next] = step(c, state);
      sum += probability.item<float>();
      state = next.contiguous().realize();  // a replay's outputs are the JIT's memory: keep a copy
    }
  };
  const bench::Timing t = bench::measure(opt, stream);
  std::printf("SUM %.9g\n", sum);
  bench::report("onnx_vad", file_name(path) + ", " + std::to_string(chunks.size()) + " windows (" + std::to_string(seconds) + " s), TinyJit",
                t.best_s * 1e3, "ms", t);
}

// The path in a real-model case's model.txt (the tests' fixture writes them).
std::string installed_model(const std::string& name) {
  std::ifstream f(std::string(TINYT_ONNX_MODELS_DIR) + "/" + name + "/model.txt");
  std::string path;
  bench::check(static_cast<bool>(std::getline(f, path)), std::string("the tests installed ") + name + " (ctest -R onnx_real_models_written)");
  return path;
}

}  // namespace

int main(int argc, char** argv) try {
  bench::Options opt(argc, argv, 2);
  const std::vector<std::string>& a = opt.args;
  if (opt.quick && a.empty()) {
    bench_image(opt, installed_model("ppocr_cls"), 1, 3, 48, 192);
    bench_vad(opt, installed_model("silero_vad"), 0.5);
  } else if (a.size() == 6 && a[0] == "image") {
    bench_image(opt, a[1], std::stoll(a[2]), std::stoll(a[3]), std::stoll(a[4]), std::stoll(a[5]));
  } else if (a.size() == 3 && a[0] == "vad") {
    bench_vad(opt, a[1], std::stod(a[2]));
  } else {
    std::fprintf(stderr, "usage: bench_onnx_models image MODEL.onnx N C H W | vad MODEL.onnx SECONDS | --quick\n");
    return 2;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
