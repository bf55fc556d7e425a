// Buffer, a block of device memory, allocated on first use by its device's allocator
// (backend/compiled.hpp). Nothing here knows about tensors.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/devices.hpp"
#include "device.hpp"
#include "dtype.hpp"
#include "error.hpp"
#include "helpers.hpp"
#include "profile_record.hpp"

namespace tinyt::inline v0 {


/// A block of device memory holding `size` elements of `dtype`. Allocated on first use.
class Buffer {
 public:
  Buffer(std::string device, size_t size, DType dtype)
      : device_(Device::canonicalize(device)), size_(size), dtype_(dtype) {}
  /// `size` elements of `dtype` in host memory at `host` that `owner` keeps alive (a mapped
  /// file's bytes), used in place: never copied, never freed here. DeviceError on a device whose
  /// kernels cannot use host memory (only the CPU's can), and where `host` is not aligned to the
  /// element size (kernels read whole elements).
  Buffer(std::string device, size_t size, DType dtype, void* host, std::shared_ptr<const void> owner)
      : Buffer(std::move(device), size, dtype) {
    if (!can_borrow(device_, host, dtype))
      throw DeviceError(detail::cat("Buffer: ", device_, " cannot use the host memory at ", host, " in place for ", dtype.name(),
                                    " elements (not the CPU's, or not aligned to ", dtype.itemsize(), " bytes); copy it in"));
    backend::Allocator& a = backend::device(device_).allocator();
    void* handle = a.borrow_host(host);
    allocator_ = &a;
    owner_ = std::move(owner);
    ptr_.store(handle, std::memory_order_release);
  }
  /// Whether a Buffer on `device` can borrow host memory at `host` for `dtype` elements: the
  /// device's kernels use host memory (the CPU's) and `host` is aligned to the element size.
  static bool can_borrow(const std::string& device, void* host, DType dtype) {
    return reinterpret_cast<uintptr_t>(host) % static_cast<uintptr_t>(std::max(dtype.itemsize(), 1)) == 0 &&
           backend::device(device).allocator().borrow_host(host) != nullptr;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (owner_) return;  // borrowed memory: its owner frees it
    if (void* p = ptr_.load()) {
      allocator_->free(p, nbytes());
      const auto n = static_cast<int64_t>(nbytes());
      GlobalCounters::mem_used -= n;
      const int64_t in_use = allocator_->in_use -= n;
      if (profile::enabled()) profile::memory_event(device_, -n, in_use);
    }
  }

  const std::string& device() const { return device_; }
  size_t size() const { return size_; }
  DType dtype() const { return dtype_; }
  size_t nbytes() const { return size_ * static_cast<size_t>(dtype_.itemsize()); }
  bool allocated() const { return ptr_.load() != nullptr; }
  /// Whether the memory is host memory borrowed from its owner (a mapped file), not allocated.
  bool borrowed() const { return owner_ != nullptr; }
  /// Bumped each time the memory is overwritten in place: values computed into it before are gone.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  void overwritten() { version_.fetch_add(1, std::memory_order_acq_rel); }

  /// The memory's device handle (a host pointer on the CPU), allocated now if it was not yet.
  void* ptr() {
    if (void* p = ptr_.load(std::memory_order_acquire)) return p;
    // not std::call_once: glibc's wakes waiters with a system call every time, even with none
    std::lock_guard lock(alloc_mu_);
    if (!ptr_.load(std::memory_order_relaxed)) {
      backend::Allocator& a = backend::device(device_).allocator();
      void* p = a.alloc(nbytes());
      allocator_ = &a;  // devices live as long as the process
      ptr_.store(p, std::memory_order_release);
      const auto n = static_cast<int64_t>(nbytes());
      GlobalCounters::mem_used += n;
      ++GlobalCounters::allocations;
      const int64_t in_use = a.in_use += n;
      if (profile::enabled()) profile::memory_event(device_, n, in_use);
    }
    return ptr_.load(std::memory_order_relaxed);
  }
  /// The memory as a host pointer; a DeviceError on a device whose memory the host cannot address.
  void* host_ptr() {
    void* handle = ptr();
    if (void* p = allocator_->host_pointer(handle)) return p;
    throw DeviceError(detail::cat("Buffer: the memory of ", device_, " is not addressable from the host; copy it out"));
  }
  /// The device this memory lives on.
  backend::Device& backend() const { return backend::device(device_); }
  void copyin(const void* src, size_t n) {
    if (n != nbytes())
      throw Error(detail::cat("Buffer.copyin: ", n, " bytes into a buffer of ", nbytes()));
    void* handle = ptr();
    if (n) allocator_->copyin(handle, src, n);
  }
  /// Copies the first `n` bytes out (all of them, or the elements a symbolic shape holds now).
  void copyout(void* dst, size_t n) {
    if (n > nbytes())
      throw Error(detail::cat("Buffer.copyout: ", n, " bytes from a buffer of ", nbytes()));
    void* handle = ptr();
    if (n) allocator_->copyout(dst, handle, n);
  }

 private:
  std::string device_;
  size_t size_;
  DType dtype_;
  std::atomic<void*> ptr_{nullptr};
  backend::Allocator* allocator_ = nullptr;  // set with ptr_, before it is published
  std::mutex alloc_mu_;
  std::atomic<uint64_t> version_{0};
  std::shared_ptr<const void> owner_;  // what keeps borrowed memory alive; null for allocated memory
};

}  // namespace tinyt::inline v0
