// Indexing: t[{...}] (basic and advanced), assignment through it, gather and one_hot, checked
// against loops written here and slices computed by Python's own list slicing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <functional>
#include <limits>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;
using namespace tinyt_test;

namespace {
using Idx = std::vector<int64_t>;

// v(i, j, k) = 100 i + 10 j + k: every element says where it came from
float v3(int64_t i, int64_t j, int64_t k) { return static_cast<float>(100 * i + 10 * j + k); }
Tensor base3(int64_t a, int64_t b, int64_t c) {
  std::vector<float> data;
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t k = 0; k < c; ++k) data.push_back(v3(i, j, k));
  return Tensor::from_vector(data, {a, b, c});
}
// f over the Cartesian product of the index lists, row-major
std::vector<float> product(const std::vector<Idx>& axes,
                           const std::function<float(const Idx&)>& f) {
  std::vector<float> out;
  Idx at(axes.size());
  std::function<void(size_t)> rec = [&](size_t d) {
    if (d == axes.size()) return out.push_back(f(at));
    for (int64_t i : axes[d]) at[d] = i, rec(d + 1);
  };
  rec(0);
  return out;
}
Idx range(int64_t start, int64_t stop, int64_t step = 1) {
  Idx r;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) r.push_back(i);
  return r;
}
Tensor i32(std::vector<int32_t> v) { return Tensor::from_vector(v); }
Tensor i32(std::vector<int32_t> v, Shape s) { return Tensor::from_vector(v, s); }
bool only_movement(const Tensor& t) {
  for (const UOp& u : toposort(t.uop()))
    if (!(u.op() == Ops::BUFFER || u.op() == Ops::UNIQUE || u.op() == Ops::DEVICE ||
          u.op() == Ops::RESHAPE || u.op() == Ops::SHRINK || u.op() == Ops::FLIP ||
          u.op() == Ops::PAD || u.op() == Ops::PERMUTE || u.op() == Ops::EXPAND))
      return false;
  return true;
}
}  // namespace

TEST_CASE("indexing: integers, negative integers and fewer indices than dims") {
  Tensor a = base3(2, 3, 4);
  Tensor r = a[{1}];
  CHECK(r.shape() == Shape{3, 4});
  CHECK(r.to_vector<float>() == product({{1}, range(0, 3), range(0, 4)},
                                        [](const Idx& x) { return v3(x[0], x[1], x[2]); }));
  CHECK(a[{-1, 2}].to_vector<float>() ==
        product({range(0, 4)}, [](const Idx& x) { return v3(1, 2, x[0]); }));
  Tensor e = a[{0, -3, -4}];
  CHECK(e.ndim() == 0);
  CHECK(e.item<float>() == v3(0, 0, 0));
  CHECK(a[{-2, -1, 3}].item<float>() == v3(0, 2, 3));
  CHECK(a[{}].shape() == Shape{2, 3, 4});
  CHECK(a[{}].to_vector<float>() == a.to_vector<float>());
  // the std::vector overload
  CHECK(a[std::vector<Index>{1, 0}].to_vector<float>() ==
        product({range(0, 4)}, [](const Idx& x) { return v3(1, 0, x[0]); }));
  // an int index on a 0-d tensor is too many
  CHECK_THROWS_AS(Tensor(3.0f)[{0}], IndexError);
}

TEST_CASE("indexing: slices follow Python's rules") {
  struct Case {
    int64_t size;
    Slice s;
    std::vector<int32_t> want;
  };
  const std::vector<Case> cases{
      {0, Slice(1, 3, 2), {}},
      {0, Slice(None, None, -1), {}},
      {0, Slice(None, None, None), {}},
      {1, Slice(-5, 5, 3), {0}},
      {1, Slice(None, None, -5), {0}},
      {7, Slice(-1, -1, -2), {}},
      {7, Slice(-1, -10, -1), {6, 5, 4, 3, 2, 1, 0}},
      {7, Slice(-1, 10, 100), {6}},
      {7, Slice(-1, None, 3), {6}},
      {7, Slice(-10, -1, None), {0, 1, 2, 3, 4, 5}},
      {7, Slice(-10, -7, 6), {}},
      {7, Slice(-10, 0, 1), {}},
      {7, Slice(-10, 3, -3), {}},
      {7, Slice(-10, 3, None), {0, 1, 2}},
      {7, Slice(-3, -10, None), {}},
      {7, Slice(-3, 0, 3), {}},
      {7, Slice(-3, 1, -100), {4}},
      {7, Slice(-3, 1, 2), {}},
      {7, Slice(-3, 10, 3), {4}},
      {7, Slice(-3, 3, 3), {}},
      {7, Slice(-3, 6, -7), {}},
      {7, Slice(-3, 7, 1), {4, 5, 6}},
      {7, Slice(-3, None, -7), {4}},
      {7, Slice(-7, 10, -1), {}},
      {7, Slice(-7, 6, -7), {}},
      {7, Slice(-7, 7, None), {0, 1, 2, 3, 4, 5, 6}},
      {7, Slice(0, 3, 100), {0}},
      {7, Slice(0, 3, 6), {0}},
      {7, Slice(0, 6, -1), {}},
      {7, Slice(0, 6, -3), {}},
      {7, Slice(0, 7, -100), {}},
      {7, Slice(0, 7, 100), {0}},
      {7, Slice(0, 7, 3), {0, 3, 6}},
      {7, Slice(1, 1, -3), {}},
      {7, Slice(1, 1, 1), {}},
      {7, Slice(1, 10, 2), {1, 3, 5}},
      {7, Slice(1, 6, -1), {}},
      {7, Slice(1, 6, 100), {1}},
      {7, Slice(10, -10, -1), {6, 5, 4, 3, 2, 1, 0}},
      {7, Slice(10, -3, -2), {6}},
      {7, Slice(10, -7, -3), {6, 3}},
      {7, Slice(10, -7, -7), {6}},
      {7, Slice(10, 0, -3), {6, 3}},
      {7, Slice(10, 1, None), {}},
      {7, Slice(10, 6, -3), {}},
      {7, Slice(3, -1, 1), {3, 4, 5}},
      {7, Slice(3, -3, -2), {}},
      {7, Slice(3, 3, None), {}},
      {7, Slice(3, 6, 3), {3}},
      {7, Slice(3, None, 1), {3, 4, 5, 6}},
      {7, Slice(6, -3, -100), {6}},
      {7, Slice(6, -3, -7), {6}},
      {7, Slice(6, -7, -100), {6}},
      {7, Slice(6, 0, -2), {6, 4, 2}},
      {7, Slice(6, 1, -2), {6, 4, 2}},
      {7, Slice(6, 1, 6), {}},
      {7, Slice(6, 6, -100), {}},
      {7, Slice(6, 7, 100), {6}},
      {7, Slice(6, None, 2), {6}},
      {7, Slice(7, 1, -7), {6}},
      {7, Slice(7, 3, -2), {6, 4}},
      {7, Slice(7, 7, 6), {}},
      {7, Slice(7, None, -2), {6, 4, 2, 0}},
      {7, Slice(7, None, 1), {}},
      {7, Slice(None, -1, 6), {0}},
      {7, Slice(None, 1, 100), {0}},
      {7, Slice(None, 10, 2), {0, 2, 4, 6}},
      {7, Slice(None, 3, -100), {6}},
      {7, Slice(None, 3, 6), {0}},
      {7, Slice(None, 6, 2), {0, 2, 4}},
      {7, Slice(None, None, 2), {0, 2, 4, 6}},
      {7, Slice(None, None, None), {0, 1, 2, 3, 4, 5, 6}},
  };
  for (const Case& c : cases) {
    INFO("size ", c.size, " slice (", c.s.start.value_or(-999), ", ", c.s.stop.value_or(-999), ", ",
         c.s.step.value_or(-999), ")");
    Tensor t = Tensor::arange(c.size);
    Tensor r = t[{c.s}];
    CHECK(r.shape() == Shape{static_cast<int64_t>(c.want.size())});
    CHECK(r.to_vector<int32_t>() == c.want);
  }
  // two dims with steps at once (the strided views of both dims are built together)
  Tensor a = base3(1, 7, 5).reshape({7, 5});
  auto f = [](const Idx& x) { return v3(0, x[0], x[1]); };
  CHECK(a[{Slice(None, None, 3), Slice(4, None, -2)}].to_vector<float>() ==
        product({{0, 3, 6}, {4, 2, 0}}, f));
  CHECK(a[{Slice(-2, 0, -4), Slice(1, 5, 3)}].to_vector<float>() == product({{5, 1}, {1, 4}}, f));
  CHECK(a[{Slice(1, None, 2), Slice(None, None, -1)}].to_vector<float>() ==
        product({{1, 3, 5}, {4, 3, 2, 1, 0}}, f));
  CHECK(a[{Slice(6, 7, 5), Slice(0, 5, 2)}].to_vector<float>() == product({{6}, {0, 2, 4}}, f));
  CHECK(a[{Slice(3, 3), Slice(None, None, 2)}].shape() == Shape{0, 3});
  // huge steps and bounds clamp without overflow
  const int64_t big = std::numeric_limits<int64_t>::max(),
                small = std::numeric_limits<int64_t>::min();
  CHECK(a[{Slice(small, big, big), 0}].to_vector<float>() == std::vector<float>{v3(0, 0, 0)});
  CHECK(a[{Slice(big, small, small), 0}].to_vector<float>() == std::vector<float>{v3(0, 6, 0)});
  CHECK(a[{Slice(None, None, small), 1}].to_vector<float>() == std::vector<float>{v3(0, 6, 1)});
}

