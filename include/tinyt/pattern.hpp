// The rewrite engine: UPat patterns, PatternMatcher rule tables and graph_rewrite, the one
// driver every stage of the pipeline runs its rules with.
//
//   PatternMatcher pm{{
//     {UPat::var("x") + 0, [](auto& m) { return m["x"]; }},   // x+0 -> x
//   }};
//   UOp out = graph_rewrite(sink, pm);
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>

#include "uop.hpp"
#include "viz/record.hpp"

namespace tinyt::inline v0 {

namespace detail {
/// A header's path as VIZ shows it: from tinyt/ on, without "dir/.." steps.
inline std::string source_path(std::string file) {
  if (const size_t at = file.rfind("include/"); at != std::string::npos) file = file.substr(at + 8);
  for (size_t up; (up = file.find("/../")) != std::string::npos;) {  // tinyt/engine/../codegen -> tinyt/codegen
    const size_t dir = up == 0 ? std::string::npos : file.rfind('/', up - 1);
    const size_t from = dir == std::string::npos ? 0 : dir + 1;
    file.erase(from, up + 4 - from);
  }
  return file;
}
}  // namespace detail

/// A pattern over UOps: which ops, dtypes and arg a node may have, what its sources must match,
/// and a name to capture it under. An empty op set matches any op.
class UPat {
 public:
  /// How the source patterns apply: not at all, in order, in any order, or each source alike.
  enum class Sources : uint8_t { any, ordered, any_order, each };

  UPat() = default;
  UPat(OpSet ops, std::vector<UPat> src = {}, std::string name = "")
      : ops_(ops), src_(std::move(src)), name_(std::move(name)) {
    mode_ = src_.empty() ? Sources::any : Sources::ordered;
  }
  UPat(Ops op, std::vector<UPat> src = {}, std::string name = "")
      : UPat(OpSet{op}, std::move(src), std::move(name)) {}

  /// Any node, captured as `name`.
  static UPat var(std::string name = "", std::vector<DType> dtypes = {}) {
    UPat p;
    p.name_ = std::move(name), p.dtypes_ = std::move(dtypes);
    return p;
  }
  /// Any constant, captured as `name`.
  static UPat cvar(std::string name = "", std::vector<DType> dtypes = {}) {
    UPat p = var(std::move(name), std::move(dtypes));
    p.ops_ = OpSet{Ops::CONST};
    return p;
  }
  /// A constant equal to `value`, whatever its dtype (0 matches 0, 0.0 and False).
  static UPat cnst(double value, std::string name = "") {
    UPat p = cvar(std::move(name));
    p.value_ = value;
    return p;
  }

  /// The same pattern, capturing the node as `name`.
  UPat named(std::string name) const {
    UPat p = *this;
    p.name_ = std::move(name);
    return p;
  }
  /// Only nodes of these dtypes (or whose scalar dtype is one of them).
  UPat dtype(std::vector<DType> dts) const {
    UPat p = *this;
    p.dtypes_ = std::move(dts);
    return p;
  }
  /// Only nodes with exactly this arg.
  UPat arg(Arg a) const {
    UPat p = *this;
    p.arg_ = std::move(a);
    return p;
  }
  /// The source patterns match the sources in any order (for commutative ops).
  UPat any_order() const {
    UPat p = *this;
    p.set_mode(Sources::any_order);
    return p;
  }
  /// The node may have more sources than patterns; the extra ones are not looked at.
  UPat any_len() const {
    UPat p = *this;
    p.any_len_ = true;
    return p;
  }
  /// Every source matches `each` (any number of sources).
  UPat each_src(UPat each) const {
    UPat p = *this;
    p.src_ = {std::move(each)};
    p.set_mode(Sources::each);
    return p;
  }

  // builders that read like the UOps they match; commutative ops match in either order
  UPat alu(Ops op, std::vector<UPat> others) const {
    std::vector<UPat> src{*this};
    src.insert(src.end(), others.begin(), others.end());
    UPat p(op, std::move(src));
    return GroupOp::Commutative.contains(op) ? p.any_order() : p;
  }
  UPat lt(const UPat& o) const { return alu(Ops::CMPLT, {o}); }
  UPat ne(const UPat& o) const { return alu(Ops::CMPNE, {o}); }
  UPat eq(const UPat& o) const { return alu(Ops::CMPEQ, {o}); }
  UPat maximum(const UPat& o) const { return alu(Ops::MAX, {o}); }
  UPat idiv(const UPat& o) const { return alu(Ops::IDIV, {o}); }
  UPat where(const UPat& a, const UPat& b) const { return alu(Ops::WHERE, {a, b}); }
  UPat cast() const { return UPat(Ops::CAST, {*this}); }

