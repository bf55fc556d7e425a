// The tinyt::tinyt library: tinyt's definitions, compiled once (include/tinyt/config.hpp).
#define TINYT_IMPLEMENTATION
#include <tinyt.hpp>
