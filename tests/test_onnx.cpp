// ONNX (include/tinyt/onnx.hpp): the protobuf wire format its files are written in
// (onnx/protobuf.hpp), the TensorProto and ModelProto messages (onnx/tensor_proto.hpp,
// onnx/model_proto.hpp), and onnx::Model running a graph. Inputs are bytes encoded here, by hand
// after the format's documentation (its worked examples: 150 as 08 96 01, "testing", the packed
// 3, 270, 86942) and onnx.proto's field numbers; values are checked against loops written here.
// Every malformed input is a FormatError naming the message, the field and the offset, never a
// read outside the bytes (every prefix of a message, a tensor and a model is tried).
#include <doctest/doctest.h>

#include <cctype>
#include <fstream>
#include <tinyt/onnx/model_proto.hpp>
#include <tinyt/onnx/protobuf.hpp>
#include <tinyt/onnx.hpp>

#include "helpers.hpp"

using namespace tinyt;
using onnx::proto::Field;
using onnx::proto::Reader;
using onnx::proto::WireType;

namespace {
std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(static_cast<char>(x));
  return s;
}
// every field of a message, read
std::vector<Field> fields(std::string_view message) {
  Reader r(message, 0, "Test");
  std::vector<Field> out;
  Field f;
  while (r.next(f)) out.push_back(f);
  return out;
}
std::string decode_error(std::string_view message) {
  return tinyt_test::message_of<onnx::FormatError>([&] { (void)fields(message); });
}
}  // namespace

TEST_CASE("onnx protobuf: the documentation's examples decode to their values") {
  // field 1 = 150 (a varint), field 2 = "testing", field 6 = packed [3, 270, 86942]
  const std::string message = bytes({0x08, 0x96, 0x01}) + bytes({0x12, 0x07}) + "testing" + bytes({0x32, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05});
  const std::vector<Field> f = fields(message);
  REQUIRE(f.size() == 3);
  const Reader r(message, 0, "Test");
  CHECK(f[0].number == 1);
  CHECK(r.integer(f[0]) == 150);
  CHECK(f[1].number == 2);
  CHECK(r.string(f[1]) == "testing");
  CHECK(f[1].offset == 3);
  CHECK(f[1].payload == 5);
  std::vector<int64_t> packed;
  r.integers(f[2], packed);
  CHECK(packed == std::vector<int64_t>{3, 270, 86942});
  // the same field unpacked, one value per field, appends the same way
  std::vector<int64_t> unpacked;
  for (const Field& x : fields(bytes({0x30, 0x03, 0x30, 0x8e, 0x02, 0x30, 0x9e, 0xa7, 0x05}))) r.integers(x, unpacked);
  CHECK(unpacked == packed);
}

TEST_CASE("onnx protobuf: negative integers, floats, doubles and nested messages") {
  // an int64 of -1: ten bytes, the 64-bit two's complement
  const std::string minus_one = bytes({0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01});
  // float 1.5 (0x3fc00000) as field 3 fixed32; double 2.5 (0x4004000000000000) as field 4 fixed64
  const std::string f32 = bytes({0x1d, 0x00, 0x00, 0xc0, 0x3f});
  const std::string f64 = bytes({0x21, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x40});
  // field 5: a message holding field 1 = 7
  const std::string nested = bytes({0x2a, 0x02, 0x08, 0x07});
  const std::string message = minus_one + f32 + f64 + nested;
  const Reader r(message, 100, "Outer");
  const std::vector<Field> f = fields(message);
  REQUIRE(f.size() == 4);
  CHECK(r.integer(f[0]) == -1);
  CHECK(f[1].type == WireType::fixed32);
  CHECK(r.float32(f[1]) == 1.5f);
  CHECK(r.float64(f[2]) == 2.5);
  Reader inner = r.message(f[3], "Inner");
  Field x;
  REQUIRE(inner.next(x));
  CHECK(x.number == 1);
  CHECK(inner.integer(x) == 7);
  CHECK(!inner.next(x));
  // packed floats and doubles, and the unpacked forms
  std::vector<float> floats;
  r.floats(fields(bytes({0x0a, 0x08, 0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x20, 0xc1}))[0], floats);  // 1.5, -10
  r.floats(f[1], floats);
  CHECK(floats == std::vector<float>{1.5f, -10.0f, 1.5f});
  std::vector<double> doubles;
  r.floats(f[2], doubles);
  CHECK(doubles == std::vector<double>{2.5});
  // a field of the wrong wire type for what is asked
  CHECK(tinyt_test::message_of<onnx::FormatError>([&] { (void)r.string(f[0]); }).find("field 1 is varint, expected length-delimited") !=
        std::string::npos);
  CHECK_THROWS_AS(r.float64(f[1]), onnx::FormatError);
}

