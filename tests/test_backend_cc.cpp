// backend/dlopen.hpp and backend/cpu_cc.hpp: the system C compiler, its on-disk cache, and
// kernels loaded with dlopen, run on real buffers and checked against a loop written by hand.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;
using tinyt_test::contains;
using tinyt_test::ScopedEnv;
using tinyt_test::TempDir;
using backend::CCompiler;
using backend::CProgram;
using backend::Library;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

std::string real_cc() {
  const char* cc = std::getenv("CC");
  return cc && *cc ? cc : "cc";
}


const std::string add_src =
    R"(void add(void** bufs, const long long* vars, int core_id, int core_count) {
  float* out = (float*)bufs[0];
  const float* a = (const float*)bufs[1];
  const float* b = (const float*)bufs[2];
  for (long long i = core_id; i < vars[0]; i += core_count) out[i] = a[i] + b[i];
}
)";

/// Runs the compiled `add` on inputs with inf and NaN; checks it against the same loop in C++.
void check_add(const CProgram& add, int core_count = 1) {
  const int64_t n = 1003;
  std::vector<float> a(n), b(n), out(n, -1.0f);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i) * 0.37f - 50.0f;
    b[i] = 1.0f / static_cast<float>(i + 1);
  }
  a[3] = INFINITY, b[3] = -INFINITY, a[5] = NAN, b[7] = INFINITY;  // IEEE, not -ffast-math
  void* bufs[] = {out.data(), a.data(), b.data()};
  const int64_t vars[] = {n};
  for (int core = 0; core < core_count; ++core) add(bufs, vars, core, core_count);
  int wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    float expected = a[i] + b[i];
    if (!(out[i] == expected || (std::isnan(out[i]) && std::isnan(expected)))) ++wrong;
  }
  CHECK(wrong == 0);
  CHECK(std::isnan(out[3]));
  CHECK(std::isnan(out[5]));
  CHECK(std::isinf(out[7]));
}

}  // namespace

TEST_CASE("backend_cc: a compiled kernel adds two float arrays as a C++ loop does") {
  TempDir tmp;
  const fs::path cache = tmp.path / "nested" / "cache";  // created on first use
  ScopedEnv env;
  env.set("TINYT_CACHE_DIR", cache.string());
  CCompiler cc;
  CHECK(cc.cache_dir() == cache);
  CHECK(cc.available());
  CHECK(contains(cc.identity(), "-ffp-contract=off"));  // FMA only where a kernel calls fma()
  CHECK_FALSE(contains(cc.identity(), "-ffast-math"));  // but NaN and inf stay IEEE
  CHECK(contains(cc.identity(), "-fwrapv"));            // signed integers wrap, as in LLVM IR
  CHECK(cc.key(add_src).size() == 32);
  CHECK(cc.key(add_src) == cc.key(add_src));
  CHECK(cc.key(add_src) != cc.key(add_src + " "));

  const std::string so = cc.compile(add_src);
  CHECK(so == (cache / (cc.key(add_src) + ".so")).string());
  CHECK(files_in(cache) ==
        std::vector<std::string>{cc.key(add_src) + ".c", cc.key(add_src) + ".so"});
  CHECK(cc.compiles() == 1);
  CHECK(cc.cache_hits() == 0);

  CProgram add(so, "add"), again(so, "add");  // one object loaded twice
  CHECK(add.name() == "add");
  check_add(add);
  check_add(again, 2);  // the outer loop split across two "cores"
  check_add(add, 3);
  CHECK_THROWS_AS(CProgram(so, "no_such_kernel"), DeviceError);
}