TEST_CASE("indexing: NewAxis and Ellipsis") {
  Tensor a = base3(2, 3, 4);
  auto f = [](const Idx& x) { return v3(x[0], x[1], x[2]); };
  Tensor r = a[{Ellipsis, 1}];
  CHECK(r.shape() == Shape{2, 3});
  CHECK(r.to_vector<float>() == product({range(0, 2), range(0, 3), {1}}, f));
  CHECK(a[{1, Ellipsis}].shape() == Shape{3, 4});
  CHECK(a[{0, Ellipsis, 2}].to_vector<float>() == product({{0}, range(0, 3), {2}}, f));
  CHECK(a[{0, 1, 2, Ellipsis}].item<float>() == v3(0, 1, 2));  // an Ellipsis that covers no dim
  CHECK(a[{Ellipsis}].shape() == Shape{2, 3, 4});
  CHECK(a[{NewAxis}].shape() == Shape{1, 2, 3, 4});
  CHECK(a[{Slice(), NewAxis, Slice(None, None, -1), NewAxis}].shape() == Shape{2, 1, 3, 1, 4});
  CHECK(a[{Slice(), NewAxis, Slice(None, None, -1), NewAxis}].to_vector<float>() ==
        product({range(0, 2), {2, 1, 0}, range(0, 4)}, f));
  CHECK(a[{Ellipsis, NewAxis}].shape() == Shape{2, 3, 4, 1});
  CHECK(a[{NewAxis, Ellipsis, NewAxis, -1}].shape() == Shape{1, 2, 3, 1});
  CHECK(a[{NewAxis, Ellipsis, NewAxis, -1}].to_vector<float>() ==
        product({range(0, 2), range(0, 3), {3}}, f));
  // 0-d tensors
  Tensor s(5.0f);
  CHECK(s[{}].item<float>() == 5.f);
  CHECK(s[{Ellipsis}].ndim() == 0);
  CHECK(s[{NewAxis}].shape() == Shape{1});
  CHECK(s[{NewAxis, Ellipsis, NewAxis}].to_vector<float>() == std::vector<float>{5.f});
}

TEST_CASE("indexing: basic indexing is a view that fuses") {
  Tensor a = base3(3, 4, 5);
  Tensor r = a[{Slice(None, None, -2), 1, Slice(1, None, 3), NewAxis}];
  CHECK(only_movement(r));
  CHECK(r.shape() == Shape{2, 2, 1});
  CHECK(r.to_vector<float>() ==
        product({{2, 0}, {1}, {1, 4}}, [](const Idx& x) { return v3(x[0], x[1], x[2]); }));
  Tensor twice = a[{Slice(1, None), Slice(None, None, 2), -1}] * 2;
  GlobalCounters::reset();
  twice.realize();
  CHECK(GlobalCounters::kernel_count == 1);
  CHECK(twice.to_vector<float>() ==
        product({{1, 2}, {0, 2}}, [](const Idx& x) { return 2 * v3(x[0], x[1], 4); }));
  // a view keeps the values it was built from
  Tensor w = Tensor::from_vector(std::vector<float>{1, 2, 3, 4});
  Tensor part = w[{Slice(1, 3)}];
  w.assign(w * 10);
  CHECK(part.to_vector<float>() == std::vector<float>{2, 3});
  CHECK(w[{Slice(1, 3)}].to_vector<float>() == std::vector<float>{20, 30});
}

