// The engine: a schedule becomes a list of exec items, each a runner (a compiled kernel, a copy
// between buffers, an allreduce across processes: runners.hpp), the buffers it runs on and the
// values of its symbolic variables; running the list launches them in order on their devices.
// Kernels are compiled once per device and settings, cached by their AST (ASTs are interned, so
// a step seen before goes straight to launching). TinyJit records and replays such a list.
//
// DEBUG=1 prints the schedule, 2 a line per launch with its time and rates (estimates.hpp),
// 3 each kernel's opts, 4 the generated source, 5 the AST, 6 the linearized ops.
#pragma once

#include <chrono>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <tuple>

#include "../backend/devices.hpp"
#include "../buffer.hpp"
#include "../codegen/decompositions.hpp"
#include "../codegen/opt/expander.hpp"
#include "../codegen/opt/heuristic.hpp"
#include "../codegen/opt/search.hpp"
#include "../codegen/ldmatrix.hpp"
#include "../codegen/masked_vectors.hpp"
#include "../codegen/split_masked.hpp"
#include "../codegen/work_items.hpp"
#include "../helpers.hpp"
#include "../renderer/cstyle.hpp"
#include "../renderer/cuda.hpp"
#include "../renderer/listing.hpp"
#include "../renderer/llvmir.hpp"
#include "../renderer/opencl.hpp"
#include "../renderer/wgsl.hpp"
#include "../schedule/cache.hpp"
#include "../support.hpp"
#include "estimates.hpp"
#include "profiler.hpp"
#include "replay.hpp"
#include "runners.hpp"

namespace tinyt::inline v0 {
namespace engine {

/// How kernels are optimized and compiled now for one device: NOOPT, BEAM, TRANSCENDENTAL, TC, TF32, what
/// the code generator must know of the device, and its compiler's identity. Read once per
/// schedule and device; part of the kernel cache's key.
struct OptSettings {
  std::string device;
  int64_t noopt = 0, beam = 0, transcendental = 1, tc = 1, tf32 = 0;
  backend::Target target;
  std::string compiler;
  static OptSettings current(const std::string& device) {
    backend::Device& d = backend::device(device);
    return {d.name(), getenv_int("NOOPT", 0), getenv_int("BEAM", 0), getenv_int("TRANSCENDENTAL", 1), getenv_int("TC", 1),
            getenv_int("TF32", 0), d.target(), d.compiler().identity()};
  }
  auto key() const {
    return std::tuple(device, noopt, beam, transcendental, tc, tf32, target.language, target.threads, target.max_local,
                      target.warp, target.tensor_cores, target.stream_bytes, compiler);
  }
};

/// A kernel compiled for a device, ready to launch.
struct CompiledKernel {
  codegen::Program program;
  std::string source;  // C, LLVM IR, OpenCL C, CUDA C++ or a listing (EMU)
  std::string device;
  backend::Language language = backend::Language::c;
  Estimates estimates;  // what one launch costs, counted once here
  std::unique_ptr<backend::Program> runtime;

