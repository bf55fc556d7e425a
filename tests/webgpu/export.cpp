// A step captured on WEBGPU exported for a web page (engine/export_webgpu.hpp), checked without a
// browser: the folder's files are there, its weights parse and hold the step's weights, its .wgsl
// files are the kernels the step launches, and model.js's tables (buffers, weights, launches),
// replayed here by hand through the WebGPU runtime, compute what the CPU computes. A browser runs
// the same tables: `make test-web` (tools/web/check_page.py).
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <tinyt.hpp>

#include "../helpers.hpp"

using namespace tinyt;

namespace {
std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<int64_t> numbers(const std::string& text) {
  std::vector<int64_t> out;
  const std::regex number("-?[0-9]+");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it)
    out.push_back(std::stoll(it->str()));
  return out;
}

// The text between `start` and the next `end` after it in model.js.
std::string table(const std::string& js, const std::string& start, const std::string& end = "];") {
  const size_t at = js.find(start);
  REQUIRE_MESSAGE(at != std::string::npos, "model.js has no '", start, "'");
  const size_t from = at + start.size();
  return js.substr(from, js.find(end, from) - from);
}

// The launches of model.js.
struct Launch {
  int64_t kernel = -1;  // -1: a copy
  std::vector<int64_t> bind, groups, copy;
};
std::vector<Launch> launches(const std::string& js) {
  std::vector<Launch> out;
  std::istringstream lines(table(js, "const steps = ["));
  for (std::string line; std::getline(lines, line);) {
    if (line.find('{') == std::string::npos) continue;
    Launch l;
    std::smatch m;
    if (std::regex_search(line, m, std::regex(R"re(copy: \[([^\]]*)\])re"))) {
      l.copy = numbers(m[1]);
    } else {
      REQUIRE(std::regex_search(line, m, std::regex(R"re(kernel: ([0-9]+), bind: \[([^\]]*)\], groups: \[([^\]]*)\])re")));
      l.kernel = std::stoll(m[1]), l.bind = numbers(m[2]), l.groups = numbers(m[3]);
    }
    out.push_back(l);
  }
  return out;
}

