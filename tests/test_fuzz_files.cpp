// Files from anyone, mutated: GGUF and safetensors files with bytes of their headers changed and
// their dims, types, offsets and lengths set to 0, 1 and values past the file either load or
// throw a tinyt::Error, and whatever loads is used (read back, computed on) without reading or
// writing out of bounds. The mutations are deterministic (a failure names the one that made it);
// the ASan/UBSan build of `make sanitize-fast` runs this file, which is where a bad access shows.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <tinyt.hpp>
#include <tinyt/internals.hpp>

#include "helpers.hpp"

using namespace tinyt;
using namespace tinyt_test;
using tinyt::detail::cat;
namespace fs = std::filesystem;

namespace {

// A fixed pseudo-random sequence (64-bit LCG, Knuth's constants): the same mutations every run.
struct Mutations {
  uint64_t state;
  uint64_t next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
};

std::string le(uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
  return out;
}

// Uses every tensor that loaded: its elements read back as many as its shape says, and kernels
// read all of them (a sum) and write a copy (a contiguous product).
void use(const std::map<std::string, Tensor>& tensors) {
  for (const auto& [key, t] : tensors) {
    const std::string name = key;  // clang 14's lambdas (CAPTURE) cannot name a structured binding
    CAPTURE(name);
    const Tensor f = t.cast(dtypes::float32);
    CHECK(f.to_vector<float>().size() == static_cast<size_t>(t.numel()));
    realize_tensors({f.sum(), (f * 2).contiguous()});
  }
}

// What the mutated files did: loaded (and were used) or were refused with a tinyt::Error.
struct Outcomes {
  int loaded = 0, refused = 0;
  template <class Load>
  void run(const fs::path& p, const std::string& bytes, const std::string& what, Load load) {
    CAPTURE(what);
    write_file(p, bytes);
    try {
      use(load(p.string()));
      ++loaded;
    } catch (const Error&) {
      ++refused;  // anything but a tinyt::Error leaves the test as a failure naming `what`
    }
  }
};

// Where each tensor info of a GGUF file starts (its name's length field), found by its name.
std::vector<size_t> tensor_infos(const std::string& file, const std::map<std::string, Tensor>& tensors) {
  std::vector<size_t> out;
  for (const auto& [name, t] : tensors) {
    const size_t at = file.find(le(name.size(), 8) + name);
    REQUIRE(at != std::string::npos);
    out.push_back(at);
  }
  return out;
}

template <class T>
std::string with(std::string file, size_t at, T value) {
  file.replace(at, sizeof(T), le(static_cast<uint64_t>(value), sizeof(T)));
  return file;
}

}  // namespace

TEST_CASE("fuzz: GGUF files with mutated tensor infos (dims 0, 1, huge, types, offsets) load or throw") {
  const fs::path source = fs::path(__FILE__).parent_path() / "data" / "gguf_types.gguf";
  const std::string file = read_file(source);
  const auto tensors = nn::state::gguf_load(source.string()).tensors;
  TempDir dir;
  const fs::path p = dir.path / "mutated.gguf";
  auto load = [](const std::string& path) { return nn::state::gguf_load(path).tensors; };
  Outcomes o;
  auto it = tensors.begin();
  for (size_t info : tensor_infos(file, tensors)) {
    const std::string& name = (it++)->first;
    const size_t ndims_at = info + 8 + name.size(), dims_at = ndims_at + 4;
    const uint32_t ndims = static_cast<uint32_t>(static_cast<unsigned char>(file[ndims_at]));
    const size_t type_at = dims_at + 8 * ndims, offset_at = type_at + 4;
    for (uint32_t d = 0; d < ndims; ++d)
      for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{3}, uint64_t{1} << 32, ~uint64_t{0}})
        o.run(p, with<uint64_t>(file, dims_at + 8 * d, v), cat(name, ": dim ", d, " = ", v), load);
    for (uint32_t n : {0u, 1u, 4u, 5u, 0xFFFFFFFFu}) o.run(p, with<uint32_t>(file, ndims_at, n), cat(name, ": ", n, " dims"), load);
    for (uint32_t type = 0; type < 42; ++type) o.run(p, with<uint32_t>(file, type_at, type), cat(name, ": type ", type), load);
    for (uint64_t off : {uint64_t{0}, uint64_t{32}, uint64_t{1} << 40, ~uint64_t{0} - 31})
      o.run(p, with<uint64_t>(file, offset_at, off), cat(name, ": offset ", off), load);
    // the name's length: 0, one more, past the file
    for (uint64_t len : {uint64_t{0}, name.size() + 1, uint64_t{1} << 62})
      o.run(p, with<uint64_t>(file, info, len), cat(name, ": name length ", len), load);
  }
  MESSAGE("loaded ", o.loaded, ", refused ", o.refused);
  CHECK(o.loaded > 50);  // a dim of 0 or 1, another type of the same block size, ... still load
  CHECK(o.refused > 50);
}

