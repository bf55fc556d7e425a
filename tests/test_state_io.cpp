// Files in and out: safetensors (nn::state::safe_save / safe_load) against Hugging Face's writer
// and against malformed files, GGUF (nn::state::gguf_load) against llama.cpp's gguf package and
// malformed files, IDX files plain and gzip'd (nn::datasets::load_idx), and
// Fashion-MNIST when its Debian package is installed.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <typeinfo>
#include <vector>

#include <tinyt.hpp>
#include <tinyt/internals.hpp>

#include "helpers.hpp"

using namespace tinyt;
using tinyt_test::error_of;
using tinyt_test::message_of;
using tinyt_test::read_file;
using tinyt_test::write_file;
using tinyt_test::TempDir;
namespace fs = std::filesystem;

namespace {

/// The elements of `t` as bytes in host order.
std::vector<uint8_t> raw(const Tensor& t) {
  std::vector<uint8_t> out;
  if (t.dtype().is_bool()) {
    const auto v = t.to_vector<bool>();
    out.assign(v.begin(), v.end());
    return out;
  }
  tinyt_test::with_type(t.dtype(), [&](auto zero) {
    const auto v = t.to_vector<decltype(zero)>();
    out.resize(v.size() * sizeof(zero));
    if (!out.empty()) std::memcpy(out.data(), v.data(), out.size());
  });
  return out;
}

void check_same(const Tensor& got, const Tensor& want) {
  CHECK(got.dtype() == want.dtype());
  CHECK(got.shape() == want.shape());
  CHECK(got.device() == Device::default_device());
  CHECK(raw(got) == raw(want));
}

/// A safetensors file: the 8-byte little-endian length, the header as given, then `data`.
std::string st_file(const std::string& header, const std::string& data = "") {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + data;
}
std::string le_u64(uint64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
  return out;
}


/// zlib's gzip writer, opened the way tinyt opens it, for .gz fixtures.
void write_gz(const fs::path& p, const std::string& bytes) {
  backend::Library z("libz.so.1");
  auto gzopen = z.symbol<void*(const char*, const char*)>("gzopen");
  auto gzwrite = z.symbol<int(void*, const void*, unsigned)>("gzwrite");
  auto gzclose = z.symbol<int(void*)>("gzclose");
  void* f = gzopen(p.string().c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == 0);
}

/// An IDX file: magic (0, 0, type, ndims), big-endian uint32 dims, then `elements` (host order,
/// `itemsize` bytes each) turned big-endian.
std::string idx_file(uint8_t type, const std::vector<uint32_t>& dims, std::string elements,
                     size_t itemsize) {
  std::string out{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) out += static_cast<char>((d >> s) & 0xFF);
  if constexpr (std::endian::native == std::endian::little)
    for (size_t i = 0; i + itemsize <= elements.size(); i += itemsize)
      std::reverse(elements.begin() + static_cast<std::ptrdiff_t>(i),
                   elements.begin() + static_cast<std::ptrdiff_t>(i + itemsize));
  return out + elements;
}
template <class T> std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// The tensors of tests/data/make_state_io_reference.py, built in tinyt.
std::map<std::string, Tensor> reference_tensors() {
  using tinyt_test::make;
  std::map<std::string, Tensor> t;
  t["w"] = Tensor::from_vector<float>({-0.5f, -0.25f, 0.f, 0.25f, 0.5f, 0.75f}, {2, 3});
  t["f64"] = Tensor::from_vector<double>({1.0 / 3, -2.5e300});
  t["half"] = make(dtypes::float16, {}, {0.5, -1.0, 65504.0});
  t["bf16"] = make(dtypes::bfloat16, {}, {1.5, -2.0, 0.25, 3.0e38});
  t["i64"] = Tensor::from_vector<int64_t>({-3, int64_t{1} << 40, 7});
  t["i32"] = Tensor::from_vector<int32_t>(
      {-1, 2, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()}, {2, 2});
  t["i16"] = Tensor::from_vector<int16_t>({-32768, 12345});
  t["i8"] = Tensor::from_vector<int8_t>({-128, 127, 0});
  t["u64"] = Tensor::from_vector<uint64_t>({(uint64_t{1} << 63) + 5});
  t["u32"] = Tensor::from_vector<uint32_t>({4000000000u, 1});
  t["u16"] = Tensor::from_vector<uint16_t>({65535, 2});
  t["u8"] = Tensor::from_vector<uint8_t>({0, 255, 7});
  t["mask"] = Tensor::from_vector<bool>({true, false, true});
  t["scalar"] = Tensor::from_vector<double>({2.5}, Shape{});
  t["empty"] = Tensor::zeros({2, 0}, dtypes::int32);
  t["we\"ird\\name\n\xc3\xa9"] = Tensor::from_vector<uint8_t>({9});
  return t;
}
fs::path reference_file() {
  return fs::path(__FILE__).parent_path() / "data" / "state_io_reference.safetensors";
}

}  // namespace

// -- safetensors ---------------------------------------------------------------------------------

