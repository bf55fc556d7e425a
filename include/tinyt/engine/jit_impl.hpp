// TinyJit's engine part (jit.hpp): recording exec items, planning their memory once, replaying.
#pragma once

#include <unordered_set>

#include "../jit.hpp"
#include "../tensor_impl.hpp"
#include "export_c.hpp"
#include "export_webgpu.hpp"
#include "realize.hpp"

namespace tinyt::inline v0 {
namespace detail {

/// One captured exec item: what it runs, on what, and where its inputs and variables go.
struct JitItem {
  engine::ExecItem item;
  std::vector<UOp> vars;                              // the kernel's variables, in its order
  std::vector<std::pair<size_t, size_t>> input_slots;  // (buffer slot, input memory number)
  bool in_place = false;                               // it overwrites memory others may hold views of
};

struct JitCore::State {
  int64_t calls = 0;
  bool enabled = getenv_int("JIT", 1) != 0;
  bool captured = false;
  std::vector<engine::CapturedItem> recording;
  std::vector<engine::HostFill> fills;  // memory the host fills anew each call (random keys)
  std::vector<engine::HostCheck> checks;  // checks of computed values (CHECK_OOB), in launch order
  std::vector<std::shared_ptr<Buffer>> capture_inputs;  // the memory of the capture's inputs (parts each)
  std::vector<size_t> memory_input;                      // ... the input each is of
  std::vector<JitItem> items;
  // what the capture was called with: each input's shape, dtype and device
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  std::vector<std::string> devices;
  std::vector<Sharding> shardings;  // ... and how it is split across them
  std::vector<UOp> outputs;  // where each output's value lives (views of the JIT's memory)
  std::vector<int64_t> output_inputs;  // per output: the input it returns as it is, else -1
};

TINYT_INLINE JitCore::JitCore() : s_(std::make_unique<State>()) {}
TINYT_INLINE JitCore::~JitCore() = default;
TINYT_INLINE size_t JitCore::captured_count() const { return s_->items.size(); }

TINYT_INLINE JitMode JitCore::next_mode() {
  const int64_t call = s_->calls++;
  if (!s_->enabled || call == 0) return JitMode::run;
  return s_->captured ? JitMode::replay : JitMode::capture;
}

TINYT_INLINE void JitCore::realize_inputs(const std::vector<Tensor>& inputs) { realize_tensors(inputs); }

namespace jit {
// The memory holding a realized input: its whole buffer, in the input's own (row-major) layout;
// on several devices, each device's part's.
inline std::vector<std::shared_ptr<Buffer>> input_memory(const Tensor& t, size_t k) {
  const UOp& u = t.uop();
  std::vector<std::shared_ptr<Buffer>> out;
  for (const UOp& part : u.op() == Ops::MULTI ? u.src() : std::vector<UOp>{u}) {
    const UOp base = graph::base_buffer(part);
    if (!base)
      throw ShapeError(cat("TinyJit: input ", k, " of shape ", t.shape(),
                           " is a view of other memory; pass t.contiguous() so the replay can read it"));
    out.push_back(graph::buffer_of(base));
  }
  return out;
}

// The values the bound variables among the arguments and in the inputs' shapes give.
inline schedule::VarVals bound_values(const std::vector<Tensor>& inputs, const std::vector<UOp>& binds) {
  schedule::VarVals vals;
  for (const UOp& b : binds) vals.bind_all(b);
  for (const Tensor& t : inputs)
    for (const sint& d : t.shape())
      if (!d.is_int()) vals.bind_all(d.as_uop());
  return vals;
}

// The memory every node reachable from `roots` holds or reads (through realized values).
inline std::unordered_set<const Buffer*> reachable_memory(const std::vector<UOp>& roots) {
  std::unordered_set<const Buffer*> out;
  std::unordered_set<const UOpNode*> seen;
  std::vector<UOp> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    UOp u = std::move(stack.back());
    stack.pop_back();
    if (!u || !seen.insert(u.get()).second) continue;
    if (u.op() == Ops::BUFFER) out.insert(graph::buffer_of(u).get());
    if (UOp view = graph::realized(u); view && !(view == u)) stack.push_back(view);
    for (const UOp& x : u.src()) stack.push_back(x);
  }
  return out;
}

// Gives the intermediate buffers of the items (`intermediate` says which) shared memory: a buffer
// takes the memory of an earlier one of the same size and device whose last use has passed. A
// buffer an item reads before any item writes it holds a value from before the step: it keeps
// its memory. Returns how many buffers there were and how many memories they share.
inline std::pair<size_t, size_t> plan_memory(std::vector<JitItem>& items,
                                             const std::function<bool(const Buffer*)>& intermediate) {
  std::unordered_map<const Buffer*, size_t> first, last;
  std::unordered_set<const Buffer*> read_first;
  for (size_t i = 0; i < items.size(); ++i)
    for (size_t j = 0; j < items[i].item.buffers.size(); ++j) {
      const Buffer* b = items[i].item.buffers[j].get();
      if (!b) continue;
      if (first.emplace(b, i).second && j != 0) read_first.insert(b);
      last[b] = i;
    }
  std::unordered_map<const Buffer*, std::shared_ptr<Buffer>> assigned;
  std::vector<std::shared_ptr<Buffer>> pool;  // memory whose last use has passed
  std::vector<std::pair<size_t, std::shared_ptr<Buffer>>> in_use;  // (last use, memory)
  size_t planned = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    for (std::shared_ptr<Buffer>& b : items[i].item.buffers) {
      if (!b || !intermediate(b.get()) || read_first.count(b.get())) continue;
      auto [it, fresh] = assigned.try_emplace(b.get());
      if (fresh) {
        ++planned;
        auto fit = std::find_if(pool.begin(), pool.end(), [&](const std::shared_ptr<Buffer>& m) {
          return m->nbytes() == b->nbytes() && m->device() == b->device();
        });
        if (fit != pool.end()) {
          it->second = *fit;
          pool.erase(fit);
        } else {
          it->second = b;
        }
        in_use.emplace_back(last.at(b.get()), it->second);
      }
      b = it->second;
    }
    for (auto u = in_use.begin(); u != in_use.end();) {
      if (u->first <= i) pool.push_back(u->second), u = in_use.erase(u);
      else ++u;
    }
  }
  std::unordered_set<const Buffer*> memories;
  for (const auto& [b, m] : assigned) memories.insert(m.get());
  return {planned, memories.size()};
}

}  // namespace jit

