// A captured step as one standalone C file: the kernels as the C renderer writes them, the
// buffers they run on, and a loader for the step's weights from a safetensors file written next
// to it. It builds with a plain C compiler (`cc -O2 -ffp-contract=off -c step.c`, then link with
// -lm) and needs nothing of tinyt:
//
//   int  tinyt_step_init(const char* weights_path);  // 0 on success; loads the weights
//   void tinyt_step_run(void* const* inputs, void* const* outputs, const long long* vars);
//   void tinyt_step_free(void);
//
// `inputs` and `outputs` point at row-major memory of the shapes and dtypes the capture had (the
// file's comments list them); `vars` holds the values of the symbolic variables, in the order the
// comments list (null when there are none). Kernels that ran on several threads run their parts
// one after another. -ffp-contract=off keeps a multiply and an add apart as tinyt does, so the C
// build computes the bits tinyt's CPU backends compute.
#pragma once

#include <map>
#include <set>
#include <sstream>

#include "../nn/safetensors.hpp"
#include "realize.hpp"

namespace tinyt::inline v0 {
namespace engine {

/// One launch of the step, as export_c needs it: the compiled kernel (null for a copy), its
/// buffers (null where an input goes), its variables.
struct ExportItem {
  const CompiledKernel* kernel = nullptr;
  std::vector<std::shared_ptr<Buffer>> buffers;
  std::vector<std::pair<size_t, size_t>> input_slots;  // (buffer slot, input number)
  std::vector<UOp> vars;
  bool in_place = false;  // it writes memory that holds a value from before (an assign; perhaps in part)
};

/// What the step reads and returns.
struct ExportSignature {
  std::vector<Shape> input_shapes;
  std::vector<DType> input_dtypes;
  std::vector<UOp> outputs;  // views of the step's memory (RESHAPE(BUFFER) or BUFFER)
};

namespace detail {
using tinyt::detail::cat;

inline std::string c_identifier(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}
// The byte size of an output under the variables' values `vars` (C expression over `vars[k]`).
inline std::string c_size_expr(const sint& numel, int64_t itemsize, const std::vector<UOp>& vars) {
  if (numel.is_int()) return cat(numel.as_int() * itemsize, "ULL");
  std::string text = expr_string(numel.unbound());
  for (size_t k = 0; k < vars.size(); ++k) {
    const std::string name = vars[k].arg()[0].get<std::string>();
    for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
      const bool starts = at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1]));
      const bool ends = at + name.size() >= text.size() || !std::isalnum(static_cast<unsigned char>(text[at + name.size()]));
      if (starts && ends) text.replace(at, name.size(), cat("vars[", k, "]"));
    }
  }
  return cat("(size_t)(", text, ") * ", itemsize, "ULL");
}
}  // namespace detail

