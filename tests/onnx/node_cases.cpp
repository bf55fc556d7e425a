// The ONNX conformance suite's node cases (written by tools/onnx_node_tests.py into the build
// folder) run through onnx::Model, each output compared with the case's own tolerance.
//
// On the CPU, every case: every case that does not pass is in tests/onnx/node_excluded.txt with
// the reason it does not ("<case>\t<reason>", grouped by reason); the run fails when a case's
// outcome differs from the file: a listed case that passes now, a reason that changed, an
// unlisted case that fails. `--write` rewrites the file from this run (after implementing an op:
// review the diff).
//
// On another device (`--device CL`, with DEV naming it so that the model's weights live there
// too), the float cases: those the file does not list whose inputs and outputs are all float32.
// Each must pass there too; with `--per-op N` only the first N of each op, by name (every op, not
// every variant: each case is a program PoCL compiles cold, ~0.5-1 s).
//   tinyt_onnx_node_tests CASES_DIR EXCLUDED_FILE [--device DEVICE] [--per-op N] [--write]
#include <tinyt/onnx.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>

namespace fs = std::filesystem;
using namespace tinyt;

namespace {
// "pass", or why a case does not
std::string outcome(const fs::path& dir, const std::string& device) {
  onnx::Model m = [&] {
    try {
      return onnx::load((dir / "model.onnx").string());
    } catch (const onnx::UnsupportedError& e) {
      // the op (and its domain, where not the default one), or the element type: not the node or opset
      std::string why = e.what();
      // a form of a known op: "op <name>: <what is not supported>"
      const std::string form = " is not supported";
      if (const size_t node = why.find("), node '"); node != std::string::npos && why.size() > form.size() &&
                                                         why.compare(why.size() - form.size(), form.size(), form) == 0) {
        const size_t detail = why.find("': ", node);
        const std::string op = why.substr(0, why.find(" of domain "));
        why = op + ": " + why.substr(detail + 3, why.size() - form.size() - detail - 3);
      }
      if (const size_t at = why.find("element type "); at != std::string::npos) why = why.substr(at);
      if (const size_t domain = why.find(" of domain ''"); domain != std::string::npos) why = why.substr(0, domain);
      if (const size_t opset = why.find(" (opset "); opset != std::string::npos) why = why.substr(0, opset);
      if (why.rfind("onnx: ", 0) == 0) why = why.substr(6);
      throw std::runtime_error("unsupported: " + why);
    }
  }();
  double rtol = 1e-3, atol = 1e-7;
  std::ifstream(dir / "tolerance.txt") >> rtol >> atol;
  const auto& graph_inputs = m.data().graph.inputs;
  const auto& graph_outputs = m.data().graph.outputs;
  for (int n = 0; fs::exists(dir / ("test_data_set_" + std::to_string(n))); ++n) {
    const fs::path data = dir / ("test_data_set_" + std::to_string(n));
    std::map<std::string, Tensor> in;
    for (size_t k = 0; k < graph_inputs.size(); ++k)
      if (const fs::path p = data / ("input_" + std::to_string(k) + ".pb"); fs::exists(p)) in.emplace(graph_inputs[k].name, onnx::load_tensor(p.string()).to(device));
    const std::map<std::string, Tensor> out = m.run(in);
    for (size_t k = 0; k < graph_outputs.size(); ++k) {
      const Tensor want = onnx::load_tensor((data / ("output_" + std::to_string(k) + ".pb")).string());
      const Tensor got = out.at(graph_outputs[k].name).to("CPU");
      if (got.dtype() != want.dtype()) return "wrong dtype";
      if (got.shape().to_vector() != want.shape().to_vector()) return "wrong shape";
      const std::vector<double> g = got.cast(dtypes::float64).to_vector<double>(), w = want.cast(dtypes::float64).to_vector<double>();
      for (size_t i = 0; i < g.size(); ++i)
        if (!(std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i])) && !(std::isnan(g[i]) && std::isnan(w[i])) && g[i] != w[i]) return "values differ";
    }
  }
  return "pass";
}

// The exclusion file's cases and reasons.
std::map<std::string, std::string> read_excluded(const fs::path& file) {
  std::map<std::string, std::string> listed;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#')
      if (const size_t tab = line.find('\t'); tab != std::string::npos) listed[line.substr(0, tab)] = line.substr(tab + 1);
  return listed;
}

