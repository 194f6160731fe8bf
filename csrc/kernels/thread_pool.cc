#include "kernels/thread_pool.h"

#include <algorithm>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace webxnn {
namespace {

// The pool whose tasks this thread is running right now, or whose solo Session it holds: its run() calls
// execute inline (nested parallelism, a worker of that pool, a solo series).
thread_local const ThreadPool* tl_active_pool = nullptr;
// The pool whose Session this thread holds (its run() calls wait for the region lock instead of going inline).
thread_local const ThreadPool* tl_session_pool = nullptr;
// ThreadPool::barrier_wait_ns() of this thread.
thread_local uint64_t tl_barrier_wait_ns = 0;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls `ready` until it holds or `budget` has passed (the clock read once per 64 polls). Time-based: a pause
// costs ~10 to ~140 cycles depending on the CPU, so an iteration count is not a duration.
template <typename Ready>
bool spin_until(std::chrono::microseconds budget, Ready ready) {
  if (budget.count() <= 0) return ready();
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return ready();
  }
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A barrier wait this long means a worker was descheduled while holding a task (a wake-up or a task that
// merely ran slower costs tens of microseconds; the kernel's time slices are milliseconds).
constexpr int64_t kLateNs = 1000000;
// After such a wait, the pool's regions run on the caller alone for this many times the wait (capped), then
// it tries its workers again.
constexpr int64_t kSoloFactor = 16;
constexpr int64_t kMaxSoloNs = 200000000;

}  // namespace

// Why 100 us: the gap between two parallel ops of a graph (element-wise and serial steps in between) is a
// few to tens of microseconds, so the next region still finds the workers polling; and a futex wake-up costs
// ~50 us in this VM. Longer polling (it was 500 us, and outside runs too) pays off only on an idle machine:
// with a core shared with another process, a polling worker takes time slices from the threads doing the
// work (the caller's serial steps), and a polling caller keeps the kernel from moving a descheduled worker
// onto its core.
uint32_t ThreadPool::default_spin_us() {
  const char* env = std::getenv("WEBXNN_SPIN_US");
  if (env && *env) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(env, &end, 10);
    if (end && *end == '\0' && v <= kMaxSpinUs) return static_cast<uint32_t>(v);
  }
  return kDefaultSpinUs;
}

