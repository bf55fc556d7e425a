// nn functional (ops/nn.hpp): statistics, argmax, softmax, convolutions, pools, normalization,
// attention and losses against loops written here in double (PyTorch's definitions).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;
using namespace tinyt_test;

namespace {
using Dims = std::vector<int64_t>;
constexpr double kInf = std::numeric_limits<double>::infinity();


void check_scalar(const Tensor& t, double want, Tol tol) {
  CHECK(t.ndim() == 0);
  check_close({t.item<float>()}, {want}, tol);
}


// -- references ---------------------------------------------------------------------------------

struct ConvArgs {
  int64_t groups = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pb = 0, pl = 0, pr = 0;
};
// PyTorch's conv2d: x (N, C, H, W), w (O, C/groups, KH, KW), zero padding.
std::vector<double> ref_conv2d(const std::vector<float>& x, Dims xs, const std::vector<float>& w,
                               Dims ws, const std::vector<float>* bias, const ConvArgs& a,
                               Dims& out) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], CG = ws[1], KH = ws[2],
                KW = ws[3];
  const int64_t OH = (H + a.pt + a.pb - a.dh * (KH - 1) - 1) / a.sh + 1;
  const int64_t OW = (W + a.pl + a.pr - a.dw * (KW - 1) - 1) / a.sw + 1;
  const int64_t OG = O / a.groups;
  out = {N, O, OH, OW};
  std::vector<double> r;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double acc = bias ? at(*bias, o) : 0.0;
          const int64_t g = o / OG;
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx) {
                const int64_t y = oy * a.sh + ky * a.dh - a.pt, xx = ox * a.sw + kx * a.dw - a.pl;
                if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
                acc += double(at(x, ((n * C + g * CG + c) * H + y) * W + xx)) *
                       at(w, ((o * CG + c) * KH + ky) * KW + kx);
              }
          r.push_back(acc);
        }
  return r;
}

// PyTorch's conv_transpose2d: x (N, C, H, W), w (C, O/groups, KH, KW), as a scatter.
std::vector<double> ref_conv_transpose2d(const std::vector<float>& x, Dims xs,
                                         const std::vector<float>& w, Dims ws,
                                         const std::vector<float>* bias, int64_t groups, int64_t s,
                                         int64_t d, int64_t p, int64_t op, Dims& out) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], OG = ws[1], KH = ws[2], KW = ws[3];
  const int64_t O = OG * groups, CG = C / groups;
  const int64_t OH = (H - 1) * s - 2 * p + d * (KH - 1) + op + 1,
                OW = (W - 1) * s - 2 * p + d * (KW - 1) + op + 1;
  out = {N, O, OH, OW};
  std::vector<double> r(static_cast<size_t>(N * O * OH * OW), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < OH * OW; ++i)
        r[static_cast<size_t>((n * O + o) * OH * OW + i)] = bias ? at(*bias, o) : 0.0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t iy = 0; iy < H; ++iy)
        for (int64_t ix = 0; ix < W; ++ix)
          for (int64_t oc = 0; oc < OG; ++oc)
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx) {
                const int64_t y = iy * s - p + ky * d, xx = ix * s - p + kx * d,
                              o = (c / CG) * OG + oc;
                if (y < 0 || y >= OH || xx < 0 || xx >= OW) continue;
                r[static_cast<size_t>(((n * O + o) * OH + y) * OW + xx)] +=
                    double(at(x, ((n * C + c) * H + iy) * W + ix)) *
                    at(w, ((c * OG + oc) * KH + ky) * KW + kx);
              }
  return r;
}

// PyTorch's max/avg pools over the last two dims of (B, H, W) data.
// ceil: PyTorch's ceil_mode (a last, partial window where it starts inside the input or its left
// padding; the positions past the right padding never count)
std::vector<double> ref_pool(const std::vector<float>& x, int64_t B, int64_t H, int64_t W,
                             int64_t k, int64_t s, int64_t d, int64_t p, bool is_max,
                             bool count_pad, Dims& out_hw, bool ceil = false) {
  auto out_size = [&](int64_t n) {
    const int64_t span = n + 2 * p - d * (k - 1) - 1;
    int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (o - 1) * s >= n + p) --o;
    return o;
  };
  const int64_t OH = out_size(H), OW = out_size(W);
  out_hw = {OH, OW};
  std::vector<double> r;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        double acc = is_max ? -kInf : 0.0;
        int64_t n = 0;
        for (int64_t ky = 0; ky < k; ++ky)
          for (int64_t kx = 0; kx < k; ++kx) {
            const int64_t y = oy * s + ky * d - p, xx = ox * s + kx * d - p;
            if (y < 0 || y >= H || xx < 0 || xx >= W) {
              n += count_pad && y < H + p && xx < W + p;
              continue;
            }
            const double v = at(x, (b * H + y) * W + xx);
            acc = is_max ? std::max(acc, v) : acc + v;
            ++n;
          }
        r.push_back(is_max ? acc : acc / static_cast<double>(n));
      }
  return r;
}

std::vector<double> ref_log_softmax_rows(const std::vector<float>& x, int64_t rows, int64_t n) {
  std::vector<double> r;
  for (int64_t i = 0; i < rows; ++i) {
    double m = -kInf, s = 0;
    for (int64_t j = 0; j < n; ++j) m = std::max(m, double(at(x, i * n + j)));
    for (int64_t j = 0; j < n; ++j) s += std::exp(at(x, i * n + j) - m);
    for (int64_t j = 0; j < n; ++j) r.push_back(at(x, i * n + j) - m - std::log(s));
  }
  return r;
}
}  // namespace

// -- statistics ---------------------------------------------------------------------------------

TEST_CASE("nn: var and std with PyTorch's correction") {
  const auto v = values(24, 1);
  Tensor x = Tensor::from_vector(v, {2, 3, 4});
  auto var_ref = [&](const std::function<bool(int64_t, int64_t, int64_t)>& same, int64_t i0,
                     int64_t j0, int64_t k0, double corr) {
    double s = 0, n = 0, ss = 0;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k)
          if (same(i - i0, j - j0, k - k0)) s += at(v, (i * 3 + j) * 4 + k), ++n;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k)
          if (same(i - i0, j - j0, k - k0)) ss += std::pow(at(v, (i * 3 + j) * 4 + k) - s / n, 2);
    return ss / std::max(0.0, n - corr);
  };
  auto all = [](int64_t, int64_t, int64_t) { return true; };
  // var of n values rounds the mean, each deviation and its square, n - 1 sums of non-negative
  // terms and the division: about n + 4 roundings (n + 5 allowed); std halves that and rounds once more
  check_scalar(x.var(), var_ref(all, 0, 0, 0, 1), Tol::f32(28));
  check_scalar(x.var(false, 0), var_ref(all, 0, 0, 0, 0), Tol::f32(28));
  check_scalar(x.std(), std::sqrt(var_ref(all, 0, 0, 0, 1)), Tol::f32(15));
  CHECK(x.var(true).shape() == Shape{1, 1, 1});
  // over axis 1, over axes {0, 2}, negative axes, keepdim
  std::vector<double> v1, s1, v02;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < 4; ++k) {
      v1.push_back(
          var_ref([](int64_t a, int64_t, int64_t c) { return a == 0 && c == 0; }, i, 0, k, 1));
      s1.push_back(std::sqrt(
          var_ref([](int64_t a, int64_t, int64_t c) { return a == 0 && c == 0; }, i, 0, k, 2)));
    }
  for (int64_t j = 0; j < 3; ++j)
    v02.push_back(var_ref([](int64_t, int64_t b, int64_t) { return b == 0; }, 0, j, 0, 1));
  check_close(x.var(1).to_vector<float>(), v1, Tol::f32(8));
  check_close(x.var(-2, true).to_vector<float>(), v1, Tol::f32(8));
  CHECK(x.var(-2, true).shape() == Shape{2, 1, 4});
  check_close(x.std(1, false, 2).to_vector<float>(), s1, Tol::f32(5));
  check_close(x.var(std::vector<int>{0, -1}).to_vector<float>(), v02, Tol::f32(13));
  check_close(x.std(std::vector<int>{2, 0}, true).to_vector<float>(),
              {std::sqrt(v02[0]), std::sqrt(v02[1]), std::sqrt(v02[2])}, Tol::f32(8));
  // on a non-contiguous view: the transposed var over its axis 0 is the var over axis 1
  check_close(x.permute({1, 0, 2}).var(0).to_vector<float>(), v1, Tol::f32(8));
  // n <= correction: 0/0 is NaN, anything else / 0 is inf (PyTorch)
  Tensor one = Tensor::from_vector(std::vector<float>{3.f});
  CHECK(std::isnan(one.var().item<float>()));
  CHECK(one.var(false, 0).item<float>() == 0.f);
  CHECK(std::isinf(Tensor::from_vector(std::vector<float>{1.f, 2.f}).var(false, 2).item<float>()));
  CHECK(std::isnan(Tensor::zeros({0}).var().item<float>()));
  CHECK(std::isnan(Tensor(2.f).var().item<float>()));
  // integers compute in the default float; float64 stays float64
  Tensor ints = Tensor::from_vector(std::vector<int32_t>{1, 2, 3, 4});
  CHECK(ints.var().dtype() == dtypes::float32);
  check_scalar(ints.var(), 5.0 / 3.0, Tol::f32(9));
  CHECK_WIDE(Tensor::from_vector(std::vector<double>{1, 2}).var().dtype() == dtypes::float64);
  CHECK_WIDE(Tensor::from_vector(std::vector<double>{1, 2}).var().item<double>() == 0.5);
  CHECK_THROWS_AS(x.var(3), IndexError);
  CHECK_THROWS_AS(x.var(std::vector<int>{1, 1}), IndexError);
}

