// The types of the generated Unicode tables (unicode_classes.hpp, unicode_folds.hpp).
#pragma once

namespace tinyt::inline v0::nn::text::unicode {

/// Code points first..last, inclusive.
struct CodeRange {
  char32_t first, last;
};
/// A code point and the one it folds to (lower(), NFD, combining marks dropped).
struct Fold {
  char32_t from, to;
};
/// A code point that folds to two or three (0-ended).
struct FoldMany {
  char32_t from, to[3];
};

}  // namespace tinyt::inline v0::nn::text::unicode
