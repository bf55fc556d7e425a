// Tensors with a dimension of size 0: every op family gives PyTorch's shape and values and launches
// no kernel over nothing (a kernel that stored into an empty buffer as if its loop ran once
// corrupted the heap). The shapes have more than 16 columns, so a kernel writing a row of one
// would pass the 64 bytes the CPU allocator rounds an empty buffer up to, which ASan and glibc
// see (make sanitize-fast runs this file). The run cl_zero_size does it all again on OpenCL.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <tinyt.hpp>
#include <tinyt/internals.hpp>

#include "helpers.hpp"

using namespace tinyt;
using namespace tinyt_test;

namespace {
constexpr int64_t cols = 40;

// The kernels `f` launches (realizing what it returns).
template <class F>
int64_t kernels_of(F&& f) {
  GlobalCounters::reset();
  Tensor t = f();
  t.realize();
  return GlobalCounters::kernel_count;
}
std::vector<float> filled(size_t n, float v) { return std::vector<float>(n, v); }
}  // namespace

TEST_CASE("zero-size: elementwise ops give empty tensors and launch no kernel") {
  for (const Shape& shape : {Shape{0, cols}, Shape{3, 0, cols}, Shape{cols, 0}, Shape{0}}) {
    CAPTURE(shape);
    CHECK(kernels_of([&] { return Tensor::ones(shape) + 1; }) == 0);
    Tensor y = (Tensor::ones(shape) * 2 + Tensor::rand(shape)).exp().realize();
    CHECK(y.shape() == shape);
    CHECK(y.numel() == 0);
    CHECK(y.to_vector<float>().empty());
    CHECK((Tensor::zeros(shape, dtypes::int32) < 3).to_vector<bool>().empty());
    CHECK(Tensor::zeros(shape).cast(dtypes::float16).to_vector<half_t>().empty());
  }
  // an empty operand broadcast against a row: the result is empty too
  Tensor row = Tensor::arange(cols).cast(dtypes::float32);
  CHECK(kernels_of([&] { return Tensor::zeros({0, cols}) * row + row; }) == 0);
  CHECK(Tensor::from_vector(std::vector<float>{}, {0, cols}).sqrt().shape() == Shape{0, cols});
}

TEST_CASE("zero-size: movement ops keep the empty shape or pad it into values") {
  CHECK(kernels_of([] { return Tensor::zeros({0, 16}).reshape({0, 64}).contiguous(); }) == 0);
  CHECK(Tensor::zeros({0, 16}).reshape({0, 64}).contiguous().shape() == Shape{0, 64});
  CHECK(Tensor::zeros({0, 16}).reshape({-1, 64}).shape() == Shape{0, 64});
  Tensor e = Tensor::ones({3, 0, cols});
  CHECK(e.permute({2, 0, 1}).contiguous().shape() == Shape{cols, 3, 0});
  CHECK(e.flip({0, 2}).contiguous().to_vector<float>().empty());
  CHECK(Tensor::ones({1, cols}).expand({0, cols}).contiguous().shape() == Shape{0, cols});
  CHECK(Tensor::arange(cols).shrink({{5, 5}}).contiguous().to_vector<int32_t>().empty());
  CHECK(Tensor::ones({5, cols}).repeat({0, 1}).shape() == Shape{0, cols});
  // padding an empty dim gives the pad value everywhere
  Tensor padded = Tensor::ones({0, cols}).pad({{1, 2}, {0, 0}}, 7.0);
  CHECK(padded.shape() == Shape{3, cols});
  CHECK(padded.to_vector<float>() == filled(3 * cols, 7.f));
  Tensor inner = Tensor::ones({2, 0}).pad({{0, 0}, {cols, 1}});
  CHECK(inner.to_vector<float>() == filled(2 * (cols + 1), 0.f));
}