struct KernelFile {
  std::string file, entry;
};
std::vector<KernelFile> kernel_files(const std::string& js) {
  std::vector<KernelFile> out;
  const std::string text = table(js, "const kernels = [");
  const std::regex entry(R"re(file: "([^"]+)", entry: "([^"]+)")re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), entry); it != std::sregex_iterator(); ++it)
    out.push_back({(*it)[1], (*it)[2]});
  return out;
}

// What the folder's model.js computes on `inputs` (their bytes, in order): its buffers, weights
// and launches replayed here by hand through the WebGPU runtime, from the folder alone; the bytes
// of each output.
std::vector<std::vector<uint8_t>> replay_folder(const std::filesystem::path& dir, const std::vector<std::vector<uint8_t>>& inputs) {
  const std::string js = read(dir / "model.js");
  const std::vector<int64_t> sizes = numbers(table(js, "const sizes = ["));
  backend::Device& gpu = backend::device("WEBGPU");
  backend::Allocator& memory = gpu.allocator();
  auto words = [](int64_t n) { return static_cast<size_t>((std::max<int64_t>(n, 1) + 3) / 4 * 4); };
  std::vector<void*> handles;
  for (int64_t n : sizes) handles.push_back(memory.alloc(words(n)));
  const std::map<std::string, Tensor> file = nn::state::safe_load((dir / "weights.safetensors").string());
  const std::string weight_table = table(js, "const weights = {", "};");
  const std::regex weight(R"re(([0-9]+): "([^"]+)")re");
  for (auto it = std::sregex_iterator(weight_table.begin(), weight_table.end(), weight); it != std::sregex_iterator(); ++it) {
    const std::vector<uint8_t> bytes = file.at((*it)[2]).to_vector<uint8_t>();
    memory.copyin(handles.at(static_cast<size_t>(std::stoll((*it)[1]))), bytes.data(), bytes.size());
  }
  for (size_t k = 0; k < inputs.size(); ++k) memory.copyin(handles.at(k), inputs[k].data(), inputs[k].size());
  std::vector<std::unique_ptr<backend::Program>> programs;
  std::vector<std::array<int64_t, 3>> group_sizes;
  for (const KernelFile& k : kernel_files(js)) {
    const std::string source = read(dir / k.file);
    programs.push_back(gpu.load(gpu.compiler().compile(source, k.entry), k.entry));
    std::smatch m;
    REQUIRE(std::regex_search(source, m, std::regex(R"re(@workgroup_size\(([0-9]+), ([0-9]+), ([0-9]+)\))re")));
    group_sizes.push_back({std::stoll(m[1]), std::stoll(m[2]), std::stoll(m[3])});
  }
  for (const Launch& l : launches(js)) {
    if (l.kernel < 0) {
      memory.copy(handles.at(static_cast<size_t>(l.copy.at(0))), handles.at(static_cast<size_t>(l.copy.at(1))), static_cast<size_t>(l.copy.at(2)));
      continue;
    }
    std::vector<void*> bound;
    for (int64_t b : l.bind) bound.push_back(handles.at(static_cast<size_t>(b)));
    backend::LaunchDims dims;
    for (size_t d = 0; d < 3; ++d) {
      dims.local[d] = group_sizes.at(static_cast<size_t>(l.kernel))[d];
      dims.global[d] = l.groups.at(d) * dims.local[d];
    }
    programs.at(static_cast<size_t>(l.kernel))->launch(bound, {}, dims, false);
  }
  std::vector<std::vector<uint8_t>> out;
  const std::string outputs = table(js, "export const outputs = [");
  const std::regex output(R"re(bytes: ([0-9]+), buffer: ([0-9]+))re");
  for (auto it = std::sregex_iterator(outputs.begin(), outputs.end(), output); it != std::sregex_iterator(); ++it) {
    out.emplace_back(static_cast<size_t>(std::stoll((*it)[1])));
    memory.copyout(out.back().data(), handles.at(static_cast<size_t>(std::stoll((*it)[2]))), out.back().size());
  }
  for (size_t i = 0; i < handles.size(); ++i) memory.free(handles[i], words(sizes[i]));
  return out;
}

template <class T> std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}
template <class T> std::vector<T> values_of(const std::vector<uint8_t>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

// The WGSL sources of the kernels that running `f` launches.
std::set<std::string> sources_launched(const std::function<void()>& f) {
  std::vector<engine::CapturedItem> recorded;
  engine::capture_sink() = &recorded;
  try {
    f();
  } catch (...) {
    engine::capture_sink() = nullptr;
    throw;
  }
  engine::capture_sink() = nullptr;
  std::set<std::string> out;
  for (const engine::CapturedItem& c : recorded)
    if (const auto* k = dynamic_cast<const engine::CompiledRunner*>(c.item.runner.get())) out.insert(k->kernel().source);
  return out;
}
}  // namespace

TEST_CASE("export_webgpu: the folder's files, weights and kernels, and its launches replayed by hand give the CPU's outputs") {
  const std::vector<float> wv = tinyt_test::values(3 * 4, 1), bv = tinyt_test::values(4, 2);
  auto step_on = [&](const std::string& device) {
    Tensor w = Tensor::from_vector(wv, {3, 4}, device).realize(), b = Tensor::from_vector(bv, {4}, device).realize();
    return [w, b](const Tensor& x) {
      const Tensor h = (x.matmul(w) + b).relu();
      return std::make_pair(h.softmax(), (x * 2).sum(1));  // two outputs, a reduction, max and exp
    };
  };
  auto model = step_on("WEBGPU");
  TinyJit step(model);
  auto input = [](int seed, const std::string& device) { return Tensor::from_vector(tinyt_test::values(2 * 3, seed), {2, 3}, device).realize(); };
  for (int seed = 0; seed < 3; ++seed) (void)step(input(seed, "WEBGPU"));
  REQUIRE(step.captured_count() > 0);

  tinyt_test::TempDir dir;
  step.export_webgpu(dir.path.string());
  for (const char* file : {"model.js", "index.html", "page.js", "weights.safetensors"})
    CHECK_MESSAGE(std::filesystem::exists(dir.path / file), file, " is missing");
  const std::string js = read(dir.path / "model.js");
  CHECK(js.find("export async function load(device)") != std::string::npos);
  CHECK(js.find("export async function run(values)") != std::string::npos);
  CHECK(read(dir.path / "index.html").find("<script type=\"module\" src=\"page.js\">") != std::string::npos);
  CHECK(js.find("{ dtype: \"float32\", shape: [2, 3], bytes: 24 }") != std::string::npos);  // the input
  // each output with its shape and buffer
  const std::vector<int64_t> output_buffers = [&] {
    const std::string text = table(js, "export const outputs = [");
    CHECK(text.find("{ dtype: \"float32\", shape: [2, 4], bytes: 32, buffer: ") != std::string::npos);
    CHECK(text.find("{ dtype: \"float32\", shape: [2], bytes: 8, buffer: ") != std::string::npos);
    std::vector<int64_t> out;
    const std::regex buffer(R"re(buffer: ([0-9]+))re");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), buffer); it != std::sregex_iterator(); ++it) out.push_back(std::stoll((*it)[1]));
    return out;
  }();
  REQUIRE(output_buffers.size() == 2);

  // the weights: every buffer the tables name, of its size; w and b among them, byte for byte
  const std::vector<int64_t> sizes = numbers(table(js, "const sizes = ["));
  REQUIRE(sizes.at(0) == 24);  // the input first
  const std::map<std::string, Tensor> file = nn::state::safe_load((dir.path / "weights.safetensors").string());
  std::map<int64_t, std::vector<uint8_t>> weights;
  const std::string weight_table = table(js, "const weights = {", "};");
  const std::regex weight(R"re(([0-9]+): "([^"]+)")re");
  for (auto it = std::sregex_iterator(weight_table.begin(), weight_table.end(), weight); it != std::sregex_iterator(); ++it) {
    const int64_t b = std::stoll((*it)[1]);
    REQUIRE_MESSAGE(file.count((*it)[2]), "weights.safetensors has no ", (*it)[2]);
    const Tensor& t = file.at((*it)[2]);
    CHECK(t.dtype() == dtypes::uint8);
    weights[b] = t.to_vector<uint8_t>();
    CHECK(static_cast<int64_t>(weights[b].size()) == sizes.at(static_cast<size_t>(b)));
  }
  CHECK(weights.size() == file.size());
  for (const std::vector<float>& v : {wv, bv}) {
    std::vector<uint8_t> bytes(v.size() * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    CHECK(std::any_of(weights.begin(), weights.end(), [&](const auto& kv) { return kv.second == bytes; }));
  }

  // the .wgsl files: the kernels the step launches, each once, each with its entry point
  const std::vector<KernelFile> kernels = kernel_files(js);
  REQUIRE(!kernels.empty());
  std::set<std::string> files;
  for (const KernelFile& k : kernels) {
    const std::string source = read(dir.path / k.file);
    CHECK(source.find("fn " + k.entry + "(") != std::string::npos);
    files.insert(source);
  }
  CHECK(files.size() == kernels.size());
  const Tensor x5 = input(5, "WEBGPU");
  CHECK(files == sources_launched([&] {
          const auto [probs, sums] = model(x5);
          realize_tensors({probs, sums});
        }));

  // model.js's launches, replayed here through the WebGPU runtime from the folder alone
  CHECK(launches(js).size() == step.captured_count());
  const std::vector<float> x = tinyt_test::values(2 * 3, 9);
  const std::vector<std::vector<uint8_t>> out = replay_folder(dir.path, {bytes_of(x)});
  REQUIRE(out.size() == 2);
  const std::vector<float> probs = values_of<float>(out[0]), sums = values_of<float>(out[1]);

  // the same kernels as the JIT's replay (the same bits), and the CPU's values
  const auto [jit_probs, jit_sums] = step(input(9, "WEBGPU"));
  CHECK(probs == jit_probs.to_vector<float>());
  CHECK(sums == jit_sums.to_vector<float>());
  const auto [cpu_probs, cpu_sums] = step_on("CPU")(input(9, "CPU"));
  const std::vector<float> want_probs = cpu_probs.to_vector<float>(), want_sums = cpu_sums.to_vector<float>();
  // (WGSL's exp against the CPU's: a few roundings apart)
  tinyt_test::check_close(probs, std::vector<double>(want_probs.begin(), want_probs.end()), tinyt_test::Tol{1e-7, 1e-5});
  tinyt_test::check_close(sums, std::vector<double>(want_sums.begin(), want_sums.end()), tinyt_test::Tol::f32(4));
}

TEST_CASE("export_webgpu: memory the step updates in part keeps the rest of its value on the page") {
  // the step writes the first two elements of `state` (an assign) and returns all four: the last
  // two are the value from before the step, which the page must start with
  Tensor state = Tensor::from_vector(std::vector<float>{10, 20, 30, 40}, {4}, "WEBGPU").realize();
  TinyJit step([&](const Tensor& x) {
    state[{Slice(0, 2)}] = x;
    return (state * 2).contiguous();
  });
  for (float v : {1.f, 2.f, 3.f}) (void)step(Tensor::from_vector(std::vector<float>{v, -v}, {2}, "WEBGPU").realize()).realize();
  tinyt_test::TempDir dir;
  step.export_webgpu(dir.path.string());
  const std::vector<std::vector<uint8_t>> out = replay_folder(dir.path, {bytes_of(std::vector<float>{5, 6})});
  REQUIRE(out.size() == 1);
  CHECK(values_of<float>(out[0]) == std::vector<float>{10, 12, 60, 80});
  CHECK(step(Tensor::from_vector(std::vector<float>{5, 6}, {2}, "WEBGPU").realize()).to_vector<float>() == std::vector<float>{10, 12, 60, 80});
}

TEST_CASE("export_webgpu: a page script given is page.js; without one, page.js runs the model on zeros") {
  Tensor w = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}, "WEBGPU").realize();
  TinyJit step([&](const Tensor& x) { return x * w; });
  for (int i = 0; i < 3; ++i) (void)step(Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}, "WEBGPU").realize()).realize();
  tinyt_test::TempDir dir;
  step.export_webgpu((dir.path / "plain").string());
  CHECK(read(dir.path / "plain" / "page.js").find("inputs of zeros") != std::string::npos);
  step.export_webgpu((dir.path / "mine").string(), "document.body.append('hello');\n");  // a folder made on the way
  CHECK(read(dir.path / "mine" / "page.js") == "document.body.append('hello');\n");
}

