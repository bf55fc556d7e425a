// The realize engine: schedules a graph, compiles each kernel once (cached by its AST, so a step
// seen before goes straight to launching), runs the kernels in order, and records where each
// computed value now lives. DEBUG=1 prints the schedule, 2 a line per kernel with its time and
// rates (engine/estimates.hpp), 4 the generated source.
#pragma once

#include <chrono>
#include <iomanip>
#include <iostream>
#include <map>
#include <thread>
#include <tuple>

#include "backend/cpu_cc.hpp"
#include "backend/cpu_llvm.hpp"
#include "backend/host_simd.hpp"
#include "backend/threadpool.hpp"
#include "codegen/decompositions.hpp"
#include "codegen/opt/expander.hpp"
#include "codegen/opt/heuristic.hpp"
#include "codegen/opt/search.hpp"
#include "engine/estimates.hpp"
#include "helpers.hpp"
#include "renderer/cstyle.hpp"
#include "renderer/llvmir.hpp"
#include "schedule/cache.hpp"
#include "support.hpp"

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
/// The identity of a CPU compiler (version, flags, target CPU): part of every on-disk cache key.
inline std::string compiler_identity(CpuCompiler c, const std::string& llvm_target = llvm_cpu()) {
  return c == CpuCompiler::llvm ? backend::llvm_jit(llvm_target).identity() : backend::default_cc().identity();
}

/// A kernel ready to launch.
struct CompiledKernel {
  codegen::Program program;
  std::string source;  // LLVM IR or C
  CpuCompiler compiler;
  engine::Estimates estimates;  // what one launch costs, counted once here
  backend::LLVMJit::Function* function = nullptr;
  std::unique_ptr<backend::CProgram> library;  // the C path's shared object, which holds `function`
};

/// Compiles a kernel AST with `opts` applied (its registers expanded) for the CPU.
inline std::shared_ptr<CompiledKernel> compile_kernel(const UOp& ast, std::vector<codegen::Opt> opts,
                                                      CpuCompiler compiler = cpu_compiler(),
                                                      const std::string& llvm_target = llvm_cpu()) {
  auto k = std::make_shared<CompiledKernel>();
  ++GlobalCounters::compile_count;
  UOp expanded = codegen::expand_registers(codegen::apply_opts(ast, opts));
  // TRANSCENDENTAL=0 keeps the libm calls; 1 (default) decomposes them so the kernel vectorizes
  if (getenv_int("TRANSCENDENTAL", 1))
    expanded = graph_rewrite(graph_rewrite(expanded, codegen::transcendental_rules()), codegen::kernel_rules());
  expanded = graph_rewrite(expanded, codegen::division_rules());  // for both renderers: x/0 is 0
  k->program = codegen::linearize(expanded, schedule::detail::kernel_name(ast));
  k->program.opts = std::move(opts);
  k->estimates = engine::estimate(k->program);
  k->compiler = compiler;
  if (compiler == CpuCompiler::llvm) {
    k->source = renderer::render_llvm(k->program);
    if (debug_level() >= 4) std::cerr << k->source << "\n";
    k->function = backend::llvm_jit(llvm_target).compile(k->source, k->program.name);
    return k;
  }
  k->source = renderer::render_c(k->program);
  if (debug_level() >= 4) std::cerr << k->source << "\n";
  try {
    k->library = std::make_unique<backend::CProgram>(backend::default_cc().compile(k->source), k->program.name);
  } catch (const DeviceError& e) {
    if (detail::llvm_unavailable_reason().empty()) throw;
    throw DeviceError(detail::cat("tinyt: no CPU compiler can be used.\n", detail::llvm_unavailable_reason(), "\n", e.what()));
  }
  k->function = k->library->function();
  return k;
}

/// Runs a compiled kernel on its buffers, split over as many threads as its program says.
inline void launch(const CompiledKernel& k, void* const* bufs) {
  auto* fn = k.function;
  auto** b = const_cast<void**>(bufs);
  if (const int threads = static_cast<int>(k.program.threads); threads > 1)
    backend::ThreadPool::instance().run(threads, [&](int i) { fn(b, nullptr, i, threads); });
  else
    fn(b, nullptr, 0, 1);
}

