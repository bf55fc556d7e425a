// nn layers (nn/layers.hpp) and reflection (nn/state.hpp): each layer against loops written
// here in double and against PyTorch's outputs (tests/data/nn_layers_torch.inc), BatchNorm's
// training and running statistics, the initializations, state-dict keys, parameters and
// load_state_dict with its errors.
#include <doctest/doctest.h>

#include <array>
#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/define_struct.hpp>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;
using namespace tinyt_test;

namespace {
#include "data/nn_layers_torch.inc"

using Dims = std::vector<int64_t>;

/// The values of gen_nn_layers_torch.py's det(): a grid of 1/4 in [-2, 2], exact in float.
std::vector<float> det_values(const Dims& s, int seed) {
  std::vector<float> v(static_cast<size_t>(count(s)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>((static_cast<int64_t>(i) * 7 + seed * 13) % 17 - 8) / 4.f;
  return v;
}
Tensor det(const Dims& s, int seed) { return Tensor::from_vector(det_values(s, seed), Shape(s)); }
Tensor tensor(const std::vector<float>& v, const Dims& s) {
  return Tensor::from_vector(v, Shape(s));
}
std::vector<std::string> keys_of(const std::map<std::string, Tensor>& sd) {
  std::vector<std::string> keys;
  for (const auto& [k, t] : sd) keys.push_back(k);
  return keys;
}
/// Every value within +-bound, and spread over it (not all one value).
void check_uniform(const Tensor& t, double bound) {
  const auto v = floats(t);
  REQUIRE(!v.empty());
  float lo = v[0], hi = v[0];
  for (float f : v) {
    CHECK(std::fabs(static_cast<double>(f)) <= bound * (1 + 1e-6));  // float rounding
    lo = std::min(lo, f), hi = std::max(hi, f);
  }
  CHECK(lo < -0.5 * bound);
  CHECK(hi > 0.5 * bound);
}

// -- references in double --------------------------------------------------------------------

// PyTorch's conv2d: x (N, C, H, W), w (O, C/groups, KH, KW), symmetric zero padding.
std::vector<double> ref_conv2d(const std::vector<float>& x, Dims xs, const std::vector<float>& w,
                               Dims ws, const std::vector<float>& b, int64_t groups, Dims stride,
                               Dims pad, Dims dil, Dims& out) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], CG = ws[1], KH = ws[2],
                KW = ws[3];
  const int64_t OH = (H + 2 * pad[0] - dil[0] * (KH - 1) - 1) / stride[0] + 1;
  const int64_t OW = (W + 2 * pad[1] - dil[1] * (KW - 1) - 1) / stride[1] + 1;
  out = {N, O, OH, OW};
  std::vector<double> y(static_cast<size_t>(N * O * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double acc = b.empty() ? 0.0 : at(b, o);
          const int64_t g = o / (O / groups);
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t p = 0; p < KH; ++p)
              for (int64_t q = 0; q < KW; ++q) {
                const int64_t r = i * stride[0] - pad[0] + p * dil[0];
                const int64_t s = j * stride[1] - pad[1] + q * dil[1];
                if (r < 0 || r >= H || s < 0 || s >= W) continue;
                acc += at(x, ((n * C + g * CG + c) * H + r) * W + s) *
                       at(w, ((o * CG + c) * KH + p) * KW + q);
              }
          y[static_cast<size_t>(((n * O + o) * OH + i) * OW + j)] = acc;
        }
  return y;
}

/// Per-channel mean and biased variance of x (N, C, S) (S: the product of the spatial dims).
void channel_stats(const std::vector<float>& x, int64_t N, int64_t C, int64_t S,
                   std::vector<double>& mean, std::vector<double>& var) {
  mean.assign(static_cast<size_t>(C), 0.0), var.assign(static_cast<size_t>(C), 0.0);
  const double m = static_cast<double>(N * S);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s)
        mean[static_cast<size_t>(c)] += at(x, (n * C + c) * S + s) / m;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s) {
        const double d = at(x, (n * C + c) * S + s) - mean[static_cast<size_t>(c)];
        var[static_cast<size_t>(c)] += d * d / m;
      }
  }
}
std::vector<double> ref_batchnorm(const std::vector<float>& x, int64_t N, int64_t C, int64_t S,
                                  const std::vector<double>& mean, const std::vector<double>& var,
                                  const std::vector<float>& w, const std::vector<float>& b,
                                  double eps) {
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        const auto i = static_cast<size_t>((n * C + c) * S + s);
        const auto ci = static_cast<size_t>(c);
        y[i] = (x[i] - mean[ci]) / std::sqrt(var[ci] + eps) * w[ci] + b[ci];
      }
  return y;
}

