// CPU backend through LLVM: IR text -> optimized in memory -> machine code in this process (ORC
// LLJIT), with no compiler program and nothing linked at build time. libLLVM is opened with
// dlopen at first use ($TINYT_LLVM_PATH, then LLVM 20 down to 14 by their usual file names) and
// reached only through its C API, bound from one table below.
//
// Kernels follow the C backend's convention: void NAME(void** bufs, const long long* vars,
// int core_id, int core_count).
//
// A JIT compiles for one target: the host CPU and its features (the default), or a CPU that
// LLVM names ("x86-64", "x86-64-v3", "skylake-avx512", optionally with features: "x86-64-v2,
// +fma"). The target changes speed, never results: kernels carry no fast-math flags, so the
// arithmetic is IEEE's whatever vector instructions the target has (tests/test_backends_agree.cpp
// checks it at each x86-64 level the host runs). llvm_jit() keeps one JIT per target.
#pragma once

#include <dlfcn.h>

#include <atomic>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../support.hpp"
#include "cpu_features.hpp"
#include "dlopen.hpp"

namespace tinyt::inline v0 {
namespace backend {

/// The LLVM C API types this backend uses, declared here: no LLVM header is needed.
namespace llvm_c {
#define TINYT_LLVM_OPAQUE(name) \
  struct Opaque##name;          \
  using name##Ref = Opaque##name*;
TINYT_LLVM_OPAQUE(Context)
TINYT_LLVM_OPAQUE(Module)
TINYT_LLVM_OPAQUE(MemoryBuffer)
TINYT_LLVM_OPAQUE(Value)
TINYT_LLVM_OPAQUE(Target)
TINYT_LLVM_OPAQUE(TargetMachine)
TINYT_LLVM_OPAQUE(PassBuilderOptions)
TINYT_LLVM_OPAQUE(Error)
TINYT_LLVM_OPAQUE(OrcThreadSafeContext)
TINYT_LLVM_OPAQUE(OrcThreadSafeModule)
TINYT_LLVM_OPAQUE(OrcJITTargetMachineBuilder)
TINYT_LLVM_OPAQUE(OrcLLJITBuilder)
TINYT_LLVM_OPAQUE(OrcLLJIT)
TINYT_LLVM_OPAQUE(OrcJITDylib)
TINYT_LLVM_OPAQUE(OrcDefinitionGenerator)
TINYT_LLVM_OPAQUE(OrcExecutionSession)
#undef TINYT_LLVM_OPAQUE
using Bool = int;
using ExecutorAddress = uint64_t;
using SymbolPredicate = int (*)(void* ctx, void* symbol);
using ErrorReporter = void (*)(void* ctx, ErrorRef error);
// enum values of llvm-c/TargetMachine.h and llvm-c/Analysis.h
inline constexpr int CodeGenLevelAggressive = 3, RelocDefault = 0, CodeModelJITDefault = 1, ObjectFile = 1;
inline constexpr int ReturnStatusAction = 2;
}  // namespace llvm_c

// clang-format off
/// Every LLVM C function used: X(required, name, signature). All exist in LLVM 14 unless optional.
#define TINYT_LLVM_C_API(X)                                                                                     \
  X(1, LLVMDisposeMessage, void(char*))                                                                         \
  X(1, LLVMGetErrorMessage, char*(ErrorRef))                                                                    \
  X(1, LLVMDisposeErrorMessage, void(char*))                                                                    \
  X(1, LLVMCreateMemoryBufferWithMemoryRangeCopy, MemoryBufferRef(const char*, size_t, const char*))            \
  X(1, LLVMParseIRInContext, Bool(ContextRef, MemoryBufferRef, ModuleRef*, char**))                             \
  X(1, LLVMVerifyModule, Bool(ModuleRef, int, char**))                                                          \
  X(1, LLVMDisposeModule, void(ModuleRef))                                                                      \
  X(1, LLVMGetNamedFunction, ValueRef(ModuleRef, const char*))                                                  \
  X(1, LLVMSetValueName2, void(ValueRef, const char*, size_t))                                                  \
  X(1, LLVMSetTarget, void(ModuleRef, const char*))                                                             \
  X(1, LLVMSetDataLayout, void(ModuleRef, const char*))                                                         \
  X(1, LLVMGetDefaultTargetTriple, char*())                                                                     \
  X(1, LLVMGetHostCPUName, char*())                                                                             \
  X(1, LLVMGetHostCPUFeatures, char*())                                                                         \
  X(1, LLVMGetTargetFromTriple, Bool(const char*, TargetRef*, char**))                                          \
  X(1, LLVMCreateTargetMachine, TargetMachineRef(TargetRef, const char*, const char*, const char*, int, int, int)) \
  X(1, LLVMDisposeTargetMachine, void(TargetMachineRef))                                                        \
  X(1, LLVMCreatePassBuilderOptions, PassBuilderOptionsRef())                                                   \
  X(1, LLVMPassBuilderOptionsSetLoopVectorization, void(PassBuilderOptionsRef, Bool))                           \
  X(1, LLVMPassBuilderOptionsSetSLPVectorization, void(PassBuilderOptionsRef, Bool))                            \
  X(1, LLVMPassBuilderOptionsSetLoopUnrolling, void(PassBuilderOptionsRef, Bool))                               \
  X(1, LLVMPassBuilderOptionsSetLoopInterleaving, void(PassBuilderOptionsRef, Bool))                            \
  X(1, LLVMDisposePassBuilderOptions, void(PassBuilderOptionsRef))                                              \
  X(1, LLVMRunPasses, ErrorRef(ModuleRef, const char*, TargetMachineRef, PassBuilderOptionsRef))                \
  X(1, LLVMTargetMachineEmitToMemoryBuffer, Bool(TargetMachineRef, ModuleRef, int, char**, MemoryBufferRef*))   \
  X(1, LLVMGetBufferStart, const char*(MemoryBufferRef))                                                        \
  X(1, LLVMGetBufferSize, size_t(MemoryBufferRef))                                                              \
  X(1, LLVMDisposeMemoryBuffer, void(MemoryBufferRef))                                                          \
  X(1, LLVMOrcLLJITAddObjectFile, ErrorRef(OrcLLJITRef, OrcJITDylibRef, MemoryBufferRef))                       \
  X(1, LLVMOrcCreateNewThreadSafeContext, OrcThreadSafeContextRef())                                            \
  X(1, LLVMOrcThreadSafeContextGetContext, ContextRef(OrcThreadSafeContextRef))                                 \
  X(1, LLVMOrcDisposeThreadSafeContext, void(OrcThreadSafeContextRef))                                          \
  X(1, LLVMOrcCreateNewThreadSafeModule, OrcThreadSafeModuleRef(ModuleRef, OrcThreadSafeContextRef))            \
  X(1, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine, OrcJITTargetMachineBuilderRef(TargetMachineRef)) \
  X(1, LLVMOrcCreateLLJITBuilder, OrcLLJITBuilderRef())                                                         \
  X(1, LLVMOrcLLJITBuilderSetJITTargetMachineBuilder, void(OrcLLJITBuilderRef, OrcJITTargetMachineBuilderRef))  \
  X(1, LLVMOrcCreateLLJIT, ErrorRef(OrcLLJITRef*, OrcLLJITBuilderRef))                                          \
  X(1, LLVMOrcDisposeLLJIT, ErrorRef(OrcLLJITRef))                                                              \
  X(1, LLVMOrcLLJITGetMainJITDylib, OrcJITDylibRef(OrcLLJITRef))                                                \
  X(1, LLVMOrcLLJITGetExecutionSession, OrcExecutionSessionRef(OrcLLJITRef))                                    \
  X(1, LLVMOrcExecutionSessionSetErrorReporter, void(OrcExecutionSessionRef, ErrorReporter, void*))            \
  X(1, LLVMOrcLLJITGetGlobalPrefix, char(OrcLLJITRef))                                                          \
  X(1, LLVMOrcLLJITGetTripleString, const char*(OrcLLJITRef))                                                   \
  X(1, LLVMOrcLLJITGetDataLayoutStr, const char*(OrcLLJITRef))                                                  \
  X(1, LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess,                                                    \
    ErrorRef(OrcDefinitionGeneratorRef*, char, SymbolPredicate, void*))                                         \
  X(1, LLVMOrcJITDylibAddGenerator, void(OrcJITDylibRef, OrcDefinitionGeneratorRef))                            \
  X(1, LLVMOrcLLJITAddLLVMIRModule, ErrorRef(OrcLLJITRef, OrcJITDylibRef, OrcThreadSafeModuleRef))             \
  X(1, LLVMOrcLLJITLookup, ErrorRef(OrcLLJITRef, ExecutorAddress*, const char*))                                \
  /* LLVM 16 and later */                                                                                       \
  X(0, LLVMGetVersion, void(unsigned*, unsigned*, unsigned*))                                                   \
  /* the native target, by host architecture (inline functions in the headers, exported here) */              \
  X(0, LLVMInitializeX86TargetInfo, void()) X(0, LLVMInitializeX86Target, void())                              \
  X(0, LLVMInitializeX86TargetMC, void()) X(0, LLVMInitializeX86AsmPrinter, void())                            \
  X(0, LLVMInitializeAArch64TargetInfo, void()) X(0, LLVMInitializeAArch64Target, void())                      \
  X(0, LLVMInitializeAArch64TargetMC, void()) X(0, LLVMInitializeAArch64AsmPrinter, void())
// clang-format on

namespace llvm_c {
/// Pointers to the table's functions, looked up in an opened libLLVM.
struct Api {
#define TINYT_LLVM_FIELD(required, name, ...) std::add_pointer_t<__VA_ARGS__> name = nullptr;
  TINYT_LLVM_C_API(TINYT_LLVM_FIELD)
#undef TINYT_LLVM_FIELD
  explicit Api(const Library& lib) {
#define TINYT_LLVM_BIND(required, name, ...) \
  name = required ? lib.symbol<__VA_ARGS__>(#name) : lib.try_symbol<__VA_ARGS__>(#name);
    TINYT_LLVM_C_API(TINYT_LLVM_BIND)
#undef TINYT_LLVM_BIND
  }

  /// The message of `error` (which this consumes).
  std::string message(ErrorRef error) const {
    char* text = LLVMGetErrorMessage(error);
    std::string out = text ? text : "unknown LLVM error";
    LLVMDisposeErrorMessage(text);
    return out;
  }
  /// A C string LLVM allocated, copied and freed.
  std::string take(char* text) const {
    std::string out = text ? text : "";
    if (text) LLVMDisposeMessage(text);
    return out;
  }
};
}  // namespace llvm_c

namespace detail {
/// Runs a function when the scope ends.
struct OnExit {
  std::function<void()> run;
  ~OnExit() { run(); }
};

/// The LLVM version in a library file name: libLLVM-15.so.1, libLLVM-14.0.6.so.1, libLLVM.so.20.1.
inline std::string llvm_version_from_path(const std::string& path) {
  const std::string file = path.substr(path.rfind('/') + 1);
  size_t at = file.find("LLVM");
  if (at == std::string::npos) return "";
  at += 4;
  if (file.compare(at, 1, "-") == 0)
    at += 1;
  else if (file.compare(at, 4, ".so.") == 0)
    at += 4;
  size_t end = at;
  while (end < file.size() &&
         (std::isdigit(static_cast<unsigned char>(file[end])) || file[end] == '.'))
    ++end;
  std::string v = file.substr(at, end - at);
  while (!v.empty() && v.back() == '.') v.pop_back();
  return v;
}
}  // namespace detail

/// An LLVM JIT in this process: compiles IR modules to callable kernels. Thread-safe.
class LLVMJit {
 public:
  using Function = void(void** bufs, const long long* vars, int core_id, int core_count);
  /// The optimization pipeline every kernel goes through (new pass manager syntax): what a
  /// generated kernel needs of O2, at a third of its time. Our IR is already shaped (register
  /// tiles expanded, loops in the order they should run, no calls but the body's and always-inline
  /// helpers): it needs its allocas in registers, loop invariants hoisted, inner loops vectorized,
  /// straight-line tiles packed into vectors (SLP), and the result cleaned up. O2's inliner, GVN, unrolling and
  /// loop passes found nothing more: the 512 matmul compiles in 63 ms instead of 185 at the same
  /// speed, a FashionNet train step's kernels in 1.4 s instead of 2.9, and softmax 4096 runs in 14
  /// ms instead of 20. The early-cse after the SLP vectorizer is for register tiles of llvm.fma: it
  /// builds each accumulator's vector fma twice (once from the loop's phis, once from the stores
  /// after the loop), and instcombine would sink the copy into the loop's exit, keeping the old and
  /// new accumulators both live through the loop (a 16-zmm tile spills). Merging identical calls
  /// changes no result.
  static constexpr const char* pipeline =
      "always-inline,function(sroa,early-cse,instcombine,simplifycfg,loop-simplify,lcssa,loop-mssa(licm),loop-rotate,"
      "loop-vectorize,slp-vectorizer,early-cse,instcombine,simplifycfg,dce)";

