// What VIZ=1 records (viz.hpp has its public face): every graph_rewrite call, with the rules that
// fired in it, each with the node it matched and the node it gave; the steps of lowering a
// kernel that are not rewrites (applying opts, expanding registers, mapping work-items) as
// before/after pairs; and each kernel compiled, with its AST, opts and source. Records are kept
// in groups, one per schedule and one per kernel compiled, in the order they happened.
//
// simplify() is not recorded: it runs on small index expressions thousands of times per schedule;
// the rewrites of whole kernels (which include the same symbolic rules) are.
#pragma once

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "../helpers.hpp"
#include "../uop.hpp"

namespace tinyt::inline v0 {
namespace viz {

/// Whether VIZ is on now: this thread's Context, else the environment as the program started.
inline bool enabled() {
  static const bool from_env = env_on("VIZ");
  return knob_on("VIZ", from_env);
}

/// A rule that fired: where it is written and what it matches, the node it matched, its result.
struct Step {
  std::shared_ptr<const std::string> rule;
  UOp before, after;
};

/// One graph_rewrite call (or one lowering step that is not a rewrite: no steps then).
struct Rewrite {
  std::string name;
  UOp input, output;
  std::vector<Step> steps;
};

/// A kernel as it was compiled.
struct Kernel {
  std::string name, device, opts, source;
  UOp ast;
};

/// The records of one schedule or one kernel's lowering.
struct Group {
  std::string name;
  std::vector<Rewrite> rewrites;
  std::vector<Kernel> kernels;
};

namespace detail {
class Recorder {
 public:
  /// Opens a group; returns its index.
  size_t open(std::string name) {
    std::lock_guard lock(mu_);
    groups_.push_back({std::move(name), {}, {}});
    return groups_.size() - 1;
  }
  void rename(size_t group, std::string name) {
    std::lock_guard lock(mu_);
    groups_.at(group).name = std::move(name);
  }
  void add(size_t group, Rewrite r) {
    std::lock_guard lock(mu_);
    groups_.at(group).rewrites.push_back(std::move(r));
  }
  void add(size_t group, Kernel k) {
    std::lock_guard lock(mu_);
    groups_.at(group).kernels.push_back(std::move(k));
  }
  std::vector<Group> groups() {
    std::lock_guard lock(mu_);
    return groups_;
  }
  void clear() {
    std::lock_guard lock(mu_);
    groups_.clear();
    ++generation_;
  }
  /// Bumped by clear(): a thread's open group from before is gone.
  uint64_t generation() {
    std::lock_guard lock(mu_);
    return generation_;
  }
  bool empty() {
    std::lock_guard lock(mu_);
    return groups_.empty();
  }

 private:
  std::mutex mu_;
  std::vector<Group> groups_;
  uint64_t generation_ = 0;
};

/// What runs at exit once something was recorded (viz/html.hpp sets it: the page is written where
/// VIZ is on in the environment).
inline void (*at_exit)() = nullptr;

inline Recorder& recorder() {
  // never destroyed (a static's destructor may still rewrite)
  static Recorder* r = [] {
    auto* made = new Recorder;
    std::atexit([] {
      if (at_exit) at_exit();
    });
    return made;
  }();
  return *r;
}

/// This thread's open group (its index and the recorder's generation when it opened), if any.
struct OpenGroup {
  size_t index = 0;
  uint64_t generation = 0;
  bool open = false;
};
inline OpenGroup& open_group() {
  thread_local OpenGroup g;
  return g;
}

/// The group a record goes to: this thread's open one, else its group of "other rewrites".
inline size_t current_group() {
  Recorder& r = recorder();
  if (const OpenGroup& g = open_group(); g.open && g.generation == r.generation()) return g.index;
  thread_local OpenGroup other;
  if (!other.open || other.generation != r.generation()) other = {r.open("other rewrites"), r.generation(), true};
  return other.index;
}
}  // namespace detail

/// Records go to a group of this name until the scope ends (nothing happens while VIZ is off).
/// A scope that `joins` opens no group where this thread has one open already.
class Scope {
 public:
  enum Mode { open, join };
  explicit Scope(std::string_view name, Mode mode = open) : on_(enabled()) {
    detail::OpenGroup& g = detail::open_group();
    if (on_ && mode == join && g.open && g.generation == detail::recorder().generation()) on_ = false;
    if (!on_) return;
    saved_ = g;
    detail::Recorder& r = detail::recorder();
    g = {r.open(std::string(name)), r.generation(), true};
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  /// Names the group anew (once its size is known, say).
  void rename(std::string name) {
    if (on_ && detail::open_group().generation == detail::recorder().generation())
      detail::recorder().rename(detail::open_group().index, std::move(name));
  }
  ~Scope() {
    if (on_) detail::open_group() = saved_;
  }

 private:
  bool on_;
  detail::OpenGroup saved_;
};

/// Records a graph_rewrite call.
inline void record(Rewrite r) { detail::recorder().add(detail::current_group(), std::move(r)); }
/// Records a lowering step that is not a rewrite (callers check enabled()), when it changed the graph.
inline void snapshot(std::string name, const UOp& before, const UOp& after) {
  if (!(before == after)) record({std::move(name), before, after, {}});
}
/// Records a compiled kernel.
inline void record(Kernel k) { detail::recorder().add(detail::current_group(), std::move(k)); }

}  // namespace viz
}  // namespace tinyt::inline v0
