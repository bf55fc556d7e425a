// Training parity with PyTorch: the same MLP, data and start as tests/data/make_mlp_sgd.py,
// trained for 30 steps with backward() and nn::optim::SGD, must follow torch's loss curve and
// reach torch's weights.
#include <doctest/doctest.h>

#include <cmath>

#include <tinyt.hpp>

#include "helpers.hpp"
#include "text_data.hpp"

using namespace tinyt;

TEST_CASE("training parity: an MLP trained with SGD and momentum follows PyTorch step by step") {
  constexpr int64_t kN = 32, kIn = 8, kHidden = 16, kOut = 4;
  constexpr int kSteps = 30;
  const auto data = test_data::read("mlp_sgd.txt");
  const auto floats = [&](const std::string& name) { return test_data::floats(data, name); };
  const std::vector<double>& labels = data.at("y");

  Tensor x = Tensor::from_vector(floats("x"), {kN, kIn});
  Tensor y = Tensor::from_vector(std::vector<int32_t>(labels.begin(), labels.end()), {kN});
  const std::vector<std::pair<std::string, Shape>> names = {
      {"w1", {kIn, kHidden}}, {"b1", {kHidden}}, {"w2", {kHidden, kOut}}, {"b2", {kOut}}};
  std::vector<Tensor> params;
  for (const auto& [name, shape] : names)
    params.push_back(Tensor::from_vector(floats("init." + name), shape));
  const Tensor &w1 = params[0], &b1 = params[1], &w2 = params[2], &b2 = params[3];

  nn::optim::SGD opt(params, 0.1, 0.9);
  const std::vector<float> want_loss = floats("loss");
  REQUIRE(want_loss.size() == kSteps);
  for (int step = 0; step < kSteps; ++step) {
    Tensor::Train train;
    GlobalCounters::reset();
    opt.zero_grad();
    Tensor loss = x.linear(w1, b1).relu().linear(w2, b2).sparse_categorical_crossentropy(y);
    loss.backward();
    opt.step();
    INFO("step ", step);
    if (step > 0)
      CHECK(GlobalCounters::compile_count.load() == 0);  // the step's kernels are cached
    // read after the step: the loss keeps the value of the weights it was computed from
    const double got = loss.item<float>(), want = want_loss[static_cast<size_t>(step)];
    // both sides in float32, summed in their own orders, compounding over the steps: measured at
    // most 5 roundings (step 12, either backend); 64 allowed (was 1e-4, about 1700)
    CHECK(std::fabs(got - want) <= 64 * 0x1p-24 * std::fabs(want));
  }
  for (size_t k = 0; k < names.size(); ++k) {
    INFO(names[k].first);
    const std::vector<float> want = floats("final." + names[k].first);
    // 30 steps of forward, backward and update in float32 on both sides, summed in different
    // orders: the differences compound through training and no rounding count bounds them;
    // measured at most 131 roundings (relative 8e-6), allowed 1e-5 (168)
    tinyt_test::check_close(params[k].to_vector<float>(),
                            std::vector<double>(want.begin(), want.end()), tinyt_test::Tol{1e-6, 1e-5});
  }
}