/// Rows of `len` normalized to mean 0 and variance 1 (biased), as layernorm.
std::vector<double> ref_normalize_rows(const std::vector<float>& x, int64_t len, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r * static_cast<size_t>(len) < x.size(); ++r) {
    const size_t o = r * static_cast<size_t>(len);
    double mean = 0, var = 0;
    for (int64_t i = 0; i < len; ++i)
      mean += x[o + static_cast<size_t>(i)] / static_cast<double>(len);
    for (int64_t i = 0; i < len; ++i) {
      const double d = x[o + static_cast<size_t>(i)] - mean;
      var += d * d / static_cast<double>(len);
    }
    for (int64_t i = 0; i < len; ++i)
      y[o + static_cast<size_t>(i)] = (x[o + static_cast<size_t>(i)] - mean) / std::sqrt(var + eps);
  }
  return y;
}
}  // namespace

// -- Linear ------------------------------------------------------------------------------------

TEST_CASE("nn::Linear: forward against a double loop, batched and 3-d, with and without bias") {
  nn::Linear lin(4, 3);
  const auto w = values(12, 1), b = values(3, 2), x = values(2 * 5 * 4, 3);
  lin.weight = tensor(w, {3, 4});
  lin.bias = tensor(b, {3});
  auto ref = [&](bool bias) {
    std::vector<double> y;
    for (int64_t r = 0; r < 10; ++r)
      for (int64_t o = 0; o < 3; ++o) {
        double acc = bias ? at(b, o) : 0.0;
        for (int64_t i = 0; i < 4; ++i) acc += at(x, r * 4 + i) * at(w, o * 4 + i);
        y.push_back(acc);
      }
    return y;
  };
  Tensor y = lin(tensor(x, {2, 5, 4}));
  CHECK(y.shape() == Shape{2, 5, 3});
  check_close(floats(y), ref(true), Tol::exact());
  nn::Linear no_bias(4, 3, false);
  CHECK(!no_bias.bias.defined());
  no_bias.weight = lin.weight;
  check_close(floats(no_bias(tensor(x, {10, 4}))), ref(false), Tol::exact());
  const std::string msg = message_of<ShapeError>([&] { lin(Tensor::ones({2, 5})); });
  CHECK(contains(msg, "Linear"));
  CHECK(contains(msg, "(2, 5)"));
}

TEST_CASE("nn::Linear: weight (out, in) and bias uniform in 1/sqrt(in), float32") {
  Tensor::manual_seed(7);
  nn::Linear lin(50, 40);
  CHECK(lin.weight.shape() == Shape{40, 50});
  CHECK(lin.bias.shape() == Shape{40});
  CHECK(lin.weight.dtype() == dtypes::float32);
  CHECK(lin.bias.dtype() == dtypes::float32);
  check_uniform(lin.weight, 1.0 / std::sqrt(50.0));
  check_uniform(lin.bias, 1.0 / std::sqrt(50.0));
  CHECK_THROWS_AS(nn::Linear(-1, 3), ShapeError);
}

// -- Conv2d ------------------------------------------------------------------------------------

TEST_CASE("nn::Conv2d: forward against a double loop with groups, stride, padding, dilation") {
  nn::Conv2d conv(4, 6, {2, 3}, {2, 1}, {1, 2}, {1, 2}, 2);
  CHECK(conv.weight.shape() == Shape{6, 2, 2, 3});
  const auto w = values(6 * 2 * 2 * 3, 4), b = values(6, 5), x = values(2 * 4 * 5 * 7, 6);
  conv.weight = tensor(w, {6, 2, 2, 3});
  conv.bias = tensor(b, {6});
  Dims out;
  auto want = ref_conv2d(x, {2, 4, 5, 7}, w, {6, 2, 2, 3}, b, 2, {2, 1}, {1, 2}, {1, 2}, out);
  Tensor y = conv(tensor(x, {2, 4, 5, 7}));
  CHECK(y.shape() == Shape(out));
  check_close(floats(y), want, Tol::exact());
  // a square kernel from one int, the defaults (stride 1, no padding), no bias
  nn::Conv2d plain(3, 2, 3, 1, 0, 1, 1, false);
  CHECK(plain.weight.shape() == Shape{2, 3, 3, 3});
  CHECK(!plain.bias.defined());
  const auto x2 = values(3 * 5 * 5, 7);
  want = ref_conv2d(x2, {1, 3, 5, 5}, floats(plain.weight), {2, 3, 3, 3}, {}, 1, {1, 1}, {0, 0},
                    {1, 1}, out);
  // random weights: 27 rounded products and 26 sums of partial sums up to 27 * 2 / sqrt(27)
  check_close(floats(plain(tensor(x2, {1, 3, 5, 5}))), want, Tol::f32(27).of(10.4));
}

