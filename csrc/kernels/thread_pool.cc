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
// onto its core. Hence also a linger after a run (thread_pool.h) of a small fraction of that run only.
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
  slots_ = std::make_unique<Slot[]>(participants_);
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
  opened_ns_ = now_ns();
  saved_ = tl_session_pool;
  pool_->poll_until_ns_.store(kPollForever, std::memory_order_relaxed);
  // Sleeping workers start polling now, while the caller prepares its run. seq_cst, as for a region (see
  // run_region): a worker going to sleep sees this session, or we see it asleep.
  pool_->sessions_opened_.fetch_add(1, std::memory_order_seq_cst);
  if (pool_->spin_.count() > 0) pool_->wake_sleepers();
  tl_session_pool = pool_;
}

ThreadPool::Session::~Session() {
  if (!pool_) return;
  if (inline_) {
    tl_active_pool = saved_;
  } else {
    tl_session_pool = saved_;
    // Polling workers go on for the linger (see thread_pool.h), then sleep.
    const int64_t now = now_ns();
    const int64_t spin_ns = std::chrono::nanoseconds(pool_->spin_).count();
    pool_->poll_until_ns_.store(now + std::min<int64_t>((now - opened_ns_) / kLingerDivisor, spin_ns),
                                std::memory_order_relaxed);
    pool_->session_mutex_.unlock();
  }
  pool_->callers_.fetch_sub(1, std::memory_order_acq_rel);
}

bool ThreadPool::Session::alone() const {
  return !pool_ || (alone_at_open_ && pool_->callers_.load(std::memory_order_relaxed) == 1);
}

namespace {

// A region word, a share's next task and a worker's done count: (generation tag << 24) | count. 40 bits of
// tag: a worker descheduled for 2^39 regions (days) would misread them; tasks beyond 2^24 run inline.
constexpr int kCountBits = 24;
constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;
constexpr uint64_t kTagMask = (uint64_t{1} << (64 - kCountBits)) - 1;
uint64_t tag_of(uint64_t word) { return word >> kCountBits; }
size_t count_of(uint64_t word) { return static_cast<size_t>(word & kCountMask); }
uint64_t word(uint64_t tag, size_t count) {
  return (tag & kTagMask) << kCountBits | static_cast<uint64_t>(count);
}
// Tag a is newer than tag b: their difference modulo 2^40 is in (0, 2^39).
bool newer(uint64_t a, uint64_t b) {
  const uint64_t d = (a - b) & kTagMask;
  return d != 0 && d < (kTagMask >> 1);
}
// A slot's words are written only when its share has tasks or its worker runs one, so a share left empty
// (fewer tasks than participants), or a worker that never gets a task, keeps an old tag. Every this many
// regions all slots get fresh tags, so none is ever near half the tag space (2^39) old, where it would
// read as newer than the region, or 2^40, where it would read as the region's own.
constexpr uint64_t kRefreshEvery = uint64_t{1} << 36;

}  // namespace

void ThreadPool::skip_regions(uint64_t n) {
  std::lock_guard<std::mutex> lk(run_mutex_);
  // Every worker drains each region once (a sleeping one was woken for it), so this ends.
  const uint64_t last = tag_of(region_.load(std::memory_order_acquire));
  for (size_t p = 1; p < participants_; ++p) {
    while (slots_[p].drained.load(std::memory_order_acquire) != last) std::this_thread::yield();
  }
  regions_ += n;
}

size_t ThreadPool::claim(uint64_t region, size_t q) {
  const uint64_t tag = tag_of(region);
  const size_t tasks = count_of(region), P = participants_;
  const size_t end = tasks * (q + 1) / P;
  Slot& s = slots_[q];
  uint64_t v = s.next.load(std::memory_order_relaxed);
  for (;;) {
    if (newer(tag_of(v), tag)) return kNone;  // a later region: ours is over (we are a late worker)
    const size_t t = tag_of(v) == tag ? count_of(v) : tasks * q / P;  // an older tag: the share is untouched
    if (t >= end) return kNone;
    if (s.next.compare_exchange_weak(v, word(tag, t + 1), std::memory_order_relaxed)) return t;
  }
}

size_t ThreadPool::drain(uint64_t region, const std::function<void(size_t)>* fn, size_t self) {
  const size_t P = participants_;
  size_t ran = 0;
  for (size_t k = 0; k < P; ++k) {
    for (size_t t; (t = claim(region, (self + k) % P)) != kNone;) {
      if (!failed_.load(std::memory_order_relaxed)) {  // else skip the rest after an error
        try {
          (*fn)(t);
        } catch (...) {
          std::lock_guard<std::mutex> lk(mutex_);
          if (!error_) error_ = std::current_exception();
          failed_.store(true, std::memory_order_relaxed);
        }
      }
      ++ran;
      if (self) finished_a_task(region, self, ran);
    }
  }
  return ran;
}

void ThreadPool::wake_sleepers() {
  // A worker counts itself in sleepers_ before it checks, under mutex_, what it would wake up for; the caller
  // changes that (seq_cst) before this load. So either the worker sees the change, or we see it counted.
  // Taking the count to 0 claims the wake-up of every worker counted: they see this change once notified.
  if (sleepers_.load(std::memory_order_seq_cst) > 0 && sleepers_.exchange(0, std::memory_order_seq_cst) > 0) {
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    wake(wake_cv_);
  }
}

void ThreadPool::wake(std::condition_variable& cv) {
  // Through the mutex first: a sleeper holds it from its last check of the condition until it waits, so the
  // notification cannot fall in between.
  {
    std::lock_guard<std::mutex> lk(mutex_);
  }
  cv.notify_all();
}