TEST_CASE("onnx protobuf: malformed bytes are a FormatError naming the field and its offset") {
  CHECK(decode_error(bytes({0x08, 0x96, 0x01, 0x12, 0x05, 0x61})).find("Test at offset 3: field 2: a length of 5 bytes runs past the end") !=
        std::string::npos);
  CHECK(decode_error(bytes({0x08, 0x80})).find("cut off") != std::string::npos);
  CHECK(decode_error(bytes({0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00})).find("does not fit 64 bits (its 10th byte is 128)") !=
        std::string::npos);  // longer than 10 bytes
  CHECK(decode_error(bytes({0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})).find("does not fit 64 bits") != std::string::npos);
  CHECK(decode_error(bytes({0x0b})).find("a group") != std::string::npos);
  CHECK(decode_error(bytes({0x0e})).find("wire type 6 (no such type)") != std::string::npos);
  CHECK(decode_error(bytes({0x00})).find("field number 0") != std::string::npos);
  CHECK(decode_error(bytes({0x1d, 0x00, 0x00})).find("a 4-byte value is cut off") != std::string::npos);
  // packed floats of a length that is not a multiple of 4
  const Reader r("", 0, "Test");
  std::vector<float> floats;
  CHECK(tinyt_test::message_of<onnx::FormatError>([&] { r.floats(fields(bytes({0x0a, 0x03, 0x00, 0x00, 0x00}))[0], floats); })
            .find("3 bytes of packed floats") != std::string::npos);
  // a packed varint cut off inside its field
  std::vector<int64_t> ints;
  CHECK_THROWS_AS(r.integers(fields(bytes({0x0a, 0x02, 0x01, 0x80}))[0], ints), onnx::FormatError);
  // an error inside a nested message names its offset in the whole file: field 1 = 1, then
  // field 5, a message of 3 bytes (at offset 4) whose second field's length is missing
  const std::string outer = bytes({0x08, 0x01, 0x2a, 0x03, 0x08, 0x01, 0x12});
  Reader o(outer, 0, "Outer");
  Field f, g;
  REQUIRE(o.next(f));
  REQUIRE(o.next(f));
  Reader inner = o.message(f, "Inner");
  REQUIRE(inner.next(g));
  CHECK(tinyt_test::message_of<onnx::FormatError>([&] { (void)inner.next(g); }).find("Inner at offset 6: a length is cut off by the end of the Inner") !=
        std::string::npos);
}

TEST_CASE("onnx protobuf: every prefix of a message either reads whole fields or is a FormatError") {
  const std::string message = bytes({0x08, 0x96, 0x01}) + bytes({0x12, 0x07}) + "testing" + bytes({0x32, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05}) +
                              bytes({0x1d, 0x00, 0x00, 0xc0, 0x3f}) + bytes({0x2a, 0x02, 0x08, 0x07});
  const std::vector<size_t> boundaries{0, 3, 12, 20, 25, 29};  // where a field ends
  for (size_t n = 0; n <= message.size(); ++n) {
    INFO("prefix of ", n, " bytes");
    const std::string prefix = message.substr(0, n);  // its own allocation: ASan sees a read past it
    const bool whole = std::find(boundaries.begin(), boundaries.end(), n) != boundaries.end();
    if (whole) {
      CHECK(fields(prefix).size() == static_cast<size_t>(std::find(boundaries.begin(), boundaries.end(), n) - boundaries.begin()));
    } else {
      CHECK_THROWS_AS(fields(prefix), onnx::FormatError);
    }
  }
}

// ---- TensorProto (include/tinyt/onnx/tensor_proto.hpp), from messages encoded here after
// onnx.proto's field numbers: 1 dims, 2 data_type, 4 float_data, 5 int32_data, 7 int64_data,
// 8 name, 9 raw_data, 10 double_data, 11 uint64_data, 14 data_location

namespace {
std::string varint(uint64_t v) {
  std::string s;
  do {
    s.push_back(static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)));
    v >>= 7;
  } while (v);
  return s;
}
std::string key(int number, int wire) { return varint(static_cast<uint64_t>(number) << 3 | static_cast<uint64_t>(wire)); }
std::string int_field(int number, int64_t v) { return key(number, 0) + varint(static_cast<uint64_t>(v)); }
std::string bytes_field(int number, const std::string& payload) { return key(number, 2) + varint(payload.size()) + payload; }
template <class T> std::string le(T v) {
  std::string s(sizeof(T), '\0');
  std::memcpy(s.data(), &v, sizeof(T));
  return s;
}
std::string packed_ints(int number, const std::vector<int64_t>& v) {
  std::string payload;
  for (int64_t x : v) payload += varint(static_cast<uint64_t>(x));
  return bytes_field(number, payload);
}
onnx::NamedTensor tensor_of(const std::string& message) { return onnx::read_tensor(Reader(message, 0, "TensorProto")); }
}  // namespace