TEST_CASE("nn::Conv2d: weight (out, in/groups, kh, kw) and bias uniform in 1/sqrt(fan_in)") {
  Tensor::manual_seed(3);
  nn::Conv2d conv(6, 9, {3, 5}, 1, 0, 1, 3);
  CHECK(conv.weight.shape() == Shape{9, 2, 3, 5});
  CHECK(conv.bias.shape() == Shape{9});
  CHECK(conv.weight.dtype() == dtypes::float32);
  check_uniform(conv.weight, 1.0 / std::sqrt(2.0 * 3 * 5));
  check_uniform(conv.bias, 1.0 / std::sqrt(2.0 * 3 * 5));
  const std::string msg = message_of<ShapeError>([] { nn::Conv2d(6, 8, 3, 1, 0, 1, 4); });
  CHECK(contains(msg, "Conv2d"));
  CHECK(contains(msg, "4 groups"));
  CHECK_THROWS_AS(nn::Conv2d(2, 2, 0), ShapeError);
}

// -- BatchNorm ---------------------------------------------------------------------------------

TEST_CASE("nn::BatchNorm: initial tensors, keys, dtypes and no gradient on the running stats") {
  nn::BatchNorm2d bn(3);
  check_close(floats(bn.weight), {1, 1, 1}, Tol::exact());
  check_close(floats(bn.bias), {0, 0, 0}, Tol::exact());
  check_close(floats(bn.running_mean), {0, 0, 0}, Tol::exact());
  check_close(floats(bn.running_var), {1, 1, 1}, Tol::exact());
  CHECK(bn.num_batches_tracked.dtype() == dtypes::int64);
  CHECK(bn.num_batches_tracked.to_vector<int64_t>() == std::vector<int64_t>{0});
  CHECK(bn.running_mean.requires_grad_setting() == std::optional<bool>(false));
  CHECK(bn.running_var.requires_grad_setting() == std::optional<bool>(false));
  CHECK(keys_of(nn::state::get_state_dict(bn)) ==
        std::vector<std::string>{"bias", "num_batches_tracked", "running_mean", "running_var",
                                 "weight"});
  nn::BatchNorm bare(3, 1e-5, false, false);
  CHECK(keys_of(nn::state::get_state_dict(bare)) ==
        std::vector<std::string>{"num_batches_tracked"});
}

TEST_CASE("nn::BatchNorm: training uses batch statistics and updates the running ones") {
  const int64_t N = 4, C = 3, S = 6;
  nn::BatchNorm bn(C);
  const auto w = values(C, 1), b = values(C, 2);
  bn.weight = tensor(w, {C});
  bn.bias = tensor(b, {C});
  const auto x1 = values(N * C * S, 3), x2 = values(N * C * S, 4);
  std::vector<double> m1, v1, m2, v2;
  channel_stats(x1, N, C, S, m1, v1);
  channel_stats(x2, N, C, S, m2, v2);
  {
    Tensor::Train train;
    Tensor y = bn(tensor(x1, {N, C, 2, 3}));
    // the mean (1 rounding), deviations, squares, a sum of 24 (23), eps, rsqrt (2), weight and bias:
    // about 32 roundings of values up to 6 (the bias cancels)
    check_close(floats(y), ref_batchnorm(x1, N, C, S, m1, v1, w, b, 1e-5), Tol::f32(32).of(6));
    const double unbias = static_cast<double>(N * S) / static_cast<double>(N * S - 1);
    std::vector<double> rm, rv;
    for (size_t c = 0; c < 3; ++c)
      rm.push_back(0.1 * m1[c]), rv.push_back(0.9 + 0.1 * v1[c] * unbias);
    // 0.1 m: the mean, 0.1 and the product round; the running var adds the variance's roundings
    check_close(floats(bn.running_mean), rm, Tol::f32(4));
    check_close(floats(bn.running_var), rv, Tol::f32(32));
    CHECK(bn.num_batches_tracked.to_vector<int64_t>() == std::vector<int64_t>{1});
    bn(tensor(x2, {N, C, 2, 3})).realize();
    for (size_t c = 0; c < 3; ++c)
      rm[c] = 0.9 * rm[c] + 0.1 * m2[c], rv[c] = 0.9 * rv[c] + 0.1 * v2[c] * unbias;
    check_close(floats(bn.running_mean), rm, Tol::f32(8).of(0.1));  // 0.9 rm + 0.1 m cancels: relative to the terms (below 0.1)
    check_close(floats(bn.running_var), rv, Tol::f32(40));
    CHECK(bn.num_batches_tracked.to_vector<int64_t>() == std::vector<int64_t>{2});
  }
  // eval: the running statistics, which stay as they are
  const auto rm = floats(bn.running_mean), rv = floats(bn.running_var);
  const std::vector<double> rmd(rm.begin(), rm.end()), rvd(rv.begin(), rv.end());
  Tensor y = bn(tensor(x1, {N, C, 2, 3}));
  // eval: fixed statistics, eps, rsqrt, weight, bias: 8 roundings of values up to 6
  check_close(floats(y), ref_batchnorm(x1, N, C, S, rmd, rvd, w, b, 1e-5), Tol::f32(8).of(6));
  check_close(floats(bn.running_mean), rmd, Tol::exact());
  CHECK(bn.num_batches_tracked.to_vector<int64_t>() == std::vector<int64_t>{2});
}

