// The thread-pool exercise both pool tests use: webxnn._testing.ThreadPool.run_counts (pool_binding.cc,
// from Python threads) and the ThreadSanitizer driver (csrc/sanitize/threads_check.cc, from C++ threads).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/thread_pool.h"

namespace webxnn {

// How often each task ran in `regions` regions of `tasks` tasks, one after another (inside a Session when
// `session`); a task with `nested` > 0 runs a nested region of that many tasks of the same pool; task
// `slow_task` sleeps `slow_us` first (a thread that loses its core while holding a task).
inline std::vector<int> pool_run_counts(ThreadPool& pool, size_t tasks, size_t regions, bool session,
                                        size_t nested = 0, size_t slow_task = 0, uint32_t slow_us = 0) {
  std::vector<std::atomic<int>> counts(tasks);
  {
    std::optional<ThreadPool::Session> s;
    if (session) s.emplace(pool);
    for (size_t r = 0; r < regions; ++r) {
      pool.run(tasks, [&](size_t t) {
        if (t == slow_task && slow_us) std::this_thread::sleep_for(std::chrono::microseconds(slow_us));
        if (nested) {
          std::atomic<size_t> inner{0};
          pool.run(nested, [&](size_t) { inner.fetch_add(1); });
          if (inner.load() != nested) throw std::runtime_error("nested region lost tasks");
        }
        counts[t].fetch_add(1);
      });
    }
  }
  std::vector<int> out;
  for (auto& c : counts) out.push_back(c.load());
  return out;
}

}  // namespace webxnn
