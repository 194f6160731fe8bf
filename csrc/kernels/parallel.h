// The one threading interface kernels see. The runtime implements it with a persistent pool; kernels only
// split work into tasks. A task index is all a kernel gets: it must produce the same bytes for any thread
// count (no reductions whose order depends on scheduling).
#pragma once

#include <cstddef>
#include <functional>

namespace webxnn {

class Parallel {
 public:
  virtual ~Parallel() = default;
  // Number of threads that may run tasks at once (>= 1). Kernels use it to size tiles.
  virtual size_t threads() const = 0;
  // Runs fn(task) for task in [0, tasks), in any order and on any thread (the caller participates),
  // and returns when all have finished.
  virtual void run(size_t tasks, const std::function<void(size_t task)>& fn) = 0;
};

// Runs everything inline on the calling thread.
class SerialParallel final : public Parallel {
 public:
  size_t threads() const override { return 1; }
  void run(size_t tasks, const std::function<void(size_t)>& fn) override {
    for (size_t t = 0; t < tasks; ++t) fn(t);
  }
};

}  // namespace webxnn
