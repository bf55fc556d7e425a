// The realize engine: schedules a graph, compiles each kernel once (cached by its AST, so a step
// seen before goes straight to launching), runs the kernels in order, and records where each
// computed value now lives. DEBUG=1 prints the schedule, 2 a line per kernel with its time,
// 4 the generated source.
#pragma once

#include <chrono>
#include <iomanip>
#include <iostream>
#include <map>
#include <tuple>

#include "backend/cpu_cc.hpp"
#include "backend/threadpool.hpp"
#include "codegen/opt/expander.hpp"
#include "codegen/opt/heuristic.hpp"
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
// How kernels are optimized now: NOOPT, BEAM and the thread count, read once per schedule.
struct OptSettings {
  int64_t noopt, beam, threads;
  bool operator==(const OptSettings&) const = default;
  static OptSettings current() {
    return {getenv_int("NOOPT", 0), getenv_int("BEAM", 0), backend::ThreadPool::instance().size()};
  }
};

// The AST with its opts applied and its registers expanded, linearized.
inline codegen::Program optimize_and_linearize(const UOp& ast, const OptSettings& settings) {
  std::vector<codegen::Opt> opts;
  if (!settings.noopt) opts = codegen::hand_coded_opts(ast, settings.threads);
  codegen::Program p = codegen::linearize(codegen::expand_registers(codegen::apply_opts(ast, opts)),
                                          schedule::detail::kernel_name(ast));
  p.opts = std::move(opts);
  return p;
}

// Compiled kernels by AST and opt settings. ASTs are interned, so a kernel seen before is one
// lookup; the map holds its AST so the key stays valid.
class KernelCache {
 public:
  std::shared_ptr<CompiledKernel> get(const UOp& ast, const OptSettings& settings) {
    const Key key{ast.get(), settings.noopt, settings.beam, settings.threads};
    {
      std::lock_guard lock(mu_);
      if (auto it = map_.find(key); it != map_.end()) return it->second.second;
    }
    auto k = std::make_shared<CompiledKernel>();
    k->program = optimize_and_linearize(ast, settings);
    k->source = renderer::render_c(k->program);
    if (debug_level() >= 4) std::cerr << k->source << "\n";
    const std::string path = backend::default_cc().compile(k->source);
    k->binary = std::make_unique<backend::CProgram>(path, k->program.name);
    std::lock_guard lock(mu_);
    return map_.try_emplace(key, ast, k).first->second.second;
  }

 private:
  using Key = std::tuple<const UOpNode*, int64_t, int64_t, int64_t>;
  std::mutex mu_;
  std::map<Key, std::pair<UOp, std::shared_ptr<CompiledKernel>>> map_;
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
  const detail::OptSettings settings = detail::OptSettings::current();
  for (const schedule::Kernel& k : kernels) {
    for (const UOp& b : k.buffers) Device::require(graph::device_of(b));
    std::shared_ptr<CompiledKernel> ck = detail::kernel_cache().get(k.ast, settings);
    if (debug >= 3) std::cerr << "  " << ck->program.name << " opts: " << codegen::to_string(ck->program.opts) << "\n";
    if (debug >= 5) std::cerr << to_string(k.ast);
    if (debug >= 6)
      for (const UOp& u : ck->program.ops) std::cerr << "    " << op_name(u.op()) << " " << u.dtype().name() << "\n";
    std::vector<void*> ptrs;
    for (const UOp& b : k.buffers) ptrs.push_back(graph::buffer_of(b)->ptr());
    const auto start = std::chrono::steady_clock::now();
    if (const int threads = static_cast<int>(ck->program.threads); threads > 1)
      backend::ThreadPool::instance().run(threads, [&](int i) { (*ck->binary)(ptrs.data(), nullptr, i, threads); });
    else
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
