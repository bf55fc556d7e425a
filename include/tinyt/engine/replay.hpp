// Process replay: with PROCESS_REPLAY=<dir>, every kernel compiled is written to <dir> as a record:
// its AST as text that reads back into the same graph, its opts, what the code generator was told
// of the device, and the source it rendered. Replaying a record lowers and renders the AST again
// with the code at hand: a record made on one commit and replayed on another shows whether that
// commit changes the code of the kernel (tools/process_replay.cpp does it for a folder of them).
//
// An AST as text, one node per line, sources first:  <id> <OP> <dtype> [<source ids>] <arg>
//   dtype: <scalar>/<lanes>, with /<size>/<g|l|r> for a pointer (float32/1/64/g is a float*)
//   arg:   ~ (None), T, F, i<int>, d<hex bits of a double>, s"<escaped>", o<OP>, (<args>), u<id>
#pragma once

#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "../codegen/opt/opt.hpp"
#include "../support.hpp"
#include "../uop.hpp"

namespace tinyt::inline v0 {
namespace engine::replay {

namespace detail {
using tinyt::detail::cat;

inline Error bad(const std::string& what) { return Error("process replay: " + what); }

inline std::string dtype_text(DType d) {
  std::string s = cat(tinyt::detail::info(d.scalar_type()).name, "/", d.count());
  if (d.is_ptr()) s += cat("/", d.size(), "/", "glr"[static_cast<int>(d.addrspace())]);
  return s;
}
inline DType parse_dtype(const std::string& text) {
  std::vector<std::string> parts;
  std::istringstream in(text);
  for (std::string p; std::getline(in, p, '/');) parts.push_back(p);
  if (parts.size() != 2 && parts.size() != 4) throw bad("bad dtype '" + text + "'");
  std::optional<DType> scalar;
  for (int s = 0; s <= static_cast<int>(ScalarType::index); ++s)
    if (parts[0] == tinyt::detail::info(static_cast<ScalarType>(s)).name) scalar = DType(static_cast<ScalarType>(s));
  if (!scalar) throw bad("unknown scalar type '" + parts[0] + "'");
  DType d = *scalar;
  if (const int lanes = std::stoi(parts[1]); lanes > 1) d = d.vec(lanes);
  if (parts.size() == 4) {
    const size_t addr = std::string("glr").find(parts[3]);
    if (parts[3].size() != 1 || addr == std::string::npos) throw bad("bad address space in '" + text + "'");
    d = d.ptr(std::stoll(parts[2]), static_cast<AddrSpace>(addr));
  }
  return d;
}

inline std::optional<Ops> op_of(std::string_view name) {
  for (size_t i = 0; i < op_count; ++i)
    if (name == op_name(static_cast<Ops>(i))) return static_cast<Ops>(i);
  return std::nullopt;
}

// the uops an arg holds (a symbolic size, maybe inside a tuple)
inline void arg_uops(const Arg& a, std::vector<UOp>& out) {
  if (a.is_uop()) out.push_back(a.uop());
  else if (a.is<Arg::Tuple>())
    for (const Arg& x : a.tuple()) arg_uops(x, out);
}

inline std::string arg_text(const Arg& a, const std::unordered_map<const UOpNode*, size_t>& ids) {
  if (a.is_none()) return "~";
  if (a.is<bool>()) return a.get<bool>() ? "T" : "F";
  if (a.is<int64_t>()) return cat("i", a.as_int());
  if (a.is<double>()) {
    char hex[24];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(std::bit_cast<uint64_t>(a.get<double>())));
    return cat("d", hex);
  }
  if (a.is<Ops>()) return cat("o", op_name(a.get<Ops>()));
  if (a.is_uop()) return cat("u", ids.at(a.uop().get()));
  if (a.is<std::string>()) {
    std::string out = "s\"";
    for (const char c : a.get<std::string>()) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') out += cat("\\", c);
      else if (u < 0x20 || u >= 0x7f) {
        char esc[5];
        std::snprintf(esc, sizeof esc, "\\x%02x", u);
        out += esc;
      } else out += c;
    }
    return out + "\"";
  }
  std::string out = "(";
  for (const Arg& x : a.tuple()) out += (out.size() > 1 ? " " : "") + arg_text(x, ids);
  return out + ")";
}

// reads one arg from text[at...]
class ArgReader {
 public:
  ArgReader(std::string_view text, const std::vector<UOp>& nodes) : text_(text), nodes_(nodes) {}
  Arg read() {
    if (at_ >= text_.size()) throw bad("an arg ends early");
    const char c = text_[at_++];
    switch (c) {
      case '~': return {};
      case 'T': return true;
      case 'F': return false;
      case 'i': return static_cast<int64_t>(std::stoll(token()));
      case 'd': return std::bit_cast<double>(static_cast<uint64_t>(std::stoull(token(), nullptr, 16)));
      case 'o': {
        const std::string name = token();
        const std::optional<Ops> op = op_of(name);
        if (!op) throw bad("unknown op '" + name + "' in an arg");
        return *op;
      }
      case 'u': {
        const size_t id = std::stoull(token());
        if (id >= nodes_.size()) throw bad(cat("an arg names node ", id, ", not yet defined"));
        return nodes_[id];
      }
      case 's': return string();
      case '(': {
        Arg::Tuple items;
        while (true) {
          if (at_ >= text_.size()) throw bad("a tuple is not closed");
          if (text_[at_] == ')') break;
          if (text_[at_] == ' ') {
            ++at_;
            continue;
          }
          items.push_back(read());
        }
        ++at_;
        return items;
      }
      default: throw bad(cat("an arg starts with '", c, "'"));
    }
  }
  bool done() const { return at_ == text_.size(); }

