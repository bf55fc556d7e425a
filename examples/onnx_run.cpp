// Runs any ONNX model through tinyt: the tool to try first on a model.
//
//   onnx_run model.onnx [name=file.npy | name=2x3x224x224 ...] [--dim batch=4] [--runs 10] [--out dir]
//
// Inputs not given are random, of the model's dtype and shape (a named dim, such as "batch", is 1
// unless --dim names it); `name=AxB` makes a random input of that shape, `name=file.npy` reads
// one (little-endian .npy, C order). Prints each output's dtype, shape and a summary, and the
// time of the first run (compiling its kernels) and of the next ones; --out writes the outputs as
// dir/<name>.npy. DEBUG=2 prints the kernels.
#include <tinyt/onnx.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace tinyt;

namespace {

// A .npy file's array (format 1.0-3.0: magic, version, header dict, data)
Tensor load_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("onnx_run: cannot read " + path);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw Error("onnx_run: " + path + " is not a .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  const size_t len_size = major == 1 ? 2 : 4, start = 8 + len_size;
  size_t header_len = 0;
  for (size_t i = 0; i < len_size; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  if (bytes.size() < start + header_len) throw Error("onnx_run: " + path + ": the header runs past the file");
  const std::string header = bytes.substr(start, header_len);
  auto field = [&](const std::string& key) {
    const size_t at = header.find("'" + key + "'");
    if (at == std::string::npos) throw Error("onnx_run: " + path + ": no '" + key + "' in the header");
    return header.substr(header.find(':', at) + 1);
  };
  const std::string descr = field("descr"), order = field("fortran_order"), shape_text = field("shape");
  if (order.find("False") == std::string::npos) throw Error("onnx_run: " + path + ": Fortran order is not read");
  const std::string type = descr.substr(descr.find('\'') + 1, descr.find('\'', descr.find('\'') + 1) - descr.find('\'') - 1);
  static const std::map<std::string, DType> types{{"<f4", dtypes::float32}, {"<f8", dtypes::float64}, {"<f2", dtypes::float16},
                                                  {"<i8", dtypes::int64},   {"<i4", dtypes::int32},   {"<i2", dtypes::int16},
                                                  {"|i1", dtypes::int8},    {"|u1", dtypes::uint8},   {"|b1", dtypes::bool_},
                                                  {"<u2", dtypes::uint16},  {"<u4", dtypes::uint32},  {"<u8", dtypes::uint64}};
  const auto it = types.find(type);
  if (it == types.end()) throw Error("onnx_run: " + path + ": element type '" + type + "' is not read");
  std::vector<int64_t> dims;
  std::stringstream dims_text(shape_text.substr(shape_text.find('(') + 1, shape_text.find(')') - shape_text.find('(') - 1));
  for (std::string d; std::getline(dims_text, d, ',');)
    if (d.find_first_not_of(' ') != std::string::npos) dims.push_back(std::stoll(d));
  int64_t count = 1;
  for (const int64_t d : dims) count *= d;
  const size_t data = start + header_len, need = static_cast<size_t>(count) * it->second.itemsize();
  if (bytes.size() < data + need) throw Error("onnx_run: " + path + ": the data is shorter than its shape says");
  return Tensor::from_blob(bytes.data() + data, Shape(dims), it->second).contiguous().realize();
}

template <class U> void write_bits(std::ofstream& f, const Tensor& t) {
  const std::vector<U> v = t.to_vector<U>();
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(U)));
}

// `t` as a .npy file (C order, little-endian)
void save_npy(const Tensor& t, const std::string& path) {
  static const std::map<std::string, std::string> types{{"float32", "<f4"}, {"float64", "<f8"}, {"float16", "<f2"}, {"int64", "<i8"},
                                                        {"int32", "<i4"},   {"int16", "<i2"},   {"int8", "|i1"},    {"uint8", "|u1"},
                                                        {"bool", "|b1"},    {"uint16", "<u2"},  {"uint32", "<u4"},  {"uint64", "<u8"}};
  const auto it = types.find(t.dtype().name());
  if (it == types.end()) throw Error("onnx_run: " + path + ": no .npy type for " + t.dtype().name());
  std::string shape = "(";
  for (const int64_t d : t.shape().to_vector()) shape += std::to_string(d) + ", ";
  if (t.ndim() > 1) shape.resize(shape.size() - 2);
  shape += ")";
  std::string header = "{'descr': '" + it->second + "', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ').push_back('\n');
  std::ofstream f(path, std::ios::binary);
  const auto len = static_cast<uint16_t>(header.size());
  f << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(len & 0xff) << static_cast<char>(len >> 8) << header;
  // the elements' bits, as unsigned integers of their size (bool as bytes)
  const Tensor bits = t.dtype() == dtypes::bool_ ? t.cast(dtypes::uint8) : t;
  switch (bits.dtype().itemsize()) {
    case 1: write_bits<uint8_t>(f, bits.bitcast(dtypes::uint8)); break;
    case 2: write_bits<uint16_t>(f, bits.bitcast(dtypes::uint16)); break;
    case 4: write_bits<uint32_t>(f, bits.bitcast(dtypes::uint32)); break;
    default: write_bits<uint64_t>(f, bits.bitcast(dtypes::uint64)); break;
  }
  if (!f) throw Error("onnx_run: cannot write " + path);
}