TEST_CASE("nn: argmax and argmin take the first extreme, NaN first") {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 5, 5, 2, -1, -1, 0, 7, 3, 3, 3, 3}, {3, 4});
  CHECK(x.argmax().dtype() == dtypes::int32);
  CHECK(x.argmax().ndim() == 0);
  CHECK(x.argmax().item<int32_t>() == 7);
  CHECK(x.argmin().item<int32_t>() == 4);  // ties: the first
  CHECK(x.argmax(1).to_vector<int32_t>() == std::vector<int32_t>{1, 3, 0});
  CHECK(x.argmin(1).to_vector<int32_t>() == std::vector<int32_t>{0, 0, 0});
  CHECK(x.argmax(0).to_vector<int32_t>() == std::vector<int32_t>{2, 0, 0, 1});
  CHECK(x.argmin(-2).to_vector<int32_t>() == std::vector<int32_t>{1, 1, 1, 0});
  CHECK(x.argmax(1, true).shape() == Shape{3, 1});
  CHECK(x.argmax(-1, true).to_vector<int32_t>() == std::vector<int32_t>{1, 3, 0});
  // non-contiguous: flipped rows find the other tie first, transposed is argmax over axis 0
  CHECK(x.flip(1).argmax(1).to_vector<int32_t>() == std::vector<int32_t>{1, 0, 0});
  CHECK(x.T().argmax(1).to_vector<int32_t>() == std::vector<int32_t>{2, 0, 0, 1});
  CHECK(x.shrink({{1, 3}, {1, 3}}).argmin().item<int32_t>() == 0);
  // NaN is the maximum and the minimum, as PyTorch
  Tensor n = Tensor::from_vector(std::vector<float>{1, NAN, 9, NAN, -INFINITY, 2}, {2, 3});
  CHECK(n.argmax(1).to_vector<int32_t>() == std::vector<int32_t>{1, 0});
  CHECK(n.argmin(1).to_vector<int32_t>() == std::vector<int32_t>{1, 0});
  CHECK(n.argmax().item<int32_t>() == 1);
  // integers (with the extremes of the dtype), unsigned, bools
  Tensor i =
      Tensor::from_vector(std::vector<int32_t>{3, INT32_MIN, INT32_MAX, INT32_MAX, INT32_MIN});
  CHECK(i.argmax().item<int32_t>() == 2);
  CHECK(i.argmin().item<int32_t>() == 1);
  Tensor u = Tensor::from_vector(std::vector<uint8_t>{3, 255, 0, 255, 0});
  CHECK(u.argmax().item<int32_t>() == 1);
  CHECK(u.argmin().item<int32_t>() == 2);
  Tensor b = Tensor::from_vector(std::vector<bool>{false, true, true});
  CHECK(b.argmax().item<int32_t>() == 1);
  CHECK(b.argmin().item<int32_t>() == 0);
  // 0-d, size 1, size 0
  CHECK(Tensor(4.f).argmax().item<int32_t>() == 0);
  CHECK(Tensor(4.f).argmax(0).item<int32_t>() == 0);
  CHECK(Tensor::zeros({3, 1}).argmax(1).to_vector<int32_t>() == std::vector<int32_t>{0, 0, 0});
  CHECK(Tensor::zeros({0, 3}).argmax(1).shape() == Shape{0});
  CHECK_THROWS_AS(Tensor::zeros({0, 3}).argmax(0), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({0}).argmax(), ShapeError);
  CHECK_THROWS_AS(x.argmax(2), IndexError);
}

TEST_CASE("nn: logsumexp is stable") {
  const auto v = values(12, 2);
  Tensor x = Tensor::from_vector(v, {3, 4});
  std::vector<double> rows, cols;
  for (int64_t i = 0; i < 3; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 4; ++j) s += std::exp(double(at(v, i * 4 + j)));
    rows.push_back(std::log(s));
  }
  for (int64_t j = 0; j < 4; ++j) {
    double s = 0;
    for (int64_t i = 0; i < 3; ++i) s += std::exp(double(at(v, i * 4 + j)));
    cols.push_back(std::log(s));
  }
  // exp of x - max (at most 4 in magnitude: about 8 roundings with exp2 and the product by log2 e),
  // the sum, and log: the sum's relative error becomes an absolute one, so relative to 1 as well
  check_close(x.logsumexp(1).to_vector<float>(), rows, Tol::f32(20).of(1));
  check_close(x.logsumexp(-2).to_vector<float>(), cols, Tol::f32(20).of(1));
  CHECK(x.logsumexp(0, true).shape() == Shape{1, 4});
  check_close(x.T().logsumexp(1).to_vector<float>(), cols, Tol::f32(20).of(1));
  // far outside exp's range, and rows of infinities
  Tensor big = Tensor::from_vector(
      std::vector<float>{1000, 1000, -1000, -1000, -INFINITY, -INFINITY, INFINITY, 1}, {4, 2});
  check_close(big.logsumexp(1).to_vector<float>(),
              {1000 + std::log(2.0), -1000 + std::log(2.0), -kInf, kInf}, Tol::f32(20).of(1));
  CHECK(std::isnan(Tensor::from_vector(std::vector<float>{NAN, 1}).logsumexp(0).item<float>()));
  CHECK(Tensor::from_vector(std::vector<int32_t>{0, 0}).logsumexp(0).dtype() == dtypes::float32);
  check_scalar(Tensor::from_vector(std::vector<int32_t>{0, 0}).logsumexp(0), std::log(2.0), Tol::f32(20).of(1));
  // empty: the log of an empty sum is -inf; an empty batch stays empty
  check_close(Tensor::zeros({2, 0}).logsumexp(1).to_vector<float>(), {-kInf, -kInf}, Tol::exact());
  CHECK(Tensor::zeros({0, 3}).logsumexp(1).shape() == Shape{0});
}

TEST_CASE("nn: softmax and log_softmax") {
  const auto v = values(15, 3);
  Tensor x = Tensor::from_vector(v, {3, 5});
  auto lsm = ref_log_softmax_rows(v, 3, 5);
  std::vector<double> sm;
  for (double l : lsm) sm.push_back(std::exp(l));
  // exp (about 8 roundings, as logsumexp), a sum of 5 and the division: 16 roundings; log_softmax
  // errs as logsumexp, absolutely; the column sums add 2 more
  check_close(x.softmax().to_vector<float>(), sm, Tol::f32(16));
  check_close(x.softmax(1).to_vector<float>(), sm, Tol::f32(16));
  check_close(x.log_softmax(-1).to_vector<float>(), lsm, Tol::f32(20).of(1));
  // over axis 0: the softmax of the transposed rows, transposed back
  check_close(x.T().softmax(0).T().to_vector<float>(), sm, Tol::f32(16));
  check_close(x.T().log_softmax(0).T().to_vector<float>(), lsm, Tol::f32(20).of(1));
  // large logits do not overflow; rows sum to 1
  Tensor big = Tensor::from_vector(std::vector<float>{1000, 1001, -1000, -1001}, {2, 2});
  const double e = 1 / (1 + std::exp(1.0));
  check_close(big.softmax().to_vector<float>(), {e, 1 - e, 1 - e, e}, Tol::f32(16));
  check_close(big.log_softmax().to_vector<float>(),
              {std::log(e), std::log(1 - e), std::log(1 - e), std::log(e)}, Tol::f32(20).of(1));
  check_close(x.softmax(0).sum(0).to_vector<float>(), {1, 1, 1, 1, 1}, Tol::f32(18));
  CHECK(Tensor::from_vector(std::vector<int32_t>{1, 1}).softmax().to_vector<float>() ==
        std::vector<float>{0.5f, 0.5f});
  CHECK_THROWS_AS(x.softmax(2), IndexError);
  CHECK(Tensor::zeros({0, 3}).softmax().shape() == Shape{0, 3});
  CHECK(Tensor::zeros({3, 0}).log_softmax(0).shape() == Shape{3, 0});
  // fusion: the row's max and sum are computed in the kernel that writes the result (on a GPU:
  // the max, the sum of exponentials and the result are three kernels, each row reduced once)
  Tensor r = Tensor::from_vector(v, {3, 5});
  CHECK(kernels_to_realize(r.softmax()) == (on_gpu() ? 3 : 1));
  CHECK(kernels_to_realize(r.log_softmax()) == (on_gpu() ? 3 : 1));
  CHECK(kernels_to_realize(r.softmax(0)) == 3);  // down the columns: the max and sum are realized
}

// -- convolution --------------------------------------------------------------------------------

TEST_CASE("nn: row reductions computed inside one kernel match loops, with the hand-coded opts") {
  // rows long enough to be unrolled and a kernel big enough to be threaded
  const int64_t rows = 64, cols = 1280;
  const std::vector<float> v = values(rows * cols, 160);
  Tensor x = Tensor::from_vector(v, {rows, cols}).realize();
  std::vector<double> softmax(v.size()), log_softmax(v.size()), layernorm(v.size()), centered(v.size());
  for (int64_t i = 0; i < rows; ++i) {
    const auto row = [&](int64_t j) { return static_cast<double>(v[static_cast<size_t>(i * cols + j)]); };
    double mx = -INFINITY, mean = 0, sum = 0, var = 0;
    for (int64_t j = 0; j < cols; ++j) mx = std::max(mx, row(j)), mean += row(j) / static_cast<double>(cols);
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(row(j) - mx), var += std::pow(row(j) - mean, 2) / static_cast<double>(cols);
    for (int64_t j = 0; j < cols; ++j) {
      const auto k = static_cast<size_t>(i * cols + j);
      softmax[k] = std::exp(row(j) - mx) / sum;
      log_softmax[k] = row(j) - mx - std::log(sum);
      layernorm[k] = (row(j) - mean) / std::sqrt(var + 1e-5);
      centered[k] = row(j) - mx;
    }
  }
  for (const char* llvm : {"1", "0"}) {
    INFO("CPU_LLVM=", llvm);
    ScopedEnv env;
    env.set("CPU_LLVM", llvm);
    // sums of 1280 terms: the worst case is 1280 roundings, but independent rounding errors grow
    // like sqrt(n) (measured: 6 for softmax, 3 for log_softmax, 44 for layernorm's variance): 128
    check_close(x.softmax().to_vector<float>(), softmax, Tol::f32(128));
    check_close(x.log_softmax().to_vector<float>(), log_softmax, Tol::f32(128).of(1));
    check_close(x.layernorm().to_vector<float>(), layernorm, Tol::f32(128));
    check_close((x - x.max(1, true)).to_vector<float>(), centered, Tol::exact());
  }
}

