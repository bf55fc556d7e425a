// What the benchmark programs share: their command-line options, best-of-N timing after a
// warmup, and the output format. Each figure is printed twice: a line for people, then
// `RESULT <name> <value> <unit>`, the line benchmarks/vs_torch reads.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <tinyt.hpp>

namespace bench {

/// `--reps N`: at most N timed runs; `--budget S`: stop starting timed runs once they have taken
/// S seconds (at least one always runs); `--warmup N`: untimed runs first (compiles the kernels);
/// `--quick`: tiny sizes and one timed run, for CI (the program builds, runs and checks its
/// results; its figures mean nothing). Options after `--quick` still apply.
/// Other arguments are left in `args` for the program, which may give its own default warmup.
struct Options {
  int reps = 10;
  double budget_s = 3.0;
  int warmup = 1;
  bool quick = false;
  std::vector<std::string> args;

  Options(int argc, char** argv, int default_warmup = 1) : warmup(default_warmup) {
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      const bool has_value = i + 1 < argc;
      if (arg == "--reps" && has_value) {
        reps = std::max(1, std::atoi(argv[++i]));
      } else if (arg == "--budget" && has_value) {
        budget_s = std::atof(argv[++i]);
      } else if (arg == "--warmup" && has_value) {
        warmup = std::max(0, std::atoi(argv[++i]));
      } else if (arg == "--quick") {
        quick = true, reps = 1;
      } else if (arg == "--help" || arg == "-h") {
        std::printf("usage: %s [--quick] [--reps N] [--budget SECONDS] [--warmup N] [args...]\n",
                    argv[0]);
        std::exit(0);
      } else {
        args.emplace_back(arg);
      }
    }
  }
};

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Timing {
  double best_s = 0;  // the fastest timed run
  int runs = 0;       // how many timed runs there were
};

/// Runs f `warmup` times untimed, then times it until `reps` runs or `budget_s` seconds. Each run
/// ends when the default device has finished what f queued (realize() returns once the kernels
/// are launched; a GPU may still be running them).
template <class F> Timing measure(const Options& opt, F&& f) {
  const auto run = [&f] {
    f();
    tinyt::Device::synchronize();
  };
  for (int i = 0; i < opt.warmup; ++i) run();
  Timing t{1e300, 0};
  const auto start = std::chrono::steady_clock::now();
  while (t.runs < opt.reps && (t.runs == 0 || seconds_since(start) < opt.budget_s)) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    t.best_s = std::min(t.best_s, seconds_since(t0));
    ++t.runs;
  }
  return t;
}

/// The human line, then the machine line.
inline void report(const std::string& name, const std::string& what, double value, const char* unit,
                   const Timing& t) {
  std::printf("%-52s %12.3f %-6s (best of %d run%s, %.4g s)\n", what.c_str(), value, unit, t.runs,
              t.runs == 1 ? "" : "s", t.best_s);
  std::printf("RESULT %s %.6g %s\n", name.c_str(), value, unit);
  std::fflush(stdout);
}

/// Exits with an error when a spot check of the computed values fails: a figure for a kernel
/// that computes the wrong thing is worthless.
inline void check(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "CHECK FAILED: %s\n", what.c_str());
  std::exit(1);
}

/// |got - want| within 1e-3 relative (plus a small absolute slack), for float32 results.
inline bool close(double got, double want, double atol = 1e-4) {
  return std::abs(got - want) <= atol + 1e-3 * std::abs(want);
}

}  // namespace bench