  /// Opens libLLVM from `default_candidates()`.
  LLVMJit() : LLVMJit(default_candidates()) {}
  /// Opens the first of `candidates` that loads (DeviceError listing each one tried) and starts
  /// a JIT for `target`: "host" (or "") for the CPU this runs on, else "CPU[,FEATURES]" as LLVM
  /// spells them (a CPU LLVM does not know makes it warn and compile for a generic one).
  explicit LLVMJit(const std::vector<std::string>& candidates, const std::string& target_cpu = "host")
      // never unloaded: LLVM registers process-wide state (options, signal handlers) on load
      : lib_(Library::open_first(candidates, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)), api_(lib_) {
    init_native_target();
    triple_ = api_.take(api_.LLVMGetDefaultTargetTriple());
    if (target_cpu.empty() || target_cpu == "host") {
      cpu_ = api_.take(api_.LLVMGetHostCPUName());
      features_ = api_.take(api_.LLVMGetHostCPUFeatures());
    } else {
      const size_t comma = target_cpu.find(',');
      cpu_ = target_cpu.substr(0, comma);
      features_ = comma == std::string::npos ? "" : target_cpu.substr(comma + 1);
      // code for a CPU with more than this one dies of SIGILL in the first kernel that uses it
      const std::string host_cpu = api_.take(api_.LLVMGetHostCPUName());
      if (const std::string why = detail::cpu_target_mismatch(target_cpu, host_cpu, api_.take(api_.LLVMGetHostCPUFeatures())); !why.empty())
        throw DeviceError(::tinyt::detail::cat("CPU: TINYT_LLVM_CPU=", target_cpu, " cannot run here: ", why,
                                               ". Unset it (\"host\"), or name a CPU this one can run"));
    }
    llvm_c::TargetRef target = nullptr;
    char* error = nullptr;
    if (api_.LLVMGetTargetFromTriple(triple_.c_str(), &target, &error))
      throw DeviceError(
          ::tinyt::detail::cat("tinyt: LLVM has no target for ", triple_, ": ", api_.take(error)));
    // one target machine tunes the optimizer (vector widths, costs); a copy configures the JIT
    tm_ = {host_machine(target), api_.LLVMDisposeTargetMachine};
    const auto start_jit = [&](llvm_c::OrcLLJITRef* jit) {
      llvm_c::OrcLLJITBuilderRef builder = api_.LLVMOrcCreateLLJITBuilder();
      api_.LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
          builder, api_.LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(host_machine(target)));
      return api_.LLVMOrcCreateLLJIT(jit, builder);  // consumes builder
    };
    llvm_c::OrcLLJITRef jit = nullptr;
    llvm_c::ErrorRef started = start_jit(&jit);
    // LLVM 17's JIT looks its EH-frame registration functions (llvm_orc_registerEHFrameSectionWrapper,
    // in libLLVM itself) up among the process's global symbols, where a library opened RTLD_LOCAL
    // is not ("Symbols not found: [ llvm_orc_... ]", seen on Ubuntu 24.04's libLLVM-17): only then
    // are libLLVM's symbols made global, and the JIT started again.
    if (started) {
      const std::string first = api_.message(started);
      if (first.find("llvm_orc_") == std::string::npos ||
          !dlopen(lib_.path().c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL))
        throw DeviceError(::tinyt::detail::cat("tinyt: LLVM (", lib_.path(), ") cannot start the JIT: ", first));
      started = start_jit(&jit);
    }
    check(started, "cannot start the JIT");
    jit_ = {jit, [api = &api_](llvm_c::OrcLLJITRef j) {
              if (llvm_c::ErrorRef e = api->LLVMOrcDisposeLLJIT(j)) api->message(e);
            }};
    // errors found while linking (a missing symbol) are reported here, not in the lookup's error
    api_.LLVMOrcExecutionSessionSetErrorReporter(
        api_.LLVMOrcLLJITGetExecutionSession(jit),
        [](void* self, llvm_c::ErrorRef e) {
          auto* me = static_cast<LLVMJit*>(self);
          std::lock_guard lock(me->session_mutex_);
          me->session_errors_ += "\n  " + me->api_.message(e);
        },
        this);
    data_layout_ = api_.LLVMOrcLLJITGetDataLayoutStr(jit);
    triple_ = api_.LLVMOrcLLJITGetTripleString(jit);
    // kernels call libm (expf, powf, ...) and compiler helpers: resolve them in this process
    llvm_c::OrcDefinitionGeneratorRef process = nullptr;
    check(api_.LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
              &process, api_.LLVMOrcLLJITGetGlobalPrefix(jit), nullptr, nullptr),
          "cannot search this process for symbols");
    api_.LLVMOrcJITDylibAddGenerator(api_.LLVMOrcLLJITGetMainJITDylib(jit), process);
    options_ = {api_.LLVMCreatePassBuilderOptions(), api_.LLVMDisposePassBuilderOptions};
    api_.LLVMPassBuilderOptionsSetLoopVectorization(options_.get(), 1);
    api_.LLVMPassBuilderOptionsSetSLPVectorization(options_.get(), 1);
    api_.LLVMPassBuilderOptionsSetLoopUnrolling(options_.get(), 1);
    api_.LLVMPassBuilderOptionsSetLoopInterleaving(options_.get(), 1);
    version_ = version();
    identity_ = ::tinyt::detail::cat("LLVM ", version_, " | ", triple_, " | ", cpu_, " | ",
                                     features_, " | ", pipeline);
  }
  LLVMJit(const LLVMJit&) = delete;
  LLVMJit& operator=(const LLVMJit&) = delete;