TEST_CASE("onnx TensorProto: values from raw_data and from each typed field, as the element type") {
  {  // float [2, 3] in packed float_data, named
    std::string floats;
    for (float v : {0.5f, -1.0f, 2.0f, 3.25f, -0.0f, 1e30f}) floats += le(v);
    const onnx::NamedTensor t = tensor_of(packed_ints(1, {2, 3}) + int_field(2, 1) + bytes_field(4, floats) + bytes_field(8, "w"));
    CHECK(t.name == "w");
    CHECK(t.value.shape() == Shape{2, 3});
    CHECK(t.value.dtype() == dtypes::float32);
    CHECK(t.value.to_vector<float>() == std::vector<float>{0.5f, -1.0f, 2.0f, 3.25f, -0.0f, 1e30f});
  }
  {  // an int64 scalar (no dims) in raw_data, little-endian
    const onnx::NamedTensor t = tensor_of(int_field(2, 7) + bytes_field(9, le<int64_t>(-5000000000)));
    CHECK(t.value.shape() == Shape{});
    CHECK(t.value.to_vector<int64_t>() == std::vector<int64_t>{-5000000000});
  }
  {  // float16 as its bits in int32_data (1.0 = 0x3c00, -2.0 = 0xc000), unpacked
    const onnx::NamedTensor t = tensor_of(int_field(1, 2) + int_field(2, 10) + int_field(5, 0x3c00) + int_field(5, 0xc000));
    CHECK(t.value.dtype() == dtypes::float16);
    CHECK(t.value.cast(dtypes::float32).to_vector<float>() == std::vector<float>{1.0f, -2.0f});
  }
  {  // bool and int8 in int32_data (an int32's -3 is a 10-byte varint)
    CHECK(tensor_of(int_field(1, 3) + int_field(2, 9) + packed_ints(5, {1, 0, 1})).value.to_vector<bool>() == std::vector<bool>{true, false, true});
    CHECK(tensor_of(int_field(1, 2) + int_field(2, 3) + packed_ints(5, {-3, 127})).value.to_vector<int8_t>() == std::vector<int8_t>{-3, 127});
  }
  {  // uint64 above 2^63 in uint64_data, double in double_data, an empty tensor
    const uint64_t big = (uint64_t{1} << 63) + 5;
    CHECK(tensor_of(int_field(1, 1) + int_field(2, 13) + key(11, 0) + varint(big)).value.to_vector<uint64_t>() == std::vector<uint64_t>{big});
    CHECK(tensor_of(int_field(1, 1) + int_field(2, 11) + bytes_field(10, le(2.5))).value.to_vector<double>() == std::vector<double>{2.5});
    const onnx::NamedTensor empty = tensor_of(packed_ints(1, {0, 4}) + int_field(2, 1));
    CHECK(empty.value.shape() == Shape{0, 4});
  }
  {  // a .pb file: load_tensor
    const tinyt_test::TempDir tmp;
    const std::string dir = tmp.path.string(), path = dir + "/input_0.pb";
    {
      std::ofstream out(path, std::ios::binary);
      out << packed_ints(1, {3}) + int_field(2, 6) + packed_ints(5, {1, -2, 3});
    }
    CHECK(onnx::load_tensor(path).to_vector<int32_t>() == std::vector<int32_t>{1, -2, 3});
    CHECK_THROWS_AS(onnx::load_tensor(dir + "/none.pb"), Error);
  }
}

TEST_CASE("onnx TensorProto: wrong counts, sizes and fields are FormatErrors, types tinyt lacks UnsupportedErrors") {
  const auto format = [](const std::string& m) { return tinyt_test::message_of<onnx::FormatError>([&] { (void)tensor_of(m); }); };
  const auto unsupported = [](const std::string& m) { return tinyt_test::message_of<onnx::UnsupportedError>([&] { (void)tensor_of(m); }); };
  CHECK(format(int_field(1, 3) + int_field(2, 6) + packed_ints(5, {1, 2}) + bytes_field(8, "x")).find("TensorProto 'x': 2 values for 3 elements") !=
        std::string::npos);
  CHECK(format(int_field(1, 2) + int_field(2, 1) + bytes_field(9, "abc")).find("raw_data holds 3 bytes; 2 elements of float32 are 8") !=
        std::string::npos);
  CHECK(format(int_field(1, 1) + int_field(2, 1) + bytes_field(9, le(1.0f)) + bytes_field(4, le(1.0f))).find("more than one field") != std::string::npos);
  CHECK(format(int_field(1, 1) + int_field(2, 6) + bytes_field(4, le(1.0f))).find("float_data does not hold int32 values") != std::string::npos);
  CHECK(format(int_field(1, -2) + int_field(2, 1)).find("a dimension of -2") != std::string::npos);
  CHECK(format(int_field(1, int64_t{1} << 40) + int_field(1, int64_t{1} << 40) + int_field(2, 1)).find("a dimension of") != std::string::npos);
  CHECK(unsupported(int_field(1, 1) + int_field(2, 8)).find("element type 8 (STRING)") != std::string::npos);
  CHECK(unsupported(int_field(1, 1) + int_field(2, 14)).find("(COMPLEX64) has no tinyt dtype") != std::string::npos);
  CHECK(unsupported(int_field(1, 1) + int_field(2, 1) + int_field(14, 1)).find("external file") != std::string::npos);
  // every prefix of a valid message: a tensor or a typed error, nothing else
  std::string floats;
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) floats += le(v);
  const std::string message = packed_ints(1, {2, 2}) + int_field(2, 1) + bytes_field(4, floats) + bytes_field(8, "weights");
  for (size_t n = 0; n < message.size(); ++n) {
    const std::string prefix = message.substr(0, n);
    try {
      (void)tensor_of(prefix);
    } catch (const onnx::FormatError&) {
    } catch (const onnx::UnsupportedError&) {  // a prefix before data_type: UNDEFINED
    }
  }
}

