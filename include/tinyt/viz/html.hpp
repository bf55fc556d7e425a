// The VIZ page of what viz/record.hpp recorded: one self-contained HTML file (viz/page.hpp) with
// the records as JSON inside. Each distinct UOp is one entry of a node table, so a graph that
// shares most of its nodes with the step before costs only its new ones; the whole graph after
// each step is found by replacing the node a rule matched with the node it gave.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <unordered_map>

#include "../json.hpp"
#include "../support.hpp"
#include "../version.hpp"
#include "page.hpp"
#include "record.hpp"

namespace tinyt::inline v0 {
namespace viz {
namespace detail {

/// Steps of one rewrite drawn as whole graphs; past them a step shows the rule's result alone
/// (each whole graph costs a walk of the graph).
inline constexpr size_t max_graphs_per_rewrite = 300;

/// The node table: an id per distinct UOp, sources before their users.
class NodeTable {
 public:
  /// The id of `root`, adding it and every node it reaches that has none yet.
  int64_t id(const UOp& root) {
    if (!root) return -1;
    if (auto it = ids_.find(root.get()); it != ids_.end()) return it->second;
    std::vector<std::pair<UOp, size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node.src().size()) {
        const UOp& s = node.src(next++);
        if (!ids_.count(s.get())) stack.emplace_back(s, 0);
        continue;
      }
      if (!ids_.count(node.get())) {
        ids_.emplace(node.get(), static_cast<int64_t>(nodes_.size()));
        nodes_.push_back(node);
      }
      stack.pop_back();
    }
    return ids_.at(root.get());
  }

  /// The table as a JSON array of [op, dtype, arg, [source ids]].
  std::string json() const {
    std::string out = "[";
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const UOp& u = nodes_[i];
      std::ostringstream arg;
      arg << u.arg();
      out += tinyt::detail::cat(i ? ",\n[" : "\n[", json::quote(op_name(u.op())), ",", json::quote(u.dtype().name()),
                                ",", json::quote(arg.str()), ",[");
      for (size_t k = 0; k < u.src().size(); ++k) out += tinyt::detail::cat(k ? "," : "", ids_.at(u.src(k).get()));
      out += "]]";
    }
    return out + "]";
  }

 private:
  std::unordered_map<const UOpNode*, int64_t> ids_;
  std::vector<UOp> nodes_;  // held: ids stay valid while the table lives
};

/// Text as a JSON string that may sit inside a <script> element ("</script>" cannot end it).
inline std::string script_safe(std::string_view text) {
  std::string q = json::quote(text), out;
  out.reserve(q.size());
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i] == '<' && i + 1 < q.size() && q[i + 1] == '/') out += "<\\/", ++i;
    else out += q[i];
  }
  return out;
}

/// The records as the page's JSON data.
inline std::string page_data(const std::vector<Group>& groups) {
  NodeTable table;
  std::string body;
  for (size_t g = 0; g < groups.size(); ++g) {
    const Group& grp = groups[g];
    body += tinyt::detail::cat(g ? ",\n" : "\n", "{\"name\":", script_safe(grp.name), ",\"rewrites\":[");
    for (size_t r = 0; r < grp.rewrites.size(); ++r) {
      const Rewrite& rw = grp.rewrites[r];
      body += tinyt::detail::cat(r ? ",\n" : "\n", "{\"name\":", script_safe(rw.name), ",\"input\":", table.id(rw.input),
                                 ",\"output\":", table.id(rw.output), ",\"steps\":[");
      UOp graph = rw.input;
      for (size_t s = 0; s < rw.steps.size(); ++s) {
        const Step& st = rw.steps[s];
        int64_t whole = -1;
        if (s < max_graphs_per_rewrite) {
          graph = substitute(graph, {{st.before.get(), st.after}});
          whole = table.id(graph);
        }
        body += tinyt::detail::cat(s ? ",\n" : "\n", "{\"rule\":", script_safe(st.rule ? *st.rule : "?"),
                                   ",\"before\":", table.id(st.before), ",\"after\":", table.id(st.after),
                                   ",\"graph\":", whole, "}");
      }
      body += "]}";
    }
    body += "],\"kernels\":[";
    for (size_t k = 0; k < grp.kernels.size(); ++k) {
      const Kernel& kn = grp.kernels[k];
      body += tinyt::detail::cat(k ? ",\n" : "\n", "{\"name\":", script_safe(kn.name), ",\"device\":", script_safe(kn.device),
                                 ",\"opts\":", script_safe(kn.opts), ",\"ast\":", table.id(kn.ast),
                                 ",\"source\":", script_safe(kn.source), "}");
    }
    body += "]}";
  }
  return tinyt::detail::cat("{\"tinyt\":", script_safe(version()), ",\"nodes\":", table.json(), ",\n\"groups\":[", body,
                            "]}");
}

/// The page of `groups`.
inline std::string page(const std::vector<Group>& groups) {
  return tinyt::detail::cat(page_head, page_data(groups), page_tail);
}

inline void write_page(const std::string& path, const std::vector<Group>& groups) {
  if (!tinyt::detail::write_file_atomically(path, page(groups)))
    throw Error(tinyt::detail::cat("viz::write: cannot write '", path, "'"));
}

/// At exit, where VIZ is on in the environment and something was recorded: the page, in
/// $TMPDIR (or /tmp) as tinyt_viz_<pid>.html; its path is printed.
inline void write_page_at_exit() {
  if (!env_on("VIZ") || recorder().empty()) return;
  tinyt::detail::write_exit_file(tinyt::detail::cat("tinyt_viz_", ::getpid(), ".html"), "VIZ page", "(open it in a browser)",
                                 [] { return page(recorder().groups()); });
}
inline const bool page_at_exit = (at_exit = &write_page_at_exit, true);

}  // namespace detail
}  // namespace viz
}  // namespace tinyt::inline v0