  /// $TINYT_LLVM_PATH if set, then libLLVM.so.N, libLLVM-N.so and libLLVM-N.so.1 for N = 20..14.
  static std::vector<std::string> default_candidates() {
    std::vector<std::string> out;
    if (const char* path = std::getenv("TINYT_LLVM_PATH"); path && *path) out.push_back(path);
    for (int n = 20; n >= 14; --n) {
      const std::string v = std::to_string(n);
      out.insert(out.end(), {"libLLVM.so." + v, "libLLVM-" + v + ".so", "libLLVM-" + v + ".so.1"});
    }
    return out;
  }
  /// Whether libLLVM can be opened and the process-wide JIT started (never throws).
  static bool available() noexcept;

  /// The library file loaded, as it was found (an entry of the candidates).
  const std::string& library_path() const noexcept { return lib_.path(); }
  /// The LLVM version ("15" when only the file name tells it, "18.1.8" from LLVM itself).
  const std::string& llvm_version() const noexcept { return version_; }
  /// LLVM version, target, CPU and its features, and the pipeline: what a kernel's machine code
  /// depends on besides its IR (a cache key).
  const std::string& identity() const noexcept { return identity_; }
  /// The CPU it compiles for, as LLVM names it ("sapphirerapids", "x86-64-v3").
  const std::string& cpu() const noexcept { return cpu_; }
  /// The features it compiles for beyond the CPU's, as LLVM spells them ("+avx2,-avx512f,..."; the
  /// host's whole list for "host").
  const std::string& features() const noexcept { return features_; }
  /// How many modules were compiled.
  uint64_t compiles() const noexcept { return compiles_; }

