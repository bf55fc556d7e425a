// Linear algebra (ops/linalg.hpp): matmul, linear and einsum against loops written here in
// double, on odd shapes, broadcast batches, size-0 dims and non-contiguous views.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;
using namespace tinyt_test;

namespace {
using Dims = std::vector<int64_t>;

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }


// Row-major strides.
Dims strides(const Dims& s) {
  Dims st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// torch.matmul on the host: 1-D operands promoted and squeezed, batch dims broadcast.
std::vector<double> ref_matmul(const std::vector<double>& a, Dims as, const std::vector<double>& b,
                               Dims bs, Dims& out) {
  const bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  const int64_t n = as[as.size() - 2], k = as.back(), m = bs.back();
  Dims ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  const size_t nb = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), nb - ab.size(), 1), bb.insert(bb.begin(), nb - bb.size(), 1);
  Dims batch(nb);
  for (size_t i = 0; i < nb; ++i) batch[i] = std::max(ab[i], bb[i]);
  const Dims sa = strides(ab), sb = strides(bb), so = strides(batch);
  std::vector<double> r(static_cast<size_t>(count(batch) * n * m));
  for (int64_t t = 0; t < count(batch); ++t) {
    int64_t oa = 0, ob = 0;
    for (size_t i = 0; i < nb; ++i) {
      const int64_t idx = t / so[i] % batch[i];
      oa += (ab[i] == 1 ? 0 : idx) * sa[i], ob += (bb[i] == 1 ? 0 : idx) * sb[i];
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += a[static_cast<size_t>((oa * n + i) * k + p)] *
                 b[static_cast<size_t>((ob * k + p) * m + j)];
        r[static_cast<size_t>((t * n + i) * m + j)] = acc;
      }
  }
  out = batch;
  if (!a1) out.push_back(n);
  if (!b1) out.push_back(m);
  return r;
}

void check_matmul(const Dims& as, const Dims& bs, int seed = 1) {
  INFO("matmul of ", to_string(Shape(as)), " by ", to_string(Shape(bs)));
  auto av = values(count(as), seed), bv = values(count(bs), seed + 1);
  Tensor a = Tensor::from_vector(av, Shape(as)), b = Tensor::from_vector(bv, Shape(bs));
  Dims out;
  auto want = ref_matmul(to_double(av), as, to_double(bv), bs, out);
  Tensor c = a.matmul(b);
  CHECK(c.shape() == Shape(out));
  CHECK(c.dtype() == dtypes::float32);
  // values() are multiples of 1/8 below 2 in magnitude: each product is a multiple of 1/64 below
  // 4, and every partial sum of fewer than 2^16 of them is exact in float32, in any order
  check_close(c.to_vector<float>(), want, Tol::exact());
}


}  // namespace

TEST_CASE("linalg: matmul of matrices against a loop") {
  check_matmul({1, 1}, {1, 1});
  check_matmul({2, 3}, {3, 4});
  check_matmul({5, 7}, {7, 3}, 3);
  check_matmul({1, 9}, {9, 1}, 4);
  check_matmul({4, 1}, {1, 6}, 5);  // an outer product through a k of 1
}

TEST_CASE("linalg: matmul with 1-D operands follows torch.matmul") {
  check_matmul({4}, {4});           // a dot product: 0-d
  check_matmul({3}, {3, 5});        // vector @ matrix
  check_matmul({5, 3}, {3});        // matrix @ vector
  check_matmul({3}, {2, 3, 4});     // vector @ batch
  check_matmul({2, 2, 5, 3}, {3});  // batch @ vector
  Tensor v = Tensor::from_vector(std::vector<float>{1, 2, 3});
  CHECK(v.matmul(v).ndim() == 0);
  CHECK(v.dot(v).item<float>() == 14.f);
}

