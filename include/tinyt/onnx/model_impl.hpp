// The definitions of onnx::Model and of onnx::load, load_bytes and load_tensor (api.hpp declares
// them), with the reader and the ops they use; compiled where tinyt's definitions are.
#pragma once

#include "api.hpp"
#include "model_proto.hpp"
#include "ops.hpp"

namespace tinyt::inline v0 {
namespace onnx {

TINYT_INLINE Model::Model(ModelData data) : data_(std::move(data)) {
  const auto it = data_.opsets.find("");
  opset_ = it == data_.opsets.end() ? 1 : it->second;
  check(data_.graph);
  fold(data_.graph, {}, top_);
}

TINYT_INLINE std::vector<ValueInfo> Model::inputs() const {
  std::vector<ValueInfo> out;
  for (const ValueInfo& v : data_.graph.inputs)
    if (!data_.graph.initializers.count(v.name)) out.push_back(v);
  return out;
}

TINYT_INLINE std::map<std::string, Tensor> Model::run(const std::map<std::string, Tensor>& inputs) const {
  using tinyt::detail::cat;
  std::map<std::string, Tensor> values(data_.graph.initializers.begin(), data_.graph.initializers.end());
  for (const ValueInfo& v : this->inputs()) {
    const auto it = inputs.find(v.name);
    if (it == inputs.end()) throw ShapeError(cat("onnx::Model::run: input '", v.name, "' is missing"));
    check_input(v, it->second);
    values.insert_or_assign(v.name, it->second);
  }
  for (const auto& given : inputs) {
    // a named reference, not a structured binding: clang 14 cannot capture those in a lambda
    const std::string& name = given.first;
    if (std::none_of(data_.graph.inputs.begin(), data_.graph.inputs.end(), [&](const ValueInfo& v) { return v.name == name; }))
      throw ShapeError(cat("onnx::Model::run: the model has no input '", name, "'"));
  }
  run_nodes(data_.graph, values);
  std::map<std::string, Tensor> out;
  for (const ValueInfo& v : data_.graph.outputs) {
    const auto it = values.find(v.name);
    if (it == values.end()) throw ShapeError(cat("onnx::Model::run: output '", v.name, "' is computed by no node"));
    out.emplace(v.name, it->second);
  }
  return out;
}

TINYT_INLINE void Model::fold(const Graph& g, std::map<std::string, Tensor> known, Folded& out) {
  const auto is_input = [&g](const std::string& name) {
    return std::any_of(g.inputs.begin(), g.inputs.end(), [&](const ValueInfo& v) { return v.name == name; });
  };
  for (const ValueInfo& v : g.inputs) known.erase(v.name);
  for (const auto& [name, t] : g.initializers)  // (an initializer that is also an input is only a default)
    if (!is_input(name)) known.insert_or_assign(name, t);
  out.nodes.assign(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    bool has_graph = false;
    for (const Attribute& a : node.attributes) {
      if (a.g) fold(*a.g, known, subgraphs_[a.g.get()]), has_graph = true;
      for (const auto& sub : a.graphs) fold(*sub, known, subgraphs_[sub.get()]), has_graph = true;
    }
    const bool random = node.op_type.rfind("Random", 0) == 0 || node.op_type == "Multinomial" || node.op_type == "Bernoulli" || node.op_type == "Dropout";
    if (has_graph || random || !std::all_of(node.inputs.begin(), node.inputs.end(), [&](const std::string& n) { return n.empty() || known.count(n); }))
      continue;
    std::map<std::string, Tensor> values;
    int64_t in_elements = 0;
    for (const std::string& n : node.inputs)
      if (!n.empty()) values.insert_or_assign(n, known.at(n)), in_elements += known.at(n).numel();
    try {
      run_node(node, values, opset_);
      std::vector<Tensor> results;
      for (const std::string& n : node.outputs)
        if (!n.empty() && values.count(n)) results.push_back(values.at(n));
      const auto large = [&](const Tensor& t) { return t.numel() > std::max<int64_t>(in_elements, 1 << 16); };
      if (std::any_of(results.begin(), results.end(), large)) continue;
      realize_tensors(results);
    } catch (const Error&) {
      continue;
    }
    for (const std::string& n : node.outputs)
      if (!n.empty() && values.count(n)) known.insert_or_assign(n, values.at(n)), out.values.insert_or_assign(n, values.at(n));
    out.nodes[i] = true;
  }
}

TINYT_INLINE void Model::check(const Graph& g) const {
  for (const Node& n : g.nodes) {
    const std::string missing = op_of(n) ? unsupported_in(n, opset_) : "not supported";
    if (!missing.empty()) {
      const auto it = data_.opsets.find(n.domain == "ai.onnx" ? "" : n.domain);
      throw UnsupportedError(tinyt::detail::cat("onnx: op ", n.op_type, " of domain '", n.domain, "' (opset ",
                                                it == data_.opsets.end() ? 0 : it->second, "), node '", n.name, "': ", missing,
                                                op_of(n) ? " is not supported" : ""));
    }
    for (const Attribute& a : n.attributes) {
      if (a.g) check(*a.g);
      for (const auto& sub : a.graphs) check(*sub);
    }
  }
}

TINYT_INLINE void Model::run_nodes(const Graph& g, std::map<std::string, Tensor>& values) const {
  const auto sub = subgraphs_.find(&g);
  const Folded* folded = &g == &data_.graph ? &top_ : sub == subgraphs_.end() ? nullptr : &sub->second;
  if (folded)
    for (const auto& [name, t] : folded->values) values.insert_or_assign(name, t);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!folded || !folded->nodes[i]) run_node(g.nodes[i], values, opset_);
}

TINYT_INLINE void Model::run_node(const Node& node, std::map<std::string, Tensor>& values, int64_t opset) const {
  using tinyt::detail::cat;
  {
    std::vector<std::optional<Tensor>> in;
    for (const std::string& name : node.inputs) {
      if (name.empty()) {
        in.emplace_back();
        continue;
      }
      const auto it = values.find(name);
      if (it == values.end()) throw ShapeError(cat("onnx: ", node.op_type, " node '", node.name, "' reads '", name, "', which nothing computed before it"));
      in.emplace_back(it->second);
    }
    auto subgraph = [this, &values](const Graph& body, const std::vector<Tensor>& args) {
      std::map<std::string, Tensor> scope = values;  // (the body's names shadow the outer ones)
      for (const auto& weight : body.initializers) scope.insert_or_assign(weight.first, weight.second);
      if (args.size() != body.inputs.size())
        throw ShapeError(cat("onnx: graph '", body.name, "' takes ", body.inputs.size(), " inputs, given ", args.size()));
      for (size_t i = 0; i < args.size(); ++i) scope.insert_or_assign(body.inputs[i].name, args[i]);
      run_nodes(body, scope);
      std::vector<Tensor> out;
      for (const ValueInfo& v : body.outputs) {
        const auto it = scope.find(v.name);
        if (it == scope.end()) throw ShapeError(cat("onnx: graph '", body.name, "': output '", v.name, "' is computed by no node"));
        out.push_back(it->second);
      }
      return out;
    };
    const std::vector<Tensor> out = (*op_of(node))(OpCall{node, in, opset, subgraph});
    for (size_t i = 0; i < node.outputs.size() && i < out.size(); ++i)
      if (!node.outputs[i].empty()) values.insert_or_assign(node.outputs[i], out[i]);
  }
}

TINYT_INLINE void Model::check_input(const ValueInfo& v, const Tensor& t) {
  using tinyt::detail::cat;
  if (v.dtype != dtypes::void_ && t.dtype() != v.dtype)
    throw DTypeError(cat("onnx::Model::run: input '", v.name, "' is ", v.dtype.name(), ", given ", t.dtype().name()));
  if (!v.has_shape) return;
  const std::vector<int64_t> dims = t.shape().to_vector();
  bool fits = dims.size() == v.shape.size();
  for (size_t i = 0; fits && i < dims.size(); ++i)
    if (const int64_t* n = std::get_if<int64_t>(&v.shape[i])) fits = *n == dims[i];
  if (!fits) throw ShapeError(cat("onnx::Model::run: input '", v.name, "' has shape ", to_string(t.shape()), "; the model says ", describe(v.shape)));
}

TINYT_INLINE std::string Model::describe(const std::vector<Dim>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    s += i ? ", " : "";
    s += std::holds_alternative<int64_t>(shape[i]) ? std::to_string(std::get<int64_t>(shape[i])) : std::get<std::string>(shape[i]);
  }
  return s + ")";
}

TINYT_INLINE Model load_bytes(std::string_view bytes) { return Model(read_model(bytes)); }

TINYT_INLINE Model load(const std::string& path) {
  // mapped, not read: the weights' bytes become CPU tensors in place
  Source source{MappedFile::open(path, "onnx::load"), std::filesystem::absolute(path).parent_path().string(), {}};
  return Model(read_model(source.file->bytes(), &source));
}

TINYT_INLINE Tensor load_tensor(const std::string& path) {
  Source source{MappedFile::open(path, "onnx::load_tensor"), {}, {}};
  return read_tensor(proto::Reader(source.file->bytes(), 0, "TensorProto"), &source).value;
}

}  // namespace onnx
}  // namespace tinyt::inline v0
