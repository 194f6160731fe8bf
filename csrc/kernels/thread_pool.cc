#include "kernels/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace webxnn {
namespace {

// The pool whose tasks this thread is running right now (nested run() calls execute inline).
thread_local const ThreadPool* tl_active_pool = nullptr;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// How long a thread polls before sleeping on a condition variable. Time-based (a pause costs ~10 to ~140
// cycles depending on the CPU, so an iteration count is not a duration):
//  * an idle worker, for the next region: ~0.5 ms covers the gap between the parallel ops of a graph
//    (element-wise and single-threaded ops in between), so the next region starts without a futex wake-up,
//    yet an idle pool stops burning a core within a millisecond;
//  * the caller, for workers still finishing their last task: the threads of a region often finish tens of
//    microseconds apart (unequal speeds, a last big task), and a futex sleep plus wake-up then added ~50 us
//    more in this VM. It used to poll 2000 pauses (~35 us here) before sleeping.
constexpr std::chrono::microseconds kSpin{500};

// Polls `ready` until it holds or kSpin has passed (the clock read once per 64 polls).
template <typename Ready>
bool spin_until(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return ready();
  }
}

}  // namespace

ThreadPool::ThreadPool(size_t threads) {
  if (threads == 0) threads = std::max<size_t>(1, std::thread::hardware_concurrency());
  ranges_ = std::make_unique<Range[]>(threads);
  workers_.reserve(threads - 1);
  for (size_t i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mutex_);
    stop_ = true;
  }
  wake_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::drain(const std::function<void(size_t)>& fn, size_t self) {
  const size_t P = threads();
  for (size_t k = 0; k < P; ++k) {
    Range& r = ranges_[(self + k) % P];
    for (;;) {
      const size_t t = r.next.fetch_add(1, std::memory_order_relaxed);
      if (t >= r.end) break;
      if (failed_.load(std::memory_order_relaxed)) continue;  // skip the rest after an error
      try {
        fn(t);
      } catch (...) {
        std::lock_guard<std::mutex> lk(mutex_);
        if (!error_) error_ = std::current_exception();
        failed_.store(true, std::memory_order_relaxed);
      }
    }
  }
}

bool ThreadPool::work_left() const {
  for (size_t p = 0; p < threads(); ++p)
    if (ranges_[p].next.load(std::memory_order_relaxed) < ranges_[p].end) return true;
  return false;
}

void ThreadPool::worker_loop(size_t self) {
  tl_active_pool = this;
  uint64_t seen = 0;
  for (;;) {
    // Spin first: in a graph the next op usually follows within microseconds.
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
    const std::function<void(size_t)>* fn = nullptr;
    {
      std::unique_lock<std::mutex> lk(mutex_);
      wake_cv_.wait(lk, [&] { return stop_ || generation_.load(std::memory_order_relaxed) != seen; });
      if (stop_) return;
      seen = generation_.load(std::memory_order_relaxed);
      // Join only if work is left; the caller cannot finish the region while busy_ > 0.
      if (!work_left()) continue;
      busy_.fetch_add(1, std::memory_order_relaxed);
      fn = fn_;
    }
    drain(*fn, self);
    {
      std::lock_guard<std::mutex> lk(mutex_);
      if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_cv_.notify_one();
    }
  }
}

void ThreadPool::run(size_t tasks, const std::function<void(size_t)>& fn) {
  if (tasks == 0) return;
  if (workers_.empty() || tasks == 1 || tl_active_pool == this) {
    for (size_t t = 0; t < tasks; ++t) fn(t);
    return;
  }
  std::lock_guard<std::mutex> run_lk(run_mutex_);
  {
    std::lock_guard<std::mutex> lk(mutex_);
    fn_ = &fn;
    error_ = nullptr;
    failed_.store(false, std::memory_order_relaxed);
    const size_t P = threads();
    for (size_t p = 0; p < P; ++p) {
      ranges_[p].next.store(tasks * p / P, std::memory_order_relaxed);
      ranges_[p].end = tasks * (p + 1) / P;
    }
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_cv_.notify_all();

  const ThreadPool* saved = tl_active_pool;
  tl_active_pool = this;
  drain(fn, 0);
  tl_active_pool = saved;

  spin_until([&] { return busy_.load(std::memory_order_acquire) == 0; });
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lk(mutex_);
    done_cv_.wait(lk, [&] { return busy_.load(std::memory_order_relaxed) == 0; });
    fn_ = nullptr;
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace webxnn