  /// What an object emitted by `emit_object` starts with; the kernel's symbol follows, then a newline.
  static constexpr std::string_view object_header = "tinyt-object ";

  /// Parses, verifies and optimizes `ir`, and returns its function `name` as machine code, which
  /// lives as long as this JIT. CompileError with LLVM's message (and the numbered IR when it does
  /// not parse or verify).
  Function* compile(const std::string& ir, const std::string& name) { return load_object(emit_object(ir, name)); }

  /// Parses, verifies and optimizes `ir` and compiles it to an object file for this JIT's target:
  /// `object_header`, the symbol of function `name` (named by a hash of the IR, so objects from
  /// other processes never clash), a newline, the object's bytes. What a disk cache keeps.
  std::string emit_object(const std::string& ir, const std::string& name) {
    using ::tinyt::detail::cat;
    std::lock_guard lock(mutex_);
    ++compiles_;
    llvm_c::OrcThreadSafeContextRef context = api_.LLVMOrcCreateNewThreadSafeContext();
    llvm_c::ModuleRef module = nullptr;
    llvm_c::MemoryBufferRef object = nullptr;
    // the module dies before the context it lives in, whichever way this returns
    detail::OnExit cleanup{[&] {
      if (object) api_.LLVMDisposeMemoryBuffer(object);
      if (module) api_.LLVMDisposeModule(module);
      api_.LLVMOrcDisposeThreadSafeContext(context);
    }};
    char* error = nullptr;
    llvm_c::MemoryBufferRef buffer =
        api_.LLVMCreateMemoryBufferWithMemoryRangeCopy(ir.data(), ir.size(), name.c_str());
    if (api_.LLVMParseIRInContext(api_.LLVMOrcThreadSafeContextGetContext(context), buffer, &module,
                                  &error))
      throw CompileError(cat("tinyt: LLVM cannot parse the IR of kernel '", name,
                             "': ", api_.take(error), "\nIR:\n", ::tinyt::detail::number_lines(ir)));
    if (api_.LLVMVerifyModule(module, llvm_c::ReturnStatusAction, &error))
      throw CompileError(cat("tinyt: the IR of kernel '", name, "' is invalid: ", api_.take(error),
                             "IR:\n", ::tinyt::detail::number_lines(ir)));
    api_.take(error);
    llvm_c::ValueRef function = api_.LLVMGetNamedFunction(module, name.c_str());
    if (!function) throw CompileError(cat("tinyt: the LLVM module has no function '", name, "'"));
    const std::string symbol = cat(name, ".", ::tinyt::detail::Hash128().update(ir).hex().substr(0, 16));
    api_.LLVMSetValueName2(function, symbol.data(), symbol.size());
    api_.LLVMSetTarget(module, triple_.c_str());
    api_.LLVMSetDataLayout(module, data_layout_.c_str());
    if (llvm_c::ErrorRef e = api_.LLVMRunPasses(module, pipeline, tm_.get(), options_.get()))
      throw CompileError(cat("tinyt: LLVM cannot optimize kernel '", name, "': ", api_.message(e)));
    if (api_.LLVMTargetMachineEmitToMemoryBuffer(tm_.get(), module, llvm_c::ObjectFile, &error, &object))
      throw CompileError(cat("tinyt: LLVM cannot compile kernel '", name, "': ", api_.take(error)));
    return cat(object_header, symbol, "\n",
               std::string_view(api_.LLVMGetBufferStart(object), api_.LLVMGetBufferSize(object)));
  }