 private:
  std::string token() {
    const size_t start = at_;
    while (at_ < text_.size() && text_[at_] != ' ' && text_[at_] != ')') ++at_;
    if (start == at_) throw bad("an empty value in an arg");
    return std::string(text_.substr(start, at_ - start));
  }
  std::string string() {
    if (at_ >= text_.size() || text_[at_++] != '"') throw bad("a string arg without its quote");
    std::string out;
    while (at_ < text_.size() && text_[at_] != '"') {
      char c = text_[at_++];
      if (c == '\\' && at_ < text_.size()) {
        c = text_[at_++];
        if (c == 'x') {
          if (at_ + 2 > text_.size()) throw bad("a \\x escape ends early");
          c = static_cast<char>(std::stoi(std::string(text_.substr(at_, 2)), nullptr, 16));
          at_ += 2;
        }
      }
      out += c;
    }
    if (at_ >= text_.size()) throw bad("a string arg is not closed");
    ++at_;
    return out;
  }
  std::string_view text_;
  const std::vector<UOp>& nodes_;
  size_t at_ = 0;
};
}  // namespace detail

/// The graph of `root` as text that parse_graph() reads back into the same (interned) graph.
inline std::string graph_text(const UOp& root) {
  std::unordered_map<const UOpNode*, size_t> ids;
  std::string out;
  std::vector<std::pair<UOp, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    std::vector<UOp> deps(node.src().begin(), node.src().end());
    detail::arg_uops(node.arg(), deps);
    while (next < deps.size() && ids.count(deps[next].get())) ++next;
    if (next < deps.size()) {
      stack.emplace_back(deps[next], 0);
      continue;
    }
    const UOp u = node;
    stack.pop_back();
    if (ids.count(u.get())) continue;
    std::string line = tinyt::detail::cat(ids.size(), " ", op_name(u.op()), " ", detail::dtype_text(u.dtype()), " [");
    for (size_t i = 0; i < u.src().size(); ++i) line += tinyt::detail::cat(i ? " " : "", ids.at(u.src(i).get()));
    out += line + "] " + detail::arg_text(u.arg(), ids) + "\n";
    ids.emplace(u.get(), ids.size());
  }
  return out;
}

/// The graph graph_text() wrote (its last node); an Error naming the line when the text is not one.
inline UOp parse_graph(const std::string& text) {
  std::vector<UOp> nodes;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    try {
      const size_t open = line.find(" ["), close = line.find("] ", open);
      if (open == std::string::npos || close == std::string::npos) throw detail::bad("no [sources]");
      std::istringstream head(line.substr(0, open));
      size_t id = 0;
      std::string op_text, dtype;
      if (!(head >> id >> op_text >> dtype) || id != nodes.size()) throw detail::bad("bad id, op or dtype");
      const std::optional<Ops> op = detail::op_of(op_text);
      if (!op) throw detail::bad("unknown op '" + op_text + "'");
      std::vector<UOp> src;
      std::istringstream ids(line.substr(open + 2, close - open - 2));
      for (size_t s = 0; ids >> s;) {
        if (s >= nodes.size()) throw detail::bad(tinyt::detail::cat("source ", s, " is not defined yet"));
        src.push_back(nodes[s]);
      }
      detail::ArgReader arg(std::string_view(line).substr(close + 2), nodes);
      const Arg a = arg.read();
      if (!arg.done()) throw detail::bad("text after the arg");
      nodes.push_back(UOp(*op, detail::parse_dtype(dtype), std::move(src), a));
    } catch (const std::exception& e) {
      throw detail::bad(tinyt::detail::cat("line ", nodes.size() + 1, " '", line, "': ", e.what()));
    }
  }
  if (nodes.empty()) throw detail::bad("an empty graph");
  return nodes.back();
}