// ---- ModelProto and what it holds (include/tinyt/onnx/model_proto.hpp)
namespace {
std::string float_field(int number, float v) { return key(number, 5) + le(v); }
std::string value_info(const std::string& name, int elem_type, const std::vector<std::string>& dims) {
  std::string shape;
  for (const std::string& d : dims)
    shape += bytes_field(1, std::isdigit(static_cast<unsigned char>(d[0])) ? int_field(1, std::stoll(d)) : bytes_field(2, d));
  const std::string tensor_type = int_field(1, elem_type) + bytes_field(2, shape);
  return bytes_field(1, name) + bytes_field(2, bytes_field(1, tensor_type));
}
std::string node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out, const std::string& attributes = "") {
  std::string n;
  for (const std::string& x : in) n += bytes_field(1, x);
  for (const std::string& x : out) n += bytes_field(2, x);
  return n + bytes_field(4, op) + attributes;
}
// a graph whose one node has a graph attribute, `depth` deep
std::string nested(int depth) {
  std::string g = bytes_field(1, node("Identity", {"a"}, {"b"}));
  for (int i = 0; i < depth; ++i) g = bytes_field(1, node("If", {"c"}, {"b"}, bytes_field(5, bytes_field(1, "then_branch") + int_field(20, 5) + bytes_field(6, g))));
  return g;
}
}  // namespace

TEST_CASE("onnx ModelProto: opsets, metadata, nodes with each kind of attribute, initializers, inputs with named dims") {
  const std::string sub = bytes_field(1, node("Identity", {"x"}, {"z"})) + bytes_field(2, "branch");
  std::string floats;
  for (float v : {1.0f, 2.0f}) floats += le(v);
  const std::string attributes = bytes_field(5, bytes_field(1, "alpha") + int_field(20, 1) + float_field(2, 0.5f)) +
                                 bytes_field(5, bytes_field(1, "axes") + int_field(20, 7) + packed_ints(8, {0, -1})) +
                                 bytes_field(5, bytes_field(1, "mode") + int_field(20, 3) + bytes_field(4, "nearest")) +
                                 bytes_field(5, bytes_field(1, "value") + int_field(20, 4) + bytes_field(5, int_field(2, 7) + bytes_field(9, le<int64_t>(3)))) +
                                 bytes_field(5, bytes_field(1, "then_branch") + int_field(20, 5) + bytes_field(6, sub));
  const std::string graph = bytes_field(1, node("Add", {"x", "w"}, {"y"}, bytes_field(3, "add0") + attributes)) + bytes_field(2, "main") +
                            bytes_field(5, packed_ints(1, {2}) + int_field(2, 1) + bytes_field(4, floats) + bytes_field(8, "w")) +
                            bytes_field(11, value_info("x", 1, {"batch", "2"})) + bytes_field(12, value_info("y", 1, {"batch", "2"}));
  const std::string model = int_field(1, 8) + bytes_field(8, bytes_field(1, "") + int_field(2, 17)) +
                            bytes_field(8, bytes_field(1, "ai.onnx.ml") + int_field(2, 3)) +
                            bytes_field(14, bytes_field(1, "author") + bytes_field(2, "tinyt")) + bytes_field(7, graph);
  const onnx::ModelData m = onnx::read_model(model);
  CHECK(m.ir_version == 8);
  CHECK(m.opsets == std::map<std::string, int64_t>{{"", 17}, {"ai.onnx.ml", 3}});
  CHECK(m.metadata == std::map<std::string, std::string>{{"author", "tinyt"}});
  CHECK(m.graph.name == "main");
  REQUIRE(m.graph.nodes.size() == 1);
  const onnx::Node& add = m.graph.nodes[0];
  CHECK(add.op_type == "Add");
  CHECK(add.name == "add0");
  CHECK(add.inputs == std::vector<std::string>{"x", "w"});
  CHECK(add.outputs == std::vector<std::string>{"y"});
  REQUIRE(add.attributes.size() == 5);
  CHECK(add.attributes[0].f == 0.5f);
  CHECK(add.attributes[1].ints == std::vector<int64_t>{0, -1});
  CHECK(add.attributes[2].s == "nearest");
  REQUIRE(add.attributes[3].t);
  CHECK(add.attributes[3].t->to_vector<int64_t>() == std::vector<int64_t>{3});
  REQUIRE(add.attributes[4].g);
  CHECK(add.attributes[4].g->name == "branch");
  CHECK(add.attributes[4].g->nodes.at(0).op_type == "Identity");
  REQUIRE(m.graph.initializers.count("w"));
  CHECK(m.graph.initializers.at("w").to_vector<float>() == std::vector<float>{1.0f, 2.0f});
  REQUIRE(m.graph.inputs.size() == 1);
  CHECK(m.graph.inputs[0].name == "x");
  CHECK(m.graph.inputs[0].dtype == dtypes::float32);
  CHECK(m.graph.inputs[0].shape == std::vector<onnx::Dim>{std::string("batch"), int64_t{2}});
  CHECK(m.graph.outputs.at(0).name == "y");
  // every prefix: a model, or a typed error
  for (size_t n = 0; n < model.size(); ++n) {
    const std::string prefix = model.substr(0, n);
    try {
      (void)onnx::read_model(prefix);
    } catch (const onnx::FormatError&) {
    } catch (const onnx::UnsupportedError&) {
    }
  }
}