TEST_CASE("linalg: batched matmul broadcasts the batch dims") {
  check_matmul({2, 3, 4}, {2, 4, 5});
  check_matmul({3, 4}, {2, 4, 5});  // a matrix against each of a batch
  check_matmul({2, 3, 4}, {4, 5});
  check_matmul({2, 1, 3, 4}, {5, 4, 2});  // (2, 1) with (5,) -> (2, 5)
  check_matmul({1, 3, 2, 2}, {4, 1, 2, 3}, 7);
}

TEST_CASE("linalg: matmul of size-0 dims") {
  Tensor a = Tensor::zeros({2, 0}), b = Tensor::zeros({0, 3});
  Tensor c = a.matmul(b);
  CHECK(c.shape() == Shape{2, 3});
  CHECK(c.to_vector<float>() == std::vector<float>(6, 0.f));  // an empty sum is 0
  CHECK(Tensor::ones({0, 3}).matmul(Tensor::ones({3, 4})).shape() == Shape{0, 4});
  CHECK(Tensor::ones({2, 3}).matmul(Tensor::ones({3, 0})).to_vector<float>().empty());
  CHECK(Tensor::ones({0, 2, 3}).matmul(Tensor::ones({3, 4})).shape() == Shape{0, 2, 4});
  check_matmul({2, 0, 3}, {3, 2});
}

TEST_CASE("linalg: float16 and bfloat16 matmul and conv2d multiply and add up in float32, rounded once") {
  // p*p - q with p = 1 + 2^-m and q = 1 + 2^-(m-1) (m fraction bits) is 2^-2m exactly; a product
  // rounded to the dtype first would lose it and give 0 (PyTorch's CPU kernels give 2^-2m)
  // (a pair, not a structured binding: clang 14 cannot capture one in INFO's lambda)
  for (const auto& dt_bits : {std::pair{dtypes::bfloat16, 7}, std::pair{dtypes::float16, 10}}) {
    const DType dt = dt_bits.first;
    const int m = dt_bits.second;
    INFO(dt.name());
    const float p = 1 + std::ldexp(1.0f, -m), q = 1 + std::ldexp(1.0f, -(m - 1)), want = std::ldexp(1.0f, -2 * m);
    const Tensor a = Tensor::from_vector(std::vector<float>{p, q}, {1, 2}).cast(dt);
    const Tensor b = Tensor::from_vector(std::vector<float>{p, -1}, {2, 1}).cast(dt);
    CHECK(a.matmul(b).dtype() == dt);
    CHECK(a.matmul(b).cast(dtypes::float32).item<float>() == want);
    // the same dot product as a 1x1 convolution over two channels
    CHECK(a.reshape({1, 2, 1, 1}).conv2d(b.reshape({1, 2, 1, 1})).cast(dtypes::float32).item<float>() == want);
  }
}

TEST_CASE("linalg: matmul dtypes") {
  std::vector<int32_t> ai{1, -2, 3, 4, 5, -6}, bi{7, 8, -9, 10, 11, 12};
  Tensor a = Tensor::from_vector(ai, {2, 3}), b = Tensor::from_vector(bi, {3, 2});
  Tensor c = a.matmul(b);
  CHECK(c.dtype() == dtypes::int32);
  std::vector<int32_t> want(4, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int p = 0; p < 3; ++p)
        want[static_cast<size_t>(i * 2 + j)] +=
            ai[static_cast<size_t>(i * 3 + p)] * bi[static_cast<size_t>(p * 2 + j)];
  CHECK(c.to_vector<int32_t>() == want);
  // int and float promote to float; float64 stays float64
  Tensor f = Tensor::from_vector(std::vector<float>{0.5f, 1, 2, 1, 1, 1}, {3, 2});
  CHECK(a.matmul(f).dtype() == dtypes::float32);
  check_close(a.matmul(f).to_vector<float>(), {0.5 - 4 + 3, 1 - 2 + 3, 2 + 10 - 6, 4 + 5 - 6}, Tol::exact());
  if (!lacks(dtypes::float64)) {
    Tensor d = Tensor::from_vector(std::vector<double>{1, 2}, {2});
    CHECK(d.matmul(d).dtype() == dtypes::float64);
    CHECK(d.matmul(d).item<double>() == 5.0);
  }
  // int8 accumulates wider and wraps back to int8, as PyTorch
  Tensor s = Tensor::from_vector(std::vector<int8_t>{100, 100}, {1, 2});
  Tensor t = Tensor::from_vector(std::vector<int8_t>{1, 1}, {2, 1});
  CHECK(s.matmul(t).dtype() == dtypes::int8);
  CHECK(s.matmul(t).item<int8_t>() == static_cast<int8_t>(200 - 256));
}