TEST_CASE("nn::BatchNorm: (N, C) input, no running stats, float16, and its errors") {
  // (N, C): statistics over the batch only
  nn::BatchNorm bn(2, 1e-3);
  const auto x = values(5 * 2, 5);
  std::vector<double> m, v;
  channel_stats(x, 5, 2, 1, m, v);
  {
    Tensor::Train train;
    // statistics of 5 values: about 16 roundings of the normalized values (below 2)
    check_close(floats(bn(tensor(x, {5, 2}))),
                ref_batchnorm(x, 5, 2, 1, m, v, {1, 1}, {0, 0}, 1e-3), Tol::f32(16).of(2));
  }
  // without running statistics, eval uses the batch's too (as PyTorch)
  nn::BatchNorm untracked(2, 1e-3, true, false);
  CHECK(!untracked.running_mean.defined());
  check_close(floats(untracked(tensor(x, {5, 2}))),
              ref_batchnorm(x, 5, 2, 1, m, v, {1, 1}, {0, 0}, 1e-3), Tol::f32(16).of(2));
  // float16 in, float16 out, statistics in float32
  Tensor yh;
  {
    Tensor::Train train;
    yh = untracked(tensor(x, {5, 2}).half());
  }
  CHECK(yh.dtype() == dtypes::float16);
  // statistics in float32, the result rounded to float16 once: 2 roundings of float16
  check_close(floats(yh.float_()), ref_batchnorm(x, 5, 2, 1, m, v, {1, 1}, {0, 0}, 1e-3), Tol::dtype(dtypes::float16, 2));
  // errors: wrong channel count, one value per channel in training
  std::string msg = message_of<ShapeError>([&] { bn(Tensor::ones({4, 3})); });
  CHECK(contains(msg, "BatchNorm"));
  CHECK(contains(msg, "(4, 3)"));
  Tensor::Train train;
  msg = message_of<ShapeError>([&] { bn(Tensor::ones({1, 2})); });
  CHECK(contains(msg, "(1, 2)"));
}

namespace {
/// Two training steps of gen_nn_layers_torch.py's BatchNorm2d; with `realize_between`, the
/// running stats are realized after the first, as an optimizer's step does.
nn::BatchNorm2d batchnorm_two_steps(bool realize_between) {
  nn::BatchNorm2d bn(3);
  nn::state::load_state_dict(bn, {{"weight", det({3}, 1).add(1)}, {"bias", det({3}, 2)}}, false);
  Tensor::Train train;
  // PyTorch computed in float32 too: both sides' roundings (as the loop above, 32 + 8)
  check_close(floats(bn(det({4, 3, 2, 2}, 3))), torch_bn_train1, Tol::f32(40).of(6));
  if (realize_between) realize_tensors({bn.running_mean, bn.running_var, bn.num_batches_tracked});
  bn(det({4, 3, 2, 2}, 4).mul(0.5).add(1)).realize();
  return bn;
}
}  // namespace

TEST_CASE("nn::BatchNorm2d against PyTorch: two training steps, running stats, eval") {
  nn::BatchNorm2d bn = batchnorm_two_steps(true);
  // two steps of running statistics on both sides (float32)
  check_close(floats(bn.running_mean), torch_bn_running_mean, Tol::f32(16));
  check_close(floats(bn.running_var), torch_bn_running_var, Tol::f32(16));
  CHECK(bn.num_batches_tracked.to_vector<int64_t>() == std::vector<int64_t>{2});
  check_close(floats(bn(det({2, 3, 2, 2}, 5))), torch_bn_eval, Tol::f32(16).of(6));
}

// Assigning again to a tensor whose assign is still pending once ran the first assign twice.
TEST_CASE("nn::BatchNorm2d: two steps with no realize in between") {
  nn::BatchNorm2d bn = batchnorm_two_steps(false);
  const auto got = floats(bn.running_var);
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - torch_bn_running_var[i]));
  CHECK(worst < 1e-6);
}