ThreadPool::ThreadPool(size_t threads, uint32_t spin_us)
    : spin_(spin_us),
      participants_(threads ? threads : std::max<size_t>(1, std::thread::hardware_concurrency())) {
  ranges_ = std::make_unique<Range[]>(participants_);
  workers_.reserve(participants_ - 1);
  for (size_t i = 1; i < participants_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

size_t ThreadPool::threads() const {
  // A solo or guest Session, a task of this pool (nested parallelism), a holder with company: run() goes
  // inline here.
  if (participants_ == 1 || tl_active_pool == this || backing_off() || holder_with_company()) return 1;
  return participants_;
}

bool ThreadPool::holder_with_company() const {
  return tl_session_pool == this && callers_.load(std::memory_order_relaxed) > 1;
}

bool ThreadPool::backing_off() const {
  const int64_t until = solo_until_ns_.load(std::memory_order_relaxed);
  return until != 0 && now_ns() < until;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mutex_);
    stop_ = true;
  }
  wake_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

uint64_t ThreadPool::barrier_wait_ns() { return tl_barrier_wait_ns; }

ThreadPool::Session::Session(ThreadPool& pool, bool solo)
    : pool_(pool.workers_.empty() || tl_session_pool == &pool || tl_active_pool == &pool ? nullptr : &pool) {
  // (A thread already holding this pool's session, running its tasks (a worker of it, or a task of its
  // region) or inside a solo or guest session of it, or a pool without workers: nothing to do.)
  if (!pool_) return;
  const size_t before = pool_->callers_.fetch_add(1, std::memory_order_acq_rel);
  alone_at_open_ = before == 0;
  // Solo, or a guest (the workers are another caller's, and the cores not all taken): inline on this thread.
  // Beyond the pool's size, wait for the workers instead.
  const bool holds = !solo && pool_->session_mutex_.try_lock();
  inline_ = solo || (!holds && before < pool_->participants_);
  if (inline_) {
    saved_ = tl_active_pool;
    tl_active_pool = pool_;  // run() goes inline while this pool is the thread's active one
    return;
  }
  if (!holds) pool_->session_mutex_.lock();
  saved_ = tl_session_pool;
  {
    std::lock_guard<std::mutex> lk(pool_->mutex_);
    pool_->in_session_.store(true, std::memory_order_relaxed);
    pool_->sessions_opened_.fetch_add(1, std::memory_order_relaxed);
  }
  // Sleeping workers start polling now, while the caller prepares its run.
  if (pool_->spin_.count() > 0 && pool_->sleepers_.load(std::memory_order_relaxed) > 0)
    pool_->wake_cv_.notify_all();
  tl_session_pool = pool_;
}

ThreadPool::Session::~Session() {
  if (!pool_) return;
  if (inline_) {
    tl_active_pool = saved_;
  } else {
    tl_session_pool = saved_;
    {
      std::lock_guard<std::mutex> lk(pool_->mutex_);
      pool_->in_session_.store(false, std::memory_order_relaxed);
    }
    pool_->session_mutex_.unlock();
  }
  pool_->callers_.fetch_sub(1, std::memory_order_acq_rel);
}

bool ThreadPool::Session::alone() const {
  return !pool_ || (alone_at_open_ && pool_->callers_.load(std::memory_order_relaxed) == 1);
}

void ThreadPool::drain(const std::function<void(size_t)>& fn, size_t self) {
  const size_t P = participants_;
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
  for (size_t p = 0; p < participants_; ++p)
    if (ranges_[p].next.load(std::memory_order_relaxed) < ranges_[p].end) return true;
  return false;
}

void ThreadPool::worker_loop(size_t self) {
  tl_active_pool = this;
  uint64_t seen = 0;
  uint64_t seen_sessions = 0;
  for (;;) {
    // Poll first, but only inside a session: in a graph the next op usually follows within microseconds,
    // while between runs nothing may come for seconds.
    if (in_session_.load(std::memory_order_relaxed)) {
      spin_until(spin_, [&] {
        return generation_.load(std::memory_order_acquire) != seen ||
               !in_session_.load(std::memory_order_relaxed);
      });
    }
    const std::function<void(size_t)>* fn = nullptr;
    {
      std::unique_lock<std::mutex> lk(mutex_);
      auto ready = [&] {
        return stop_ || generation_.load(std::memory_order_relaxed) != seen ||
               sessions_opened_.load(std::memory_order_relaxed) != seen_sessions;
      };
      if (!ready()) {
        sleepers_.fetch_add(1, std::memory_order_relaxed);
        wake_cv_.wait(lk, ready);
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
      }
      if (stop_) return;
      seen_sessions = sessions_opened_.load(std::memory_order_relaxed);
      if (generation_.load(std::memory_order_relaxed) == seen) continue;  // a session opened: go poll
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
  bool inline_only = workers_.empty() || tasks == 1 || tl_active_pool == this || holder_with_company();
  if (!inline_only && solo_until_ns_.load(std::memory_order_relaxed) != 0) {
    if (backing_off())
      inline_only = true;
    else
      solo_until_ns_.store(0, std::memory_order_relaxed);
  }
  if (!inline_only) {
    if (tl_session_pool == this) {
      std::lock_guard<std::mutex> run_lk(run_mutex_);
      return run_region(tasks, fn);
    }
    // Outside a session: the workers are ours only if nobody else is using them.
    std::unique_lock<std::mutex> run_lk(run_mutex_, std::try_to_lock);
    if (run_lk.owns_lock()) return run_region(tasks, fn);
  }
  for (size_t t = 0; t < tasks; ++t) fn(t);
}

void ThreadPool::run_region(size_t tasks, const std::function<void(size_t)>& fn) {
  {
    std::lock_guard<std::mutex> lk(mutex_);
    fn_ = &fn;
    error_ = nullptr;
    failed_.store(false, std::memory_order_relaxed);
    const size_t P = participants_;
    for (size_t p = 0; p < P; ++p) {
      ranges_[p].next.store(tasks * p / P, std::memory_order_relaxed);
      ranges_[p].end = tasks * (p + 1) / P;
    }
    generation_.fetch_add(1, std::memory_order_release);
  }
  if (sleepers_.load(std::memory_order_relaxed) > 0) wake_cv_.notify_all();

  const ThreadPool* saved = tl_active_pool;
  tl_active_pool = this;
  const int64_t t_start = now_ns();
  drain(fn, 0);
  tl_active_pool = saved;

  // The barrier: workers still running a task of this region.
  if (busy_.load(std::memory_order_acquire) != 0) {
    const int64_t t0 = now_ns();
    if (!spin_until(spin_, [&] { return busy_.load(std::memory_order_acquire) == 0; })) {
      std::unique_lock<std::mutex> lk(mutex_);
      done_cv_.wait(lk, [&] { return busy_.load(std::memory_order_relaxed) == 0; });
    }
    const int64_t t1 = now_ns();
    const int64_t wait = t1 - t0;
    tl_barrier_wait_ns += static_cast<uint64_t>(wait);
    // The caller waited longer than it worked, and for a time slice: a worker lost its core while holding a
    // task, so this region was slower than on one thread. Until the other process lets go of the core, the
    // workers cost more than they bring: run alone for a while, then try again.
    if (wait >= kLateNs && wait > t0 - t_start)
      solo_until_ns_.store(t1 + std::min(kMaxSoloNs, kSoloFactor * wait), std::memory_order_relaxed);
  }
  std::exception_ptr error;
  {
    // busy_ == 0 is confirmed under the mutex: a worker joins a region only under it, and only while a task
    // is unclaimed. Seen without the mutex, busy_ == 0 could precede the join of a worker that had checked
    // work_left() just before the caller claimed the last task: that worker would still be inside drain()
    // with this region's `fn` when the next region resets the ranges, and could run a new task with the old,
    // destroyed function. Now all tasks are claimed, so no worker joins after this point.
    std::unique_lock<std::mutex> lk(mutex_);
    done_cv_.wait(lk, [&] { return busy_.load(std::memory_order_relaxed) == 0; });
    fn_ = nullptr;
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace webxnn
