// A step captured on WEBGPU as a folder a web page runs (tinygrad's export_model): the kernels'
// WGSL as the WEBGPU device compiled them, the step's weights, and an ES module that replays the
// kernels in a browser's WebGPU, with no network access, no CDN and no build step:
//
//   model.js              load(device?) -> the model; run(inputs) -> outputs (typed arrays)
//   k<n>_<kernel>.wgsl    one file per kernel, as WEBGPU ran it
//   weights.safetensors   every buffer the step reads or assigns to before writing it whole, other
//                         than its inputs
//   index.html, page.js   a page that loads the model; page.js is the caller's script, or one that
//                         runs the model on zeros and shows what comes out
//
// model.js has no dependencies and reads its files relative to its own URL, so the folder is
// served as it is (`python3 -m http.server`; browsers do not fetch from file://). The run is
// the native replay's: the same buffers, the same dispatches in the same order, in one command
// encoder. Where a kernel binds one buffer twice (an in-place update), it reads a copy made just
// before, as backend/webgpu.hpp does: WebGPU binds a writable buffer once per dispatch.
//
// Not exported (an Error naming export_webgpu): steps with symbolic variables, steps that draw
// random numbers on the host at each call, steps on other devices.
#pragma once

#include <filesystem>
#include <map>
#include <sstream>

#include "export_c.hpp"

namespace tinyt::inline v0 {
namespace engine {

namespace detail {
// The runtime part of model.js, after the step's tables (`inputs`, `outputs`, `sizes`, `weights`,
// `kernels`, `steps`; see export_webgpu below).
inline constexpr const char* webgpu_model_runtime = R"JS(
const typed = { float32: Float32Array, int32: Int32Array, uint32: Uint32Array, int16: Int16Array, uint16: Uint16Array,
                int8: Int8Array, uint8: Uint8Array, bool: Uint8Array, float16: Uint16Array, bfloat16: Uint16Array };
const words = (n) => Math.max(4, Math.ceil(n / 4) * 4);  // WebGPU sizes and writes are whole 4-byte words
const here = new URL(".", import.meta.url);

async function fetched(file) {
  const response = await fetch(new URL(file, here));
  if (!response.ok) throw new Error(`model.js: cannot fetch ${file} (HTTP ${response.status})`);
  return response;
}

// The tensors of a safetensors file: 8 bytes of header length (little-endian), a JSON header,
// then the data; name -> bytes.
function safetensors(bytes) {
  const view = new DataView(bytes);
  if (bytes.byteLength < 8) throw new Error("model.js: weights.safetensors is shorter than its 8-byte header length");
  const n = Number(view.getBigUint64(0, true));
  if (8 + n > bytes.byteLength) throw new Error(`model.js: weights.safetensors: a header of ${n} bytes in a file of ${bytes.byteLength}`);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(bytes, 8, n)));
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const [begin, end] = t.data_offsets;
    if (!(begin <= end && 8 + n + end <= bytes.byteLength)) throw new Error(`model.js: weights.safetensors: ${name} lies outside the file`);
    out[name] = new Uint8Array(bytes, 8 + n + begin, end - begin);
  }
  return out;
}

// Writes `bytes` at the start of `buffer`, padded to whole words.
function write(device, buffer, bytes) {
  let data = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (data.byteLength % 4 !== 0 || data.byteOffset % 4 !== 0) {
    const padded = new Uint8Array(words(data.byteLength));
    padded.set(data);
    data = padded;
  }
  device.queue.writeBuffer(buffer, 0, data);
}

