// The CPU's threads: a persistent pool, one thread per core (the caller is one of them), that
// runs the parts of a THREAD-split kernel. Workers spin briefly before sleeping so that kernels
// launched back to back do not pay a wake-up each.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "../helpers.hpp"

namespace tinyt::inline v0 {
namespace backend {

class ThreadPool {
 public:
  /// A pool of `threads` threads in all: the caller and threads-1 workers.
  explicit ThreadPool(int threads) {
    for (int i = 1; i < std::max(threads, 1); ++i) workers_.emplace_back([this] { work(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Threads in the pool, the caller included.
  int size() const noexcept { return static_cast<int>(workers_.size()) + 1; }

  /// Runs part(i) for every i in [0, parts), spread over the pool; returns when all are done.
  void run(int parts, const std::function<void(int)>& part) {
    if (parts <= 1 || workers_.empty()) {
      for (int i = 0; i < parts; ++i) part(i);
      return;
    }
    std::lock_guard one_at_a_time(run_mu_);
    // everything a worker reads is in place before the job is published
    parts_.store(parts);
    next_.store(0);
    done_.store(0);
    job_.store(&part, std::memory_order_release);
    {
      std::lock_guard lock(mu_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    if (sleepers_.load() > 0) wake_.notify_all();
    take_parts();
    while (done_.load(std::memory_order_acquire) < parts) pause();
    job_.store(nullptr);
    // a worker still inside take_parts may hold `part`: it must leave before `part` dies
    while (active_.load(std::memory_order_acquire) > 0) pause();
  }

  /// The process-wide pool: $TINYT_THREADS threads, else one per core.
  static ThreadPool& instance() {
    static auto* pool = new ThreadPool(default_threads());  // never destroyed: kernels may run at exit
    return *pool;
  }
  static int default_threads() {
    const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
    const int64_t n = getenv_int("TINYT_THREADS", cores);  // a non-number is an Error there
    if (n < 1 || n > 1024) throw Error(::tinyt::detail::cat("the setting TINYT_THREADS=", n, " is not a thread count in [1, 1024]"));
    return static_cast<int>(n);
  }

 private:
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#else
    std::this_thread::yield();
#endif
  }
  void take_parts() {
    active_.fetch_add(1, std::memory_order_acq_rel);
    if (const auto* job = job_.load(std::memory_order_acquire))
      for (int i; (i = next_.fetch_add(1)) < parts_.load();) {
        (*job)(i);
        done_.fetch_add(1, std::memory_order_release);
      }
    active_.fetch_sub(1, std::memory_order_acq_rel);
  }
  void work() {
    uint64_t seen = 0;
    for (;;) {
      // spin a little (a kernel often follows a kernel), then sleep
      for (int spin = 0; spin < 20000 && generation_.load(std::memory_order_acquire) == seen; ++spin) pause();
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock lock(mu_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, [&] { return generation_.load() != seen; });
        sleepers_.fetch_sub(1);
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stop_) return;
      take_parts();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mu_, run_mu_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<int> next_{0}, done_{0}, parts_{0}, active_{0};
  std::atomic<const std::function<void(int)>*> job_{nullptr};
  std::atomic<bool> stop_{false};
};

}  // namespace backend
}  // namespace tinyt::inline v0