  /// Links an object from `emit_object` into the JIT (once per symbol) and returns its function.
  Function* load_object(const std::string& blob) {
    using ::tinyt::detail::cat;
    const size_t newline = blob.find('\n');
    if (!blob.starts_with(object_header) || newline == std::string::npos)
      throw CompileError("tinyt: not an object emitted by tinyt's LLVM JIT");
    const std::string symbol = blob.substr(object_header.size(), newline - object_header.size());
    std::lock_guard lock(mutex_);
    if (auto it = loaded_.find(symbol); it != loaded_.end()) return it->second;
    // the JIT owns the buffer from here on, even when adding it fails
    llvm_c::MemoryBufferRef object = api_.LLVMCreateMemoryBufferWithMemoryRangeCopy(
        blob.data() + newline + 1, blob.size() - newline - 1, symbol.c_str());
    if (llvm_c::ErrorRef e = api_.LLVMOrcLLJITAddObjectFile(jit_.get(), api_.LLVMOrcLLJITGetMainJITDylib(jit_.get()), object))
      throw CompileError(cat("tinyt: LLVM cannot add kernel '", symbol, "' to the JIT: ", api_.message(e)));
    llvm_c::ExecutorAddress address = 0;
    if (llvm_c::ErrorRef e = api_.LLVMOrcLLJITLookup(jit_.get(), &address, symbol.c_str())) {
      std::string message = api_.message(e);
      std::lock_guard session_lock(session_mutex_);
      throw CompileError(cat("tinyt: LLVM cannot link kernel '", symbol, "': ", message,
                             std::exchange(session_errors_, "")));
    }
    return loaded_[symbol] = std::bit_cast<Function*>(static_cast<uintptr_t>(address));
  }