TEST_CASE("nn: a softmax kernel computes each row's max and sum once, outside the loop over the row") {
  Tensor x = Tensor::from_vector(values(4 * 8, 161), {4, 8}).realize();
  const auto kernels = schedule::create_schedule({x.softmax().uop()});
  if (on_gpu()) {
    // each reduction is its own kernel: the max, the sum of exponentials, then the result (no reduction)
    REQUIRE(kernels.size() == 3);
    for (size_t k = 0; k < 3; ++k) {
      INFO("kernel ", k);
      int64_t reductions = 0;
      for (const UOp& u : toposort(kernels[k].ast)) reductions += u.op() == Ops::REDUCE_AXIS || u.op() == Ops::REDUCE;
      CHECK(reductions == (k < 2 ? 1 : 0));
    }
    return;
  }
  REQUIRE(kernels.size() == 1);
  const codegen::Program p = codegen::linearize(kernels[0].ast, "softmax");
  int depth = 0, deepest = 0, loops = 0;
  for (const UOp& u : p.ops) {
    if (u.op() == Ops::RANGE) deepest = std::max(deepest, ++depth), ++loops;
    if (u.op() == Ops::END) --depth;
  }
  CHECK(deepest == 2);  // rows, and in each the max, the sum and the output loop over the row
  CHECK(loops == 4);
}

TEST_CASE("nn: conv2d against a loop, with groups, stride, dilation and padding") {
  struct Case {
    Dims xs, ws;
    ConvArgs a;
    IntOrVec stride, dilation, padding;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{1, 1, 3, 3}, {1, 1, 1, 1}, {}, 1, 1, 0, false},
      {{2, 3, 5, 6}, {4, 3, 3, 3}, {}, 1, 1, 0, true},
      {{1, 2, 5, 5}, {3, 2, 3, 2}, {1, 2, 1, 1, 1, 1, 1, 1, 1}, IntOrVec{2, 1}, 1, 1, true},
      {{1, 2, 7, 6}, {2, 2, 3, 3}, {1, 2, 3, 1, 1, 0, 0, 0, 0}, IntOrVec{2, 3}, 1, 0, false},
      {{1, 2, 7, 7}, {2, 2, 3, 2}, {1, 1, 1, 2, 3, 0, 0, 0, 0}, 1, IntOrVec{2, 3}, 0, true},
      // groups 2
      {{2, 4, 6, 5}, {6, 2, 2, 3}, {2, 1, 1, 1, 1, 0, 0, 0, 0}, 1, 1, 0, true},
      // depthwise, strided
      {{1, 4, 5, 5}, {4, 1, 3, 3}, {4, 2, 2, 1, 1, 1, 1, 1, 1}, 2, 1, 1, false},
      // padding as (left, right, top, bottom)
      {{1, 2, 4, 5}, {2, 2, 3, 3}, {1, 1, 1, 1, 1, 2, 0, 1, 3}, 1, 1, IntOrVec{1, 3, 2, 0}, true},
      // stride 3, dilation 2
      {{1, 1, 6, 6}, {1, 1, 2, 2}, {1, 3, 3, 2, 2, 0, 0, 0, 0}, 3, 2, 0, false},
      // one output pixel
      {{1, 1, 3, 3}, {2, 1, 3, 3}, {1, 1, 1, 1, 1, 0, 0, 0, 0}, 1, 1, 0, true},
      // a stride past the rows of the window view
      {{1, 1, 4, 4}, {1, 1, 2, 2}, {1, 8, 8, 3, 3, 0, 0, 0, 0}, 8, 3, 0, false},
  };
  int seed = 10;
  for (const Case& c : cases) {
    INFO("x ", to_string(Shape(c.xs)), " w ", to_string(Shape(c.ws)));
    const auto xv = values(count(c.xs), seed++), wv = values(count(c.ws), seed++),
               bv = values(c.ws[0], seed++);
    Tensor x = Tensor::from_vector(xv, Shape(c.xs)), w = Tensor::from_vector(wv, Shape(c.ws));
    Tensor b = c.bias ? Tensor::from_vector(bv) : Tensor();
    Dims out;
    auto want = ref_conv2d(xv, c.xs, wv, c.ws, c.bias ? &bv : nullptr, c.a, out);
    Tensor y = x.conv2d(w, b, c.a.groups, c.stride, c.dilation, c.padding);
    CHECK(y.shape() == Shape(out));
    check_close(y.to_vector<float>(), want, Tol::exact());
  }
}

TEST_CASE("nn: conv2d of views, unbatched input, 1-d convolution and dtypes") {
  const auto xv = values(2 * 3 * 4 * 5, 40), wv = values(2 * 3 * 2 * 2, 41);
  Tensor w = Tensor::from_vector(wv, {2, 3, 2, 2});
  Dims out;
  // x stored as (N, H, W, C) and permuted to (N, C, H, W)
  std::vector<float> nhwc(xv.size());
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t x = 0; x < 5; ++x)
          nhwc[static_cast<size_t>(((n * 4 + h) * 5 + x) * 3 + c)] =
              at(xv, ((n * 3 + c) * 4 + h) * 5 + x);
  Tensor x = Tensor::from_vector(nhwc, {2, 4, 5, 3}).permute({0, 3, 1, 2});
  check_close(
      x.conv2d(w, {}, 1, 1, 1, 1).to_vector<float>(),
      ref_conv2d(xv, {2, 3, 4, 5}, wv, {2, 3, 2, 2}, nullptr, {1, 1, 1, 1, 1, 1, 1, 1, 1}, out), Tol::exact());
  // a flipped input is a conv of the flipped data
  std::vector<float> flipped(xv.size());
  for (int64_t i = 0; i < 2 * 3 * 4; ++i)
    for (int64_t j = 0; j < 5; ++j) flipped[static_cast<size_t>(i * 5 + j)] = at(xv, i * 5 + 4 - j);
  check_close(Tensor::from_vector(xv, {2, 3, 4, 5}).flip(3).conv2d(w).to_vector<float>(),
              ref_conv2d(flipped, {2, 3, 4, 5}, wv, {2, 3, 2, 2}, nullptr, {}, out), Tol::exact());
  // unbatched (C, H, W)
  Tensor x1 = Tensor::from_vector(std::vector<float>(xv.begin(), xv.begin() + 60), {3, 4, 5});
  Tensor y1 = x1.conv2d(w);
  CHECK(y1.shape() == Shape{2, 3, 4});
  check_close(y1.to_vector<float>(), ref_conv2d(std::vector<float>(xv.begin(), xv.begin() + 60),
                                                {1, 3, 4, 5}, wv, {2, 3, 2, 2}, nullptr, {}, out), Tol::exact());
  // 1-d: (N, C, L) with (O, C, K) is a 2-d conv with H = 1
  const auto lv = values(2 * 2 * 7, 42), kv = values(3 * 2 * 3, 43);
  Tensor y =
      Tensor::from_vector(lv, {2, 2, 7}).conv2d(Tensor::from_vector(kv, {3, 2, 3}), {}, 1, 2, 1, 1);
  CHECK(y.shape() == Shape{2, 3, 4});
  check_close(y.to_vector<float>(), ref_conv2d(lv, {2, 2, 1, 7}, kv, {3, 2, 1, 3}, nullptr,
                                               {1, 1, 2, 1, 1, 0, 0, 1, 1}, out), Tol::exact());
  // ints promote with floats; a size-0 batch
  Tensor xi = Tensor::ones({1, 1, 3, 3}, dtypes::int32);
  CHECK(xi.conv2d(Tensor::ones({1, 1, 2, 2})).dtype() == dtypes::float32);
  CHECK(xi.conv2d(Tensor::ones({1, 1, 2, 2}, dtypes::int32)).to_vector<int32_t>() ==
        std::vector<int32_t>{4, 4, 4, 4});
  CHECK(Tensor::ones({0, 3, 4, 5}).conv2d(w).shape() == Shape{0, 2, 3, 4});
}

TEST_CASE("nn: conv2d misuse throws ShapeError naming the shapes") {
  Tensor x = Tensor::zeros({1, 4, 5, 5});
  auto msg = error_of([&] { x.conv2d(Tensor::zeros({2, 3, 3, 3})); });
  INFO(msg);
  CHECK(contains(msg, "conv2d"));
  CHECK(contains(msg, "(1, 4, 5, 5)"));
  CHECK(contains(msg, "(2, 3, 3, 3)"));
  // channels, outputs not split by groups, groups 0, kernel (dilated or not) larger than the
  // input, bias, dims, stride and padding of the wrong length or value
  CHECK_THROWS_AS(x.conv2d(Tensor::zeros({2, 3, 3, 3})), ShapeError);
  CHECK_THROWS_AS(x.conv2d(Tensor::zeros({3, 2, 3, 3}), {}, 2), ShapeError);
  CHECK_THROWS_AS(x.conv2d(Tensor::zeros({2, 4, 3, 3}), {}, 0), ShapeError);
  CHECK_THROWS_AS(x.conv2d(Tensor::zeros({2, 4, 6, 3})), ShapeError);
  CHECK_THROWS_AS(x.conv2d(Tensor::zeros({2, 4, 3, 3}), {}, 1, 1, 3), ShapeError);
  CHECK_THROWS_AS(x.conv2d(Tensor::zeros({2, 4, 3, 3}), Tensor::zeros({3})), ShapeError);
  CHECK_THROWS_AS(x.conv2d(Tensor::zeros({2, 4, 3})), ShapeError);
  CHECK_THROWS_AS(x.conv2d(Tensor::zeros({2, 4})), ShapeError);
  CHECK_THROWS_AS(x.conv2d(Tensor::zeros({2, 4, 3, 3}), {}, 1, IntOrVec{1, 1, 1}), ShapeError);
  CHECK_THROWS_AS(x.conv2d(Tensor::zeros({2, 4, 3, 3}), {}, 1, 0), ShapeError);
  CHECK_THROWS_AS(x.conv2d(Tensor::zeros({2, 4, 3, 3}), {}, 1, 1, 1, IntOrVec{1, 1, 1}),
                  ShapeError);
}