  /// The launch with the variables' values `vars`: the work-items of a GPU kernel (a symbolic
  /// dimension as wide as its value), the threads of a CPU one.
  backend::LaunchDims dims(const std::vector<int64_t>& vars = {}) const {
    if (program.global_axes.empty()) return {{program.threads, 1, 1}, {1, 1, 1}};
    const auto& symbolic = program.symbolic_global;
    if (std::any_of(symbolic.begin(), symbolic.end(), [](const UOp& s) { return bool(s); })) {
      const auto [global, local] = codegen::launch_sizes(program, vars);
      // (a WGSL shader's work-group size is part of its source: a symbolic dimension's is 1 there)
      if (language == backend::Language::wgsl) return {global, program.local_size};
      return {global, local};
    }
    return {program.global_size, program.local_size};
  }
  /// Launches it on device handles with the variables' values `vars` (nothing runs where a symbolic
  /// size is 0); its time in seconds when `timed`.
  double run(const std::vector<void*>& handles, const std::vector<int64_t>& vars, bool timed) const {
    const backend::LaunchDims d = dims(vars);
    if (d.global[0] * d.global[1] * d.global[2] == 0) return 0;
    return runtime->launch(handles, vars, d, timed);
  }
};

/// The source of a program in the language a device's compiler takes.
inline std::string render(const codegen::Program& p, const backend::Target& target) {
  switch (target.language) {
    case backend::Language::c: return renderer::render_c(p);
    case backend::Language::llvm_ir: return renderer::render_llvm(p);
    case backend::Language::opencl: return renderer::render_opencl(p);
    case backend::Language::cuda: return renderer::render_cuda(p, target.max_local);
    case backend::Language::listing: return renderer::render_listing(p);
    case backend::Language::wgsl: return renderer::render_wgsl(p);
  }
  throw InternalError("render: unknown language");
}

/// The program of a kernel AST with `opts` applied, lowered for `target` (registers expanded,
/// transcendentals decomposed unless TRANSCENDENTAL=0, division made safe, work-items on a GPU).
inline codegen::Program lower_kernel(const UOp& ast, std::vector<codegen::Opt> opts, const backend::Target& target,
                                     bool transcendental) {
  const auto has = [&](codegen::OptOp op) { return std::any_of(opts.begin(), opts.end(), [&](const codegen::Opt& o) { return o.op == op; }); };
  if (target.gpu && has(codegen::OptOp::PACK))
    throw codegen::OptError("PACK: a GPU's work-items share local memory; a copy of one thread's own is for CPUs");
  if (!target.gpu && has(codegen::OptOp::STAGE)) throw codegen::OptError("STAGE: a copy shared by a work-group is for GPUs");
  const bool recording = viz::enabled();  // the lowering steps between rewrites, for VIZ
  const UOp optimized = codegen::apply_opts(ast, opts);
  if (recording) viz::snapshot("apply_opts " + codegen::to_string(opts), ast, optimized);
  // (a CPU's loops, split where their masks hold, vectorize there)
  UOp expanded = codegen::expand_registers(target.gpu ? optimized : codegen::split_masked_loops(optimized), target.stream_bytes);
  if (recording) viz::snapshot("expand_registers", optimized, expanded);
  // (Not in WGSL, which takes the device's exp2, log2 and sin, as tinygrad's WebGPU renderer does:
  // its compilers may reassociate float math, undoing the decompositions' rounding steps, and sin
  // reduces its argument in float64, which WebGPU lacks.)
  if (transcendental && target.language != backend::Language::wgsl)  // (simplified again only where a decomposition changed something)
    if (UOp decomposed = graph_rewrite(expanded, codegen::transcendental_rules()); decomposed != expanded)
      expanded = graph_rewrite(decomposed, codegen::kernel_rules());
  expanded = graph_rewrite(expanded, codegen::division_rules());  // for every renderer: x/0 is 0
  if (codegen::warp_range(expanded) && !(target.gpu && target.tensor_cores && target.warp == TensorCore::warp))
    throw codegen::OptError("TC: the device has no tensor cores");
  expanded = codegen::ldmatrix_fragments(expanded, codegen::warp_range(expanded));  // (TC's fragments in local memory)
  const UOp lane = codegen::group_range(expanded);
  if (lane && (!target.gpu || codegen::range_size(lane) > target.max_local))
    throw codegen::OptError(tinyt::detail::cat("GROUP of ", codegen::range_size(lane), ": the device ",
                                               target.gpu ? "groups fewer work-items" : "has no work-groups"));
  if (target.gpu) {
    const UOp on_cpu = expanded;
    expanded = codegen::map_work_items(codegen::lower_groups(codegen::lower_narrow_floats(expanded), target.warp));
    if (recording) viz::snapshot("work-items (narrow floats, groups, map_work_items)", on_cpu, expanded);
  }
  // (LLVM IR has masked vector loads and stores; its target is a CPU's)
  if (target.language == backend::Language::llvm_ir) expanded = codegen::masked_vectors(expanded, target.vector_bytes);
  codegen::Program p = codegen::linearize(expanded, schedule::detail::kernel_name(ast));
  p.opts = std::move(opts);
  // a grouped kernel's work-group is its dimension 0, whole; a kernel's own (LOCAL, STAGE) are as made;
  // otherwise divisors of the sizes
  if (target.gpu) {
    // a symbolic dimension's work-groups are chosen at each launch (codegen::launch_sizes)
    std::array<int64_t, 3> fixed = p.global_size;
    for (size_t d = 0; d < 3; ++d)
      if (p.symbolic_global[d]) fixed[d] = 1;
    if (p.fixed_local) {
      if (p.local_size[0] * p.local_size[1] * p.local_size[2] > target.max_local)
        throw codegen::OptError(tinyt::detail::cat("LOCAL: work-groups of ", p.local_size[0], "x", p.local_size[1], "x", p.local_size[2],
                                                   "; the device groups at most ", target.max_local, " work-items"));
    } else {
      p.local_size = lane ? std::array<int64_t, 3>{p.global_size[0], 1, 1} : codegen::local_sizes(fixed, target.max_local);
    }
    p.max_local = target.max_local;
  }
  return p;
}

/// A process replay record's kernel lowered and rendered again by the code at hand.
inline std::string rerender(const replay::Record& r) {
  return render(lower_kernel(r.ast, r.opts, r.target, r.transcendental), r.target);
}

/// Compiles a kernel AST with `opts` applied for the device of `settings`.
inline std::shared_ptr<CompiledKernel> compile_kernel(const UOp& ast, std::vector<codegen::Opt> opts,
                                                      const OptSettings& settings) {
  auto k = std::make_shared<CompiledKernel>();
  ++GlobalCounters::compile_count;
  const auto start = std::chrono::steady_clock::now();
  const bool profiling = profile::enabled();
  const std::string name = schedule::detail::kernel_name(ast);
  const viz::Scope scope("kernel " + name, viz::Scope::join);  // KernelCache::get opened it
  {
    profile::Span span("codegen " + name, "codegen", profiling);
    if (span.on()) span.arg("opts", json::quote(codegen::to_string(opts)));
    k->program = lower_kernel(ast, std::move(opts), settings.target, settings.transcendental);
    k->estimates = estimate(k->program);
    k->device = settings.device;
    k->language = settings.target.language;
    k->source = render(k->program, settings.target);
  }
  if (debug_level() >= 4) {
    std::cerr << k->source << "\n";
    // EMU's listing, and the source the GPU it emulates would compile: CUDA where it has warps
    if (settings.target.language == backend::Language::listing)
      std::cerr << (settings.target.warp ? renderer::render_cuda(k->program, settings.target.max_local) : renderer::render_opencl(k->program)) << "\n";
  }
  backend::Device& d = backend::device(settings.device);
  {
    profile::Span span("compile " + name, "compile", profiling);
    if (span.on()) span.arg("device", json::quote(settings.device));
    k->runtime = d.load(backend::cached_compile(d.compiler(), k->source, k->program.name), k->program.name);
  }
  if (viz::enabled()) viz::record(viz::Kernel{name, settings.device, codegen::to_string(k->program.opts), k->source, ast});
  if (const std::string dir = getenv_str("PROCESS_REPLAY"); !dir.empty())
    replay::capture(dir, {name, ast, k->program.opts, settings.target, settings.transcendental != 0, k->source});
  if (debug_level() >= 2)
    std::cerr << "compiled " << k->program.name << " for " << settings.device << " in " << std::fixed << std::setprecision(2)
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e3 << " ms\n";
  return k;
}
/// Compiles a kernel AST with `opts` for a device as the settings are now (the CPU by default).
inline std::shared_ptr<CompiledKernel> compile_kernel(const UOp& ast, std::vector<codegen::Opt> opts,
                                                      const std::string& device = "CPU") {
  return compile_kernel(ast, std::move(opts), OptSettings::current(device));
}

/// Launches a compiled kernel on device handles (host pointers on the CPU) and waits for it;
/// returns its time in seconds.
inline double launch(const CompiledKernel& k, const std::vector<void*>& handles, const std::vector<int64_t>& vars = {}) {
  return k.run(handles, vars, true);
}

/// Runs a compiled kernel.
class CompiledRunner final : public Runner {
 public:
  explicit CompiledRunner(std::shared_ptr<CompiledKernel> kernel) : kernel_(std::move(kernel)) {}
  double run(const std::vector<Buffer*>& bufs, const std::vector<int64_t>& vars, bool timed) override {
    // the kernel's parameters: trailing buffers whose every load was simplified away are not among them
    const size_t params = std::min(bufs.size(), kernel_->program.globals.size());
    std::vector<void*> handles;
    handles.reserve(params);
    for (size_t i = 0; i < params; ++i) handles.push_back(bufs[i]->ptr());
    return kernel_->run(handles, vars, timed);
  }
  const std::string& name() const override { return kernel_->program.name; }
  Estimates estimates() const override { return kernel_->estimates; }
  const CompiledKernel& kernel() const { return *kernel_; }