TEST_CASE("linalg: matmul of non-contiguous views") {
  const auto av = values(12, 11), bv = values(20, 12);
  Tensor a = Tensor::from_vector(av, {4, 3}), b = Tensor::from_vector(bv, {5, 4});
  auto A = [&](int64_t i, int64_t j) {
    return static_cast<double>(av[static_cast<size_t>(i * 3 + j)]);
  };
  auto B = [&](int64_t i, int64_t j) {
    return static_cast<double>(bv[static_cast<size_t>(i * 4 + j)]);
  };
  auto ref = [](int64_t n, int64_t k, int64_t m, const std::function<double(int64_t, int64_t)>& x,
                const std::function<double(int64_t, int64_t)>& y) {
    std::vector<double> r;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += x(i, p) * y(p, j);
        r.push_back(acc);
      }
    return r;
  };
  // transposed both: (3, 4) @ (4, 5)
  check_close(a.T().matmul(b.T()).to_vector<float>(),
              ref(
                  3, 4, 5, [&](int64_t i, int64_t p) { return A(p, i); },
                  [&](int64_t p, int64_t j) { return B(j, p); }), Tol::exact());
  // sliced by shrink: a[1:3, :] @ b.T()[0:3, 1:5]
  check_close(a.shrink({{1, 3}, {0, 3}}).matmul(b.T().shrink({{0, 3}, {1, 5}})).to_vector<float>(),
              ref(
                  2, 3, 4, [&](int64_t i, int64_t p) { return A(i + 1, p); },
                  [&](int64_t p, int64_t j) { return B(j + 1, p); }), Tol::exact());
  // flipped rows of a and columns of b
  check_close(a.flip(0).T().matmul(b.flip(1).T()).to_vector<float>(),
              ref(
                  3, 4, 5, [&](int64_t i, int64_t p) { return A(3 - p, i); },
                  [&](int64_t p, int64_t j) { return B(j, 3 - p); }), Tol::exact());
  // an expanded (broadcast) operand and a padded one
  Tensor row = Tensor::from_vector(std::vector<float>{1, 2, 3}, {1, 3}).expand({4, 3});
  check_close(row.matmul(a.T()).to_vector<float>(),
              ref(
                  4, 3, 4, [](int64_t, int64_t p) { return p + 1.0; },
                  [&](int64_t p, int64_t j) { return A(j, p); }), Tol::exact());
  check_close(a.pad({{0, 0}, {1, 1}}).matmul(Tensor::ones({5, 2})).to_vector<float>(),
              ref(4, 3, 2, A, [](int64_t, int64_t) { return 1.0; }), Tol::exact());
}

TEST_CASE("linalg: matmul misuse throws ShapeError naming both shapes") {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4, 5});
  CHECK_THROWS_AS(a.matmul(b), ShapeError);
  CHECK(error_of([&] { a.matmul(b); }) == "matmul: cannot multiply (2, 3) by (4, 5)");
  CHECK_THROWS_AS(Tensor(2.f).matmul(a), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({3}).matmul(Tensor::zeros({4})), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({3}).matmul(Tensor::zeros({4, 3})), ShapeError);
  // batch dims that do not broadcast
  CHECK_THROWS_AS(Tensor::zeros({2, 3, 4}).matmul(Tensor::zeros({3, 4, 5})), ShapeError);
  CHECK(error_of([] {
          Tensor::zeros({2, 3, 4}).matmul(Tensor::zeros({3, 4, 5}));
        }).find("(2, 3, 4) by (3, 4, 5)") != std::string::npos);
  CHECK_THROWS_AS(a.matmul(Tensor()), Error);
}

