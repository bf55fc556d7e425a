// Two autograd rules PyTorch users rely on, against PyTorch (tests/data/grad_identity_torch.txt,
// written by tests/data/make_grad_identity_torch.py): a target reached only through values
// without a derivative (detach, integer and bool casts, comparisons, argmax, a where's
// condition) gets zeros; and tensors that require grad are parameters of their own, however
// equal their values or graphs.
#include <algorithm>
#include <cmath>

#include "helpers.hpp"
#include "text_data.hpp"

using namespace tinyt;
using tinyt_test::check_close;
using tinyt_test::floats;
using tinyt_test::message_of;

namespace {

const std::map<std::string, std::vector<double>>& torch_data() {
  static const auto data = test_data::read("grad_identity_torch.txt");
  return data;
}
std::vector<double> want(const std::string& name) { return torch_data().at(name); }

// the script's inputs: n values of cos(0.7 j + k) * 2, rounded to float32
Tensor vals(int64_t n, int k, Shape shape = {}) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) v[static_cast<size_t>(j)] = static_cast<float>(std::cos(0.7 * static_cast<double>(j) + k) * 2);
  return Tensor::from_vector(v, shape.size() ? shape : Shape{n});
}


// float32 gradients against PyTorch's (float64 references of its float32 run), measured as an
// error of the gradient's largest value: a sum's rounding is of its large terms, so a small
// element can be off by much more than its own ulp (up to 1.05e-5 relative here). Measured worst
// (x86-64, LLVM): 3.3e-7 of the largest, about 5.5 float32 roundings (sgd.grad.2.0); allowed 64
// roundings of it plus 64 of the element, a 12x margin for other summation orders and vector widths.
void check_grad(const Tensor& got, const std::string& name) {
  const std::vector<double> w = want(name);
  double scale = 0;
  for (double x : w) scale = std::max(scale, std::fabs(x));
  check_close(floats(got), w, tinyt_test::Tol::f32(64).of(scale));
}

}  // namespace

TEST_CASE("gradient paths: sparse cross entropy against labels cast from y and detached (PyTorch)") {
  const Tensor x = vals(20, 1, {4, 5}), y = Tensor::from_vector<float>({1.2f, 3.7f, 0.f, 4.1f});
  const Tensor loss = x.sparse_categorical_crossentropy(y.cast(dtypes::int32).detach());
  const std::vector<Tensor> g = loss.gradient({x, y});
  check_close({loss.item<float>()}, want("sce.loss"), 1e-6, 1e-6);
  check_grad(g[0], "sce.gx");
  CHECK(g[1].shape() == Shape{4});
  CHECK(floats(g[1]) == std::vector<float>{0, 0, 0, 0});
  // the same through backward(): y requires grad, and gets a zero grad of its own shape
  Tensor px = vals(20, 1, {4, 5}), py = Tensor::from_vector<float>({1.2f, 3.7f, 0.f, 4.1f});
  px.requires_grad(true), py.requires_grad(true);
  px.sparse_categorical_crossentropy(py.cast(dtypes::int32).detach()).backward();
  check_grad(px.grad(), "sce.gx");
  CHECK(floats(py.grad()) == std::vector<float>{0, 0, 0, 0});
}

TEST_CASE("gradient paths: casts to int and bool, comparisons, argmax and where conditions add nothing (PyTorch)") {
  {  // a differentiable path plus int and bool casts: the gradient is the first part only
    const Tensor w = vals(6, 2), c = vals(6, 3);
    const Tensor loss = (w.sin() * c).sum() + (w.cast(dtypes::int32) * 2).cast(dtypes::float32).sum() +
                        w.cast(dtypes::bool_).cast(dtypes::float32).sum();
    check_grad(loss.gradient({w})[0], "mixed.gw");
  }
  {  // x > y as a mask on x^2, and x <= y alone: nothing reaches y
    const Tensor x = vals(6, 4), y = vals(6, 5);
    const Tensor loss = (x.gt(y).cast(dtypes::float32) * x.square()).sum() + x.le(y).cast(dtypes::float32).sum();
    const std::vector<Tensor> g = loss.gradient({x, y});
    check_grad(g[0], "cmp.gx");
    check_grad(g[1], "cmp.gy");
  }
  {  // argmax as a weight of the row sums
    const Tensor x = vals(12, 6, {3, 4});
    const Tensor loss = ((x.argmax(1).cast(dtypes::float32) + 1) * x.sum(1)).sum();
    check_grad(loss.gradient({x})[0], "argmax.gx");
  }
  {  // where: the branches get their part, the condition's source nothing
    const Tensor x = vals(6, 7), y = vals(6, 8);
    const Tensor loss = y.gt(0).where(x * 2, x.exp()).sum() + y.sin().gt(0.5).where(1.0, 0.0).sum();
    const std::vector<Tensor> g = loss.gradient({x, y});
    check_grad(g[0], "where.gx");
    check_grad(g[1], "where.gy");
  }
}

TEST_CASE("gradient paths: a floating-point op without a gradient rule is an error naming it") {
  const Tensor w = Tensor::from_vector<float>({1.f, 2.f, 3.f});
  Tensor stored = Tensor::empty({3});
  stored.assign(w * 2);  // ASSIGN has no rule (yet): not silently zero
  const std::string msg = message_of<Error>([&] { (stored.sum() + w.sum()).gradient({w}); });
  CHECK(msg.find("ASSIGN") != std::string::npos);
  CHECK(msg.find("target 0 (shape (3,))") != std::string::npos);
}

