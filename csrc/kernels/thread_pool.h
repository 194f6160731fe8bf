// webxnn::ThreadPool — the project's persistent thread pool (a Parallel implementation).
//
//  * `ThreadPool(n, spin)` runs tasks on n threads in total: the caller of run() plus n-1 persistent workers
//    (n = 0 means std::thread::hardware_concurrency()). n = 1 starts no thread and runs everything inline.
//  * run(tasks, fn) hands out task indices dynamically: participant p first takes the tasks of its own
//    share [p*tasks/P, (p+1)*tasks/P), in order, then whatever is left of the others' shares. A worker that
//    wakes up late, or is descheduled, holds at most the one task it is running: the others take the rest.
//    Workers that wake up after all tasks are claimed go back to waiting, so a small run never waits for a
//    wake-up.
//  * No lock between regions: the caller publishes a region with one store (generation and task count in
//    one word), each participant claims tasks from its share by compare-and-swap on its own cache line,
//    and each worker counts the tasks it finished on that line, where the caller reads them. Tasks and
//    counts carry the region's generation, so nothing is reset between regions and a worker that arrives
//    after its region ended claims nothing. An empty region on 2 threads costs ~0.7 us here (1.2 us with
//    the mutex-guarded join it replaced, whose worker and caller took turns on one lock at every end).
//  * Waiting (the policy the README states): a worker that finished a region polls for the next one for at
//    most `spin` (steady clock) while a Session is open (a caller inside Program::run), and for a short
//    linger after it closes: 1/kLingerDivisor of the session's length, at most `spin`. Then it sleeps on a
//    condition variable. The linger is what a loop of runs needs: the next run opens its session while the
//    workers still poll, and wakes nobody (waking a worker whose vCPU halted cost the caller 8-18 us and the
//    run ~50 us on the 2-vCPU VM). It costs a run that is not followed within it at most ~3 % of that run's
//    time of one core's polling. The caller of run() polls for at most `spin` for workers still finishing
//    their last task, then sleeps too. spin = 0: nobody polls. The default is WEBXNN_SPIN_US from the
//    environment, else kDefaultSpinUs.
//  * Sessions: `Session s(pool)` brackets a series of run() calls (one Program::run). One session at a time
//    holds the workers. Opening a session wakes sleeping workers early, so they are polling by the time the
//    first region starts. A pool with no workers makes Session a no-op, so single-threaded runs from several
//    threads stay concurrent.
//  * Callers at once: a caller that finds the workers held by another session becomes a GUEST: its series
//    runs inline on its own thread, and while it does, the holder's regions run inline too (the workers
//    idle). With as many callers as the pool has threads, each runs alone on its core: two runs at once
//    take about the time of one single-threaded run, where taking turns with both threads would take two
//    two-thread runs (1.85-1.9x speed-up, never 2x) plus a hand-over. Callers beyond the pool's size sleep
//    until the holder's session closes, instead of oversubscribing the cores.
//  * A solo Session (`Session s(pool, true)`) makes the caller's run() calls inline until it closes; it
//    counts as a caller too (a holder's regions run inline beside it).
//  * Back-off: when the caller waited at a region's end for at least 1 ms, and longer than its own share of
//    the work took, a worker lost its core while holding a task (another process took it). The next regions
//    then run on the caller alone for 16 times that wait (at most 0.2 s), after which the workers are tried
//    again: with a core taken away, two threads must not be slower than one.
//  * run() outside a session (load-time packing, kernel tests) on a pool whose workers are busy with
//    another caller's region runs inline on the calling thread instead of waiting. A run() issued from inside
//    a task of the same pool (nested parallelism) also executes inline.
//  * An exception thrown by fn is caught, the remaining tasks are skipped, and the first exception is
//    rethrown from run() on the calling thread.
//  * barrier_wait_ns(): per calling thread, the total time it waited at the end of its regions for workers
//    still running a task (what Program.profile() reports per step as the barrier wait).
//  * Destruction joins the workers; destroying the pool while another thread is inside run() is a bug of
//    the owner (as with any object).
//  * The pool does not touch the floating-point environment (MXCSR): results stay bit-identical whichever
//    thread runs a task.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/parallel.h"

