// Helpers of the AVX2 row-window kernels (depthwise convolution in dwconv.cc, pooling in pool.cc): which
// output columns have their whole window inside the row, and 8-lane loads masked at a channel tail. ISA
// translation units only; in an anonymous namespace like simd.h's helpers (each TU its own copy).
#pragma once

#include <immintrin.h>

#include <cstddef>

#include "kernels/avx2/isa_ns.h"

namespace webxnn {
namespace WEBXNN_AVX2_NS {
namespace {

// Output columns [lo, hi) whose taps kx = 0..K-1 all fall inside [0, W).
inline void interior(size_t OW, size_t W, size_t K, size_t stride, size_t dil, size_t pad, size_t* lo,
                     size_t* hi) {
  size_t a = 0;
  while (a < OW && a * stride < pad) ++a;  // first column with ix(kx=0) >= 0
  size_t b = a;
  const size_t span = dil * (K - 1);
  while (b < OW && b * stride + span - pad < W) ++b;
  if (a > b) b = a;
  *lo = a;
  *hi = b;
}

template <bool kMask>
inline __m256 load8(const float* p, __m256i m) {
  return kMask ? _mm256_maskload_ps(p, m) : _mm256_loadu_ps(p);
}

}  // namespace
}  // namespace WEBXNN_AVX2_NS
}  // namespace webxnn
