// The ONNX ops the runner knows, as tinyt Tensor ops: one function per op type of the default
// domain, taking a node, its inputs (empty where an optional input is left out) and the model's
// opset, and giving its outputs. Each builds lazy tensors: a model runs as one tinyt graph,
// scheduled and fused like hand-written code. The ops that take more than a line are in
// onnx/ops_shape.hpp, onnx/ops_math.hpp, onnx/ops_nn.hpp and
// onnx/ops_control.hpp.
#pragma once

#include "ops_control.hpp"

namespace tinyt::inline v0 {
namespace onnx {

/// The ops of the default domain the runner knows, by op type.
inline const std::map<std::string, OpFn>& default_ops() {
  using detail::one;
  static const std::map<std::string, OpFn> ops{
      {"Identity", [](const OpCall& c) { return one(c.in(0)); }},
      {"Add", [](const OpCall& c) { return one(c.in(0) + c.in(1)); }},
      {"Sub", [](const OpCall& c) { return one(c.in(0) - c.in(1)); }},
      {"Mul", [](const OpCall& c) { return one(c.in(0) * c.in(1)); }},
      {"Neg", [](const OpCall& c) { return one(c.in(0).neg()); }},
      {"Relu", [](const OpCall& c) { return one(c.in(0).relu()); }},
      {"Sigmoid", [](const OpCall& c) { return one(c.in(0).sigmoid()); }},
      {"Tanh", [](const OpCall& c) { return one(c.in(0).tanh()); }},
      {"Exp", [](const OpCall& c) { return one(c.in(0).exp()); }},
      {"MatMul", [](const OpCall& c) { return one(c.in(0).matmul(c.in(1))); }},
      {"Gemm", [](const OpCall& c) { return one(detail::gemm(c)); }},
      {"Reshape", [](const OpCall& c) { return one(c.in(0).reshape(detail::reshape_target(c))); }},
      {"Transpose", [](const OpCall& c) { return one(detail::transpose(c)); }},
      {"Softmax", [](const OpCall& c) { return one(detail::softmax_like(c, &Tensor::softmax)); }},
      {"Constant", [](const OpCall& c) { return one(detail::constant(c)); }},
      {"LogSoftmax", [](const OpCall& c) { return one(detail::softmax_like(c, &Tensor::log_softmax)); }},
      {"Shape", [](const OpCall& c) { return one(detail::shape_of(c)); }},
      {"Cast", [](const OpCall& c) { return one(c.in(0).cast(dtype_of(c.int_attr("to", 0), "Cast node '" + c.node.name + "'"))); }},
      {"CastLike", [](const OpCall& c) { return one(c.in(0).cast(c.in(1).dtype())); }},
      {"Abs", [](const OpCall& c) { return one(c.in(0).abs()); }},
      {"Sqrt", [](const OpCall& c) { return one(c.in(0).sqrt()); }},
      {"Log", [](const OpCall& c) { return one(c.in(0).log()); }},
      {"Floor", [](const OpCall& c) { return one(c.in(0).floor()); }},
      {"Ceil", [](const OpCall& c) { return one(c.in(0).ceil()); }},
      {"Reciprocal", [](const OpCall& c) { return one(c.in(0).reciprocal()); }},
      {"Sin", [](const OpCall& c) { return one(c.in(0).sin()); }},
      {"Cos", [](const OpCall& c) { return one(c.in(0).cos()); }},
      {"Tan", [](const OpCall& c) { return one(c.in(0).tan()); }},
      {"Sign", [](const OpCall& c) { return one(c.in(0).sign()); }},
      {"Erf", [](const OpCall& c) { return one(c.in(0).erf()); }},
      {"Round", [](const OpCall& c) { return one(c.in(0).round()); }},
      {"Not", [](const OpCall& c) { return one(c.in(0).logical_not()); }},
      {"IsNaN", [](const OpCall& c) { return one(c.in(0).isnan()); }},
      {"Div", [](const OpCall& c) { return one(detail::div(c)); }},
      {"Pow", [](const OpCall& c) { return one(c.in(0).pow(c.in(1)).cast(c.in(0).dtype())); }},  // (the base's type, as ONNX's)
      {"Equal", [](const OpCall& c) { return one(c.in(0).eq(c.in(1))); }},
      {"Less", [](const OpCall& c) { return one(c.in(0).lt(c.in(1))); }},
      {"LessOrEqual", [](const OpCall& c) { return one(c.in(0).le(c.in(1))); }},
      {"Greater", [](const OpCall& c) { return one(c.in(0).gt(c.in(1))); }},
      {"GreaterOrEqual", [](const OpCall& c) { return one(c.in(0).ge(c.in(1))); }},
      {"And", [](const OpCall& c) { return one(c.in(0).logical_and(c.in(1))); }},
      {"Or", [](const OpCall& c) { return one(c.in(0).logical_or(c.in(1))); }},
      {"Xor", [](const OpCall& c) { return one(c.in(0).logical_xor(c.in(1))); }},
      {"Where", [](const OpCall& c) { return one(c.in(0).where(c.in(1), c.in(2))); }},
      {"Max", [](const OpCall& c) { return one(detail::fold(c, [](const Tensor& a, const Tensor& b) { return a.maximum(b); })); }},
      {"Min", [](const OpCall& c) { return one(detail::fold(c, [](const Tensor& a, const Tensor& b) { return a.minimum(b); })); }},
      {"Sum", [](const OpCall& c) { return one(detail::fold(c, [](const Tensor& a, const Tensor& b) { return a + b; })); }},
      {"ReduceSum", [](const OpCall& c) { return one(detail::reduce(c, 13, detail::by(&Tensor::sum))); }},
      {"ReduceMax", [](const OpCall& c) { return one(detail::reduce(c, 18, detail::extreme(true))); }},
      {"ReduceMin", [](const OpCall& c) { return one(detail::reduce(c, 18, detail::extreme(false))); }},
      {"ReduceMean", [](const OpCall& c) { return one(detail::reduce(c, 18, detail::by(&Tensor::mean))); }},
      {"ReduceProd", [](const OpCall& c) { return one(detail::reduce(c, 18, detail::by(&Tensor::prod))); }},
      {"Unsqueeze", [](const OpCall& c) { return one(detail::unsqueeze(c)); }},
      {"Squeeze", [](const OpCall& c) { return one(detail::squeeze(c)); }},
      {"Concat", [](const OpCall& c) { return one(detail::concat(c)); }},
      {"Size", [](const OpCall& c) { return one(Tensor::full(Shape{}, c.in(0).numel(), dtypes::int64)); }},
      {"ConstantOfShape", [](const OpCall& c) { return one(detail::constant_of_shape(c)); }},
      {"Expand", [](const OpCall& c) { return one(detail::expand(c)); }},
      {"Range", [](const OpCall& c) { return one(detail::range(c)); }},
      {"Clip", [](const OpCall& c) { return one(detail::clip(c)); }},
      {"Flatten", [](const OpCall& c) { return one(detail::flatten(c)); }},
      {"Gather", [](const OpCall& c) { return one(detail::gather(c)); }},
      {"Mod", [](const OpCall& c) { return one(detail::mod(c)); }},
      {"Elu", [](const OpCall& c) { return one(c.in(0).elu(c.float_attr("alpha", 1.0f))); }},
      {"LeakyRelu", [](const OpCall& c) { return one(c.in(0).leaky_relu(c.float_attr("alpha", 0.01f))); }},
      {"Selu", [](const OpCall& c) {
         return one(c.in(0).elu(c.float_attr("alpha", 1.67326319217681884765625f)) * c.float_attr("gamma", 1.05070102214813232421875f));
       }},
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
      {"Slice", [](const OpCall& c) { return one(detail::slice(c)); }},
      {"ArgMax", [](const OpCall& c) { return one(detail::arg_extreme(c, true)); }},
      {"ArgMin", [](const OpCall& c) { return one(detail::arg_extreme(c, false)); }},
      {"Split", [](const OpCall& c) { return detail::split(c); }},
      {"GatherElements", [](const OpCall& c) { return one(detail::gather_elements(c)); }},
      {"LayerNormalization", [](const OpCall& c) { return detail::layer_normalization(c); }},
      {"Trilu", [](const OpCall& c) { return one(detail::trilu(c)); }},
      {"BitShift", [](const OpCall& c) {
         const auto* direction = c.attribute("direction");
         return one(direction && direction->s == "LEFT" ? c.in(0).lshift(c.in(1)) : c.in(0).rshift(c.in(1)));
       }},
      {"Mean", [](const OpCall& c) {
         return one(detail::fold(c, [](const Tensor& a, const Tensor& b) { return a + b; }) / static_cast<float>(c.inputs.size()));
       }},
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
      {"Conv", [](const OpCall& c) { return one(detail::conv(c)); }},
      {"ConvTranspose", [](const OpCall& c) { return one(detail::conv_transpose(c)); }},
      {"MaxPool", [](const OpCall& c) { return detail::pool(c, true); }},
      {"AveragePool", [](const OpCall& c) { return detail::pool(c, false); }},
      {"LpPool", [](const OpCall& c) { return one(detail::lp_pool(c)); }},
      {"GlobalAveragePool", [](const OpCall& c) { return one(c.in(0).mean(detail::axes_from(2, c.in(0).ndim()), true).cast(c.in(0).dtype())); }},
      {"GlobalMaxPool", [](const OpCall& c) { return one(c.in(0).max(detail::axes_from(2, c.in(0).ndim()), true)); }},
      {"BatchNormalization", [](const OpCall& c) { return detail::batch_normalization(c); }},
      {"InstanceNormalization", [](const OpCall& c) { return one(detail::instance_normalization(c)); }},
      {"GroupNormalization", [](const OpCall& c) { return one(detail::group_normalization(c)); }},
      {"RMSNormalization", [](const OpCall& c) { return one(detail::rms_normalization(c)); }},
      {"MeanVarianceNormalization", [](const OpCall& c) { return one(detail::mean_variance_normalization(c)); }},
      {"LpNormalization", [](const OpCall& c) { return one(detail::lp_normalization(c)); }},
      {"LRN", [](const OpCall& c) { return one(detail::lrn(c)); }},
      {"NegativeLogLikelihoodLoss", [](const OpCall& c) {
         const Tensor weight = c.has(2) ? c.in(2) : Tensor{};
         return one(detail::nll_loss(c, c.in(0), c.in(1), c.has(2) ? &weight : nullptr));
       }},
      {"SoftmaxCrossEntropyLoss", [](const OpCall& c) { return detail::softmax_cross_entropy_loss(c); }},
      {"Attention", [](const OpCall& c) { return detail::attention(c); }},
      {"CumSum", [](const OpCall& c) { return one(detail::running(c, false)); }},
      {"CumProd", [](const OpCall& c) { return one(detail::running(c, true)); }},
      {"Hardmax", [](const OpCall& c) { return one(detail::hardmax(c)); }},
      {"Shrink", [](const OpCall& c) { return one(detail::shrink(c)); }},
      {"IsInf", [](const OpCall& c) { return one(detail::is_inf(c)); }},
      {"Gelu", [](const OpCall& c) { return one(detail::gelu(c)); }},
      {"Celu", [](const OpCall& c) { return one(detail::celu(c)); }},
      {"Swish", [](const OpCall& c) { return one(c.in(0) * (c.in(0) * c.float_attr("alpha", 1.0f)).sigmoid()); }},
      {"Sinh", [](const OpCall& c) { return one((c.in(0).exp() - c.in(0).neg().exp()) * 0.5f); }},
      {"Cosh", [](const OpCall& c) { return one((c.in(0).exp() + c.in(0).neg().exp()) * 0.5f); }},
      {"Asinh", [](const OpCall& c) { return one((c.in(0) + (c.in(0) * c.in(0) + 1.0f).sqrt()).log()); }},
      {"Acosh", [](const OpCall& c) { return one((c.in(0) + (c.in(0) * c.in(0) - 1.0f).sqrt()).log()); }},
      {"Atanh", [](const OpCall& c) { return one(((c.in(0) + 1.0f) / (1.0f - c.in(0))).log() * 0.5f); }},
      {"Dropout", [](const OpCall& c) { return detail::dropout(c); }},
      {"BitwiseAnd", [](const OpCall& c) { return one(c.in(0).bitwise_and(c.in(1))); }},
      {"BitwiseOr", [](const OpCall& c) { return one(c.in(0).bitwise_or(c.in(1))); }},
      {"BitwiseXor", [](const OpCall& c) { return one(c.in(0).bitwise_xor(c.in(1))); }},
      {"BitwiseNot", [](const OpCall& c) { return one(c.in(0).bitwise_not()); }},
      {"If", [](const OpCall& c) { return detail::if_(c); }},
      {"Loop", [](const OpCall& c) { return detail::loop(c); }},
      {"Scan", [](const OpCall& c) { return detail::scan(c); }},
      {"HannWindow", [](const OpCall& c) { return one(detail::window(c, 0.5, 0.5, 0)); }},
      {"HammingWindow", [](const OpCall& c) { return one(detail::window(c, 25.0 / 46, 21.0 / 46, 0)); }},
      {"BlackmanWindow", [](const OpCall& c) { return one(detail::window(c, 0.42, 0.5, 0.08)); }},
      {"NonMaxSuppression", [](const OpCall& c) { return one(detail::non_max_suppression(c)); }},
      {"Resize", [](const OpCall& c) { return one(detail::resize(c)); }},
      {"Upsample", [](const OpCall& c) { return one(detail::resize(c)); }},
      {"Pad", [](const OpCall& c) { return one(detail::pad(c)); }},
      {"Tile", [](const OpCall& c) { return one(detail::tile(c)); }},
      {"DepthToSpace", [](const OpCall& c) { return one(detail::depth_to_space(c)); }},
      {"SpaceToDepth", [](const OpCall& c) { return one(detail::space_to_depth(c)); }},
      {"EyeLike", [](const OpCall& c) { return one(detail::eye_like(c)); }},
      {"OneHot", [](const OpCall& c) { return one(detail::one_hot(c)); }},
      {"Einsum", [](const OpCall& c) {
         std::string equation = c.string_attr("equation", "");
         equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
         std::vector<Tensor> operands;
         for (size_t i = 0; i < c.inputs.size(); ++i) operands.push_back(c.in(i));
         return one(Tensor::einsum(equation, operands));
       }},
  };
  return ops;
}

}  // namespace onnx
}  // namespace tinyt::inline v0