TEST_CASE("parameters: equal tensors that require grad get gradients and updates of their own") {
  // zeros(3) twice is one graph; as parameters they are two, and a plain zeros(3) a third value
  const Tensor plain = Tensor::zeros({3}).realize();
  Tensor w1 = Tensor::zeros({3}), w2 = Tensor::zeros({3});
  w1.requires_grad(true), w2.requires_grad(true);
  const Tensor x = Tensor::from_vector<float>({1.f, 2.f, 3.f});
  const Tensor loss = (w1 * x + w2 * 10 + plain * 100).sum();
  const std::vector<Tensor> g = loss.gradient({w1, w2});
  CHECK(floats(g[0]) == std::vector<float>{1, 2, 3});
  CHECK(floats(g[1]) == std::vector<float>{10, 10, 10});
  loss.backward();
  CHECK(floats(w1.grad()) == std::vector<float>{1, 2, 3});
  CHECK(floats(w2.grad()) == std::vector<float>{10, 10, 10});
  nn::optim::SGD opt({w1, w2}, 0.5);  // used to throw "params share memory"
  opt.step();
  CHECK(floats(w1) == std::vector<float>{-0.5f, -1.f, -1.5f});
  CHECK(floats(w2) == std::vector<float>{-5, -5, -5});
  CHECK(floats(plain) == std::vector<float>{0, 0, 0});
  CHECK(floats(Tensor::zeros({3})) == std::vector<float>{0, 0, 0});
}

TEST_CASE("parameters: requires_grad copies memory only when something else may name it") {
  // zeros(3) built twice is one graph, and what w is computed into, plain (still lazy) reads:
  // w becomes a parameter by a copy
  const Tensor plain = Tensor::zeros({3});
  Tensor w = Tensor::zeros({3}).realize();
  GlobalCounters::reset();
  w.requires_grad(true);
  CHECK(GlobalCounters::kernel_count == 1);
  nn::optim::SGD opt({w}, 1.0);
  w.set_grad(Tensor::from_vector<float>({1.f, 2.f, 3.f}));
  opt.step();
  CHECK(floats(w) == std::vector<float>{-1, -2, -3});
  CHECK(floats(plain) == std::vector<float>{0, 0, 0});
  // memory that only this tensor names (from_vector, a load) is a parameter as it is
  Tensor loaded = Tensor::from_vector<float>({1.f, 2.f, 3.f}, {3, 1});
  GlobalCounters::reset();
  loaded.requires_grad(true);
  CHECK(GlobalCounters::kernel_count == 0);
  // ... but not when another handle views it
  Tensor viewed = Tensor::from_vector<float>({1.f, 2.f, 3.f});
  const Tensor view = viewed.reshape({3, 1});
  GlobalCounters::reset();
  viewed.requires_grad(true);
  CHECK(GlobalCounters::kernel_count == 1);
  CHECK(floats((view * 2 + viewed.reshape({3, 1})).sum().gradient({viewed})[0]) == std::vector<float>{1, 1, 1});
}

TEST_CASE("parameters: equal-initialized Linear layers and vectors train as PyTorch's, SGD momentum and Adam") {
  const Tensor x1 = vals(12, 9, {4, 3}), x2 = vals(12, 10, {4, 3});
  const Tensor t = vals(8, 11, {4, 2}), v = vals(3, 12), u = vals(3, 13);
  for (const std::string name : {"sgd", "adam"}) {
    INFO("optimizer ", name);
    // equal in pairs: the weights full(0.25), the biases and the vectors zeros; the optimizer's
    // momentum buffers and moments start as equal zeros too
    nn::Linear l1(3, 2), l2(3, 2);
    l1.weight = Tensor::full({2, 3}, 0.25f), l2.weight = Tensor::full({2, 3}, 0.25f);
    l1.bias = Tensor::zeros({2}), l2.bias = Tensor::zeros({2});
    Tensor w3 = Tensor::zeros({3}), w4 = Tensor::zeros({3});
    const std::vector<Tensor> params{l1.weight, l2.weight, l1.bias, l2.bias, w3, w4};
    std::unique_ptr<nn::optim::Optimizer> opt;
    if (name == "sgd") opt = std::make_unique<nn::optim::SGD>(params, 0.1, 0.9);
    else opt = std::make_unique<nn::optim::Adam>(params, 0.05);
    for (int s = 0; s < 3; ++s) {
      INFO("step ", s);
      opt->zero_grad();
      const Tensor loss = (l1(x1) - t).square().mean() + (l2(x2).tanh() * 0.5).sum() + (w3 * v).sum() +
                          (w4 * w4 + w4 * u).sum();
      loss.backward();
      check_close({loss.item<float>()}, want(name + ".loss." + std::to_string(s)), 1e-6, 1e-5);
      for (size_t k = 0; k < params.size(); ++k) {
        INFO("param ", k);
        check_grad(params[k].grad(), name + ".grad." + std::to_string(s) + "." + std::to_string(k));
      }
      opt->step();
      for (size_t k = 0; k < params.size(); ++k) {
        INFO("param ", k);
        check_close(floats(params[k]), want(name + ".param." + std::to_string(s) + "." + std::to_string(k)), 1e-6, 1e-5);
      }
    }
  }
}
