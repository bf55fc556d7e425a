// The ONNX ops the runner knows, as tinyt Tensor ops: one function per op type of the default
// domain, taking a node, its inputs (empty where an optional input is left out) and the model's
// opset, and giving its outputs. Each builds lazy tensors: a model runs as one tinyt graph,
// scheduled and fused like hand-written code. The ops that take more than a line are in
// onnx/ops_shape.hpp, onnx/ops_math.hpp, onnx/ops_nn.hpp,
// onnx/ops_control.hpp, onnx/ops_rnn.hpp, onnx/ops_sample.hpp, onnx/ops_host.hpp,
// onnx/ops_quant.hpp and onnx/ops_signal.hpp.
#pragma once

#include <set>

#include "ops_signal.hpp"

namespace tinyt::inline v0 {
namespace onnx {

namespace detail {
/// An op of one output, from the function that computes it.
inline OpFn single(Tensor (*f)(const OpCall&)) {
  return [f](const OpCall& c) { return one(f(c)); };
}
}  // namespace detail

/// The ops of the default domain the runner knows, by op type.
inline const std::map<std::string, OpFn>& default_ops() {
  using detail::one;
  using detail::single;
  static const std::map<std::string, OpFn> ops{
      // -- elementwise: arithmetic, comparison, logic, bits
      {"Identity", [](const OpCall& c) { return one(c.in(0)); }},
      {"Add", [](const OpCall& c) { return one(c.in(0) + c.in(1)); }},
      {"Sub", [](const OpCall& c) { return one(c.in(0) - c.in(1)); }},
      {"Mul", [](const OpCall& c) { return one(c.in(0) * c.in(1)); }},
      {"Div", single(detail::div)},
      {"Mod", single(detail::mod)},
      {"Pow", [](const OpCall& c) { return one(c.in(0).pow(c.in(1)).cast(c.in(0).dtype())); }},  // (the base's type, as ONNX's)
      {"Neg", [](const OpCall& c) { return one(c.in(0).neg()); }},
      {"Abs", [](const OpCall& c) { return one(c.in(0).abs()); }},
      {"Sign", [](const OpCall& c) { return one(c.in(0).sign()); }},
      {"Reciprocal", [](const OpCall& c) { return one(c.in(0).reciprocal()); }},
      {"Sqrt", [](const OpCall& c) { return one(c.in(0).sqrt()); }},
      {"Exp", [](const OpCall& c) { return one(c.in(0).exp()); }},
      {"Log", [](const OpCall& c) { return one(c.in(0).log()); }},
      {"Floor", [](const OpCall& c) { return one(c.in(0).floor()); }},
      {"Ceil", [](const OpCall& c) { return one(c.in(0).ceil()); }},
      {"Round", [](const OpCall& c) { return one(c.in(0).round()); }},
      {"Sin", [](const OpCall& c) { return one(c.in(0).sin()); }},
      {"Cos", [](const OpCall& c) { return one(c.in(0).cos()); }},
      {"Tan", [](const OpCall& c) { return one(c.in(0).tan()); }},
      {"Asin", [](const OpCall& c) { return one(c.in(0).asin()); }},
      {"Acos", [](const OpCall& c) { return one(c.in(0).acos()); }},
      {"Atan", [](const OpCall& c) { return one(c.in(0).atan()); }},
      {"Sinh", [](const OpCall& c) { return one((c.in(0).exp() - c.in(0).neg().exp()) * 0.5f); }},
      {"Cosh", [](const OpCall& c) { return one((c.in(0).exp() + c.in(0).neg().exp()) * 0.5f); }},
      {"Asinh", [](const OpCall& c) { return one((c.in(0) + (c.in(0) * c.in(0) + 1.0f).sqrt()).log()); }},
      {"Acosh", [](const OpCall& c) { return one((c.in(0) + (c.in(0) * c.in(0) - 1.0f).sqrt()).log()); }},
      {"Atanh", [](const OpCall& c) { return one(((c.in(0) + 1.0f) / (1.0f - c.in(0))).log() * 0.5f); }},
      {"Erf", [](const OpCall& c) { return one(c.in(0).erf()); }},
      {"IsNaN", [](const OpCall& c) { return one(c.in(0).isnan()); }},
      {"IsInf", single(detail::is_inf)},
      {"Equal", [](const OpCall& c) { return one(c.in(0).eq(c.in(1))); }},
      {"Less", [](const OpCall& c) { return one(c.in(0).lt(c.in(1))); }},
      {"LessOrEqual", [](const OpCall& c) { return one(c.in(0).le(c.in(1))); }},
      {"Greater", [](const OpCall& c) { return one(c.in(0).gt(c.in(1))); }},
      {"GreaterOrEqual", [](const OpCall& c) { return one(c.in(0).ge(c.in(1))); }},
      {"Not", [](const OpCall& c) { return one(c.in(0).logical_not()); }},
      {"And", [](const OpCall& c) { return one(c.in(0).logical_and(c.in(1))); }},
      {"Or", [](const OpCall& c) { return one(c.in(0).logical_or(c.in(1))); }},
      {"Xor", [](const OpCall& c) { return one(c.in(0).logical_xor(c.in(1))); }},
      {"BitShift", [](const OpCall& c) {
         const auto* direction = c.attribute("direction");
         return one(direction && direction->s == "LEFT" ? c.in(0).lshift(c.in(1)) : c.in(0).rshift(c.in(1)));
       }},
      {"BitwiseAnd", [](const OpCall& c) { return one(c.in(0).bitwise_and(c.in(1))); }},
      {"BitwiseOr", [](const OpCall& c) { return one(c.in(0).bitwise_or(c.in(1))); }},
      {"BitwiseXor", [](const OpCall& c) { return one(c.in(0).bitwise_xor(c.in(1))); }},
      {"BitwiseNot", [](const OpCall& c) { return one(c.in(0).bitwise_not()); }},
      {"Where", [](const OpCall& c) { return one(c.in(0).where(c.in(1), c.in(2))); }},
      {"Max", [](const OpCall& c) { return one(detail::fold(c, [](const Tensor& a, const Tensor& b) { return a.maximum(b); })); }},
      {"Min", [](const OpCall& c) { return one(detail::fold(c, [](const Tensor& a, const Tensor& b) { return a.minimum(b); })); }},
      {"Sum", [](const OpCall& c) { return one(detail::fold(c, [](const Tensor& a, const Tensor& b) { return a + b; })); }},
      {"Mean", [](const OpCall& c) {
         return one(detail::fold(c, [](const Tensor& a, const Tensor& b) { return a + b; }) / static_cast<float>(c.inputs.size()));
       }},
      {"Clip", single(detail::clip)},
      {"Cast", [](const OpCall& c) { return one(c.in(0).cast(dtype_of(c.int_attr("to", 0), "Cast node '" + c.node.name + "'"))); }},
      {"CastLike", [](const OpCall& c) { return one(c.in(0).cast(c.in(1).dtype())); }},
      {"BitCast", [](const OpCall& c) { return one(c.in(0).bitcast(dtype_of(c.int_attr("to", 0), "BitCast node '" + c.node.name + "'"))); }},
      {"Det", single(detail::det)},
      // -- activations
      {"Relu", [](const OpCall& c) { return one(c.in(0).relu()); }},
      {"Sigmoid", [](const OpCall& c) { return one(c.in(0).sigmoid()); }},
      {"Tanh", [](const OpCall& c) { return one(c.in(0).tanh()); }},
      {"Elu", [](const OpCall& c) { return one(c.in(0).elu(c.float_attr("alpha", 1.0f))); }},
      {"LeakyRelu", [](const OpCall& c) { return one(c.in(0).leaky_relu(c.float_attr("alpha", 0.01f))); }},
      {"Selu", [](const OpCall& c) {
         return one(c.in(0).elu(c.float_attr("alpha", 1.67326319217681884765625f)) * c.float_attr("gamma", 1.05070102214813232421875f));
       }},
      {"Celu", single(detail::celu)},
      {"Softplus", [](const OpCall& c) { return one(c.in(0).softplus()); }},
      {"Softsign", [](const OpCall& c) { return one(c.in(0) / (c.in(0).abs() + 1.0f)); }},
      {"HardSigmoid", [](const OpCall& c) {
         return one((c.in(0) * c.float_attr("alpha", 0.2f) + c.float_attr("beta", 0.5f)).maximum(Tensor::zeros_like(c.in(0))).minimum(Tensor::ones_like(c.in(0))));
       }},
      {"HardSwish", [](const OpCall& c) { return one(c.in(0).hardswish()); }},
      {"Mish", [](const OpCall& c) { return one(c.in(0).mish()); }},
      {"PRelu", [](const OpCall& c) { return one(c.in(0).lt(Tensor::zeros_like(c.in(0))).where(c.in(0) * c.in(1), c.in(0))); }},
      {"ThresholdedRelu", [](const OpCall& c) {
         return one(c.in(0).gt(Tensor::full(Shape{}, c.float_attr("alpha", 1.0f), c.in(0).dtype())).where(c.in(0), Tensor::zeros_like(c.in(0))));
       }},
      {"Shrink", single(detail::shrink)},
      {"Gelu", single(detail::gelu)},
      {"Swish", [](const OpCall& c) { return one(c.in(0) * (c.in(0) * c.float_attr("alpha", 1.0f)).sigmoid()); }},
      {"SwiGLU", [](const OpCall& c) { return one(c.in(0) * (c.in(0) * c.float_attr("alpha", 1.0f)).sigmoid() * c.in(1)); }},
      {"Softmax", [](const OpCall& c) { return one(detail::softmax_like(c, &Tensor::softmax)); }},
      {"LogSoftmax", [](const OpCall& c) { return one(detail::softmax_like(c, &Tensor::log_softmax)); }},
      {"Hardmax", single(detail::hardmax)},
      // -- reductions and scans
      {"ReduceSum", [](const OpCall& c) { return one(detail::reduce(c, 13, detail::by(&Tensor::sum))); }},
      {"ReduceMax", [](const OpCall& c) { return one(detail::reduce(c, 18, detail::extreme(true))); }},
      {"ReduceMin", [](const OpCall& c) { return one(detail::reduce(c, 18, detail::extreme(false))); }},
      {"ReduceMean", [](const OpCall& c) { return one(detail::reduce(c, 18, detail::by(&Tensor::mean))); }},
      {"ReduceProd", [](const OpCall& c) { return one(detail::reduce(c, 18, detail::by(&Tensor::prod))); }},
      {"ReduceSumSquare", [](const OpCall& c) {
         return one(detail::reduce(c, 18, [](const Tensor& x, const std::vector<int>& d, bool k) { return (x * x).sum(d, k); }));
       }},
      {"ReduceL1", [](const OpCall& c) {
         return one(detail::reduce(c, 18, [](const Tensor& x, const std::vector<int>& d, bool k) { return x.abs().sum(d, k); }));
       }},
      {"ReduceL2", [](const OpCall& c) {
         return one(detail::reduce(c, 18, [](const Tensor& x, const std::vector<int>& d, bool k) { return (x * x).sum(d, k).sqrt(); }));
       }},
      {"ReduceLogSum", [](const OpCall& c) {
         return one(detail::reduce(c, 18, [](const Tensor& x, const std::vector<int>& d, bool k) { return x.sum(d, k).log(); }));
       }},
      {"ReduceLogSumExp", [](const OpCall& c) { return one(detail::reduce(c, 18, detail::log_sum_exp)); }},
      {"ArgMax", [](const OpCall& c) { return one(detail::arg_extreme(c, true)); }},
      {"ArgMin", [](const OpCall& c) { return one(detail::arg_extreme(c, false)); }},
      {"CumSum", [](const OpCall& c) { return one(detail::running(c, false)); }},
      {"CumProd", [](const OpCall& c) { return one(detail::running(c, true)); }},
      {"TopK", detail::top_k},
      // -- shapes, movement and making tensors
      {"Reshape", [](const OpCall& c) { return one(c.in(0).reshape(detail::reshape_target(c))); }},
      {"Transpose", single(detail::transpose)},
      {"Flatten", single(detail::flatten)},
      {"Unsqueeze", single(detail::unsqueeze)},
      {"Squeeze", single(detail::squeeze)},
      {"Concat", single(detail::concat)},
      {"Split", detail::split},
      {"Slice", single(detail::slice)},
      {"Expand", single(detail::expand)},
      {"Tile", single(detail::tile)},
      {"Pad", single(detail::pad)},
      {"CenterCropPad", single(detail::center_crop_pad)},
      {"DepthToSpace", single(detail::depth_to_space)},
      {"SpaceToDepth", single(detail::space_to_depth)},
      {"Trilu", single(detail::trilu)},
      {"Shape", single(detail::shape_of)},
      {"Size", [](const OpCall& c) { return one(Tensor::full(Shape{}, c.in(0).numel(), dtypes::int64)); }},
      {"Constant", single(detail::constant)},
      {"ConstantOfShape", single(detail::constant_of_shape)},
      {"Range", single(detail::range)},
      {"EyeLike", single(detail::eye_like)},
      {"OneHot", single(detail::one_hot)},
      {"ReverseSequence", single(detail::reverse_sequence)},
      // (an optional tensor is a tensor, or an input left out)
      {"Optional", [](const OpCall& c) { return c.has(0) ? one(c.in(0)) : std::vector<Tensor>{}; }},
      {"OptionalHasElement", [](const OpCall& c) { return one(Tensor::full(Shape{}, c.has(0), dtypes::bool_)); }},
      {"OptionalGetElement", [](const OpCall& c) { return one(c.in(0)); }},
      // -- indexing
      {"Gather", single(detail::gather)},
      {"GatherElements", single(detail::gather_elements)},
      {"GatherND", single(detail::gather_nd)},
      {"ScatterElements", single(detail::scatter_elements)},
      {"Scatter", single(detail::scatter_elements)},
      {"ScatterND", single(detail::scatter_nd)},
      {"TensorScatter", single(detail::tensor_scatter)},
      {"NonZero", single(detail::non_zero)},
      {"Compress", single(detail::compress)},
      {"Unique", detail::unique},
      // -- matmul, convolution, pooling, resizing
      {"MatMul", [](const OpCall& c) { return one(c.in(0).matmul(c.in(1))); }},
      {"Gemm", single(detail::gemm)},
      {"Einsum", [](const OpCall& c) {
         std::string equation = c.string_attr("equation", "");
         equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
         std::vector<Tensor> operands;
         for (size_t i = 0; i < c.inputs.size(); ++i) operands.push_back(c.in(i));
         return one(Tensor::einsum(equation, operands));
       }},
      {"Conv", single(detail::conv)},
      {"ConvTranspose", single(detail::conv_transpose)},
      {"Col2Im", single(detail::col2im)},
      {"CausalConvWithState", detail::causal_conv_with_state},
      {"MaxPool", [](const OpCall& c) { return detail::pool(c, true); }},
      {"MaxUnpool", single(detail::max_unpool)},
      {"AveragePool", [](const OpCall& c) { return detail::pool(c, false); }},
      {"LpPool", single(detail::lp_pool)},
      {"GlobalAveragePool", [](const OpCall& c) { return one(c.in(0).mean(detail::axes_from(2, c.in(0).ndim()), true).cast(c.in(0).dtype())); }},
      {"GlobalMaxPool", [](const OpCall& c) { return one(c.in(0).max(detail::axes_from(2, c.in(0).ndim()), true)); }},
      {"Resize", single(detail::resize)},
      {"Upsample", single(detail::resize)},
      {"GridSample", single(detail::grid_sample)},
      {"AffineGrid", single(detail::affine_grid)},
      // -- normalization, attention, losses
      {"BatchNormalization", detail::batch_normalization},
      {"InstanceNormalization", single(detail::instance_normalization)},
      {"GroupNormalization", single(detail::group_normalization)},
      {"LayerNormalization", detail::layer_normalization},
      {"RMSNormalization", single(detail::rms_normalization)},
      {"MeanVarianceNormalization", single(detail::mean_variance_normalization)},
      {"LpNormalization", single(detail::lp_normalization)},
      {"LRN", single(detail::lrn)},
      {"Dropout", detail::dropout},
      {"Attention", detail::attention},
      {"LinearAttention", detail::linear_attention},
      {"RotaryEmbedding", single(detail::rotary_embedding)},
      {"NonMaxSuppression", single(detail::non_max_suppression)},
      {"NegativeLogLikelihoodLoss", [](const OpCall& c) {
         const Tensor weight = c.has(2) ? c.in(2) : Tensor{};
         return one(detail::nll_loss(c, c.in(0), c.in(1), c.has(2) ? &weight : nullptr));
       }},
      {"SoftmaxCrossEntropyLoss", detail::softmax_cross_entropy_loss},
      // -- control flow and recurrence
      {"If", detail::if_},
      {"Loop", detail::loop},
      {"Scan", detail::scan},
      {"RNN", detail::rnn},
      {"GRU", detail::gru},
      {"LSTM", detail::lstm},
      // -- quantized
      {"QuantizeLinear", single(detail::quantize_linear)},
      {"DequantizeLinear", single(detail::dequantize_linear)},
      {"DynamicQuantizeLinear", detail::dynamic_quantize_linear},
      {"MatMulInteger", single(detail::matmul_integer)},
      {"ConvInteger", single(detail::conv_integer)},
      {"QLinearMatMul", single(detail::qlinear_matmul)},
      {"QLinearConv", single(detail::qlinear_conv)},
      // -- signal
      {"DFT", single(detail::dft)},
      {"STFT", single(detail::stft)},
      {"HannWindow", [](const OpCall& c) { return one(detail::window(c, 0.5, 0.5, 0)); }},
      {"HammingWindow", [](const OpCall& c) { return one(detail::window(c, 25.0 / 46, 21.0 / 46, 0)); }},
      {"BlackmanWindow", [](const OpCall& c) { return one(detail::window(c, 0.42, 0.5, 0.08)); }},
  };
  return ops;
}

/// The ops of the ai.onnx.preview domain the runner knows, by op type.
inline const std::map<std::string, OpFn>& preview_ops() {
  static const std::map<std::string, OpFn> ops{
      {"FlexAttention", detail::single(detail::flex_attention)},
  };
  return ops;
}

/// The function of a node's op: of the default domain ("" or "ai.onnx") or ai.onnx.preview; null
/// where the runner does not know it.
inline const OpFn* op_of(const Node& node) {
  const bool standard = node.domain.empty() || node.domain == "ai.onnx";
  if (!standard && node.domain != "ai.onnx.preview") return nullptr;
  const auto& table = standard ? default_ops() : preview_ops();
  const auto it = table.find(node.op_type);
  return it == table.end() ? nullptr : &it->second;
}

namespace detail {
// a node's string attribute, or `fallback`
inline std::string string_of(const Node& n, const std::string& name, const std::string& fallback) {
  for (const Attribute& a : n.attributes)
    if (a.name == name) return a.s;
  return fallback;
}
// "" where the node's string attribute is one of `known` (or absent, taking `fallback`), else
// what is not supported
inline std::string one_of(const Node& n, const std::string& name, const std::string& fallback, std::initializer_list<const char*> known) {
  const std::string v = string_of(n, name, fallback);
  for (const char* k : known)
    if (v == k) return "";
  return name + " '" + v + "'";
}
}  // namespace detail

/// What the runner does not support in a node whose op it knows (an attribute's value, an old
/// form of the op), so that loading refuses it; "" where it supports the node.
inline std::string unsupported_in(const Node& n, int64_t opset) {
  using detail::one_of;
  const std::string& op = n.op_type;
  std::string why;
  auto first = [&why](const std::string& w) {
    if (why.empty()) why = w;
  };
  if (op == "Scan" && opset < 9) first("the opset-8 form (with a batch dim)");
  if (op == "Pad") first(one_of(n, "mode", "constant", {"constant", "reflect", "edge", "wrap"}));
  if (op == "ScatterElements" || op == "Scatter" || op == "ScatterND") first(one_of(n, "reduction", "none", {"none", "add", "mul", "max", "min"}));
  if (op == "RNN" || op == "GRU" || op == "LSTM") {
    first(one_of(n, "direction", "forward", {"forward", "reverse", "bidirectional"}));
    for (const Attribute& a : n.attributes)
      if (a.name == "activations")
        for (std::string name : a.strings) {
          std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
          static const std::set<std::string> known{"sigmoid",    "tanh", "relu", "affine", "leakyrelu", "thresholdedrelu", "scaledtanh",
                                                   "hardsigmoid", "elu",  "softsign", "softplus"};
          if (!known.count(name)) first("activation '" + name + "'");
        }
  }
  if (op == "GridSample") {
    first(one_of(n, "mode", "linear", {"bilinear", "linear", "nearest", "bicubic", "cubic"}));
    first(one_of(n, "padding_mode", "zeros", {"zeros", "border", "reflection"}));
  }
  if (op == "Resize" || op == "Upsample") {
    first(one_of(n, "mode", "nearest", {"nearest", "linear", "bilinear", "trilinear", "cubic"}));
    first(one_of(n, "coordinate_transformation_mode", "half_pixel",
                 {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"}));
    first(one_of(n, "nearest_mode", "round_prefer_floor", {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}));
    first(one_of(n, "keep_aspect_ratio_policy", "stretch", {"stretch", "not_larger", "not_smaller"}));
  }
  if (op == "Conv" || op == "ConvTranspose" || op == "ConvInteger" || op == "QLinearConv" || op == "MaxPool" || op == "AveragePool" || op == "LpPool")
    first(one_of(n, "auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}));
  if (op == "CausalConvWithState") first(one_of(n, "activation", "none", {"none", "silu", "swish"}));
  if (op == "LinearAttention") first(one_of(n, "update_rule", "gated_delta", {"linear", "gated", "delta", "gated_delta"}));
  if (op == "Constant") {
    bool value = false;
    for (const Attribute& a : n.attributes)
      value = value || a.name == "value" || a.name == "value_float" || a.name == "value_floats" || a.name == "value_int" || a.name == "value_ints";
    if (!value) first("a value other than a tensor, float(s) or int(s)");
  }
  return why;
}

}  // namespace onnx
}  // namespace tinyt::inline v0