TEST_CASE("onnx ModelProto: no graph, an unnamed or repeated initializer, no opset and graphs nested past the limit are FormatErrors") {
  const auto format = [](const std::string& m) { return tinyt_test::message_of<onnx::FormatError>([&] { (void)onnx::read_model(m); }); };
  CHECK(format(int_field(1, 8)).find("no graph") != std::string::npos);
  const std::string w = bytes_field(5, int_field(1, 1) + int_field(2, 1) + bytes_field(4, le(1.0f)) + bytes_field(8, "w"));
  CHECK(format(bytes_field(7, bytes_field(5, int_field(1, 1) + int_field(2, 1) + bytes_field(4, le(1.0f))))).find("an initializer without a name") !=
        std::string::npos);
  CHECK(format(bytes_field(7, w + w)).find("initializer 'w' twice") != std::string::npos);
  // IR version 3 on must import an opset: the prefix of a file that ends before its opset_import
  CHECK(format(int_field(1, 8) + bytes_field(7, w)).find("IR version 8 and no opset_import") != std::string::npos);
  CHECK_NOTHROW(onnx::read_model(int_field(1, 8) + bytes_field(7, w) + bytes_field(8, int_field(2, 17))));
  CHECK_NOTHROW(onnx::read_model(bytes_field(7, nested(onnx::detail::max_graph_depth))));
  CHECK(format(bytes_field(7, nested(onnx::detail::max_graph_depth + 1))).find("graphs nest more than 64 deep") != std::string::npos);
}

TEST_CASE("onnx TensorProto: external data is read from a file in the model's folder, and only from there") {
  tinyt_test::TempDir dir;
  std::string weights = "skip me!";  // 8 bytes before the tensor's 12
  for (float v : {1.5f, -2.0f, 4.0f}) weights += le(v);
  std::ofstream(dir.path / "weights.bin", std::ios::binary) << weights;
  const auto entry = [](const std::string& k, const std::string& v) { return bytes_field(13, bytes_field(1, k) + bytes_field(2, v)); };
  // y = x + B, B's values in weights.bin at `offset`, `length` bytes
  const auto model = [&](const std::string& location, const std::string& offset, const std::string& length) {
    const std::string b = packed_ints(1, {3}) + int_field(2, 1) + bytes_field(8, "B") + entry("location", location) + entry("offset", offset) +
                          entry("length", length) + int_field(14, 1);
    const std::string graph = bytes_field(1, node("Add", {"x", "B"}, {"y"})) + bytes_field(5, b) + bytes_field(11, value_info("x", 1, {"3"})) +
                              bytes_field(12, value_info("y", 1, {"3"}));
    return int_field(1, 8) + bytes_field(8, bytes_field(1, "") + int_field(2, 17)) + bytes_field(7, graph);
  };
  const auto saved = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir.path / name, std::ios::binary) << bytes;
    return (dir.path / name).string();
  };
  const onnx::Model m = onnx::load(saved("model.onnx", model("weights.bin", "8", "12")));
  CHECK(m.run({{"x", Tensor::from_vector(std::vector<float>{1, 1, 1})}}).at("y").to_vector<float>() == std::vector<float>{2.5f, -1.0f, 5.0f});
  // given as bytes, the model has no folder to read from
  CHECK(tinyt_test::message_of<onnx::UnsupportedError>([&] { (void)onnx::load_bytes(model("weights.bin", "8", "12")); }).find("load it from its file") !=
        std::string::npos);
  // a location out of the folder, bytes past the file's end, a length that is not the tensor's
  const auto format = [&](const std::string& bytes) { return tinyt_test::message_of<onnx::FormatError>([&] { (void)onnx::load(saved("bad.onnx", bytes)); }); };
  CHECK(format(model("../weights.bin", "8", "12")).find("'../weights.bin' is not a file in the model's folder") != std::string::npos);
  CHECK(format(model("/etc/passwd", "0", "12")).find("is not a file in the model's folder") != std::string::npos);
  CHECK(format(model("weights.bin", "12", "12")).find("runs past") != std::string::npos);
  CHECK(format(model("weights.bin", "0", "8")).find("raw_data holds 8 bytes; 3 elements of float32 are 12") != std::string::npos);
  CHECK(format(model("weights.bin", "-1", "12")).find("offset '-1' is not a byte count") != std::string::npos);
  CHECK_THROWS_AS(onnx::load(saved("missing.onnx", model("nowhere.bin", "0", "12"))), Error);
}

