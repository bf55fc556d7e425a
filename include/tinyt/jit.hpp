// TinyJit: capture the kernels a function launches once, then replay them with new inputs.
//
// The first call runs the function as it is (it may realize weights, make optimizer state). The
// second runs it again and records every exec item it launches, with its buffers; then the
// intermediate buffers are planned once (memory_plan in engine/jit_impl.hpp), so a replay
// allocates nothing. Every later call is a replay: the inputs' memory is swapped into its slots,
// the symbolic variables get the values the arguments bind, and the kernels launch in order;
// nothing is scheduled or compiled.
//
// What a function may do: tensor operations, realizes and assigns (a training step). What it may
// not: work on the host the kernels do not see (reading an item to branch on, copying new data
// in with from_vector, building constants that change per call): a replay repeats the kernels of
// the second call. A replay's outputs are the JIT's own memory, overwritten by the next call, as
// in tinygrad. JIT=0 turns capture off: every call just runs the function.
#pragma once

#include <memory>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tensor.hpp"

namespace tinyt::inline v0 {

namespace detail {
/// What TinyJit does with one call.
enum class JitMode { run, capture, replay };

/// The non-template part of TinyJit (engine/jit_impl.hpp): the captured exec items and memory.
class JitCore {
 public:
  JitCore();
  ~JitCore();
  JitCore(const JitCore&) = delete;
  JitCore& operator=(const JitCore&) = delete;