TINYT_INLINE void JitCore::begin_capture(const std::vector<Tensor>& inputs, const std::vector<UOp>& binds) {
  (void)jit::bound_values(inputs, binds);  // two bindings of one variable: an error now, not at replay
  s_->capture_inputs.clear(), s_->memory_input.clear();
  for (size_t k = 0; k < inputs.size(); ++k) {
    for (std::shared_ptr<Buffer>& memory : jit::input_memory(inputs[k], k)) {
      for (size_t j = 0; j < s_->capture_inputs.size(); ++j)
        if (s_->capture_inputs[j] == memory)
          throw Error(cat("TinyJit: inputs ", s_->memory_input[j], " and ", k, " are the same memory; a replay swaps ",
                          "each input's own memory in, so pass distinct tensors (or one)"));
      s_->capture_inputs.push_back(std::move(memory));
      s_->memory_input.push_back(k);
    }
    s_->shapes.push_back(inputs[k].shape());
    s_->dtypes.push_back(inputs[k].dtype());
    s_->devices.push_back(inputs[k].device());
    s_->shardings.push_back(graph::meta(inputs[k].uop()).sharding);
  }
  s_->recording.clear();
  s_->fills.clear();
  s_->checks.clear();
  engine::capture_sink() = &s_->recording;
  engine::host_fill_sink() = &s_->fills;
  engine::host_check_sink() = &s_->checks;
}

TINYT_INLINE void JitCore::abort_capture() {
  engine::capture_sink() = nullptr;
  engine::host_fill_sink() = nullptr;
  engine::host_check_sink() = nullptr;
  s_->recording.clear();
  s_->fills.clear();
  s_->checks.clear();
  s_->capture_inputs.clear();
  s_->shapes.clear(), s_->dtypes.clear(), s_->devices.clear(), s_->shardings.clear();
  s_->calls = 1;  // the next call captures again
}

