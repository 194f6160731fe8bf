// The MR x 16 FMA3 tile that the GEMM (gemm.cc) and the convolutions (igemm.cc) are built from: MR <= 6 rows of
// C against one 16-column panel of packed weights, 2 * MR ymm accumulators (acc0: columns 0-7, acc1: 8-15) +
// 2 weight vectors + 1 broadcast of A within the 16 ymm registers. The pieces are force-inlined into each
// caller's own loops (gemm: K blocks, prefetch streams, compile-time short K; igemm: taps of row pointers;
// planar stems: strided pixels of image planes), which put exactly these instructions in their k loops.
// Each output is the panel's bias + the products in k order, however a caller splits its loops. Packed
// panels are 64-byte aligned (the *_pack contract; panels are whole multiples of 16 floats): the bias and
// weights are read with aligned loads.
// AVX2 translation units only (compiled with -mavx2 -mfma).
#pragma once

#include <immintrin.h>

#include <cstddef>

#include "kernels/avx2/simd.h"

namespace webxnn {
namespace WEBXNN_AVX2_NS {
namespace {

// Every row of the tile starts from the 16 floats at `bias` (the head of a packed panel).
template <int MR>
__attribute__((always_inline)) inline void tile16_load_bias(const float* bias, __m256 (&acc0)[MR],
                                                            __m256 (&acc1)[MR]) {
  const __m256 b0 = _mm256_load_ps(bias), b1 = _mm256_load_ps(bias + 8);
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) {
    acc0[m] = b0;
    acc1[m] = b1;
  }
}

// One k step of the tile: acc[m] += a[m][k] * w[0:16] for every row m (a: the rows' A pointers, e.g. rows of A,
// input pixels of a tap, pixels of a plane). w: the panel's 16 weights of this k.
template <int MR>
__attribute__((always_inline)) inline void tile16_fma(const float* w, const float* const (&a)[MR], size_t k,
                                                      __m256 (&acc0)[MR], __m256 (&acc1)[MR]) {
  const __m256 b0 = _mm256_load_ps(w), b1 = _mm256_load_ps(w + 8);
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) {
    const __m256 va = _mm256_broadcast_ss(a[m] + k);
    acc0[m] = _mm256_fmadd_ps(va, b0, acc0[m]);
    acc1[m] = _mm256_fmadd_ps(va, b1, acc1[m]);
  }
}

// acc[m] += row m of r (16 floats each, row stride ldr): a fused residual, added before the clamp.
template <int MR>
__attribute__((always_inline)) inline void tile16_add_rows(const float* r, size_t ldr, __m256 (&acc0)[MR],
                                                           __m256 (&acc1)[MR]) {
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) {
    acc0[m] = _mm256_add_ps(acc0[m], _mm256_loadu_ps(r + m * ldr));
    acc1[m] = _mm256_add_ps(acc1[m], _mm256_loadu_ps(r + m * ldr + 8));
  }
}

// Every accumulator clamped to [vmin, vmax] (clamp8: NaN passes through).
template <int MR>
__attribute__((always_inline)) inline void tile16_clamp(__m256 vmin, __m256 vmax, __m256 (&acc0)[MR],
                                                        __m256 (&acc1)[MR]) {
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) {
    acc0[m] = clamp8(acc0[m], vmin, vmax);
    acc1[m] = clamp8(acc1[m], vmin, vmax);
  }
}

}  // namespace
}  // namespace WEBXNN_AVX2_NS
}  // namespace webxnn