TEST_CASE("nn: conv_transpose2d against a scatter loop") {
  struct Case {
    Dims xs, ws;
    int64_t groups, s, d, p, op;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{1, 1, 2, 2}, {1, 1, 2, 2}, 1, 1, 1, 0, 0, false},
      {{2, 3, 3, 4}, {3, 2, 3, 3}, 1, 1, 1, 0, 0, true},
      {{1, 2, 3, 3}, {2, 3, 3, 3}, 1, 2, 1, 0, 0, true},   // stride 2
      {{1, 2, 3, 4}, {2, 2, 3, 3}, 1, 2, 1, 1, 1, false},  // padding, output_padding
      {{1, 2, 3, 3}, {2, 1, 2, 2}, 1, 1, 2, 0, 0, false},  // dilation
      {{2, 4, 3, 2}, {4, 3, 2, 3}, 2, 3, 1, 1, 2, true},   // groups 2, stride 3, output_padding 2
      {{1, 2, 5, 5}, {2, 1, 2, 2}, 1, 1, 1, 2, 0, false},  // padding above (k-1)*d: crops
      // a kernel as large as the stride: blocks side by side, one matmul (detail::conv_transpose_blocks)
      {{1, 3, 4, 5}, {3, 2, 2, 2}, 1, 2, 1, 0, 0, true},   // PaddleOCR's upsampling
      {{2, 4, 3, 2}, {4, 3, 3, 3}, 2, 3, 1, 1, 2, true},   // groups 2, padding 1, output_padding 2
      {{1, 2, 3, 3}, {2, 2, 2, 2}, 1, 2, 1, 1, 1, false},  // padding cuts, output_padding adds back
      {{1, 2, 3, 3}, {2, 1, 2, 2}, 1, 2, 1, 3, 0, false},  // padding past a block
  };
  int seed = 60;
  for (const Case& c : cases) {
    INFO("x ", to_string(Shape(c.xs)), " w ", to_string(Shape(c.ws)), " stride ", c.s, " dilation ",
         c.d, " padding ", c.p);
    const auto xv = values(count(c.xs), seed++), wv = values(count(c.ws), seed++),
               bv = values(c.ws[1] * c.groups, seed++);
    Tensor x = Tensor::from_vector(xv, Shape(c.xs)), w = Tensor::from_vector(wv, Shape(c.ws));
    Tensor b = c.bias ? Tensor::from_vector(bv) : Tensor();
    Dims out;
    auto want = ref_conv_transpose2d(xv, c.xs, wv, c.ws, c.bias ? &bv : nullptr, c.groups, c.s, c.d,
                                     c.p, c.op, out);
    Tensor y = x.conv_transpose2d(w, b, c.groups, c.s, c.d, c.p, c.op);
    CHECK(y.shape() == Shape(out));
    check_close(y.to_vector<float>(), want, Tol::exact());
  }
  Tensor x = Tensor::zeros({1, 2, 3, 3});
  // channels, output_padding not below the stride, groups that do not split the channels
  Tensor w3 = Tensor::zeros({3, 2, 2, 2}), w2 = Tensor::zeros({2, 2, 2, 2});
  CHECK_THROWS_AS(x.conv_transpose2d(w3), ShapeError);
  CHECK_THROWS_AS(x.conv_transpose2d(w2, {}, 1, 2, 1, 0, 2), ShapeError);
  CHECK_THROWS_AS(x.conv_transpose2d(w2, {}, 3), ShapeError);
  CHECK(contains(error_of([&] { x.conv_transpose2d(w3); }), "(3, 2, 2, 2)"));
}

// -- pooling ------------------------------------------------------------------------------------

TEST_CASE("nn: max_pool2d and avg_pool2d against loops") {
  struct Case {
    int64_t H, W, k, s, d, p;
    IntOrVec stride;
  };
  const std::vector<Case> cases = {
      {4, 4, 2, 2, 1, 0, {}},  // default stride = kernel
      {5, 7, 2, 2, 1, 0, {}},  // odd sizes drop the remainder
      {5, 5, 3, 1, 1, 1, 1},   // overlapping, padded
      {6, 6, 3, 2, 1, 1, 2},   // overlapping, strided
      {7, 7, 2, 3, 2, 1, 3},   // dilation 2, stride 3
      {4, 5, 3, 3, 1, 1, {}},  // padded, default stride
      {1, 1, 1, 1, 1, 0, {}},  // 1x1
      {3, 3, 2, 6, 2, 0, 6},   // a stride wider than the dilated kernel and the input
      {5, 6, 3, 2, 1, 2, 2},   // padding over half the kernel (ONNX's, tinygrad's)
  };
  int seed = 80;
  for (const Case& c : cases) {
    INFO("H ", c.H, " W ", c.W, " kernel ", c.k, " stride ", c.s, " dilation ", c.d, " padding ",
         c.p);
    const auto xv = values(2 * 3 * c.H * c.W, seed++);
    Tensor x = Tensor::from_vector(xv, {2, 3, c.H, c.W});
    Dims hw;
    auto mx = ref_pool(xv, 6, c.H, c.W, c.k, c.s, c.d, c.p, true, false, hw);
    Tensor y = x.max_pool2d(c.k, c.stride, c.d, c.p);
    CHECK(y.shape() == Shape{2, 3, hw[0], hw[1]});
    // max is exact; avg is an exact sum divided by the count (or times its reciprocal): 2 roundings
    check_close(y.to_vector<float>(), mx, Tol::exact());
    if (c.p < c.d * (c.k - 1) + 1) {
      check_close(x.avg_pool2d(c.k, c.stride, c.d, c.p).to_vector<float>(),
                  ref_pool(xv, 6, c.H, c.W, c.k, c.s, c.d, c.p, false, true, hw), Tol::f32(2));
      check_close(x.avg_pool2d(c.k, c.stride, c.d, c.p, false).to_vector<float>(),
                  ref_pool(xv, 6, c.H, c.W, c.k, c.s, c.d, c.p, false, false, hw), Tol::f32(2));
    }
    // ceil_mode: a last, partial window where one fits
    Dims ceil_hw;
    const auto mx_ceil = ref_pool(xv, 6, c.H, c.W, c.k, c.s, c.d, c.p, true, false, ceil_hw, true);
    Tensor y_ceil = x.max_pool2d(c.k, c.stride, c.d, c.p, true);
    CHECK(y_ceil.shape() == Shape{2, 3, ceil_hw[0], ceil_hw[1]});
    check_close(y_ceil.to_vector<float>(), mx_ceil, Tol::exact());
    if (c.p < c.d * (c.k - 1) + 1)
      for (bool count_pad : {true, false})
        check_close(x.avg_pool2d(c.k, c.stride, c.d, c.p, count_pad, true).to_vector<float>(),
                    ref_pool(xv, 6, c.H, c.W, c.k, c.s, c.d, c.p, false, count_pad, hw, true), Tol::f32(2));
  }
  // a kernel of 3 dims pools the last 3: (2, 3, 4, 5) by (2, 2, 3) with stride (1, 2, 2)
  {
    const auto v = values(2 * 3 * 4 * 5, 95);
    std::vector<double> want3;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t o0 = 0; o0 < 2; ++o0)
        for (int64_t o1 = 0; o1 < 2; ++o1)
          for (int64_t o2 = 0; o2 < 2; ++o2) {
            double m = -kInf;
            for (int64_t k0 = 0; k0 < 2; ++k0)
              for (int64_t k1 = 0; k1 < 2; ++k1)
                for (int64_t k2 = 0; k2 < 3; ++k2)
                  m = std::max(m, double(at(v, ((b * 3 + o0 + k0) * 4 + o1 * 2 + k1) * 5 + o2 * 2 + k2)));
            want3.push_back(m);
          }
    Tensor y3 = Tensor::from_vector(v, {2, 3, 4, 5}).max_pool2d(IntOrVec{2, 2, 3}, IntOrVec{1, 2, 2});
    CHECK(y3.shape() == Shape{2, 2, 2, 2});
    check_close(y3.to_vector<float>(), want3, Tol::exact());
  }
  // a negative-only input padded with -inf keeps its values; padding with zeros would not
  Tensor neg = Tensor::full({1, 1, 2, 2}, -5.f);
  CHECK(neg.max_pool2d(2, 1, 1, 1).to_vector<float>() == std::vector<float>(9, -5.f));
  // per-dim kernel and stride, non-contiguous input, integers, 3-d input
  const auto xv = values(5 * 6, 90);
  Tensor x = Tensor::from_vector(xv, {1, 5, 6});
  std::vector<double> want;
  for (int64_t oy = 0; oy < 2; ++oy)
    for (int64_t ox = 0; ox < 3; ++ox) {
      double m = -kInf;
      for (int64_t ky = 0; ky < 2; ++ky)
        for (int64_t kx = 0; kx < 3; ++kx)
          if (ox * 2 + kx < 6) m = std::max(m, double(at(xv, (oy * 2 + ky) * 6 + ox * 2 + kx)));
      want.push_back(m);
    }
  CHECK(x.max_pool2d(IntOrVec{2, 3}, IntOrVec{2, 2}, 1, IntOrVec{0, 1, 0, 0}).shape() ==
        Shape{1, 2, 3});
  check_close(
      x.max_pool2d(IntOrVec{2, 3}, IntOrVec{2, 2}, 1, IntOrVec{0, 1, 0, 0}).to_vector<float>(),
      want, Tol::exact());
  std::vector<float> tr(xv.size());
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 6; ++j) tr[static_cast<size_t>(j * 5 + i)] = at(xv, i * 6 + j);
  check_close(Tensor::from_vector(tr, {1, 6, 5})
                  .transpose(1, 2)
                  .max_pool2d(IntOrVec{2, 3}, IntOrVec{2, 2}, 1, IntOrVec{0, 1, 0, 0})
                  .to_vector<float>(),
              want, Tol::exact());
  Tensor ints = Tensor::from_vector(std::vector<int32_t>{-7, -3, -9, -1}, {1, 2, 2});
  CHECK(ints.max_pool2d(2, 1, 1, 1).dtype() == dtypes::int32);
  CHECK(ints.max_pool2d(2, 1, 1, 1).to_vector<int32_t>() ==
        std::vector<int32_t>{-7, -3, -3, -7, -1, -1, -9, -1, -1});
  CHECK(ints.avg_pool2d(2).dtype() == dtypes::float32);
  CHECK(ints.avg_pool2d(2).item<float>() == -5.f);
  CHECK(Tensor::zeros({0, 1, 4, 4}).max_pool2d().shape() == Shape{0, 1, 2, 2});
  CHECK(Tensor::zeros({0, 1, 4, 4}).avg_pool2d().shape() == Shape{0, 1, 2, 2});
  // misuse
  Tensor t = Tensor::zeros({1, 1, 4, 4});
  CHECK_THROWS_AS(t.max_pool2d(5), ShapeError);            // kernel larger than input
  CHECK_THROWS_AS(t.max_pool2d(2, {}, 1, 2), ShapeError);  // padding as wide as the kernel
  CHECK_THROWS_AS(t.avg_pool2d(3, {}, 1, 3), ShapeError);
  CHECK_THROWS_AS(t.avg_pool2d(3, {}, 1, -1), ShapeError);
  CHECK_THROWS_AS(t.max_pool2d(IntOrVec{2, 2, 2}), ShapeError);  // kernel of 3 dims over a dim of 1
  CHECK_THROWS_AS(t.max_pool2d(IntOrVec{1, 1, 1, 1, 1}), ShapeError);  // more dims than the input
  CHECK_THROWS_AS(t.max_pool2d(2, 0), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({4}).max_pool2d(2), ShapeError);
  CHECK(contains(error_of([&] { t.max_pool2d(5); }), "max_pool2d"));
}