// The errors of a shader module's compilation, as one message.
async function compile_errors(module, file) {
  const info = await module.getCompilationInfo();
  const errors = info.messages.filter((m) => m.type === "error");
  return errors.length ? `${file}: ` + errors.map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`).join("; ") : "";
}

/// Loads the model on `device` (default: the browser's first adapter's), with its weights and
/// pipelines; the model's `run(inputs)` gives the outputs.
export async function load(device) {
  if (!device) {
    if (!navigator.gpu) throw new Error("model.js: this browser has no WebGPU (navigator.gpu)");
    const adapter = await navigator.gpu.requestAdapter();
    if (!adapter) throw new Error("model.js: WebGPU offers no adapter");
    const biggest = Math.max(4, ...sizes.map(words));
    const requiredLimits = {};
    for (const limit of ["maxStorageBufferBindingSize", "maxBufferSize"]) {
      if (biggest <= adapter.limits[limit]) { if (biggest > 128 << 20) requiredLimits[limit] = biggest; continue; }
      throw new Error(`model.js: a buffer of ${biggest} bytes; the adapter's ${limit} is ${adapter.limits[limit]}`);
    }
    device = await adapter.requestDevice({ requiredLimits });
  }
  device.pushErrorScope("validation");
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const buffers = sizes.map((n) => device.createBuffer({ size: words(n), usage }));
  const file = safetensors(await (await fetched("weights.safetensors")).arrayBuffer());
  for (const [b, name] of Object.entries(weights)) {
    if (!file[name] || file[name].byteLength !== sizes[b])
      throw new Error(`model.js: weights.safetensors has no ${name} of ${sizes[b]} bytes`);
    write(device, buffers[b], file[name]);
  }
  const pipelines = [];
  for (const k of kernels) {
    const module = device.createShaderModule({ label: k.file, code: await (await fetched(k.file)).text() });
    const errors = await compile_errors(module, k.file);
    if (errors) throw new Error(`model.js: the kernel does not compile: ${errors}`);
    const entries = Array.from({ length: k.buffers }, (_, i) => ({ binding: i, visibility: GPUShaderStage.COMPUTE, buffer: { type: "storage" } }));
    const layout = device.createBindGroupLayout({ entries });
    const pipeline = await device.createComputePipelineAsync({
      label: k.file, layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }), compute: { module, entryPoint: k.entry } });
    pipelines.push({ pipeline, layout });
  }
  // each dispatch's bind group; a buffer bound a second time is read from a copy made just before
  const launches = steps.map((s) => {
    if (s.copy) return { copy: s.copy.map((b, i) => (i < 2 ? buffers[b] : b)) };
    const snapshots = [];
    const entries = s.bind.map((b, i) => {
      let buffer = buffers[b];
      if (s.bind.indexOf(b) !== i) {
        buffer = device.createBuffer({ size: words(sizes[b]), usage });
        snapshots.push([buffers[b], buffer, words(sizes[b])]);
      }
      return { binding: i, resource: { buffer } };
    });
    const { pipeline, layout } = pipelines[s.kernel];
    return { pipeline, group: device.createBindGroup({ layout, entries }), groups: s.groups, snapshots };
  });
  const readback = outputs.map((t) => device.createBuffer({ size: words(t.bytes), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }));
  const error = await device.popErrorScope();
  if (error) throw new Error(`model.js: loading the model: ${error.message}`);

  let last = Promise.resolve();
  async function run_once(values) {
    if (!Array.isArray(values) || values.length !== inputs.length)
      throw new Error(`model.js: run takes an array of ${inputs.length} input(s)`);
    values.forEach((v, k) => {
      if (!ArrayBuffer.isView(v) || v.byteLength !== inputs[k].bytes)
        throw new Error(`model.js: run: input ${k} must be ${inputs[k].bytes} bytes (${inputs[k].dtype} ${JSON.stringify(inputs[k].shape)}), got ${v && v.byteLength}`);
      write(device, buffers[k], v);
    });
    device.pushErrorScope("validation");
    const encoder = device.createCommandEncoder();
    let pass = null;
    for (const l of launches) {
      if (l.copy || l.snapshots.length) { if (pass) pass.end(); pass = null; }
      if (l.copy) { encoder.copyBufferToBuffer(l.copy[1], 0, l.copy[0], 0, l.copy[2]); continue; }
      for (const [from, to, n] of l.snapshots) encoder.copyBufferToBuffer(from, 0, to, 0, n);
      if (!pass) pass = encoder.beginComputePass();
      pass.setPipeline(l.pipeline);
      pass.setBindGroup(0, l.group);
      pass.dispatchWorkgroups(...l.groups);
    }
    if (pass) pass.end();
    outputs.forEach((t, k) => encoder.copyBufferToBuffer(buffers[t.buffer], 0, readback[k], 0, words(t.bytes)));
    device.queue.submit([encoder.finish()]);
    const error = await device.popErrorScope();
    if (error) throw new Error(`model.js: run: ${error.message}`);
    await Promise.all(readback.map((r) => r.mapAsync(GPUMapMode.READ)));
    return outputs.map((t, k) => {
      const bytes = readback[k].getMappedRange().slice(0, t.bytes);
      readback[k].unmap();
      return new typed[t.dtype](bytes);
    });
  }
  // one run at a time: they share the buffers
  const run = (values) => (last = last.then(() => run_once(values), () => run_once(values)));
  return { device, run, inputs, outputs };
}