namespace webxnn {

class ThreadPool final : public Parallel {
 public:
  // How long threads poll before sleeping when neither the constructor nor WEBXNN_SPIN_US says otherwise.
  static constexpr uint32_t kDefaultSpinUs = 100;
  // The longest polling any option (WEBXNN_SPIN_US, load options, the C API) may ask for: 1 s.
  static constexpr uint32_t kMaxSpinUs = 1000000;
  // After a Session closes, the workers poll for 1/kLingerDivisor of its length (at most spin_us).
  static constexpr int64_t kLingerDivisor = 32;
  // WEBXNN_SPIN_US when set to a number in [0, kMaxSpinUs], else kDefaultSpinUs.
  static uint32_t default_spin_us();
  // An option's spin_us: negative means the default (default_spin_us()); callers check kMaxSpinUs first.
  static uint32_t resolve_spin_us(int64_t spin_us) {
    return spin_us < 0 ? default_spin_us() : static_cast<uint32_t>(spin_us);
  }

  explicit ThreadPool(size_t threads, uint32_t spin_us = default_spin_us());
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The threads a region started here would run on: 1 on a thread that runs this pool's regions inline (a
  // solo Session, a task of the pool, a back-off after a stalled worker), so kernels size their tasks for the
  // threads that will actually run them; else the caller plus the workers.
  size_t threads() const override;
  // The caller plus the workers: what the pool was sized to.
  size_t size() const { return participants_; }
  uint32_t spin_us() const { return static_cast<uint32_t>(spin_.count()); }
  // How many times a Session or region has woken sleeping workers so far (tests: the linger).
  uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }
  void run(size_t tasks, const std::function<void(size_t task)>& fn) override;

  // RAII: one caller's series of regions (see the header comment). A nested Session of the same pool on the
  // same thread, or one opened inside a task of that pool (on a worker too), does nothing.
  class Session {
   public:
    // solo: this series runs on the calling thread alone (every run() inline, same tasks in order), takes no
    // turn and wakes no worker (runtime/run_mode.h decides when that is faster).
    explicit Session(ThreadPool& pool, bool solo = false);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // No other caller had a session of this pool open when this one opened, nor has now: the series ran
    // the way it was asked to (a time worth keeping for runtime/run_mode.h).
    bool alone() const;

   private:
    ThreadPool* pool_;  // null when there is nothing to do
    // What this thread held before: its session pool (another pool's), or for a solo or guest session its
    // active pool.
    const ThreadPool* saved_ = nullptr;
    bool inline_ = false;  // solo or guest: run() inline, no hold on the workers
    bool alone_at_open_ = true;
    int64_t opened_ns_ = 0;  // steady clock at the opening of a session holding the workers
  };

  // Nanoseconds the calling thread has waited, in total, at the end of its regions (any pool).
  static uint64_t barrier_wait_ns();

  // Tests: counts n regions as run, with no task for anyone (to reach the generation tags' wrap-around and
  // the refresh of long-unused shares without running 2^36 regions). First waits until every worker is
  // out of the last region: a worker still claiming in it would be 2^40 regions late after the jump, which
  // real regions never make it (its tag would read as newer than the slots', see claim).
  void skip_regions(uint64_t n);

 private:
  // A stalled worker made the pool run its regions inline for a while (solo_until_ns_), and that while lasts.
  bool backing_off() const;
  // This thread holds the workers but shares the cores with other callers: its regions run inline.
  bool holder_with_company() const;
  void worker_loop(size_t self);
  // Runs tasks of region `region` (a region_ word) until none is left: first participant `self`'s own share,
  // then whatever is left of the others'. Returns how many tasks this thread ran (or skipped after an error).
  size_t drain(uint64_t region, const std::function<void(size_t)>* fn, size_t self);
  // Claims the next task of participant q's share in `region`, or returns kNone.
  size_t claim(uint64_t region, size_t q);
  // Tasks of `region` the workers have finished (their done counts for its generation).
  size_t workers_done(uint64_t region) const;
  void run_region(size_t tasks, const std::function<void(size_t)>& fn);
  void finished_a_task(uint64_t region, size_t self, size_t ran);
  // Wakes the threads sleeping on cv (wake_cv_ or done_cv_), after a seq_cst check found one asleep.
  void wake(std::condition_variable& cv);
  // Wakes the workers that went to sleep on wake_cv_ since the last such wake-up, if any.
  void wake_sleepers();