 private:
  void check(llvm_c::ErrorRef error, const char* what) const {
    if (error)
      throw DeviceError(::tinyt::detail::cat("tinyt: LLVM (", lib_.path(), ") ", what, ": ",
                                             api_.message(error)));
  }

  void init_native_target() const {
#if defined(__aarch64__)
    const char* arch = "AArch64";
    void (*init[])() = {api_.LLVMInitializeAArch64TargetInfo, api_.LLVMInitializeAArch64Target,
                        api_.LLVMInitializeAArch64TargetMC, api_.LLVMInitializeAArch64AsmPrinter};
#else
    const char* arch = "X86";
    void (*init[])() = {api_.LLVMInitializeX86TargetInfo, api_.LLVMInitializeX86Target,
                        api_.LLVMInitializeX86TargetMC, api_.LLVMInitializeX86AsmPrinter};
#endif
    for (auto fn : init)
      if (!fn)
        throw DeviceError(
            ::tinyt::detail::cat("tinyt: '", lib_.path(), "' has no ", arch, " target"));
    for (auto fn : init) fn();
  }

  llvm_c::TargetMachineRef host_machine(llvm_c::TargetRef target) const {
    return api_.LLVMCreateTargetMachine(target, triple_.c_str(), cpu_.c_str(), features_.c_str(),
                                        llvm_c::CodeGenLevelAggressive, llvm_c::RelocDefault,
                                        llvm_c::CodeModelJITDefault);
  }

