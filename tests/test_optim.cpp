// nn::optim: SGD, Adam, AdamW and LAMB, stepped with grads set by hand (no backward), against
// torch.optim (tests/data/optim_torch.txt) and against the update formulas in double precision.
#include <doctest/doctest.h>

#include <cmath>

#include <tinyt.hpp>

#include "helpers.hpp"
#include "text_data.hpp"

using namespace tinyt;
using tinyt_test::check_close;
using tinyt_test::message_of;

namespace {

const std::vector<Shape> kShapes = {{2, 3}, {4}};
constexpr int kSteps = 5;

// the params and per-step grads of optim_torch.txt
struct Problem {
  std::vector<std::vector<float>> init;
  std::vector<std::vector<std::vector<float>>> grads;  // [step][param]
};
const Problem& problem() {
  static const Problem p = [] {
    auto data = test_data::read("optim_torch.txt");
    Problem out;
    for (size_t k = 0; k < kShapes.size(); ++k)
      out.init.push_back(test_data::floats(data, "init." + std::to_string(k)));
    for (int s = 0; s < kSteps; ++s) {
      out.grads.emplace_back();
      for (size_t k = 0; k < kShapes.size(); ++k)
        out.grads.back().push_back(
            test_data::floats(data, "grad." + std::to_string(s) + "." + std::to_string(k)));
    }
    return out;
  }();
  return p;
}

std::vector<Tensor> make_params() {
  std::vector<Tensor> params;
  for (size_t k = 0; k < kShapes.size(); ++k)
    params.push_back(Tensor::from_vector(problem().init[k], kShapes[k]));
  return params;
}

void set_grads(const std::vector<Tensor>& params, int step) {
  for (size_t k = 0; k < params.size(); ++k) {
    Tensor p = params[k];
    p.set_grad(Tensor::from_vector(problem().grads[static_cast<size_t>(step)][k], kShapes[k]));
  }
}

// -- the update formulas in double precision ---------------------------------------------------

enum class Kind { sgd, adam, adamw, lamb };
struct Hyper {
  Kind kind;
  double lr, momentum_or_b1 = 0, b2 = 0, eps = 0, wd = 0;
  bool nesterov = false;
};

// One param's state in the reference.
struct RefParam {
  std::vector<double> p, buf, m, v;
};

// Steps every param once; t is the step number from 1.
void reference_step(const Hyper& h, std::vector<RefParam>& ps,
                    const std::vector<std::vector<float>>& grads, int t) {
  for (size_t k = 0; k < ps.size(); ++k) {
    RefParam& r = ps[k];
    const size_t n = r.p.size();
    r.buf.resize(n), r.m.resize(n), r.v.resize(n);
    std::vector<double> up(n);
    for (size_t j = 0; j < n; ++j) {
      double g = grads[k][j];
      if (h.kind == Kind::sgd) {
        g += h.wd * r.p[j];
        if (h.momentum_or_b1 != 0) {
          r.buf[j] = t == 1 ? g : h.momentum_or_b1 * r.buf[j] + g;
          g = h.nesterov ? g + h.momentum_or_b1 * r.buf[j] : r.buf[j];
        }
        up[j] = h.lr * g;
        continue;
      }
      if (h.kind == Kind::adam) g += h.wd * r.p[j];
      const double b1 = h.momentum_or_b1;
      r.m[j] = b1 * r.m[j] + (1 - b1) * g;
      r.v[j] = h.b2 * r.v[j] + (1 - h.b2) * g * g;
      const double m_hat = r.m[j] / (1 - std::pow(b1, t)), v_hat = r.v[j] / (1 - std::pow(h.b2, t));
      up[j] = m_hat / (std::sqrt(v_hat) + h.eps);
      if (h.kind == Kind::lamb) up[j] += h.wd * r.p[j];
      if (h.kind == Kind::adamw) r.p[j] -= h.lr * h.wd * r.p[j];
      if (h.kind != Kind::lamb) up[j] *= h.lr;
    }
    if (h.kind == Kind::lamb) {
      double r1 = 0, r2 = 0;
      for (size_t j = 0; j < n; ++j) r1 += r.p[j] * r.p[j], r2 += up[j] * up[j];
      r1 = std::sqrt(r1), r2 = std::sqrt(r2);
      const double trust = r1 > 0 && r2 > 0 ? r1 / r2 : 1.0;
      for (double& u : up) u *= h.lr * trust;
    }
    for (size_t j = 0; j < n; ++j) r.p[j] -= up[j];
  }
}

std::vector<RefParam> reference_init() {
  std::vector<RefParam> ps;
  for (const auto& v : problem().init)
    ps.push_back({std::vector<double>(v.begin(), v.end()), {}, {}, {}});
  return ps;
}

// Steps `opt` on `params` and the reference side by side, checking every param after every step.
void check_against_reference(nn::optim::Optimizer& opt, const std::vector<Tensor>& params,
                             const Hyper& h) {
  std::vector<RefParam> ref = reference_init();
  for (int s = 0; s < kSteps; ++s) {
    set_grads(params, s);
    opt.step();
    reference_step(h, ref, problem().grads[static_cast<size_t>(s)], s + 1);
    for (size_t k = 0; k < params.size(); ++k) {
      INFO("step ", s, " param ", k);
      // 5 steps of an update rounded about 8 times (params and updates below 1): 16 roundings of 1
      check_close(params[k].to_vector<float>(), ref[k].p, tinyt_test::Tol::f32(16).of(1));
    }
  }
}

// Steps `opt` and compares with what torch.optim gave for the config `name`.
void check_against_torch(nn::optim::Optimizer& opt, const std::vector<Tensor>& params,
                         const std::string& name) {
  static const auto data = test_data::read("optim_torch.txt");
  for (int s = 0; s < kSteps; ++s) {
    set_grads(params, s);
    opt.step();
    for (size_t k = 0; k < params.size(); ++k) {
      INFO(name, " step ", s, " param ", k);
      const std::vector<float> want =
          test_data::floats(data, name + "." + std::to_string(s) + "." + std::to_string(k));
      // torch rounds in float32 too, in its own order: both sides err by a few roundings of the
      // updates (about 0.1)
      check_close(params[k].to_vector<float>(), want, tinyt_test::Tol::f32(16).of(0.1));
    }
  }
}

}  // namespace