TEST_CASE("onnx::load: weights are the mapped file's bytes in place where the device can use them, copied where not aligned") {
  // y = x * W + b (elementwise, 4 floats): W's raw_data at a file offset that is a multiple of 4,
  // b's at one that is not (a shorter or longer producer_name and name move them)
  const std::vector<float> w{0.5f, -1.0f, 2.0f, 3.25f}, b{1.0f, 0.25f, -4.0f, 8.0f};
  std::string w_bytes, b_bytes;
  for (float v : w) w_bytes += le(v);
  for (float v : b) b_bytes += le(v);
  const auto model = [&](size_t producer, size_t b_name) {
    const std::string graph = bytes_field(1, node("Mul", {"x", "W"}, {"t"})) + bytes_field(1, node("Add", {"t", std::string(b_name, 'b')}, {"y"})) +
                              bytes_field(5, packed_ints(1, {4}) + int_field(2, 1) + bytes_field(8, "W") + bytes_field(9, w_bytes)) +
                              bytes_field(5, packed_ints(1, {4}) + int_field(2, 1) + bytes_field(8, std::string(b_name, 'b')) + bytes_field(9, b_bytes)) +
                              bytes_field(11, value_info("x", 1, {"4"})) + bytes_field(12, value_info("y", 1, {"4"}));
    return int_field(1, 8) + bytes_field(2, std::string(producer, 'p')) + bytes_field(8, bytes_field(1, "") + int_field(2, 17)) + bytes_field(7, graph);
  };
  std::string bytes;
  for (size_t producer = 1; producer <= 4 && bytes.empty(); ++producer)
    for (size_t b_name = 1; b_name <= 4 && bytes.empty(); ++b_name) {
      const std::string m = model(producer, b_name);
      if (m.find(w_bytes) % 4 == 0 && m.find(b_bytes) % 4 != 0) bytes = m;
    }
  REQUIRE(!bytes.empty());
  tinyt_test::TempDir dir;
  const std::string path = (dir.path / "model.onnx").string();
  std::ofstream(path, std::ios::binary) << bytes;
  const auto memory = [](const Tensor& t) { return graph::buffer_of(graph::base_buffer(t.uop())); };
  const bool cpu = Device::default_device().rfind("CPU", 0) == 0;  // (the suite also runs with DEV=CL and DEV=EMU)
  Tensor weight;
  {
    const onnx::Model m = onnx::load(path);
    const std::map<std::string, Tensor>& init = m.data().graph.initializers;
    weight = init.at("W");
    const Tensor& bias = std::find_if(init.begin(), init.end(), [](const auto& kv) { return kv.first != "W"; })->second;
    CHECK(memory(weight)->borrowed() == cpu);
    CHECK_FALSE(memory(bias)->borrowed());  // (its bytes are not aligned for float: copied)
    const std::vector<float> x{2.0f, 4.0f, -1.0f, 0.5f};
    const std::vector<float> y = m.run({{"x", Tensor::from_vector(x)}}).at("y").to_vector<float>();
    for (size_t i = 0; i < 4; ++i) CHECK(y[i] == x[i] * w[i] + b[i]);
    CHECK_FALSE(memory(onnx::load_bytes(bytes).data().graph.initializers.at("W"))->borrowed());  // given as bytes: copied
  }
  // the mapping outlives the model while a tensor uses it, and writing into the tensor in place
  // changes this process's copy of the pages, not the file
  CHECK(weight.to_vector<float>() == w);
  weight.assign(weight * 2.0f).realize();
  CHECK(weight.to_vector<float>() == std::vector<float>{1.0f, -2.0f, 4.0f, 6.5f});
  CHECK(tinyt::detail::read_file(path).value() == bytes);
  CHECK(onnx::load(path).data().graph.initializers.at("W").to_vector<float>() == w);
  // a missing file and a folder are errors naming the operation and the path
  const std::string missing = tinyt_test::message_of<Error>([&] { (void)onnx::load((dir.path / "none.onnx").string()); });
  CHECK(missing.find("onnx::load: cannot map '") != std::string::npos);
  CHECK(missing.find("none.onnx': No such file") != std::string::npos);
  CHECK(tinyt_test::message_of<Error>([&] { (void)onnx::load(dir.path.string()); }).find("not a regular file") != std::string::npos);
  std::ofstream(dir.path / "empty.onnx", std::ios::binary) << "";
  CHECK(tinyt_test::message_of<onnx::FormatError>([&] { (void)onnx::load((dir.path / "empty.onnx").string()); }).find("no graph") != std::string::npos);
}

