// Datasets from local files: the IDX format of MNIST and Fashion-MNIST (plain or gzip'd), and
// fashion_mnist() as tinygrad's nn.datasets.mnist(fashion=True) gives it. gzip is read through
// zlib opened with dlopen, like every runtime library tinyt uses: nothing to link, and a missing
// libz is a DeviceError saying so.
//
// IDX: a 4-byte magic (0, 0, element type, number of dims), each dim a big-endian uint32, then
// the elements, row-major and big-endian. Every size is checked before memory is allocated for
// it, and gzip data is inflated only as far as it really goes, so a file that lies about its dims
// can neither read out of bounds nor make us allocate what it does not hold.
#pragma once

#include <string>

#include "../tensor.hpp"

namespace tinyt::inline v0::nn::datasets {

/// A dataset split into training and test sets: images X and labels Y.
struct Mnist {
  Tensor X_train, Y_train, X_test, Y_test;
};

/// The tensor in the IDX file at `path` (gzip'd when the name ends in ".gz"): the file's shape,
/// and its element type as uint8, int8, int16, int32, float32 or float64. Error naming the file
/// for a bad magic, an unknown type, dims that disagree with the data, truncated or corrupt gzip;
/// DeviceError when a .gz file needs a zlib that cannot be opened.
Tensor load_idx(const std::string& path);

/// Fashion-MNIST from the four .gz IDX files in `dir` (default: $FASHION_MNIST_DIR, else
/// /usr/share/datasets/fashion-mnist): X uint8 of shape (N, 1, 28, 28), Y uint8 labels 0..9 of
/// shape (N), N = 60000 for training and 10000 for test, as tinygrad's nn.datasets.mnist gives.
Mnist fashion_mnist(std::string dir = "");

}  // namespace tinyt::inline v0::nn::datasets