 private:
  std::shared_ptr<CompiledKernel> kernel_;
};

/// One step of a schedule ready to run: a runner, its buffers (output first), its variables.
struct ExecItem {
  std::shared_ptr<Runner> runner;
  std::vector<std::shared_ptr<Buffer>> buffers;
  std::vector<int64_t> vars;
  std::string device;  // where it runs (a copy: where it copies to)
};

/// An exec item as TinyJit records it: the item, its kernel's variables (in the order its values
/// go), and whether it overwrites memory in place.
struct CapturedItem {
  ExecItem item;
  std::vector<UOp> vars;
  bool in_place = false;
};
/// Where this thread's launches are recorded while a TinyJit captures (null: not recording).
inline std::vector<CapturedItem>*& capture_sink() {
  thread_local std::vector<CapturedItem>* sink = nullptr;
  return sink;
}
/// Memory the host fills anew at every call of a step (a random op's key): a replay calls `fill`
/// and copies its bytes in before launching, as running the step would.
struct HostFill {
  std::shared_ptr<Buffer> buffer;
  std::function<std::vector<uint8_t>()> fill;
};
/// Where this thread's host fills are recorded while a TinyJit captures (null: not recording).
inline std::vector<HostFill>*& host_fill_sink() {
  thread_local std::vector<HostFill>* sink = nullptr;
  return sink;
}

/// A check the host makes on values a step computed (CHECK_OOB's index check): a replay calls
/// `check` once the items recorded before it have run, where running the step made it.
struct HostCheck {
  size_t after = 0;                            // how many recorded items run before it
  std::vector<std::shared_ptr<Buffer>> reads;  // the memory it reads: kept out of the replay's memory plan
  std::function<void()> check;                 // throws what running the step would have thrown
};
/// Where this thread's host checks are recorded while a TinyJit captures (null: not recording).
inline std::vector<HostCheck>*& host_check_sink() {
  thread_local std::vector<HostCheck>* sink = nullptr;
  return sink;
}

namespace detail {
// Seconds of the fastest of a few runs of `ast` with `opts`, on scratch copies of its buffers
// (a candidate must not touch real data: the kernel may write in place); infinity when the
// candidate does not compile. A first run slower than `hopeless` is the answer: such a candidate
// will not be kept, and on a GPU a slow candidate of a big kernel costs a good part of a second.
inline double time_candidate(const UOp& ast, const std::vector<codegen::Opt>& opts, const std::vector<UOp>& buffers,
                             const OptSettings& settings, double hopeless = INFINITY) {
  for (const codegen::Opt& o : opts)  // TC=0: no tensor cores, also where BEAM searches; TF32 only with TF32=1
    if (o.op == codegen::OptOp::TC && (!settings.tc || (o.amount == 1 && !settings.tf32))) return INFINITY;
  std::shared_ptr<CompiledKernel> k;
  try {
    k = compile_kernel(ast, opts, settings);
  } catch (const CompileError&) {
    return INFINITY;
  } catch (const codegen::OptError&) {  // opts this device cannot lower (GROUP on a CPU)
    return INFINITY;
  }
  std::vector<std::unique_ptr<Buffer>> scratch;
  std::vector<void*> handles;
  for (size_t i = 0; i < std::min(buffers.size(), k->program.globals.size()); ++i) {
    const std::shared_ptr<Buffer>& real = graph::buffer_of(buffers[i]);
    scratch.push_back(std::make_unique<Buffer>(real->device(), real->size(), real->dtype()));
    if (i > 0 && real->nbytes()) real->backend().allocator().copy(scratch.back()->ptr(), real->ptr(), real->nbytes());
    handles.push_back(scratch.back()->ptr());
  }
  double best = INFINITY;
  for (int run = 0; run < 3 && !(best > hopeless); ++run) best = std::min(best, launch(*k, handles));
  return best;
}

// BEAM's choice for a kernel, from the on-disk cache when it searched this kernel before with
// the same width on the same device and compiler.
inline std::vector<codegen::Opt> beam_opts(const UOp& ast, const std::vector<UOp>& buffers, const OptSettings& settings) {
  const std::string key = tinyt::detail::Hash128()
                              .update(to_string(ast))
                              .update(tinyt::detail::cat("|beam ", settings.beam, " threads ", settings.target.threads,
                                                         " transcendental ", settings.transcendental, " device ",
                                                         settings.device, "|"))
                              .update(settings.compiler)
                              .hex();
  const std::filesystem::path dir = backend::cache_dir() / "beam", file = dir / (key + ".opts");
  const bool cached = backend::prepare_cache_dir(dir).empty();  // a cache that cannot be trusted is not read
  if (auto text = cached ? tinyt::detail::read_file(file) : std::nullopt)
    if (auto opts = codegen::deserialize_opts(*text)) return *opts;
  const auto start = std::chrono::steady_clock::now();
  const profile::Span span("beam " + schedule::detail::kernel_name(ast), "beam");
  double fastest = INFINITY;  // of the candidates timed so far: one 3 times slower is not run again
  std::vector<codegen::Opt> opts = codegen::beam_search(ast, settings.beam, settings.target.threads, !settings.target.gpu, [&](const std::vector<codegen::Opt>& o) {
    const double t = time_candidate(ast, o, buffers, settings, 3 * fastest);
    fastest = std::min(fastest, t);
    return t;
  });
  if (debug_level() >= 1)
    std::cerr << "beam: " << schedule::detail::kernel_name(ast) << " -> " << codegen::to_string(opts) << " in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
  // two threads may finish searching the same kernel at once: each publishes a whole file
  if (cached) tinyt::detail::write_file_atomically(file, codegen::serialize(opts));
  return opts;  // a cache that cannot be written costs a search next time, nothing else
}

// What the hand-coded opts know of a device.
inline codegen::MachineShape machine_shape(const backend::Target& t) {
  return {t.threads, t.vector_bytes, t.vector_count, !t.gpu, t.stream_bytes, t.gpu};
}

// The position in `axes(ast)` of the range with id `id`, or -1.
inline int64_t axis_of(const UOp& ast, int64_t id) {
  const std::vector<UOp> ax = codegen::axes(ast);
  for (size_t i = 0; i < ax.size(); ++i)
    if (ax[i].arg()[0].as_int() == id) return static_cast<int64_t>(i);
  return -1;
}

// An opt of a heuristic by the id of the range it applies to: op, range id, amount (1: none).
using OptById = std::tuple<codegen::OptOp, int64_t, int64_t>;

// One try of a heuristic: `kernel` (an AST with `opts` applied) with each of `more` applied to its
// range where that range is then; all the opts when every one applies and the kernel launches so.
inline std::optional<std::vector<codegen::Opt>> try_opts(UOp kernel, std::vector<codegen::Opt> opts, const std::vector<OptById>& more) {
  try {
    for (const auto& [op, id, amount] : more) {
      if (amount == 1) continue;
      opts.push_back({op, axis_of(kernel, id), amount});
      kernel = codegen::apply_opt(kernel, opts.back());
    }
    codegen::map_work_items(kernel);  // throws when it cannot launch so
    return opts;
  } catch (const codegen::OptError&) {
    return std::nullopt;
  }
}

// Register tiles around a TC kernel: each lane keeps its B fragments for 2 tiles of M and its A
// fragments for 4 tiles of N (UPCAST of the tile loops each side moves with alone), so a k-step
// loads 16 + 8 values for 8 tensor-core ops instead of 12 for each. Then warps side by side in a
// work-group, 2 x 2 (or 2 x 1, 1 x 2) over those tile loops, share the fragments of each 32 (or
// 64) steps of K, staged in local memory (LOCAL, STAGE): a fragment is read from global memory
// once for 2 warps.
inline std::vector<codegen::Opt> tensor_core_tiles(const UOp& ast, std::vector<codegen::Opt> opts) {
  std::vector<int64_t> sides;  // the ids of the tile loops of N, then M
  for (const auto& [b_side, amount] : {std::pair<bool, int64_t>{true, 4}, {false, 2}}) {
    const UOp k = codegen::apply_opts(ast, opts);
    UOp wmma;
    for (const UOp& u : toposort(k))
      if (u.op() == Ops::WMMA) wmma = u;
    const auto a_count = static_cast<size_t>(tensor_core_of(wmma.arg().get<std::string>())->a_count);
    const UOp& own = wmma.src(b_side ? a_count : 0);  // a B operand (N's side), then an A operand (M's)
    const UOp& other = wmma.src(b_side ? 0 : a_count);
    const std::vector<UOp> ax = codegen::axes(k);
    for (size_t j = 0; j < ax.size(); ++j) {
      if (codegen::range_kind(ax[j]) != codegen::RangeKind::loop || !depends_on(own, ax[j]) || depends_on(other, ax[j])) continue;
      sides.push_back(ax[j].arg()[0].as_int());
      if (codegen::range_size(ax[j]) % amount != 0) break;
      std::vector<codegen::Opt> more = opts;
      more.push_back({codegen::OptOp::UPCAST, static_cast<int64_t>(j), amount});
      try {
        codegen::map_work_items(codegen::apply_opts(ast, more));
        opts = std::move(more);
      } catch (const codegen::OptError&) {
      }
      break;
    }
  }
  if (sides.size() != 2) return opts;
  const UOp tiled = codegen::apply_opts(ast, opts);
  int64_t k_id = -1;
  for (const UOp& r : codegen::axes(tiled))
    if (codegen::range_kind(r) == codegen::RangeKind::reduce) k_id = r.arg()[0].as_int();
  for (const auto& [n_warps, m_warps] : {std::pair<int64_t, int64_t>{2, 2}, {2, 1}, {1, 2}})
    for (const int64_t steps : {2, 4})
      if (auto more = try_opts(tiled, opts, {{codegen::OptOp::LOCAL, sides[0], n_warps}, {codegen::OptOp::LOCAL, sides[1], m_warps},
                                             {codegen::OptOp::STAGE, k_id, steps}}))
        return *more;
  return opts;
}

// Tiles in shared memory for a reduction whose loads each stay put along one of two output loops
// (a matmul's rows and columns, a conv's pixels and output channels): a work-group of 16x16
// work-items (or 8x32, ... 8x8), each keeping a register tile of up to 4x4 outputs (UPCAST of both loops),
// over the output's innermost loop and the next one out that a load stays put along; the
// operands of a tile of 16 (or 8) steps of the reduction are staged in local memory by the whole
// work-group (STAGE), so each is read from global memory once per work-group. Empty when the
// kernel is not of that shape or no tiling divides it.
inline std::vector<codegen::Opt> shared_tiles(const UOp& ast, const backend::Target& target) {
  using codegen::OptOp, codegen::RangeKind;
  UOp red;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::REDUCE) {
      if (red) return {};
      red = u;
    }
  if (!red || red.arg().get<Ops>() != Ops::ADD) return {};
  std::vector<UOp> loads;
  for (const UOp& u : toposort(red.src(0)))
    if (u.op() == Ops::LOAD) loads.push_back(u);
  // a load that moves with `a` and stays put along `b`
  const auto one_sided = [&](const UOp& a, const UOp& b) {
    return std::any_of(loads.begin(), loads.end(), [&](const UOp& l) { return depends_on(l, a) && !depends_on(l, b); });
  };
  std::vector<UOp> loops;
  for (const UOp& r : codegen::axes(ast))
    if (codegen::range_kind(r) == RangeKind::loop) loops.push_back(r);
  if (loops.empty()) return {};
  const UOp n = loops.back();
  UOp m;
  for (auto it = loops.rbegin() + 1; it != loops.rend() && !m; ++it)
    if (one_sided(*it, n) && one_sided(n, *it)) m = *it;
  if (!m) return {};
  // the tile of the reduction: along its longest range
  UOp longest = red.src(1);
  for (size_t i = 2; i < red.src().size(); ++i)
    if (codegen::range_size(red.src(i)) > codegen::range_size(longest)) longest = red.src(i);
  const int64_t n_id = n.arg()[0].as_int(), m_id = m.arg()[0].as_int(), k_id = longest.arg()[0].as_int();
  const int64_t n_size = codegen::range_size(n), m_size = codegen::range_size(m);
  const auto registers = [](int64_t left) { return left % 4 == 0 ? 4 : left % 2 == 0 ? 2 : 1; };
  for (const auto& [n_items, m_items] : {std::pair<int64_t, int64_t>{16, 16}, {8, 32}, {32, 8}, {16, 8}, {8, 16}, {8, 8}}) {
    if (n_items * m_items > target.max_local || n_size % n_items != 0 || m_size % m_items != 0) continue;
    for (const int64_t steps : {16, 8})
      if (auto opts = try_opts(ast, {}, {{OptOp::LOCAL, n_id, n_items}, {OptOp::LOCAL, m_id, m_items},
                                          {OptOp::UPCAST, n_id, registers(n_size / n_items)}, {OptOp::UPCAST, m_id, registers(m_size / m_items)},
                                          {OptOp::STAGE, k_id, steps}}))
        return *opts;
  }
  return {};
}

// A GPU's hand-coded opts: a sum of products of narrow floats goes on tensor cores where the
// device has them and `tc` (TC=0: never), one of float32 values too where `tf32` (TF32=1); a reduction with too few outputs to keep the device
// busy (fewer than 64 work-items per compute unit) is split across a work-group (GROUP of the
// largest power of two up to 256 dividing its innermost reduce axis), when its outputs fit the
// two launch dimensions a grouped kernel has; else the CPU's rules. (On PoCL, two compute units,
// GROUP rarely pays: its work-groups run as loops around each barrier.)
inline std::vector<codegen::Opt> gpu_opts(const UOp& ast, const backend::Target& target, bool tc = true, bool tf32 = false) {
  const std::vector<UOp> ax = codegen::axes(ast);
  // a sum of products of narrow floats (a matmul's, a conv's) on tensor cores, where the device
  // has them (TC=0: never); of float32 values through TF32 where asked
  if (tc && target.tensor_cores)
    for (const int64_t kind : {0, 1}) {
      if (kind == 1 && !tf32) continue;
      for (size_t i = 0; i < ax.size(); ++i) {
        if (codegen::range_kind(ax[i]) != codegen::RangeKind::reduce) continue;
        try {
          std::vector<codegen::Opt> opts{{codegen::OptOp::TC, static_cast<int64_t>(i), kind}};
          codegen::map_work_items(codegen::apply_opts(ast, opts));  // throws when it cannot launch so
          return tensor_core_tiles(ast, std::move(opts));
        } catch (const codegen::OptError&) {
        }
      }
    }
  int64_t outputs = 1, loops = 0, reduce_axis = -1, tiles = 0;
  for (size_t i = 0; i < ax.size(); ++i) {
    const codegen::RangeKind kind = codegen::range_kind(ax[i]);
    if (kind == codegen::RangeKind::loop) outputs *= codegen::range_size(ax[i]), ++loops;
    if (kind == codegen::RangeKind::local) ++tiles;
    if (kind == codegen::RangeKind::reduce) reduce_axis = static_cast<int64_t>(i);
  }
  if (reduce_axis >= 0 && loops <= 2 && tiles == 0 && outputs < 64 * target.compute_units) {
    const int64_t length = codegen::range_size(ax[static_cast<size_t>(reduce_axis)]);
    int64_t group = 1;
    while (group * 2 <= std::min<int64_t>(256, target.max_local) && length % (group * 2) == 0) group *= 2;
    if (group >= 16 && length >= 4 * group) {
      try {
        std::vector<codegen::Opt> opts{{codegen::OptOp::GROUP, reduce_axis, group}};
        codegen::map_work_items(codegen::apply_opts(ast, opts));  // throws when it cannot launch so
        return opts;
      } catch (const codegen::OptError&) {
      }
    }
  }
  if (std::vector<codegen::Opt> tiles = shared_tiles(ast, target); !tiles.empty()) return tiles;
  return codegen::hand_coded_opts(ast, machine_shape(target));
}

inline std::vector<codegen::Opt> choose_opts(const UOp& ast, const std::vector<UOp>& buffers, const OptSettings& settings) {
  if (settings.noopt) return {};
  if (settings.beam > 0) return beam_opts(ast, buffers, settings);
  if (settings.target.gpu) return gpu_opts(ast, settings.target, settings.tc != 0, settings.tf32 != 0);
  return codegen::hand_coded_opts(ast, machine_shape(settings.target));
}

// Compiled kernels by AST and settings. ASTs are interned, so a kernel seen before is one
// lookup; the map holds its AST so the key stays valid.
class KernelCache {
 public:
  std::shared_ptr<CompiledKernel> get(const UOp& ast, const std::vector<UOp>& buffers, const OptSettings& settings) {
    const Key key{ast.get(), settings.key()};
    {
      std::lock_guard lock(mu_);
      if (auto it = map_.find(key); it != map_.end()) return it->second.second;
    }
    // choosing opts tries them on the AST: its rewrites belong to the kernel's VIZ group too
    const viz::Scope scope("kernel " + schedule::detail::kernel_name(ast));
    std::shared_ptr<CompiledKernel> k = compile_kernel(ast, choose_opts(ast, buffers, settings), settings);
    std::lock_guard lock(mu_);
    return map_.try_emplace(key, ast, k).first->second.second;
  }