TEST_CASE("fuzz: GGUF files with one header byte changed load or throw") {
  const fs::path source = fs::path(__FILE__).parent_path() / "data" / "gguf_types.gguf";
  const std::string file = read_file(source);
  // the metadata and tensor infos end where the first tensor's data begins (tensor_infos' last
  // entry is the q6_k one, listed last in the file; 986 bytes in all, checked by the offsets)
  const size_t header = 986;
  REQUIRE(file.size() > header);
  TempDir dir;
  const fs::path p = dir.path / "flipped.gguf";
  Mutations m{2026};
  Outcomes o;
  for (int i = 0; i < 300; ++i) {
    std::string bytes = file;
    const size_t at = m.below(header);
    bytes[at] = static_cast<char>(bytes[at] ^ static_cast<char>(1 + m.below(255)));
    o.run(p, bytes, cat("byte ", at, " -> ", static_cast<int>(static_cast<unsigned char>(bytes[at]))),
          [](const std::string& path) { return nn::state::gguf_load(path).tensors; });
  }
  MESSAGE("loaded ", o.loaded, ", refused ", o.refused);
  CHECK(o.loaded > 10);  // a changed metadata value, a dim of the same byte size, ...
  CHECK(o.refused > 10);
}

namespace {
// A safetensors file of four tensors whose header entries may be replaced field by field.
struct SafetensorsEntry {
  std::string name, dtype, shape, offsets;
};
std::string safetensors_file(const std::vector<SafetensorsEntry>& entries, std::optional<uint64_t> length = {}) {
  std::string header = "{";
  for (const SafetensorsEntry& e : entries)
    header += cat(header.size() > 1 ? "," : "", "\"", e.name, "\":{\"dtype\":\"", e.dtype, "\",\"shape\":", e.shape,
                  ",\"data_offsets\":", e.offsets, "}");
  header += "}";
  std::string data;
  for (int i = 0; i < 48; ++i) data += static_cast<char>(i * 37);  // 48 bytes of data
  return le(length.value_or(header.size()), 8) + header + data;
}
const std::vector<SafetensorsEntry> safetensors_entries{{"w", "F32", "[2,3]", "[0,24]"},
                                                        {"h", "F16", "[4]", "[24,32]"},
                                                        {"e", "I32", "[2,0]", "[32,32]"},
                                                        {"b", "U8", "[16]", "[32,48]"}};
}  // namespace

TEST_CASE("fuzz: safetensors files with mutated shapes, dtypes, offsets and lengths load or throw") {
  TempDir dir;
  const fs::path p = dir.path / "mutated.safetensors";
  auto load = [](const std::string& path) { return nn::state::safe_load(path); };
  Outcomes o;
  o.run(p, safetensors_file(safetensors_entries), "the file as made", load);
  REQUIRE(o.loaded == 1);
  const std::vector<std::string> shapes{"[]", "[0]", "[0,3]", "[3,0]", "[1,1,1,1,1,1,1,1,1,0]", "[6]", "[2,4]", "[24]",
                                        "[-1,3]", "[4294967296,1]", "[9223372036854775807,2]", "[2,3.5]", "[2,\"3\"]"};
  const std::vector<std::string> dtypes{"F64", "I8", "BOOL", "BF16", "F8_E4M3", "X", ""};
  const std::vector<std::string> offsets{"[0,0]", "[0,23]", "[0,25]", "[24,0]", "[0,48]", "[40,64]", "[0,18446744073709551615]",
                                         "[1,25]", "[0]", "[]"};
  for (size_t i = 0; i < safetensors_entries.size(); ++i) {
    auto mutate = [&](auto field, const std::string& value) {
      std::vector<SafetensorsEntry> entries = safetensors_entries;
      entries[i].*field = value;
      o.run(p, safetensors_file(entries), cat(entries[i].name, " = ", value), load);
    };
    for (const std::string& s : shapes) mutate(&SafetensorsEntry::shape, s);
    for (const std::string& d : dtypes) mutate(&SafetensorsEntry::dtype, d);
    for (const std::string& off : offsets) mutate(&SafetensorsEntry::offsets, off);
  }
  // the header's length: 0, one short, one over, past the file
  const size_t length = safetensors_file(safetensors_entries).size() - 8 - 48;
  for (uint64_t n : {uint64_t{0}, uint64_t{length - 1}, uint64_t{length + 1}, uint64_t{1} << 40})
    o.run(p, safetensors_file(safetensors_entries, n), cat("header length ", n), load);
  // one byte of the header changed
  const std::string file = safetensors_file(safetensors_entries);
  Mutations m{31};
  for (int i = 0; i < 200; ++i) {
    std::string bytes = file;
    const size_t at = 8 + m.below(length);
    bytes[at] = static_cast<char>(bytes[at] ^ static_cast<char>(1 + m.below(255)));
    o.run(p, bytes, cat("byte ", at), load);
  }
  MESSAGE("loaded ", o.loaded, ", refused ", o.refused);
  CHECK(o.loaded > 10);  // a shape of as many elements, a dtype of the same size, ...
  CHECK(o.refused > 100);
}
