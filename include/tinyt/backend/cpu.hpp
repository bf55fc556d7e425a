// The CPU as a device: host memory (64-byte aligned, freed blocks reused by size), and kernels
// compiled by LLVM's ORC JIT (the default) or the system C compiler (CPU_LLVM=0, or when libLLVM
// cannot be opened). A kernel launch on the CPU is `global[0]` calls of the kernel function,
// one per thread of the pool, each told its core_id.
#pragma once

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <iostream>
#include <mutex>

#include "compiled.hpp"
#include "cpu_cc.hpp"
#include "cpu_llvm.hpp"
#include "host_simd.hpp"
#include "threadpool.hpp"

namespace tinyt::inline v0 {

/// What turns CPU kernels into machine code: LLVM's ORC JIT (the default), or the system C
/// compiler (CPU_LLVM=0, or when libLLVM cannot be opened).
enum class CpuCompiler { llvm, cc };

namespace detail {
// Whether libLLVM opened, tried once; why not, when it did not.
inline const std::string& llvm_unavailable_reason() {
  static const std::string reason = [] {
    try {
      backend::default_llvm();
      return std::string();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  }();
  return reason;
}
}  // namespace detail

/// The CPU compiler to use now.
inline CpuCompiler cpu_compiler() {
  if (!getenv_int("CPU_LLVM", 1)) return CpuCompiler::cc;
  if (detail::llvm_unavailable_reason().empty()) return CpuCompiler::llvm;
  static std::once_flag noted;
  if (debug_level() >= 1)
    std::call_once(noted, [] { std::cerr << "tinyt: using the C compiler, LLVM is unavailable: " << detail::llvm_unavailable_reason() << "\n"; });
  return CpuCompiler::cc;
}
/// The CPU LLVM compiles for: TINYT_LLVM_CPU ("x86-64-v3", "skylake,+avx512f"), else "host".
inline std::string llvm_cpu() { return getenv_str("TINYT_LLVM_CPU", "host"); }

namespace backend {

/// Host memory in 64-byte aligned blocks (a handle is the pointer itself), freed blocks kept by
/// size for reuse (LruAllocator).
class HostMemory final : public LruAllocator {
 public:
  ~HostMemory() override { release_cache(); }
  void copyin(void* dst, const void* src, size_t n) override { if (n) std::memcpy(dst, src, n); }
  void copyout(void* dst, void* src, size_t n) override { if (n) std::memcpy(dst, src, n); }
  void copy(void* dst, void* src, size_t n) override { if (n) std::memmove(dst, src, n); }
  void* host_pointer(void* handle) override { return handle; }
  void* borrow_host(void* p) override { return p; }

 protected:
  void* allocate(size_t n) override {
    void* p = std::aligned_alloc(64, n);
    if (!p) throw OutOfMemoryError(tinyt::detail::cat("CPU: cannot allocate ", n, " bytes"));
    return p;
  }
  void release(void* p, size_t) override { std::free(p); }
  size_t block_size(size_t n) const override { return std::max<size_t>(64, (n + 63) / 64 * 64); }
};

/// A CPU kernel: its function, and what keeps the code alive (the C compiler's shared object;
/// LLVM's JIT keeps its own code for the process).
class CpuProgram final : public Program {
 public:
  CpuProgram(LLVMJit::Function* fn, std::unique_ptr<CProgram> library) : fn_(fn), library_(std::move(library)) {}
  double launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vars, const LaunchDims& dims, bool timed) override {
    const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    auto** b = const_cast<void**>(bufs.data());
    const auto* v = vars.empty() ? nullptr : reinterpret_cast<const long long*>(vars.data());
    if (const int threads = static_cast<int>(dims.global[0]); threads > 1)
      ThreadPool::instance().run(threads, [&](int i) { fn_(b, v, i, threads); });
    else
      fn_(b, v, 0, 1);
    return timed ? std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() : 0.0;
  }