  const OpSet& ops() const { return ops_; }
  const std::string& name() const { return name_; }
  /// The pattern as text: `ADD(x, CONST=0)`, `{ADD,MUL}~(a, b)` (sources in any order), `*` any op.
  std::string text() const {
    std::string out;
    int count = 0;
    ops_.for_each([&](Ops op) { out += (count++ ? "," : "") + std::string(op_name(op)); });
    if (count > 1) out = "{" + out + "}";
    if (count == 0) out = name_.empty() ? "*" : "";
    if (!name_.empty()) out = count ? name_ + ":" + out : name_;
    if (value_) out += "=" + Arg::format_double(*value_);
    if (arg_) {
      std::ostringstream a;
      a << *arg_;
      out += "[" + a.str() + "]";
    }
    for (size_t i = 0; i < dtypes_.size(); ++i) out += (i ? "|" : ".") + dtypes_[i].name();
    if (mode_ == Sources::any) return out;
    out += mode_ == Sources::any_order ? "~(" : "(";
    if (mode_ == Sources::each) out += "each ";
    for (size_t i = 0; i < src_.size(); ++i) out += (i ? ", " : "") + src_[i].text();
    return out + (any_len_ ? ", ...)" : ")");
  }
  Sources mode() const { return mode_; }
  const std::vector<UPat>& src() const { return src_; }

  friend class Matcher;

 private:
  void set_mode(Sources m) {
    if (m == Sources::any_order && src_.size() > 6)
      throw RewriteError(detail::cat("UPat: ", src_.size(),
                                     " sources in any order is too many to try (at most 6)"));
    mode_ = src_.empty() ? Sources::any : m;
  }

  OpSet ops_;
  std::vector<DType> dtypes_;
  std::optional<Arg> arg_;
  std::optional<double> value_;
  std::vector<UPat> src_;
  std::string name_;
  Sources mode_ = Sources::any;
  bool any_len_ = false;
};

// Pattern arithmetic builds the pattern of the UOp arithmetic it matches; a number stands for
// a constant of that value.
#define TINYT_UPAT_BINARY(sym, OP)                                                              \
  inline UPat operator sym(const UPat& a, const UPat& b) { return a.alu(Ops::OP, {b}); }        \
  inline UPat operator sym(const UPat& a, double b) { return a.alu(Ops::OP, {UPat::cnst(b)}); } \
  inline UPat operator sym(double a, const UPat& b) { return UPat::cnst(a).alu(Ops::OP, {b}); }
TINYT_UPAT_BINARY(+, ADD)
TINYT_UPAT_BINARY(*, MUL)
TINYT_UPAT_BINARY(%, MOD)
TINYT_UPAT_BINARY(/, IDIV)
TINYT_UPAT_BINARY(&, AND)
TINYT_UPAT_BINARY(|, OR)
TINYT_UPAT_BINARY(^, XOR)
#undef TINYT_UPAT_BINARY

/// What a rule sees: the captured nodes by name, the matched node, and the rewrite's context.
class Match {
 public:
  /// The node captured as `name`; a rule that asks for a name its pattern lacks is malformed.
  const UOp& operator[](std::string_view name) const {
    for (auto& [n, u] : captures_)
      if (n == name) return u;
    throw RewriteError(
        detail::cat("rule asks for '", name, "', which its pattern does not capture"));
  }
  bool has(std::string_view name) const {
    for (auto& [n, u] : captures_)
      if (n == name) return true;
    return false;
  }
  /// The node the whole pattern matched.
  const UOp& root() const { return *root_; }
  /// The context given to graph_rewrite, as a T (it must have been given as a T).
  template <class T> T& ctx() const {
    if (!ctx_ || *ctx_type_ != typeid(T))
      throw RewriteError(
          detail::cat("rule asks for a context of type ", typeid(T).name(), " it was not given"));
    return *static_cast<T*>(ctx_);
  }

 private:
  friend class Matcher;
  friend class PatternMatcher;
  std::vector<std::pair<std::string, UOp>> captures_;  // names copied: a Match may outlive its UPat
  const UOp* root_ = nullptr;
  void* ctx_ = nullptr;
  const std::type_info* ctx_type_ = nullptr;
};

/// Matches a pattern against a node, filling the captures (undone on failure).
class Matcher {
 public:
  static bool match(const UPat& p, const UOp& u, Match& m) {
    const size_t mark = m.captures_.size();
    if (match_here(p, u, m)) return true;
    m.captures_.resize(mark);
    return false;
  }