TEST_CASE("indexing: non-contiguous tensors") {
  // each base is a 3x4 view whose elements are ref(i, j)
  std::vector<float> m(12);
  for (int i = 0; i < 12; ++i) m[static_cast<size_t>(i)] = static_cast<float>(i * i % 17) - 5;
  Tensor flat = Tensor::from_vector(m);
  struct Base {
    const char* name;
    Tensor t;
    std::function<float(int64_t, int64_t)> ref;
  };
  const std::vector<Base> bases{
      {"permuted", flat.reshape({4, 3}).T(),
       [&](int64_t i, int64_t j) { return m[static_cast<size_t>(j * 3 + i)]; }},
      {"flipped", flat.reshape({3, 4}).flip(1),
       [&](int64_t i, int64_t j) { return m[static_cast<size_t>(i * 4 + 3 - j)]; }},
      {"expanded", flat.shrink({{0, 3}}).reshape({3, 1}).expand({3, 4}),
       [&](int64_t i, int64_t) { return m[static_cast<size_t>(i)]; }},
      {"padded", flat.shrink({{0, 4}}).reshape({2, 2}).pad({{1, 0}, {0, 2}}),
       [&](int64_t i, int64_t j) {
         return i >= 1 && j < 2 ? m[static_cast<size_t>((i - 1) * 2 + j)] : 0.f;
       }},
      {"sliced",
       flat.reshape({2, 6})[{Slice(None, None, -1), Slice(1, None, 2)}].pad({{0, 1}, {0, 1}}),
       [&](int64_t i, int64_t j) {
         return i < 2 && j < 3 ? m[static_cast<size_t>((1 - i) * 6 + 1 + 2 * j)] : 0.f;
       }},
  };
  for (const Base& b : bases) {
    INFO(b.name);
    REQUIRE(b.t.shape() == Shape{3, 4});
    auto f = [&](const Idx& x) { return b.ref(x[0], x[1]); };
    CHECK(b.t[{Slice(None, None, -2), Slice(1, None, 2)}].to_vector<float>() ==
          product({{2, 0}, {1, 3}}, f));
    CHECK(b.t[{-1}].to_vector<float>() == product({{2}, range(0, 4)}, f));
    CHECK(b.t[{i32({2, 0, -3, 1})}].to_vector<float>() == product({{2, 0, 0, 1}, range(0, 4)}, f));
    CHECK(b.t[{Slice(1, None), i32({3, -1, 0})}].to_vector<float>() ==
          product({{1, 2}, {3, 3, 0}}, f));
    CHECK(b.t.gather(1, i32({3, 0, 1, 1, 2, 2}, {3, 2})).to_vector<float>() ==
          std::vector<float>{b.ref(0, 3), b.ref(0, 0), b.ref(1, 1), b.ref(1, 1), b.ref(2, 2),
                             b.ref(2, 2)});
  }
  // a non-contiguous index tensor
  Tensor a = base3(1, 3, 4).reshape({3, 4});
  Tensor idx = i32({0, 1, 2, 3, 0, 1}, {2, 3}).T();  // [[0, 3], [1, 0], [2, 1]]
  CHECK(a[{Slice(), idx}].shape() == Shape{3, 3, 2});
  CHECK(a[{1, idx}].to_vector<float>() == std::vector<float>{v3(0, 1, 0), v3(0, 1, 3), v3(0, 1, 1),
                                                             v3(0, 1, 0), v3(0, 1, 2),
                                                             v3(0, 1, 1)});
}

TEST_CASE("indexing: tensor indices") {
  Tensor a = base3(2, 3, 4);
  auto f = [](const Idx& x) { return v3(x[0], x[1], x[2]); };
  // one index tensor: its shape replaces the dim, negative values count from the end
  Tensor r = a[{Slice(), i32({2, -1, 0, -3})}];
  CHECK(r.shape() == Shape{2, 4, 4});
  CHECK(r.to_vector<float>() == product({range(0, 2), {2, 2, 0, 0}, range(0, 4)}, f));
  Tensor two_d = a[{i32({1, 0, 0, 1, 1, 1}, {2, 3})}];
  CHECK(two_d.shape() == Shape{2, 3, 3, 4});
  CHECK(two_d.to_vector<float>() == product({{1, 0, 0, 1, 1, 1}, range(0, 3), range(0, 4)}, f));
  // several index tensors broadcast together; adjacent ones stay in place
  Tensor rows = i32({0, 2}, {2, 1}), cols = i32({1, 3, 0});
  Tensor pair = a[{Slice(), rows, cols}];
  CHECK(pair.shape() == Shape{2, 2, 3});
  std::vector<float> want;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t p : {0, 2})
      for (int64_t q : {1, 3, 0}) want.push_back(v3(i, p, q));
  CHECK(pair.to_vector<float>() == want);
  // separated by a slice: the broadcast dims come first (PyTorch)
  Tensor apart = a[{i32({1, 0}), Slice(), i32({3, 2})}];
  CHECK(apart.shape() == Shape{2, 3});
  CHECK(apart.to_vector<float>() == std::vector<float>{v3(1, 0, 3), v3(1, 1, 3), v3(1, 2, 3),
                                                       v3(0, 0, 2), v3(0, 1, 2), v3(0, 2, 2)});
  Tensor b4 = base3(2, 3, 4).reshape({2, 3, 4, 1}).expand({2, 3, 4, 2});
  Tensor apart2 = b4[{Slice(), i32({2, 0}), Slice(None, None, 2), i32({1, 0})}];
  CHECK(apart2.shape() == Shape{2, 2, 2});
  want.clear();
  for (int64_t bi : {0, 1})
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t k : {0, 2}) want.push_back(v3(i, bi == 0 ? 2 : 0, k));
  CHECK(apart2.to_vector<float>() == want);
  // an int between index tensors selects first (as PyTorch): the tensor dims become adjacent
  Tensor b4i = base3(2, 3, 4).reshape({2, 3, 4, 1});
  Tensor mixed = b4i[{Slice(), i32({2, 1}), 1, i32({0, 0})}];
  CHECK(mixed.shape() == Shape{2, 2});
  CHECK(mixed.to_vector<float>() ==
        std::vector<float>{v3(0, 2, 1), v3(0, 1, 1), v3(1, 2, 1), v3(1, 1, 1)});
  // with NewAxis between them they are not adjacent
  CHECK(a[{i32({1}), NewAxis, i32({2})}].shape() == Shape{1, 1, 4});
  // a 0-d index tensor removes its dim
  Tensor zero_d = a[{Slice(), index_tensor({2}, {1}).reshape({})}];
  CHECK(zero_d.shape() == Shape{2, 4});
  CHECK(zero_d.to_vector<float>() == product({range(0, 2), {2}, range(0, 4)}, f));
  // index dtypes: int64, int16, uint8, and an int8 -1 that wraps on a dim longer than int8
  CHECK(a[{index_tensor({1, -2}, {2}), 0, 0}].to_vector<float>() ==
        std::vector<float>{v3(1, 0, 0), v3(0, 0, 0)});
  CHECK(a[{0, Tensor::from_vector(std::vector<int16_t>{-1}), 1}].to_vector<float>() ==
        std::vector<float>{v3(0, 2, 1)});
  CHECK(a[{0, 0, Tensor::from_vector(std::vector<uint8_t>{3, 1})}].to_vector<float>() ==
        std::vector<float>{v3(0, 0, 3), v3(0, 0, 1)});
  Tensor long_dim = Tensor::arange(300);
  CHECK(long_dim[{Tensor::from_vector(std::vector<int8_t>{-1, -128, 127})}].to_vector<int32_t>() ==
        std::vector<int32_t>{299, 172, 127});
  CHECK(long_dim[{Tensor::from_vector(std::vector<uint8_t>{255})}].to_vector<int32_t>() ==
        std::vector<int32_t>{255});
  // out-of-range values are masked: they read 0 (and never read outside the tensor)
  CHECK(a[{0, 0, i32({4, -5, 1, 1000})}].to_vector<float>() ==
        std::vector<float>{0, 0, v3(0, 0, 1), 0});
  // NaN and inf elsewhere do not leak into the selected values
  Tensor special = Tensor::from_vector(std::vector<float>{NAN, 1.5f, INFINITY, -0.0f});
  CHECK(special[{i32({1, 1})}].to_vector<float>() == std::vector<float>{1.5f, 1.5f});
  Tensor neg_inf = special[{i32({2, 0})}];
  CHECK(std::isinf(neg_inf.to_vector<float>()[0]));
  CHECK(std::isnan(neg_inf.to_vector<float>()[1]));
  // other dtypes keep theirs
  Tensor ints = Tensor::arange(5).cast(dtypes::int8);
  CHECK(ints[{i32({4, 0})}].dtype() == dtypes::int8);
  CHECK(ints[{i32({4, 0})}].to_vector<int8_t>() == std::vector<int8_t>{4, 0});
  Tensor flags = Tensor::from_vector(std::vector<bool>{true, false, true});
  CHECK(flags[{i32({1, 2, 0})}].to_vector<bool>() == std::vector<bool>{false, true, true});
  if (!lacks(dtypes::int64)) {
    Tensor wide = Tensor::from_vector(std::vector<int64_t>{int64_t{1} << 40, -3});
    CHECK(wide[{i32({0, 1, 0})}].to_vector<int64_t>() == std::vector<int64_t>{int64_t{1} << 40, -3, int64_t{1} << 40});
  }
  // computed index tensors (lazy) work, and the selection is one kernel besides the arange
  Tensor lazy_idx = Tensor::arange(3).flip(0) - 1;  // [1, 0, -1]
  CHECK(a[{1, lazy_idx}].to_vector<float>() == product({{1}, {1, 0, 2}, range(0, 4)}, f));
}

