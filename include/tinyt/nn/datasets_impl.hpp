// Definitions of datasets.hpp, compiled with the engine (config.hpp).
#pragma once

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "../backend/dlopen.hpp"
#include "../tensor.hpp"
#include "datasets.hpp"
#include "file_io.hpp"

namespace tinyt::inline v0 {
namespace nn::datasets {

namespace detail {
using ::tinyt::detail::cat;

/// The few functions of zlib's gzip file API that reading needs. That API takes an opaque
/// handle, so no zlib header (or struct layout) is needed to call it.
struct Zlib {
  backend::Library lib;
  void* (*open)(const char* path, const char* mode);
  int (*read)(void* file, void* buf, unsigned len);
  int (*close)(void* file);
  const char* (*error)(void* file, int* errnum);
  int (*direct)(void* file);

  explicit Zlib(backend::Library l)
      : lib(std::move(l)),
        open(lib.symbol<void*(const char*, const char*)>("gzopen")),
        read(lib.symbol<int(void*, void*, unsigned)>("gzread")),
        close(lib.symbol<int(void*)>("gzclose")),
        error(lib.symbol<const char*(void*, int*)>("gzerror")),
        direct(lib.symbol<int(void*)>("gzdirect")) {}
  static constexpr int buf_error = -5;  // Z_BUF_ERROR: the gzip data ended early
};

/// zlib, opened at first use (a failed open is tried again at the next call).
inline const Zlib& zlib(const std::string& file) {
  try {
    static const Zlib z(backend::Library::open_first({"libz.so.1", "libz.so"}));
    return z;
  } catch (const DeviceError& e) {
    throw DeviceError(
        cat(file, ": reading gzip needs zlib (libz.so.1, Debian package zlib1g): ", e.what()));
  }
}

/// The bytes of a file, inflated when its name ends in ".gz".
class Source {
 public:
  Source(const std::string& path, const char* op)
      : file_(io::where(op, path)), plain_(std::in_place, path, op) {
    if (!path.ends_with(".gz")) return;
    plain_.reset();  // it was opened to give a missing file the same message either way
    zlib_ = &zlib(file_);
    gz_ = zlib_->open(path.c_str(), "rb");
    if (!gz_) throw Error(cat(file_, ": cannot open: ", std::strerror(errno)));
    if (zlib_->direct(gz_)) {  // zlib would pass the bytes through as they are
      zlib_->close(std::exchange(gz_, nullptr));
      throw Error(cat(file_, ": not gzip data, though the name ends in .gz"));
    }
  }
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;
  ~Source() {
    if (gz_) zlib_->close(gz_);
  }

  /// The size of the data when it is known without reading it (a plain file).
  std::optional<uint64_t> size() const {
    if (plain_) return plain_->size();
    return std::nullopt;
  }