// The op of the case's graph when every input and output of it is float32, else nullopt.
std::optional<std::string> float32_op(const fs::path& dir) {
  const onnx::Model m = onnx::load((dir / "model.onnx").string());
  const auto float32 = [](const onnx::ValueInfo& v) { return v.dtype == dtypes::float32; };
  const auto& g = m.data().graph;
  if (!std::all_of(g.inputs.begin(), g.inputs.end(), float32) || !std::all_of(g.outputs.begin(), g.outputs.end(), float32)) return std::nullopt;
  return g.nodes.empty() ? std::string() : g.nodes.front().op_type;
}

// The outcome of each case on `device` (only the float32 cases the file does not list, off the
// CPU, and of those the first `per_op` of each op in name order, where given).
std::map<std::string, std::string> run_cases(const fs::path& cases, const std::string& device, const std::map<std::string, std::string>& listed,
                                             size_t per_op) {
  std::map<std::string, std::string> got;  // case -> outcome
  std::set<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(cases))
    if (entry.is_directory()) dirs.insert(entry.path());
  std::map<std::string, size_t> taken;  // op -> cases run
  for (const fs::path& dir : dirs) {
    const std::string name = dir.filename().string();
    try {
      if (device != "CPU") {
        if (listed.count(name)) continue;
        const std::optional<std::string> op = float32_op(dir);
        if (!op || (per_op > 0 && taken[*op]++ >= per_op)) continue;
      }
      got[name] = outcome(dir, device);
    } catch (const std::exception& e) {
      const std::string what = e.what();
      got[name] = what.rfind("unsupported: ", 0) == 0 ? what : "error: " + what.substr(0, what.find('\n')).substr(0, 160);
    }
  }
  if (device != "CPU") return got;
  {  // the cases the generator could not write (sequences, optionals), with its reason
    std::ifstream in(cases / "not_written.txt");
    for (std::string line; std::getline(in, line);)
      if (const size_t colon = line.find(": "); colon != std::string::npos) got[line.substr(0, colon)] = "not written: " + line.substr(colon + 2);
  }
  return got;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: tinyt_onnx_node_tests CASES_DIR EXCLUDED_FILE [--device DEVICE] [--per-op N] [--write]\n";
    return 2;
  }
  const fs::path cases = argv[1], excluded_file = argv[2];
  bool write = false;
  std::string device = "CPU";
  size_t per_op = 0;
  for (int i = 3; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--write") write = true;
    else if (arg == "--device" && i + 1 < argc) device = argv[++i];
    else if (arg == "--per-op" && i + 1 < argc) per_op = std::stoul(argv[++i]);
    else return std::cerr << "unknown argument " << arg << "\n", 2;
  }
  const std::map<std::string, std::string> listed = read_excluded(excluded_file);
  const std::map<std::string, std::string> got = run_cases(cases, device, listed, per_op);
  size_t passed = 0;
  for (const auto& [name, result] : got) passed += result == "pass";
  std::cout << "onnx node cases on " << device << ": " << passed << " of " << got.size() << (device == "CPU" ? "" : " float32 cases") << " pass\n";
  if (write && device == "CPU") {
    std::map<std::string, std::vector<std::string>> by_reason;
    for (const auto& [name, result] : got)
      if (result != "pass") by_reason[result].push_back(name);
    std::ofstream out(excluded_file);
    out << "# The ONNX node cases (onnx 1.23.2) tinyt does not pass, by reason: <case>\\t<reason>.\n"
           "# Written by tinyt_onnx_node_tests --write; the test fails when a case's outcome differs.\n";
    for (const auto& [reason, names] : by_reason)
      for (const std::string& name : names) out << name << "\t" << reason << "\n";
    std::cout << "wrote " << excluded_file << "\n";
    return 0;
  }
  int wrong = 0;
  for (const auto& [name, result] : got) {
    const auto it = listed.find(name);
    const std::string expected = it == listed.end() ? "pass" : it->second;
    if (result != expected) {
      std::cout << name << ": " << result << " (the exclusion file says " << expected << ")\n";
      ++wrong;
    }
  }
  if (device == "CPU")
    for (const auto& [name, reason] : listed)
      if (!got.count(name)) std::cout << name << ": listed but not among the cases\n", ++wrong;
  std::cout << wrong << " cases differ from " << excluded_file.string() << "\n";
  return wrong == 0 ? 0 : 1;
}
