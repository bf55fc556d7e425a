// Whether this CPU runs the code LLVM makes for another one (TINYT_LLVM_CPU): the features a
// named x86-64 CPU's code may use, against the features LLVM finds on the host. Code for a CPU
// with more (AVX-512 on an AVX2 machine) dies of SIGILL in the first kernel that uses them; the
// JIT checks here first and says so.
#pragma once

#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace tinyt::inline v0::backend::detail {

/// LLVM's feature names (as in its "+avx2,-avx512f" strings) that code for the x86-64 CPU `cpu`
/// may use beyond x86-64's own, or `known = false` for a name not listed here.
inline std::vector<std::string> x86_cpu_features(const std::string& cpu, bool& known) {
  const std::vector<std::string> v2 = {"cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3"};
  auto with = [](std::vector<std::string> base, const std::vector<std::string>& more) {
    base.insert(base.end(), more.begin(), more.end());
    return base;
  };
  const std::vector<std::string> v3 = with(v2, {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"});
  const std::vector<std::string> v4 = with(v3, {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"});
  const std::vector<std::string> icelake = with(v4, {"avx512vbmi", "avx512vnni", "avx512ifma"});
  const std::set<std::string> baseline = {"x86-64", "generic", "k8", "nocona"};
  const std::set<std::string> level2 = {"x86-64-v2", "nehalem", "westmere", "corei7"};
  const std::set<std::string> level3 = {"x86-64-v3", "haswell", "core-avx2", "broadwell", "skylake", "alderlake", "znver1", "znver2", "znver3"};
  const std::set<std::string> level4 = {"x86-64-v4", "skylake-avx512", "cascadelake", "cooperlake"};
  const std::set<std::string> ice = {"icelake-client", "icelake-server", "tigerlake", "rocketlake"};
  known = true;
  if (baseline.count(cpu)) return {};
  if (level2.count(cpu)) return v2;
  if (cpu == "sandybridge" || cpu == "corei7-avx") return with(v2, {"avx"});
  if (cpu == "ivybridge" || cpu == "core-avx-i") return with(v2, {"avx", "f16c"});
  if (level3.count(cpu)) return v3;
  if (level4.count(cpu)) return v4;
  if (ice.count(cpu)) return icelake;
  if (cpu == "sapphirerapids" || cpu == "emeraldrapids")
    return with(icelake, {"avx512bf16", "avx512fp16", "amx-tile", "amx-bf16", "amx-int8"});
  if (cpu == "znver4" || cpu == "znver5") return with(icelake, {"avx512bf16"});
  known = false;
  return {};
}

/// Why this CPU cannot run code for `target` ("CPU[,+feature,-feature...]"), or "" when it can:
/// the features the named CPU and the "+" items add that `host_features` (LLVM's host string,
/// "+avx2,-avx512f,...") marks absent. A feature the host string does not mention is one this
/// LLVM does not know, and so cannot use. A CPU name not listed passes only as the host's own.
inline std::string cpu_target_mismatch(const std::string& target, const std::string& host_cpu, const std::string& host_features) {
  std::set<std::string> absent;
  {
    std::stringstream in(host_features);
    for (std::string f; std::getline(in, f, ',');)
      if (f.size() > 1 && f[0] == '-') absent.insert(f.substr(1));
  }
  std::stringstream in(target);
  std::string cpu;
  std::getline(in, cpu, ',');
  bool known = false;
  std::vector<std::string> needs = x86_cpu_features(cpu, known);
  if (!known && cpu != host_cpu)
    return "tinyt cannot tell which features code for '" + cpu + "' uses (it knows the x86-64 levels x86-64-v2 to -v4 and " +
           "the Intel and AMD CPUs since Nehalem by LLVM's names), so it cannot check this " + host_cpu + " runs it";
  for (std::string f; std::getline(in, f, ',');)
    if (f.size() > 1 && f[0] == '+') needs.push_back(f.substr(1));
  std::set<std::string> missing;
  for (const std::string& f : needs)
    if (absent.count(f)) missing.insert(f);
  if (missing.empty()) return "";
  std::string list;
  for (const std::string& f : missing) list += (list.empty() ? "" : ", ") + f;
  return "this CPU (" + host_cpu + ") has no " + list + ", which code for '" + target + "' may use";
}

}  // namespace tinyt::inline v0::backend::detail
