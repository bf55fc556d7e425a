// Files in and out: safetensors (nn::state::safe_save / safe_load) against Hugging Face's writer
// and against malformed files.
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

#include "helpers.hpp"

using namespace tinyt;
using tinyt_test::message_of;
using tinyt_test::TempDir;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

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

/// The message of the tinyt::Error `f` throws; fails the test when it throws none or another type.
template <class E = Error> std::string error_of(const std::function<void()>& f) {
  const std::string m = message_of<E>(f);
  CHECK_MESSAGE(m != "(nothing thrown)", "expected a ", typeid(E).name());
  return m;
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
  for (const auto& [name, t] : tensors) {
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
  for (const auto& [name, t] : tensors) {
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
