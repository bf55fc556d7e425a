// First-call latency of a 512 x 512 fp32 matmul: the time from the graph to a compiled kernel
// (schedule, codegen, compile by LLVM or the C compiler, load), that is the first realize() minus
// the time spent running the kernel (GlobalCounters::time_sum_s). Every sample is a fresh child
// process with an empty TINYT_CACHE_DIR, so neither the in-process kernel cache (keyed by AST)
// nor the on-disk cache can answer. The child first realizes its random inputs, which opens the
// compiler once, so the one-time cost of a process (loading libLLVM, finding `cc`) is not counted.
#include <filesystem>
#include <memory>

#include <tinyt.hpp>

#include "bench.hpp"

using namespace tinyt;
namespace fs = std::filesystem;

namespace {
// One sample; prints "CHILD first_s kernel_s warm_s compiled".
int child() {
  const int64_t n = 512;
  Tensor a = Tensor::rand({n, n}).realize(), b = Tensor::rand({n, n}).realize();
  GlobalCounters::reset();
  const auto t0 = std::chrono::steady_clock::now();
  a.matmul(b).realize();
  const double first = bench::seconds_since(t0), kernel = GlobalCounters::time_sum_s;
  const int compiled = static_cast<int>(GlobalCounters::compile_count.load());
  double warm = 1e300;
  for (int i = 0; i < 3; ++i) {
    const auto t1 = std::chrono::steady_clock::now();
    a.matmul(b).realize();
    warm = std::min(warm, bench::seconds_since(t1));
  }
  std::printf("CHILD %.9f %.9f %.9f %d\n", first, kernel, warm, compiled);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  bench::Options opt(argc, argv);
  if (!opt.args.empty() && opt.args[0] == "--child") return child();

  const std::string self = fs::read_symlink("/proc/self/exe").string();
  bench::Timing latency{1e300, 0}, total{1e300, 0};
  double warm = 1e300;
  int compiled = 0;
  const auto start = std::chrono::steady_clock::now();
  while (latency.runs < opt.reps &&
         (latency.runs == 0 || bench::seconds_since(start) < opt.budget_s)) {
    std::string dir = (fs::temp_directory_path() / "tinyt-first-call.XXXXXX").string();
    bench::check(::mkdtemp(dir.data()) != nullptr, "cannot create a temporary cache directory");
    ::setenv("TINYT_CACHE_DIR", dir.c_str(), 1);
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen((self + " --child").c_str(), "r"), ::pclose);
    double first = 0, kernel = 0, warm_s = 0;
    const int got =
        pipe ? std::fscanf(pipe.get(), "CHILD %lf %lf %lf %d", &first, &kernel, &warm_s, &compiled)
             : 0;
    const int status = pipe ? ::pclose(pipe.release()) : -1;
    fs::remove_all(dir);
    bench::check(got == 4 && status == 0, "the child process failed");
    bench::check(compiled > 0, "the first call compiled nothing: the kernel was cached");
    latency.best_s = std::min(latency.best_s, first - kernel);
    total.best_s = std::min(total.best_s, first);
    warm = std::min(warm, warm_s);
    total.runs = ++latency.runs;
  }
  std::printf(
      "first matmul 512^2 in a fresh process: %.1f ms in all, %d kernel(s) compiled; "
      "a warm call takes %.1f ms\n",
      total.best_s * 1e3, compiled, warm * 1e3);
  bench::report("first_call_512_total", "first call, matmul 512^2 (incl. running it)",
                total.best_s * 1e3, "ms", total);
  bench::report("first_call_512", "first call, matmul 512^2, graph -> compiled kernel",
                latency.best_s * 1e3, "ms", latency);
  return 0;
}