TEST_CASE("safetensors round trip keeps every dtype, shape and value") {
  if (tinyt_test::lacks(dtypes::float64)) return;  // (every dtype, float64 and int64 among them)
  TempDir dir;
  const auto path = (dir.path / "all.safetensors").string();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::map<std::string, Tensor> tensors;
  for (DType dt : {dtypes::float64, dtypes::float32, dtypes::float16, dtypes::bfloat16,
                   dtypes::int64, dtypes::int32, dtypes::int16, dtypes::int8, dtypes::uint64,
                   dtypes::uint32, dtypes::uint16, dtypes::uint8, dtypes::bool_}) {
    const Tensor t = tinyt_test::make(dt, {0, 1, -1, 100, -128, 127, 7, 3},
                                      {0.5, -0.0, nan, inf, -inf, 1e-3, 3.25, -7.0});
    tensors[std::string("t_") + dt.name()] = t.reshape({2, 4});
  }
  tensors["zero_d"] = Tensor::from_vector<float>({-1.75f}, Shape{});
  tensors["empty"] = Tensor::empty({3, 0, 2}, dtypes::float16);
  tensors["lazy"] = Tensor::arange(6).reshape({2, 3}).transpose() * 2 + 1;  // not realized yet
  const std::map<std::string, std::string> metadata{{"format", "pt"},
                                                    {"note", "a \"quoted\"\n\t\\"}};
  nn::state::safe_save(tensors, path, metadata);

  const auto loaded = nn::state::safe_load(path);
  REQUIRE(loaded.size() == tensors.size());
  for (const auto& [key, t] : tensors) {
    const std::string& name = key;  // INFO's lambda cannot capture a binding in clang 14
    INFO("tensor ", name);
    REQUIRE(loaded.count(name) == 1);
    check_same(loaded.at(name), t);
  }
  CHECK(loaded.at("zero_d").ndim() == 0);
  CHECK(loaded.at("zero_d").item<float>() == -1.75f);
  CHECK(loaded.at("empty").shape() == Shape{3, 0, 2});
  CHECK(loaded.at("lazy").to_vector<int32_t>() == std::vector<int32_t>{1, 7, 3, 9, 5, 11});
  CHECK(nn::state::safe_load_metadata(path) == metadata);

  // the data starts 8-byte aligned; 404 data bytes: 13 dtypes x 8 elements, 4 + 0 + 6 x 4
  const std::string bytes = read_file(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  CHECK(n % 8 == 0);
  CHECK(bytes.size() == 8 + n + 404);
}

TEST_CASE("safetensors with no tensors and no metadata is the reference's 16 bytes") {
  TempDir dir;
  const auto path = (dir.path / "empty.safetensors").string();
  nn::state::safe_save({}, path);
  CHECK(read_file(path) == st_file("{}      "));
  CHECK(nn::state::safe_load(path).empty());
  CHECK(nn::state::safe_load_metadata(path).empty());
}

TEST_CASE("safe_save writes a hand-checked byte layout") {
  // one float32 tensor: the header is compact JSON padded with spaces to a multiple of 8
  TempDir dir;
  const auto path = (dir.path / "one.safetensors").string();
  nn::state::safe_save({{"attn.0", Tensor::arange(6).cast(dtypes::float32).reshape({1, 2, 3})}},
                       path);
  const std::string header = R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
  REQUIRE(header.size() == 64);
  std::string data;
  for (float f : {0.f, 1.f, 2.f, 3.f, 4.f, 5.f}) {
    const auto u = std::bit_cast<uint32_t>(f);
    for (int i = 0; i < 4; ++i) data += static_cast<char>((u >> (8 * i)) & 0xFF);
  }
  CHECK(read_file(path) == st_file(header, data));
}

TEST_CASE("safe_save matches the file Hugging Face's safetensors wrote") {
  if (tinyt_test::lacks(dtypes::float64)) return;  // (every dtype, float64 and int64 among them)
  const fs::path ref = reference_file();
  REQUIRE_MESSAGE(fs::exists(ref), "missing fixture ", ref.string(),
                  " (made by tests/data/make_state_io_reference.py)");
  TempDir dir;
  const auto path = (dir.path / "ours.safetensors").string();
  const auto tensors = reference_tensors();
  nn::state::safe_save(tensors, path, {{"format", "pt"}});
  const std::string ours = read_file(path), theirs = read_file(ref);
  CHECK(ours.size() == theirs.size());
  const auto diff = std::mismatch(ours.begin(), ours.end(), theirs.begin(), theirs.end());
  CHECK_MESSAGE(ours == theirs, "first difference at byte ", diff.first - ours.begin());

  const auto loaded = nn::state::safe_load(ref.string());
  REQUIRE(loaded.size() == tensors.size());
  for (const auto& [key, t] : tensors) {
    const std::string& name = key;  // INFO's lambda cannot capture a binding in clang 14
    INFO("tensor ", name);
    REQUIRE(loaded.count(name) == 1);
    check_same(loaded.at(name), t);
  }
  CHECK(loaded.at("u64").item<uint64_t>() == (uint64_t{1} << 63) + 5);
  CHECK(loaded.at("i32").to_vector<int32_t>()[3] == std::numeric_limits<int32_t>::min());
  CHECK(nn::state::safe_load_metadata(ref.string()) ==
        std::map<std::string, std::string>{{"format", "pt"}});
}

TEST_CASE("safe_load accepts entries listed out of offset order and JSON whitespace") {
  TempDir dir;
  const auto path = (dir.path / "order.safetensors").string();
  const std::string header =
      " \n{ \"b\" : {\"data_offsets\": [4, 8], \"shape\": [2], \"dtype\": \"I16\"},\r\n"
      "\t\"a\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [0, 4]}, "
      "\"__metadata__\": {\"k\\u00e9\\ud83d\\ude00\": \"v\\/\"}}\n ";
  // a header that does not start with '{' is refused, so start it with one
  write_file(path, st_file(header.substr(2), std::string("\x01\x02\x03\x04\x05\x00\xff\xff", 8)));
  const auto t = nn::state::safe_load(path);
  CHECK(t.at("a").to_vector<uint8_t>() == std::vector<uint8_t>{1, 2, 3, 4});
  CHECK(t.at("b").to_vector<int16_t>() == std::vector<int16_t>{5, -1});
  CHECK(nn::state::safe_load_metadata(path) ==
        std::map<std::string, std::string>{{"k\xc3\xa9\xf0\x9f\x98\x80", "v/"}});
}

TEST_CASE("safe_load rejects malformed files with the file and the problem named") {
  TempDir dir;
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string eight(8, '\0');
  struct Case {
    const char* what;
    std::string bytes;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"empty file", "", "shorter than the 8-byte header length"},
      {"7 bytes", std::string(7, '\0'), "shorter than the 8-byte header length"},
      {"absurd header length", le_u64(uint64_t{1} << 62) + "{}",
       "larger than the 100000000-byte limit"},
      {"header length past the end", le_u64(100) + "{}      ", "runs past the end of the file"},
      {"empty header", le_u64(0), "does not start with '{'"},
      {"header not an object", st_file("[]"), "does not start with '{'"},
      {"header with a leading space", st_file(" {}"), "does not start with '{'"},
      {"missing value", st_file(R"({"a":})"), "invalid JSON at byte 5: expected a value"},
      {"missing colon", st_file(R"({"a" 1})"), "expected ':'"},
      {"unterminated string", st_file(R"({"a)"), "unterminated string"},
      {"unterminated object", st_file("{" + ok_entry, eight), "expected '}'"},
      {"trailing comma", st_file(R"({"a":{"dtype":"F32",}})"), "expected a string key"},
      {"bad escape", st_file(R"({"a\x":1})"), "invalid escape"},
      {"raw control character", st_file("{\"a\tb\":1}"), "raw control character"},
      {"leading zero", st_file(R"({"a":{"dtype":"F32","shape":[02],"data_offsets":[0,8]}})", eight),
       "leading zeros"},
      {"lone surrogate", st_file(R"({"\udc00":1})"), "lone low surrogate"},
      {"unpaired high surrogate", st_file(R"({"\ud800x":1})"), "high surrogate"},
      {"invalid UTF-8", st_file("{\"\xff\":1}"), "invalid UTF-8"},
      {"overlong UTF-8", st_file("{\"\xc0\xaf\":1}"), "invalid UTF-8"},
      {"NUL byte", st_file(std::string("{\0}", 3)), "expected a string key"},
      {"bad literal", st_file(R"({"a":tru})"), "expected a value"},
      {"deep nesting", st_file("{\"a\":" + std::string(100000, '[')), "nested deeper than 64"},
      {"trailing garbage", st_file("{}   x  "), "unexpected data after the JSON value"},
      {"two objects", st_file("{} {}   "), "unexpected data after the JSON value"},
      {"duplicate tensor", st_file("{" + ok_entry + "," + ok_entry + "}", eight),
       "duplicate key \"a\""},
      {"duplicate field",
       st_file(R"({"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", eight),
       "duplicate key \"dtype\""},
      {"duplicate metadata", st_file(R"({"__metadata__":{"k":"1","k":"2"}})"),
       "duplicate key \"k\""},
      {"entry not an object", st_file(R"({"a":3})"),
       "tensor \"a\": expected an object, found a number"},
      {"dtype not a string",
       st_file(R"({"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", eight),
       "dtype must be a string"},
      {"missing field", st_file(R"({"a":{"dtype":"F32","shape":[2]}})", eight),
       "missing data_offsets"},
      {"unknown field", st_file(R"({"a":{"dtype":"F32","shape":[2],"offsets":[0,8]}})", eight),
       "unknown field \"offsets\""},
      {"negative dim", st_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight),
       "shape dims must be non-negative integers, found -2"},
      {"fractional dim",
       st_file(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", eight), "found 2.0"},
      {"dim past int64",
       st_file(R"({"a":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]}})"),
       "is too large"},
      {"number past uint64",
       st_file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,18446744073709551616]}})"),
       "found 18446744073709551616"},
      {"one offset", st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", eight),
       "data_offsets must be an array of two integers"},
      {"offsets not numbers",
       st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":["0","8"]}})", eight),
       "found a string"},
      {"size mismatch", st_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight),
       "data_offsets [0, 8] hold 8 bytes, but dtype F32 and shape [3] need 12"},
      {"0-d size mismatch",
       st_file(R"({"a":{"dtype":"F64","shape":[],"data_offsets":[0,4]}})", "1234"),
       "hold 4 bytes, but dtype F64 and shape [] need 8"},
      {"size overflow",
       st_file(
           R"({"a":{"dtype":"U8","shape":[1099511627776,1099511627776,0],"data_offsets":[0,0]}})"),
       "need more than 2^64 bytes"},
      {"offsets past the data",
       st_file(R"({"a":{"dtype":"F32","shape":[250],"data_offsets":[0,1000]}})", eight),
       "data_offsets [0, 1000] run past the end of the data (8 bytes after the header)"},
      {"offsets past the data far away",
       st_file(
           R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[18446744073709551615,18446744073709551615]}})"),
       "run past the end of the data"},
      {"end before begin",
       st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", eight),
       "end before they begin"},
      {"overlap",
       st_file(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
           std::string(12, '\0')),
       "tensor \"b\": data_offsets [4, 12] overlap tensor \"a\", which ends at byte 8"},
      {"same offsets twice",
       st_file(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
           eight),
       "overlap tensor"},
      {"gap",
       st_file(
           R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
           std::string(12, '\0')),
       "leave bytes [4, 8) of the data that no tensor covers"},
      {"first tensor not at 0",
       st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight),
       "leave bytes [0, 4)"},
      {"bytes after the last tensor", st_file("{" + ok_entry + "}", std::string(12, '\0')),
       "bytes [8, 12) of the data after the header belong to no tensor"},
      {"data but no tensors", st_file("{}", "x"), "bytes [0, 1) of the data"},
      {"metadata not an object", st_file(R"({"__metadata__":"pt"})"),
       "__metadata__ must be an object"},
      {"metadata not strings", st_file(R"({"__metadata__":{"epoch":3}})"),
       "__metadata__ maps strings to strings, but \"epoch\" is a number"},
      {"bool byte 2",
       st_file(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
               std::string("\x01\x02\x00", 3)),
       "BOOL tensor \"m\" holds byte 2 at element 1 (must be 0 or 1)"},
  };
  int i = 0;
  for (const Case& c : cases) {
    INFO("case: ", std::string(c.what));
    const auto path = (dir.path / ("bad" + std::to_string(i++) + ".safetensors")).string();
    write_file(path, c.bytes);
    const std::string m = error_of([&] { nn::state::safe_load(path); });
    CHECK(m.find("safe_load: '" + path + "'") != std::string::npos);
    CHECK_MESSAGE(m.find(c.message) != std::string::npos, m);
    if (std::string(c.what) != "bool byte 2") {  // a problem in the header: metadata sees it too
      const std::string mm = error_of([&] { nn::state::safe_load_metadata(path); });
      CHECK(mm.find(c.message) != std::string::npos);
    }
  }
}

