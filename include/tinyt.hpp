// tinyt: tinygrad's deep-learning compiler as a header-only C++20 library.
// This is the one include; it pulls in every public header.
#pragma once

#include "tinyt/alu.hpp"
#include "tinyt/bounds.hpp"
#include "tinyt/dtype.hpp"
#include "tinyt/error.hpp"
#include "tinyt/linear.hpp"
#include "tinyt/pattern.hpp"
#include "tinyt/symbolic.hpp"
#include "tinyt/uop.hpp"
#include "tinyt/valid.hpp"
