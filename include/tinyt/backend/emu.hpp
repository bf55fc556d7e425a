// EMU: a GPU emulated on the CPU, exact and slow, so GPU code generation is tested where no GPU
// is (tinygrad's PYTHON device with EMULATE). It runs a kernel's linearized program, as the
// listing renderer writes it (renderer/listing.hpp), with a GPU's semantics: a grid of work-groups
// of work-items, each work-item with its own registers, each work-group with its own local
// memory. The work-items of a group run in lockstep, one op at a time for all of them, so a
// barrier is where they all are; loops must be uniform across a group (their bounds are). A
// warp is `warp` consecutive work-items of a group (by x, then y, then z, as CUDA numbers them);
// a shuffle (SHFL_XOR) reads the register of another lane of the warp.
//
// It checks what a GPU would silently get wrong: an access outside a global buffer or a local
// array, a read of local memory another work-item wrote with no barrier between (or a write over
// what another read or wrote), two work-items writing one element of a global buffer, a launch
// past the emulated device's limits, more local memory than it has. Each is a DeviceError naming
// the kernel, the op, the buffer, the element and the work-items. Memory starts out holding
// garbage (0xA5 bytes), as a GPU's does, so a kernel that reads what nobody wrote shows.
//
// EMU_TARGET names what is emulated (Spec): `cuda_sm80` (the default: warps of 32, 1024 threads a
// block, 48 KiB of shared memory, 108 multiprocessors) or `cl` (an OpenCL GPU without
// sub-groups or tensor cores). The code generator sees the target a real device of that kind
// would give it, so EMU runs the very kernels that device would.
//
// In three parts: emu_listing.hpp (the device emulated, values and their arithmetic, a listing
// parsed), emu_launch.hpp (memory, and one launch run), and this file (the device's parts).
#pragma once

#include <chrono>
#include <iostream>
#include <memory>

#include "compiled.hpp"
#include "emu_launch.hpp"
#include "emu_listing.hpp"

namespace tinyt::inline v0 {
namespace backend {
namespace emu {

/// A kernel loaded on EMU: runs its work-groups one after another.
class Program final : public backend::Program {
 public:
  Program(Kernel kernel, Spec spec, Memory& memory) : k_(std::move(kernel)), spec_(std::move(spec)), memory_(memory) {}

  double launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vars, const LaunchDims& dims, bool) override {
    const auto start = std::chrono::steady_clock::now();
    Launch run(k_, spec_, memory_, bufs, vars, dims);
    run.all_groups();
    stats_ += run.stats();
    if (debug_level() >= 3) print(run.stats());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  /// The memory accesses of every launch of the program so far (AccessStats).
  const AccessStats& stats() const { return stats_; }

  // DEBUG=3: what a launch's accesses would cost a GPU's memory
  void print(const AccessStats& s) const {
    const auto global = [](const AccessStats::Global& g) {
      return tinyt::detail::cat(g.requests, " by warps, ", g.sectors, " sectors, ", static_cast<int>(100 * g.efficiency() + 0.5), "% used");
    };
    const auto local = [](const AccessStats::Local& l) { return tinyt::detail::cat(l.requests, " by warps, ", l.wavefronts, " bank cycles (fewest ", l.fewest, ")"); };
    std::cerr << "EMU " << k_.name << ": global reads " << global(s.global_loads) << "; writes " << global(s.global_stores) << "; local reads "
              << local(s.local_loads) << "; writes " << local(s.local_stores) << "\n";
  }

 private:
  Kernel k_;
  Spec spec_;
  Memory& memory_;
  AccessStats stats_;
};

/// EMU's compiler: a listing is parsed and checked; the binary is the listing itself.
class Compiler final : public backend::Compiler {
 public:
  explicit Compiler(Spec spec) : spec_(std::move(spec)) {}
  std::string identity() const override { return "EMU " + spec_.name + " listing 1"; }
  std::string compile(const std::string& source, const std::string&) override {
    (void)parse(source, spec_);
    return source;
  }
  bool disk_cacheable() const override { return false; }  // nothing to save: parsing is the compile

 private:
  Spec spec_;
};

/// The emulated GPU EMU (or EMU:n, each its own memory).
class Device final : public backend::Device {
 public:
  Device(int index, Spec spec)
      : name_(index == 0 ? "EMU" : tinyt::detail::cat("EMU:", index)), spec_(std::move(spec)), compiler_(spec_) {}
  const std::string& name() const override { return name_; }
  Allocator& allocator() override { return memory_; }
  backend::Compiler& compiler() override { return compiler_; }
  Target target() const override {
    Target t;
    t.language = Language::listing;
    t.gpu = true;
    t.max_local = spec_.launch_local;
    t.compute_units = spec_.compute_units;
    t.warp = spec_.warp;
    t.tensor_cores = spec_.tensor_cores;
    t.half = spec_.name != "cl";
    return t;
  }
  std::unique_ptr<backend::Program> load(const std::string& binary, const std::string&) override {
    return std::make_unique<Program>(parse(binary, spec_), spec_, memory_);
  }
  /// What this device emulates.
  const Spec& spec() const { return spec_; }

 private:
  std::string name_;
  Spec spec_;
  Memory memory_;
  Compiler compiler_;
};

}  // namespace emu

/// The emulated GPU EMU:`index` (up to EMU:7), emulating $EMU_TARGET.
inline std::unique_ptr<Device> open_emu(int index) {
  if (index < 0 || index > 7) throw DeviceError(tinyt::detail::cat("EMU:", index, ": EMU has devices EMU to EMU:7"));
  return std::make_unique<emu::Device>(index, emu::spec(getenv_str("EMU_TARGET", "cuda_sm80")));
}

}  // namespace backend
}  // namespace tinyt::inline v0