/// What a record holds: everything lowering and rendering the kernel again needs.
struct Record {
  std::string name;
  UOp ast;
  std::vector<codegen::Opt> opts;
  backend::Target target;
  bool transcendental = true;
  std::string source;
};

inline constexpr const char* languages[] = {"c", "llvm_ir", "opencl", "cuda", "listing", "wgsl"};  // by backend::Language

/// A record as text: a header, the AST, then the source.
inline std::string record_text(const Record& r) {
  const backend::Target& t = r.target;
  std::string opts;
  for (const codegen::Opt& o : r.opts) opts += tinyt::detail::cat(" ", codegen::opt_op_name(o.op), ":", o.axis, ":", o.amount);
  const std::string ast = graph_text(r.ast);
  return tinyt::detail::cat("tinyt process replay 1\nname ", r.name, "\ntarget ", languages[static_cast<int>(t.language)], " ",
                            t.gpu, " ", t.threads, " ", t.max_local, " ", t.compute_units, " ", t.vector_bytes, " ",
                            t.vector_count, " ", t.stream_bytes, " ", t.half, " ", r.transcendental, " ", t.warp, " ", t.tensor_cores, "\nopts", opts,
                            "\nast ", std::count(ast.begin(), ast.end(), '\n'), "\n", ast, "source\n", r.source);
}

/// The record in `text`; an Error saying what is wrong with it.
inline Record parse_record(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  const auto next = [&](const char* key) {
    if (!std::getline(in, line) || line.rfind(key, 0) != 0) throw detail::bad(tinyt::detail::cat("expected '", key, "'"));
    return line.substr(std::string_view(key).size());
  };
  if (next("tinyt process replay 1") != "") throw detail::bad("not a record of this version");
  Record r;
  r.name = next("name ");
  std::istringstream target(next("target "));
  std::string language;
  backend::Target& t = r.target;
  if (!(target >> language >> t.gpu >> t.threads >> t.max_local >> t.compute_units >> t.vector_bytes >> t.vector_count >>
        t.stream_bytes >> t.half >> r.transcendental))
    throw detail::bad("bad target line");
  if (!(target >> t.warp)) t.warp = 0;  // (records made before targets had warps: none)
  if (!(target >> t.tensor_cores)) t.tensor_cores = false;
  const auto* lang = std::find(std::begin(languages), std::end(languages), language);
  if (lang == std::end(languages)) throw detail::bad("unknown language '" + language + "'");
  t.language = static_cast<backend::Language>(lang - std::begin(languages));
  std::istringstream opts(next("opts"));
  for (std::string o; opts >> o;) {
    const size_t a = o.find(':'), b = o.rfind(':');
    const auto* op = std::find_if(codegen::opt_op_names.begin(), codegen::opt_op_names.end(),
                                  [&](const char* n) { return o.substr(0, a) == n; });
    if (a == b || op == codegen::opt_op_names.end()) throw detail::bad("bad opt '" + o + "'");
    r.opts.push_back({static_cast<codegen::OptOp>(op - codegen::opt_op_names.begin()), std::stoll(o.substr(a + 1, b - a - 1)),
                      std::stoll(o.substr(b + 1))});
  }
  const size_t lines = std::stoull(next("ast "));
  std::string ast;
  for (size_t i = 0; i < lines && std::getline(in, line); ++i) ast += line + "\n";
  r.ast = parse_graph(ast);
  next("source");
  std::ostringstream rest;
  rest << in.rdbuf();
  r.source = rest.str();
  return r;
}

/// Writes a record to `dir`, named by a hash of all but its source (the same kernel compiled
/// again, in any process, overwrites its own record).
inline void capture(const std::string& dir, const Record& r) {
  std::string text = record_text(r);
  const std::string key = tinyt::detail::Hash128().update(std::string_view(text).substr(0, text.rfind("\nsource\n"))).hex();
  std::error_code ignored;
  std::filesystem::create_directories(dir, ignored);
  tinyt::detail::write_file_atomically(std::filesystem::path(dir) / (key + ".kernel"), text);
}

}  // namespace engine::replay
}  // namespace tinyt::inline v0
