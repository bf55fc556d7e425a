// (being written)
#pragma once

#include "reduce.hpp"