  std::string version() const {
    if (api_.LLVMGetVersion) {
      unsigned major = 0, minor = 0, patch = 0;
      api_.LLVMGetVersion(&major, &minor, &patch);
      return ::tinyt::detail::cat(major, ".", minor, ".", patch);
    }
    // before LLVM 16 only the file tells: the real one, wherever the name led the loader
    Dl_info info{};
    std::string file = lib_.path();
    if (dladdr(std::bit_cast<void*>(api_.LLVMRunPasses), &info) && info.dli_fname)
      file = info.dli_fname;
    return detail::llvm_version_from_path(file);
  }

  Library lib_;
  llvm_c::Api api_;
  std::mutex mutex_, session_mutex_;
  std::string session_errors_;  // what the JIT reported since the last failed lookup
  std::atomic<uint64_t> compiles_{0};
  std::unordered_map<std::string, Function*> loaded_;  // symbol -> its code, each linked once
  std::string triple_, cpu_, features_, data_layout_, version_, identity_;
  // declared last, destroyed first: the JIT reports into the members above until it is gone
  std::unique_ptr<llvm_c::OpaqueTargetMachine, void (*)(llvm_c::TargetMachineRef)> tm_{nullptr,
                                                                                       nullptr};
  std::unique_ptr<llvm_c::OpaqueOrcLLJIT, std::function<void(llvm_c::OrcLLJITRef)>> jit_;
  std::unique_ptr<llvm_c::OpaquePassBuilderOptions, void (*)(llvm_c::PassBuilderOptionsRef)>
      options_{nullptr, nullptr};
};

/// The process-wide LLVM JIT for `target` ("host", or "CPU[,FEATURES]": see LLVMJit), started at
/// its first use (reading TINYT_LLVM_PATH then). Never destroyed: kernels it compiled may run until
/// the process ends. Thread-safe.
inline LLVMJit& llvm_jit(const std::string& target) {
  static std::mutex mutex;
  static auto* jits = new std::map<std::string, std::unique_ptr<LLVMJit>>;
  std::lock_guard lock(mutex);
  std::unique_ptr<LLVMJit>& jit = (*jits)[target.empty() ? "host" : target];
  if (!jit) jit = std::make_unique<LLVMJit>(LLVMJit::default_candidates(), target);
  return *jit;
}
/// The process-wide LLVM JIT for the host CPU.
inline LLVMJit& default_llvm() { return llvm_jit("host"); }

inline bool LLVMJit::available() noexcept {
  try {
    default_llvm();
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace backend
}  // namespace tinyt::inline v0

#undef TINYT_LLVM_C_API
