// An ONNX model's structure as the file holds it: ModelProto (IR version, opsets, metadata, the
// graph), GraphProto (nodes, initializers, inputs, outputs, value_info), NodeProto (op, inputs
// and outputs by name, attributes), AttributeProto (a value of one of its kinds, subgraphs of If,
// Loop and Scan included) and ValueInfoProto (a value's element type and dims, a dim a number or
// a name). Read into plain structs; running them is the runner's.
//
// Field numbers (onnx.proto):
//   ModelProto        1 ir_version, 7 graph, 8 opset_import, 14 metadata_props
//   OperatorSetIdProto 1 domain, 2 version      StringStringEntryProto 1 key, 2 value
//   GraphProto        1 node, 2 name, 5 initializer, 11 input, 12 output, 13 value_info
//   NodeProto         1 input, 2 output, 3 name, 4 op_type, 5 attribute, 7 domain
//   AttributeProto    1 name, 2 f, 3 i, 4 s, 5 t, 6 g, 7 floats, 8 ints, 9 strings, 10 tensors,
//                     11 graphs, 20 type
//   ValueInfoProto    1 name, 2 type;  TypeProto 1 tensor_type;  TypeProto.Tensor 1 elem_type,
//                     2 shape;  TensorShapeProto 1 dim;  Dimension 1 dim_value, 2 dim_param
#pragma once

#include <map>
#include <memory>
#include <variant>

#include "api.hpp"
#include "tensor_proto.hpp"