TINYT_INLINE void JitCore::end_capture(const std::vector<Tensor>& outputs) {
  try {
    realize_tensors(outputs);  // the outputs are part of the step: their kernels are captured too
  } catch (...) {
    abort_capture();
    throw;
  }
  engine::capture_sink() = nullptr;
  engine::host_fill_sink() = nullptr;
  engine::host_check_sink() = nullptr;
  for (engine::CapturedItem& c : s_->recording) {
    JitItem item{std::move(c.item), std::move(c.vars), {}, c.in_place};
    for (size_t j = 0; j < item.item.buffers.size(); ++j)
      for (size_t k = 0; k < s_->capture_inputs.size(); ++k)
        if (item.item.buffers[j] == s_->capture_inputs[k]) {
          item.input_slots.emplace_back(j, k);
          item.item.buffers[j] = nullptr;  // filled at each replay
        }
    s_->items.push_back(std::move(item));
  }
  s_->recording.clear();
  for (const Tensor& t : outputs) {
    s_->outputs.push_back(t.uop());
    // an input returned as it is stays that input at a replay, not the capture's
    const UOp base = graph::base_buffer(t.uop());
    const auto it = std::find(s_->capture_inputs.begin(), s_->capture_inputs.end(),
                              base ? graph::buffer_of(base) : nullptr);
    s_->output_inputs.push_back(base && it != s_->capture_inputs.end()
                                    ? static_cast<int64_t>(s_->memory_input[static_cast<size_t>(it - s_->capture_inputs.begin())])
                                    : -1);
  }
  s_->capture_inputs.clear();
  // what outlives the step keeps its memory: the outputs, and whatever a live tensor can reach
  std::vector<UOp> roots = s_->outputs;
  for (auto& d : Tensor::live_tensors().snapshot()) roots.push_back(Tensor::shared_fields(*d).first);
  std::unordered_set<const Buffer*> kept = jit::reachable_memory(roots);
  for (const engine::HostCheck& c : s_->checks)
    for (const std::shared_ptr<Buffer>& b : c.reads) kept.insert(b.get());  // read by the host after its kernel
  const auto [buffers, memories] = jit::plan_memory(s_->items, [&](const Buffer* b) { return !kept.count(b); });
  s_->captured = true;
  if (debug_level() >= 1)
    std::cerr << "TinyJit: captured " << s_->items.size() << " exec item(s); " << buffers
              << " intermediate buffer(s) share " << memories << " memories\n";
}

TINYT_INLINE void JitCore::export_c(const std::string& c_path, const std::string& weights_path) const {
  if (!s_->captured) throw Error("TinyJit.export_c: the step is not captured yet (it is captured at its second call)");
  std::vector<engine::ExportItem> items;
  for (const JitItem& j : s_->items) {
    const auto* compiled = dynamic_cast<const engine::CompiledRunner*>(j.item.runner.get());
    items.push_back({compiled ? &compiled->kernel() : nullptr, j.item.buffers, j.input_slots, j.vars});
  }
  engine::export_c(items, {s_->shapes, s_->dtypes, s_->outputs}, c_path, weights_path);
}

TINYT_INLINE void JitCore::export_webgpu(const std::string& dir, const std::string& page_script) const {
  if (!s_->captured) throw Error("TinyJit.export_webgpu: the step is not captured yet (it is captured at its second call)");
  for (size_t k = 0; k < s_->devices.size(); ++k)
    if (s_->devices[k] != "WEBGPU")
      throw DeviceError(cat("export_webgpu: input ", k, " of the step is on ", s_->devices[k],
                            "; capture it on WEBGPU (DEV=WEBGPU) to export it for a web page"));
  if (!s_->fills.empty())
    throw Error("TinyJit.export_webgpu: the step draws random numbers on the host at each call; a web page cannot replay it");
  std::vector<engine::ExportItem> items;
  for (const JitItem& j : s_->items) {
    const auto* compiled = dynamic_cast<const engine::CompiledRunner*>(j.item.runner.get());
    items.push_back({compiled ? &compiled->kernel() : nullptr, j.item.buffers, j.input_slots, j.vars, j.in_place});
  }
  engine::export_webgpu(items, {s_->shapes, s_->dtypes, s_->outputs}, dir, page_script);
}

