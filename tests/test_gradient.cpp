// Gradients: every differentiable op against central finite differences in float64 (a
// gradcheck), and the cases that need care: masked where, ties in max, unused and detached
// inputs, a tensor used twice, non-differentiable paths, backward()/grad() accumulation.
#include <map>

#include "helpers.hpp"

using namespace tinyt;
using tinyt_test::message_of;

namespace {

// Where the inputs of a case live: anywhere (away from 0, so that kinks at 0 are not met),
// positive (logs, roots, powers), or strictly inside (0, 1) (probabilities).
enum class Domain { any, positive, unit };

struct Input {
  Shape shape;
  Domain domain = Domain::any;
};

// Deterministic, well separated values (no ties, nothing near a kink at 0).
std::vector<double> input_values(const Input& in, int seed) {
  const int64_t n = in.shape.numel().as_int();
  std::vector<double> v(static_cast<size_t>(n));
  uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(seed + 1);
  for (size_t i = 0; i < v.size(); ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const double u = static_cast<double>(x % 1000003) / 1000003.0;  // [0, 1)
    const double spread = 0.01 * static_cast<double>(i);              // keeps values distinct
    if (in.domain == Domain::positive) v[i] = 0.5 + 1.5 * u + spread;
    else if (in.domain == Domain::unit) v[i] = 0.1 + 0.8 * u;
    else v[i] = (u < 0.5 ? -1.0 : 1.0) * (0.3 + 1.4 * std::fabs(2 * u - 1)) + spread;
  }
  return v;
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// A scalar loss of f's output with a fixed weight per element, so the seed is not all ones.
Tensor weighted_sum(const Tensor& out) {
  const int64_t n = out.numel();
  std::vector<double> w(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) w[static_cast<size_t>(i)] = 1.0 + 0.37 * static_cast<double>(i % 7) - 0.11 * static_cast<double>(i % 3);
  return (out.cast(dtypes::float64) * Tensor::from_vector(w, out.shape())).sum();
}

// d loss / d input from gradient() against central differences of the loss, every element.
void gradcheck(const std::string& name, const Fn& f, const std::vector<Input>& inputs, double rtol = 1e-5, double atol = 1e-6,
               double step = 1e-6) {
  INFO("op: ", name);
  std::vector<std::vector<double>> vals;
  std::vector<Tensor> xs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    vals.push_back(input_values(inputs[i], static_cast<int>(i) + static_cast<int>(name.size())));
    xs.push_back(Tensor::from_vector(vals.back(), inputs[i].shape));
  }
  const std::vector<Tensor> grads = weighted_sum(f(xs)).gradient(xs);
  REQUIRE(grads.size() == xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    REQUIRE(grads[i].shape() == inputs[i].shape);
    REQUIRE(grads[i].dtype() == dtypes::float64);
    const std::vector<double> analytic = grads[i].to_vector<double>();
    for (size_t j = 0; j < vals[i].size(); ++j) {
      const double x = vals[i][j], h = step * std::max(1.0, std::fabs(x));
      auto loss_at = [&](double v) {
        std::vector<Tensor> moved = xs;
        std::vector<double> changed = vals[i];
        changed[j] = v;
        moved[i] = Tensor::from_vector(changed, inputs[i].shape);
        return weighted_sum(f(moved)).item<double>();
      };
      const double numeric = (loss_at(x + h) - loss_at(x - h)) / (2 * h);
      INFO("input ", i, " element ", j, ": analytic ", analytic[j], ", numeric ", numeric);
      CHECK(std::fabs(analytic[j] - numeric) <= atol + rtol * std::fabs(numeric));
    }
  }
}

Input any(Shape s) { return {std::move(s), Domain::any}; }
Input pos(Shape s) { return {std::move(s), Domain::positive}; }
Input unit(Shape s) { return {std::move(s), Domain::unit}; }

}  // namespace