TEST_CASE("safe_load: an unknown dtype is a DTypeError, a missing file or a directory an Error") {
  TempDir dir;
  const auto path = (dir.path / "f8.safetensors").string();
  write_file(path, st_file(R"({"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", "ab"));
  std::string m = error_of<DTypeError>([&] { nn::state::safe_load(path); });
  CHECK(m.find("unknown dtype \"F8_E4M3\" (tinyt reads BOOL U8 I8") != std::string::npos);
  write_file(path,
             st_file(R"({"a":{"dtype":"f32","shape":[2],"data_offsets":[0,8]}})", "12345678"));
  CHECK(error_of<DTypeError>([&] { nn::state::safe_load(path); }).find("\"f32\"") !=
        std::string::npos);

  const auto missing = (dir.path / "nope.safetensors").string();
  m = error_of([&] { nn::state::safe_load(missing); });
  CHECK(m == "safe_load: '" + missing + "': cannot open: No such file or directory");
  m = error_of([&] { nn::state::safe_load(dir.path.string()); });
  CHECK(m.find("not a regular file") != std::string::npos);
}

TEST_CASE("safe_save rejects what it cannot write, before touching the file") {
  TempDir dir;
  const auto path = (dir.path / "x.safetensors").string();
  const Tensor ok = Tensor::ones({2});
  std::string m = error_of([&] { nn::state::safe_save({{"__metadata__", ok}}, path); });
  CHECK(m.find("the name is reserved") != std::string::npos);
  m = error_of([&] { nn::state::safe_save({{"a", ok}, {"b", Tensor()}}, path); });
  CHECK(m == "safe_save: '" + path + "': tensor \"b\" is the empty Tensor() handle");
  m = error_of([&] { nn::state::safe_save({{"bad\xff", ok}}, path); });
  CHECK(m.find("not valid UTF-8") != std::string::npos);
  m = error_of([&] { nn::state::safe_save({{"a", ok}}, path, {{"k", "\xc3"}}); });
  CHECK(m.find("metadata \"k\" is not valid UTF-8") != std::string::npos);
  CHECK(!fs::exists(path));
  const auto nowhere = (dir.path / "no_such_dir" / "x.safetensors").string();
  m = error_of([&] { nn::state::safe_save({{"a", ok}}, nowhere); });
  CHECK(m.find("safe_save: '" + nowhere + "': cannot open for writing") != std::string::npos);
}

// -- IDX -----------------------------------------------------------------------------------------

TEST_CASE("load_idx reads every IDX element type, plain and gzip'd") {
  if (tinyt_test::lacks(dtypes::float64)) return;  // (every dtype, float64 and int64 among them)
  TempDir dir;
  struct Case {
    uint8_t type;
    DType dtype;
    std::vector<uint32_t> dims;
    std::string elements;  // host order
  };
  const std::vector<Case> cases = {
      {0x08, dtypes::uint8, {2, 3}, bytes_of<uint8_t>({0, 1, 2, 128, 254, 255})},
      {0x09, dtypes::int8, {4}, bytes_of<int8_t>({-128, -1, 0, 127})},
      {0x0B, dtypes::int16, {1, 2, 2}, bytes_of<int16_t>({-32768, 258, -2, 32767})},
      {0x0C, dtypes::int32, {3}, bytes_of<int32_t>({-2147483647 - 1, 16909060, 7})},
      {0x0D, dtypes::float32, {2, 1}, bytes_of<float>({1.5f, -3.0e-38f})},
      {0x0E, dtypes::float64, {2}, bytes_of<double>({-1.0 / 3, 1e300})},
      {0x08, dtypes::uint8, {2, 0, 5}, ""},
      {0x0D, dtypes::float32, {}, bytes_of<float>({42.0f})},
  };
  int i = 0;
  for (const Case& c : cases) {
    INFO("case ", i, ": type ", int(c.type), ", ", c.dims.size(), " dims");
    const std::string bytes = idx_file(c.type, c.dims, c.elements, c.dtype.itemsize());
    const fs::path plain = dir.path / ("t" + std::to_string(i) + "-idx");
    const fs::path gz = dir.path / ("t" + std::to_string(i) + "-idx.gz");
    ++i;
    write_file(plain, bytes);
    write_gz(gz, bytes);
    for (const fs::path& p : {plain, gz}) {
      const Tensor t = nn::datasets::load_idx(p.string());
      CHECK(t.dtype() == c.dtype);
      CHECK(t.shape() == Shape(std::vector<int64_t>(c.dims.begin(), c.dims.end())));
      const auto got = raw(t);
      CHECK(std::string(got.begin(), got.end()) == c.elements);
    }
  }
}

TEST_CASE("load_idx rejects malformed IDX files with the file and the problem named") {
  TempDir dir;
  const std::string u8x4 = idx_file(0x08, {2, 2}, "abcd", 1);
  struct Case {
    const char* what;
    std::string bytes;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"empty", "", "the file ends inside the 4-byte magic"},
      {"short magic", std::string("\0\0\x08", 3), "the file ends inside the 4-byte magic"},
      {"wrong magic", std::string("\x01\0\x08\x01\0\0\0\x01x", 9), "bad magic 0x01 0x00"},
      {"a text file", "hello world\n", "bad magic 0x68 0x65"},
      {"truncated dims", std::string("\0\0\x08\x03\0\0\0\x02\0\0", 10),
       "the file ends inside the 3 dims"},
      {"truncated data", u8x4.substr(0, u8x4.size() - 1),
       "truncated: dims [2, 2] of uint8 need 4 data bytes, the "},
      {"too much data", u8x4 + "e", "dims [2, 2] of uint8 need 4 data bytes, but the "},
      {"dims overflow", idx_file(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, "", 8),
       "dims [4294967295, 4294967295, 4294967295] of float64 need more than 2^63 bytes"},
      {"huge dims, little data", idx_file(0x0C, {0xFFFFFFFF, 1000}, "abcd", 4),
       "truncated: dims [4294967295, 1000] of int32 need 17179869180000 data bytes"},
  };
  int i = 0;
  for (const Case& c : cases) {
    INFO("case: ", std::string(c.what));
    const fs::path plain = dir.path / ("bad" + std::to_string(i) + "-idx");
    const fs::path gz = dir.path / ("bad" + std::to_string(i) + "-idx.gz");
    ++i;
    write_file(plain, c.bytes);
    write_gz(gz, c.bytes);
    for (const fs::path& p : {plain, gz}) {
      const std::string m = error_of([&] { nn::datasets::load_idx(p.string()); });
      CHECK(m.find("load_idx: '" + p.string() + "'") != std::string::npos);
      CHECK_MESSAGE(m.find(c.message) != std::string::npos, m);
    }
  }
  const fs::path odd = dir.path / "type-idx";
  write_file(odd, idx_file(0x0A, {1}, "x", 1));
  CHECK(error_of<DTypeError>([&] {
          nn::datasets::load_idx(odd.string());
        }).find("unknown IDX element type 0x0A (known: 0x08 u8") != std::string::npos);
  const auto missing = (dir.path / "missing-idx.gz").string();
  CHECK(error_of([&] { nn::datasets::load_idx(missing); }) ==
        "load_idx: '" + missing + "': cannot open: No such file or directory");
}

TEST_CASE("load_idx rejects truncated, corrupt and fake gzip") {
  TempDir dir;
  std::string elements(5000, '\0');
  for (size_t k = 0; k < elements.size(); ++k) elements[k] = static_cast<char>((k * 7919) >> 3);
  const fs::path good = dir.path / "good-idx.gz";
  write_gz(good, idx_file(0x08, {50, 100}, elements, 1));
  CHECK(nn::datasets::load_idx(good.string()).shape() == Shape{50, 100});
  const std::string gz = read_file(good);
  REQUIRE(gz.size() > 40);

  const auto check = [&](const char* what, const std::string& bytes, const char* message) {
    INFO("case: ", std::string(what));
    const fs::path p = dir.path / (std::string(what) + "-idx.gz");
    write_file(p, bytes);
    const std::string m = error_of([&] { nn::datasets::load_idx(p.string()); });
    CHECK(m.find("load_idx: '" + p.string() + "'") != std::string::npos);
    CHECK_MESSAGE(m.find(message) != std::string::npos, m);
  };
  check("cut in half", gz.substr(0, gz.size() / 2), "truncated gzip data");
  check("cut before the trailer", gz.substr(0, gz.size() - 8), "truncated gzip data");
  check("cut inside the trailer", gz.substr(0, gz.size() - 3), "truncated gzip data");
  std::string bad_crc = gz;
  bad_crc[gz.size() - 6] = static_cast<char>(bad_crc[gz.size() - 6] ^ 0x55);
  check("bad crc", bad_crc, "corrupt gzip data");
  std::string bad_size = gz;
  bad_size[gz.size() - 2] = static_cast<char>(bad_size[gz.size() - 2] ^ 0x01);
  check("bad length", bad_size, "corrupt gzip data");
  std::string bad_header = gz;
  bad_header[3] = static_cast<char>(0xE0);  // reserved flag bits
  check("bad header", bad_header, "corrupt gzip data");
  check("plain data named .gz", idx_file(0x08, {2}, "ab", 1), "not gzip data");
  check("only the gzip magic", gz.substr(0, 2), "truncated gzip data");
  check("empty file", "", "not gzip data");
}

// -- Fashion-MNIST -------------------------------------------------------------------------------

TEST_CASE("fashion_mnist from a directory of small IDX files, and its errors") {
  TempDir dir;
  tinyt_test::ScopedEnv env;
  env.set("FASHION_MNIST_DIR", dir.path.string());
  std::string m = error_of([] { nn::datasets::fashion_mnist(); });
  CHECK(m.find("fashion_mnist: '" + (dir.path / "train-images-idx3-ubyte.gz").string() +
               "' does not exist") != std::string::npos);
  CHECK(m.find("dataset-fashion-mnist") != std::string::npos);
  CHECK(m.find("FASHION_MNIST_DIR") != std::string::npos);

  std::string pixels(3 * 28 * 28, '\0');
  for (size_t k = 0; k < pixels.size(); ++k) pixels[k] = static_cast<char>(k % 251);
  write_gz(dir.path / "train-images-idx3-ubyte.gz", idx_file(0x08, {3, 28, 28}, pixels, 1));
  write_gz(dir.path / "train-labels-idx1-ubyte.gz",
           idx_file(0x08, {3}, std::string("\x09\x00\x05", 3), 1));
  write_gz(dir.path / "t10k-images-idx3-ubyte.gz",
           idx_file(0x08, {1, 28, 28}, pixels.substr(0, 784), 1));
  write_gz(dir.path / "t10k-labels-idx1-ubyte.gz", idx_file(0x08, {1}, "\x07", 1));
  const auto d = nn::datasets::fashion_mnist();
  CHECK(d.X_train.shape() == Shape{3, 1, 28, 28});
  CHECK(d.X_train.dtype() == dtypes::uint8);
  CHECK(d.X_train.to_vector<uint8_t>() == std::vector<uint8_t>(pixels.begin(), pixels.end()));
  CHECK(d.Y_train.to_vector<uint8_t>() == std::vector<uint8_t>{9, 0, 5});
  CHECK(d.X_test.shape() == Shape{1, 1, 28, 28});
  CHECK(d.Y_test.to_vector<uint8_t>() == std::vector<uint8_t>{7});

  write_gz(dir.path / "t10k-labels-idx1-ubyte.gz", idx_file(0x08, {2}, "\x07\x01", 1));
  m = error_of([&] { nn::datasets::fashion_mnist(dir.path.string()); });
  CHECK(m.find("t10k-labels-idx1-ubyte.gz' holds uint8 of shape [2], not 1 uint8 labels") !=
        std::string::npos);
  write_gz(dir.path / "t10k-images-idx3-ubyte.gz",
           idx_file(0x08, {1, 27, 29}, pixels.substr(0, 783), 1));
  m = error_of([&] { nn::datasets::fashion_mnist(dir.path.string()); });
  CHECK(m.find("holds uint8 of shape [1, 27, 29], not uint8 images of shape [N, 28, 28]") !=
        std::string::npos);
}

TEST_CASE("fashion_mnist reads the Debian package's files as Python's gzip and numpy do") {
  const fs::path installed = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(installed / "train-images-idx3-ubyte.gz")) {
    MESSAGE("skipped: dataset-fashion-mnist is not installed");
    return;
  }
  tinyt_test::ScopedEnv env;
  env.set("FASHION_MNIST_DIR", std::nullopt);  // the default directory
  const auto d = nn::datasets::fashion_mnist();
  REQUIRE(d.X_train.shape() == Shape{60000, 1, 28, 28});
  REQUIRE(d.Y_train.shape() == Shape{60000});
  REQUIRE(d.X_test.shape() == Shape{10000, 1, 28, 28});
  REQUIRE(d.Y_test.shape() == Shape{10000});
  CHECK(d.X_train.dtype() == dtypes::uint8);
  CHECK(d.Y_train.dtype() == dtypes::uint8);

  // reference values from gzip.open(...).read() and numpy.frombuffer, computed when this was
  // written
  const auto ytr = d.Y_train.to_vector<uint8_t>(), yte = d.Y_test.to_vector<uint8_t>();
  CHECK(std::vector<uint8_t>(ytr.begin(), ytr.begin() + 12) ==
        std::vector<uint8_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5, 0, 9});
  CHECK(std::vector<uint8_t>(ytr.end() - 3, ytr.end()) == std::vector<uint8_t>{3, 0, 5});
  CHECK(std::vector<uint8_t>(yte.begin(), yte.begin() + 12) ==
        std::vector<uint8_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7, 4, 5});
  CHECK(std::vector<uint8_t>(yte.end() - 3, yte.end()) == std::vector<uint8_t>{8, 1, 5});
  std::vector<int> count_tr(10), count_te(10);
  for (uint8_t y : ytr) ++count_tr.at(y);  // a label past 9 throws
  for (uint8_t y : yte) ++count_te.at(y);
  CHECK(count_tr == std::vector<int>(10, 6000));
  CHECK(count_te == std::vector<int>(10, 1000));

  const auto xtr = d.X_train.to_vector<uint8_t>(), xte = d.X_test.to_vector<uint8_t>();
  const auto sum = [](auto first, auto last) { return std::accumulate(first, last, int64_t{0}); };
  CHECK(sum(xtr.begin(), xtr.end()) == 3431114169);
  CHECK(sum(xte.begin(), xte.end()) == 573469082);
  CHECK(sum(xtr.begin(), xtr.begin() + 784) == 76247);
  CHECK(sum(xtr.end() - 784, xtr.end()) == 16684);
  CHECK(sum(xte.begin(), xte.begin() + 784) == 33456);
  CHECK(sum(xte.end() - 784, xte.end()) == 24390);
  CHECK(std::vector<uint8_t>(xtr.begin() + 14 * 28, xtr.begin() + 15 * 28) ==
        std::vector<uint8_t>{0,   0,   1,   4,   6,   7,   2,   0,   0,   0,   0,   0,   237, 226,
                             217, 223, 222, 219, 222, 221, 216, 223, 229, 215, 218, 255, 77,  0});
  CHECK(std::vector<uint8_t>(xte.begin() + 20 * 28, xte.begin() + 21 * 28) ==
        std::vector<uint8_t>{16,  126, 171, 188, 188, 184, 171, 153, 135, 120, 126, 127, 146, 185,
                             195, 209, 208, 255, 209, 177, 245, 252, 251, 251, 247, 220, 206, 49});
  // and through the tensor API: image 0's brightest pixel is 255 at flat index 417
  CHECK(d.X_train[{0}].flatten().argmax().item<int32_t>() == 417);
}