namespace tinyt::inline v0 {
namespace onnx {

namespace detail {
/// How deep graphs may nest in attributes (an If inside a Loop inside ...): a file nesting deeper
/// is malformed, not a reason to exhaust the stack.
inline constexpr int max_graph_depth = 64;

inline std::pair<std::string, std::string> read_entry(proto::Reader r) {
  std::pair<std::string, std::string> kv;
  proto::Field f;
  while (r.next(f)) {
    if (f.number == 1) kv.first = r.string(f);
    if (f.number == 2) kv.second = r.string(f);
  }
  return kv;
}

inline ValueInfo read_value_info(proto::Reader r) {
  ValueInfo v;
  proto::Field f;
  while (r.next(f)) {
    if (f.number == 1) v.name = r.string(f);
    if (f.number != 2) continue;
    proto::Reader type = r.message(f, "TypeProto");
    proto::Field t;
    while (type.next(t)) {
      if (t.number != 1) continue;  // sequence, map, optional and sparse types: the runner says
      proto::Reader tensor = type.message(t, "TypeProto.Tensor");
      proto::Field x;
      while (tensor.next(x)) {
        if (x.number == 1) v.dtype = dtype_of(tensor.integer(x), tinyt::detail::cat("value '", v.name, "'"));
        if (x.number != 2) continue;
        v.has_shape = true;
        proto::Reader shape = tensor.message(x, "TensorShapeProto");
        proto::Field d;
        while (shape.next(d)) {
          if (d.number != 1) continue;
          proto::Reader dim = shape.message(d, "TensorShapeProto.Dimension");
          Dim value = std::string();  // neither a size nor a name: unknown, as an empty name
          proto::Field y;
          while (dim.next(y)) {
            // (a negative size, which some exporters write, is unknown too)
            if (y.number == 1) value = dim.integer(y) >= 0 ? Dim(dim.integer(y)) : Dim(std::string());
            if (y.number == 2) value = std::string(dim.string(y));
          }
          v.shape.push_back(std::move(value));
        }
      }
    }
  }
  return v;
}

/// Where a message is read: how deep its graph nests, and the model's file and folder (null for a
/// model given as bytes).
struct Where {
  int depth = 0;
  Source* source = nullptr;
  Where deeper() const { return {depth + 1, source}; }
};

Graph read_graph(proto::Reader r, const Where& at);

inline Attribute read_attribute(proto::Reader r, const Where& at) {
  Attribute a;
  proto::Field f;
  while (r.next(f)) {
    switch (f.number) {
      case 1: a.name = r.string(f); break;
      case 2: a.f = r.float32(f); break;
      case 3: a.i = r.integer(f); break;
      case 4: a.s = r.string(f); break;
      case 5: a.t = read_tensor(r.message(f, "TensorProto"), at.source).value; break;
      case 6: a.g = std::make_shared<const Graph>(read_graph(r.message(f, "GraphProto"), at.deeper())); break;
      case 7: r.floats(f, a.floats); break;
      case 8: r.integers(f, a.ints); break;
      case 9: a.strings.emplace_back(r.string(f)); break;
      case 10: a.tensors.push_back(read_tensor(r.message(f, "TensorProto"), at.source).value); break;
      case 11: a.graphs.push_back(std::make_shared<const Graph>(read_graph(r.message(f, "GraphProto"), at.deeper()))); break;
      case 20: a.type = r.integer(f); break;
      default: break;  // doc_string, ref_attr_name (functions), sparse tensors and type protos: the runner says
    }
  }
  return a;
}

inline Node read_node(proto::Reader r, const Where& at) {
  Node n;
  proto::Field f;
  while (r.next(f)) {
    switch (f.number) {
      case 1: n.inputs.emplace_back(r.string(f)); break;
      case 2: n.outputs.emplace_back(r.string(f)); break;
      case 3: n.name = r.string(f); break;
      case 4: n.op_type = r.string(f); break;
      case 5: n.attributes.push_back(read_attribute(r.message(f, "AttributeProto"), at)); break;
      case 7: n.domain = r.string(f); break;
      default: break;
    }
  }
  return n;
}

inline Graph read_graph(proto::Reader r, const Where& at) {
  proto::Field f;
  if (at.depth > max_graph_depth) throw r.error(r.base(), tinyt::detail::cat("graphs nest more than ", max_graph_depth, " deep"));
  Graph g;
  while (r.next(f)) {
    switch (f.number) {
      case 1: g.nodes.push_back(read_node(r.message(f, "NodeProto"), at)); break;
      case 2: g.name = r.string(f); break;
      case 5: {
        NamedTensor t = read_tensor(r.message(f, "TensorProto"), at.source);
        if (t.name.empty()) throw r.error(f.offset, "an initializer without a name");
        if (!g.initializers.emplace(t.name, t.value).second) throw r.error(f.offset, tinyt::detail::cat("initializer '", t.name, "' twice"));
        break;
      }
      case 11: g.inputs.push_back(read_value_info(r.message(f, "ValueInfoProto"))); break;
      case 12: g.outputs.push_back(read_value_info(r.message(f, "ValueInfoProto"))); break;
      case 13: g.value_info.push_back(read_value_info(r.message(f, "ValueInfoProto"))); break;
      default: break;  // doc_string, sparse initializers, quantization annotations
    }
  }
  return g;
}
}  // namespace detail

/// The ModelProto in `bytes` (an .onnx file's contents); `source`: the file (whose bytes `bytes`
/// are) and its folder, where its tensors' external data is (null for a model given as bytes).
inline ModelData read_model(std::string_view bytes, Source* source = nullptr) {
  proto::Reader r(bytes, 0, "ModelProto");
  ModelData m;
  bool has_graph = false;
  proto::Field f;
  while (r.next(f)) {
    switch (f.number) {
      case 1: m.ir_version = r.integer(f); break;
      case 7:
        if (has_graph) throw r.error(f.offset, "a second graph");
        m.graph = detail::read_graph(r.message(f, "GraphProto"), {0, source}), has_graph = true;
        break;
      case 8: {
        proto::Reader opset = r.message(f, "OperatorSetIdProto");
        std::string domain;
        int64_t version = 0;
        proto::Field x;
        while (opset.next(x)) {
          if (x.number == 1) domain = opset.string(x);
          if (x.number == 2) version = opset.integer(x);
        }
        m.opsets[domain == "ai.onnx" ? "" : domain] = version;
        break;
      }
      case 14: m.metadata.insert(detail::read_entry(r.message(f, "StringStringEntryProto"))); break;
      default: break;  // producer, domain, model_version, doc_string, training_info, functions
    }
  }
  if (!has_graph) throw FormatError("onnx: ModelProto: no graph (field 7): not an ONNX model");
  // IR version 3 made the opsets explicit; a file from then on that imports none is cut short or
  // broken (onnxruntime refuses it too), not a model of opset 1
  if (m.ir_version >= 3 && m.opsets.empty())
    throw FormatError(tinyt::detail::cat("onnx: ModelProto: IR version ", m.ir_version, " and no opset_import (field 8)"));
  return m;
}

}  // namespace onnx
}  // namespace tinyt::inline v0