TEST_CASE("zero-size: a reduction of nothing is its identity, as in PyTorch") {
  Tensor e = Tensor::ones({0, cols});
  CHECK(e.sum(0).to_vector<float>() == filled(cols, 0.f));
  CHECK(e.sum().item<float>() == 0.f);
  CHECK(e.prod(0).to_vector<float>() == filled(cols, 1.f));
  CHECK(ints(Tensor::ones({0, cols}, dtypes::int32).sum(0)) == std::vector<int64_t>(cols, 0));
  CHECK(Tensor::ones({0, cols}, dtypes::bool_).any(0).to_vector<bool>() == std::vector<bool>(cols, false));
  CHECK(Tensor::ones({0, cols}, dtypes::bool_).all(0).to_vector<bool>() == std::vector<bool>(cols, true));
  for (float m : e.mean(0).to_vector<float>()) CHECK(std::isnan(m));  // 0 / 0
  CHECK(e.logsumexp(0).to_vector<float>() == filled(cols, -std::numeric_limits<float>::infinity()));
  // the reduced dims are not empty: the result is empty
  CHECK(e.sum(1).shape() == Shape{0});
  CHECK(e.max(1).shape() == Shape{0});
  CHECK(e.max(1).to_vector<float>().empty());
  CHECK(e.softmax(-1).shape() == Shape{0, cols});
  CHECK(e.softmax(0).contiguous().shape() == Shape{0, cols});
  CHECK(e.cumsum(0).contiguous().shape() == Shape{0, cols});
  CHECK(Tensor::ones({cols, 0}).cumsum(1).contiguous().shape() == Shape{cols, 0});
  // kept dims of 0 with an empty reduction: still empty
  CHECK(Tensor::ones({0, 0}).sum(1).shape() == Shape{0});
  // max and min have no identity: an error naming the op and the shape
  CHECK_THROWS_WITH_AS(e.max(0), doctest::Contains("cannot reduce dim 0 of size 0 in shape (0, 40)"), ShapeError);
  CHECK_THROWS_AS(e.max(), ShapeError);
  CHECK_THROWS_AS(e.min(0), ShapeError);
  CHECK_THROWS_AS(e.argmax(0), ShapeError);
  CHECK_THROWS_AS(e.argmin(), ShapeError);
}

TEST_CASE("zero-size: matmul with a zero dimension, cat with an empty part, stack, split") {
  // an empty inner dim: every output is a sum of nothing
  Tensor a = Tensor::ones({3, 0}), b = Tensor::ones({0, cols});
  CHECK(a.matmul(b).to_vector<float>() == filled(3 * cols, 0.f));
  CHECK(Tensor::ones({0, 5}).matmul(Tensor::ones({5, cols})).shape() == Shape{0, cols});
  CHECK(Tensor::ones({4, 5}).matmul(Tensor::ones({5, 0})).shape() == Shape{4, 0});
  CHECK(Tensor::ones({2, 3, 0}).matmul(Tensor::ones({2, 0, cols})).to_vector<float>() == filled(2 * 3 * cols, 0.f));
  Tensor x = Tensor::arange(3 * cols).reshape({3, cols}).cast(dtypes::float32);
  Tensor joined = Tensor::cat({Tensor::zeros({0, cols}), x, Tensor::zeros({0, cols})}, 0);
  CHECK(joined.to_vector<float>() == x.to_vector<float>());
  CHECK(Tensor::cat({x, Tensor::zeros({3, 0})}, 1).to_vector<float>() == x.to_vector<float>());
  CHECK(Tensor::stack({Tensor::zeros({0, cols}), Tensor::ones({0, cols})}, 0).shape() == Shape{2, 0, cols});
  std::vector<Tensor> parts = x.split(std::vector<int64_t>{0, 3, 0}, 0);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].shape() == Shape{0, cols});
  CHECK(parts[0].to_vector<float>().empty());
  CHECK(parts[1].to_vector<float>() == x.to_vector<float>());
  CHECK(Tensor::einsum("ij,jk->ik", {a, b}).to_vector<float>() == filled(3 * cols, 0.f));
}

TEST_CASE("zero-size: indexing and writes into nothing") {
  Tensor x = Tensor::arange(4 * cols).reshape({4, cols}).cast(dtypes::float32);
  CHECK(x[{Slice(2, 2)}].shape() == Shape{0, cols});
  CHECK(x[{Slice(2, 2)}].to_vector<float>().empty());
  CHECK(x[{Slice(), Slice(3, 3)}].contiguous().shape() == Shape{4, 0});
  Tensor no_rows = Tensor::from_vector(std::vector<int32_t>{}, {0});
  CHECK(x[{no_rows}].shape() == Shape{0, cols});
  CHECK(x[{no_rows}].to_vector<float>().empty());
  CHECK(x.gather(0, Tensor::zeros({0, cols}, dtypes::int32)).shape() == Shape{0, cols});
  CHECK(no_rows.one_hot(cols).shape() == Shape{0, cols});
  // writing an empty slice changes nothing
  const std::vector<float> before = x.to_vector<float>();
  x[{Slice(1, 1)}] = Tensor::ones({0, cols});
  CHECK(x.to_vector<float>() == before);
  Tensor e = Tensor::zeros({0, cols}).contiguous().realize();
  e.assign(Tensor::ones({0, cols}) * 3);
  CHECK(e.realize().to_vector<float>().empty());
  CHECK_THROWS_AS(e.item<float>(), Error);
}