 private:
  LLVMJit::Function* fn_;
  std::unique_ptr<CProgram> library_;
};

/// The CPU compiler chosen when the CPU device is asked for its parts: LLVM IR becomes an object
/// file (the binary, kept in the disk cache of binaries; loading links it into the JIT); C becomes
/// a shared object in the C compiler's own cache (the binary is its path).
class CpuCompilerPart final : public Compiler {
 public:
  CpuCompilerPart(CpuCompiler which, std::string llvm_target)
      : which_(which),
        llvm_target_(std::move(llvm_target)),
        identity_(which_ == CpuCompiler::llvm ? llvm_jit(llvm_target_).identity() : default_cc().identity()) {}
  std::string identity() const override { return identity_; }
  std::string compile(const std::string& source, const std::string& name) override {
    if (which_ == CpuCompiler::llvm) return llvm_jit(llvm_target_).emit_object(source, name);
    try {
      return default_cc().compile(source);
    } catch (const DeviceError& e) {
      if (tinyt::detail::llvm_unavailable_reason().empty()) throw;
      throw DeviceError(tinyt::detail::cat("tinyt: no CPU compiler can be used.\n", tinyt::detail::llvm_unavailable_reason(), "\n", e.what()));
    }
  }
  bool disk_cacheable() const override { return which_ == CpuCompiler::llvm; }  // the C compiler caches itself
  CpuCompiler which() const { return which_; }
  const std::string& llvm_target() const { return llvm_target_; }

 private:
  CpuCompiler which_;
  std::string llvm_target_;
  std::string identity_;  // read once: a compiler's identity does not change while it lives
};

/// A CPU device: "CPU", or "CPU:N", another device on the same processor with its own memory
/// (buffers, and copies between them as between any two devices; the thread pool is shared), for
/// running and testing multi-device work on one machine. Its compiler follows CPU_LLVM and
/// TINYT_LLVM_CPU as they are when asked.
class CpuDevice final : public Device {
 public:
  explicit CpuDevice(int index = 0) : name_(index == 0 ? "CPU" : tinyt::detail::cat("CPU:", index)) {}
  const std::string& name() const override { return name_; }
  Allocator& allocator() override { return memory_; }
  Compiler& compiler() override {
    const CpuCompiler which = cpu_compiler();
    const std::string target = which == CpuCompiler::llvm ? llvm_cpu() : "";
    // the one asked for last, without the lock: parts live as long as the device
    if (CpuCompilerPart* last = last_.load(std::memory_order_acquire); last && last->which() == which && last->llvm_target() == target)
      return *last;
    std::lock_guard lock(mu_);
    CpuCompilerPart* found = nullptr;
    for (const auto& c : compilers_)
      if (c->which() == which && c->llvm_target() == target) found = c.get();
    if (!found) found = compilers_.emplace_back(std::make_unique<CpuCompilerPart>(which, target)).get();
    last_.store(found, std::memory_order_release);
    return *found;
  }
  Target target() const override {
    static const SimdRegisters simd = host_simd();
    Target t;
    t.language = cpu_compiler() == CpuCompiler::llvm ? Language::llvm_ir : Language::c;
    t.threads = ThreadPool::instance().size();
    t.vector_bytes = simd.bytes, t.vector_count = simd.count;
    // Streaming (non-temporal) stores where the LLVM renderer has them, for outputs of 32 MiB or
    // more (STREAM_BYTES; 0 turns them off): a written-once buffer that big does not stay in cache
    // for the next kernel anyway. Measured on the Sapphire Rapids VM, two threads filling a buffer
    // and then summing it: at 16 MiB plain stores win (1.11 vs 1.34 ms), at 32 MiB they tie
    // (2.35 ms), at 64 MiB streaming wins (4.6 vs 6.0 ms; the fill alone, 4.1 vs 2.2 ms).
    if (t.language == Language::llvm_ir) t.stream_bytes = getenv_int("STREAM_BYTES", int64_t{32} << 20);
    return t;
  }
  std::unique_ptr<Program> load(const std::string& binary, const std::string& name) override {
    if (binary.starts_with(LLVMJit::object_header))  // an object for the JIT (which keeps the code)
      return std::make_unique<CpuProgram>(llvm_jit(llvm_cpu()).load_object(binary), nullptr);
    auto library = std::make_unique<CProgram>(binary, name);
    LLVMJit::Function* fn = library->function();
    return std::make_unique<CpuProgram>(fn, std::move(library));
  }

 private:
  std::string name_;
  HostMemory memory_;
  std::mutex mu_;
  std::vector<std::unique_ptr<CpuCompilerPart>> compilers_;
  std::atomic<CpuCompilerPart*> last_{nullptr};
};

/// The CPU device `index` (CPU, CPU:1, ...: any number of them, each with its own memory).
inline std::unique_ptr<Device> open_cpu(int index) { return std::make_unique<CpuDevice>(index); }

}  // namespace backend
}  // namespace tinyt::inline v0