// A random input: uniform in [0, 1) for floats, 0..9 for integers, of `shape`
Tensor random_input(DType dt, const std::vector<int64_t>& shape) {
  if (dt.is_float()) return Tensor::rand(Shape(shape)).cast(dt).realize();
  if (dt.is_bool()) return Tensor::randint(Shape(shape), 0, 2).cast(dt).realize();
  return Tensor::randint(Shape(shape), 0, 10).cast(dt).realize();
}

std::vector<int64_t> parse_dims(const std::string& text) {
  std::vector<int64_t> dims;
  std::stringstream s(text);
  for (std::string d; std::getline(s, d, 'x');) dims.push_back(std::stoll(d));
  return dims;
}

void summarize(const std::string& name, const Tensor& t) {
  std::cout << "  " << name << ": " << t.dtype().name() << " " << t.shape();
  if (t.numel() == 0) {
    std::cout << " (empty)\n";
    return;
  }
  const std::vector<double> v = t.cast(dtypes::float64).reshape({-1}).to_vector<double>();
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (const double x : v) lo = std::min(lo, x), hi = std::max(hi, x), sum += x;
  std::cout << "  mean " << sum / static_cast<double>(v.size()) << "  min " << lo << "  max " << hi << "  first";
  for (size_t i = 0; i < std::min<size_t>(4, v.size()); ++i) std::cout << " " << v[i];
  std::cout << "\n";
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::cerr << "usage: onnx_run model.onnx [name=file.npy | name=2x3x224x224 ...] [--dim name=N] [--runs N] [--out dir]\n";
    return 2;
  }
  const onnx::Model model = onnx::load(argv[1]);
  std::map<std::string, std::string> given;
  std::map<std::string, int64_t> named_dims;
  int runs = 3;
  std::string out_dir;  // where the outputs are written as .npy files, when given
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--dim" || arg == "--runs" || arg == "--out") && i + 1 < argc) {
      const std::string value = argv[++i];
      if (arg == "--runs") runs = std::stoi(value);
      else if (arg == "--out") out_dir = value;
      else named_dims[value.substr(0, value.find('='))] = std::stoll(value.substr(value.find('=') + 1));
      continue;
    }
    const size_t eq = arg.find('=');
    if (eq == std::string::npos) throw Error("onnx_run: '" + arg + "' is not name=file.npy or name=AxB");
    given[arg.substr(0, eq)] = arg.substr(eq + 1);
  }
  std::cout << argv[1] << ": opset " << model.opset() << ", " << model.data().graph.nodes.size() << " nodes\n";
  std::map<std::string, Tensor> inputs;
  for (const onnx::ValueInfo& v : model.inputs()) {
    const auto it = given.find(v.name);
    if (it != given.end() && it->second.size() > 4 && it->second.substr(it->second.size() - 4) == ".npy") {
      inputs.emplace(v.name, load_npy(it->second));
    } else {
      std::vector<int64_t> shape;
      if (it != given.end()) {
        shape = parse_dims(it->second);
      } else {
        for (const onnx::Dim& d : v.shape) {
          if (const int64_t* n = std::get_if<int64_t>(&d)) shape.push_back(*n);
          else shape.push_back(named_dims.count(std::get<std::string>(d)) ? named_dims[std::get<std::string>(d)] : 1);
        }
      }
      inputs.emplace(v.name, random_input(v.dtype == dtypes::void_ ? dtypes::float32 : v.dtype, shape));
    }
    summarize("input " + v.name, inputs.at(v.name));
  }
  using clock = std::chrono::steady_clock;
  std::map<std::string, Tensor> outputs;
  double first_ms = 0, rest_ms = 0;
  for (int r = 0; r < std::max(runs, 1); ++r) {
    const auto start = clock::now();
    outputs = model.run(inputs);
    for (auto& [name, t] : outputs) t.realize();
    const double ms = std::chrono::duration<double, std::milli>(clock::now() - start).count();
    (r == 0 ? first_ms : rest_ms) += ms;
  }
  for (const auto& [name, t] : outputs) {
    summarize("output " + name, t);
    if (!out_dir.empty()) {  // (an output name may hold a /)
      std::string file = name;
      std::replace(file.begin(), file.end(), '/', '_');
      save_npy(t, out_dir + "/" + file + ".npy");
    }
  }
  std::cout << "first run " << first_ms << " ms (compiling its kernels)";
  if (runs > 1) std::cout << ", then " << rest_ms / (runs - 1) << " ms per run";
  std::cout << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << e.what() << "\n";
  return 1;
}