TEST_CASE("gradient: unary math against finite differences") {
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> ops = {
      {"neg", [](const Tensor& x) { return x.neg(); }},
      {"unary -", [](const Tensor& x) { return -x; }},
      {"abs", [](const Tensor& x) { return x.abs(); }},
      {"exp", [](const Tensor& x) { return x.exp(); }},
      {"exp2", [](const Tensor& x) { return x.exp2(); }},
      {"sin", [](const Tensor& x) { return x.sin(); }},
      {"cos", [](const Tensor& x) { return x.cos(); }},
      {"tan", [](const Tensor& x) { return (x * 0.5).tan(); }},
      {"square", [](const Tensor& x) { return x.square(); }},
      {"relu", [](const Tensor& x) { return x.relu(); }},
      {"relu6", [](const Tensor& x) { return (x * 5).relu6(); }},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }},
      {"logsigmoid", [](const Tensor& x) { return x.logsigmoid(); }},
      {"tanh", [](const Tensor& x) { return x.tanh(); }},
      {"gelu", [](const Tensor& x) { return x.gelu(); }},
      {"quick_gelu", [](const Tensor& x) { return x.quick_gelu(); }},
      {"silu", [](const Tensor& x) { return x.silu(); }},
      {"elu", [](const Tensor& x) { return x.elu(0.7); }},
      {"leaky_relu", [](const Tensor& x) { return x.leaky_relu(0.1); }},
      {"softplus", [](const Tensor& x) { return x.softplus(); }},
      {"softplus beta", [](const Tensor& x) { return (x * 12).softplus(2.0); }},
      {"mish", [](const Tensor& x) { return x.mish(); }},
      {"hardswish", [](const Tensor& x) { return (x * 2).hardswish(); }},
      {"hardsigmoid", [](const Tensor& x) { return (x * 2).hardsigmoid(); }},
      {"hardtanh", [](const Tensor& x) { return x.hardtanh(-0.5, 0.9); }},
      {"erf", [](const Tensor& x) { return x.erf(); }},
      {"sign (flat)", [](const Tensor& x) { return x.sign() * x; }},
      {"trunc floor ceil round (flat)", [](const Tensor& x) { return (x * 3.3).trunc() + x.floor() + x.ceil() * x + (x * 2.2).round(); }},
  };
  for (const auto& [name, op] : ops) gradcheck(name, [&op = op](const std::vector<Tensor>& x) { return op(x[0]); }, {any({2, 5})});
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> positive = {
      {"log", [](const Tensor& x) { return x.log(); }},
      {"log2", [](const Tensor& x) { return x.log2(); }},
      {"sqrt", [](const Tensor& x) { return x.sqrt(); }},
      {"rsqrt", [](const Tensor& x) { return x.rsqrt(); }},
      {"reciprocal", [](const Tensor& x) { return x.reciprocal(); }},
  };
  for (const auto& [name, op] : positive) gradcheck(name, [&op = op](const std::vector<Tensor>& x) { return op(x[0]); }, {pos({2, 5})});
}

TEST_CASE("gradient: binary and ternary math against finite differences") {
  using Bin = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<std::string, Bin>> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return a.add(b); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return a.maximum(b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return a.minimum(b); }},
      {"lerp", [](const Tensor& a, const Tensor& b) { return a.lerp(b, 0.3); }},
      {"a * b + a / b expression", [](const Tensor& a, const Tensor& b) { return a * b + a / b - b; }},
  };
  for (const auto& [name, op] : ops)
    gradcheck(name, [&op = op](const std::vector<Tensor>& x) { return op(x[0], x[1]); }, {any({3, 4}), any({3, 4})});
  // broadcasting: the gradient of the smaller operand sums over the broadcast axes
  gradcheck("mul broadcast", [](const std::vector<Tensor>& x) { return x[0] * x[1]; }, {any({3, 4}), any({4})});
  gradcheck("div broadcast", [](const std::vector<Tensor>& x) { return x[0] / x[1]; }, {any({3, 1}), any({1, 4})});
  gradcheck("scalar", [](const std::vector<Tensor>& x) { return x[0] * 3 + 2 - x[0] / 4; }, {any({5})});
  gradcheck("pow", [](const std::vector<Tensor>& x) { return x[0].pow(x[1]); }, {pos({2, 3}), any({2, 3})});
  gradcheck("pow constant exponent", [](const std::vector<Tensor>& x) { return x[0].pow(3); }, {any({2, 3})});
  gradcheck("pow constant base", [](const std::vector<Tensor>& x) { return Tensor(2.5).cast(dtypes::float64).pow(x[0]); }, {any({2, 3})});
  gradcheck("where", [](const std::vector<Tensor>& x) { return (x[0] > 0).where(x[1], x[2]); }, {any({2, 4}), any({2, 4}), any({2, 4})});
  gradcheck("clip", [](const std::vector<Tensor>& x) { return x[0].clip(-0.8, 1.1); }, {any({2, 5})});
  gradcheck("masked_fill", [](const std::vector<Tensor>& x) { return x[0].masked_fill(x[1] > 0, 1.5); }, {any({2, 4}), any({2, 4})});
  gradcheck("cast to float32 and back", [](const std::vector<Tensor>& x) { return (x[0].cast(dtypes::float32) * 2).cast(dtypes::float64); },
            {any({4})}, 1e-3, 1e-6, 1e-2);
}

