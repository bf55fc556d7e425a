// Buffer, a block of device memory, and the host allocator behind it. A backend knows how to
// allocate, copy, compile and launch; nothing here knows about tensors.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "device.hpp"
#include "dtype.hpp"
#include "error.hpp"
#include "helpers.hpp"

namespace tinyt::inline v0 {

namespace detail {
// Host memory, 64-byte aligned, with freed blocks kept by size for reuse (tinygrad's LRU
// allocator): a training step frees and allocates the same sizes every time.
class HostAllocator {
 public:
  void* alloc(size_t nbytes) {
    const size_t n = round_up(nbytes);
    {
      std::lock_guard lock(mu_);
      if (auto it = free_.find(n); it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= n;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, n);
    if (!p) {
      release_cache();
      p = std::aligned_alloc(64, n);
    }
    if (!p) throw OutOfMemoryError(detail::cat("CPU: cannot allocate ", nbytes, " bytes"));
    return p;
  }
  void free(void* p, size_t nbytes) {
    const size_t n = round_up(nbytes);
    std::lock_guard lock(mu_);
    if (cached_bytes_ + n > cache_limit) {
      std::free(p);
      return;
    }
    free_[n].push_back(p);
    cached_bytes_ += n;
  }
  void release_cache() {
    std::lock_guard lock(mu_);
    for (auto& [n, blocks] : free_)
      for (void* p : blocks) std::free(p);
    free_.clear();
    cached_bytes_ = 0;
  }
  ~HostAllocator() { release_cache(); }

 private:
  static size_t round_up(size_t n) { return std::max<size_t>(64, (n + 63) / 64 * 64); }
  static constexpr size_t cache_limit = size_t{1} << 30;
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
};
inline HostAllocator& host_allocator() {
  static HostAllocator a;
  return a;
}
}  // namespace detail

/// A block of device memory holding `size` elements of `dtype`. Allocated on first use.
class Buffer {
 public:
  Buffer(std::string device, size_t size, DType dtype)
      : device_(Device::canonicalize(device)), size_(size), dtype_(dtype) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (void* p = ptr_.load()) {
      detail::host_allocator().free(p, nbytes());
      GlobalCounters::mem_used -= static_cast<int64_t>(nbytes());
    }
  }

  const std::string& device() const { return device_; }
  size_t size() const { return size_; }
  DType dtype() const { return dtype_; }
  size_t nbytes() const { return size_ * static_cast<size_t>(dtype_.itemsize()); }
  bool allocated() const { return ptr_.load() != nullptr; }
  /// Bumped each time the memory is overwritten in place: values computed into it before are gone.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  void overwritten() { version_.fetch_add(1, std::memory_order_acq_rel); }

  /// The memory, allocated now if it was not yet.
  void* ptr() {
    if (void* p = ptr_.load(std::memory_order_acquire)) return p;
    Device::require(device_);
    // not std::call_once: glibc's wakes waiters with a system call every time, even with none
    std::lock_guard lock(alloc_mu_);
    if (!ptr_.load(std::memory_order_relaxed)) {
      ptr_.store(detail::host_allocator().alloc(nbytes()), std::memory_order_release);
      GlobalCounters::mem_used += static_cast<int64_t>(nbytes());
    }
    return ptr_.load(std::memory_order_relaxed);
  }
  void copyin(const void* src, size_t n) {
    if (n != nbytes())
      throw Error(detail::cat("Buffer.copyin: ", n, " bytes into a buffer of ", nbytes()));
    if (n) std::memcpy(ptr(), src, n);
  }
  void copyout(void* dst, size_t n) {
    if (n != nbytes())
      throw Error(detail::cat("Buffer.copyout: ", n, " bytes from a buffer of ", nbytes()));
    if (n) std::memcpy(dst, ptr(), n);
  }

 private:
  std::string device_;
  size_t size_;
  DType dtype_;
  std::atomic<void*> ptr_{nullptr};
  std::mutex alloc_mu_;
  std::atomic<uint64_t> version_{0};
};

}  // namespace tinyt::inline v0