// -- interpolation ------------------------------------------------------------------------------

namespace {
// PyTorch's F.interpolate along one dim, as (input index, weight) taps per output position:
// written from its definitions (area_pixel_compute_source_index and the cubic convolution)
using Taps = std::vector<std::vector<std::pair<int64_t, double>>>;
Taps ref_taps(const std::string& mode, bool align_corners, int64_t in, int64_t out) {
  Taps taps(static_cast<size_t>(out));
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  auto clamp = [&](int64_t i) { return std::min<int64_t>(std::max<int64_t>(i, 0), in - 1); };
  for (int64_t o = 0; o < out; ++o) {
    auto& t = taps[static_cast<size_t>(o)];
    if (mode == "nearest") {
      t.push_back({clamp(static_cast<int64_t>(std::floor(static_cast<double>(o) * scale))), 1.0});
      continue;
    }
    double src = align_corners ? (out > 1 ? static_cast<double>(o) * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0)
                               : (static_cast<double>(o) + 0.5) * scale - 0.5;
    if (mode == "linear") {
      if (!align_corners) src = std::max(src, 0.0);
      const auto i0 = static_cast<int64_t>(std::floor(src));
      const double l = src - static_cast<double>(i0);
      t.push_back({clamp(i0), 1 - l});
      t.push_back({clamp(i0 + 1), l});
      continue;
    }
    const double a = -0.75, f = std::floor(src), x = src - f;
    auto near = [&](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };
    auto far = [&](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };
    const double w[4] = {far(x + 1), near(x), near(1 - x), far(2 - x)};
    for (int k = 0; k < 4; ++k) t.push_back({clamp(static_cast<int64_t>(f) - 1 + k), w[k]});
  }
  return taps;
}
}  // namespace

TEST_CASE("nn: interpolate against PyTorch's definitions, over 2 dims") {
  if (lacks(dtypes::float64)) return;  // (computed in float64, against float64 references)
  const int64_t B = 2, H = 5, W = 7;
  const auto xv = values(B * H * W, 70);
  const Tensor x = Tensor::from_vector(xv, {B, H, W});
  struct Case {
    const char* mode;
    bool align_corners;
    int64_t oh, ow;
  };
  for (const Case& c : std::vector<Case>{{"nearest", false, 10, 14},  // whole factors: a view
                                         {"nearest", false, 3, 11},
                                         {"linear", false, 9, 4},
                                         {"linear", true, 9, 4},
                                         {"linear", false, 1, 7},
                                         {"cubic", false, 8, 12},
                                         {"cubic", true, 4, 3}}) {
    INFO(c.mode, " align_corners ", c.align_corners, " to (", c.oh, ", ", c.ow, ")");
    const Taps th = ref_taps(c.mode, c.align_corners, H, c.oh), tw = ref_taps(c.mode, c.align_corners, W, c.ow);
    std::vector<double> want;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < c.oh; ++i)
        for (int64_t j = 0; j < c.ow; ++j) {
          double acc = 0;
          for (const auto& [y, wy] : th[static_cast<size_t>(i)])
            for (const auto& [xx, wx] : tw[static_cast<size_t>(j)]) acc += wy * wx * at(xv, (b * H + y) * W + xx);
          want.push_back(acc);
        }
    const Tensor y = x.interpolate({c.oh, c.ow}, c.mode, c.align_corners);
    CHECK(y.shape() == Shape{B, c.oh, c.ow});
    // two dims of up to 4 taps each, weights summing to 1 (cubic's of up to 1.3 in size): the
    // rounding of terms up to twice the inputs' size survives in a result that cancels smaller
    check_close(y.to_vector<float>(), want, Tol::f32(16).of(2.0));
  }
  // the integers of a nearest resize stay exact; a size of fewer dims resizes the last ones
  const Tensor ints = Tensor::from_vector(std::vector<int32_t>{1, 2, 3, 4}, {2, 2});
  CHECK(ints.interpolate({4}, "nearest").to_vector<int32_t>() == std::vector<int32_t>{1, 1, 2, 2, 3, 3, 4, 4});
  // misuse
  CHECK_THROWS_AS(x.interpolate({2, 2, 2, 2}), ShapeError);
  CHECK_THROWS_AS(x.interpolate({2, 2}, "area"), ShapeError);
  CHECK_THROWS_AS(x.interpolate({-1, 2}), ShapeError);
  Interpolation bad;
  bad.coordinates = "sideways";
  CHECK_THROWS_WITH_AS(x.interpolate({3, 3}, bad), doctest::Contains("sideways"), ShapeError);
}

// -- normalization ------------------------------------------------------------------------------

TEST_CASE("nn: layernorm and batchnorm") {
  const auto v = values(24, 100);
  Tensor x = Tensor::from_vector(v, {2, 3, 4});
  std::vector<double> last(24), mid(24);
  for (int64_t i = 0; i < 6; ++i) {  // over the last axis
    double m = 0, s = 0;
    for (int64_t k = 0; k < 4; ++k) m += at(v, i * 4 + k) / 4.0;
    for (int64_t k = 0; k < 4; ++k) s += std::pow(at(v, i * 4 + k) - m, 2) / 4.0;
    for (int64_t k = 0; k < 4; ++k)
      last[static_cast<size_t>(i * 4 + k)] = (at(v, i * 4 + k) - m) / std::sqrt(s + 1e-5);
  }
  for (int64_t i = 0; i < 2; ++i)  // over axis 1, eps 0.1
    for (int64_t k = 0; k < 4; ++k) {
      double m = 0, s = 0;
      for (int64_t j = 0; j < 3; ++j) m += at(v, (i * 3 + j) * 4 + k) / 3.0;
      for (int64_t j = 0; j < 3; ++j) s += std::pow(at(v, (i * 3 + j) * 4 + k) - m, 2) / 3.0;
      for (int64_t j = 0; j < 3; ++j)
        mid[static_cast<size_t>((i * 3 + j) * 4 + k)] =
            (at(v, (i * 3 + j) * 4 + k) - m) / std::sqrt(s + 0.1);
    }
  // rows of 4: the mean and the squares are exact, eps's sum, sqrt, reciprocal and product round
  // (6 allowed); over 3 the mean, deviations and their squares round too (10)
  check_close(x.layernorm().to_vector<float>(), last, Tol::f32(6));
  check_close(x.layernorm(1, 0.1).to_vector<float>(), mid, Tol::f32(10));
  check_close(x.permute({0, 2, 1}).layernorm(-1, 0.1).permute({0, 2, 1}).to_vector<float>(), mid, Tol::f32(10));
  CHECK_THROWS_AS(x.layernorm(3), IndexError);

  // batchnorm over channel axis 1: (x - mean) * weight * invstd + bias
  const std::vector<float> w{2, -1, 0.5f}, b{0.25f, 0, -1}, m{0.5f, -0.5f, 1}, inv{1, 2, 4};
  Tensor W = Tensor::from_vector(w), B = Tensor::from_vector(b), M = Tensor::from_vector(m),
         I = Tensor::from_vector(inv);
  std::vector<double> full(24), bare(24);
  for (int64_t i = 0; i < 24; ++i) {
    const auto c = static_cast<size_t>(i / 4 % 3);
    full[static_cast<size_t>(i)] = (at(v, i) - m[c]) * (w[c] * inv[c]) + b[c];
    bare[static_cast<size_t>(i)] = (at(v, i) - m[c]) * inv[c];
  }
  check_close(x.batchnorm(W, B, M, I).to_vector<float>(), full, Tol::exact());
  check_close(x.batchnorm({}, {}, M, I).to_vector<float>(), bare, Tol::exact());
  std::vector<double> two_d;  // (N, C) input
  for (int64_t i = 0; i < 6; ++i)
    two_d.push_back((at(v, i) - m[static_cast<size_t>(i % 3)]) * inv[static_cast<size_t>(i % 3)]);
  check_close(Tensor::from_vector(std::vector<float>(v.begin(), v.begin() + 6), {2, 3})
                  .batchnorm({}, {}, M, I)
                  .to_vector<float>(),
              two_d, Tol::exact());
  CHECK_THROWS_AS(x.batchnorm(W, B, Tensor::zeros({4}), I), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({3}).batchnorm(W, B, M, I), ShapeError);
}