TEST_CASE("optim: SGD matches torch.optim.SGD plain, with momentum, nesterov and weight decay") {
  {
    auto ps = make_params();
    nn::optim::SGD opt(ps, 0.1);
    check_against_torch(opt, ps, "sgd");
  }
  {
    auto ps = make_params();
    nn::optim::SGD opt(ps, 0.05, 0.9);
    check_against_torch(opt, ps, "sgd_momentum");
  }
  {
    auto ps = make_params();
    nn::optim::SGD opt(ps, 0.05, 0.8, 0.1, true);
    check_against_torch(opt, ps, "sgd_nesterov_wd");
  }
  {
    auto ps = make_params();
    nn::optim::SGD opt(ps, 0.1, 0.0, 0.3);
    check_against_torch(opt, ps, "sgd_wd");
  }
}

TEST_CASE("optim: Adam and AdamW match torch.optim, with and without weight decay") {
  {
    auto ps = make_params();
    nn::optim::Adam opt(ps, 0.01);
    check_against_torch(opt, ps, "adam");
  }
  {
    auto ps = make_params();
    nn::optim::Adam opt(ps, 0.01, 0.8, 0.99, 1e-6, 0.1);
    check_against_torch(opt, ps, "adam_wd");
  }
  {
    auto ps = make_params();
    nn::optim::AdamW opt(ps, 0.01);
    check_against_torch(opt, ps, "adamw");
  }
  {
    auto ps = make_params();
    nn::optim::AdamW opt(ps, 0.02, 0.85, 0.995, 1e-7, 0.5);
    check_against_torch(opt, ps, "adamw_wd");
  }
}

