// Generic (baseline-ISA) support code for the ISA-specific translation units; see internal.h.
#include <cstdlib>
#include <functional>
#include <new>

#include "kernels/internal.h"

namespace webxnn {
namespace internal {

void parallel_run(Parallel& par, size_t tasks, TaskFn fn, const void* ctx) {
  if (tasks == 0) return;
  if (tasks == 1) {
    fn(ctx, 0);
    return;
  }
  par.run(tasks, [fn, ctx](size_t t) { fn(ctx, t); });
}

size_t parallel_threads(const Parallel& par) { return par.threads(); }

void* aligned_alloc64(size_t bytes) {
  const size_t rounded = ((bytes + 63) / 64) * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (!p) throw std::bad_alloc();
  return p;
}

void aligned_free(void* p) { std::free(p); }

}  // namespace internal
}  // namespace webxnn