// -- GGUF -----------------------------------------------------------------------------------------
namespace {
fs::path gguf_data(const char* name) { return fs::path(__FILE__).parent_path() / "data" / name; }

/// A GGUF file built byte by byte (little-endian), for the malformed cases.
struct GGUFBytes {
  std::string s;
  template <class T> GGUFBytes& num(T v) {
    s.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  GGUFBytes& str(const std::string& v) {
    num<uint64_t>(v.size());
    s += v;
    return *this;
  }
  /// The header: magic, version, tensor count, metadata count.
  static GGUFBytes header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
    GGUFBytes b;
    b.s = "GGUF";
    return b.num<uint32_t>(version).num<uint64_t>(tensors).num<uint64_t>(kvs);
  }
  /// One tensor info: name, dims (innermost first, as GGUF lists them), type, offset.
  GGUFBytes& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).num<uint32_t>(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) num<uint64_t>(d);
    return num<uint32_t>(type).num<uint64_t>(offset);
  }
  /// Zeros up to the next multiple of 32 (the default alignment), then `data`.
  GGUFBytes& data(const std::string& bytes) {
    s.append((32 - s.size() % 32) % 32, '\0');
    s += bytes;
    return *this;
  }
};
}  // namespace

TEST_CASE("gguf_load reads every value type and tensor type as the gguf package does") {
  // tests/data/make_gguf_reference.py wrote the file with the gguf package (llama.cpp's gguf-py)
  // and the values that package dequantizes it to
  const nn::state::GGUFFile g = nn::state::gguf_load(gguf_data("gguf_types.gguf").string());
  const auto ref = nn::state::safe_load(gguf_data("gguf_types_reference.safetensors").string());
  const auto& m = g.metadata;
  CHECK(m.at("general.architecture").as_string() == "tinyt-test");
  CHECK(m.at("test.u8").as_int() == 200);
  CHECK(m.at("test.i8").as_int() == -100);
  CHECK(m.at("test.u16").as_int() == 60000);
  CHECK(m.at("test.i16").as_int() == -30000);
  CHECK(m.at("test.u32").as_int() == 4000000000);
  CHECK(m.at("test.i32").as_int() == -2000000000);
  CHECK(m.at("test.f32").as_float() == 0.25);
  CHECK(m.at("test.bool").as_bool());
  CHECK(m.at("test.string").as_string() == "h\xc3\xa9llo, gguf");
  CHECK(std::get<uint64_t>(m.at("test.u64").value) == 18000000000000000000ull);
  CHECK_THROWS_AS(m.at("test.u64").as_int(), Error);  // past int64
  CHECK(m.at("test.i64").as_int() == -9000000000000000000);
  CHECK(m.at("test.f64").as_float() == -1.5e300);
  const auto& ints = m.at("test.ints").as_array();
  REQUIRE(ints.size() == 3);
  CHECK((ints[0].as_int() == 1 && ints[1].as_int() == -2 && ints[2].as_int() == 3));
  const auto& strings = m.at("test.strings").as_array();
  REQUIRE(strings.size() == 3);
  CHECK((strings[0].as_string() == "a" && strings[1].as_string().empty() && strings[2].as_string() == "ccc"));
  const auto& nested = m.at("test.nested").as_array();
  REQUIRE(nested.size() == 2);
  CHECK((nested[0].as_array().size() == 2 && nested[0].as_array()[1].as_int() == 2 && nested[1].as_array()[0].as_int() == 3));
  CHECK_THROWS_AS(m.at("test.string").as_int(), Error);

  const std::map<std::string, DType> dtypes_of{
      {"f32", dtypes::float32}, {"f16", dtypes::float16}, {"bf16", dtypes::bfloat16}, {"i32", dtypes::int32},
      {"i8", dtypes::int8},     {"q8_0", dtypes::float32}, {"q4_0", dtypes::float32}, {"q4_1", dtypes::float32},
      {"q4_k", dtypes::float32}, {"q6_k", dtypes::float32}};
  REQUIRE(g.tensors.size() == dtypes_of.size());
  for (const auto& entry : dtypes_of) {
    const std::string& name = entry.first;  // not a structured binding: INFO captures it
    INFO(name);
    const Tensor& t = g.tensors.at(name);
    CHECK(t.dtype() == entry.second);
    CHECK(t.shape() == ref.at(name).shape());
    CHECK(t.cast(dtypes::float32).to_vector<float>() == ref.at(name).to_vector<float>());
  }
}

