// A program that runs an ONNX model (include/tinyt/onnx.hpp), built three ways by
// tests/CMakeLists.txt, as program.cpp is: linked with the compiled library (tinyt::tinyt, whose
// src/onnx.cpp holds the runner), header-only (tinyt::header_only), and with the runner compiled
// in a second file that defines TINYT_IMPLEMENTATION (onnx_implementation.cpp). Each must print
// onnx_expected.txt. The model, y = Relu(x + b) with b an initializer, is encoded here byte by
// byte (protobuf's wire format: a key, number << 3 | type, then a varint or a length and bytes).
#include <cstring>
#include <iostream>
#include <string>

#include <tinyt/onnx.hpp>

using namespace tinyt;

namespace {
std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7f) | 0x80);
  return out + static_cast<char>(v);
}
std::string number(int field, uint64_t v) { return varint(static_cast<uint64_t>(field) << 3) + varint(v); }
std::string bytes(int field, const std::string& b) { return varint(static_cast<uint64_t>(field) << 3 | 2) + varint(b.size()) + b; }
// ValueInfoProto: a float32 value of one dim of 3
std::string float3(const std::string& name) {
  return bytes(1, name) + bytes(2, bytes(1, number(1, 1) + bytes(2, bytes(1, number(1, 3)))));
}
}  // namespace

int main() {
  const float b[3] = {1.0f, -5.0f, 2.0f};
  std::string raw(sizeof b, '\0');
  std::memcpy(raw.data(), b, sizeof b);
  const std::string graph = bytes(1, bytes(1, "x") + bytes(1, "b") + bytes(2, "s") + bytes(4, "Add")) +  // NodeProto
                            bytes(1, bytes(1, "s") + bytes(2, "y") + bytes(4, "Relu")) +
                            bytes(5, number(1, 3) + number(2, 1) + bytes(8, "b") + bytes(9, raw)) +  // TensorProto
                            bytes(11, float3("x")) + bytes(12, float3("y"));
  const std::string model = number(1, 8) + bytes(7, graph) + bytes(8, number(2, 17));  // IR 8, opset 17
  const onnx::Model m = onnx::load_bytes(model);
  const std::vector<float> y = m.run({{"x", Tensor::from_vector(std::vector<float>{1, 2, 3})}}).at("y").to_vector<float>();
  std::cout << "onnx opset " << m.opset() << ", input " << m.inputs().at(0).name << ", relu(x + b) =";
  for (float v : y) std::cout << " " << v;
  std::cout << "\n";
}