 private:
  static bool match_here(const UPat& p, const UOp& u, Match& m) {
    if (!p.ops_.empty() && !p.ops_.contains(u.op())) return false;
    if (!p.dtypes_.empty() &&
        std::find(p.dtypes_.begin(), p.dtypes_.end(), u.dtype()) == p.dtypes_.end() &&
        std::find(p.dtypes_.begin(), p.dtypes_.end(), u.dtype().scalar()) == p.dtypes_.end())
      return false;
    if (p.arg_ && !(u.arg() == *p.arg_)) return false;
    if (p.value_ && !(u.op() == Ops::CONST && u.const_float() == *p.value_)) return false;
    if (!p.name_.empty()) {
      bool bound = false;
      for (auto& [n, v] : m.captures_)
        if (n == p.name_) {
          if (!(v == u)) return false;  // a name captured twice must be the same node
          bound = true;
        }
      if (!bound) m.captures_.emplace_back(p.name_, u);
    }
    const auto& src = u.src();
    switch (p.mode_) {
      case UPat::Sources::any:
        return true;
      case UPat::Sources::each:
        for (const UOp& s : src)
          if (!match(p.src_[0], s, m)) return false;
        return true;
      case UPat::Sources::ordered:
        if (p.any_len_ ? src.size() < p.src_.size() : src.size() != p.src_.size()) return false;
        for (size_t i = 0; i < p.src_.size(); ++i)
          if (!match(p.src_[i], src[i], m)) return false;
        return true;
      case UPat::Sources::any_order: {
        if (p.any_len_ ? src.size() < p.src_.size() : src.size() != p.src_.size()) return false;
        std::vector<size_t> perm(p.src_.size());
        for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
        const size_t mark = m.captures_.size();
        do {
          bool ok = true;
          for (size_t i = 0; i < perm.size() && ok; ++i) ok = match(p.src_[perm[i]], src[i], m);
          if (ok) return true;
          m.captures_.resize(mark);
        } while (std::next_permutation(perm.begin(), perm.end()));
        return false;
      }
    }
    return false;
  }
};

/// A table of (pattern, rewrite) rules, indexed by op. A rule returns the replacement, or the
/// empty UOp when it does not apply; the first rule that applies wins. Tables compose with `+`.
class PatternMatcher {
 public:
  using Fn = std::function<UOp(const Match&)>;
  struct Rule {
    UPat pat;
    Fn fn;
  };

  PatternMatcher() = default;
  /// A table of rules; it is named after the function that builds it (VIZ shows the name, where
  /// the table is written, and each rule's place in it).
  PatternMatcher(std::vector<Rule> rules, const char* name = __builtin_FUNCTION(),  // NOLINT: braced lists
                 const char* file = __builtin_FILE(), int line = __builtin_LINE())
      : name_(name) {
    const std::string where = tinyt::detail::cat(name_, " (", detail::source_path(file), ":", line, ")");
    for (Rule& r : rules) {
      auto text = std::make_shared<const std::string>(tinyt::detail::cat(where, " #", rules_.size(), ": ", r.pat.text()));
      add(std::make_shared<const Rule>(std::move(r)), std::move(text));
    }
  }
  friend PatternMatcher operator+(const PatternMatcher& a, const PatternMatcher& b) {
    PatternMatcher out = a;
    out.name_ = a.name_ + "+" + b.name_;
    for (size_t i = 0; i < b.rules_.size(); ++i) out.add(b.rules_[i], b.where_[i]);
    return out;
  }
  size_t size() const { return rules_.size(); }
  /// The table's name: the function that built it ("symbolic_simple+symbolic_int" for a sum).
  const std::string& name() const { return name_; }
  /// Rule `i`: its table, where that is written, its place there, and its pattern.
  const std::shared_ptr<const std::string>& where(size_t i) const { return where_.at(i); }

  /// The first rule's replacement for `u`, or the empty UOp when none applies; `fired` gets the
  /// rule's index.
  UOp rewrite(const UOp& u, void* ctx = nullptr, const std::type_info* ctx_type = nullptr, size_t* fired = nullptr) const {
    const auto& candidates = by_op_[static_cast<size_t>(u.op())];
    if (candidates.empty()) return {};
    Match m;
    m.root_ = &u, m.ctx_ = ctx, m.ctx_type_ = ctx_type;
    for (uint32_t i : candidates) {
      m.captures_.clear();
      if (!Matcher::match(rules_[i]->pat, u, m)) continue;
      // a rule that hands back its input has nothing to say; the next one may
      if (UOp out = rules_[i]->fn(m); out && !(out == u)) {
        if (fired) *fired = i;
        return out;
      }
    }
    return {};
  }

 private:
  void add(std::shared_ptr<const Rule> r, std::shared_ptr<const std::string> where) {
    if (r->pat.ops().empty())
      throw RewriteError(detail::cat("PatternMatcher: rule ", rules_.size(),
                                     " has no op at its root to index it by (UPat '", r->pat.name(),
                                     "')"));
    if (!r->fn)
      throw RewriteError(detail::cat("PatternMatcher: rule ", rules_.size(), " has no function"));
    r->pat.ops().for_each([&](Ops op) {
      by_op_[static_cast<size_t>(op)].push_back(static_cast<uint32_t>(rules_.size()));
    });
    rules_.push_back(std::move(r));
    where_.push_back(std::move(where));
  }