TEST_CASE("indexing: size-0 tensors and size-0 indices") {
  Tensor e = Tensor::from_vector(std::vector<float>{}, {0, 3});
  CHECK(e[{Slice(), 1}].shape() == Shape{0});
  CHECK(e[{Slice(None, None, 2)}].shape() == Shape{0, 3});
  CHECK(e[{Slice(None, None, -1), Slice(None, None, 2)}].shape() == Shape{0, 2});
  CHECK(e[{Slice(None, None, -1), Slice(None, None, 2)}].to_vector<float>().empty());
  CHECK_THROWS_AS(e[{0}], IndexError);
  CHECK(e[{Slice(), i32({2, 0})}].shape() == Shape{0, 2});
  CHECK(e[{Slice(), i32({2, 0})}].to_vector<float>().empty());
  Tensor a = base3(1, 3, 4).reshape({3, 4});
  Tensor none = a[{Tensor::from_vector(std::vector<int32_t>{})}];
  CHECK(none.shape() == Shape{0, 4});
  CHECK(none.to_vector<float>().empty());
  CHECK(a[{Slice(), Tensor::from_vector(std::vector<int32_t>{}, {2, 0})}].shape() ==
        Shape{3, 2, 0});
}

TEST_CASE("indexing: misuse") {
  Tensor a = base3(2, 3, 4);
  const std::string oob = message_of<IndexError>([&] { (void)a[{0, 3}]; });
  CHECK(oob.find("index 3") != std::string::npos);
  CHECK(oob.find("axis 1") != std::string::npos);
  CHECK(oob.find("size 3") != std::string::npos);
  CHECK_THROWS_AS(a[{-3}], IndexError);
  CHECK_THROWS_AS(a[{2}], IndexError);
  CHECK_THROWS_AS((a[{0, 0, 0, 0}]), IndexError);
  CHECK_THROWS_AS((a[{0, NewAxis, 0, 0, 0}]), IndexError);
  CHECK(message_of<IndexError>([&] {
          (void)a[{0, 0, 0, 0}];
        }).find("too many indices") != std::string::npos);
  CHECK_THROWS_AS((a[{Ellipsis, 0, Ellipsis}]), IndexError);
  CHECK(message_of<IndexError>([&] {
          (void)a[{Ellipsis, Ellipsis}];
        }).find("Ellipsis") != std::string::npos);
  CHECK_THROWS_AS((a[{Slice(None, None, 0)}]), Error);
  CHECK(message_of<Error>([&] { (void)a[{Slice(0, 2, 0)}]; }).find("step") != std::string::npos);
  CHECK_THROWS_AS((a[{Tensor::from_vector(std::vector<float>{0, 1})}]), DTypeError);
  CHECK_THROWS_AS((a[{Tensor::from_vector(std::vector<bool>{true, false})}]), DTypeError);
  CHECK_THROWS_AS(a[{Tensor()}], Error);
  const std::string bc = message_of<ShapeError>([&] { (void)a[{i32({0, 1}), i32({0, 1, 2})}]; });
  CHECK(bc.find("(2,)") != std::string::npos);
  CHECK(bc.find("(3,)") != std::string::npos);
}