TEST_CASE("optim: every optimizer matches its update formula computed in double") {
  struct Case {
    const char* name;
    std::function<std::unique_ptr<nn::optim::Optimizer>(const std::vector<Tensor>&)> make;
    Hyper h;
  };
  using namespace nn::optim;
  const std::vector<Case> cases = {
      {"SGD", [](auto& p) { return std::make_unique<SGD>(p, 0.1); }, {Kind::sgd, 0.1}},
      {"SGD momentum",
       [](auto& p) { return std::make_unique<SGD>(p, 0.05, 0.9); },
       {Kind::sgd, 0.05, 0.9}},
      {"SGD nesterov",
       [](auto& p) { return std::make_unique<SGD>(p, 0.05, 0.7, 0.0, true); },
       {Kind::sgd, 0.05, 0.7, 0, 0, 0, true}},
      {"SGD momentum wd",
       [](auto& p) { return std::make_unique<SGD>(p, 0.05, 0.9, 0.2); },
       {Kind::sgd, 0.05, 0.9, 0, 0, 0.2}},
      {"Adam",
       [](auto& p) { return std::make_unique<Adam>(p, 0.01, 0.9, 0.999, 1e-8, 0.05); },
       {Kind::adam, 0.01, 0.9, 0.999, 1e-8, 0.05}},
      {"Adam b1 below 0.5",
       [](auto& p) { return std::make_unique<Adam>(p, 0.01, 0.3, 0.9); },
       {Kind::adam, 0.01, 0.3, 0.9, 1e-8}},
      {"AdamW",
       [](auto& p) { return std::make_unique<AdamW>(p, 0.01, 0.9, 0.999, 1e-8, 0.3); },
       {Kind::adamw, 0.01, 0.9, 0.999, 1e-8, 0.3}},
      {"LAMB",
       [](auto& p) { return std::make_unique<LAMB>(p, 0.01); },
       {Kind::lamb, 0.01, 0.9, 0.999, 1e-6}},
      {"LAMB wd",
       [](auto& p) { return std::make_unique<LAMB>(p, 0.02, 0.8, 0.99, 1e-6, 0.1); },
       {Kind::lamb, 0.02, 0.8, 0.99, 1e-6, 0.1}},
  };
  for (const Case& c : cases) {
    INFO(std::string(c.name));
    auto ps = make_params();
    auto opt = c.make(ps);
    check_against_reference(*opt, ps, c.h);
  }
}

TEST_CASE("optim: LAMB's trust ratio is 1 for a zero param") {
  Tensor w = Tensor::from_vector(std::vector<float>{0, 0, 0});
  nn::optim::LAMB opt({w}, 0.1);
  w.set_grad(Tensor::from_vector(std::vector<float>{1, -2, 0}));
  opt.step();
  // first step: m_hat = g, v_hat = g^2, so the step is lr * g / (|g| + eps) with r = 1
  check_close(w.to_vector<float>(), std::vector<double>{-0.1 / (1 + 1e-6), 0.1 * 2 / (2 + 1e-6), 0.0},
              tinyt_test::Tol::f32(4));  // eps 1e-6: 1/(1+eps) is 17 roundings from 1
}

TEST_CASE(
    "optim: a step is one schedule of a fixed few kernels and the second step compiles nothing") {
  using namespace nn::optim;
  struct Case {
    const char* name;
    std::function<std::unique_ptr<Optimizer>(const std::vector<Tensor>&)> make;
    int64_t kernels;  // per step, for the two params
  };
  const std::vector<Case> cases = {
      {"SGD", [](auto& p) { return std::make_unique<SGD>(p, 0.1); }, 2},  // one update per param
      {"SGD momentum", [](auto& p) { return std::make_unique<SGD>(p, 0.1, 0.9); },
       4},                                                             // + velocity
      {"Adam", [](auto& p) { return std::make_unique<Adam>(p); }, 8},  // 2 betas + m, v, p each
      {"AdamW", [](auto& p) { return std::make_unique<AdamW>(p); }, 8},
      // + the two norms each, whose square roots and trust ratio their reductions' kernels store
      {"LAMB", [](auto& p) { return std::make_unique<LAMB>(p); }, 10},
  };
  for (const Case& c : cases) {
    INFO(std::string(c.name));
    auto ps = make_params();
    auto opt = c.make(ps);
    for (int s = 0; s < 3; ++s) {
      set_grads(ps, s);
      GlobalCounters::reset();
      opt->step();
      INFO("step ", s);
      CHECK(GlobalCounters::kernel_count.load() == c.kernels);
      if (s > 0) CHECK(GlobalCounters::compile_count.load() == 0);
    }
  }
}