TEST_CASE("gradient: reductions against finite differences") {
  gradcheck("sum all", [](const std::vector<Tensor>& x) { return x[0].sum(); }, {any({3, 4})});
  gradcheck("sum axis", [](const std::vector<Tensor>& x) { return x[0].sum(1); }, {any({3, 4})});
  gradcheck("sum axes keepdim", [](const std::vector<Tensor>& x) { return x[0].sum({0, 2}, true); }, {any({2, 3, 4})});
  gradcheck("prod", [](const std::vector<Tensor>& x) { return x[0].prod(1); }, {any({3, 4})});
  gradcheck("max", [](const std::vector<Tensor>& x) { return x[0].max(1); }, {any({3, 4})});
  gradcheck("max all", [](const std::vector<Tensor>& x) { return x[0].max(); }, {any({3, 4})});
  gradcheck("min", [](const std::vector<Tensor>& x) { return x[0].min(0); }, {any({3, 4})});
  gradcheck("mean", [](const std::vector<Tensor>& x) { return x[0].mean(-1); }, {any({3, 4})});
  gradcheck("var", [](const std::vector<Tensor>& x) { return x[0].var(1); }, {any({3, 4})});
  gradcheck("std", [](const std::vector<Tensor>& x) { return x[0].std(0, true, 0); }, {any({3, 4})});
  gradcheck("logsumexp", [](const std::vector<Tensor>& x) { return x[0].logsumexp(1); }, {any({3, 4})});
  gradcheck("softmax", [](const std::vector<Tensor>& x) { return x[0].softmax(); }, {any({3, 4})});
  gradcheck("log_softmax", [](const std::vector<Tensor>& x) { return x[0].log_softmax(0); }, {any({3, 4})});
  gradcheck("cumsum", [](const std::vector<Tensor>& x) { return x[0].cumsum(1); }, {any({3, 5})});
}

TEST_CASE("gradient: movement and indexing against finite differences") {
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> ops = {
      {"reshape", [](const Tensor& x) { return x.reshape({4, 6}); }},
      {"permute", [](const Tensor& x) { return x.permute({2, 0, 1}); }},
      {"expand", [](const Tensor& x) { return x.reshape({2, 1, 3, 4}).expand({2, 3, 3, 4}); }},
      {"pad", [](const Tensor& x) { return x.pad({{1, 0}, {0, 2}, {1, 1}}); }},
      {"pad value", [](const Tensor& x) { return x.pad({{0, 0}, {1, 2}, {0, 0}}, 3.0); }},
      {"shrink", [](const Tensor& x) { return x.shrink({{0, 1}, {1, 3}, {1, 4}}); }},
      {"flip", [](const Tensor& x) { return x.flip({0, 2}); }},
      {"transpose", [](const Tensor& x) { return x.transpose(0, 2); }},
      {"flatten", [](const Tensor& x) { return x.flatten(1); }},
      {"unflatten", [](const Tensor& x) { return x.unflatten(2, {2, 2}); }},
      {"squeeze unsqueeze", [](const Tensor& x) { return x.unsqueeze(1).squeeze(1); }},
      {"repeat", [](const Tensor& x) { return x.repeat({2, 1, 2}); }},
      {"contiguous", [](const Tensor& x) { return x.permute({1, 0, 2}).contiguous() * 2; }},
      {"contiguous_backward", [](const Tensor& x) { return x.contiguous_backward().permute({1, 0, 2}) * 2; }},
      {"slice", [](const Tensor& x) { return x[{Slice(), Slice(2, 0, -1), 1}]; }},
      {"slice step", [](const Tensor& x) { return x[{1, Slice(0, 3, 2), NewAxis, Ellipsis}]; }},
      {"advanced index", [](const Tensor& x) { return x[{Tensor::from_vector<int32_t>({1, 0, 1})}]; }},
      {"gather", [](const Tensor& x) { return x.gather(2, Tensor::from_vector<int32_t>({3, 0, 1, 1, 2, 0}, {2, 3, 1})); }},
      {"split", [](const Tensor& x) { auto p = x.split(1, 2); return p[0] * p[3] + p[1]; }},
      {"chunk", [](const Tensor& x) { auto p = x.chunk(2, 1); return p[0] * 2 + p[1].sum(1, true); }},
  };
  for (const auto& [name, op] : ops) gradcheck(name, [&op = op](const std::vector<Tensor>& x) { return op(x[0]); }, {any({2, 3, 4})});
  gradcheck("cat", [](const std::vector<Tensor>& x) { return Tensor::cat({x[0], x[1] * 2, x[0]}, 1); }, {any({2, 3}), any({2, 2})});
  gradcheck("stack", [](const std::vector<Tensor>& x) { return Tensor::stack({x[0], x[1]}, 1); }, {any({2, 3}), any({2, 3})});
}