// -- attention ----------------------------------------------------------------------------------

TEST_CASE("nn: scaled_dot_product_attention with masks") {
  const int64_t B = 2, L = 3, S = 4, E = 5, EV = 2;
  const auto qv = values(B * L * E, 110), kv = values(B * S * E, 111), vv = values(B * S * EV, 112);
  Tensor q = Tensor::from_vector(qv, {B, L, E}), k = Tensor::from_vector(kv, {B, S, E}),
         v = Tensor::from_vector(vv, {B, S, EV});
  // mask(b, i, j): +inf keeps, -inf drops, anything else is added
  auto ref = [&](const std::function<double(int64_t, int64_t)>& bias) {
    std::vector<double> r;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> s(S);
        double mx = -kInf, sum = 0;
        for (int64_t j = 0; j < S; ++j) {
          double acc = 0;
          for (int64_t e = 0; e < E; ++e)
            acc += double(at(qv, (b * L + i) * E + e)) * at(kv, (b * S + j) * E + e);
          s[static_cast<size_t>(j)] = acc / std::sqrt(double(E)) + bias(i, j);
          mx = std::max(mx, s[static_cast<size_t>(j)]);
        }
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (int64_t c = 0; c < EV; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < S; ++j)
            acc += s[static_cast<size_t>(j)] / sum * at(vv, (b * S + j) * EV + c);
          r.push_back(acc);
        }
      }
    return r;
  };
  Tensor plain = q.scaled_dot_product_attention(k, v);
  CHECK(plain.shape() == Shape{B, L, EV});
  // the scores are exact dot products scaled by 1/sqrt(5) (2 roundings), softmax over 4 as above
  // (16), and the weighted sum of values up to 2 cancels: 24 roundings of 2
  check_close(plain.to_vector<float>(), ref([](int64_t, int64_t) { return 0.0; }), Tol::f32(24).of(2));
  // causal with L != S: query i sees keys j <= i (top-left aligned, as PyTorch)
  check_close(q.scaled_dot_product_attention(k, v, {}, true).to_vector<float>(),
              ref([](int64_t i, int64_t j) { return j <= i ? 0.0 : -kInf; }), Tol::f32(24).of(2));
  // a boolean mask keeps where true, broadcast over the batch
  std::vector<bool> keep{true,  false, true, true, false, true,
                         false, true,  true, true, true,  false};
  check_close(
      q.scaled_dot_product_attention(k, v, Tensor::from_vector(keep, {L, S})).to_vector<float>(),
      ref([&](int64_t i, int64_t j) {
        return keep[static_cast<size_t>(i * S + j)] ? 0.0 : -kInf;
      }), Tol::f32(24).of(2));
  // a float mask is added
  const auto mv = values(L * S, 113);
  check_close(
      q.scaled_dot_product_attention(k, v, Tensor::from_vector(mv, {L, S})).to_vector<float>(),
      ref([&](int64_t i, int64_t j) { return double(at(mv, i * S + j)); }), Tol::f32(24).of(2));
  // heads as an extra batch dim, and a transposed key
  std::vector<float> kt(kv.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < S; ++j)
      for (int64_t e = 0; e < E; ++e)
        kt[static_cast<size_t>((b * E + e) * S + j)] = at(kv, (b * S + j) * E + e);
  Tensor k_view = Tensor::from_vector(kt, {B, E, S}).transpose(1, 2);
  check_close(
      q.reshape({B, 1, L, E})
          .scaled_dot_product_attention(k_view.reshape({B, 1, S, E}), v.reshape({B, 1, S, EV}))
          .to_vector<float>(),
      ref([](int64_t, int64_t) { return 0.0; }), Tol::f32(24).of(2));
  CHECK_THROWS_AS(q.scaled_dot_product_attention(k, v, Tensor::ones({L, S}), true), Error);
  CHECK_THROWS_AS(q.scaled_dot_product_attention(Tensor::zeros({B, S, E + 1}), v), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({3}).scaled_dot_product_attention(k, v), ShapeError);
}

// A KV cache's step: one query against the keys so far, their number a bound variable, so one
// graph (and under TinyJit one set of kernels) serves every length.
TEST_CASE("nn: scaled_dot_product_attention over a symbolic number of keys") {
  const int64_t B = 2, S = 8, E = 4, EV = 3;
  const auto qv = values(B * E, 114), kv = values(B * S * E, 115), vv = values(B * S * EV, 116);
  Tensor q = Tensor::from_vector(qv, {B, 1, E}), k = Tensor::from_vector(kv, {B, S, E}), v = Tensor::from_vector(vv, {B, S, EV});
  const UOp length = Variable("length", 1, S);
  for (int64_t n : {1, 3, 8}) {
    const sint bound = sint(length.bind(n));
    Tensor a = q.scaled_dot_product_attention(k[{Slice(), Slice(0, bound)}], v[{Slice(), Slice(0, bound)}]);
    std::vector<double> want;
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> w(static_cast<size_t>(n));
      double mx = -kInf, sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t e = 0; e < E; ++e) acc += double(at(qv, b * E + e)) * at(kv, (b * S + j) * E + e);
        mx = std::max(mx, w[static_cast<size_t>(j)] = acc / std::sqrt(double(E)));
      }
      for (double& x : w) sum += (x = std::exp(x - mx));
      for (int64_t c = 0; c < EV; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < n; ++j) acc += w[static_cast<size_t>(j)] / sum * at(vv, (b * S + j) * EV + c);
        want.push_back(acc);
      }
    }
    INFO("keys: ", n);
    check_close(a.to_vector<float>(), want, Tol::f32(24).of(2));  // as above
    CHECK_THROWS_AS(q.scaled_dot_product_attention(k[{Slice(), Slice(0, bound)}], v[{Slice(), Slice(0, bound)}], {}, true), ShapeError);
  }
}

// -- losses -------------------------------------------------------------------------------------

TEST_CASE("nn: cross_entropy with class indices and probabilities") {
  const int64_t N = 4, C = 5;
  const auto xv = values(N * C, 120);
  Tensor x = Tensor::from_vector(xv, {N, C});
  const auto lsm = ref_log_softmax_rows(xv, N, C);
  auto lp = [&](int64_t n, int64_t c) { return lsm[static_cast<size_t>(n * C + c)]; };
  const std::vector<int32_t> labels{2, 0, 4, 2};
  auto ref_idx = [&](const std::vector<int32_t>& t, double ls) {
    double total = 0, n_kept = 0;
    for (int64_t n = 0; n < N; ++n) {
      if (t[static_cast<size_t>(n)] == -100) continue;
      double smooth = 0;
      for (int64_t c = 0; c < C; ++c) smooth += lp(n, c) / C;
      total += -(1 - ls) * lp(n, t[static_cast<size_t>(n)]) - ls * smooth;
      ++n_kept;
    }
    return total / n_kept;
  };
  // log_softmax errs by a few roundings of its values (up to about 2 here), the mean keeps that
  check_scalar(x.cross_entropy(Tensor::from_vector(labels)), ref_idx(labels, 0), Tol::f32(8).of(2));
  check_scalar(x.cross_entropy(Tensor::from_vector(labels), 0.2), ref_idx(labels, 0.2), Tol::f32(8).of(2));
  check_scalar(x.cross_entropy(index_tensor({2, 0, 4, 2}, {4})), ref_idx(labels, 0), Tol::f32(8).of(2));
  // -100 is PyTorch's ignore_index: the mean is over the others
  const std::vector<int32_t> ignored{2, -100, 4, -100};
  check_scalar(x.cross_entropy(Tensor::from_vector(ignored), 0.1), ref_idx(ignored, 0.1), Tol::f32(8).of(2));
  // probabilities
  const auto pv = values(N * C, 121);
  std::vector<float> probs(pv.size());
  for (int64_t n = 0; n < N; ++n) {
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += std::fabs(at(pv, n * C + c)) + 0.1;
    for (int64_t c = 0; c < C; ++c)
      probs[static_cast<size_t>(n * C + c)] =
          static_cast<float>((std::fabs(at(pv, n * C + c)) + 0.1) / s);
  }
  double soft = 0, soft_ls = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      soft -= at(probs, n * C + c) * lp(n, c) / N;
      soft_ls -= (at(probs, n * C + c) * 0.7 + 0.3 / C) * lp(n, c) / N;
    }
  check_scalar(x.cross_entropy(Tensor::from_vector(probs, {N, C})), soft, Tol::f32(8).of(2));
  check_scalar(x.cross_entropy(Tensor::from_vector(probs, {N, C}), 0.3), soft_ls, Tol::f32(8).of(2));
  // unbatched (C,) with a 0-d label; (N, C, d) with (N, d) labels: the class axis is 1
  check_scalar(
      Tensor::from_vector(std::vector<float>(xv.begin(), xv.begin() + C)).cross_entropy(Tensor(2)),
      -lp(0, 2), Tol::f32(8).of(2));
  Tensor spatial = x.reshape({2, 2, C}).permute({0, 2, 1});  // (2, C, 2), non-contiguous
  Tensor sl = Tensor::from_vector(labels, {2, 2});
  check_scalar(spatial.cross_entropy(sl), ref_idx(labels, 0), Tol::f32(8).of(2));
  // misuse
  CHECK_THROWS_AS(x.cross_entropy(Tensor::zeros({N, C + 1})), ShapeError);
  CHECK_THROWS_AS(x.cross_entropy(Tensor::zeros({N}, dtypes::float32)), DTypeError);
  CHECK_THROWS_AS(x.cross_entropy(Tensor::zeros({N, C}, dtypes::int32)), DTypeError);
  CHECK_THROWS_AS(x.cross_entropy(Tensor::from_vector(labels), 1.5), Error);
  CHECK_THROWS_AS(Tensor(1.f).cross_entropy(Tensor(0)), ShapeError);
  CHECK(contains(error_of([&] { x.cross_entropy(Tensor::zeros({N, C + 1})); }), "(4, 6)"));
}

