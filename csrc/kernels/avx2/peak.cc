// A tiny FMA throughput probe (compiled with -mavx2 -mfma): 12 independent 8-wide FMA chains, so the two FMA
// pipes stay busy whatever the latency (12 chains >= 2 pipes x 4-5 cycles). The benchmark divides the flops
// by the time to get this core's attainable peak, the yardstick for "% of peak" of every other kernel.
#include <immintrin.h>

#include "kernels/internal.h"

namespace webxnn {
namespace internal {

float fma_peak_loop(size_t iters) {
  __m256 acc[12];
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
#pragma GCC unroll 12
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  for (size_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
#pragma GCC unroll 11
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  return _mm256_cvtss_f32(s);  // returned so the loop cannot be removed
}

// The int8 counterpart: 10 independent chains of the AVX2 u8 x s8 step (vpmaddubsw, vpmaddwd with ones, vpaddd;
// 32 multiply-adds each). Each chain multiplies its own accumulator's bytes, so no step can be shared or hoisted;
// 10 chains cover the step's latency (~7 cycles) at the multipliers' rate; with 12 the accumulators, the
// weights and the ones no longer fit the 16 ymm registers (4 spilled chains ran at ~60 %).
int32_t int8_peak_loop(size_t iters) {
  __m256i acc[10];
  const __m256i w = _mm256_set1_epi8(-5), ones = _mm256_set1_epi16(1);
#pragma GCC unroll 10
  for (int i = 0; i < 10; ++i) acc[i] = _mm256_set1_epi32(i);
  for (size_t it = 0; it < iters; ++it) {
#pragma GCC unroll 10
    for (int i = 0; i < 10; ++i)
      acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(acc[i], w), ones));
  }
  __m256i s = acc[0];
#pragma GCC unroll 9
  for (int i = 1; i < 10; ++i) s = _mm256_add_epi32(s, acc[i]);
  return _mm256_cvtsi256_si32(s);  // returned so the loop cannot be removed
}

}  // namespace internal
}  // namespace webxnn
