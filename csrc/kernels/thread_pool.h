// webxnn::ThreadPool — the project's one persistent thread pool (a Parallel implementation).
//
//  * `ThreadPool(n)` runs tasks on n threads in total: the caller of run() plus n-1 persistent workers
//    (n = 0 means std::thread::hardware_concurrency()). n = 1 starts no thread and runs everything inline.
//  * run(tasks, fn) hands out task indices dynamically (one atomic counter); the caller participates and
//    run() returns when every task has finished. Workers that wake up after the caller already claimed all
//    tasks simply go back to sleep, so a small run never waits for a wake-up.
//  * Workers poll for ~0.5 ms (steady clock) after each run before sleeping on a condition variable, so the
//    next op of a graph finds them awake; the caller polls as long for workers finishing their last task.
//  * Concurrency: run() may be called from several threads at once; calls are SERIALIZED by a mutex (one
//    parallel region at a time per pool). A run() issued from inside a task of the same pool (nested
//    parallelism) executes inline on that thread instead of deadlocking.
//  * An exception thrown by fn is caught, the remaining tasks are skipped, and the first exception is
//    rethrown from run() on the calling thread.
//  * Destruction joins the workers; destroying the pool while another thread is inside run() is a bug of
//    the owner (as with any object).
//  * The pool does not touch the floating-point environment (MXCSR): results stay bit-identical whichever
//    thread runs a task.
#pragma once

#include <atomic>
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
  explicit ThreadPool(size_t threads);
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t threads() const override { return workers_.size() + 1; }
  void run(size_t tasks, const std::function<void(size_t task)>& fn) override;

 private:
  void worker_loop(size_t self);
  // Runs tasks of the current region until none is left: first participant `self`'s own range, then
  // whatever is left of the others' ranges.
  void drain(const std::function<void(size_t)>& fn, size_t self);
  bool work_left() const;

  // Participant p (0 = the caller, p >= 1 = worker p) owns tasks [p*tasks/P, (p+1)*tasks/P) of a region and
  // claims them in order; a participant with nothing left takes the rest of the others' ranges. Kernels number
  // their tasks along the data (row ranges, tiles), so the same participant touches the same part of a
  // tensor in consecutive ops: what a producer wrote is still in that core's L2 when its consumer reads it.
  struct alignas(64) Range {
    std::atomic<size_t> next{0};
    size_t end = 0;
  };

  std::mutex run_mutex_;  // serializes whole run() calls
  std::mutex mutex_;  // guards the region state below and the condition variables
  std::condition_variable wake_cv_;
  std::condition_variable done_cv_;
  const std::function<void(size_t)>* fn_ = nullptr;
  std::unique_ptr<Range[]> ranges_;  // one per participant
  std::atomic<uint64_t> generation_{0};  // bumped once per parallel region
  std::atomic<size_t> busy_{0};  // workers that joined the current region and have not left it
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace webxnn