TEST_CASE("linalg: linear is x @ w + b and fuses with its activation") {
  const auto xv = values(6, 21), wv = values(12, 22), bv = values(4, 23);
  Tensor x = Tensor::from_vector(xv, {2, 3}), w = Tensor::from_vector(wv, {3, 4}),
         b = Tensor::from_vector(bv, {4});
  std::vector<double> want, want_nb;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      double acc = 0;
      for (int p = 0; p < 3; ++p)
        acc += double(xv[static_cast<size_t>(i * 3 + p)]) * wv[static_cast<size_t>(p * 4 + j)];
      want_nb.push_back(acc);
      want.push_back(acc + bv[static_cast<size_t>(j)]);
    }
  check_close(x.linear(w, b).to_vector<float>(), want, Tol::exact());
  check_close(x.linear(w).to_vector<float>(), want_nb, Tol::exact());
  std::vector<double> relu = want;
  for (double& v : relu) v = std::max(v, 0.0);
  Tensor y = (x.matmul(w) + b).relu();
  CHECK(kernels_to_realize(y) == 1);
  check_close(y.to_vector<float>(), relu, Tol::exact());
  // a 1-D weight scales elementwise (tinygrad)
  Tensor s = Tensor::from_vector(std::vector<float>{1, 2, 3});
  check_close(x.linear(s).to_vector<float>(),
              {xv[0] * 1.0, xv[1] * 2.0, xv[2] * 3.0, xv[3] * 1.0, xv[4] * 2.0, xv[5] * 3.0}, Tol::exact());
  CHECK_THROWS_AS(x.linear(w, Tensor::zeros({3})), ShapeError);
}

TEST_CASE("linalg: einsum against loops") {
  const auto av = values(6, 31), bv = values(12, 32), cv = values(8, 33);
  Tensor a = Tensor::from_vector(av, {2, 3}), b = Tensor::from_vector(bv, {3, 4}),
         c = Tensor::from_vector(cv, {4, 2});
  auto A = [&](int64_t i, int64_t j) { return double(av[static_cast<size_t>(i * 3 + j)]); };
  auto B = [&](int64_t i, int64_t j) { return double(bv[static_cast<size_t>(i * 4 + j)]); };
  auto C = [&](int64_t i, int64_t j) { return double(cv[static_cast<size_t>(i * 2 + j)]); };
  std::vector<double> ab, ab_t, chain, outer, trans, rows;
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) {
      double acc = 0;
      for (int j = 0; j < 3; ++j) acc += A(i, j) * B(j, k);
      ab.push_back(acc);
    }
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i) ab_t.push_back(ab[static_cast<size_t>(i * 4 + k)]);
  for (int i = 0; i < 2; ++i)
    for (int l = 0; l < 2; ++l) {
      double acc = 0;
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) acc += A(i, j) * B(j, k) * C(k, l);
      chain.push_back(acc);
    }
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) outer.push_back(A(1, i) * C(j, 0));
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 2; ++i) trans.push_back(A(i, j));
  for (int i = 0; i < 2; ++i) rows.push_back(A(i, 0) + A(i, 1) + A(i, 2));
  double total = 0;
  for (float v : av) total += v;

  check_close(Tensor::einsum("ij,jk->ik", {a, b}).to_vector<float>(), ab, Tol::exact());
  check_close(Tensor::einsum("ij,jk", {a, b}).to_vector<float>(), ab, Tol::exact());  // implicit: i, k
  check_close(Tensor::einsum("ij,jk->ki", {a, b}).to_vector<float>(), ab_t, Tol::exact());
  check_close(Tensor::einsum(" i j , j k -> k i ", {a, b}).to_vector<float>(), ab_t, Tol::exact());  // spaces
  check_close(Tensor::einsum("ij,jk,kl->il", {a, b, c}).to_vector<float>(), chain, Tol::exact());
  Tensor a1 = a.shrink({{1, 2}, {0, 3}}).reshape({3}), c0 = c.shrink({{0, 4}, {0, 1}}).reshape({4});
  check_close(Tensor::einsum("i,j->ij", {a1, c0}).to_vector<float>(), outer, Tol::exact());
  check_close(Tensor::einsum("ij->ji", {a}).to_vector<float>(), trans, Tol::exact());
  check_close(Tensor::einsum("ji", {a}).to_vector<float>(),
              trans, Tol::exact());  // implicit output is sorted: i, j
  check_close(Tensor::einsum("ij->i", {a}).to_vector<float>(), rows, Tol::exact());
  CHECK(Tensor::einsum("ij->", {a}).ndim() == 0);
  check_close({Tensor::einsum("ij->", {a}).item<float>()}, {total}, Tol::exact());
  // on a non-contiguous (transposed and flipped) operand
  check_close(Tensor::einsum("ji,jk->ik", {a.T().flip(1).flip(1), b}).to_vector<float>(), ab, Tol::exact());
}