// -- LayerNorm, RMSNorm, GroupNorm ---------------------------------------------------------------

TEST_CASE("nn::LayerNorm: over one and two trailing dims, with the affine transform") {
  nn::LayerNorm ln(6);
  CHECK(ln.weight.shape() == Shape{6});
  check_close(floats(ln.weight), std::vector<double>(6, 1.0), Tol::exact());
  check_close(floats(ln.bias), std::vector<double>(6, 0.0), Tol::exact());
  const auto x = values(4 * 6, 8), w = values(6, 9), b = values(6, 10);
  ln.weight = tensor(w, {6});
  ln.bias = tensor(b, {6});
  auto want = ref_normalize_rows(x, 6, 1e-5);
  for (size_t i = 0; i < want.size(); ++i) want[i] = want[i] * w[i % 6] + b[i % 6];
  // mean, deviations, squares, a sum of 6, eps, rsqrt, weight and bias: 16 roundings of values up to 4
  check_close(floats(ln(tensor(x, {2, 2, 6}))), want, Tol::f32(16).of(4));

  nn::LayerNorm ln2({2, 3}, 1e-3, false);
  CHECK(!ln2.weight.defined());
  check_close(floats(ln2(tensor(x, {4, 2, 3}))), ref_normalize_rows(x, 6, 1e-3), Tol::f32(16).of(4));
  const std::string msg = message_of<ShapeError>([&] { ln2(Tensor::ones({2, 3, 2})); });
  CHECK(contains(msg, "LayerNorm"));
  CHECK(contains(msg, "(2, 3, 2)"));
  CHECK(contains(msg, "(2, 3)"));
}

TEST_CASE("nn::RMSNorm: x / sqrt(mean(x^2) + eps) * weight, eps 1e-6 by default") {
  nn::RMSNorm rms(5);
  CHECK(rms.eps == 1e-6);
  check_close(floats(rms.weight), std::vector<double>(5, 1.0), Tol::exact());
  const auto x = values(3 * 5, 11), w = values(5, 12);
  rms.weight = tensor(w, {5});
  std::vector<double> want;
  for (int64_t r = 0; r < 3; ++r) {
    double ms = 0;
    for (int64_t i = 0; i < 5; ++i) ms += at(x, r * 5 + i) * at(x, r * 5 + i) / 5.0;
    for (int64_t i = 0; i < 5; ++i)
      want.push_back(at(x, r * 5 + i) / std::sqrt(ms + 1e-6) * at(w, i));
  }
  // squares (exact), a sum of 5 (exact), the mean, eps, rsqrt, x and weight: 8 roundings
  check_close(floats(rms(tensor(x, {3, 5}))), want, Tol::f32(8));
  CHECK_THROWS_AS(rms(Tensor::ones({3, 4})), ShapeError);
  CHECK(keys_of(nn::state::get_state_dict(nn::RMSNorm(4, 1e-6, false))).empty());
}

TEST_CASE("nn::GroupNorm: statistics per group of channels, affine per channel") {
  const int64_t N = 2, C = 6, G = 3, S = 4;
  nn::GroupNorm gn(G, C);
  check_close(floats(gn.weight), std::vector<double>(C, 1.0), Tol::exact());
  check_close(floats(gn.bias), std::vector<double>(C, 0.0), Tol::exact());
  const auto x = values(N * C * S, 13), w = values(C, 14), b = values(C, 15);
  gn.weight = tensor(w, {C});
  gn.bias = tensor(b, {C});
  // a group is C/G channels of S values, contiguous in (N, C, S)
  auto want = ref_normalize_rows(x, C / G * S, 1e-5);
  for (size_t i = 0; i < want.size(); ++i) {
    const size_t c = (i / S) % C;
    want[i] = want[i] * w[c] + b[c];
  }
  // as LayerNorm, over 8 values
  check_close(floats(gn(tensor(x, {N, C, 2, 2}))), want, Tol::f32(16).of(4));
  const std::string msg = message_of<ShapeError>([] { nn::GroupNorm(4, 6); });
  CHECK(contains(msg, "GroupNorm"));
  CHECK_THROWS_AS(gn(Tensor::ones({2, 4, 3})), ShapeError);
}

