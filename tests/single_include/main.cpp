// Built with single_include/ as the only tinyt include path: proves the amalgamation stands alone.
#include <tinyt.hpp>

#include <doctest/doctest.h>

#include <stdexcept>

#if __has_include(<tinyt/error.hpp>)
#error "include/ is on this test's include path; it must see single_include/tinyt.hpp only"
#endif

TEST_CASE("single_include: the error hierarchy is complete") {
  CHECK_THROWS_AS(throw tinyt::Error("boom"), std::runtime_error);
  CHECK_THROWS_AS(throw tinyt::ShapeError("bad shape"), tinyt::Error);
}