TEST_CASE("gguf_load keeps quantized weights packed in memory, and a matmul with one gives the reference's result") {
  const nn::state::GGUFFile g = nn::state::gguf_load(gguf_data("gguf_types.gguf").string());
  const auto ref = nn::state::safe_load(gguf_data("gguf_types_reference.safetensors").string());
  for (const std::string name : {"q8_0", "q4_0", "q4_1", "q4_k", "q6_k"}) {
    INFO(name);
    const Tensor& w = g.tensors.at(name);
    // the only memory behind the tensor is its packed bytes (uint8): on the CPU the file's own,
    // mapped (GGUF aligns tensor data to 32 bytes), elsewhere a copy
    int64_t buffers = 0, packed = 0;
    for (const UOp& u : toposort(w.uop()))
      if (u.op() == Ops::BUFFER) {
        ++buffers;
        packed = static_cast<int64_t>(graph::buffer_of(u)->nbytes());
        CHECK(u.dtype() == dtypes::uint8);
        CHECK(graph::buffer_of(u)->borrowed() == (Device::default_device().rfind("CPU", 0) == 0));
      }
    CHECK(buffers == 1);
    // y = x @ w.T against a hand loop over the reference values, for one row of x (a decoding
    // step) and for 8 (a prompt)
    const auto shape = w.shape().to_vector();
    const int64_t rows = shape[0], cols = shape[1];
    const std::vector<float> wv = ref.at(name).to_vector<float>();
    for (const int64_t n : {1, 8}) {
      INFO(n, " rows of x");
      std::vector<float> xv(static_cast<size_t>(n * cols));
      for (size_t k = 0; k < xv.size(); ++k) xv[k] = static_cast<float>(k % 7) - 3.f;
      std::vector<float> want(static_cast<size_t>(n * rows), 0.f);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k = 0; k < cols; ++k)
            want[static_cast<size_t>(i * rows + r)] += xv[static_cast<size_t>(i * cols + k)] * wv[static_cast<size_t>(r * cols + k)];
      GlobalCounters::reset();
      const std::vector<float> got = Tensor::from_vector(xv, {n, cols}).matmul(w.T()).to_vector<float>();
      // the matmul's kernel unpacks the blocks where it reads them: no copy of a field (a nibble)
      // made first, nor on a CPU a float copy of the weight for several rows, so it moves the
      // packed bytes, x and y, no more; only Q4_K's 6-bit scales and mins are decoded first, by
      // small kernels, once a block
      const bool cpu = Device::default_device().rfind("CPU", 0) == 0;
      if (name == "q4_k") {
        CHECK(GlobalCounters::kernel_count <= 3);
      } else if (n == 1 || cpu) {
        CHECK(GlobalCounters::kernel_count == 1);
        CHECK(GlobalCounters::global_mem <= packed + 4 * n * (cols + rows));
      }
      for (size_t r = 0; r < want.size(); ++r) CHECK(got[r] == doctest::Approx(want[r]).epsilon(1e-5));
    }
  }
}