  std::string name_;
  std::vector<std::shared_ptr<const Rule>> rules_;
  std::vector<std::shared_ptr<const std::string>> where_;  // rules_[i]'s place, for VIZ
  std::array<std::vector<uint32_t>, op_count> by_op_;
};

namespace detail {
// Rewrites a graph to a fixed point without recursion. Each node is visited once (memoized), so a
// DAG costs time linear in its size. Default order: a node's sources are rewritten first, then
// the node (repeatedly, the result rewritten again). bottom_up (tinygrad's name): a node is
// rewritten to a fixed point before its sources are visited. With VIZ on, a call from a `caller`
// is recorded: every rule that fired, the node it matched and the node it gave.
struct RewriteCaller {
  const char* function;
  const char* file;
  int line;
};
inline UOp graph_rewrite_impl(const UOp& root, const PatternMatcher& pm, bool bottom_up, void* ctx,
                              const std::type_info* ctx_type, const RewriteCaller* caller) {
  std::optional<viz::Rewrite> record;
  if (caller && viz::enabled())
    record = viz::Rewrite{tinyt::detail::cat(pm.name(), " in ", caller->function, " (", source_path(caller->file), ":", caller->line, ")"),
                          root, {}, {}};
  size_t fired = 0;
  const auto rewrite = [&](const UOp& u) {
    UOp r = pm.rewrite(u, ctx, ctx_type, &fired);
    if (record && r) record->steps.push_back({pm.where(fired), u, r});
    return r;
  };
  struct Frame {
    UOp n;
    int stage;
    UOp next;
  };
  std::unordered_map<UOp, UOp> done;
  std::unordered_set<const UOpNode*> in_progress;
  std::vector<Frame> stack{{root, 0, root}};
  auto fail_cycle = [](const UOp& n) {
    return RewriteError(
        detail::cat("graph_rewrite: the rules rewrite ", op_name(n.op()),
                    " into a graph that contains it again, forever: ", expr_string(n)));
  };
  while (!stack.empty()) {
    Frame f = std::move(stack.back());
    stack.pop_back();
    if (done.count(f.n)) continue;
    if (f.stage == 0) {
      if (!in_progress.insert(f.n.get()).second) throw fail_cycle(f.n);
      UOp cur = f.n;
      if (bottom_up) {
        std::unordered_set<UOp> seen{cur};
        while (UOp r = rewrite(cur)) {
          if (!seen.insert(r).second) throw fail_cycle(r);
          cur = std::move(r);
        }
      }
      const auto& src = cur.src();
      stack.push_back({f.n, 1, cur});
      for (auto it = src.rbegin(); it != src.rend(); ++it) stack.push_back({*it, 0, *it});
    } else if (f.stage == 1) {
      std::vector<UOp> new_src;
      bool changed = false;
      for (const UOp& s : f.next.src()) {
        auto it = done.find(s);
        if (it == done.end()) throw fail_cycle(f.next);
        new_src.push_back(it->second);
        changed |= !(it->second == s);
      }
      UOp after;
      if (changed)
        after = f.next.replace(std::move(new_src));
      else if (!bottom_up)
        after = rewrite(f.next);
      if (!after) {
        in_progress.erase(f.n.get());
        done.emplace(f.n, f.next);
        continue;
      }
      stack.push_back({f.n, 2, after});
      stack.push_back({after, 0, after});
    } else {
      in_progress.erase(f.n.get());
      done.emplace(f.n, done.at(f.next));
    }
  }
  if (record) {
    record->output = done.at(root);
    viz::record(std::move(*record));
  }
  return done.at(root);
}
}  // namespace detail

/// Rewrites `root` with the rules of `pm` until no rule applies anywhere (VIZ names the call after
/// the function, file and line calling).
inline UOp graph_rewrite(const UOp& root, const PatternMatcher& pm, bool bottom_up = false,
                         const char* caller = __builtin_FUNCTION(), const char* file = __builtin_FILE(),
                         int line = __builtin_LINE()) {
  const detail::RewriteCaller where{caller, file, line};
  return detail::graph_rewrite_impl(root, pm, bottom_up, nullptr, nullptr, &where);
}
/// The same, with a context the rules reach through `m.ctx<Ctx>()`.
template <class Ctx>
UOp graph_rewrite(const UOp& root, const PatternMatcher& pm, Ctx& ctx, bool bottom_up = false,
                  const char* caller = __builtin_FUNCTION(), const char* file = __builtin_FILE(),
                  int line = __builtin_LINE()) {
  const detail::RewriteCaller where{caller, file, line};
  return detail::graph_rewrite_impl(root, pm, bottom_up, &ctx, &typeid(Ctx), &where);
}

}  // namespace tinyt::inline v0