TEST_CASE("gradient: linear algebra and nn functional against finite differences") {
  gradcheck("matmul", [](const std::vector<Tensor>& x) { return x[0].matmul(x[1]); }, {any({3, 4}), any({4, 2})});
  gradcheck("batched matmul", [](const std::vector<Tensor>& x) { return x[0].matmul(x[1]); }, {any({2, 2, 3}), any({3, 2})});
  gradcheck("matmul vector", [](const std::vector<Tensor>& x) { return x[0].dot(x[1]); }, {any({4}), any({4, 3})});
  gradcheck("linear", [](const std::vector<Tensor>& x) { return x[0].linear(x[1], x[2]); }, {any({3, 4}), any({4, 2}), any({2})});
  gradcheck("einsum", [](const std::vector<Tensor>& x) { return Tensor::einsum("ij,jk->ik", {x[0], x[1]}); }, {any({2, 3}), any({3, 2})});
  gradcheck("conv2d", [](const std::vector<Tensor>& x) { return x[0].conv2d(x[1], x[2]); }, {any({1, 2, 4, 4}), any({3, 2, 3, 3}), any({3})});
  gradcheck("conv2d stride padding dilation groups",
            [](const std::vector<Tensor>& x) { return x[0].conv2d(x[1], {}, 2, 2, 1, 1); }, {any({2, 4, 5, 5}), any({2, 2, 2, 2})});
  gradcheck("conv2d dilation", [](const std::vector<Tensor>& x) { return x[0].conv2d(x[1], {}, 1, 1, 2, 1); }, {any({1, 1, 5, 5}), any({2, 1, 2, 2})});
  gradcheck("conv_transpose2d", [](const std::vector<Tensor>& x) { return x[0].conv_transpose2d(x[1], x[2], 1, 2, 1, 1); },
            {any({1, 2, 3, 3}), any({2, 3, 2, 2}), any({3})});
  gradcheck("max_pool2d", [](const std::vector<Tensor>& x) { return x[0].max_pool2d(); }, {any({1, 2, 4, 4})});
  gradcheck("max_pool2d stride padding", [](const std::vector<Tensor>& x) { return x[0].max_pool2d(3, 2, 1, 1); }, {any({1, 1, 5, 5})});
  gradcheck("avg_pool2d", [](const std::vector<Tensor>& x) { return x[0].avg_pool2d(2, 1); }, {any({1, 2, 3, 4})});
  gradcheck("layernorm", [](const std::vector<Tensor>& x) { return x[0].layernorm(); }, {any({3, 5})});
  gradcheck("batchnorm", [](const std::vector<Tensor>& x) { return x[0].batchnorm(x[1], x[2], x[3], x[4]); },
            {any({2, 3, 2, 2}), any({3}), any({3}), any({3}), pos({3})});
  gradcheck("batch statistics", [](const std::vector<Tensor>& x) {
    const Tensor mean = x[0].mean({0, 2, 3}, true), var = (x[0] - mean).square().mean({0, 2, 3}, true);
    return (x[0] - mean) * (var + 1e-5).rsqrt(); }, {any({3, 2, 2, 2})});
  gradcheck("scaled_dot_product_attention", [](const std::vector<Tensor>& x) { return x[0].scaled_dot_product_attention(x[1], x[2]); },
            {any({1, 3, 4}), any({1, 2, 4}), any({1, 2, 3})});
  gradcheck("scaled_dot_product_attention causal", [](const std::vector<Tensor>& x) {
    return x[0].scaled_dot_product_attention(x[1], x[2], {}, true); }, {any({1, 3, 2}), any({1, 3, 2}), any({1, 3, 2})});
  gradcheck("cross_entropy probabilities", [](const std::vector<Tensor>& x) { return x[0].cross_entropy(x[1].softmax()); },
            {any({3, 4}), any({3, 4})});
  gradcheck("cross_entropy smoothing", [](const std::vector<Tensor>& x) { return x[0].cross_entropy(Tensor::from_vector<int32_t>({1, 0, 3}), 0.1); },
            {any({3, 4})});
  gradcheck("sparse_categorical_crossentropy", [](const std::vector<Tensor>& x) {
    return x[0].sparse_categorical_crossentropy(Tensor::from_vector<int32_t>({2, 0, 3})); }, {any({3, 4})});
  gradcheck("binary_crossentropy", [](const std::vector<Tensor>& x) { return x[0].binary_crossentropy(x[1]); }, {unit({5}), unit({5})});
  gradcheck("binary_crossentropy_logits", [](const std::vector<Tensor>& x) { return x[0].binary_crossentropy_logits(x[1]); },
            {any({5}), unit({5})});
}