  /// Reads up to `n` bytes; fewer only at the end of the data. Error for truncated or corrupt gzip.
  size_t read(void* dst, size_t n) {
    if (plain_) return plain_->read(dst, n);
    size_t got = 0;
    while (got < n) {
      const auto chunk = static_cast<unsigned>(std::min<size_t>(n - got, 1u << 30));
      const int r = zlib_->read(gz_, static_cast<unsigned char*>(dst) + got, chunk);
      if (r < 0) throw Error(cat(file_, ": corrupt gzip data (zlib: ", message(), ")"));
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    if (got < n) {  // the end, or data that stopped early: zlib keeps the reason
      int errnum = 0;
      const char* why = zlib_->error(gz_, &errnum);
      if (errnum == Zlib::buf_error)
        throw Error(cat(file_, ": truncated gzip data (zlib: ", why ? why : "?", ")"));
      if (errnum != 0) throw Error(cat(file_, ": corrupt gzip data (zlib: ", why ? why : "?", ")"));
    }
    return got;
  }

  /// "load_idx: 'path'", for messages.
  const std::string& file() const { return file_; }

 private:
  std::string message() const {
    int errnum = 0;
    const char* why = zlib_->error(gz_, &errnum);
    return why ? why : "?";
  }

  std::string file_;
  std::optional<io::InFile> plain_;
  const Zlib* zlib_ = nullptr;
  void* gz_ = nullptr;
};

struct IdxType {
  unsigned char code;
  DType dtype;
};
inline constexpr IdxType idx_types[] = {{0x08, dtypes::uint8},   {0x09, dtypes::int8},
                                        {0x0B, dtypes::int16},   {0x0C, dtypes::int32},
                                        {0x0D, dtypes::float32}, {0x0E, dtypes::float64}};

inline std::string dims_text(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += cat(i ? ", " : "", dims[i]);
  return out + "]";
}
inline std::string hex_byte(unsigned v) {
  return cat("0x", "0123456789ABCDEF"[(v >> 4) & 15], "0123456789ABCDEF"[v & 15]);
}
}  // namespace detail

/// The tensor in the IDX file at `path` (gzip'd when the name ends in ".gz"): the file's shape,
/// and its element type as uint8, int8, int16, int32, float32 or float64. Error naming the file
/// for a bad magic, an unknown type, dims that disagree with the data, truncated or corrupt gzip;
/// DeviceError when a .gz file needs a zlib that cannot be opened.
TINYT_INLINE Tensor load_idx(const std::string& path) {
  using detail::cat;
  detail::Source src(path, "load_idx");
  const std::string& file = src.file();
  unsigned char magic[4];
  if (src.read(magic, 4) != 4) throw Error(cat(file, ": the file ends inside the 4-byte magic"));
  if (magic[0] != 0 || magic[1] != 0)
    throw Error(cat(file, ": bad magic ", detail::hex_byte(magic[0]), " ",
                    detail::hex_byte(magic[1]), " (an IDX file starts with two zero bytes)"));
  const auto* type = std::find_if(std::begin(detail::idx_types), std::end(detail::idx_types),
                                  [&](const detail::IdxType& t) { return t.code == magic[2]; });
  if (type == std::end(detail::idx_types))
    throw DTypeError(cat(file, ": unknown IDX element type ", detail::hex_byte(magic[2]),
                         " (known: 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64)"));
  const DType dt = type->dtype;
  const size_t ndims = magic[3];

  std::vector<unsigned char> dim_bytes(4 * ndims);
  if (src.read(dim_bytes.data(), dim_bytes.size()) != dim_bytes.size())
    throw Error(cat(file, ": the file ends inside the ", ndims, " dims"));
  std::vector<int64_t> dims;
  const auto itemsize = static_cast<uint64_t>(dt.itemsize());
  uint64_t nbytes = itemsize;
  bool overflow = false;
  for (size_t i = 0; i < ndims; ++i) {
    const uint64_t d = uint64_t{dim_bytes[4 * i]} << 24 | uint64_t{dim_bytes[4 * i + 1]} << 16 |
                       uint64_t{dim_bytes[4 * i + 2]} << 8 | uint64_t{dim_bytes[4 * i + 3]};
    dims.push_back(static_cast<int64_t>(d));
    if (d != 0 && nbytes > static_cast<uint64_t>(INT64_MAX) / d) overflow = true;
    nbytes = overflow ? 0 : nbytes * d;
  }
  // a 0 dim after an overflowing product is still an overflow: the dims are nonsense either way
  if (overflow || nbytes > SIZE_MAX)
    throw Error(cat(file, ": dims ", detail::dims_text(dims), " of ", dt.name(),
                    " need more than 2^63 bytes"));
  const std::string need =
      cat("dims ", detail::dims_text(dims), " of ", dt.name(), " need ", nbytes, " data bytes");

  std::vector<unsigned char> data;
  if (const auto size = src.size()) {  // a plain file: check the size before reading
    const uint64_t have = *size - (4 + 4 * ndims);
    if (have < nbytes) throw Error(cat(file, ": truncated: ", need, ", the file has ", have));
    if (have > nbytes)
      throw Error(cat(file, ": ", need, ", but the file has ", have, " (", have - nbytes,
                      " bytes too many)"));
    data.resize(nbytes);
    if (src.read(data.data(), data.size()) != data.size())
      throw Error(cat(file, ": truncated: the file shrank while being read"));
  } else {  // gzip: grow the buffer with the data that really arrives
    size_t have = 0;
    while (have < nbytes) {
      const size_t step = std::min<size_t>(nbytes - have, std::max<size_t>(have, 1 << 20));
      data.resize(have + step);
      const size_t got = src.read(data.data() + have, step);
      have += got;
      if (got < step) break;
    }
    if (have < nbytes) throw Error(cat(file, ": truncated: ", need, ", the data has ", have));
    unsigned char extra;
    if (src.read(&extra, 1) != 0)
      throw Error(cat(file, ": ", need, ", but the data goes on past them"));
  }
  if constexpr (std::endian::native == std::endian::little)
    io::reverse_item_bytes(data.data(), static_cast<size_t>(nbytes / itemsize),
                           static_cast<size_t>(itemsize));
  return Tensor::from_blob(data.data(), Shape(dims), dt);
}


/// Fashion-MNIST from the four .gz IDX files in `dir` (default: $FASHION_MNIST_DIR, else
/// /usr/share/datasets/fashion-mnist): X uint8 of shape (N, 1, 28, 28), Y uint8 labels 0..9 of
/// shape (N), N = 60000 for training and 10000 for test, as tinygrad's nn.datasets.mnist gives.
TINYT_INLINE Mnist fashion_mnist(std::string dir) {
  using detail::cat;
  if (dir.empty()) {
    const char* env = std::getenv("FASHION_MNIST_DIR");
    dir = env && *env ? env : "/usr/share/datasets/fashion-mnist";
  }
  const auto load = [&](const char* name) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    std::error_code ignored;
    if (!std::filesystem::exists(path, ignored))
      throw Error(cat("fashion_mnist: '", path,
                      "' does not exist; install the Debian package "
                      "dataset-fashion-mnist, or set FASHION_MNIST_DIR (or pass a directory) to "
                      "where train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
                      "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz are"));
    return std::pair(load_idx(path), path);
  };
  const auto images = [&](const char* name) {
    auto [t, path] = load(name);
    const auto s = t.shape().to_vector();
    if (t.dtype() != dtypes::uint8 || s.size() != 3 || s[1] != 28 || s[2] != 28)
      throw Error(cat("fashion_mnist: '", path, "' holds ", t.dtype().name(), " of shape ",
                      detail::dims_text(s), ", not uint8 images of shape [N, 28, 28]"));
    return t.reshape({s[0], 1, 28, 28});
  };
  const auto labels = [&](const char* name, const Tensor& X) {
    auto [t, path] = load(name);
    const auto s = t.shape().to_vector();
    const int64_t n = X.shape()[0].as_int();
    if (t.dtype() != dtypes::uint8 || s.size() != 1 || s[0] != n)
      throw Error(cat("fashion_mnist: '", path, "' holds ", t.dtype().name(), " of shape ",
                      detail::dims_text(s), ", not ", n, " uint8 labels"));
    return t;
  };
  Mnist m;
  m.X_train = images("train-images-idx3-ubyte.gz");
  m.Y_train = labels("train-labels-idx1-ubyte.gz", m.X_train);
  m.X_test = images("t10k-images-idx3-ubyte.gz");
  m.Y_test = labels("t10k-labels-idx1-ubyte.gz", m.X_test);
  return m;
}

}  // namespace nn::datasets
}  // namespace tinyt::inline v0