/// Writes the step as C source to `c_path` and its weights (every buffer the step reads before
/// writing it, other than its inputs) to the safetensors file `weights_path`.
inline void export_c(const std::vector<ExportItem>& items, const ExportSignature& sig, const std::string& c_path,
                     const std::string& weights_path) {
  using detail::cat;
  // every buffer, numbered in order of first use; which ones the step reads before writing
  std::vector<std::shared_ptr<Buffer>> buffers;
  std::map<const Buffer*, size_t> number;
  std::set<size_t> read_first;
  for (const ExportItem& it : items)
    for (size_t j = 0; j < it.buffers.size(); ++j) {
      if (!it.buffers[j]) continue;
      if (it.buffers[j]->device() != "CPU")
        throw DeviceError(cat("export_c: the step ran on ", it.buffers[j]->device(), "; capture it on the CPU to export it as C"));
      auto [at, fresh] = number.try_emplace(it.buffers[j].get(), buffers.size());
      if (fresh) {
        buffers.push_back(it.buffers[j]);
        if (j != 0) read_first.insert(at->second);
      }
    }
  // the step's variables, every one any kernel takes, by name
  std::vector<UOp> vars;
  for (const ExportItem& it : items)
    for (const UOp& v : it.vars)
      if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
  std::sort(vars.begin(), vars.end(), schedule::VarVals::var_order);

  std::ostringstream c;
  c << "/* A step captured by tinyt's TinyJit, as plain C (generated; see tinyt's engine/export_c.hpp).\n"
    << " * Build: cc -O2 -ffp-contract=off -c " << std::filesystem::path(c_path).filename().string() << " (link with -lm)\n";
  for (size_t k = 0; k < sig.input_shapes.size(); ++k)
    c << " * input " << k << ": " << sig.input_dtypes[k].name() << " " << sig.input_shapes[k] << "\n";
  for (size_t k = 0; k < sig.outputs.size(); ++k)
    c << " * output " << k << ": " << sig.outputs[k].dtype().name() << " " << graph::shape_of(sig.outputs[k]) << "\n";
  for (size_t k = 0; k < vars.size(); ++k)
    c << " * vars[" << k << "]: " << vars[k].arg()[0].get<std::string>() << " in [" << vars[k].arg()[1].as_int() << ", "
      << vars[k].arg()[2].as_int() << "]\n";
  c << " */\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n";
  // the kernels, renamed so that names are unique in the file; each preamble (includes, helper
  // functions) once
  std::map<const CompiledKernel*, std::string> names;
  std::set<std::string> preambles;
  for (const ExportItem& it : items) {
    if (!it.kernel || names.count(it.kernel)) continue;
    codegen::Program p = it.kernel->program;
    if (!p.global_axes.empty())
      throw DeviceError(cat("export_c: kernel ", p.name, " was lowered for a GPU; capture the step on the CPU"));
    p.name = cat("tinyt_k", names.size(), "_", detail::c_identifier(p.name));
    names[it.kernel] = p.name;
    const std::string source = renderer::render_c(p), signature = "void " + p.name + "(";
    const size_t at = source.find(signature);
    TINYT_ASSERT(at != std::string::npos, "export_c: no signature in the C source of ", p.name);
    if (preambles.insert(source.substr(0, at)).second) c << source.substr(0, at);
    c << "static " << source.substr(at) << "\n";
  }
  c << "static void* tinyt_buffers[" << std::max<size_t>(buffers.size(), 1) << "];\n\n";
  c << "/* the weights: buffer_<n> of the safetensors file, found by name in its JSON header */\n"
    << "static int tinyt_load(FILE* f, unsigned long long data_start, const char* header, const char* name, void* dst,\n"
    << "                      unsigned long long nbytes) {\n"
    << "  char key[64];\n  const char* at;\n  unsigned long long begin, end;\n"
    << "  snprintf(key, sizeof key, \"\\\"%s\\\"\", name);\n"
    << "  at = strstr(header, key);\n  if (!at) return -1;\n  at = strstr(at, \"\\\"data_offsets\\\"\");\n"
    << "  if (!at || sscanf(strchr(at, '[') + 1, \"%llu , %llu\", &begin, &end) != 2 || end - begin != nbytes) return -1;\n"
    << "  if (fseek(f, (long)(data_start + begin), SEEK_SET) != 0) return -1;\n"
    << "  return fread(dst, 1, nbytes, f) == nbytes ? 0 : -1;\n}\n\n";
  c << "int tinyt_step_init(const char* weights_path) {\n"
    << "  FILE* f = fopen(weights_path, \"rb\");\n  unsigned char len[8];\n  unsigned long long n = 0;\n"
    << "  char* header;\n  int i, bad = 0;\n"
    << "  if (!f || fread(len, 1, 8, f) != 8) { if (f) fclose(f); return -1; }\n"
    << "  for (i = 7; i >= 0; --i) n = n << 8 | len[i];\n"
    << "  header = (char*)malloc(n + 1);\n"
    << "  if (!header || fread(header, 1, n, f) != n) { free(header); fclose(f); return -1; }\n  header[n] = 0;\n";
  std::map<std::string, Tensor> weights;
  for (size_t b = 0; b < buffers.size(); ++b) {
    const size_t bytes = buffers[b]->nbytes();
    c << "  tinyt_buffers[" << b << "] = calloc(1, " << std::max<size_t>(bytes, 1) << ");\n"
      << "  bad |= !tinyt_buffers[" << b << "];\n";
    if (read_first.count(b)) {
      const std::string name = cat("buffer_", b);
      std::vector<uint8_t> host(bytes);
      if (bytes) buffers[b]->copyout(host.data(), bytes);
      weights.emplace(name, Tensor::from_blob(host.data(), {static_cast<int64_t>(bytes)}, dtypes::uint8, "CPU"));
      c << "  bad |= bad || tinyt_load(f, 8 + n, header, \"" << name << "\", tinyt_buffers[" << b << "], " << bytes << "ULL);\n";
    }
  }
  c << "  free(header);\n  fclose(f);\n  return bad ? -1 : 0;\n}\n\n";
  c << "void tinyt_step_free(void) {\n  int i;\n  for (i = 0; i < " << buffers.size()
    << "; ++i) { free(tinyt_buffers[i]); tinyt_buffers[i] = 0; }\n}\n\n";
  c << "void tinyt_step_run(void* const* inputs, void* const* outputs, const long long* vars) {\n"
    << "  (void)inputs; (void)outputs; (void)vars;\n";
  for (const ExportItem& it : items) {
    std::vector<std::string> args;
    for (size_t j = 0; j < it.buffers.size(); ++j) {
      std::string arg = it.buffers[j] ? cat("tinyt_buffers[", number.at(it.buffers[j].get()), "]") : "0";
      for (const auto& [slot, k] : it.input_slots)
        if (slot == j) arg = cat("inputs[", k, "]");
      args.push_back(arg);
    }
    c << "  {\n";
    if (!it.kernel) {  // a copy within the CPU
      c << "    memcpy(" << args.at(0) << ", " << args.at(1) << ", " << it.buffers.at(0)->nbytes() << "ULL);\n  }\n";
      continue;
    }
    const size_t params = std::min(args.size(), it.kernel->program.globals.size());
    c << "    void* bufs[" << std::max<size_t>(params, 1) << "] = {";
    for (size_t j = 0; j < params; ++j) c << (j ? ", " : "") << args[j];
    c << (params ? "" : "0") << "};\n    long long v[" << std::max<size_t>(it.vars.size(), 1) << "] = {";
    for (size_t k = 0; k < it.vars.size(); ++k)
      c << (k ? ", " : "") << "vars[" << (std::find(vars.begin(), vars.end(), it.vars[k]) - vars.begin()) << "]";
    c << (it.vars.empty() ? "0" : "") << "};\n    int core;\n    (void)v;\n"
      << "    for (core = 0; core < " << it.kernel->program.threads << "; ++core) " << names.at(it.kernel)
      << "(bufs, v, core, " << it.kernel->program.threads << ");\n  }\n";
  }
  for (size_t k = 0; k < sig.outputs.size(); ++k) {
    const UOp base = graph::base_buffer(sig.outputs[k]);
    if (!base) throw ShapeError(cat("export_c: output ", k, " is not a whole buffer"));
    const auto it = number.find(graph::buffer_of(base).get());
    if (it == number.end()) throw ShapeError(cat("export_c: output ", k, " is not computed by the step"));
    c << "  memcpy(outputs[" << k << "], tinyt_buffers[" << it->second << "], "
      << detail::c_size_expr(graph::shape_of(sig.outputs[k]).numel(), sig.outputs[k].dtype().itemsize(), vars) << ");\n";
  }
  c << "}\n";
  tinyt::detail::write_file_atomically(c_path, c.str());
  nn::state::safe_save(weights, weights_path);
}

}  // namespace engine
}  // namespace tinyt::inline v0