TINYT_INLINE std::vector<Tensor> JitCore::replay(const std::vector<Tensor>& inputs, const std::vector<UOp>& binds) {
  if (inputs.size() != s_->shapes.size())
    throw ShapeError(cat("TinyJit: called with ", inputs.size(), " tensor(s); it was captured with ", s_->shapes.size()));
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!inputs[k].defined()) throw Error(cat("TinyJit: input ", k, " is the empty Tensor() handle"));
    if (!(inputs[k].shape() == s_->shapes[k]))
      throw ShapeError(cat("TinyJit: input ", k, " has shape ", inputs[k].shape(), "; it was captured with ", s_->shapes[k]));
    if (inputs[k].dtype() != s_->dtypes[k])
      throw DTypeError(cat("TinyJit: input ", k, " is ", inputs[k].dtype().name(), "; it was captured with ", s_->dtypes[k].name()));
    if (inputs[k].device() != s_->devices[k])
      throw DeviceError(cat("TinyJit: input ", k, " is on ", inputs[k].device(), "; it was captured on ", s_->devices[k]));
    if (!(graph::meta(inputs[k].uop()).sharding == s_->shardings[k]))
      throw ShapeError(cat("TinyJit: input ", k, " is split across ", inputs[k].device(), " otherwise than when it was captured (axis ",
                           graph::meta(inputs[k].uop()).sharding.axis, ", then ", s_->shardings[k].axis, ")"));
  }
  realize_tensors(inputs);
  std::vector<std::shared_ptr<Buffer>> memory;  // in the order of the capture's
  for (size_t k = 0; k < inputs.size(); ++k)
    for (std::shared_ptr<Buffer>& part : jit::input_memory(inputs[k], k)) memory.push_back(std::move(part));
  const schedule::VarVals vals = jit::bound_values(inputs, binds);
  // every item's variable values before anything runs: a replay stopped halfway would leave the
  // weights that its first kernels update changed
  for (JitItem& j : s_->items)
    for (size_t v = 0; v < j.vars.size(); ++v) {
      const auto b = std::find_if(vals.vals.begin(), vals.vals.end(), [&](const auto& x) { return x.first == j.vars[v]; });
      if (b == vals.vals.end())
        throw ShapeError(cat("TinyJit: variable '", j.vars[v].arg()[0].get<std::string>(), "' has no value at this replay; pass its ",
                             "binding (", j.vars[v].arg()[0].get<std::string>(), ".bind(n)) as an argument of the step (nothing ran)"));
      j.item.vars[v] = b->second;
    }
  const engine::RunKnobs knobs = engine::RunKnobs::current();
  const profile::Span span("TinyJit replay", "jit", knobs.profile);
  for (const engine::HostFill& f : s_->fills) {
    const std::vector<uint8_t> bytes = f.fill();
    f.buffer->copyin(bytes.data(), bytes.size());
  }
  auto next_check = s_->checks.begin();
  auto run_checks = [&](size_t ran) {  // the checks the step made once `ran` items had run
    for (; next_check != s_->checks.end() && next_check->after <= ran; ++next_check) next_check->check();
  };
  for (size_t i = 0; i < s_->items.size(); ++i) {
    run_checks(i);
    JitItem& j = s_->items[i];
    for (const auto& [slot, k] : j.input_slots) j.item.buffers[slot] = memory[k];
    engine::run_item(j.item, knobs);
    if (j.in_place) j.item.buffers[0]->overwritten();
    for (const auto& [slot, k] : j.input_slots) j.item.buffers[slot] = nullptr;
  }
  run_checks(s_->items.size());
  std::vector<Tensor> out;
  for (size_t k = 0; k < s_->outputs.size(); ++k)
    out.push_back(s_->output_inputs[k] >= 0 ? inputs[static_cast<size_t>(s_->output_inputs[k])]
                                            : Tensor(schedule::detail::rebind(s_->outputs[k], vals)));
  return out;
}

}  // namespace detail
}  // namespace tinyt::inline v0