TEST_CASE("indexing: gather") {
  Tensor a = base3(2, 3, 4);
  // out[i][j][k] = a[index[i][j][k]][j][k] along dim 0, and likewise for the other dims
  auto reference = [&](int dim, const std::vector<int64_t>& index, const Idx& shape) {
    std::vector<float> out;
    for (int64_t i = 0; i < shape[0]; ++i)
      for (int64_t j = 0; j < shape[1]; ++j)
        for (int64_t k = 0; k < shape[2]; ++k) {
          int64_t at[3] = {i, j, k};
          at[dim] = index[static_cast<size_t>((i * shape[1] + j) * shape[2] + k)];
          out.push_back(v3(at[0], at[1], at[2]));
        }
    return out;
  };
  std::vector<int64_t> i0{1, 0, 0, 1, 1, 1, 0, 0};  // (1, 2, 4) along dim 0
  CHECK(a.gather(0, index_tensor(i0, {1, 2, 4})).to_vector<float>() ==
        reference(0, i0, {1, 2, 4}));
  std::vector<int64_t> i1{2, 0, 1, 1, 0, 2, 2, 2,
                          0, 1, 2, 0, 1, 1, 0, 2};  // (2, 4, 2): dim 1 longer than a's
  CHECK(a.gather(1, index_tensor(i1, {2, 4, 2})).to_vector<float>() ==
        reference(1, i1, {2, 4, 2}));
  std::vector<int64_t> i2{3, 0, 3, 2, 1, 1};  // (2, 3, 1) along dim -1
  Tensor g = a.gather(-1, index_tensor(i2, {2, 3, 1}));
  CHECK(g.shape() == Shape{2, 3, 1});
  CHECK(g.to_vector<float>() == reference(2, i2, {2, 3, 1}));
  // int32 index; 2-D; values out of range (negative too) are masked to 0
  Tensor m = base3(1, 3, 4).reshape({3, 4});
  CHECK(m.gather(1, i32({0, 3, 4, -1, 1, 1}, {3, 2})).to_vector<float>() ==
        std::vector<float>{v3(0, 0, 0), v3(0, 0, 3), 0, 0, v3(0, 2, 1), v3(0, 2, 1)});
  CHECK(m.gather(0, i32({2, 1, 0, 0}, {1, 4})).to_vector<float>() ==
        std::vector<float>{v3(0, 2, 0), v3(0, 1, 1), v3(0, 0, 2), v3(0, 0, 3)});
  // 0-d, size 0, dtypes
  CHECK(Tensor(7.0f).gather(0, Tensor(0)).item<float>() == 7.f);
  CHECK(m.gather(1, Tensor::from_vector(std::vector<int32_t>{}, {3, 0})).shape() == Shape{3, 0});
  Tensor ints = Tensor::arange(6).reshape({2, 3});
  CHECK(ints.gather(1, i32({2, 2, 0, 1}, {2, 2})).to_vector<int32_t>() ==
        std::vector<int32_t>{2, 2, 3, 4});
  CHECK(ints.gather(1, i32({2, 2, 0, 1}, {2, 2})).dtype() == dtypes::int32);
  // misuse
  CHECK_THROWS_AS((m.gather(1, Tensor::from_vector(std::vector<float>{0, 1, 0}, {3, 1}))),
                  DTypeError);
  CHECK_THROWS_AS((m.gather(1, Tensor::from_vector(std::vector<bool>{true, false, true}, {3, 1}))),
                  DTypeError);
  CHECK_THROWS_AS((m.gather(1, i32({0, 1, 2}))), ShapeError);
  CHECK_THROWS_AS((m.gather(1, i32({0, 1, 2, 0, 1, 2, 0, 1}, {4, 2}))), ShapeError);
  CHECK(message_of<ShapeError>([&] {
          (void)m.gather(1, i32({0, 1, 2, 0, 1, 2, 0, 1}, {4, 2}));
        }).find("(4, 2)") != std::string::npos);
  CHECK_THROWS_AS((m.gather(2, i32({0, 1, 2}, {3, 1}))), IndexError);
  CHECK_THROWS_AS((m.gather(0, Tensor())), Error);
}

TEST_CASE("indexing: one_hot") {
  Tensor labels = i32({0, 2, 1, 3, 2, 0}, {2, 3});
  Tensor oh = labels.one_hot(4);
  CHECK(oh.shape() == Shape{2, 3, 4});
  CHECK(oh.dtype() == dtypes::int32);
  std::vector<int32_t> want;
  for (int32_t l : {0, 2, 1, 3, 2, 0})
    for (int32_t c = 0; c < 4; ++c) want.push_back(l == c);
  CHECK(oh.to_vector<int32_t>() == want);
  // -1 counts the classes from the data; out-of-range and negative values give zero rows
  CHECK(labels.one_hot(-1).shape() == Shape{2, 3, 4});
  CHECK(i32({1, 5, -1}).one_hot(3).to_vector<int32_t>() ==
        std::vector<int32_t>{0, 1, 0, 0, 0, 0, 0, 0, 0});
  CHECK(Tensor::from_vector(std::vector<uint8_t>{2, 0}).one_hot(3).to_vector<int32_t>() ==
        std::vector<int32_t>{0, 0, 1, 1, 0, 0});
  CHECK(Tensor(1).one_hot(2).to_vector<int32_t>() == std::vector<int32_t>{0, 1});
  CHECK(i32({0, 1}).flip(0).one_hot(2).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 1, 0});
  CHECK(i32({0, 1}).one_hot(0).shape() == Shape{2, 0});
  CHECK_THROWS_AS((Tensor::from_vector(std::vector<float>{0, 1}).one_hot(2)), DTypeError);
  CHECK_THROWS_AS((i32({0, 1}).one_hot(-2)), Error);
}

TEST_CASE("indexing: setitem with basic indices") {
  Tensor t = Tensor::zeros({3, 4});
  Tensor alias = t;
  Tensor row = t[{0}];     // a view of the old value
  Tensor doubled = t + 1;  // built from the old value
  t[{Slice(None, None, 2), Slice(1, None, 2)}] = 7;
  std::vector<float> want(12, 0.f);
  for (int i : {0, 2})
    for (int j : {1, 3}) want[static_cast<size_t>(i * 4 + j)] = 7;
  CHECK(t.to_vector<float>() == want);
  CHECK(alias.to_vector<float>() == want);
  CHECK(row.to_vector<float>() == std::vector<float>(4, 0.f));
  CHECK(doubled.to_vector<float>() == std::vector<float>(12, 1.f));
  // negative steps, ints, broadcast values, a value of another dtype
  t[{Slice(None, None, -2), -1}] = Tensor::from_vector(std::vector<int32_t>{5, 6});  // rows 2 and 0
  want[11] = 5, want[3] = 6;
  CHECK(t.to_vector<float>() == want);
  t[{1}] = Tensor::from_vector(std::vector<float>{1, 2, 3, 4});
  for (int j = 0; j < 4; ++j) want[static_cast<size_t>(4 + j)] = static_cast<float>(j + 1);
  CHECK(t.to_vector<float>() == want);
  t[{Slice(1, 3), Slice(2, 0, -1)}] =
      Tensor::from_vector(std::vector<float>{8, 9}, {2, 1});  // cols 2, 1
  want[6] = want[5] = 8, want[10] = want[9] = 9;
  CHECK(t.to_vector<float>() == want);
  // NewAxis, Ellipsis, and a value with extra leading 1s
  t[{Ellipsis, NewAxis, 0}] = Tensor::from_vector(std::vector<float>{-1, -2, -3}, {1, 3, 1});
  want[0] = -1, want[4] = -2, want[8] = -3;
  CHECK(t.to_vector<float>() == want);
  t[{2, 3}] = 42.5;
  want[11] = 42.5;
  CHECK(t.to_vector<float>() == want);
  // the reference itself reads the new value
  TensorRef r = t[{0, Slice(None, 2)}];
  r = Tensor::from_vector(std::vector<float>{10, 11});
  want[0] = 10, want[1] = 11;
  CHECK(r.to_vector<float>() == std::vector<float>{10, 11});
  CHECK(t.to_vector<float>() == want);
  // an empty region changes nothing
  t[{Slice(2, 2)}] = 100;
  CHECK(t.to_vector<float>() == want);
  // a value computed from the reference itself
  TensorRef last_row = t[{-1}];
  last_row = last_row * 10;
  for (int j = 8; j < 12; ++j) want[static_cast<size_t>(j)] *= 10;
  CHECK(t.to_vector<float>() == want);
  // the whole tensor through an Ellipsis, and a 0-d tensor
  t[{Ellipsis}] = Tensor::from_vector(std::vector<float>{1, 2, 3, 4});
  CHECK(t.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4});
  Tensor s = Tensor::full({}, 5.0f);
  s[{}] = 3;
  CHECK(s.item<float>() == 3.f);
}