TEST_CASE("nn norms, Conv2d and Linear against PyTorch") {
  nn::GroupNorm gn(2, 4);
  nn::state::load_state_dict(gn, {{"weight", det({4}, 6)}, {"bias", det({4}, 7)}});
  // the norms as above, rounded on both sides (PyTorch in float32); conv, linear and embedding of
  // det()'s grid of 1/4 are exact on both
  check_close(floats(gn(det({2, 4, 3}, 8))), torch_gn, Tol::f32(32).of(6));
  nn::LayerNorm ln({2, 3});
  nn::state::load_state_dict(ln, {{"weight", det({2, 3}, 9)}, {"bias", det({2, 3}, 10)}});
  check_close(floats(ln(det({2, 2, 3}, 11))), torch_ln, Tol::f32(32).of(6));
  nn::RMSNorm rms(5);
  nn::state::load_state_dict(rms, {{"weight", det({5}, 12)}});
  check_close(floats(rms(det({3, 5}, 13))), torch_rms, Tol::f32(16));
  nn::Conv2d conv(4, 6, {2, 3}, {2, 1}, 1, {1, 2}, 2);
  nn::state::load_state_dict(conv, {{"weight", det({6, 2, 2, 3}, 14)}, {"bias", det({6}, 15)}});
  check_close(floats(conv(det({2, 4, 5, 6}, 16))), torch_conv, Tol::exact());
  nn::Linear lin(4, 3);
  nn::state::load_state_dict(lin, {{"weight", det({3, 4}, 17)}, {"bias", det({3}, 18)}});
  check_close(floats(lin(det({2, 4}, 19))), torch_linear, Tol::exact());
  nn::Embedding emb(7, 3);
  nn::state::load_state_dict(emb, {{"weight", det({7, 3}, 20)}});
  Tensor idx = Tensor::from_vector(std::vector<int64_t>{0, 6, 2, 3, 3, 1}, {2, 3});
  check_close(floats(emb(idx)), torch_embedding, Tol::exact());
}

// -- Embedding ---------------------------------------------------------------------------------

TEST_CASE("nn::Embedding: rows of the weight by index, glorot init, its edge cases") {
  Tensor::manual_seed(11);
  nn::Embedding emb(10, 4);
  CHECK(emb.weight.shape() == Shape{10, 4});
  CHECK(emb.weight.dtype() == dtypes::float32);
  check_uniform(emb.weight, std::sqrt(6.0 / (10 + 4)));
  const auto w = floats(emb.weight);
  const std::vector<int32_t> ids{3, 0, 9, 3, 7, 1};
  Tensor y = emb(Tensor::from_vector(ids, {2, 3}));
  CHECK(y.shape() == Shape{2, 3, 4});
  std::vector<double> want;
  for (int32_t i : ids)
    for (int64_t e = 0; e < 4; ++e) want.push_back(at(w, i * 4 + e));
  check_close(floats(y), want, Tol::exact());
  // an inf elsewhere in the table does not leak into other rows
  emb.weight = Tensor::arange(10).reshape({10, 1}).ne(5).where(emb.weight, INFINITY);
  check_close(floats(emb(Tensor::from_vector(ids, {2, 3}))), want, Tol::exact());
  // out of range: no row matches, so zeros (documented; checking would read the indices)
  check_close(floats(emb(Tensor::from_vector(std::vector<int64_t>{10, -1}))),
              std::vector<double>(8, 0.0), Tol::exact());
  CHECK(emb(Tensor::zeros({0, 2}, dtypes::int32)).shape() == Shape{0, 2, 4});
  // uint8 indices into more than 256 rows do not wrap
  nn::Embedding wide(300, 2);
  const auto ww = floats(wide.weight);
  check_close(floats(wide(Tensor::from_vector(std::vector<uint8_t>{255, 0}))),
              {ww[510], ww[511], ww[0], ww[1]}, Tol::exact());
  const std::string msg = message_of<DTypeError>([&] { emb(Tensor::ones({2})); });
  CHECK(contains(msg, "Embedding"));
  CHECK(contains(msg, "float32"));
}

// -- state: reflection -------------------------------------------------------------------------

