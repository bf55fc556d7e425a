// The host CPU's SIMD registers, which the hand-coded opts size register tiles by. Both CPU
// compilers target the host (`-march=native`; LLVM's host CPU and features), so the registers
// this CPU has are the ones the kernels get.
#pragma once

#include <cstdint>

namespace tinyt::inline v0 {
namespace backend {

struct SimdRegisters {
  int64_t bytes;  // of one register
  int64_t count;
};

/// The widest SIMD registers of the CPU this process runs on.
inline SimdRegisters host_simd() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx512f")) return {64, 32};
  if (__builtin_cpu_supports("avx2")) return {32, 16};
  return {16, 16};
#elif defined(__aarch64__)
  return {16, 32};
#else
  return {16, 16};
#endif
}

}  // namespace backend
}  // namespace tinyt::inline v0