TEST_CASE("nn: sparse_categorical_crossentropy averages over labels not ignored") {
  const int64_t N = 5, C = 3;
  const auto xv = values(N * C, 130);
  Tensor x = Tensor::from_vector(xv, {N, C});
  const auto lsm = ref_log_softmax_rows(xv, N, C);
  auto ref = [&](const std::vector<int32_t>& t, int64_t ignore, double ls) {
    double total = 0, kept = 0;
    for (int64_t n = 0; n < N; ++n) {
      if (t[static_cast<size_t>(n)] == ignore) continue;
      double mean = 0;
      for (int64_t c = 0; c < C; ++c) mean += lsm[static_cast<size_t>(n * C + c)] / C;
      total += -(1 - ls) * lsm[static_cast<size_t>(n * C + t[static_cast<size_t>(n)])] - ls * mean;
      ++kept;
    }
    return total / kept;
  };
  const std::vector<int32_t> y{0, 2, 1, 1, 2};
  // log_softmax errs by a few roundings of its values (up to about 2 here), the mean keeps that
  check_scalar(x.sparse_categorical_crossentropy(Tensor::from_vector(y)), ref(y, -1, 0), Tol::f32(8).of(2));
  check_scalar(x.sparse_categorical_crossentropy(Tensor::from_vector(y), -1, 0.25),
               ref(y, -1, 0.25), Tol::f32(8).of(2));
  check_scalar(
      x.sparse_categorical_crossentropy(Tensor::from_vector(std::vector<int32_t>{0, -1, 1, -1, 2})),
      ref({0, -1, 1, -1, 2}, -1, 0), Tol::f32(8).of(2));
  check_scalar(x.sparse_categorical_crossentropy(
                   Tensor::from_vector(std::vector<int32_t>{0, 7, 1, 7, 2}), 7, 0.5),
               ref({0, 7, 1, 7, 2}, 7, 0.5), Tol::f32(8).of(2));
  // batch dims in front of the class axis, non-contiguous logits
  check_scalar(x.reshape({1, N, C}).flip(1).sparse_categorical_crossentropy(
                   Tensor::from_vector(std::vector<int32_t>{2, 1, 1, 2, 0}, {1, N})),
               ref(y, -1, 0), Tol::f32(8).of(2));
  CHECK_THROWS_AS(x.sparse_categorical_crossentropy(Tensor::zeros({N, 1}, dtypes::int32)),
                  ShapeError);
  CHECK_THROWS_AS(x.sparse_categorical_crossentropy(Tensor::zeros({N})), DTypeError);
  CHECK_THROWS_AS(x.sparse_categorical_crossentropy(Tensor::from_vector(y), -1, -0.5), Error);
}

TEST_CASE("nn: binary_crossentropy and its logits form") {
  const std::vector<float> p{0.1f, 0.5f, 0.9f, 0.3f, 0.0f, 1.0f}, t{0, 1, 1, 0.25f, 1, 0};
  double want = 0;
  for (size_t i = 0; i < p.size(); ++i)
    want -= (t[i] * std::max(std::log(double(p[i])), -100.0) +
             (1 - t[i]) * std::max(std::log(1 - double(p[i])), -100.0)) /
            6;
  Tensor P = Tensor::from_vector(p, {2, 3}), T = Tensor::from_vector(t, {2, 3});
  // six logs (log2 times ln 2: 4 roundings each) of terms up to 100/6, summed: 12 roundings of 20
  check_scalar(P.binary_crossentropy(T), want, Tol::f32(12).of(20));  // p = 0 and 1 are clamped at -100, as PyTorch
  check_scalar(P.T().binary_crossentropy(T.T()), want, Tol::f32(12).of(20));
  const std::vector<float> z{-3, -0.5f, 0, 2, 50, -80};
  double want_logits = 0;
  for (size_t i = 0; i < z.size(); ++i) {
    // log(sigmoid(z)) = -log1p(exp(-z)) computed stably here too
    const double log_s = z[i] >= 0 ? -std::log1p(std::exp(-double(z[i])))
                                   : double(z[i]) - std::log1p(std::exp(double(z[i])));
    const double log_1ms = log_s - double(z[i]);
    want_logits -= (t[i] * log_s + (1 - t[i]) * log_1ms) / 6;
  }
  // softplus-like terms of logits up to 80: 24 roundings of 80
  check_scalar(Tensor::from_vector(z, {2, 3}).binary_crossentropy_logits(T), want_logits, Tol::f32(24).of(80));
  CHECK_THROWS_AS(P.binary_crossentropy(T.reshape({6})), ShapeError);
  CHECK_THROWS_AS(P.binary_crossentropy_logits(T.shrink({{0, 2}, {0, 1}})), ShapeError);
  CHECK(contains(error_of([&] { P.binary_crossentropy(T.reshape({6})); }), "(6,)"));
}

TEST_CASE("nn: dropout is the identity unless training") {
  Tensor x = Tensor::from_vector(values(64, 140), {8, 8});
  CHECK(x.dropout().uop() == x.uop());
  CHECK(x.dropout(0.9).uop() == x.uop());
  CHECK_THROWS_AS(x.dropout(1.5), Error);
  CHECK_THROWS_AS(x.dropout(-0.1), Error);
}

TEST_CASE("nn: dropout while training keeps 1-p of the values, scaled") {
  struct Training {
    Training() { Tensor::training = true; }
    ~Training() { Tensor::training = false; }
  } training;
  Tensor::manual_seed(3);
  Tensor x = Tensor::ones({64, 64});
  const auto y = x.dropout(0.25).to_vector<float>();
  int64_t kept = 0;
  for (float v : y) {
    CHECK((v == 0.f || v == 1 / 0.75f));  // 1 scaled by 1/0.75: that one rounding, exactly
    kept += v != 0.f;
  }
  // 4096 draws with p = 0.75: within 5 standard deviations (~28) of 3072
  CHECK(std::llabs(kept - 3072) < 140);
  CHECK(x.dropout(0).uop() == x.uop());
  CHECK(x.dropout(1).to_vector<float>() == std::vector<float>(4096, 0.f));
  CHECK_THROWS_AS(Tensor::ones({2}, dtypes::int32).dropout(0.5), DTypeError);
}

TEST_CASE("nn: a residual stream summed layer after layer is kept, not added up again by each norm") {
  // h = a0 + a1 + ... + ai, each step's RMS norm reading h twice (its sum of squares and its
  // scaling): every kernel reading h added the whole chain again, one more buffer a layer
  const int64_t layers = 8, width = 64;
  std::vector<Tensor> parts;
  for (int64_t i = 0; i <= layers; ++i) parts.push_back(Tensor::from_vector(values(width, 160 + int(i)), {1, width}).realize());
  Tensor h = parts[0];
  std::vector<Tensor> norms;
  std::vector<UOp> roots;
  for (int64_t i = 1; i <= layers; ++i) {
    h = h + parts[static_cast<size_t>(i)];
    norms.push_back(h * (h * h).mean(-1, true).add(1e-5).rsqrt());
    roots.push_back(norms.back().uop());
  }
  size_t widest = 0;
  for (const schedule::Kernel& k : schedule::create_schedule(roots)) widest = std::max(widest, k.buffers.size());
  CHECK(widest <= 6);  // (was 10: the last norm read all 9 parts)
  const std::vector<float> first = parts[0].to_vector<float>();
  std::vector<double> sum(first.begin(), first.end());
  for (int64_t i = 1; i <= layers; ++i) {
    const std::vector<float> part = parts[static_cast<size_t>(i)].to_vector<float>(), got = norms[static_cast<size_t>(i - 1)].to_vector<float>();
    double squares = 0;
    for (int64_t c = 0; c < width; ++c) squares += (sum[static_cast<size_t>(c)] += part[static_cast<size_t>(c)]) * sum[static_cast<size_t>(c)];
    for (int64_t c = 0; c < width; ++c)
      CHECK(got[static_cast<size_t>(c)] == doctest::Approx(sum[static_cast<size_t>(c)] / std::sqrt(squares / width + 1e-5)).epsilon(1e-5));
  }
}

TEST_CASE("nn: a Linear's bias and activation are stored by its matmul's kernel when the next Linear reads them") {
  // gelu reads its input twice; the next matmul broadcasts the result. The matmul used to store
  // its sums, and a kernel of its own added the bias and applied gelu: 3 kernels for 2 matmuls.
  const int64_t rows = 16, in = 32, mid = 48, out = 24;
  const Tensor x = Tensor::from_vector(values(rows * in, 170), {rows, in}).realize();
  const Tensor w1 = Tensor::from_vector(values(mid * in, 171), {mid, in}).realize(), b1 = Tensor::from_vector(values(mid, 172)).realize();
  const Tensor w2 = Tensor::from_vector(values(out * mid, 173), {out, mid}).realize();
  const Tensor z = (x.matmul(w1.T()) + b1).gelu().matmul(w2.T());
  CHECK(kernels_to_realize(z) == (on_gpu() ? 3 : 2));  // (on a GPU the sums are still stored first)
  const std::vector<float> xv = x.to_vector<float>(), w1v = w1.to_vector<float>(), b1v = b1.to_vector<float>(), w2v = w2.to_vector<float>();
  const std::vector<float> got = z.to_vector<float>();
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<double> h(static_cast<size_t>(mid));
    for (int64_t j = 0; j < mid; ++j) {
      double acc = b1v[static_cast<size_t>(j)];
      for (int64_t k = 0; k < in; ++k) acc += double(xv[static_cast<size_t>(i * in + k)]) * w1v[static_cast<size_t>(j * in + k)];
      h[static_cast<size_t>(j)] = 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0)));  // PyTorch's exact gelu
    }
    for (int64_t j = 0; j < out; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < mid; ++k) acc += h[static_cast<size_t>(k)] * w2v[static_cast<size_t>(j * mid + k)];
      CHECK(got[static_cast<size_t>(i * out + j)] == doctest::Approx(acc).epsilon(1e-4));
    }
  }
}

