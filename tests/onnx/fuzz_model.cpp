// A real .onnx file cut short and corrupted: every prefix of it, and COPIES corrupted copies, must
// each load (and then run, or fail to run with a tinyt::Error) or fail to load with a
// tinyt::Error; anything else (another exception, a crash, ASan's report of a read out of
// bounds) fails the test. Built with ASan too (`make sanitize-fast`), where the bytes past each
// prefix are poisoned, so a read past the prefix is caught although the prefix is not a copy.
//   tinyt_onnx_fuzz_model CASE_DIR COPIES SEED
// CASE_DIR is a real model's case (tests/onnx/real_models.cpp): model.txt names the file and
// input_<k>.pb are the inputs a loaded copy runs on.
#include <tinyt/onnx.hpp>
#include <tinyt/onnx/protobuf.hpp>

#include <sanitizer/asan_interface.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_UNDER_ASAN 1
#endif
#endif

namespace fs = std::filesystem;
using namespace tinyt;

namespace {

// The outcomes, counted by kind: a failing one stops the program.
struct Tally {
  std::map<std::string, int> counts;
  void add(const std::string& outcome) { ++counts[outcome]; }
  std::string text() const {
    std::string s;
    for (const auto& [outcome, n] : counts) s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + outcome;
    return s;
  }
};

// The kind of a tinyt::Error, as the tally counts it.
std::string kind_of(const Error& e) {
  if (dynamic_cast<const onnx::FormatError*>(&e)) return "FormatError";
  if (dynamic_cast<const onnx::UnsupportedError*>(&e)) return "UnsupportedError";
  if (dynamic_cast<const ShapeError*>(&e)) return "ShapeError";
  if (dynamic_cast<const DTypeError*>(&e)) return "DTypeError";
  return "other tinyt::Error";
}

// Where the file's structure is, in two lists: the framing (every key and length) and the values
// (varints, fixed-size values, strings up to 64 bytes: names, op types, attributes) of every
// message. A length-delimited field whose payload reads whole as fields is taken for a message
// (raw weight bytes almost never do). Corrupting the framing reaches the reader's checks; the
// values, the checks of a node's attributes and inputs; the weights mostly change numbers.
struct Structure {
  std::vector<size_t> framing, values;
};

void find_structure(std::string_view bytes, size_t base, int depth, Structure& out) {
  std::vector<onnx::proto::Field> fields;
  try {
    onnx::proto::Reader r(bytes, base, "probe");
    onnx::proto::Field f;
    while (r.next(f)) fields.push_back(f);
  } catch (const onnx::FormatError&) {
    return;  // not a message
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    const onnx::proto::Field& f = fields[i];
    const size_t end = i + 1 < fields.size() ? fields[i + 1].offset : base + bytes.size();
    if (f.type != onnx::proto::WireType::bytes) {
      out.framing.push_back(f.offset);  // a one-byte key: field numbers in ONNX are below 16
      for (size_t at = f.offset + 1; at < end; ++at) out.values.push_back(at);
      continue;
    }
    for (size_t at = f.offset; at < f.payload; ++at) out.framing.push_back(at);
    const size_t before = out.framing.size();
    if (depth < 12 && !f.bytes.empty()) find_structure(f.bytes, f.payload, depth + 1, out);
    if (out.framing.size() == before && f.bytes.size() <= 64)  // not a message: a string
      for (size_t at = f.payload; at < end; ++at) out.values.push_back(at);
  }
}

// A copy of `file` with one to four corruptions: bytes of its framing, of its values or anywhere
// set to random values or with a bit flipped, a few bytes removed or inserted.
std::string corrupt(const std::string& file, const Structure& structure, std::mt19937_64& rng) {
  std::string c = file;
  const int corruptions = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < corruptions; ++i) {
    const uint64_t where = rng() % 5;  // 2 in 5 the framing, 2 in 5 the values, 1 in 5 anywhere
    size_t at = where < 2 ? structure.framing[rng() % structure.framing.size()]
                : where < 4 ? structure.values[rng() % structure.values.size()]
                            : rng() % c.size();
    at = std::min(at, c.size() - 1);
    switch (rng() % 4) {
      case 0: c[at] = static_cast<char>(rng()); break;
      case 1: c[at] = static_cast<char>(c[at] ^ (1 << (rng() % 8))); break;
      case 2: c.erase(at, 1 + rng() % 4); break;
      default: c.insert(at, std::string(1 + rng() % 4, static_cast<char>(rng()))); break;
    }
    if (c.empty()) c = "\x08";
  }
  return c;
}

