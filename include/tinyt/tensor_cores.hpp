// Tensor cores: the warp-wide matrix multiply-accumulate instructions tinyt generates, and how
// each spreads its operands over the lanes of a warp (the PTX ISA's fragment layouts). The code
// generator reads a layout to give each lane the elements it must hold (codegen/opt/opt.hpp's
// TC), the emulated GPU to put the matrices back together (backend/emu.hpp); both read it here.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

namespace tinyt::inline v0 {

/// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 (sm_80 and later): a warp of
/// 32 lanes computes D = A·B + C for A 16×16, B 16×8 (K×N), C and D 16×8 in float32. Lane `l` is
/// in group l/4 and is thread l%4 of its group; it holds 8 elements of A, 4 of B and 4 of C/D:
///   A[i]: row group + a_row[i], column 2·thread + a_col[i]
///   B[i]: row (k) 2·thread + b_k[i], column (n) group
///   C[i]: row group + c_row[i], column 2·thread + c_col[i]
struct TensorCore {
  static constexpr int m = 16, n = 8, k = 16, warp = 32;
  static constexpr int a_count = 8, b_count = 4, c_count = 4;
  static constexpr std::array<int, 8> a_row{0, 0, 8, 8, 0, 0, 8, 8}, a_col{0, 1, 0, 1, 8, 9, 8, 9};
  static constexpr std::array<int, 4> b_k{0, 1, 8, 9};
  static constexpr std::array<int, 4> c_row{0, 0, 8, 8}, c_col{0, 1, 0, 1};

  /// (row, column) of A that lane `lane` holds as its i-th element.
  static constexpr std::pair<int, int> a(int lane, int i) { return {lane / 4 + a_row[i], 2 * (lane % 4) + a_col[i]}; }
  /// (k, n) of B that lane `lane` holds as its i-th element.
  static constexpr std::pair<int, int> b(int lane, int i) { return {2 * (lane % 4) + b_k[i], lane / 4}; }
  /// (row, column) of C and D that lane `lane` holds as its i-th element.
  static constexpr std::pair<int, int> c(int lane, int i) { return {lane / 4 + c_row[i], 2 * (lane % 4) + c_col[i]}; }
};

}  // namespace tinyt::inline v0