  /// What the next call does (JIT=0: always run).
  JitMode next_mode();
  /// Realizes the inputs of a call (a replay reads their memory; a run realizes them first too).
  static void realize_inputs(const std::vector<Tensor>& inputs);
  /// Starts recording the exec items this thread launches.
  void begin_capture(const std::vector<Tensor>& inputs, const std::vector<UOp>& binds);
  /// Stops recording once the outputs are realized; plans the intermediate memory.
  void end_capture(const std::vector<Tensor>& outputs);
  /// Stops recording after the function threw: the next call captures again.
  void abort_capture();
  /// Launches the captured items on these inputs; returns the outputs.
  std::vector<Tensor> replay(const std::vector<Tensor>& inputs, const std::vector<UOp>& binds);
  /// How many exec items a replay launches (0 before capture).
  size_t captured_count() const;
  /// Writes the captured step as one C file and its weights as safetensors (engine/export_c.hpp).
  void export_c(const std::string& c_path, const std::string& weights_path) const;
  /// Writes the captured step as a web page's model into `dir` (engine/export_webgpu.hpp).
  void export_webgpu(const std::string& dir, const std::string& page_script) const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The tensors and bound variables among a call's arguments.
template <class A> void jit_argument(const A& a, std::vector<Tensor>& inputs, std::vector<UOp>& binds) {
  using T = std::decay_t<A>;
  if constexpr (std::is_base_of_v<Tensor, T>) {
    inputs.push_back(a);
  } else if constexpr (std::is_same_v<T, UOp>) {
    if (a.op() != Ops::BIND)
      throw Error(::tinyt::detail::cat("TinyJit: a UOp argument must be a bound Variable (v.bind(n)), not a ", op_name(a.op())));
    binds.push_back(a);
  } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
    inputs.insert(inputs.end(), a.begin(), a.end());
  }
  // anything else (a number, a flag) is part of the function: a replay repeats its value
}

// The tensors a function returns, in order, and the same kind of value rebuilt from tensors:
// a Tensor (or anything that converts to one, an expression), a vector of them, a tuple or pair.
template <class R> struct JitResult {
  static_assert(std::is_convertible_v<R, Tensor>,
                "TinyJit: the function returns void, a Tensor, a vector of Tensors, or a tuple or pair of them");
  using type = Tensor;
  static void collect(const R& r, std::vector<Tensor>& out) { out.push_back(Tensor(r)); }
  static type rebuild(const std::vector<Tensor>& t, size_t& i) { return t.at(i++); }
};
template <> struct JitResult<std::vector<Tensor>> {
  using type = std::vector<Tensor>;
  static void collect(const std::vector<Tensor>& r, std::vector<Tensor>& out) { out.insert(out.end(), r.begin(), r.end()); }
  static type rebuild(const std::vector<Tensor>& t, size_t& i) {
    std::vector<Tensor> r(t.begin() + static_cast<std::ptrdiff_t>(i), t.end());
    i = t.size();
    return r;
  }
};
template <class... Ts> struct JitResult<std::tuple<Ts...>> {
  using type = std::tuple<typename JitResult<Ts>::type...>;
  static void collect(const std::tuple<Ts...>& r, std::vector<Tensor>& out) {
    std::apply([&](const auto&... x) { (JitResult<std::decay_t<decltype(x)>>::collect(x, out), ...); }, r);
  }
  static type rebuild(const std::vector<Tensor>& t, size_t& i) { return type{JitResult<Ts>::rebuild(t, i)...}; }
};
template <class A, class B> struct JitResult<std::pair<A, B>> {
  using type = std::pair<typename JitResult<A>::type, typename JitResult<B>::type>;
  static void collect(const std::pair<A, B>& r, std::vector<Tensor>& out) {
    JitResult<A>::collect(r.first, out), JitResult<B>::collect(r.second, out);
  }
  static type rebuild(const std::vector<Tensor>& t, size_t& i) {
    auto a = JitResult<A>::rebuild(t, i);
    return {std::move(a), JitResult<B>::rebuild(t, i)};
  }
};
}  // namespace detail

/// `TinyJit step(f)`: `step(args...)` calls f; the second call captures the kernels it launches,
/// later calls replay them with the new tensor arguments (same number, shapes up to bound
/// variables, dtypes and devices; a change throws) and the new values of bound-Variable arguments.
template <class F> class TinyJit {
 public:
  explicit TinyJit(F f) : f_(std::move(f)) {}

  template <class... Args> auto operator()(Args&&... args) {
    using R = std::decay_t<std::invoke_result_t<F&, Args&...>>;
    std::vector<Tensor> inputs, out;
    std::vector<UOp> binds;
    (detail::jit_argument(args, inputs, binds), ...);
    const detail::JitMode mode = core_->next_mode();
    if (mode == detail::JitMode::replay) {
      out = core_->replay(inputs, binds);
    } else {
      detail::JitCore::realize_inputs(inputs);
      if (mode == detail::JitMode::capture) core_->begin_capture(inputs, binds);
      try {
        if constexpr (std::is_void_v<R>) f_(args...);
        else detail::JitResult<R>::collect(f_(args...), out);
        if (mode == detail::JitMode::capture) core_->end_capture(out);
        else realize_tensors(out);
      } catch (...) {
        if (mode == detail::JitMode::capture) core_->abort_capture();
        throw;
      }
    }
    if constexpr (!std::is_void_v<R>) {
      size_t i = 0;
      return detail::JitResult<R>::rebuild(out, i);
    }
  }

  /// How many kernels (and copies) a replay launches; 0 before the capture.
  size_t captured_count() const { return core_->captured_count(); }
  /// Writes the captured step as one standalone C file (`c_path`) and the memory it reads as its
  /// weights (`weights_path`, safetensors): it builds with a plain C compiler, without tinyt.
  /// The step must have been captured on the CPU.
  void export_c(const std::string& c_path, const std::string& weights_path) const { core_->export_c(c_path, weights_path); }
  /// Writes the step, captured on WEBGPU, into the folder `dir` for a web page: model.js (an ES
  /// module: `load(device?)`, `run(inputs) -> outputs`), a .wgsl file per kernel, its weights as
  /// weights.safetensors, index.html and page.js (`page_script`, or a page running it on zeros).
  void export_webgpu(const std::string& dir, const std::string& page_script = "") const { core_->export_webgpu(dir, page_script); }

 private:
  F f_;
  std::unique_ptr<detail::JitCore> core_ = std::make_unique<detail::JitCore>();
};

}  // namespace tinyt::inline v0