TEST_CASE("indexing: setitem writes in place and handles overlap and lazy bases") {
  Tensor w = Tensor::from_vector(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
  w.realize();
  void* memory = graph::buffer_of(graph::base_buffer(w.uop()))->ptr();
  GlobalCounters::reset();
  w[{Slice(1, None, 3)}] = -1;
  w.realize();
  CHECK(GlobalCounters::kernel_count == 1);
  CHECK(graph::buffer_of(graph::base_buffer(w.uop()))->ptr() == memory);
  CHECK(w.to_vector<float>() == std::vector<float>{0, -1, 2, 3, -1, 5, 6, -1});
  // a value that reads the base elsewhere sees the old values
  Tensor s = Tensor::from_vector(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
  s[{Slice(1, None)}] = s[{Slice(None, -1)}];
  CHECK(s.to_vector<float>() == std::vector<float>{0, 0, 1, 2, 3, 4, 5, 6});
  s[{Slice(None, None, -1)}] = s;
  CHECK(s.to_vector<float>() == std::vector<float>{6, 5, 4, 3, 2, 1, 0, 0});
  // a lazy base is computed into memory of its own first
  Tensor lazy = Tensor::arange(6).reshape({2, 3}) * 2;
  lazy[{1, 1}] = 100;
  CHECK(lazy.to_vector<int32_t>() == std::vector<int32_t>{0, 2, 4, 6, 100, 10});
  Tensor flags = Tensor::zeros({4}, dtypes::bool_);
  flags[{Slice(None, None, 3)}] = true;
  CHECK(flags.to_vector<bool>() == std::vector<bool>{true, false, false, true});
  // misuse: a value that does not broadcast to the indexed shape
  Tensor t = Tensor::zeros({3, 4});
  CHECK_THROWS_AS(t[{0}] = Tensor::ones({5}), ShapeError);
  CHECK(message_of<ShapeError>([&] {
          t[{Slice(), 1}] = Tensor::ones({2});
        }).find("(3,)") != std::string::npos);
  CHECK_THROWS_AS((t[{0, 4}] = 1), IndexError);
  CHECK_THROWS_AS(t[{0}] = Tensor(), Error);
  CHECK(t.to_vector<float>() == std::vector<float>(12, 0.f));
}

TEST_CASE("indexing: setitem with tensor indices") {
  Tensor t = Tensor::zeros({5});
  t[{i32({0, 3, -1})}] = Tensor::from_vector(std::vector<float>{1, 2, 3});
  CHECK(t.to_vector<float>() == std::vector<float>{1, 0, 0, 2, 3});
  // repeated indices: the last one wins; out-of-range ones write nothing
  t[{i32({1, 1, 9, 1, -7})}] = Tensor::from_vector(std::vector<float>{4, 5, 6, 7, 8});
  CHECK(t.to_vector<float>() == std::vector<float>{1, 7, 0, 2, 3});
  // with slices, several tensors, broadcasting
  Tensor m = Tensor::zeros({3, 4});
  m[{Slice(), i32({0, 2})}] = 9;
  std::vector<float> want(12, 0.f);
  for (int i = 0; i < 3; ++i)
    want[static_cast<size_t>(i * 4)] = want[static_cast<size_t>(i * 4 + 2)] = 9;
  CHECK(m.to_vector<float>() == want);
  m[{i32({0, 2}), i32({1, 3})}] = Tensor::from_vector(std::vector<float>{5, 6});
  want[1] = 5, want[11] = 6;
  CHECK(m.to_vector<float>() == want);
  m[{i32({1}, {1, 1}), i32({0, 1, 3})}] = Tensor::from_vector(std::vector<float>{-1, -2, -3});
  want[4] = -1, want[5] = -2, want[7] = -3;
  CHECK(m.to_vector<float>() == want);
  m[{Slice(1, None, 1), i32({-4})}] = Tensor::from_vector(std::vector<float>{20, 21}, {2, 1});
  want[4] = 20, want[8] = 21;
  CHECK(m.to_vector<float>() == want);
  // separated index tensors: the value's first dims go with the index tensors
  Tensor c = base3(2, 3, 4);
  c[{i32({0, 1}), Slice(), i32({3, 0})}] =
      Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  std::vector<float> cw = base3(2, 3, 4).to_vector<float>();
  for (int j = 0; j < 3; ++j)
    cw[static_cast<size_t>(0 * 12 + j * 4 + 3)] = static_cast<float>(1 + j),
                                            cw[static_cast<size_t>(1 * 12 + j * 4 + 0)] =
                                                static_cast<float>(4 + j);
  CHECK(c.to_vector<float>() == cw);
  // an int between tensors, and an int base
  c[{i32({0, 1}), 1, i32({2, 3})}] = Tensor::from_vector(std::vector<float>{7, 8});
  cw[0 * 12 + 4 + 2] = 7, cw[1 * 12 + 4 + 3] = 8;
  CHECK(c.to_vector<float>() == cw);
  Tensor n = Tensor::arange(4);
  n[{i32({3, 0})}] = Tensor::from_vector(std::vector<int32_t>{-5, -6});
  CHECK(n.to_vector<int32_t>() == std::vector<int32_t>{-6, 1, 2, -5});
  Tensor flags = Tensor::zeros({4}, dtypes::bool_);
  flags[{i32({2, 1})}] = true;
  CHECK(flags.to_vector<bool>() == std::vector<bool>{false, true, true, false});
  Tensor h = Tensor::zeros({4}, dtypes::float16);
  h[{i32({1, 3})}] = 2.5;
  CHECK(h.cast(dtypes::float32).to_vector<float>() == std::vector<float>{0, 2.5f, 0, 2.5f});
  CHECK(h[{i32({3, 0})}].cast(dtypes::float32).to_vector<float>() == std::vector<float>{2.5f, 0});
  if (!lacks(dtypes::uint64)) {
    Tensor u = Tensor::from_vector(std::vector<uint64_t>{0, 1, 2, 3, 4});
    u[{Tensor::from_vector(std::vector<uint64_t>{4, 100})}] = 9;
    CHECK(u[{Tensor::from_vector(std::vector<uint64_t>{4, 1, 100})}].to_vector<uint64_t>() == std::vector<uint64_t>{9, 1, 0});
  }
  // no index positions: nothing changes; a value of the wrong shape is a ShapeError
  n[{Tensor::from_vector(std::vector<int32_t>{})}] = 1;
  CHECK(n.to_vector<int32_t>() == std::vector<int32_t>{-6, 1, 2, -5});
  CHECK_THROWS_AS((n[{i32({0, 1})}] = i32({1, 2, 3})), ShapeError);
}

TEST_CASE("indexing: setitem through chained indexing writes into the original tensor") {
  Tensor t = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  t[{0}][{1}] = 50.f;
  CHECK(t.to_vector<float>() == std::vector<float>{1, 50, 3, 4, 5, 6});
  t[{Slice(0, 2)}][{1}][{Slice(1, 3)}] = Tensor::from_vector(std::vector<float>{-1, -2});
  CHECK(t.to_vector<float>() == std::vector<float>{1, 50, 3, 4, -1, -2});
  // a reference kept in a variable writes through too
  auto row = t[{1}];
  row[{0}] = 9.f;
  CHECK(t.to_vector<float>() == std::vector<float>{1, 50, 3, 9, -1, -2});
}

TEST_CASE("indexing: a gather with an integer tensor reads the row directly, whatever the dtypes") {
  // rows of a uint8 table picked by int32 indices: the one-hot sum over the 3000 rows collapses
  // into one load per element (it was a 3000-long loop per element, then the int cast hid it)
  const int64_t rows = 3000;
  std::vector<uint8_t> table(static_cast<size_t>(rows * 4));
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<uint8_t>((i * 7 + 3) % 251);
  const Tensor t = Tensor::from_vector(table, {rows, 4});
  const std::vector<int32_t> pick{2999, 0, 1234, 7, 3000, -1, -3001};  // negative wraps, as in PyTorch
  const Tensor got = t[{Tensor::from_vector(pick)}];
  for (const auto& k : schedule::create_schedule({got.uop()}))
    for (const UOp& u : toposort(k.ast)) {
      CHECK(u.op() != Ops::REDUCE);
      // the table is read at the index's value: only where it is in range (a gated load)
      if (u.op() == Ops::LOAD && u.dtype() == dtypes::uint8) CHECK(u.src(0).src().size() == 3);
    }
  const auto v = got.to_vector<uint8_t>();
  for (size_t r = 0; r < pick.size(); ++r)
    for (size_t c = 0; c < 4; ++c) {
      INFO("row ", r, " col ", c);
      const int64_t row = pick[r] < 0 ? pick[r] + rows : pick[r];
      const bool inside = row >= 0 && row < rows;  // out of range reads 0 (masked)
      CHECK(int(v[r * 4 + c]) == (inside ? int(table[size_t(row) * 4 + c]) : 0));
    }
  // float rows, int64 indices: the same
  const Tensor f = Tensor::arange(rows * 2).cast(dtypes::float32).reshape({rows, 2});
  const Tensor g = f[{index_tensor({5, 2998}, {2})}];
  for (const auto& k : schedule::create_schedule({g.uop()}))
    for (const UOp& u : toposort(k.ast)) CHECK(u.op() != Ops::REDUCE);
  CHECK(g.to_vector<float>() == std::vector<float>{10, 11, 5996, 5997});
  // a table of 32768 rows or more: the one-hot sum is not split into two reductions first (then
  // only each part's sum collapsed and every part ran: SmolLM's embedding read all 49152 rows of
  // its table at every token)
  const int64_t long_rows = 49152;
  const Tensor big = Tensor::arange(long_rows * 2).cast(dtypes::float32).reshape({long_rows, 2});
  const Tensor picked = big[{index_tensor({49151, 3}, {2})}];
  const Tensor gathered = big.gather(0, index_tensor({40000, 1, 2, 49151}, {2, 2}));
  for (const Tensor* x : {&picked, &gathered}) {
    const auto kernels = schedule::create_schedule({x->uop()});
    CHECK(kernels.size() == 1);
    for (const auto& k : kernels)
      for (const UOp& u : toposort(k.ast)) CHECK(u.op() != Ops::REDUCE);
  }
  CHECK(picked.to_vector<float>() == std::vector<float>{98302, 98303, 6, 7});
  CHECK(gathered.to_vector<float>() == std::vector<float>{80000, 3, 4, 98303});
}

TEST_CASE("indexing: CHECK_OOB=1 makes an index value out of range an IndexError naming the op, axis and value") {
  Context check{{"CHECK_OOB", 1}};
  Tensor m = base3(1, 3, 4).reshape({3, 4});
  // gather: the first offending element (row-major) is named, with where it sits in the index
  CHECK(message_of<IndexError>([&] { (void)m.gather(1, i32({0, 3, 4, -1, 1, 1}, {3, 2})); }) ==
        "gather: index 4 is out of range for axis 1 with size 4 (element (1, 0) of the index tensor of shape (3, 2))");
  CHECK(message_of<IndexError>([&] { (void)m.gather(0, i32({2, 1, 0, -1}, {1, 4})); }) ==
        "gather: index -1 is out of range for axis 0 with size 3 (element (0, 3) of the index tensor of shape (1, 4))");
  CHECK(message_of<IndexError>([&] {
          (void)m.gather(1, Tensor::from_vector(std::vector<uint8_t>{1, 200, 3}, {3, 1}));
        }).find("gather: index 200 is out of range for axis 1 with size 4") == 0);
  if (!lacks(dtypes::int64))
    CHECK(message_of<IndexError>([&] {
            (void)m.gather(1, Tensor::from_vector(std::vector<int64_t>{1, 2, int64_t{1} << 40}, {3, 1}));
          }).find("gather: index 1099511627776 is out of range") == 0);
  // an index computed lazily is checked on its values, and in range it gives what it gives unchecked
  Tensor lazy = i32({4, 1, 3, 2, 2, 1}, {3, 2}) - 1;
  GlobalCounters::reset();
  CHECK(m.gather(1, lazy).to_vector<float>() ==
        std::vector<float>{v3(0, 0, 3), v3(0, 0, 0), v3(0, 1, 2), v3(0, 1, 1), v3(0, 2, 1), v3(0, 2, 0)});
  CHECK(GlobalCounters::kernel_count == 3);  // the index, the check (one number back), the gather
  // tensor indexing: negative values count from the end, so [-5, 5) is in range for size 5
  Tensor v = Tensor::from_vector(std::vector<float>{10, 11, 12, 13, 14});
  CHECK(v[{i32({-5, 4})}].to_vector<float>() == std::vector<float>{10, 14});
  CHECK(message_of<IndexError>([&] { (void)v[{i32({1, -6, 5})}]; }) ==
        "index: index -6 is out of range for axis 0 with size 5 (element (1,) of the index tensor of shape (3,))");
  // the axis is the tensor's, counted past the ints and slices before it
  Tensor t = Tensor::arange(15).reshape({3, 5});
  CHECK(message_of<IndexError>([&] { (void)t[{1, i32({0, 7}, {1, 2})}]; }).find("index 7 is out of range for axis 1 with size 5") !=
        std::string::npos);
  CHECK(message_of<IndexError>([&] { (void)t[{i32({3}), Slice()}]; }).find("index 3 is out of range for axis 0 with size 3") !=
        std::string::npos);
  // a write through an index out of range throws too, and writes nothing
  Tensor w = Tensor::from_vector(std::vector<float>{1, 2, 3}).realize();
  CHECK_THROWS_AS((w[{i32({0, 3})}] = Tensor(9.f)), IndexError);
  CHECK(w.to_vector<float>() == std::vector<float>{1, 2, 3});
}

TEST_CASE("indexing: without CHECK_OOB an index value out of range reads 0 and writes nothing") {
  Context unchecked{{"CHECK_OOB", 0}};
  Tensor v = Tensor::from_vector(std::vector<float>{10, 11, 12});
  CHECK(v[{i32({2, 3, -4})}].to_vector<float>() == std::vector<float>{12, 0, 0});
  Tensor w = Tensor::from_vector(std::vector<float>{1, 2, 3}).realize();
  w[{i32({1, 5})}] = Tensor(9.f);
  CHECK(w.to_vector<float>() == std::vector<float>{1, 9, 3});
}

TEST_CASE("indexing: scatter and scatter_reduce against loops") {
  // a (3, 4) tensor, updates (2, 3) written along dim 1 (out[i][index[i][j]] = src[i][j]) and dim 0
  const std::vector<float> base = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, src = {10, 20, 30, 40, 50, 60};
  const Tensor x = Tensor::from_vector(base, {3, 4}), updates = Tensor::from_vector(src, {2, 3});
  const std::vector<int64_t> idx1 = {3, 0, 2, 1, 1, 0};  // row 1 names column 1 twice
  const Tensor index1 = index_tensor(idx1, {2, 3});
  auto along1 = [&](const std::function<float(float, std::vector<float>)>& combine) {
    std::vector<float> out = base;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t col = 0; col < 4; ++col) {
        std::vector<float> landing;
        for (int64_t j = 0; i < 2 && j < 3; ++j)
          if (idx1[static_cast<size_t>(i * 3 + j)] == col) landing.push_back(src[static_cast<size_t>(i * 3 + j)]);
        if (!landing.empty()) out[static_cast<size_t>(i * 4 + col)] = combine(out[static_cast<size_t>(i * 4 + col)], landing);
      }
    return out;
  };
  auto total = [](std::vector<float> v) { return std::accumulate(v.begin(), v.end(), 0.0f); };
  // row 0 has distinct targets: plain scatter writes them (row 1's twice-named column sums)
  CHECK(x.scatter(1, index1, updates).to_vector<float>() == along1([&](float, std::vector<float> v) { return total(v); }));
  CHECK(x.scatter_reduce(1, index1, updates, "sum").to_vector<float>() == along1([&](float a, std::vector<float> v) { return a + total(v); }));
  CHECK(x.scatter_reduce(1, index1, updates, "prod").to_vector<float>() == along1([](float a, std::vector<float> v) {
    for (float f : v) a *= f;
    return a;
  }));
  CHECK(x.scatter_reduce(1, index1, updates, "amax", false).to_vector<float>() ==
        along1([](float, std::vector<float> v) { return *std::max_element(v.begin(), v.end()); }));
  CHECK(x.scatter_reduce(1, index1, updates, "amin").to_vector<float>() ==
        along1([](float a, std::vector<float> v) { return std::min(a, *std::min_element(v.begin(), v.end())); }));
  CHECK(x.scatter_reduce(1, index1, updates, "mean").to_vector<float>() ==
        along1([&](float a, std::vector<float> v) { return (a + total(v)) / static_cast<float>(v.size() + 1); }));
  // along dim 0, with an index narrower than the tensor in dim 1
  const Tensor index0 = index_tensor({2, 0, 1, 1}, {1, 4}).shrink({{0, 1}, {0, 2}});
  std::vector<float> want0 = base;
  want0[2 * 4 + 0] = 10, want0[0 * 4 + 1] = 20;
  CHECK(x.scatter(0, index0, updates).to_vector<float>() == want0);
  // the identities of amin and amax are exact in every integer type: int64's extremes, as values
  if (!lacks(dtypes::int64)) {
  const Tensor big = Tensor::from_vector(std::vector<int64_t>{int64_t{1} << 62, -(int64_t{1} << 62), 5});
  const Tensor at = Tensor::from_vector(std::vector<int64_t>{0, 1});
  const Tensor put = Tensor::from_vector(std::vector<int64_t>{INT64_MAX, INT64_MIN});
  CHECK(big.scatter_reduce(0, at, put, "amin").to_vector<int64_t>() == std::vector<int64_t>{int64_t{1} << 62, INT64_MIN, 5});
  CHECK(big.scatter_reduce(0, at, put, "amax").to_vector<int64_t>() == std::vector<int64_t>{INT64_MAX, -(int64_t{1} << 62), 5});
  CHECK(big.scatter_reduce(0, at, put, "amin", false).to_vector<int64_t>() == std::vector<int64_t>{INT64_MAX, INT64_MIN, 5});
  }
  // integers keep their type; misuse names the op
  const Tensor ints = Tensor::zeros({4}, dtypes::int32);
  CHECK(ints.scatter(0, Tensor::from_vector(std::vector<int32_t>{3, 1}), Tensor::from_vector(std::vector<int32_t>{7, 9})).to_vector<int32_t>() ==
        std::vector<int32_t>{0, 9, 0, 7});
  CHECK_THROWS_AS(x.scatter(1, index1.cast(dtypes::float32), updates), DTypeError);
  CHECK_THROWS_AS(x.scatter(1, index1.reshape({6}), updates), ShapeError);
  CHECK_THROWS_WITH_AS(x.scatter_reduce(1, index1, updates, "median"), doctest::Contains("median"), Error);
}

TEST_CASE("indexing: sort and topk against std::stable_sort") {
  const std::vector<float> v = {3, -1, 3, NAN, 0.5f, -1, 7, 2, 2, -4, 3, 1};
  const Tensor x = Tensor::from_vector(v, {2, 6});
  for (bool descending : {false, true}) {
    INFO("descending ", descending);
    std::vector<float> values;
    std::vector<int64_t> indices;
    for (int64_t r = 0; r < 2; ++r) {
      std::vector<int64_t> order = {0, 1, 2, 3, 4, 5};
      auto key = [&](int64_t i) { return v[static_cast<size_t>(r * 6 + i)]; };
      // NaN is the largest, as PyTorch
      auto less = [&](int64_t a, int64_t b) { return std::isnan(key(b)) ? !std::isnan(key(a)) : key(a) < key(b); };
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return descending ? less(b, a) : less(a, b); });
      for (int64_t i : order) values.push_back(key(i)), indices.push_back(i);
    }
    auto [sorted, from] = x.sort(1, descending);
    check_close(sorted.to_vector<float>(), std::vector<double>(values.begin(), values.end()), Tol::exact());
    CHECK(ints(from) == indices);  // (int64; int32 on a device without 64-bit types)
  }
  auto [top, at] = x.topk(2);
  CHECK(ints(at) == std::vector<int64_t>{3, 0, 0, 4});
  CHECK(top.shape() == Shape{2, 2});
  auto [low, low_at] = x.topk(1, 0, false);  // the smaller of each column (NaN the largest)
  CHECK(ints(low_at) == std::vector<int64_t>{0, 0, 1, 1, 0, 0});
  CHECK(low.shape() == Shape{1, 6});
  CHECK_THROWS_AS(x.topk(7), ShapeError);
}