TEST_CASE("gguf_load decodes every kind of float16 block scale: zeros, subnormals, normals, infinities, NaN") {
  // Q8_0 blocks whose first value is 1 times the scale d: the value is d, as float32
  const std::vector<std::pair<uint16_t, float>> scales{
      {0x0000, 0.f},          {0x8000, -0.f},         {0x0001, 0x1p-24f},     {0x03ff, 1023 * 0x1p-24f},
      {0x0400, 0x1p-14f},     {0x3c00, 1.f},          {0xc000, -2.f},         {0x7bff, 65504.f},
      {0x7c00, INFINITY},     {0xfc00, -INFINITY},    {0x7e00, NAN}};
  std::string blocks;
  for (const auto& [bits, value] : scales) {
    blocks += static_cast<char>(bits & 0xff);
    blocks += static_cast<char>(bits >> 8);
    blocks += '\x01';
    blocks.append(31, '\0');
  }
  TempDir dir;
  const fs::path p = dir.path / "scales.gguf";
  write_file(p, GGUFBytes::header(1, 0).tensor("d", {32, scales.size()}, 8, 0).data(blocks).s);
  const std::vector<float> got = nn::state::gguf_load(p.string()).tensors.at("d").to_vector<float>();
  for (size_t i = 0; i < scales.size(); ++i) {
    INFO(i);
    const float want = scales[i].second, value = got[i * 32];
    if (std::isnan(want)) CHECK(std::isnan(value));
    else CHECK((value == want && std::signbit(value) == std::signbit(want)));
  }
}