TEST_CASE("zero-size: gradients through empty tensors") {
  Tensor w = Tensor::arange(cols).cast(dtypes::float32).contiguous().realize();
  Tensor x = Tensor::ones({0, cols});
  Tensor loss = (x * w).sum() + (w * 0.5).sum();
  std::vector<Tensor> g = loss.gradient({w});
  CHECK(g[0].to_vector<float>() == filled(cols, 0.5f));
  // the gradient of an empty input is empty
  Tensor xe = Tensor::ones({0, cols}).contiguous().realize();
  std::vector<Tensor> gx = ((xe * w).relu().sum() * 2).gradient({xe});
  CHECK(gx[0].shape() == Shape{0, cols});
  CHECK(gx[0].to_vector<float>().empty());
  // an empty matmul's weight gradient is zero
  Tensor m = Tensor::ones({0, 5}), lin = Tensor::ones({5, cols}).contiguous().realize();
  CHECK(m.matmul(lin).sum().gradient({lin})[0].to_vector<float>() == filled(5 * cols, 0.f));
}

TEST_CASE("zero-size: layers and nn functions on an empty batch") {
  Tensor imgs = Tensor::ones({0, 3, 8, 8});
  Tensor w = Tensor::ones({cols, 3, 3, 3});
  CHECK(imgs.conv2d(w).shape() == Shape{0, cols, 6, 6});
  CHECK(imgs.conv2d(w).to_vector<float>().empty());
  CHECK(imgs.max_pool2d().shape() == Shape{0, 3, 4, 4});
  CHECK(Tensor::ones({0, cols}).layernorm().shape() == Shape{0, cols});
  CHECK(Tensor::ones({0, cols}).linear(Tensor::ones({cols, 7}), Tensor::ones({7})).to_vector<float>().empty());
  // an empty batch's loss is the mean of nothing: NaN, as PyTorch's
  CHECK(std::isnan(Tensor::ones({0, 4}).sparse_categorical_crossentropy(Tensor::zeros({0}, dtypes::int32)).item<float>()));
}

TEST_CASE("zero-size: TinyJit captures and replays a step over an empty batch") {
  Tensor w = Tensor::arange(cols).cast(dtypes::float32).contiguous().realize();
  TinyJit step([&](const Tensor& x) { return ((x * w).sum(0) + w).realize(); });
  for (int i = 0; i < 4; ++i) {
    Tensor out = step(Tensor::ones({0, cols}).contiguous().realize());
    std::vector<float> want(cols);
    for (int64_t j = 0; j < cols; ++j) want[static_cast<size_t>(j)] = static_cast<float>(j);
    CHECK(out.to_vector<float>() == want);
  }
}

TEST_CASE("zero-size: sharded tensors with empty parts") {
  const std::vector<std::string> two = devices(2);
  // 1 row over 2 devices: the second part is empty
  Tensor x = Tensor::arange(cols).reshape({1, cols}).cast(dtypes::float32).shard(two, 0);
  CHECK(((x + 1) * 2).sum(0).to_vector<float>()[3] == 8.f);
  Tensor e = Tensor::ones({0, cols}).shard(two, 0);
  CHECK(e.sum(0).to_vector<float>() == filled(cols, 0.f));
  CHECK((e * 3).to(two[0]).shape() == Shape{0, cols});
}

TEST_CASE("zero-size: reading and loading empty tensors") {
  CHECK(Tensor::from_vector(std::vector<float>{}).shape() == Shape{0});
  CHECK(Tensor::from_blob(nullptr, {0, cols}, dtypes::float32).to_vector<float>().empty());
  CHECK(Tensor::empty({0, cols}).to_vector<float>().empty());
  CHECK(Tensor::arange(0).to_vector<int32_t>().empty());
  CHECK(Tensor::linspace(0, 1, 0).to_vector<float>().empty());
  CHECK(Tensor::randn({0, cols}).to_vector<float>().empty());
  CHECK(Tensor::eye(0).shape() == Shape{0, 0});
  TempDir dir;
  const std::string path = (dir.path / "empty.safetensors").string();
  nn::state::safe_save({{"e", Tensor::ones({0, cols})}, {"x", Tensor::ones({2})}}, path);
  auto loaded = nn::state::safe_load(path);
  CHECK(loaded.at("e").shape() == Shape{0, cols});
  CHECK((loaded.at("e") + 1).to_vector<float>().empty());
  CHECK(loaded.at("x").to_vector<float>() == filled(2, 1.f));
}
