// Binary files for the loaders (safetensors, datasets): a reader whose every failure is an Error
// naming the file, a checked writer, and byte-order conversion. The files may come from anyone,
// so sizes are checked before anything is read or allocated.
#pragma once

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "../error.hpp"

namespace tinyt::inline v0 {
namespace nn::io {
using ::tinyt::detail::cat;

/// "op: 'path'", the start of every message about a file.
inline std::string where(const char* op, const std::string& path) {
  return cat(op, ": '", path, "'");
}

/// Reverses the bytes of each of `count` items of `itemsize` bytes (a byte-order conversion).
inline void reverse_item_bytes(void* data, size_t count, size_t itemsize) {
  auto* p = static_cast<unsigned char*>(data);
  if (itemsize > 1)
    for (size_t i = 0; i < count; ++i, p += itemsize) std::reverse(p, p + itemsize);
}

/// A regular file open for reading (closed with its owner). Movable, not copyable.
class InFile {
 public:
  /// Opens `path`; Error "op: 'path': why" when it is missing, unreadable or not a regular file.
  InFile(const std::string& path, const char* op) : path_(path), op_(op) {
    file_ = std::fopen(path.c_str(), "rb");
    if (!file_) throw Error(cat(where(op, path), ": cannot open: ", std::strerror(errno)));
    struct stat st;
    // a size is needed to check headers against, and fopen also "opens" a directory
    if (fstat(fileno(file_), &st) != 0 || !S_ISREG(st.st_mode)) {
      std::fclose(std::exchange(file_, nullptr));
      throw Error(cat(where(op, path), ": not a regular file"));
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  InFile(const InFile&) = delete;
  InFile& operator=(const InFile&) = delete;
  InFile(InFile&& o) noexcept
      : file_(std::exchange(o.file_, nullptr)),
        size_(o.size_),
        path_(std::move(o.path_)),
        op_(o.op_) {}
  InFile& operator=(InFile&&) = delete;
  ~InFile() {
    if (file_) std::fclose(file_);
  }

  /// The file's size in bytes when it was opened.
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  /// Reads up to `n` bytes; fewer only at the end of the file. Error on a read failure.
  size_t read(void* dst, size_t n) {
    const size_t got = n ? std::fread(dst, 1, n, file_) : 0;
    if (got < n && std::ferror(file_))
      throw Error(cat(where(op_, path_), ": read failed: ", std::strerror(errno)));
    return got;
  }
  /// Reads exactly `n` bytes at `offset`; Error saying what was being read when the file ends
  /// first (it may have shrunk since it was opened).
  void read_at(uint64_t offset, void* dst, size_t n, const std::string& what) {
    if (offset > static_cast<uint64_t>(INT64_MAX) ||
        fseeko(file_, static_cast<off_t>(offset), SEEK_SET) != 0)
      throw Error(cat(where(op_, path_), ": cannot seek to byte ", offset, " for ", what, ": ",
                      std::strerror(errno)));
    if (read(dst, n) != n) throw Error(cat(where(op_, path_), ": the file ends inside ", what));
  }

 private:
  std::FILE* file_ = nullptr;
  uint64_t size_ = 0;
  std::string path_;
  const char* op_;
};

/// A file being written (truncated first). close() reports a failed write; the destructor of a
/// file not closed (an exception on the way) just closes it.
class OutFile {
 public:
  OutFile(const std::string& path, const char* op) : path_(path), op_(op) {
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_)
      throw Error(cat(where(op, path), ": cannot open for writing: ", std::strerror(errno)));
  }
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;
  ~OutFile() {
    if (file_) std::fclose(file_);
  }
  /// Writes `n` bytes; Error naming the file when the disk refuses them.
  void write(const void* src, size_t n) {
    if (n && std::fwrite(src, 1, n, file_) != n)
      throw Error(cat(where(op_, path_), ": write failed: ", std::strerror(errno)));
  }
  /// Flushes and closes; Error when the data did not all reach the file.
  void close() {
    const bool ok = std::fflush(file_) == 0;
    const int error = errno;
    const bool closed = std::fclose(std::exchange(file_, nullptr)) == 0;
    if (!ok || !closed)
      throw Error(cat(where(op_, path_), ": write failed: ", std::strerror(ok ? errno : error)));
  }

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
  const char* op_;
};

}  // namespace nn::io
}  // namespace tinyt::inline v0