// ---- onnx::Model (include/tinyt/onnx.hpp): a model encoded here, run, against loops by hand
TEST_CASE("onnx Model: y = Softmax(Gemm(Relu(x), W, b, transB)) runs as a lazy tinyt graph and gives the hand-computed values") {
  // x: (batch, 3); W: (2, 3) used transposed; b: (2)
  const std::vector<float> w{0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.5f}, b{0.1f, -0.2f};
  std::string w_bytes, b_bytes;
  for (float v : w) w_bytes += le(v);
  for (float v : b) b_bytes += le(v);
  const std::string graph =
      bytes_field(1, node("Relu", {"x"}, {"r"})) +
      bytes_field(1, node("Gemm", {"r", "W", "b"}, {"g"}, bytes_field(5, bytes_field(1, "transB") + int_field(20, 2) + int_field(3, 1)))) +
      bytes_field(1, node("Softmax", {"g"}, {"y"}, bytes_field(5, bytes_field(1, "axis") + int_field(20, 2) + int_field(3, -1)))) +
      bytes_field(5, packed_ints(1, {2, 3}) + int_field(2, 1) + bytes_field(4, w_bytes) + bytes_field(8, "W")) +
      bytes_field(5, packed_ints(1, {2}) + int_field(2, 1) + bytes_field(9, b_bytes) + bytes_field(8, "b")) +
      bytes_field(11, value_info("x", 1, {"batch", "3"})) + bytes_field(12, value_info("y", 1, {"batch", "2"}));
  const std::string model = int_field(1, 8) + bytes_field(8, bytes_field(1, "") + int_field(2, 17)) + bytes_field(7, graph);
  const onnx::Model m = onnx::load_bytes(model);
  CHECK(m.opset() == 17);
  REQUIRE(m.inputs().size() == 1);
  CHECK(m.inputs()[0].name == "x");
  const std::vector<float> x{1.0f, -2.0f, 3.0f, -0.5f, 0.5f, 1.0f};
  GlobalCounters::reset();
  const std::map<std::string, Tensor> out = m.run({{"x", Tensor::from_vector(x, Shape{2, 3})}});
  CHECK(GlobalCounters::kernel_count == 0);  // lazy: nothing ran yet
  REQUIRE(out.count("y"));
  const std::vector<float> got = out.at("y").to_vector<float>();
  std::vector<double> want;
  for (int r = 0; r < 2; ++r) {
    double g[2];
    for (int j = 0; j < 2; ++j) {
      g[j] = b[static_cast<size_t>(j)];
      for (int k = 0; k < 3; ++k) g[j] += std::max(0.0f, x[static_cast<size_t>(r * 3 + k)]) * static_cast<double>(w[static_cast<size_t>(j * 3 + k)]);
    }
    const double m0 = std::max(g[0], g[1]), e0 = std::exp(g[0] - m0), e1 = std::exp(g[1] - m0);
    want.push_back(e0 / (e0 + e1));
    want.push_back(e1 / (e0 + e1));
  }
  tinyt_test::check_close(got, want, tinyt_test::Tol::f32(8));
  // misuse: a missing, an unknown, a wrongly typed and a wrongly shaped input
  CHECK(tinyt_test::message_of<ShapeError>([&] { (void)m.run({}); }).find("input 'x' is missing") != std::string::npos);
  CHECK(tinyt_test::message_of<ShapeError>([&] { (void)m.run({{"x", Tensor::from_vector(x, Shape{2, 3})}, {"z", Tensor::from_vector(x)}}); })
            .find("no input 'z'") != std::string::npos);
  CHECK(tinyt_test::message_of<DTypeError>([&] { (void)m.run({{"x", Tensor::from_vector(x, Shape{2, 3}).cast(dtypes::float16)}}); })
            .find("input 'x' is float32, given float16") != std::string::npos);
  CHECK(tinyt_test::message_of<ShapeError>([&] { (void)m.run({{"x", Tensor::from_vector(x, Shape{3, 2})}}); }).find("the model says (batch, 3)") !=
        std::string::npos);
  // an op the runner lacks is refused when the model is loaded, named with its node and opset
  const std::string unknown = bytes_field(7, bytes_field(1, node("FancyOp", {"x"}, {"y"}, bytes_field(3, "n1"))) + bytes_field(12, value_info("y", 1, {"1"}))) +
                              bytes_field(8, bytes_field(1, "") + int_field(2, 17));
  CHECK(tinyt_test::message_of<onnx::UnsupportedError>([&] { (void)onnx::load_bytes(unknown); }).find("op FancyOp of domain '' (opset 17), node 'n1'") !=
        std::string::npos);
}