let loaded = null;
/// Runs the model (loading it first, on the default device) on `values`, one typed array per
/// input, row-major; resolves to one typed array per output.
export async function run(values) {
  if (!loaded) loaded = load();
  return (await loaded).run(values);
}
)JS";

// The page around a page.js: it imports the model itself.
inline constexpr const char* webgpu_index_html = R"(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>tinyt model</title>
<link rel="icon" href="data:,">
<style>
body { font: 15px system-ui, sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; } td, th { padding: 3px 8px; text-align: right; }
#status { color: #555; }
</style>
</head>
<body>
<h1 id="title">tinyt model</h1>
<p id="status">loading…</p>
<div id="out"></div>
<script type="module" src="page.js"></script>
</body>
</html>
)";

// The default page.js: the model on inputs of zeros; each output's shape and first values. It
// reports in window.tinytReport, as the demos' pages do.
inline constexpr const char* webgpu_default_page = R"JS(import * as model from "./model.js";

const status = document.getElementById("status");
try {
  const started = performance.now();
  const outputs = await model.run(model.inputs.map((t) => new Uint8Array(t.bytes)));
  const out = document.getElementById("out");
  outputs.forEach((o, k) => {
    const p = document.createElement("p");
    p.textContent = `output ${k} (${model.outputs[k].dtype} ${JSON.stringify(model.outputs[k].shape)}): ` +
                    Array.from(o.slice(0, 8)).join(", ") + (o.length > 8 ? ", …" : "");
    out.append(p);
  });
  status.textContent = `ran on inputs of zeros in ${(performance.now() - started).toFixed(0)} ms`;
  window.tinytReport = { outputs: outputs.map((o) => Array.from(o)) };
} catch (e) {
  status.textContent = String(e);
  window.tinytReport = { error: String(e) };
}
)JS";

inline std::string js_shape(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i].as_int());
  return s + "]";
}
}  // namespace detail