  /// Every kernel AST compiled so far, once each (for tools and tests).
  std::vector<UOp> asts() {
    std::lock_guard lock(mu_);
    std::vector<UOp> out;
    std::unordered_set<const UOpNode*> seen;
    for (const auto& [key, entry] : map_)
      if (seen.insert(key.first).second) out.push_back(entry.first);
    return out;
  }

 private:
  using Key = std::pair<const UOpNode*, decltype(std::declval<OptSettings>().key())>;
  std::mutex mu_;
  std::map<Key, std::pair<UOp, std::shared_ptr<CompiledKernel>>> map_;
};
}  // namespace detail

inline detail::KernelCache& kernel_cache() {
  static auto* cache = new detail::KernelCache;  // never destroyed: kernels may run during static teardown
  return *cache;
}

/// The exec items of a schedule: each kernel compiled (or found) for its device, each copy a
/// BufferCopy, each allreduce across processes an AllreduceRunner. `debug`: the DEBUG level, read
/// once by the caller.
inline std::vector<ExecItem> lower_schedule(const std::vector<schedule::Kernel>& kernels, int debug = debug_level()) {
  std::vector<ExecItem> items;
  std::vector<OptSettings> settings;  // per device, read once
  auto settings_for = [&](const std::string& device) -> const OptSettings& {
    for (const OptSettings& s : settings)
      if (s.device == device) return s;
    return settings.emplace_back(OptSettings::current(device));
  };
  for (const schedule::Kernel& k : kernels) {
    ExecItem item;
    for (const UOp& b : k.buffers) item.buffers.push_back(graph::buffer_of(b));
    item.device = item.buffers[0]->device();
    if (k.ast.op() == Ops::COPY) {
      item.runner = std::make_shared<BufferCopy>(item.buffers[0]->nbytes(), item.buffers[1]->device(), item.device);
    } else if (k.ast.op() == Ops::ALLREDUCE) {
      const auto op = static_cast<dist::ReduceOp>(k.ast.arg()[0].as_int());
      const Shape shape = graph::sizes(k.ast.arg()[1]);
      auto runner = std::make_shared<AllreduceRunner>(shape, k.ast.dtype(), op);
      schedule::VarVals vals = k.var_vals;  // a cached step's values; a shape still bound carries its own
      for (const sint& d : shape)
        if (!d.is_int()) vals.bind_all(d.as_uop());
      for (const UOp& v : runner->vars()) item.vars.push_back(vals.at(v));
      item.runner = std::move(runner);
    } else {
      for (const auto& b : item.buffers)
        if (b->device() != item.device)
          throw DeviceError(tinyt::detail::cat(schedule::detail::kernel_name(k.ast), ": a kernel on ", item.device,
                                               " reads a buffer on ", b->device(), "; move it with .to(\"", item.device, "\")"));
      const std::shared_ptr<CompiledKernel> ck = kernel_cache().get(k.ast, k.buffers, settings_for(item.device));
      if (debug >= 3) std::cerr << "  " << ck->program.name << " opts: " << codegen::to_string(ck->program.opts) << "\n";
      if (debug >= 5) std::cerr << to_string(k.ast);
      if (debug >= 6)
        for (const UOp& u : ck->program.ops) std::cerr << "    " << op_name(u.op()) << " " << u.dtype().name() << "\n";
      item.runner = std::make_shared<CompiledRunner>(ck);
      for (const UOp& v : ck->program.vars) item.vars.push_back(k.var_vals.at(v));
    }
    items.push_back(std::move(item));
  }
  return items;
}

/// The knobs a launch reads, read once per schedule or replay (a knob read is a getenv).
struct RunKnobs {
  int debug = 0;         // DEBUG: 2 prints a line per launch and keeps the kernels' totals
  bool profile = false;  // PROFILE: each launch on the device's track of the trace
  static RunKnobs current() { return {debug_level(), profile::enabled()}; }
};

/// Runs one exec item: launches it, counts it, prints its DEBUG line, records it while profiling.
inline void run_item(const ExecItem& item, const RunKnobs& knobs = RunKnobs::current()) {
  std::vector<Buffer*> bufs;
  bufs.reserve(item.buffers.size());
  for (const auto& b : item.buffers) bufs.push_back(b.get());
  // the CPU devices run kernels synchronously: their time is free to take
  const bool timed = knobs.debug >= 2 || knobs.profile || item.device.compare(0, 3, "CPU") == 0;
  const auto start = knobs.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  const double seconds = item.runner->run(bufs, item.vars, timed);
  const int64_t number = ++GlobalCounters::kernel_count;
  const Estimates e = item.runner->estimates();
  GlobalCounters::global_ops += e.ops;
  GlobalCounters::global_mem += e.mem;
  GlobalCounters::time_sum_s += seconds;
  if (knobs.debug >= 2) {
    std::cerr << kernel_line(item.device, number, item.runner->name(), bufs.size(), e, seconds) << "\n";
    profile::count_kernel(item.runner->name(), seconds, e.ops, e.mem);
  }
  if (knobs.profile) {
    const bool copy = dynamic_cast<const BufferCopy*>(item.runner.get()) != nullptr;
    const double s = std::max(seconds, 1e-12);
    profile::device_span(item.device, copy ? "copies" : "kernels", item.runner->name(), start, seconds,
                         {{"ops", std::to_string(e.ops)},
                          {"bytes", std::to_string(e.mem)},
                          {"GFLOPS", profile::json_number(static_cast<double>(e.ops) / s * 1e-9)},
                          {"GB/s", profile::json_number(static_cast<double>(e.mem) / s * 1e-9)}});
  }
}

/// Runs a schedule: compiles (or finds) each kernel, launches each in order, and records where
/// each computed value now lives.
inline void run_schedule(const std::vector<schedule::Kernel>& kernels) {
  const RunKnobs knobs = RunKnobs::current();
  const int debug = knobs.debug;
  if (debug >= 1 && !kernels.empty()) {
    size_t bytes = 0;
    for (const schedule::Kernel& k : kernels) bytes += graph::buffer_of(k.buffers[0])->nbytes();
    std::cerr << "schedule: " << kernels.size() << " kernel(s), " << std::fixed << std::setprecision(2)
              << static_cast<double>(bytes) / 1e6 << " MB written\n";
  }
  const std::vector<ExecItem> items = lower_schedule(kernels, debug);
  std::vector<CapturedItem>* capture = capture_sink();
  for (size_t i = 0; i < items.size(); ++i) {
    run_item(items[i], knobs);
    const schedule::Kernel& k = kernels[i];
    if (capture) {
      // the variables whose values a replay passes: a kernel's, or an allreduce's shape's
      const auto* compiled = dynamic_cast<const CompiledRunner*>(items[i].runner.get());
      const auto* allreduce = dynamic_cast<const AllreduceRunner*>(items[i].runner.get());
      capture->push_back({items[i], compiled ? compiled->kernel().program.vars : allreduce ? allreduce->vars() : std::vector<UOp>{},
                          k.in_place});
    }
    if (k.in_place) graph::buffer_of(k.buffers[0])->overwritten();
    if (!k.temporary) graph::set_realized(k.computes, k.view);
  }
}

}  // namespace engine

// the engine's entry points, where the rest of tinyt and the tests name them
using engine::compile_kernel;
using engine::CompiledKernel;
using engine::launch;
using engine::run_schedule;

}  // namespace tinyt::inline v0
