// The ONNX conformance suite's node cases (written by tools/onnx_node_tests.py into the build
// folder) run through onnx::Model on the CPU, each output compared with the case's own
// tolerance. Every case that does not pass is in tests/onnx/node_excluded.txt with the reason it
// does not ("<case>\t<reason>", grouped by reason); the run fails when a case's outcome differs
// from the file: a listed case that passes now, a reason that changed, an unlisted case that
// fails. `--write` rewrites the file from this run (after implementing an op: review the diff).
//   tinyt_onnx_node_tests CASES_DIR EXCLUDED_FILE [--write]
#include <tinyt/onnx.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

namespace fs = std::filesystem;
using namespace tinyt;

namespace {
// "pass", or why a case does not
std::string outcome(const fs::path& dir) {
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
      if (const fs::path p = data / ("input_" + std::to_string(k) + ".pb"); fs::exists(p)) in.emplace(graph_inputs[k].name, onnx::load_tensor(p.string()));
    const std::map<std::string, Tensor> out = m.run(in);
    for (size_t k = 0; k < graph_outputs.size(); ++k) {
      const Tensor want = onnx::load_tensor((data / ("output_" + std::to_string(k) + ".pb")).string());
      const Tensor& got = out.at(graph_outputs[k].name);
      if (got.dtype() != want.dtype()) return "wrong dtype";
      if (got.shape().to_vector() != want.shape().to_vector()) return "wrong shape";
      const std::vector<double> g = got.cast(dtypes::float64).to_vector<double>(), w = want.cast(dtypes::float64).to_vector<double>();
      for (size_t i = 0; i < g.size(); ++i)
        if (!(std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i])) && !(std::isnan(g[i]) && std::isnan(w[i])) && g[i] != w[i]) return "values differ";
    }
  }
  return "pass";
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: tinyt_onnx_node_tests CASES_DIR EXCLUDED_FILE [--write]\n";
    return 2;
  }
  const fs::path cases = argv[1], excluded_file = argv[2];
  const bool write = argc > 3 && std::string(argv[3]) == "--write";
  std::map<std::string, std::string> got;  // case -> outcome
  for (const auto& entry : fs::directory_iterator(cases)) {
    if (!entry.is_directory()) continue;
    const std::string name = entry.path().filename().string();
    try {
      got[name] = outcome(entry.path());
    } catch (const std::exception& e) {
      const std::string what = e.what();
      got[name] = what.rfind("unsupported: ", 0) == 0 ? what : "error: " + what.substr(0, what.find('\n')).substr(0, 160);
    }
  }
  {  // the cases the generator could not write (sequences, optionals), with its reason
    std::ifstream in(cases / "not_written.txt");
    for (std::string line; std::getline(in, line);)
      if (const size_t colon = line.find(": "); colon != std::string::npos) got[line.substr(0, colon)] = "not written: " + line.substr(colon + 2);
  }
  size_t passed = 0;
  for (const auto& [name, result] : got) passed += result == "pass";
  std::cout << "onnx node cases: " << passed << " of " << got.size() << " pass\n";
  if (write) {
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
  std::map<std::string, std::string> listed;
  std::ifstream in(excluded_file);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#')
      if (const size_t tab = line.find('\t'); tab != std::string::npos) listed[line.substr(0, tab)] = line.substr(tab + 1);
  int wrong = 0;
  for (const auto& [name, result] : got) {
    const auto it = listed.find(name);
    const std::string expected = it == listed.end() ? "pass" : it->second;
    if (result != expected) {
      std::cout << name << ": " << result << " (the exclusion file says " << expected << ")\n";
      ++wrong;
    }
  }
  for (const auto& [name, reason] : listed)
    if (!got.count(name)) std::cout << name << ": listed but not among the cases\n", ++wrong;
  std::cout << wrong << " cases differ from " << excluded_file.string() << "\n";
  return wrong == 0 ? 0 : 1;
}