void ThreadPool::finished_a_task(uint64_t region, size_t self, size_t ran) {
  // seq_cst, against caller_sleeps_: either the caller's check before sleeping sees this count, or we see
  // that it sleeps and wake it.
  slots_[self].done.store(word(tag_of(region), ran), std::memory_order_seq_cst);
  if (caller_sleeps_.load(std::memory_order_seq_cst)) wake(done_cv_);
}

size_t ThreadPool::workers_done(uint64_t region) const {
  size_t n = 0;
  for (size_t p = 1; p < participants_; ++p) {
    const uint64_t v = slots_[p].done.load(std::memory_order_seq_cst);  // see finished_a_task
    if (tag_of(v) == tag_of(region)) n += count_of(v);
  }
  return n;
}

void ThreadPool::worker_loop(size_t self) {
  tl_active_pool = this;
  // Every region has a tag >= 1, so a worker that starts after the first regions were published still joins
  // the latest (its claims fail if it is over). Starting from region_'s tag instead left the pool's first
  // region without this worker whenever the thread started late (tests/test_runtime_pool.py's absent_workers
  // saw it on a loaded host).
  uint64_t seen = 0;
  uint64_t seen_sessions = 0;
  // Inside a session, or in the linger after one: in a graph the next op usually follows within
  // microseconds, and in a loop of runs the next run within tens; otherwise nothing may come for seconds.
  const auto may_poll = [&] {
    const int64_t until = poll_until_ns_.load(std::memory_order_relaxed);
    return until == kPollForever || now_ns() < until;  // (no clock read inside a session)
  };
  for (;;) {
    if (may_poll()) {
      const uint64_t sessions = sessions_opened_.load(std::memory_order_relaxed);
      spin_until(spin_,
                 [&] { return tag_of(region_.load(std::memory_order_relaxed)) != seen || !may_poll(); });
      // A session that opened while we polled (the next run of a loop, its first op not yet out): poll for
      // it afresh, as a worker its opening woke would.
      if (tag_of(region_.load(std::memory_order_relaxed)) == seen &&
          sessions_opened_.load(std::memory_order_relaxed) != sessions && may_poll()) {
        seen_sessions = sessions_opened_.load(std::memory_order_relaxed);
        continue;
      }
    }
    uint64_t region = region_.load(std::memory_order_acquire);
    if (tag_of(region) == seen) {
      std::unique_lock<std::mutex> lk(mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);  // against wake_sleepers, see there
      wake_cv_.wait(lk, [&] {
        return stop_ || tag_of(region_.load(std::memory_order_seq_cst)) != seen ||
               sessions_opened_.load(std::memory_order_seq_cst) != seen_sessions;
      });
      if (stop_) return;
      seen_sessions = sessions_opened_.load(std::memory_order_relaxed);
      continue;  // a region to join, or a session opened: go poll
    }
    seen = tag_of(region);
    // fn_ was stored before the region; if the region is already over it may be a later one's, or gone, but
    // then every claim below fails and it is never called.
    drain(region, fn_.load(std::memory_order_relaxed), self);
    slots_[self].drained.store(seen, std::memory_order_release);  // (for skip_regions)
  }
}

void ThreadPool::run(size_t tasks, const std::function<void(size_t)>& fn) {
  if (tasks == 0) return;
  // (A region's task count has 24 bits in region_; no kernel comes near, but more would run inline.)
  bool inline_only =
      workers_.empty() || tasks == 1 || tasks > kCountMask || tl_active_pool == this || holder_with_company();
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
  // The previous region is over (every task claimed and finished), so nobody reads fn_ or failed_ for it,
  // nor claims or finishes a task of it: a late worker's claims fail.
  const uint64_t g = ++regions_;
  const uint64_t region = word(g, tasks);
  if (g - refreshed_ >= kRefreshEvery) {
    // Every word gets a tag older than any late worker's region (so its claims fail: its tag is older, or
    // the share full) and than this region (so each share starts at its first task, each done count at 0).
    for (size_t q = 0; q < participants_; ++q) {
      slots_[q].next.store(word(g - 1, kCountMask), std::memory_order_relaxed);
      slots_[q].done.store(word(g - 1, 0), std::memory_order_relaxed);
    }
    refreshed_ = g;
  }
  fn_.store(&fn, std::memory_order_relaxed);
  failed_.store(false, std::memory_order_relaxed);
  // seq_cst, against a worker going to sleep (see wake_sleepers): either it sees this region, or we wake it.
  // A worker the Session's opening already notified is not notified again: it polls once it is up. (Here the
  // first region came while the worker was still on its way, and the second wake-up cost the caller 2-3 us.)
  region_.store(region, std::memory_order_seq_cst);
  wake_sleepers();

  const ThreadPool* saved = tl_active_pool;
  tl_active_pool = this;
  const int64_t t_start = now_ns();
  const size_t ran = drain(region, &fn, 0);
  tl_active_pool = saved;

  // The barrier: workers still running a task of this region.
  auto all_done = [&] { return ran + workers_done(region) >= tasks; };
  if (!all_done()) {
    const int64_t t0 = now_ns();
    if (!spin_until(spin_, all_done)) {
      caller_sleeps_.store(true, std::memory_order_seq_cst);  // against finished_a_task
      {
        std::unique_lock<std::mutex> lk(mutex_);
        done_cv_.wait(lk, all_done);
      }
      caller_sleeps_.store(false, std::memory_order_relaxed);
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
  if (failed_.load(std::memory_order_acquire)) {
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lk(mutex_);
      error = error_;
      error_ = nullptr;
    }
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace webxnn
