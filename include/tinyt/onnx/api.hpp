// The ONNX runner's public part (API.md, "ONNX"): what a file that uses it parses. The reader
// and the ops are compiled where tinyt's definitions are (include/tinyt/config.hpp): in the
// tinyt::tinyt library (src/onnx.cpp), in the one file of a program that defines
// TINYT_IMPLEMENTATION, or inline everywhere with TINYT_HEADER_ONLY.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "../tensor.hpp"
#include "errors.hpp"

namespace tinyt::inline v0 {
namespace onnx {

/// A graph input's or output's dimension: a size, or a name ("batch") a run binds.
using Dim = std::variant<int64_t, std::string>;

/// A value a graph takes or gives: its name, element type and dims.
struct ValueInfo {
  std::string name;
  DType dtype = dtypes::void_;  // void: not given
  std::vector<Dim> shape;       // a dim with neither size nor name: an empty name
  bool has_shape = false;       // whether the file gives a shape (none: any rank)
};

struct Graph;

/// A node's attribute: its name, its kind (AttributeProto.AttributeType: 1 float, 2 int,
/// 3 string, 4 tensor, 5 graph, 6 floats, 7 ints, 8 strings, 9 tensors, 10 graphs) and value.
struct Attribute {
  std::string name;
  int64_t type = 0;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::optional<Tensor> t;
  std::shared_ptr<const Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<const Graph>> graphs;
};

/// One op of a graph, its inputs and outputs by value name ("" for an optional one left out).
struct Node {
  std::string name, op_type, domain;
  std::vector<std::string> inputs, outputs;
  std::vector<Attribute> attributes;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;                     // in the file's order (topological, as ONNX requires)
  std::map<std::string, Tensor> initializers;  // weights, by value name
  std::vector<ValueInfo> inputs, outputs, value_info;
};

/// A ModelProto read.
struct ModelData {
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;  // domain ("" the default one) -> version
  std::map<std::string, std::string> metadata;
  Graph graph;
};

/// An ONNX model loaded and run as one tinyt graph. Loading reads the file and checks every node
/// against the ops the runner knows (an unknown op is an UnsupportedError then, not at run
/// time); running binds the inputs by name and builds each node's outputs from its inputs,
/// lazily: nothing is computed until the outputs are realized or read, and then the whole model
/// is scheduled and fused at once.
class Model {
 public:
  explicit Model(ModelData data);

  /// The inputs a run takes: the graph's inputs that no initializer gives.
  std::vector<ValueInfo> inputs() const;
  const std::vector<ValueInfo>& outputs() const { return data_.graph.outputs; }
  const std::map<std::string, std::string>& metadata() const { return data_.metadata; }
  /// The default domain's opset version.
  int64_t opset() const { return opset_; }
  const ModelData& data() const { return data_; }

  /// The outputs, by name, for `inputs` by name: ShapeError for a missing or unknown input or a
  /// shape the model contradicts, DTypeError for a wrong element type, each naming the input.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) const;

 private:
  ModelData data_;
  int64_t opset_ = 1;
  // The nodes of a graph folded at load: their outputs, realized, and which nodes they are.
  struct Folded {
    std::map<std::string, Tensor> values;
    std::vector<bool> nodes;
  };
  Folded top_;                                // the model's graph's
  std::map<const Graph*, Folded> subgraphs_;  // If's, Loop's and Scan's bodies' (held by shared_ptr: stable)

  // Folds the nodes that read only initializers and constants (what an exporter left unfolded:
  // silero-vad's LSTM weights reordered by Slice and Concat in its If branches, PaddleOCR's
  // Constant nodes): each is run and realized once, at load, so that no run computes it again (a
  // TinyJit replay would replay its kernels every call). Not folded: random ops, nodes with graphs
  // (their bodies are folded on their own), a node whose output would be much larger than its
  // inputs (ConstantOfShape, Expand: computed where used), and a node that fails (its error comes
  // at run time, as without folding). `known`: the constant values `g` sees from around it.
  void fold(const Graph& g, std::map<std::string, Tensor> known, Folded& out);
  // every node of the graph and its subgraphs is an op the runner knows, in a form it supports
  void check(const Graph& g) const;
  // Builds the outputs of `g`'s nodes into `values` (which holds its inputs, its initializers and
  // the values of the graphs around it), in order; a node's graph attributes run the same way,
  // seeing `values` (the nodes folded at load are not run: their values are put in `values`)
  void run_nodes(const Graph& g, std::map<std::string, Tensor>& values) const;
  // Builds the outputs of one node into `values`, from the values there
  void run_node(const Node& node, std::map<std::string, Tensor>& values, int64_t opset) const;
  static void check_input(const ValueInfo& v, const Tensor& t);
  static std::string describe(const std::vector<Dim>& shape);
};

/// The model in the .onnx file at `path` (its tensors' external data read from files in its folder).
Model load(const std::string& path);
/// The model in `bytes` (an .onnx file's contents). A model whose tensors keep their values in
/// files next to it (external data) is loaded from its file: here it is an UnsupportedError.
Model load_bytes(std::string_view bytes);
/// A serialized TensorProto file (the conformance cases' input_K.pb and output_K.pb).
Tensor load_tensor(const std::string& path);

}  // namespace onnx
}  // namespace tinyt::inline v0
