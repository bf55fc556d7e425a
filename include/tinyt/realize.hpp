// The realize engine: schedules a graph, compiles each kernel once (cached by its AST, so a step
// seen before goes straight to launching), runs the kernels in order, and records where each
// computed value now lives. DEBUG=1 prints the schedule, 2 a line per kernel with its time,
// 4 the generated source.
#pragma once

#include <chrono>
#include <iomanip>
#include <iostream>

#include "backend/cpu_cc.hpp"
#include "helpers.hpp"
#include "renderer/cstyle.hpp"
#include "schedule/schedule.hpp"

namespace tinyt::inline v0 {

/// A kernel ready to launch.
struct CompiledKernel {
  codegen::Program program;
  std::string source;
  std::unique_ptr<backend::CProgram> binary;
};

namespace detail {
// Compiled kernels by AST. ASTs are interned, so a kernel seen before is one lookup; the map
// holds its AST so the key stays valid.
class KernelCache {
 public:
  std::shared_ptr<CompiledKernel> get(const UOp& ast) {
    {
      std::lock_guard lock(mu_);
      if (auto it = map_.find(ast.get()); it != map_.end()) return it->second.second;
    }
    auto k = std::make_shared<CompiledKernel>();
    k->program = codegen::linearize(ast, schedule::detail::kernel_name(ast));
    k->source = renderer::render_c(k->program);
    if (debug_level() >= 4) std::cerr << k->source << "\n";
    const std::string path = backend::default_cc().compile(k->source);
    k->binary = std::make_unique<backend::CProgram>(path, k->program.name);
    std::lock_guard lock(mu_);
    return map_.try_emplace(ast.get(), ast, k).first->second.second;
  }

 private:
  std::mutex mu_;
  std::unordered_map<const UOpNode*, std::pair<UOp, std::shared_ptr<CompiledKernel>>> map_;
};
inline KernelCache& kernel_cache() {
  static auto* cache = new KernelCache;  // never destroyed: kernels may run during static teardown
  return *cache;
}
}  // namespace detail

/// Runs a schedule: compiles (or finds) each kernel and launches it on its buffers.
inline void run_schedule(const std::vector<schedule::Kernel>& kernels) {
  const int debug = debug_level();
  if (debug >= 1 && !kernels.empty()) {
    size_t bytes = 0;
    for (const schedule::Kernel& k : kernels) bytes += graph::buffer_of(k.buffers[0])->nbytes();
    std::cerr << "schedule: " << kernels.size() << " kernel(s), " << std::fixed << std::setprecision(2)
              << static_cast<double>(bytes) / 1e6 << " MB written\n";
  }
  for (const schedule::Kernel& k : kernels) {
    for (const UOp& b : k.buffers) Device::require(graph::device_of(b));
    std::shared_ptr<CompiledKernel> ck = detail::kernel_cache().get(k.ast);
    if (debug >= 3) std::cerr << "  " << ck->program.name << " opts: none (the kernel optimizer is not in this build)\n";
    if (debug >= 5) std::cerr << to_string(k.ast);
    if (debug >= 6)
      for (const UOp& u : ck->program.ops) std::cerr << "    " << op_name(u.op()) << " " << u.dtype().name() << "\n";
    std::vector<void*> ptrs;
    for (const UOp& b : k.buffers) ptrs.push_back(graph::buffer_of(b)->ptr());
    const auto start = std::chrono::steady_clock::now();
    (*ck->binary)(ptrs.data(), nullptr);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++GlobalCounters::kernel_count;
    GlobalCounters::time_sum_s += seconds;
    if (debug >= 2)
      std::cerr << "  " << std::left << std::setw(28) << ck->program.name << " " << k.buffers.size() << " buffers  "
                << std::fixed << std::setprecision(2) << seconds * 1e6 << " us\n";
    if (k.in_place) graph::buffer_of(k.buffers[0])->overwritten();
    if (!k.temporary) graph::set_realized(k.computes, k.view);
  }
}

/// Computes the roots (and what they need); afterwards each root has a realized view.
inline void realize_uops(const std::vector<UOp>& roots) { run_schedule(schedule::create_schedule(roots)); }

}  // namespace tinyt::inline v0