TEST_CASE("linalg: einsum diagonals, traces, batches, ellipsis and broadcasting") {
  const auto mv = values(16, 41);
  Tensor m = Tensor::from_vector(mv, {4, 4});
  auto M = [&](int64_t i, int64_t j) { return double(mv[static_cast<size_t>(i * 4 + j)]); };
  double trace = 0;
  std::vector<double> diag;
  for (int i = 0; i < 4; ++i) trace += M(i, i), diag.push_back(M(i, i));
  check_close({Tensor::einsum("ii", {m}).item<float>()}, {trace}, Tol::exact());
  check_close({Tensor::einsum("ii->", {m}).item<float>()}, {trace}, Tol::exact());
  check_close(Tensor::einsum("ii->i", {m}).to_vector<float>(), diag, Tol::exact());
  // the diagonal of a transposed view, and a trace within a product
  check_close(Tensor::einsum("ii->i", {m.T()}).to_vector<float>(), diag, Tol::exact());
  Tensor v = Tensor::from_vector(std::vector<float>{1, 2, 3, 4});
  double weighted = 0;
  for (int i = 0; i < 4; ++i) weighted += M(i, i) * (i + 1);
  check_close({Tensor::einsum("ii,i->", {m, v}).item<float>()}, {weighted}, Tol::exact());
  // a label three times: (2, 2, 2) -> its diagonal
  const auto cv = values(8, 42);
  Tensor cube = Tensor::from_vector(cv, {2, 2, 2});
  check_close(Tensor::einsum("iii->i", {cube}).to_vector<float>(), {cv[0], cv[7]}, Tol::exact());
  // a repeated label alongside another: "iij->j"
  std::vector<double> iij(2, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      iij[static_cast<size_t>(j)] += cv[static_cast<size_t>(i * 4 + i * 2 + j)];
  check_close(Tensor::einsum("iij->j", {cube}).to_vector<float>(), iij, Tol::exact());

  // batches and ellipsis: (2, 3, 4) @ (2, 4, 5) written three ways, and broadcast ellipsis dims
  const auto xv = values(24, 43), yv = values(40, 44);
  Tensor x = Tensor::from_vector(xv, {2, 3, 4}), y = Tensor::from_vector(yv, {2, 4, 5});
  Dims out;
  auto want = ref_matmul(to_double(xv), {2, 3, 4}, to_double(yv), {2, 4, 5}, out);
  check_close(Tensor::einsum("bij,bjk->bik", {x, y}).to_vector<float>(), want, Tol::exact());
  check_close(Tensor::einsum("...ij,...jk->...ik", {x, y}).to_vector<float>(), want, Tol::exact());
  check_close(Tensor::einsum("...ij,...jk", {x, y}).to_vector<float>(),
              want, Tol::exact());  // implicit: ellipsis first
  Tensor y0 = y.shrink({{0, 1}, {0, 4}, {0, 5}}).reshape({4, 5});
  auto want0 = ref_matmul(to_double(xv), {2, 3, 4},
                          std::vector<double>(yv.begin(), yv.begin() + 20), {4, 5}, out);
  check_close(Tensor::einsum("...ij,jk->...ik", {x, y0}).to_vector<float>(), want0, Tol::exact());
  // size-1 dims broadcast against the same label's full size
  Tensor r = Tensor::from_vector(std::vector<float>{1, 2, 3}, {1, 3});
  Tensor s = Tensor::from_vector(std::vector<float>{1, 10}, {2, 1});
  Tensor rs = Tensor::einsum("ij,ij->ij", {r, s});
  CHECK(rs.shape() == Shape{2, 3});
  check_close(rs.to_vector<float>(), {1, 2, 3, 10, 20, 30}, Tol::exact());
  // dtypes promote; size-0 labels sum to 0
  Tensor ints = Tensor::from_vector(std::vector<int32_t>{1, 2, 3, 4}, {2, 2});
  CHECK(Tensor::einsum("ij,jk->ik", {ints, ints}).dtype() == dtypes::int32);
  CHECK(Tensor::einsum("ij,jk->ik", {ints, ints}).to_vector<int32_t>() ==
        std::vector<int32_t>{7, 10, 15, 22});
  CHECK(Tensor::einsum("ij,jk->ik", {ints, m.shrink({{0, 2}, {0, 2}})}).dtype() == dtypes::float32);
  CHECK(Tensor::einsum("ij,jk->ik", {Tensor::ones({2, 0}), Tensor::ones({0, 3})})
            .to_vector<float>() == std::vector<float>(6, 0.f));
  // the einsum of a matmul is one kernel
  CHECK(kernels_to_realize(Tensor::einsum(
            "ij,jk->ik", {x.shrink({{0, 1}, {0, 3}, {0, 4}}).reshape({3, 4}), y0})) == 1);
}

TEST_CASE("linalg: einsum misuse names the formula") {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4, 5});
  auto has = [](const std::string& msg, const std::string& part) {
    INFO(msg);
    CHECK(msg.find(part) != std::string::npos);
  };
  CHECK_THROWS_AS(Tensor::einsum("ij,jk->ik", {a, b}), ShapeError);  // j is 3 and 4
  has(error_of([&] { Tensor::einsum("ij,jk->ik", {a, b}); }), "ij,jk->ik");
  CHECK_THROWS_AS(Tensor::einsum("ij,jk->ik", {a}), Error);  // two terms, one operand
  has(error_of([&] { Tensor::einsum("ij,jk->ik", {a}); }), "\"ij,jk->ik\"");
  CHECK_THROWS_AS(Tensor::einsum("ijk->i", {a}), ShapeError);  // three labels for 2 dims
  has(error_of([&] { Tensor::einsum("ijk->i", {a}); }), "ijk->i");
  CHECK_THROWS_AS(Tensor::einsum("i1->i", {a}), Error);  // not a letter
  has(error_of([&] { Tensor::einsum("i1->i", {a}); }), "'1'");
  CHECK_THROWS_AS(Tensor::einsum("ij->ik", {a}), Error);  // k is in no input
  has(error_of([&] { Tensor::einsum("ij->ik", {a}); }), "'k'");
  CHECK_THROWS_AS(Tensor::einsum("ij->ii", {a}), Error);      // output label twice
  CHECK_THROWS_AS(Tensor::einsum("ii->i", {a}), ShapeError);  // a diagonal of (2, 3)
  CHECK_THROWS_AS(Tensor::einsum("ij->i->j", {a}), Error);
  CHECK_THROWS_AS(Tensor::einsum("i......j->ij", {a}), Error);
  CHECK_THROWS_AS(Tensor::einsum("ij", {}), Error);
}