namespace nn_layers_model {
struct Block {
  nn::Linear fc{3, 4};
  nn::LayerNorm norm{4};
  Tensor operator()(const Tensor& x) const { return norm(fc(x)).relu(); }
};
TINYT_PARAMETERS(Block, fc, norm);

struct Net {
  nn::Conv2d stem{1, 2, 3};
  std::vector<Block> layers = std::vector<Block>(3);
  std::array<nn::Linear, 2> heads{nn::Linear(4, 2), nn::Linear(4, 2, false)};
  std::map<std::string, nn::Embedding> tables{{"pos", nn::Embedding(5, 2)},
                                              {"tok", nn::Embedding(6, 2)}};
  std::optional<nn::Linear> extra, proj = nn::Linear(2, 2);
  Tensor scale = Tensor::ones({1});
  std::vector<Tensor> biases{Tensor::zeros({2}), Tensor()};
  int width = 4;  // not listed: configuration
};
TINYT_PARAMETERS(Net, stem, layers, heads, tables, extra, proj, scale, biases);

// Boost.Hana, defined in the struct; config members (int, std::string) are skipped
struct HanaNet {
  BOOST_HANA_DEFINE_STRUCT(HanaNet, (nn::Linear, l1), (std::vector<nn::BatchNorm>, norms),
                           (int, hidden), (std::string, name));
};

// tied weights: one tensor under two names
struct Tied {
  nn::Embedding embed{6, 3};
  nn::Linear out{3, 6, false};
  Tied() { out.weight = embed.weight; }
};
TINYT_PARAMETERS(Tied, embed, out);
}  // namespace nn_layers_model

// Boost.Hana, adapted from outside (must be at global scope)
struct NnLayersAdaptedNet {
  nn::Linear a{2, 3};
  nn::RMSNorm b{3};
};
BOOST_HANA_ADAPT_STRUCT(NnLayersAdaptedNet, a, b);

// API.md's example, registered in the global namespace
struct NnLayersGlobalNet {
  nn::Linear l1{784, 128}, l2{128, 10};
  Tensor operator()(const Tensor& x) const { return l2(l1(x).relu()); }
};
TINYT_PARAMETERS(NnLayersGlobalNet, l1, l2);

TEST_CASE("nn::state: API.md's Net, registered in the global namespace") {
  NnLayersGlobalNet net;
  CHECK(keys_of(nn::state::get_state_dict(net)) ==
        std::vector<std::string>{"l1.bias", "l1.weight", "l2.bias", "l2.weight"});
  CHECK(nn::state::get_parameters(net).size() == 4);
  CHECK(net(Tensor::ones({2, 784})).shape() == Shape{2, 10});
}

TEST_CASE("nn::state::get_state_dict: dotted keys through vectors, arrays, maps, optionals") {
  nn_layers_model::Net net;
  const std::vector<std::string> want{"biases.0",
                                      "heads.0.bias",
                                      "heads.0.weight",
                                      "heads.1.weight",
                                      "layers.0.fc.bias",
                                      "layers.0.fc.weight",
                                      "layers.0.norm.bias",
                                      "layers.0.norm.weight",
                                      "layers.1.fc.bias",
                                      "layers.1.fc.weight",
                                      "layers.1.norm.bias",
                                      "layers.1.norm.weight",
                                      "layers.2.fc.bias",
                                      "layers.2.fc.weight",
                                      "layers.2.norm.bias",
                                      "layers.2.norm.weight",
                                      "proj.bias",
                                      "proj.weight",
                                      "scale",
                                      "stem.bias",
                                      "stem.weight",
                                      "tables.pos.weight",
                                      "tables.tok.weight"};
  const auto sd = nn::state::get_state_dict(net);
  CHECK(keys_of(sd) == want);
  CHECK(sd.at("layers.1.fc.weight").id() == net.layers[1].fc.weight.id());
  CHECK(sd.at("layers.1.fc.weight").shape() == Shape{4, 3});
  CHECK(sd.at("tables.tok.weight").id() == net.tables.at("tok").weight.id());
  CHECK(nn::state::get_parameters(net).size() == want.size());
  // a vector of layers on its own, and a block
  CHECK(keys_of(nn::state::get_state_dict(net.layers))[0] == "0.fc.bias");
  CHECK(keys_of(nn::state::get_state_dict(net.layers[0])) ==
        std::vector<std::string>{"fc.bias", "fc.weight", "norm.bias", "norm.weight"});
}

TEST_CASE("nn::state: Boost.Hana structs, defined and adapted, work as registered ones") {
  nn_layers_model::HanaNet net{
      nn::Linear(2, 3), {nn::BatchNorm(3), nn::BatchNorm(3, 1e-5, false)}, 3, "x"};
  CHECK(keys_of(nn::state::get_state_dict(net)) ==
        std::vector<std::string>{
            "l1.bias", "l1.weight", "norms.0.bias", "norms.0.num_batches_tracked",
            "norms.0.running_mean", "norms.0.running_var", "norms.0.weight",
            "norms.1.num_batches_tracked", "norms.1.running_mean", "norms.1.running_var"});
  NnLayersAdaptedNet adapted;
  CHECK(keys_of(nn::state::get_state_dict(adapted)) ==
        std::vector<std::string>{"a.bias", "a.weight", "b.weight"});
  CHECK(nn::state::get_parameters(adapted).size() == 3);
}