TEST_CASE("nn: causal attention's probabilities are stored once, not recomputed by the product with V") {
  // the causal mask is built from aranges (reductions that read no memory); the probabilities
  // exp(s - max) / sum, broadcast along V's columns, read three values: stored first. Computed
  // in the product with V instead, every row tile's exps ran again per column tile: SmolLM's
  // 512-token prompt spent 58% of its time there (5 GFLOPS).
  const int64_t heads = 3, t = 12, d = 8;
  const Tensor q = Tensor::from_vector(values(heads * t * d, 174), {heads, t, d}).realize();
  const Tensor k = Tensor::from_vector(values(heads * t * d, 175), {heads, t, d}).realize();
  const Tensor v = Tensor::from_vector(values(heads * t * d, 176), {heads, t, d}).realize();
  const Tensor a = q.scaled_dot_product_attention(k, v, {}, true);
  const std::vector<schedule::Kernel> kernels = schedule::create_schedule({a.uop()});
  REQUIRE(!kernels.empty());
  CHECK(kernels.back().buffers.size() == 3);  // the output, the probabilities and V
  const std::vector<float> qv = q.to_vector<float>(), kv = k.to_vector<float>(), vv = v.to_vector<float>();
  const std::vector<float> got = a.to_vector<float>();
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < t; ++i) {
      std::vector<double> p(static_cast<size_t>(i + 1));
      double most = -INFINITY, sum = 0;
      for (int64_t j = 0; j <= i; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += double(qv[size_t((h * t + i) * d + c)]) * kv[size_t((h * t + j) * d + c)];
        p[size_t(j)] = dot / std::sqrt(double(d));
        most = std::max(most, p[size_t(j)]);
      }
      for (double& x : p) sum += x = std::exp(x - most);
      for (int64_t c = 0; c < d; ++c) {
        double want = 0;
        for (int64_t j = 0; j <= i; ++j) want += p[size_t(j)] / sum * vv[size_t((h * t + j) * d + c)];
        CHECK(got[size_t((h * t + i) * d + c)] == doctest::Approx(want).epsilon(1e-4));
      }
    }
}

TEST_CASE("nn: exp(x) read by a matmul is stored once, not computed again for every column tile") {
  // one input and two ops (a scaling and EXP2) are cheap to recompute by the old count; a
  // transcendental weighs four ops: x.exp().matmul(v) on 512x512 took 20x its time
  const int64_t m = 6, k = 5, n = 7;
  const Tensor x = Tensor::from_vector(values(m * k, 177), {m, k}).realize();
  const Tensor v = Tensor::from_vector(values(k * n, 178), {k, n}).realize();
  const Tensor y = x.exp().matmul(v);
  const std::vector<schedule::Kernel> kernels = schedule::create_schedule({y.uop()});
  REQUIRE(kernels.size() == 2);
  CHECK(kernels.back().buffers.size() == 3);  // the output, exp(x) and v
  const std::vector<float> xv = x.to_vector<float>(), vv = v.to_vector<float>(), got = y.to_vector<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t c = 0; c < k; ++c) want += std::exp(double(xv[size_t(i * k + c)])) * vv[size_t(c * n + j)];
      CHECK(got[size_t(i * n + j)] == doctest::Approx(want).epsilon(1e-5));
    }
}

TEST_CASE("nn: a gated FFN's two matmuls are two kernels on the CPU, the product in the second") {
  // silu(x W_gate^T) * (x W_up^T): in one kernel, each tile ran both sums (SmolLM's FFN at 512
  // tokens: 20.4-21 ms, 9.8-10.3 ms in two kernels); on a CPU the matmul first in the graph's order
  // is stored and the other's kernel computes the product. (Contractions of 2^20 products or more:
  // smaller ones stay in one kernel.)
  const int64_t t = 16, d = 64, f = 1024;
  const Tensor x = Tensor::from_vector(values(t * d, 179), {t, d}).realize();
  const Tensor wg = Tensor::from_vector(values(f * d, 180), {f, d}).realize();
  const Tensor wu = Tensor::from_vector(values(f * d, 181), {f, d}).realize();
  const Tensor y = x.matmul(wg.T()).silu() * x.matmul(wu.T());
  const std::vector<schedule::Kernel> kernels = schedule::create_schedule({y.uop()});
  if (!on_gpu()) CHECK(kernels.size() == 2);
  const std::vector<float> xv = x.to_vector<float>(), gv = wg.to_vector<float>(), uv = wu.to_vector<float>(), got = y.to_vector<float>();
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < f; ++j) {
      double gate = 0, up = 0;
      for (int64_t c = 0; c < d; ++c) {
        gate += double(xv[size_t(i * d + c)]) * gv[size_t(j * d + c)];
        up += double(xv[size_t(i * d + c)]) * uv[size_t(j * d + c)];
      }
      const double want = gate / (1 + std::exp(-gate)) * up;
      CHECK(got[size_t(i * f + j)] == doctest::Approx(want).epsilon(1e-4).scale(1e-3));
    }
  // three summed: the first two are stored, the third's kernel adds them
  const Tensor wv = Tensor::from_vector(values(f * d, 182), {f, d}).realize();
  const Tensor sum3 = x.matmul(wg.T()) + x.matmul(wu.T()) + x.matmul(wv.T());
  if (!on_gpu()) CHECK(schedule::create_schedule({sum3.uop()}).size() == 3);
  const std::vector<float> vv = wv.to_vector<float>(), got3 = sum3.to_vector<float>();
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < f; ++j) {
      double want = 0;
      for (int64_t c = 0; c < d; ++c)
        want += double(xv[size_t(i * d + c)]) * (double(gv[size_t(j * d + c)]) + uv[size_t(j * d + c)] + vv[size_t(j * d + c)]);
      CHECK(got3[size_t(i * f + j)] == doctest::Approx(want).epsilon(1e-5).scale(1e-3));
    }
}

TEST_CASE("nn: kernel counts") {
  Tensor x = Tensor::from_vector(values(2 * 3 * 6 * 6, 150), {2, 3, 6, 6}).realize();
  Tensor w = Tensor::from_vector(values(4 * 3 * 3 * 3, 151), {4, 3, 3, 3}).realize();
  Tensor b = Tensor::from_vector(values(4, 152)).realize();
  // a padded conv copies its input padded first: its own kernel then reads without masks
  CHECK(kernels_to_realize(x.conv2d(w, b, 1, 1, 1, 1).relu()) == 2);
  CHECK(kernels_to_realize(x.conv2d(w, b).relu()) == 1);
  // a conv into the next padded conv is stored, then padded: computed inside the padded copy, it
  // ran under the pad's gate without opts (0.2 GFLOPS; PaddleOCR's detector took 21 s a run)
  Tensor w4 = Tensor::from_vector(values(4 * 4 * 3 * 3, 156), {4, 4, 3, 3}).realize();
  CHECK(kernels_to_realize(x.conv2d(w, b, 1, 1, 1, 1).relu().conv2d(w4, {}, 1, 1, 1, 1)) == 4);
  // A conv's input gradient sums its windows' products in the kernel that computes them, also
  // when the gradient flows on through a pool and a relu: no kernel writes every window's
  // products (2 x 4 x 4 windows of 3 x 5 x 5, more than the 2 x 3 x 16 x 16 input).
  Tensor x0 = Tensor::from_vector(values(2 * 3 * 16 * 16, 153), {2, 3, 16, 16}).realize();
  Tensor w5 = Tensor::from_vector(values(4 * 3 * 5 * 5, 154), {4, 3, 5, 5}).realize();
  Tensor go = Tensor::from_vector(values(2 * 4 * 4 * 4, 155), {2, 4, 4, 4}).realize();
  Tensor dx0 = (x0.relu().max_pool2d().conv2d(w5) * go).sum().gradient({x0})[0];
  for (const schedule::Kernel& k : schedule::create_schedule({dx0.uop()}))
    CHECK(graph::shape_of(k.buffers[0]).numel().as_int() <= 2 * 3 * 16 * 16);
  CHECK(kernels_to_realize(dx0) <= 4);
  // a big conv whose output is pooled (max, then the mean: PaddleOCR's classifier head) is its
  // own kernel: inside the pool's, its output rows would be the pool's loops, which no tile spans
  Tensor xh = Tensor::from_vector(values(2 * 32 * 16 * 64, 157), {2, 32, 16, 64}).realize();
  Tensor wh = Tensor::from_vector(values(64 * 32, 158), {64, 32, 1, 1}).realize();
  CHECK(kernels_to_realize(xh.conv2d(wh).max_pool2d().mean(std::vector<int>{2, 3})) == 2);
  CHECK(kernels_to_realize(x.conv2d(w).max_pool2d().mean(std::vector<int>{2, 3})) == 1);  // (a small one stays: a launch costs more)
  CHECK(kernels_to_realize(x.max_pool2d()) == 1);
  CHECK(kernels_to_realize(x.avg_pool2d(3, 1, 1, 1)) == 1);
  CHECK(kernels_to_realize(x.argmax(1)) <= 3);
  CHECK(kernels_to_realize(x.var(1)) <= 2);
  CHECK(kernels_to_realize(x.reshape({6, 36}).layernorm()) == (on_gpu() ? 3 : 1));  // a GPU's: the mean, the variance, the result
}