/// Writes the step (captured on WEBGPU) into the folder `dir` (made if missing) as a web page's
/// model: model.js, a .wgsl file per kernel, weights.safetensors, index.html and page.js (the
/// text `page_script`, or a page that runs the model on zeros when it is empty).
///
/// Work on the CPU inside the step is exported where it makes constants (an arange the host
/// computes and copies in): a CPU kernel that reads no input and no memory it updates. Such
/// kernels run again here, in order, and what a copy moves from the CPU onto WEBGPU becomes a
/// weight that the page copies at the same point.
inline void export_webgpu(const std::vector<ExportItem>& items, const ExportSignature& sig, const std::string& dir,
                          const std::string& page_script = "") {
  using tinyt::detail::cat;
  // the page's buffers: the inputs, then the step's WEBGPU memory in order of first use, and a
  // constant for each copy from the CPU; the bytes of those that start with a value (weights)
  const size_t n_inputs = sig.input_shapes.size();
  std::vector<size_t> sizes;
  std::map<size_t, std::vector<uint8_t>> initial;
  std::map<const Buffer*, size_t> number;
  std::map<size_t, std::shared_ptr<Buffer>> memory;  // number -> WEBGPU memory
  std::set<const Buffer*> seen_cpu, read_first_cpu;  // CPU memory; ... from before the step
  for (size_t k = 0; k < n_inputs; ++k) {
    if (!sig.input_shapes[k].numel().is_int())
      throw Error(cat("export_webgpu: input ", k, " has the symbolic shape ", sig.input_shapes[k], "; only fixed shapes are exported"));
    sizes.push_back(static_cast<size_t>(sig.input_shapes[k].numel().as_int() * sig.input_dtypes[k].itemsize()));
  }
  std::set<size_t> read_first;
  std::vector<std::pair<const ExportItem*, std::vector<size_t>>> launches;  // (item, its buffers' numbers)
  for (const ExportItem& it : items) {
    if (!it.vars.empty())
      throw Error(cat("export_webgpu: the step has symbolic variables (", it.vars.size(), " in kernel ",
                      it.kernel ? it.kernel->program.name : "?", "); only steps of fixed shapes are exported so far"));
    if (!it.kernel && it.buffers.size() != 2)
      throw Error("export_webgpu: the step launches something that is neither a kernel nor a copy");
    for (const auto& [slot, k] : it.input_slots)
      if (k >= n_inputs) throw Error("export_webgpu: the step's inputs are split across devices; capture it on WEBGPU alone");
    auto device_of = [&](size_t j) { return it.buffers[j] ? it.buffers[j]->device() : std::string("WEBGPU"); };
    const size_t params = it.kernel ? std::min(it.buffers.size(), it.kernel->program.globals.size()) : 2;
    if (it.kernel && it.kernel->device == "CPU") {  // a constant, computed again now
      std::vector<void*> handles;
      for (size_t j = 0; j < params; ++j) {
        if (device_of(j) != "CPU" || !it.input_slots.empty())
          throw DeviceError(cat("export_webgpu: kernel ", it.kernel->program.name, " of the step runs on the CPU and reads ",
                                "the step's inputs or memory of another device; capture the whole step on WEBGPU"));
        const Buffer* b = it.buffers[j].get();
        if (j != 0 && !seen_cpu.count(b)) read_first_cpu.insert(b);
        if (j == 0 && read_first_cpu.count(b))
          throw DeviceError(cat("export_webgpu: kernel ", it.kernel->program.name, " of the step updates memory on the CPU; ",
                                "capture the whole step on WEBGPU"));
        seen_cpu.insert(b);
        handles.push_back(it.buffers[j]->ptr());
      }
      it.kernel->run(handles, {}, false);
      continue;
    }
    if (it.kernel && it.kernel->language != backend::Language::wgsl)
      throw DeviceError(cat("export_webgpu: kernel ", it.kernel->program.name, " ran on ", it.kernel->device,
                            "; capture the step on WEBGPU (DEV=WEBGPU) to export it for a web page"));
    std::vector<size_t> bind;
    std::set<size_t> fresh_here;
    for (size_t j = 0; j < params; ++j) {
      const auto input = std::find_if(it.input_slots.begin(), it.input_slots.end(), [&](const auto& s) { return s.first == j; });
      if (input != it.input_slots.end()) {
        bind.push_back(input->second);
        continue;
      }
      const std::shared_ptr<Buffer>& b = it.buffers.at(j);
      if (!it.kernel && j == 1 && b->device() == "CPU") {  // a copy of a constant: its bytes now
        std::vector<uint8_t> bytes(b->nbytes());
        if (!bytes.empty()) b->copyout(bytes.data(), bytes.size());
        initial.emplace(sizes.size(), std::move(bytes));
        bind.push_back(sizes.size());
        sizes.push_back(b->nbytes());
        continue;
      }
      if (b->device() != "WEBGPU")
        throw DeviceError(cat("export_webgpu: the step ran on ", b->device(), "; capture it on WEBGPU (DEV=WEBGPU) to export it for a web page"));
      auto [at, fresh] = number.try_emplace(b.get(), sizes.size());
      if (fresh) sizes.push_back(b->nbytes()), fresh_here.insert(at->second), memory.emplace(at->second, b);
      // read by the item that first uses it (an input slot, or an in-place update), or assigned
      // to by it, perhaps in part: it starts with its value (a weight)
      if ((j != 0 || it.in_place) && fresh_here.count(at->second)) read_first.insert(at->second);
      bind.push_back(at->second);
    }
    launches.emplace_back(&it, std::move(bind));
  }
  for (size_t n : read_first) {
    std::vector<uint8_t> bytes(memory.at(n)->nbytes());
    if (!bytes.empty()) memory.at(n)->copyout(bytes.data(), bytes.size());
    initial.emplace(n, std::move(bytes));
  }

  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& file, const std::string& text) {
    if (!tinyt::detail::write_file_atomically(std::filesystem::path(dir) / file, text))
      throw Error(cat("export_webgpu: cannot write ", (std::filesystem::path(dir) / file).string()));
  };
  std::ostringstream js;
  js << "// A step captured by tinyt's TinyJit on WEBGPU, for a web page (generated; see tinyt's\n"
     << "// engine/export_webgpu.hpp). `run(inputs)` takes one typed array per input, row-major:\n";
  js << "export const inputs = [\n";
  for (size_t k = 0; k < n_inputs; ++k)
    js << "  { dtype: \"" << sig.input_dtypes[k].name() << "\", shape: " << detail::js_shape(sig.input_shapes[k])
       << ", bytes: " << sizes[k] << " },\n";
  js << "];\n// ... and resolves to one per output:\nexport const outputs = [\n";
  for (size_t k = 0; k < sig.outputs.size(); ++k) {
    const UOp base = graph::base_buffer(sig.outputs[k]);
    if (!base) throw ShapeError(cat("export_webgpu: output ", k, " is not a whole buffer"));
    const std::shared_ptr<Buffer> memory_k = graph::buffer_of(base);
    if (memory_k->device() != "WEBGPU")
      throw DeviceError(cat("export_webgpu: output ", k, " of the step is on ", memory_k->device(),
                            "; capture it on WEBGPU (DEV=WEBGPU) to export it for a web page"));
    const auto it = number.find(memory_k.get());
    if (it == number.end())
      throw ShapeError(cat("export_webgpu: output ", k, " is not computed on WEBGPU by the step"));
    const Shape shape = graph::shape_of(sig.outputs[k]);
    js << "  { dtype: \"" << sig.outputs[k].dtype().name() << "\", shape: " << detail::js_shape(shape)
       << ", bytes: " << shape.numel().as_int() * sig.outputs[k].dtype().itemsize() << ", buffer: " << it->second << " },\n";
  }
  js << "];\n// the bytes of each buffer (the inputs first)\nconst sizes = [";
  for (size_t b = 0; b < sizes.size(); ++b) js << (b ? ", " : "") << sizes[b];
  js << "];\n// buffer -> its first value in weights.safetensors\nconst weights = {";
  std::map<std::string, Tensor> weights;
  for (const auto& [b, bytes] : initial) {
    const std::string name = cat("buffer_", b);
    weights.emplace(name, Tensor::from_blob(bytes.data(), {static_cast<int64_t>(bytes.size())}, dtypes::uint8, "CPU"));
    js << (weights.size() > 1 ? ", " : " ") << b << ": \"" << name << "\"";
  }
  js << " };\n// the kernels (entry points of their files) and the launches, in order\nconst kernels = [\n";
  std::map<const CompiledKernel*, size_t> kernel_number;
  for (const auto& [it, bind] : launches) {
    if (!it->kernel || kernel_number.count(it->kernel)) continue;
    const codegen::Program& p = it->kernel->program;
    const size_t n = kernel_number.size();
    const std::string file = cat("k", n, "_", detail::c_identifier(p.name), ".wgsl");
    kernel_number[it->kernel] = n;
    write(file, it->kernel->source);
    js << "  { file: \"" << file << "\", entry: \"" << p.name << "\", buffers: " << bind.size() << " },\n";
  }
  js << "];\nconst steps = [\n";
  for (const auto& [it, bind] : launches) {
    if (!it->kernel) {  // a copy onto WEBGPU, of whole words (the device's buffers are)
      js << "  { copy: [" << bind[0] << ", " << bind[1] << ", " << std::max<size_t>((sizes[bind[0]] + 3) / 4 * 4, 4) << "] },\n";
      continue;
    }
    const backend::LaunchDims dims = it->kernel->dims();
    js << "  { kernel: " << kernel_number.at(it->kernel) << ", bind: [";
    for (size_t j = 0; j < bind.size(); ++j) js << (j ? ", " : "") << bind[j];
    js << "], groups: [";
    for (int d = 0; d < 3; ++d) {
      if (dims.local[d] < 1 || dims.global[d] % dims.local[d] != 0)
        throw InternalError(cat("export_webgpu: kernel ", it->kernel->program.name, " has ", dims.global[d], " work-items in groups of ",
                                dims.local[d]));
      js << (d ? ", " : "") << dims.global[d] / dims.local[d];
    }
    js << "] },\n";
  }
  js << "];\n" << detail::webgpu_model_runtime;
  write("model.js", js.str());
  write("index.html", detail::webgpu_index_html);
  write("page.js", page_script.empty() ? std::string(detail::webgpu_default_page) : page_script);
  nn::state::safe_save(weights, (std::filesystem::path(dir) / "weights.safetensors").string());
}

}  // namespace engine
}  // namespace tinyt::inline v0