TEST_CASE("backend_cc: a second compile is a cache hit and does not run the compiler") {
  TempDir cache, tools;
  const std::string system_cc = real_cc();
  // A compiler that logs every call, so the test sees whether it ran.
  const fs::path wrapper = tools.path / "logging-cc", log = tools.path / "log";
  std::ofstream(wrapper) << "#!/bin/sh\necho \"$*\" >> '" << log.string() << "'\nexec " << system_cc
                         << " \"$@\"\n";
  REQUIRE(chmod(wrapper.c_str(), 0755) == 0);
  auto compiler_runs = [&] {
    std::ifstream in(log);
    int runs = 0;
    for (std::string line; std::getline(in, line);) runs += contains(line, "-shared");
    return runs;
  };
  ScopedEnv env;
  env.set("TINYT_CACHE_DIR", cache.path.string()).set("CC", wrapper.string());

  CCompiler cc;
  CHECK(contains(cc.identity(), wrapper.string()));
  const std::string so = cc.compile(add_src);
  CHECK(compiler_runs() == 1);
  CHECK(cc.compile(add_src) == so);
  CHECK(cc.compiles() == 1);
  CHECK(cc.cache_hits() == 1);
  CHECK(compiler_runs() == 1);

  SUBCASE("the cache is on disk: a new compiler object (or process) finds it") {
    CCompiler fresh;
    CHECK(fresh.compile(add_src) == so);
    CHECK(fresh.compiles() == 0);
    CHECK(fresh.cache_hits() == 1);
    CHECK(compiler_runs() == 1);
  }
  SUBCASE("another compiler has other keys") {
    CCompiler other(system_cc, cache.path);
    CHECK(other.identity() != cc.identity());
    CHECK(other.key(add_src) != cc.key(add_src));
  }
  SUBCASE("a stored source that differs (a hash collision) is not a hit") {
    std::ofstream(cache.path / (cc.key(add_src) + ".c")) << "int other;\n";
    CHECK(cc.compile(add_src) == so);
    CHECK(cc.compiles() == 2);
    CHECK(compiler_runs() == 2);
    CHECK(cc.compile(add_src) == so);
    CHECK(cc.cache_hits() == 2);
  }
  SUBCASE("with the compiler gone, cached sources still load and new ones fail") {
    REQUIRE(fs::remove(wrapper));
    CHECK(cc.compile(add_src) == so);
    CHECK(cc.cache_hits() == 2);
    CHECK_THROWS_AS(cc.compile(add_src + "// a new source\n"), DeviceError);
    CHECK(files_in(cache.path).size() == 2);  // the failed compile left nothing behind
    check_add(CProgram(so, "add"));
  }
}

TEST_CASE("backend_cc: a syntax error is a CompileError with the compiler's log and the source") {
  TempDir cache;
  ScopedEnv env;
  env.set("TINYT_CACHE_DIR", cache.path.string());
  CCompiler cc;
  const std::string bad =
      "void broken(void** bufs, const long long* vars, int core_id, int core_count) {\n"
      "  int x = ;\n"
      "}\n";
  std::string message;
  try {
    cc.compile(bad);
  } catch (const CompileError& e) {
    message = e.what();
  }
  REQUIRE_FALSE(message.empty());
  CHECK(contains(message, "error"));
  CHECK(contains(message, "expected expression"));  // gcc's and clang's words
  CHECK(contains(message, "   2 |   int x = ;"));   // the source, numbered
  CHECK(cc.compiles() == 0);
  CHECK_FALSE(fs::exists(cache.path / (cc.key(bad) + ".so")));
  CHECK(files_in(cache.path).empty());     // no entry and no temporaries
  CHECK(fs::exists(cc.compile(add_src)));  // the cache still works afterwards
}

TEST_CASE("backend_cc: a missing compiler is a DeviceError naming it") {
  TempDir cache;
  ScopedEnv env;
  env.set("TINYT_CACHE_DIR", cache.path.string()).set("CC", "tinyt-no-such-cc");
  CCompiler cc;
  CHECK_FALSE(cc.available());
  std::string message;
  try {
    cc.compile(add_src);
  } catch (const DeviceError& e) {
    message = e.what();
  }
  CHECK(contains(message, "'tinyt-no-such-cc'"));
  CHECK(contains(message, "CC"));
  CHECK(contains(message, "CPU_LLVM"));
  CHECK_THROWS_AS(cc.identity(), DeviceError);
  CHECK_THROWS_AS(CCompiler("/nonexistent/bin/cc", cache.path).compile(add_src), DeviceError);
  CHECK(files_in(cache.path).empty());
}