// Loads `bytes`: a model, or nothing when a tinyt::Error (counted) says why not.
std::optional<onnx::Model> try_load(std::string_view bytes, Tally& tally) {
  try {
    return onnx::load_bytes(bytes);
  } catch (const Error& e) {
    tally.add("load: " + kind_of(e));
    return std::nullopt;
  }
}

// Runs a model that loaded on `inputs` (by position) and reads its outputs back.
void try_run(const onnx::Model& m, const std::vector<Tensor>& inputs, Tally& tally) {
  try {
    std::map<std::string, Tensor> feeds;
    const std::vector<onnx::ValueInfo> wanted = m.inputs();
    for (size_t k = 0; k < wanted.size() && k < inputs.size(); ++k) feeds.emplace(wanted[k].name, inputs[k]);
    for (auto& [name, out] : m.run(feeds)) (void)out.cast(dtypes::float32).reshape({-1}).to_vector<float>();
    tally.add("loaded and ran");
  } catch (const Error& e) {
    tally.add("loaded, run: " + kind_of(e));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: tinyt_onnx_fuzz_model CASE_DIR COPIES SEED\n";
    return 2;
  }
  const fs::path dir = argv[1];
  const int copies = std::stoi(argv[2]);
  const uint64_t seed = std::stoull(argv[3]);
  std::string path;
  std::getline(std::ifstream(dir / "model.txt"), path);
  std::string file;
  std::vector<Tensor> inputs;
  try {
    std::optional<std::string> bytes = tinyt::detail::read_file(path);
    if (!bytes) throw Error("cannot read '" + path + "'");
    file = std::move(*bytes);
    for (int k = 0; fs::exists(dir / ("input_" + std::to_string(k) + ".pb")); ++k)
      inputs.push_back(onnx::load_tensor((dir / ("input_" + std::to_string(k) + ".pb")).string()));
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::string stage;
  try {
    // Every prefix, longest first, read in place from an allocation of the file's size: the byte
    // that the next prefix drops is poisoned (under ASan), so each prefix ends where readable
    // memory ends.
    Tally prefixes;
    const std::unique_ptr<char[]> bytes(new char[file.size()]);
    std::memcpy(bytes.get(), file.data(), file.size());
    for (size_t n = file.size(); n-- > 0;) {
      stage = "the prefix of " + std::to_string(n) + " bytes";
      ASAN_POISON_MEMORY_REGION(bytes.get() + n, 1);
#ifdef FUZZ_UNDER_ASAN
      if (!__asan_address_is_poisoned(bytes.get() + n) || (n > 0 && __asan_address_is_poisoned(bytes.get() + n - 1)))
        throw std::logic_error("the poisoned bytes are not exactly those past the prefix");
#endif
      if (std::optional<onnx::Model> m = try_load(std::string_view(bytes.get(), n), prefixes)) prefixes.add("loaded");
    }
    ASAN_UNPOISON_MEMORY_REGION(bytes.get(), file.size());
    std::cout << file.size() << " prefixes of " << path << ": " << prefixes.text() << " (" << seconds() << " s)\n";

    Structure structure;
    find_structure(file, 0, 0, structure);
    std::mt19937_64 rng(seed);
    Tally corrupted;
    for (int i = 0; i < copies; ++i) {
      stage = "corrupted copy " + std::to_string(i) + " (seed " + std::to_string(seed) + ")";
      const std::string copy = corrupt(file, structure, rng);
      if (std::optional<onnx::Model> m = try_load(copy, corrupted)) try_run(*m, inputs, corrupted);
    }
    std::cout << copies << " corrupted copies (" << structure.framing.size() << " bytes of framing, " << structure.values.size()
              << " of values, seed " << seed << "): " << corrupted.text() << " ("
              << seconds() << " s in all)\n";
  } catch (const std::exception& e) {
    std::cerr << stage << ": not a tinyt::Error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
