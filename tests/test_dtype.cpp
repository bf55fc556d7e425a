// dtype.hpp: names, sizes, the C++ type table, the promotion lattice, and host conversions.
#include <doctest/doctest.h>

#include <tinyt.hpp>
#include <tinyt/internals.hpp>

using namespace tinyt;

static_assert(dtype_of<float>() == dtypes::float32);
static_assert(dtype_of<int64_t>() == dtypes::int64);
static_assert(dtype_of<half_t>() == dtypes::float16);
static_assert(dtype_of<bool>() == dtypes::bool_);
static_assert(!has_dtype_v<std::string>);

TEST_CASE("dtype: names and itemsizes are NumPy's") {
  const std::pair<DType, std::pair<std::string, int>> expected[] = {
      {dtypes::bool_, {"bool", 1}},        {dtypes::int8, {"int8", 1}},
      {dtypes::uint8, {"uint8", 1}},       {dtypes::int16, {"int16", 2}},
      {dtypes::uint16, {"uint16", 2}},     {dtypes::int32, {"int32", 4}},
      {dtypes::uint32, {"uint32", 4}},     {dtypes::int64, {"int64", 8}},
      {dtypes::uint64, {"uint64", 8}},     {dtypes::float16, {"float16", 2}},
      {dtypes::bfloat16, {"bfloat16", 2}}, {dtypes::float32, {"float32", 4}},
      {dtypes::float64, {"float64", 8}},
  };
  for (auto& [dt, info] : expected) {
    CHECK(dt.name() == info.first);
    CHECK(dt.itemsize() == info.second);
    CHECK(dtypes::from_name(info.first) == dt);
  }
  CHECK(dtypes::all().size() == 13);
  CHECK(dtypes::from_name("half") == dtypes::float16);
  CHECK_THROWS_AS(dtypes::from_name("float128"), DTypeError);
}

TEST_CASE("dtype: vectors and pointers") {
  DType v = dtypes::float32.vec(4);
  CHECK(v.count() == 4);
  CHECK(v.itemsize() == 16);
  CHECK(v.scalar() == dtypes::float32);
  CHECK(v.name() == "float32.vec(4)");
  DType p = v.ptr(128);
  CHECK(p.is_ptr());
  CHECK(p.size() == 128);
  CHECK(p.base() == v);
  CHECK_THROWS_AS(v.vec(2), DTypeError);
  CHECK_THROWS_AS(p.ptr(), DTypeError);
  CHECK(dtypes::void_.vec(4) == dtypes::void_);
  // the order is total: distinct dtypes are never "equivalent" (a bug once made sorting loop)
  const DType a = dtypes::int32.ptr(3), b = dtypes::int32.ptr(1);
  CHECK((a < b) != (b < a));
  CHECK((dtypes::float32.ptr(4, AddrSpace::local) < dtypes::float32.ptr(4)) !=
        (dtypes::float32.ptr(4) < dtypes::float32.ptr(4, AddrSpace::local)));
}

TEST_CASE("dtype: least_upper_dtype follows tinygrad's lattice") {
  using namespace dtypes;
  CHECK(least_upper_dtype({int8, uint8}) == int16);
  CHECK(least_upper_dtype({int32, uint32}) == int64);
  CHECK(least_upper_dtype({int64, uint64}) == uint64);
  CHECK(least_upper_dtype({int8, uint64}) == uint64);
  CHECK(least_upper_dtype({bool_, int8}) == int8);
  CHECK(least_upper_dtype({bool_, bool_}) == bool_);
  CHECK(least_upper_dtype({float16, bfloat16}) == float32);
  CHECK(least_upper_dtype({int64, float16}) == float16);
  CHECK(least_upper_dtype({float32, float64}) == float64);
  CHECK(least_upper_dtype({uint16, int16}) == int32);
  CHECK(least_upper_dtype({uint8, int8, float16}) == float16);
  CHECK(least_upper_dtype({dtypes::index, int32}) == dtypes::index);
  CHECK_THROWS_AS(least_upper_dtype({dtypes::index, float32}), DTypeError);
  CHECK_THROWS_AS(least_upper_dtype({float32.ptr()}), DTypeError);
}

TEST_CASE("dtype: scalars are weak next to tensors") {
  using namespace dtypes;
  CHECK(weak_promote(float16, float32) == float16);  // half * 2.0 stays half
  CHECK(weak_promote(int32, float32) == float32);    // int * 2.5 is the default float
  CHECK(weak_promote(int64, float32) == float32);
  CHECK(weak_promote(uint8, int32) == uint8);  // uint8 + 1 stays uint8
  CHECK(weak_promote(bool_, int32) == int32);  // bool + 1 is the default int
  CHECK(weak_promote(bool_, bool_) == bool_);
  CHECK(weak_promote(bool_, float32) == float32);
  CHECK(least_upper_float(int32) == float32);
  CHECK(least_upper_float(float16) == float16);
}

TEST_CASE("dtype: integer ranges and wraparound") {
  CHECK(dtypes::min_int(dtypes::int8) == -128);
  CHECK(dtypes::max_int(dtypes::int8) == 127);
  CHECK(dtypes::max_int(dtypes::uint64) == (static_cast<i128>(1) << 64) - 1);
  CHECK(dtypes::min_int(dtypes::int64) == std::numeric_limits<int64_t>::min());
  CHECK(wrap_int(128, dtypes::int8) == -128);
  CHECK(wrap_int(-1, dtypes::uint8) == 255);
  CHECK(wrap_int(static_cast<i128>(1) << 40, dtypes::int32) == 0);
  CHECK(wrap_int(5, dtypes::bool_) == 1);
  CHECK_THROWS_AS(dtypes::max_int(dtypes::float32), DTypeError);
}

TEST_CASE("dtype: float16 and bfloat16 on the host round to nearest even") {
  CHECK(std::isinf(round_float(65536.0, dtypes::float16)));
  CHECK(round_float(65504.0, dtypes::float16) == 65504.0);
  CHECK(round_float(65519.0, dtypes::float16) == 65504.0);       // below the halfway point to 65536
  CHECK(round_float(1.0 + 1.0 / 2048, dtypes::float16) == 1.0);  // a tie rounds to even
  CHECK(round_float(1.0 + 3.0 / 2048, dtypes::float16) == 1.0 + 2.0 / 1024);
  CHECK(round_float(1.0 + 3.0 / 4096, dtypes::float16) == 1.0 + 1.0 / 1024);
  CHECK(static_cast<float>(bfloat16_t(1.0f)) == 1.0f);
  CHECK(bfloat16_t(1.0f).bits == 0x3f80);
  CHECK(static_cast<float>(bfloat16_t(1.00390625f)) == 1.0f);       // halfway: even (1.0)
  CHECK(static_cast<float>(bfloat16_t(1.01171875f)) == 1.015625f);  // halfway: even (1.015625)
  CHECK(std::isnan(static_cast<float>(bfloat16_t(NAN))));
  CHECK(round_float(0.1, dtypes::float32) == static_cast<double>(0.1f));
}