TEST_CASE("gradient: a where masks NaN and inf from the branch it did not take") {
  const Tensor x = Tensor::from_vector<float>({-1.f, 0.f, 4.f});
  // sqrt(-1) is NaN and d sqrt/dx is inf at 0: neither may leak through the masked where
  auto g = (x > 0).where(x.sqrt(), 0).sum().gradient({x});
  CHECK(g[0].to_vector<float>() == std::vector<float>{0.f, 0.f, 0.25f});
  g = (x > 0).where(x.log(), x * 2).sum().gradient({x});
  CHECK(g[0].to_vector<float>() == std::vector<float>{2.f, 2.f, 0.25f});
  g = (x <= 0).where(1, x.reciprocal() * 3).sum().gradient({x});
  CHECK(g[0].to_vector<float>() == std::vector<float>{0.f, 0.f, -3.f / 16});
}

TEST_CASE("gradient: ties in max split the gradient evenly") {
  const Tensor x = Tensor::from_vector<float>({1.f, 3.f, 3.f, 2.f, 3.f, 0.f}, {2, 3});
  CHECK(x.max().gradient({x})[0].to_vector<float>() == std::vector<float>{0, 1.f / 3, 1.f / 3, 0, 1.f / 3, 0});
  CHECK(x.max(1).sum().gradient({x})[0].to_vector<float>() == std::vector<float>{0, 0.5f, 0.5f, 0, 1, 0});
  CHECK(x.min(1).sum().gradient({x})[0].to_vector<float>() == std::vector<float>{1, 0, 0, 0, 0, 1});
  const Tensor a = Tensor::from_vector<float>({1.f, 2.f, 5.f}), b = Tensor::from_vector<float>({1.f, 3.f, 4.f});
  const auto g = a.maximum(b).sum().gradient({a, b});
  CHECK(g[0].to_vector<float>() == std::vector<float>{0.5f, 0.f, 1.f});
  CHECK(g[1].to_vector<float>() == std::vector<float>{0.5f, 1.f, 0.f});
}

TEST_CASE("gradient: unused and detached inputs get zeros, a tensor used twice accumulates") {
  const Tensor x = Tensor::from_vector<float>({1.f, 2.f}), y = Tensor::from_vector<float>({3.f, 4.f});
  const Tensor unused = Tensor::ones({2, 2});
  auto g = (x * x.detach() + y * 0).sum().gradient({x, y, unused});
  CHECK(g[0].to_vector<float>() == std::vector<float>{1.f, 2.f});
  CHECK(g[1].to_vector<float>() == std::vector<float>{0.f, 0.f});
  CHECK(g[2].shape() == Shape{2, 2});
  CHECK(g[2].to_vector<float>() == std::vector<float>{0, 0, 0, 0});
  // x used twice (x * x), and through two paths (x*3 and x.exp())
  g = (x * x + x * 3 + x.exp()).sum().gradient({x});
  tinyt_test::check_close(g[0].to_vector<float>(), {2 + 3 + std::exp(1.0), 4 + 3 + std::exp(2.0)});
  CHECK((x.detach() * 2).sum().gradient({x})[0].to_vector<float>() == std::vector<float>{0.f, 0.f});
}