TEST_CASE("nn::state::get_parameters: every tensor once, tied weights counted once") {
  nn_layers_model::Tied tied;
  const auto sd = nn::state::get_state_dict(tied);
  CHECK(keys_of(sd) == std::vector<std::string>{"embed.weight", "out.weight"});
  const auto params = nn::state::get_parameters(tied);
  REQUIRE(params.size() == 1);
  CHECK(params[0].id() == tied.embed.weight.id());
  // equal graphs are still different tensors: two fresh zeros are two parameters
  std::vector<Tensor> two{Tensor::zeros({3}), Tensor::zeros({3})};
  CHECK(nn::state::get_parameters(two).size() == 2);
}

// -- state: load_state_dict --------------------------------------------------------------------

TEST_CASE("nn::state::load_state_dict: a round trip copies every value, in place") {
  Tensor::manual_seed(1);
  nn_layers_model::Net a;
  Tensor::manual_seed(2);
  nn_layers_model::Net b;
  const Tensor b_weight = b.layers[2].fc.weight;  // a handle taken before the load sees it
  CHECK(floats(a.layers[2].fc.weight) != floats(b.layers[2].fc.weight));
  nn::state::load_state_dict(b, nn::state::get_state_dict(a));
  const auto loaded = nn::state::get_state_dict(b);
  for (const auto& entry : nn::state::get_state_dict(a)) {
    INFO(entry.first);
    CHECK(floats(loaded.at(entry.first)) == floats(entry.second));
  }
  CHECK(floats(b_weight) == floats(a.layers[2].fc.weight));
  // the copy is a copy: changing a afterwards leaves b alone
  a.scale.assign(Tensor::full({1}, 5.0f)).realize();
  check_close(floats(b.scale), {1.0}, Tol::exact());
  // values read from the model itself: two tensors swapped
  nn::LayerNorm ln(4);
  ln.weight = Tensor::from_vector(std::vector<float>{1, 2, 3, 4});
  ln.bias = Tensor::from_vector(std::vector<float>{5, 6, 7, 8});
  nn::state::load_state_dict(ln, {{"weight", ln.bias}, {"bias", ln.weight}});
  CHECK(floats(ln.weight) == std::vector<float>{5, 6, 7, 8});
  CHECK(floats(ln.bias) == std::vector<float>{1, 2, 3, 4});
  // and b computes what a computed
  Tensor x = Tensor::from_vector(values(6, 3), {2, 3});
  check_close(floats(b.layers[0](x)), floats(a.layers[0](x)), Tol::exact());
}

TEST_CASE("nn::state::load_state_dict: missing, extra, wrong shape, wrong dtype are errors") {
  nn_layers_model::Block block;
  const auto original = floats(block.fc.weight);
  auto sd = nn::state::get_state_dict(nn_layers_model::Block{});
  auto without = sd;
  without.erase("norm.bias");
  std::string msg = message_of<Error>([&] { nn::state::load_state_dict(block, without); });
  CHECK(contains(msg, "load_state_dict"));
  CHECK(contains(msg, "'norm.bias'"));
  auto extra = sd;
  extra["fc.scale"] = Tensor::ones({4});
  msg = message_of<Error>([&] { nn::state::load_state_dict(block, extra); });
  CHECK(contains(msg, "'fc.scale'"));
  auto wrong_shape = sd;
  wrong_shape["fc.weight"] = Tensor::ones({3, 4});
  msg = message_of<ShapeError>([&] { nn::state::load_state_dict(block, wrong_shape); });
  CHECK(contains(msg, "'fc.weight'"));
  CHECK(contains(msg, "(4, 3)"));
  CHECK(contains(msg, "(3, 4)"));
  auto wrong_dtype = sd;
  wrong_dtype["norm.weight"] = Tensor::ones({4}, dtypes::float16);
  msg = message_of<DTypeError>([&] { nn::state::load_state_dict(block, wrong_dtype); });
  CHECK(contains(msg, "'norm.weight'"));
  CHECK(contains(msg, "float32"));
  CHECK(contains(msg, "float16"));
  auto empty = sd;
  empty["fc.bias"] = Tensor();
  CHECK_THROWS_AS(nn::state::load_state_dict(block, empty), Error);
  // a load that fails writes nothing, even to the names that were fine
  CHECK(floats(block.fc.weight) == original);
  // not strict: missing and extra names are passed over, the rest is loaded
  without["fc.scale"] = Tensor::ones({4});
  nn::state::load_state_dict(block, without, false);
  CHECK(floats(block.fc.weight) == floats(sd.at("fc.weight")));
  // but a wrong shape still is an error
  CHECK_THROWS_AS(nn::state::load_state_dict(block, wrong_shape, false), ShapeError);
}
