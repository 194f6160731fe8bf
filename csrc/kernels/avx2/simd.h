// Small helpers shared by the AVX2 translation units (and only by them: everything here is compiled with
// -mavx2 -mfma; generic code must not include this header). The anonymous namespace gives each TU its own
// copy, so no AVX2 instruction can reach a generic caller through the linker's choice of an inline twin.
#pragma once

#include <immintrin.h>

#include <cstddef>

#include "kernels/kernels.h"

namespace webxnn {
namespace avx2 {
namespace {

// gemm.cc's packed panels: 16 output columns per panel; row tiles of up to 6 rows (2 x 6 accumulators + 2 B
// vectors + 1 broadcast fill the 16 ymm registers). igemm.cc and winograd.cc use the same panels.
constexpr size_t kNR = 16;
constexpr size_t kMR = 6;

// Grouped (transposed) convolutions with fewer than 8 outputs per group would leave most of each 16-wide panel
// empty: those stay on the scalar kernels.
inline bool narrow_groups(const ConvParams& p) { return p.groups > 1 && p.group_output_channels < 8; }

inline size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }
inline size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }
inline size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }
inline size_t round_up(size_t a, size_t b) { return div_up(a, b) * b; }

// The first min(n, 8) lanes set: masked loads/stores of a vector's tail.
inline __m256i lane_mask(size_t n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n > 8 ? 8 : n)), idx);
}

// v clamped to [vmin, vmax]; NaN passes through (max_ps/min_ps return the second operand when either is NaN).
inline __m256 clamp8(__m256 v, __m256 vmin, __m256 vmax) { return _mm256_min_ps(vmax, _mm256_max_ps(vmin, v)); }

}  // namespace
}  // namespace avx2
}  // namespace webxnn