TEST_CASE("gradient: seeds, and what has no gradient is an error") {
  const Tensor x = Tensor::from_vector<float>({1.f, 2.f, 3.f});
  // a non-scalar needs a seed of its shape
  CHECK(message_of<ShapeError>([&] { (x * 2).gradient({x}); }).find("shape (3,)") != std::string::npos);
  CHECK(message_of<ShapeError>([&] { (x * 2).gradient({x}, Tensor::ones({2})); }).find("seed") != std::string::npos);
  CHECK((x * x).gradient({x}, Tensor::from_vector<float>({1.f, 0.f, -1.f}))[0].to_vector<float>() == std::vector<float>{2.f, 0.f, -6.f});
  // through a comparison or an integer cast the loss does not depend smoothly on x
  CHECK(message_of<Error>([&] { (x > 1).cast(dtypes::float32).sum().gradient({x}); }).find("CMPLT") != std::string::npos);
  CHECK(message_of<Error>([&] { x.cast(dtypes::int32).cast(dtypes::float32).sum().gradient({x}); }).find("no derivative") != std::string::npos);
  CHECK(message_of<Error>([&] { x.argmax().cast(dtypes::float32).gradient({x}); }).find("no derivative") != std::string::npos);
  // integers have no gradient
  const Tensor i = Tensor::from_vector<int32_t>({1, 2});
  CHECK(message_of<DTypeError>([&] { Tensor(i).requires_grad(true); }).find("int32") != std::string::npos);
  CHECK(message_of<DTypeError>([&] { i.sum().gradient({i}); }).find("int32") != std::string::npos);
  CHECK(message_of<DTypeError>([&] { (x * 2).sum().gradient({i}); }).find("target 0") != std::string::npos);
}

TEST_CASE("gradient: backward fills grad of tensors that require it, and accumulates") {
  Tensor w = Tensor::from_vector<float>({1.f, -2.f, 3.f}).requires_grad(true);
  const Tensor x = Tensor::from_vector<float>({2.f, 2.f, 2.f});  // does not require grad
  CHECK(w.requires_grad());
  CHECK_FALSE(x.requires_grad());
  CHECK_FALSE(x.requires_grad_setting().has_value());
  Tensor loss = (w * x).sum();
  loss.backward();
  CHECK_FALSE(x.grad().defined());
  CHECK(w.grad().to_vector<float>() == std::vector<float>{2.f, 2.f, 2.f});
  // a copy of the handle is the same tensor
  Tensor same = w;
  (same * same).sum().backward();
  CHECK(w.grad().to_vector<float>() == std::vector<float>{4.f, -2.f, 8.f});
  w.set_grad({});
  CHECK_FALSE(w.grad().defined());
  // nothing requires grad: an error that says so
  CHECK(message_of<Error>([&] { (x * 2).sum().backward(); }).find("requires grad") != std::string::npos);
  // the loss keeps the value from before an update of w, as PyTorch's does
  Tensor loss2 = (w * w).sum();
  loss2.backward();
  w.assign(w - w.grad() * 0.5);
  w.realize();
  CHECK(loss2.item<float>() == 14.f);
  CHECK(w.to_vector<float>() == std::vector<float>{0.f, 0.f, 0.f});
}

TEST_CASE("gradient: the backward graph fuses and realizes with the forward") {
  Tensor w = Tensor::from_vector<float>(tinyt_test::values(64, 1), {8, 8}).requires_grad(true);
  const Tensor x = Tensor::from_vector<float>(tinyt_test::values(32, 2), {4, 8});
  const Tensor loss = x.matmul(w).relu().square().mean();
  loss.backward();
  // reference by hand: d/dw mean(relu(xw)^2) = x^T (2 relu(xw) / n)
  const auto xv = x.to_vector<float>(), wv = w.to_vector<float>();
  std::vector<double> want(64, 0.0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j) {
      double y = 0;
      for (int k = 0; k < 8; ++k) y += double(xv[size_t(i * 8 + k)]) * wv[size_t(k * 8 + j)];
      const double dy = y > 0 ? 2 * y / 32 : 0;
      for (int k = 0; k < 8; ++k) want[size_t(k * 8 + j)] += double(xv[size_t(i * 8 + k)]) * dy;
    }
  GlobalCounters::reset();
  const Tensor g = w.grad();
  tinyt_test::check_close(Tensor(g).realize().to_vector<float>(), want, 1e-5, 1e-4);
  CHECK(GlobalCounters::kernel_count <= 3);
}