  static constexpr size_t kNone = ~size_t{0};

  // Participant p (0 = the caller, p >= 1 = worker p) owns tasks [p*tasks/P, (p+1)*tasks/P) of a region and
  // claims them in order; a participant with nothing left takes the rest of the others' shares. Kernels
  // number their tasks along the data (row ranges, tiles), so the same participant touches the same part of
  // a tensor in consecutive ops: what a producer wrote is still in that core's L2 when its consumer reads it.
  // Each word is (generation tag << 24) | count, so nobody resets them between regions: a share whose tag is
  // older than the region's is untouched (its next task is its first), one whose tag is newer tells a late
  // worker that its region is over. A participant's next is written by itself, except when another
  // participant takes tasks from its share at the end of a region. done has a line of its own: the caller
  // reads it at every region's end, and on a shared line the worker's first claim of the next region waits
  // for the line to come back. (Publish to first task, summed over MobileNetV2's 48 regions at 2 threads,
  // read 18.1 -> 15.5 us for the caller and 17.2 -> 15.8 for the worker in two profiles each: about the
  // spread between profiles, so a small gain at most.)
  struct alignas(64) Slot {
    std::atomic<uint64_t> next{0};  // the next unclaimed task of this share (relative to the region's tag)
    // The tag of the last region this worker is out of (for skip_regions only): on next's line, which the
    // worker owns between regions, not on done's, which the caller has just read.
    std::atomic<uint64_t> drained{0};
    alignas(64) std::atomic<uint64_t> done{0};  // tasks this worker finished in the region of the tag
  };

  const std::chrono::microseconds spin_;
  // The caller plus the workers: the participants of every region (slots_ has one per participant). Fixed
  // before the first worker starts, so workers read it without a race on workers_.
  const size_t participants_;
  std::mutex session_mutex_;  // held by the Session holding the workers
  std::atomic<size_t> callers_{0};  // open Sessions (holder, guests, solo) and callers waiting to hold
  std::mutex run_mutex_;  // serializes regions
  std::mutex mutex_;  // guards the sleeps (condition variables), error_ and stop_
  std::condition_variable wake_cv_;
  std::condition_variable done_cv_;
  // The current region, published by one store: (generation tag << 24) | tasks. Its function goes in
  // fn_ before; a worker calls fn_ only for a task it claimed in that generation, which proves the region is
  // not over, so fn_ is still that region's.
  alignas(64) std::atomic<uint64_t> region_{0};
  std::atomic<const std::function<void(size_t)>*> fn_{nullptr};
  std::unique_ptr<Slot[]> slots_;  // one per participant
  // Under run_mutex_: regions run so far, and the last one that refreshed every slot's tags.
  uint64_t regions_ = 0;
  uint64_t refreshed_ = 0;
  alignas(64) std::atomic<uint64_t> sessions_opened_{0};  // bumped by each Session (wakes sleepers to poll)
  // Workers may poll until this steady-clock time: kPollForever while a Session is open, then the end of
  // its linger (see ~Session).
  static constexpr int64_t kPollForever = INT64_MAX;
  std::atomic<int64_t> poll_until_ns_{0};
  // Workers gone to sleep on wake_cv_ since the last wake_sleepers (which takes it back to 0): the ones no
  // notification has reached yet. A region or Session wakes them if any.
  std::atomic<size_t> sleepers_{0};
  std::atomic<uint64_t> wakeups_{0};  // wake_sleepers calls that notified
  std::atomic<bool> caller_sleeps_{false};  // the caller sleeps on done_cv_ at a region's end
  std::atomic<int64_t> solo_until_ns_{0};  // steady-clock time until which run() runs inline (0 = no)
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace webxnn