TEST_CASE("export_webgpu: a step not captured yet, captured on the CPU, or with symbolic shapes is a clear error") {
  tinyt_test::TempDir dir;
  TinyJit f([](const Tensor& x) { return x + 1; });
  CHECK(tinyt_test::message_of<Error>([&] { f.export_webgpu(dir.path.string()); }).find("export_webgpu: the step is not captured") !=
        std::string::npos);

  TinyJit on_cpu([](const Tensor& x) { return x * 2 + 1; });
  for (int i = 0; i < 3; ++i) (void)on_cpu(Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}, "CPU")).realize();
  REQUIRE(on_cpu.captured_count() > 0);
  const std::string message = tinyt_test::message_of<DeviceError>([&] { on_cpu.export_webgpu(dir.path.string()); });
  CHECK(message.find("export_webgpu") != std::string::npos);
  CHECK(message.find("CPU") != std::string::npos);
  CHECK(message.find("WEBGPU") != std::string::npos);

  // a bound variable: the kernels take its value in a uniform buffer, which the page lacks so far
  const Tensor a = Tensor::from_vector(tinyt_test::values(8, 3), {8}, "WEBGPU").realize();
  TinyJit part([&](const Tensor& x, const UOp& n) { return (x[{Slice(0, n)}] * 2).contiguous(); });
  for (int64_t n : {3, 4, 5}) (void)part(a, Variable("n", 1, 8).bind(n)).realize();
  REQUIRE(part.captured_count() > 0);
  const std::string symbolic = tinyt_test::message_of<Error>([&] { part.export_webgpu(dir.path.string()); });
  CHECK(symbolic.find("export_webgpu") != std::string::npos);
  CHECK(symbolic.find("symbolic") != std::string::npos);
}