TEST_CASE("gguf_load rejects malformed files with the file and the problem named") {
  TempDir dir;
  const fs::path p = dir.path / "bad.gguf";
  auto error_of = [&](const std::string& bytes) {
    write_file(p, bytes);
    return message_of<Error>([&] { nn::state::gguf_load(p.string()); });
  };
  auto f32 = [](std::initializer_list<float> v) {
    std::string s;
    for (float x : v) s.append(reinterpret_cast<const char*>(&x), 4);
    return s;
  };
  // a good file of this shape loads
  write_file(p, GGUFBytes::header(1, 0).tensor("w", {2}, 0, 0).data(f32({1, 2})).s);
  CHECK(nn::state::gguf_load(p.string()).tensors.at("w").to_vector<float>() == std::vector<float>{1, 2});

  CHECK(error_of("GGML" + GGUFBytes::header(0, 0).s.substr(4)).find("not a GGUF file") != std::string::npos);
  CHECK(error_of(GGUFBytes::header(0, 0, 1).s).find("GGUF version 1") != std::string::npos);
  CHECK(error_of("GGU").find("ends inside the magic") != std::string::npos);
  CHECK(error_of(GGUFBytes::header(0, 0).s.substr(0, 10)).find("ends inside the tensor count") != std::string::npos);
  // counts and lengths larger than the file
  CHECK(error_of(GGUFBytes::header(uint64_t{1} << 60, 0).s).find("the tensor count is 1152921504606846976") != std::string::npos);
  CHECK(error_of(GGUFBytes::header(0, 1000).s).find("metadata count is 1000") != std::string::npos);
  CHECK(error_of(GGUFBytes::header(0, 1).num<uint64_t>(uint64_t{1} << 62).num<uint64_t>(0).s).find("metadata key 0 claims") !=
        std::string::npos);
  CHECK(error_of(GGUFBytes::header(0, 1).str("k").num<uint32_t>(9).num<uint32_t>(4).num<uint64_t>(uint64_t{1} << 40).s)
            .find("the value of 'k''s length is 1099511627776") != std::string::npos);
  CHECK(error_of(GGUFBytes::header(0, 1).str("k").num<uint32_t>(13).num<uint64_t>(0).s).find("value type 13") != std::string::npos);
  CHECK(error_of(GGUFBytes::header(0, 2).str("k").num<uint32_t>(0).num<uint8_t>(1).str("k").num<uint32_t>(0).num<uint8_t>(2).s)
            .find("'k' appears twice") != std::string::npos);
  CHECK(error_of(GGUFBytes::header(0, 1).str("general.alignment").num<uint32_t>(4).num<uint32_t>(3).s)
            .find("general.alignment must be a power of two") != std::string::npos);
  // tensor infos
  CHECK(error_of(GGUFBytes::header(1, 0).tensor("w", {2}, 0, 64).data(f32({1, 2})).s).find("runs past the end") != std::string::npos);
  CHECK(error_of(GGUFBytes::header(1, 0).tensor("w", {4}, 0, 0).data(f32({1, 2})).s).find("runs past the end") != std::string::npos);
  CHECK(error_of(GGUFBytes::header(1, 0).tensor("w", {2}, 0, 8).data(f32({1, 2, 3, 4})).s).find("not aligned to 32") != std::string::npos);
  CHECK(error_of(GGUFBytes::header(1, 0).tensor("w", {16}, 8, 0).data(std::string(34, '\0')).s).find("not whole blocks of 32") !=
        std::string::npos);
  CHECK(error_of(GGUFBytes::header(1, 0).tensor("w", {2, 3, 4, 5, 6}, 0, 0).s).find("has 5 dims") != std::string::npos);
  CHECK(error_of(GGUFBytes::header(1, 0).tensor("w", {uint64_t{1} << 41}, 0, 0).s).find("too large") != std::string::npos);
  CHECK(error_of(GGUFBytes::header(2, 0).tensor("w", {2}, 0, 0).tensor("w", {2}, 0, 0).data(f32({1, 2})).s).find("'w' appears twice") !=
        std::string::npos);
  // tensor types: one GGUF does not define, one tinyt does not read
  const std::string unknown = GGUFBytes::header(1, 0).tensor("w", {32}, 99, 0).s;
  write_file(p, unknown);
  CHECK(message_of<DTypeError>([&] { nn::state::gguf_load(p.string()); }).find("type 99, which GGUF does not define") != std::string::npos);
  write_file(p, GGUFBytes::header(1, 0).tensor("w", {256}, 13, 0).s);
  CHECK(message_of<DTypeError>([&] { nn::state::gguf_load(p.string()); }).find("Q5_K, a type tinyt does not read") != std::string::npos);
  // the file names itself in every message
  CHECK(error_of("GGUF").find(p.string()) != std::string::npos);
}

TEST_CASE("gguf_load of every prefix of a real file is an Error or the whole file's tensors, never a crash") {
  const std::string whole = read_file(gguf_data("gguf_types.gguf"));
  const auto full = nn::state::gguf_load(gguf_data("gguf_types.gguf").string());
  TempDir dir;
  const fs::path p = dir.path / "cut.gguf";
  size_t errors = 0, cuts = 0;
  for (size_t n = 0; n < whole.size(); n += 7, ++cuts) {
    write_file(p, whole.substr(0, n));
    try {
      // only the padding after the last tensor's data may be cut
      const auto g = nn::state::gguf_load(p.string());
      INFO(n);
      REQUIRE(g.tensors.size() == full.tensors.size());
      for (const auto& [name, t] : g.tensors)
        CHECK(t.cast(dtypes::float32).to_vector<float>() == full.tensors.at(name).cast(dtypes::float32).to_vector<float>());
    } catch (const Error&) {
      ++errors;
    }
  }
  CHECK(errors + 2 >= cuts);  // the last 10 bytes are padding
}
