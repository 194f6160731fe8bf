// Helpers shared by the scalar kernel translation units (never included from ISA-specific TUs).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/internal.h"
#include "kernels/kernels.h"

namespace webxnn {
namespace scalar {

// post(x) for a fused post-op (elementwise.cc: the very function `unary` applies for that op).
float post_op(PostOp op, float x);

// The fused output activation: the clamp, then the post-op. Infinite bounds are skipped (so NaN passes through
// untouched and no work is done when there is neither a clamp nor a post-op).
struct Clamp {
  float lo, hi;
  bool use_lo, use_hi;
  PostOp post;
  explicit Clamp(const Activation& a)
      : lo(a.min),
        hi(a.max),
        use_lo(a.min != -std::numeric_limits<float>::infinity()),
        use_hi(a.max != std::numeric_limits<float>::infinity()),
        post(a.post) {}
  bool active() const { return use_lo || use_hi || post != PostOp::kNone; }
  float operator()(float x) const {
    if (use_lo && x < lo) x = lo;
    if (use_hi && x > hi) x = hi;
    return post == PostOp::kNone ? x : post_op(post, x);
  }
  void apply(float* p, size_t n) const {
    if (!active()) return;
    for (size_t i = 0; i < n; ++i) p[i] = (*this)(p[i]);
  }
};

// Round to nearest, ties to even, independent of the FP environment's rounding mode assumptions of libm:
// adding 2^23 to a magnitude below 2^23 leaves no fraction bits, so the FPU's default rounding does the work.
inline float round_even(float x) {
  const float ax = std::fabs(x);
  if (!(ax < 8388608.f)) return x;  // already integral, or inf/NaN
  const float r = (ax + 8388608.f) - 8388608.f;
  return std::copysign(r, x);
}

// The int8 kernels' requantization of one scaled value v: clamped to [lo, hi] (a NaN gives lo, like
// vmaxps(v, lo)), rounded half to even, plus the output zero point.
inline int32_t requantize(float v, float lo, float hi, int32_t zy) {
  v = v >= lo ? v : lo;
  v = v <= hi ? v : hi;
  return static_cast<int32_t>(round_even(v)) + zy;
}

// The same for one int32 sum (table.def's qgemm): acc * scale, requantized.
inline int32_t requantize(int32_t acc, float scale, float lo, float hi, int32_t zy) {
  return requantize(static_cast<float>(acc) * scale, lo, hi, zy);
}

// How many tasks to split `units` independent pieces of work into, each unit costing about `unit_cost`
// (multiply-adds or bytes). Small problems stay one task (run inline); larger ones get a few tasks per
// thread so dynamic scheduling can even out the load.
inline size_t pick_tasks(const Parallel& par, size_t units, double unit_cost) {
  return internal::task_count(units, unit_cost, par.threads(), 8);
}

// [begin, end) of chunk `task` when `units` are split into `tasks` contiguous chunks.
inline void chunk_range(size_t units, size_t tasks, size_t task, size_t* begin, size_t* end) {
  *begin = units * task / tasks;
  *end = units * (task + 1) / tasks;
}

}  // namespace scalar
}  // namespace webxnn
