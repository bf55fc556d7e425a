// Tensor cores: the warp-wide matrix multiply-accumulate instructions tinyt generates, and how
// each spreads its operands over the lanes of a warp (the PTX ISA's fragment layouts). The code
// generator reads a layout to give each lane the elements it must hold (codegen/opt/opt.hpp's
// TC), the emulated GPU to put the matrices back together (backend/emu.hpp); both read it here.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

#include "dtype.hpp"

namespace tinyt::inline v0 {

/// mma.sync.aligned.<shape>.row.col.f32.<in>.<in>.f32 (sm_80 and later): a warp of 32 lanes
/// computes D = A·B + C for A m×k, B k×n, C and D m×n in float32. Lane `l` is in group l/4 and is
/// thread l%4 of its group; it holds a_count elements of A, b_count of B and 4 of C/D:
///   A[i]: row group + a_row[i], column per_thread·thread + a_col[i]
///   B[i]: row (k) per_thread·thread + b_k[i], column (n) group
///   C[i]: row group + c_row[i], column 2·thread + c_col[i]
/// (per_thread: the consecutive elements of k one register holds, 2 of 16 bits, 1 of TF32).
struct TensorCore {
  std::string_view shape;  // as PTX names it: "m16n8k16"
  int m, n, k;
  int a_count, b_count, per_thread;
  std::array<int, 8> a_row, a_col;
  std::array<int, 4> b_k;
  static constexpr int warp = 32, c_count = 4;
  static constexpr std::array<int, 4> c_row{0, 0, 8, 8}, c_col{0, 1, 0, 1};

  /// (row, column) of A that lane `lane` holds as its i-th element.
  constexpr std::pair<int, int> a(int lane, int i) const {
    return {lane / 4 + a_row[static_cast<size_t>(i)], per_thread * (lane % 4) + a_col[static_cast<size_t>(i)]};
  }
  /// (k, n) of B that lane `lane` holds as its i-th element.
  constexpr std::pair<int, int> b(int lane, int i) const { return {per_thread * (lane % 4) + b_k[static_cast<size_t>(i)], lane / 4}; }
  /// (row, column) of C and D that lane `lane` holds as its i-th element.
  static constexpr std::pair<int, int> c(int lane, int i) {
    return {lane / 4 + c_row[static_cast<size_t>(i)], 2 * (lane % 4) + c_col[static_cast<size_t>(i)]};
  }
};

/// m16n8k16 of float16 or bfloat16 inputs: two to a 32-bit register.
inline constexpr TensorCore mma_m16n8k16{"m16n8k16", 16, 8, 16, 8, 4, 2, {0, 0, 8, 8, 0, 0, 8, 8}, {0, 1, 0, 1, 8, 9, 8, 9}, {0, 1, 8, 9}};
/// m16n8k8 of TF32 inputs (float32 rounded to 10 bits of mantissa, to nearest, ties away): one to a register.
inline constexpr TensorCore mma_m16n8k8_tf32{"m16n8k8", 16, 8, 8, 4, 2, 1, {0, 8, 0, 8}, {0, 0, 4, 4}, {0, 4}};

/// The instruction of a WMMA's argument ("m16n8k16 float16", "m16n8k16 bfloat16", "m16n8k8 tf32"), or null.
inline const TensorCore* tensor_core_of(std::string_view kind) {
  if (kind == "m16n8k16 float16" || kind == "m16n8k16 bfloat16") return &mma_m16n8k16;
  if (kind == "m16n8k8 tf32") return &mma_m16n8k8_tf32;
  return nullptr;
}

/// The dtype of a WMMA's inputs as its argument names them: float16, bfloat16, or float32 for tf32
/// (float32 values rounded by the instruction).
inline DType tensor_core_input(std::string_view kind) {
  // (std::find, not string_view::find, which GCC 12 inlines into a memchr it then warns of with
  // -Wstringop-overread when the argument is a temporary string)
  const auto space = std::find(kind.begin(), kind.end(), ' ');
  const std::string_view input = space == kind.end() ? kind : std::string_view(space + 1, kind.end());
  return input == "float16" ? dtypes::float16 : input == "bfloat16" ? dtypes::bfloat16 : dtypes::float32;
}

/// An LDMATRIX's 8x8 tiles (1, 2 or 4) and whether it transposes them, from its arg ("4", "2 trans").
inline std::pair<int, bool> ldmatrix_kind(std::string_view arg) {
  return {arg.empty() ? 0 : arg[0] - '0', arg.find("trans") != std::string_view::npos};
}

/// A float32 rounded to TF32 as cvt.rna.tf32.f32 does it (the 13 low bits of the mantissa gone,
/// to nearest, ties away from zero), still a float32.
inline uint32_t round_tf32_bits(uint32_t bits) {
  if ((bits & 0x7f800000u) == 0x7f800000u) return bits;  // infinity and NaN as they are
  return (bits + 0x1000u) & ~0x1fffu;
}

}  // namespace tinyt::inline v0