namespace detail {
// How kernels are optimized and compiled now: NOOPT, BEAM, the thread count, TRANSCENDENTAL,
// the compiler and LLVM's target CPU (empty for the C compiler), read once per schedule.
struct OptSettings {
  int64_t noopt, beam, threads, transcendental;
  CpuCompiler compiler;
  std::string llvm_target;
  bool operator==(const OptSettings&) const = default;
  static OptSettings current() {
    const CpuCompiler compiler = cpu_compiler();
    return {getenv_int("NOOPT", 0), getenv_int("BEAM", 0), backend::ThreadPool::instance().size(),
            getenv_int("TRANSCENDENTAL", 1), compiler, compiler == CpuCompiler::llvm ? llvm_cpu() : ""};
  }
};

// Seconds of the fastest of a few runs of `ast` with `opts`, on scratch copies of its buffers
// (a candidate must not touch real data: the kernel may write in place); infinity when the
// candidate does not compile.
inline double time_candidate(const UOp& ast, const std::vector<codegen::Opt>& opts, const std::vector<UOp>& buffers,
                             const OptSettings& settings) {
  std::shared_ptr<CompiledKernel> k;
  try {
    k = compile_kernel(ast, opts, settings.compiler, settings.llvm_target);
  } catch (const CompileError&) {
    return INFINITY;
  }
  std::vector<std::unique_ptr<Buffer>> scratch;
  std::vector<void*> ptrs;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const std::shared_ptr<Buffer>& real = graph::buffer_of(buffers[i]);
    scratch.push_back(std::make_unique<Buffer>(real->device(), real->size(), real->dtype()));
    if (i > 0) std::memcpy(scratch.back()->ptr(), real->ptr(), real->nbytes());
    ptrs.push_back(scratch.back()->ptr());
  }
  double best = INFINITY;
  for (int run = 0; run < 3; ++run) {
    const auto start = std::chrono::steady_clock::now();
    launch(*k, ptrs.data());
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// BEAM's choice for a kernel, from the on-disk cache when it searched this kernel before with
// the same width, threads and compiler.
inline std::vector<codegen::Opt> beam_opts(const UOp& ast, const std::vector<UOp>& buffers, const OptSettings& settings) {
  const std::string key = detail::Hash128()
                              .update(to_string(ast))
                              .update(cat("|beam ", settings.beam, " threads ", settings.threads, " transcendental ", settings.transcendental, "|"))
                              .update(compiler_identity(settings.compiler, settings.llvm_target))
                              .hex();
  const std::filesystem::path dir = backend::CCompiler::default_cache_dir() / "beam", file = dir / (key + ".opts");
  if (auto text = detail::read_file(file))
    if (auto opts = codegen::deserialize_opts(*text)) return *opts;
  const auto start = std::chrono::steady_clock::now();
  std::vector<codegen::Opt> opts = codegen::beam_search(ast, settings.beam, settings.threads, [&](const std::vector<codegen::Opt>& o) {
    return time_candidate(ast, o, buffers, settings);
  });
  if (debug_level() >= 1)
    std::cerr << "beam: " << schedule::detail::kernel_name(ast) << " -> " << codegen::to_string(opts) << " in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  // a name of this process and thread: two threads may finish searching the same kernel at once
  const std::string tmp = cat(file.string(), ".tmp", ::getpid(), ".", std::hash<std::thread::id>()(std::this_thread::get_id()));
  if (!error && std::ofstream(tmp) << codegen::serialize(opts)) std::filesystem::rename(tmp, file, error);
  return opts;  // a cache that cannot be written costs a search next time, nothing else
}

inline std::vector<codegen::Opt> choose_opts(const UOp& ast, const std::vector<UOp>& buffers, const OptSettings& settings) {
  if (settings.noopt) return {};
  if (settings.beam > 0) return beam_opts(ast, buffers, settings);
  static const backend::SimdRegisters simd = backend::host_simd();
  return codegen::hand_coded_opts(ast, {settings.threads, simd.bytes, simd.count});
}

// Compiled kernels by AST and opt settings. ASTs are interned, so a kernel seen before is one
// lookup; the map holds its AST so the key stays valid.
class KernelCache {
 public:
  std::shared_ptr<CompiledKernel> get(const UOp& ast, const std::vector<UOp>& buffers, const OptSettings& settings) {
    const Key key{ast.get(), settings.noopt, settings.beam, settings.threads, settings.transcendental, settings.compiler, settings.llvm_target};
    {
      std::lock_guard lock(mu_);
      if (auto it = map_.find(key); it != map_.end()) return it->second.second;
    }
    std::shared_ptr<CompiledKernel> k = compile_kernel(ast, choose_opts(ast, buffers, settings), settings.compiler, settings.llvm_target);
    std::lock_guard lock(mu_);
    return map_.try_emplace(key, ast, k).first->second.second;
  }

 private:
  using Key = std::tuple<const UOpNode*, int64_t, int64_t, int64_t, int64_t, CpuCompiler, std::string>;
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
    std::shared_ptr<CompiledKernel> ck = detail::kernel_cache().get(k.ast, k.buffers, settings);
    if (debug >= 3) std::cerr << "  " << ck->program.name << " opts: " << codegen::to_string(ck->program.opts) << "\n";
    if (debug >= 5) std::cerr << to_string(k.ast);
    if (debug >= 6)
      for (const UOp& u : ck->program.ops) std::cerr << "    " << op_name(u.op()) << " " << u.dtype().name() << "\n";
    std::vector<void*> ptrs;
    for (const UOp& b : k.buffers) ptrs.push_back(graph::buffer_of(b)->ptr());
    const auto start = std::chrono::steady_clock::now();
    launch(*ck, ptrs.data());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int64_t number = ++GlobalCounters::kernel_count;
    GlobalCounters::global_ops += ck->estimates.ops;
    GlobalCounters::global_mem += ck->estimates.mem;
    GlobalCounters::time_sum_s += seconds;
    if (debug >= 2)
      std::cerr << engine::kernel_line(graph::device_of(k.buffers[0]), number, ck->program.name, k.buffers.size(),
                                       ck->estimates, seconds) << "\n";
    if (k.in_place) graph::buffer_of(k.buffers[0])->overwritten();
    if (!k.temporary) graph::set_realized(k.computes, k.view);
  }
}

/// Computes the roots (and what they need); afterwards each root has a realized view.
inline void realize_uops(const std::vector<UOp>& roots) { run_schedule(schedule::create_schedule(roots)); }

}  // namespace tinyt::inline v0