TEST_CASE("backend_cc: the cache directory comes from TINYT_CACHE_DIR, XDG_CACHE_HOME or HOME") {
  ScopedEnv env;
  env.set("TINYT_CACHE_DIR", "/somewhere/kernels");
  CHECK(CCompiler().cache_dir() == "/somewhere/kernels");
  env.set("TINYT_CACHE_DIR", std::nullopt).set("XDG_CACHE_HOME", "/xdg");
  CHECK(CCompiler().cache_dir() == "/xdg/tinyt");
  env.set("XDG_CACHE_HOME", "").set("HOME", "/home/someone");
  CHECK(CCompiler().cache_dir() == "/home/someone/.cache/tinyt");
  env.set("HOME", std::nullopt);
  CHECK(CCompiler().cache_dir() == "/tmp/tinyt-" + std::to_string(getuid()));
}

TEST_CASE("backend_cc: Library opens libraries, finds symbols and lists every path it tried") {
  static_assert(!std::is_copy_constructible_v<Library>);
  static_assert(std::is_nothrow_move_constructible_v<Library>);
  std::string message;
  try {
    Library::open_first({"/nonexistent/libtinyt_a.so", "libtinyt_no_such_b.so.7"});
  } catch (const DeviceError& e) {
    message = e.what();
  }
  CHECK(contains(message, "/nonexistent/libtinyt_a.so"));
  CHECK(contains(message, "libtinyt_no_such_b.so.7"));
  CHECK_THROWS_AS(Library::open_first({}), DeviceError);
  CHECK_THROWS_AS(Library("/nonexistent/libtinyt_c.so"), DeviceError);

  Library libm = Library::open_first({"libtinyt_no_such_d.so", "libm.so.6"});
  CHECK(libm.path() == "libm.so.6");
  CHECK(libm.symbol<double(double)>("cos")(0.0) == 1.0);
  const bool absent = libm.try_symbol<void()>("tinyt_no_such_symbol") == nullptr;
  CHECK(absent);
  message.clear();
  try {
    libm.symbol<void()>("tinyt_no_such_symbol");
  } catch (const DeviceError& e) {
    message = e.what();
  }
  CHECK(contains(message, "libm.so.6"));
  CHECK(contains(message, "tinyt_no_such_symbol"));

  Library moved = std::move(libm);
  CHECK(moved.symbol<double(double)>("cos")(0.0) == 1.0);
  libm = std::move(moved);
  CHECK(libm.symbol<double(double)>("cos")(0.0) == 1.0);
  CHECK_THROWS_AS(moved.symbol<double(double)>("cos"),
                  DeviceError);  // NOLINT(bugprone-use-after-move)
}

TEST_CASE("backend_cc: concurrent compiles of one new source all succeed") {
  TempDir cache;
  CCompiler shared(real_cc(), cache.path), other(real_cc(), cache.path);  // other: as a 2nd process
  const std::string src = add_src + "// compiled by three threads at once\n";
  constexpr int threads = 3;
  std::atomic<int> ready{0};
  std::string paths[threads];
  std::exception_ptr errors[threads];
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&, i] {
      ++ready;
      while (ready < threads) std::this_thread::yield();
      try {
        paths[i] = (i == 2 ? other : shared).compile(src);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  for (auto& thread : pool) thread.join();
  for (int i = 0; i < threads; ++i) {
    CHECK_FALSE(errors[i]);
    CHECK(paths[i] == paths[0]);
  }
  CHECK(shared.compiles() + shared.cache_hits() == 2);
  CHECK(files_in(cache.path) ==
        std::vector<std::string>{shared.key(src) + ".c", shared.key(src) + ".so"});
  check_add(CProgram(paths[0], "add"));
}