TEST_CASE(
    "optim: schedule_step realized with the loss is one schedule and the loss keeps its value") {
  Tensor w = Tensor::from_vector(std::vector<float>{1, 2, 3});
  nn::optim::SGD opt({w}, 0.5);
  Tensor loss = (w * w).sum();  // lazy, reads w's memory before the update
  w.set_grad(Tensor::from_vector(std::vector<float>{2, 4, 6}));
  std::vector<Tensor> all = opt.schedule_step();
  all.push_back(loss);
  GlobalCounters::reset();
  realize_tensors(all);
  CHECK(GlobalCounters::kernel_count.load() == 2);  // the loss, then the update
  CHECK(loss.item<float>() == 14.f);
  CHECK(w.to_vector<float>() == std::vector<float>{0, 0, 0});
}

TEST_CASE("optim: lr changed between steps takes effect without compiling") {
  auto ps = make_params();
  nn::optim::SGD opt(ps, 0.1, 0.9);
  Hyper h{Kind::sgd, 0.1, 0.9};
  std::vector<RefParam> ref = reference_init();
  for (int s = 0; s < kSteps; ++s) {
    GlobalCounters::reset();
    if (s == 2) opt.set_lr(h.lr = 0.025);
    if (s == 3) opt.set_lr(h.lr = 0.5);
    if (s == 4) opt.lr.assign(h.lr = 0.125);                       // lazy: realized by the step
    if (s == 3) CHECK(GlobalCounters::compile_count.load() == 0);  // set_lr's copy kernel is cached
    set_grads(ps, s);
    if (s >= 2) GlobalCounters::reset();
    opt.step();
    // only the kernel storing the constant 0.125 into lr is new
    if (s >= 2) CHECK(GlobalCounters::compile_count.load() == (s == 4 ? 1 : 0));
    reference_step(h, ref, problem().grads[static_cast<size_t>(s)], s + 1);
    INFO("step ", s);
    for (size_t k = 0; k < ps.size(); ++k)
      check_close(ps[k].to_vector<float>(), ref[k].p, tinyt_test::Tol::f32(16).of(1));  // as check_against_reference
  }
  CHECK(opt.lr.item<float>() == 0.125f);
  CHECK_THROWS_AS(opt.set_lr(-1.0), Error);
}

TEST_CASE("optim: zero_grad clears every grad and a step without a grad names the param") {
  auto ps = make_params();
  nn::optim::Adam opt(ps);
  set_grads(ps, 0);
  opt.step();
  CHECK(ps[0].grad().defined());
  opt.zero_grad();
  CHECK(!ps[0].grad().defined());
  CHECK(!ps[1].grad().defined());
  const std::vector<float> before = ps[1].to_vector<float>();
  ps[0].set_grad(Tensor::ones({2, 3}));
  const std::string msg = message_of<Error>([&] { opt.step(); });
  CHECK(msg.find("Adam.step") != std::string::npos);
  CHECK(msg.find("param 1") != std::string::npos);
  CHECK(msg.find("(4,)") != std::string::npos);
  // nothing moved: the check comes before any update is assigned
  CHECK(ps[1].to_vector<float>() == before);
  ps[1].set_grad(Tensor::ones({4}));
  opt.step();
  CHECK(ps[1].to_vector<float>() != before);
}

