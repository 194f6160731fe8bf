// Generic (baseline-ISA) support code for the ISA-specific translation units; see internal.h.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

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

size_t task_count(size_t units, double unit_cost, size_t threads, size_t per_thread) {
  constexpr double kMinTaskCost = 32768.0;
  if (units <= 1 || threads <= 1) return 1;
  size_t tasks = static_cast<size_t>(unit_cost * static_cast<double>(units) / kMinTaskCost);
  if (tasks > threads * per_thread) tasks = threads * per_thread;
  if (tasks > units) tasks = units;
  return tasks ? tasks : 1;
}

void* aligned_alloc64(size_t bytes) {
#if defined(__linux__)
  // Large buffers (packed weights of big GEMMs) on transparent huge pages where the kernel allows it
  // (THP "madvise" mode): GEMM panels sweep megabytes, and 4 KB pages cost measurable TLB misses.
  constexpr size_t kHuge = size_t{2} << 20;
  if (bytes >= kHuge) {
    const size_t rounded = ((bytes + kHuge - 1) / kHuge) * kHuge;
    void* p = std::aligned_alloc(kHuge, rounded);
    if (!p) throw std::bad_alloc();
    madvise(p, rounded, MADV_HUGEPAGE);  // advisory; failure is harmless
    return p;
  }
#endif
  const size_t rounded = ((bytes + 63) / 64) * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (!p) throw std::bad_alloc();
  return p;
}

void aligned_free(void* p) { std::free(p); }

namespace {

// One thread's scratch blocks, one per slot.
class ScratchBlocks {
 public:
  ScratchBlocks() = default;
  ScratchBlocks(const ScratchBlocks&) = delete;
  ScratchBlocks& operator=(const ScratchBlocks&) = delete;
  ~ScratchBlocks() {
    for (void* p : ptr_) aligned_free(p);
  }

  void* get(size_t slot, size_t bytes) {
    if (ptr_[slot] && bytes <= size_[slot]) return ptr_[slot];
    // At least half again the old size: a model's layers of growing size reallocate a few times, not per layer.
    const size_t grown = std::max(bytes, size_[slot] + size_[slot] / 2);
    aligned_free(ptr_[slot]);
    ptr_[slot] = nullptr;  // aligned_alloc64 may throw: never leave a freed pointer behind
    size_[slot] = 0;
    ptr_[slot] = aligned_alloc64(grown);
    size_[slot] = grown;
    return ptr_[slot];
  }

 private:
  static constexpr size_t kSlots = static_cast<size_t>(Scratch::kCount);
  void* ptr_[kSlots] = {};
  size_t size_[kSlots] = {};
};

thread_local ScratchBlocks tl_scratch;

}  // namespace

void* scratch(Scratch slot, size_t bytes) { return tl_scratch.get(static_cast<size_t>(slot), bytes); }

uint64_t unique_call_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

bool scratch_holds(Scratch key_slot, uint64_t call, uint64_t part) {
  uint64_t* key = static_cast<uint64_t*>(scratch(key_slot, 2 * sizeof(uint64_t)));
  if (key[0] == call && key[1] == part) return true;
  key[0] = call;
  key[1] = part;
  return false;
}

}  // namespace internal
}  // namespace webxnn
