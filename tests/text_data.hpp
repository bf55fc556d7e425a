// Reads the arrays that tests/data/*.py write: one per line, "name count v1 ... vn"; lines
// starting with '#' are comments. No dependency, so any test can compare against PyTorch.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace test_data {

/// The arrays of tests/data/<file>, by name.
inline std::map<std::string, std::vector<double>> read(const std::string& file) {
  const std::filesystem::path path = std::filesystem::path(__FILE__).parent_path() / "data" / file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("test_data: cannot open " + path.string());
  std::map<std::string, std::vector<double>> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name;
    size_t count = 0;
    fields >> name >> count;
    std::vector<double>& values = out[name];
    values.resize(count);
    for (double& v : values) fields >> v;
    if (!fields)
      throw std::runtime_error("test_data: malformed line for " + name + " in " + path.string());
  }
  return out;
}

/// The named array as float32 values.
inline std::vector<float> floats(const std::map<std::string, std::vector<double>>& data,
                                 const std::string& name) {
  auto it = data.find(name);
  if (it == data.end()) throw std::runtime_error("test_data: no array named " + name);
  return std::vector<float>(it->second.begin(), it->second.end());
}

}  // namespace test_data
