// A file's bytes mapped into memory, for loaders whose tensors can use a file's bytes in place
// (ONNX initializers, GGUF tensors): the pages are read from the page cache when first touched,
// and a CPU buffer over them costs no copy (Buffer's borrowing constructor).
//
// The mapping is private and copy-on-write: a kernel writing into a tensor over it (an in-place
// assign) changes this process's pages, never the file. Like every memory-mapped loader's, it
// relies on the file not being truncated while it is mapped (the kernel would then deliver
// SIGBUS); replacing the file (write a new one, rename it over) is safe.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "error.hpp"
#include "graph.hpp"
#include "helpers.hpp"
#include "tensor.hpp"

namespace tinyt::inline v0 {

/// A regular file's bytes, mapped copy-on-write for as long as this lives. Not copyable: shared
/// by shared_ptr between the buffers that use its bytes.
class MappedFile {
 public:
  /// Maps `path`; Error "op: cannot map 'path': why" when it is missing, unreadable or not a
  /// regular file.
  static std::shared_ptr<const MappedFile> open(const std::string& path, const char* op) {
    return std::shared_ptr<const MappedFile>(new MappedFile(path, op));
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (size_) munmap(data_, size_);
  }

  /// The file's contents when it was mapped.
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }
  const std::string& path() const { return path_; }
  /// Whether `bytes` lie inside the mapping.
  bool holds(std::string_view bytes) const {
    const auto* begin = static_cast<const char*>(data_);
    return bytes.data() >= begin && bytes.data() + bytes.size() <= begin + size_;
  }
  /// The writable address of the mapped byte `p` points to (one of bytes()): writes to it stay
  /// in this process (the mapping is private).
  void* writable(const char* p) const { return static_cast<char*>(data_) + (p - static_cast<const char*>(data_)); }

 private:
  MappedFile(const std::string& path, const char* op) : path_(path) {
    const auto fail = [&](const char* why) {
      return Error(detail::cat(op, ": cannot map '", path, "': ", why));
    };
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw fail(std::strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw fail("not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_) {  // (an empty mapping is an error to mmap; an empty file is just no bytes)
      // writable pages, privately: a tensor over them may be overwritten in place
      void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
      const int err = errno;
      ::close(fd);
      if (p == MAP_FAILED) throw fail(std::strerror(err));
      data_ = p;
    } else {
      ::close(fd);
    }
  }

  std::string path_;
  void* data_ = nullptr;
  size_t size_ = 0;
};

namespace detail {
/// A tensor of `dims` and `dtype` holding `bytes` of the mapped `file`, on `device` (the default
/// device when empty): the file's bytes in place where that device's kernels can use host memory
/// and the bytes are aligned for `dtype`, else a copy of them (from_blob).
inline Tensor tensor_over_file(const std::shared_ptr<const MappedFile>& file, std::string_view bytes,
                               const std::vector<int64_t>& dims, DType dtype, std::string device = "") {
  device = device.empty() ? Device::default_device() : Device::canonicalize(device);
  int64_t n = 1;
  for (const int64_t d : dims) n *= d;  // (sizes the caller checked against the file)
  if (static_cast<uint64_t>(n) * static_cast<uint64_t>(dtype.itemsize()) != bytes.size())
    throw InternalError(cat("tensor_over_file: ", bytes.size(), " bytes for ", n, " elements of ", dtype.name()));
  void* host = file && file->holds(bytes) ? file->writable(bytes.data()) : nullptr;
  if (!host || n == 0 || Device::is_multi(device) || !Buffer::can_borrow(device, host, dtype))
    return Tensor::from_blob(bytes.data(), Shape(dims), dtype, device);
  auto memory = std::make_shared<Buffer>(device, static_cast<size_t>(n), dtype, host, file);
  return Tensor(graph::reshape(graph::buffer_over(std::move(memory)), Shape(dims)));
}
}  // namespace detail

}  // namespace tinyt::inline v0