TEST_CASE("onnx Model: nodes that read only initializers are computed once, when the model is loaded") {
  // y = x * (A + B), A and B initializers: the Add is folded at load, a run computes the Mul only
  std::string a_bytes, b_bytes;
  for (float v : {1.0f, 2.0f, 3.0f}) a_bytes += le(v);
  for (float v : {0.5f, -4.0f, 10.0f}) b_bytes += le(v);
  const std::string graph = bytes_field(1, node("Add", {"A", "B"}, {"s"})) + bytes_field(1, node("Mul", {"x", "s"}, {"y"})) +
                            bytes_field(5, packed_ints(1, {3}) + int_field(2, 1) + bytes_field(9, a_bytes) + bytes_field(8, "A")) +
                            bytes_field(5, packed_ints(1, {3}) + int_field(2, 1) + bytes_field(9, b_bytes) + bytes_field(8, "B")) +
                            bytes_field(11, value_info("x", 1, {"3"})) + bytes_field(12, value_info("y", 1, {"3"}));
  const std::string model = int_field(1, 8) + bytes_field(8, bytes_field(1, "") + int_field(2, 17)) + bytes_field(7, graph);
  GlobalCounters::reset();
  const onnx::Model m = onnx::load_bytes(model);
  CHECK(GlobalCounters::kernel_count == 1);  // A + B, at load
  Tensor y = m.run({{"x", Tensor::from_vector(std::vector<float>{2.0f, 1.0f, -1.0f})}}).at("y");
  GlobalCounters::reset();
  y.realize();
  CHECK(GlobalCounters::kernel_count == 1);
  CHECK(GlobalCounters::global_mem == 3 * 3 * 4);  // x and the folded sum read, y written: A and B are not read
  CHECK(y.to_vector<float>() == std::vector<float>{3.0f, -2.0f, -13.0f});
}

TEST_CASE("onnx Model: If takes the branch its condition names, the branches read the outer graph's values, a dim of -1 takes any size") {
  // y = If(c) then x + x else -x; x's one dim written as -1, as some exporters do
  const std::string then_graph = bytes_field(1, node("Add", {"x", "x"}, {"t"})) + bytes_field(12, value_info("t", 1, {}));
  const std::string else_graph = bytes_field(1, node("Neg", {"x"}, {"e"})) + bytes_field(12, value_info("e", 1, {}));
  auto graph_attr = [](const std::string& name, const std::string& g) { return bytes_field(5, bytes_field(1, name) + int_field(20, 5) + bytes_field(6, g)); };
  const std::string x_any = bytes_field(1, "x") + bytes_field(2, bytes_field(1, int_field(1, 1) + bytes_field(2, bytes_field(1, int_field(1, -1)))));
  const std::string graph = bytes_field(1, node("If", {"c"}, {"y"}, graph_attr("then_branch", then_graph) + graph_attr("else_branch", else_graph))) +
                            bytes_field(11, value_info("c", 9, {})) + bytes_field(11, x_any) + bytes_field(12, value_info("y", 1, {}));
  const onnx::Model m = onnx::load_bytes(bytes_field(7, graph) + bytes_field(8, bytes_field(1, "") + int_field(2, 17)));
  REQUIRE(m.inputs().size() == 2);
  CHECK(std::holds_alternative<std::string>(m.inputs()[1].shape.at(0)));  // -1: no size
  const Tensor x = Tensor::from_vector(std::vector<float>{1, -2, 3});
  CHECK(m.run({{"c", Tensor::full(Shape{}, true)}, {"x", x}}).at("y").to_vector<float>() == std::vector<float>{2, -4, 6});
  CHECK(m.run({{"c", Tensor::full(Shape{}, false)}, {"x", x.reshape({3})}}).at("y").to_vector<float>() == std::vector<float>{-1, 2, -3});
  CHECK(m.run({{"c", Tensor::full(Shape{}, false)}, {"x", Tensor::ones({5})}}).at("y").shape() == Shape{5});
}

TEST_CASE("onnx Model: a form of a known op the runner lacks is refused when the model is loaded, naming the attribute") {
  auto model_with = [](const std::string& op_node) {
    return bytes_field(7, bytes_field(1, op_node) + bytes_field(11, value_info("x", 1, {"4"})) + bytes_field(12, value_info("y", 1, {"4"}))) +
           bytes_field(8, bytes_field(1, "") + int_field(2, 18));
  };
  const std::string string_attr = bytes_field(1, "mode") + int_field(20, 3) + bytes_field(4, "mirror");
  const std::string pad = node("Pad", {"x", "p"}, {"y"}, bytes_field(3, "pad1") + bytes_field(5, string_attr));
  CHECK(tinyt_test::message_of<onnx::UnsupportedError>([&] { (void)onnx::load_bytes(model_with(pad)); })
            .find("op Pad of domain '' (opset 18), node 'pad1': mode 'mirror' is not supported") != std::string::npos);
  const std::string relu = node("Relu", {"x"}, {"y"});
  CHECK_NOTHROW((void)onnx::load_bytes(model_with(relu)));
}