TEST_CASE(
    "optim: params are deduplicated, requires_grad turned on, and buffers realized with the step") {
  Tensor w = Tensor::from_vector(std::vector<float>{1, 2});
  Tensor frozen = Tensor::from_vector(std::vector<float>{5, 5});
  frozen.requires_grad(false);
  Tensor counter = Tensor::from_vector(std::vector<int32_t>{0});
  counter.requires_grad(false);  // an int buffer is fine when it is not trained
  nn::optim::SGD opt({w, w, frozen, Tensor(w), counter}, 0.5);
  CHECK(opt.params().size() == 1);
  CHECK(opt.buffers().size() == 2);
  CHECK(w.requires_grad());
  CHECK(!frozen.requires_grad());
  // a value assigned to a buffer in the forward pass (BatchNorm's running mean) is realized by
  // the step, so it does not grow into a longer graph every step
  frozen.assign(frozen * 0.5 + 1);
  counter.assign(counter + 1);
  w.set_grad(Tensor::from_vector(std::vector<float>{2, 4}));
  opt.step();
  GlobalCounters::reset();
  CHECK(frozen.to_vector<float>() == std::vector<float>{3.5f, 3.5f});
  CHECK(counter.item<int32_t>() == 1);
  CHECK(GlobalCounters::kernel_count == 0);
  CHECK(w.to_vector<float>() == std::vector<float>{0, 0});
}

TEST_CASE("optim: the state is in memory and a float64 param gets a float64 lr") {
  Tensor w = Tensor::from_vector(std::vector<double>{1, 2});
  nn::optim::Adam opt({w}, 0.5);
  CHECK(opt.lr.dtype() == dtypes::float64);
  CHECK(opt.state().size() == 5);  // lr, b1^t, b2^t, m, v
  w.set_grad(Tensor::from_vector(std::vector<double>{1, -1}));
  opt.step();
  const std::vector<double> got = w.to_vector<double>();
  // first step: m_hat = g, v_hat = g^2, so p -= lr * g / (|g| + eps), all in double
  const double step = 0.5 / (1 + 1e-8);
  CHECK(got[0] == doctest::Approx(1 - step).epsilon(1e-14));
  CHECK(got[1] == doctest::Approx(2 + step).epsilon(1e-14));
}

TEST_CASE("optim: bad hyperparameters, params and grads throw errors that name them") {
  using namespace nn::optim;
  auto ps = make_params();
  CHECK(message_of<Error>([&] { SGD(ps, -0.1); }).find("SGD: invalid lr -0.1") !=
        std::string::npos);
  CHECK_THROWS_AS(SGD(ps, 0.1, -0.5), Error);
  CHECK_THROWS_AS(SGD(ps, 0.1, 0.0, -1.0), Error);
  CHECK(message_of<Error>([&] { SGD(ps, 0.1, 0.0, 0.0, true); }).find("nesterov") !=
        std::string::npos);
  CHECK(message_of<Error>([&] { Adam(ps, 0.1, 1.0); }).find("Adam: invalid b1 1") !=
        std::string::npos);
  CHECK_THROWS_AS(AdamW(ps, 0.1, 0.9, -0.1), Error);
  CHECK_THROWS_AS(LAMB(ps, 0.1, 0.9, 0.999, -1e-6), Error);
  CHECK_THROWS_AS(Adam(ps, std::nan("")), Error);

  CHECK(message_of<Error>([] { SGD({}, 0.1); }).find("no param") != std::string::npos);
  CHECK(message_of<Error>([] { SGD({Tensor()}, 0.1); }).find("param 0 is the empty") !=
        std::string::npos);
  Tensor ints = Tensor::from_vector(std::vector<int32_t>{1, 2});
  const std::string msg = message_of<DTypeError>([&] { Adam({ps[0], ints}); });
  CHECK(msg.find("param 1 of shape (2,) is int32") != std::string::npos);

  SGD opt(ps, 0.1);
  set_grads(ps, 0);
  ps[1].set_grad(Tensor::ones({2, 2}));
  CHECK(message_of<ShapeError>([&] {
          opt.step();
        }).find("grad of param 1 has shape (2, 2), the param (4,)") != std::string::npos);
  ps[1].set_grad(Tensor::from_vector(std::vector<int32_t>{1, 2, 3, 4}));
  CHECK_THROWS_AS(opt.step(), DTypeError);
  ps[1].set_grad(Tensor::ones({4}));
  opt.step();  // the optimizer is still usable after a refused step
  check_close(
      ps[1].to_vector<float>(),
      std::vector<double>{0.54030228 - 0.1, 0.0707372 - 0.1, -0.41614684 - 0.1, -0.80114359 - 0.1},
      tinyt_test::Tol::f32(4).of(1));  // 0.1 and the difference rounded; relative to 1 (cancellation)
}
