// Realizing from several threads at once: independent graphs built and realized concurrently
// (sharing the kernel, schedule and compile caches, the intern table and the counters) give
// what hand-written loops give, and a Context is a scope of its own thread.
#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <thread>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;

namespace {
// One thread's work for a round: a few kernel shapes, some shared by every thread (the same
// kernels compiled and cached concurrently), some its own; each result against a loop.
std::string work(int thread, int round) {
  std::ostringstream errors;
  auto expect = [&](const char* what, const std::vector<float>& got, const std::vector<double>& want, double tol) {
    if (got.size() != want.size()) {
      errors << what << ": " << got.size() << " elements, want " << want.size() << "\n";
      return;
    }
    for (size_t i = 0; i < got.size(); ++i)
      if (!(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])))) {
        errors << what << " (thread " << thread << ", round " << round << "): element " << i << " is " << got[i]
               << ", want " << want[i] << "\n";
        return;
      }
  };
  const int seed = 100 * thread + round;
  // elementwise, the same shape in every thread
  const std::vector<float> xs = tinyt_test::values(257, seed);
  std::vector<double> want;
  for (float x : xs) want.push_back(std::max(0.0, 2.0 * x - 1.0));
  expect("relu(2x - 1)", (Tensor::from_vector(xs) * 2 - 1).relu().to_vector<float>(), want, 0);
  // a matmul of a shape of this thread's own (its kernel is compiled while others compile theirs)
  const int64_t M = 3 + thread, K = 9, N = 5;
  const std::vector<float> as = tinyt_test::values(M * K, seed + 1), bs = tinyt_test::values(K * N, seed + 2);
  want.assign(static_cast<size_t>(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k)
        want[static_cast<size_t>(i * N + j)] += double(as[static_cast<size_t>(i * K + k)]) * bs[static_cast<size_t>(k * N + j)];
  Tensor a = Tensor::from_vector(as, {M, K}), b = Tensor::from_vector(bs, {K, N});
  expect("matmul", a.matmul(b).to_vector<float>(), want, 1e-6);  // exact: a grid of 1/8, short sums
  // a row sum and a gather, shared shapes
  const std::vector<float> ms = tinyt_test::values(6 * 40, seed + 3);
  Tensor m = Tensor::from_vector(ms, {6, 40});
  want.assign(6, 0.0);
  for (size_t i = 0; i < ms.size(); ++i) want[i / 40] += ms[i];
  expect("row sum", m.sum(1).to_vector<float>(), want, 1e-6);
  std::vector<int32_t> cols;
  want.clear();
  for (int32_t r = 0; r < 6; ++r) {
    cols.push_back((r * 7 + seed) % 40);
    want.push_back(ms[static_cast<size_t>(r * 40 + cols.back())]);
  }
  expect("gather", m.gather(1, Tensor::from_vector(cols, {6, 1})).to_vector<float>(), want, 0);
  // an assign (in-place updates of memory this thread owns)
  Tensor w = Tensor::zeros({17}).contiguous().realize();
  Tensor step = Tensor::from_vector(std::vector<float>(xs.begin(), xs.begin() + 17));
  for (int i = 0; i < 3; ++i) w.assign(w + step).realize();
  want.clear();
  for (int i = 0; i < 17; ++i) want.push_back(3.0 * xs[static_cast<size_t>(i)]);
  expect("assign", w.to_vector<float>(), want, 1e-6);
  return errors.str();
}

void run_threads(int threads, int rounds) {
  std::vector<std::string> errors(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  std::atomic<int> ready{0};
  const int64_t kernels_before = GlobalCounters::kernel_count;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();  // start together
      try {
        for (int r = 0; r < rounds; ++r) errors[static_cast<size_t>(t)] += work(t, r);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(t)] += std::string("threw: ") + e.what() + "\n";
      }
    });
  for (std::thread& t : pool) t.join();
  for (const std::string& e : errors) CHECK_MESSAGE(e.empty(), e);
  // every launch is counted once: work() runs 5 kernels for its results and 3 assigns
  CHECK(GlobalCounters::kernel_count - kernels_before >= int64_t{threads} * rounds * 8);
}
}  // namespace

TEST_CASE("threads: independent graphs realized from several threads at once give their own results") {
  run_threads(4, 5);
}

TEST_CASE("threads: the C compiler backend, from several threads at once") {
  tinyt_test::TempDir dir;  // an empty disk cache: the threads compile (and store) concurrently
  tinyt_test::ScopedEnv env;
  env.set("TINYT_CACHE_DIR", dir.path.string());
  Context cc{{"CPU_LLVM", 0}};
  run_threads(3, 2);
}

TEST_CASE("threads: a Context is a scope of its own thread") {
  // two scopes open and close interleaved on two threads: neither sees the other's setting, and
  // none is left behind (with one shared stack, the first to close could not pop its own)
  std::mutex mu;
  std::condition_variable cv;
  int stage = 0;
  auto wait_for = [&](int s) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return stage >= s; });
  };
  auto advance = [&] {
    std::lock_guard lock(mu);
    ++stage;
    cv.notify_all();
  };
  int64_t seen_by_other = -1, own = -1;
  std::thread first([&] {
    {
      Context c{{"TINYT_TEST_KNOB", 1}};
      advance();  // 1: opened
      wait_for(2);
      own = getenv_int("TINYT_TEST_KNOB", 0);
    }  // closes while the other's scope is still open
    advance();  // 3
  });
  std::thread second([&] {
    wait_for(1);
    {
      Context c{{"TINYT_TEST_KNOB", 2}};
      seen_by_other = getenv_int("TINYT_TEST_KNOB", 0);
      advance();  // 2
      wait_for(3);
    }
  });
  first.join();
  second.join();
  CHECK(own == 1);
  CHECK(seen_by_other == 2);
  CHECK(getenv_int("TINYT_TEST_KNOB", 0) == 0);  // nothing left behind
}
