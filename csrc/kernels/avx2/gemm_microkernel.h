// The MR x 16 FMA3 tile that the GEMM (gemm.cc) and the convolutions (igemm.cc) are built from: MR <= 6 rows of
// C against one 16-column panel of packed weights, 2 * MR ymm accumulators (acc0: columns 0-7, acc1: 8-15) +
// 2 weight vectors + 1 broadcast of A within the 16 ymm registers. The pieces are force-inlined into each
// caller's own loops (gemm: K blocks, prefetch streams, compile-time short K; igemm: taps of row pointers;
// planar stems: strided pixels of image planes), which put exactly these instructions in their k loops.
// Each output is the panel's bias + the products in k order, however a caller splits its loops. Packed
// panels are 64-byte aligned (the *_pack contract; panels are whole multiples of 16 floats): the bias and
// weights are read with aligned loads.
// AVX2 translation units only (compiled with -mavx2 -mfma), and their second build for AVX-512 (ztile_*).
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

// Whether tiles span two full panels (the 512-bit build's ztile_*) or one.
#if defined(WEBXNN_F32_ZMM)
constexpr bool kTwoPanels = true;
#else
constexpr bool kTwoPanels = false;
#endif

// Calls f(q, nc, Rows<NP>{}) for the tiles across panels [q0, q1) of goc output columns: panel q with its nc
// columns (NP = 1), or in the 512-bit build panels q and q + 1 when both are full (NP = 2, nc = 16).
template <typename F>
__attribute__((always_inline)) inline void each_panel_tile(size_t q0, size_t q1, size_t goc, F&& f) {
  for (size_t q = q0; q < q1; ++q) {
    if constexpr (kTwoPanels) {
      if (q + 1 < q1 && goc - q * kNR >= 2 * kNR) {
        f(q, kNR, Rows<2>{});
        ++q;
        continue;
      }
    }
    f(q, min_sz(kNR, goc - q * kNR), Rows<1>{});
  }
}

#if defined(WEBXNN_F32_ZMM)
// The 512-bit form (the AVX-512 build of the fp32 GEMM family, isa_ns.h): MR rows x NP full panels side by side
// (the second pstride floats after the first, its columns 16 to the right), one zmm accumulator per row and
// panel. Per output the same FMAs in the same order as the ymm tile's two halves, so the same bits. NP = 2
// keeps 12 FMA chains in flight on two 512-bit pipes; NP = 1's 6 leave a quarter of the issue slots idle.

// Every row of panel q starts from its 16 bias floats at bias + q * pstride.
template <int MR, int NP>
__attribute__((always_inline)) inline void ztile_load_bias(const float* bias, size_t pstride,
                                                           __m512 (&acc)[MR][NP]) {
#pragma GCC unroll 2
  for (int q = 0; q < NP; ++q) {
    const __m512 b = _mm512_load_ps(bias + q * pstride);
#pragma GCC unroll 6
    for (int m = 0; m < MR; ++m) acc[m][q] = b;
  }
}

// One k step: acc[m][q] += a[m][k] * panel q's 16 weights of this k (w + q * pstride).
template <int MR, int NP>
__attribute__((always_inline)) inline void ztile_fma(const float* w, size_t pstride,
                                                     const float* const (&a)[MR], size_t k,
                                                     __m512 (&acc)[MR][NP]) {
  __m512 wv[NP];
#pragma GCC unroll 2
  for (int q = 0; q < NP; ++q) wv[q] = _mm512_load_ps(w + q * pstride);
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) {
    const __m512 va = _mm512_set1_ps(a[m][k]);
#pragma GCC unroll 2
    for (int q = 0; q < NP; ++q) acc[m][q] = _mm512_fmadd_ps(va, wv[q], acc[m][q]);
  }
}

// The epilogue: the residual's rows r (null: none; row stride ldr) added, then clamp8's order when `clamp`
// (max with vmin, then min with vmax: NaN passes through), stored to C's rows (stride ldc).
template <int MR, int NP>
__attribute__((always_inline)) inline void ztile_store(__m512 (&acc)[MR][NP], float* c, size_t ldc,
                                                       const float* r, size_t ldr, bool clamp, __m256 vmin,
                                                       __m256 vmax) {
  const __m512 lo = _mm512_broadcastss_ps(_mm256_castps256_ps128(vmin));
  const __m512 hi = _mm512_broadcastss_ps(_mm256_castps256_ps128(vmax));
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) {
#pragma GCC unroll 2
    for (int q = 0; q < NP; ++q) {
      __m512 v = acc[m][q];
      if (r) v = _mm512_add_ps(v, _mm512_loadu_ps(r + m * ldr + q * 16));
      if (clamp) v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
      _mm512_storeu_ps(c + m * ldc + q * 16, v);
    }
  }
}
#endif

}  // namespace
}  // namespace WEBXNN_AVX2_NS
}  // namespace webxnn
