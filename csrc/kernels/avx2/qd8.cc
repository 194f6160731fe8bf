// AVX2 per-row dynamic quantization (table.def's quantize_qd8): compiled with -mavx2 -mfma. Two passes over a
// row: min/max (8 lanes, vminps skipping NaN like the scalar reference), then x / scale, clamp, round to even
// (vcvtps2dq), + zero point, narrowed 32 at a time. Division rather than a reciprocal multiply, as table.def
// says (and onnxruntime's DynamicQuantizeLinear does). qd8_gemm itself lives in qgemm.cc, on qgemm's tiles.
//
// ODR hygiene: no std:: templates here; parallelism goes through internal.h.
#include <immintrin.h>

#include <cstring>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/simd.h"
#include "kernels/internal.h"

namespace webxnn {
namespace avx2 {
namespace {

struct QdCtx {
  size_t rows, cols, tasks;
  const float* x;
  int8_t* y;
  RowQuant* params;
};

float hmin(__m256 v) {
  __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_min_ps(m, _mm_movehl_ps(m, m));
  m = _mm_min_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

// 32 values to 32 bytes: q = clamp(x / scale, qlo, qhi) rounded to even, + zp.
inline __m256i quantize32(const float* x, __m256 scale, __m256 qlo, __m256 qhi, __m256i zp) {
  __m256i q[4];
  for (int i = 0; i < 4; ++i) {
    __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + 8 * i), scale);
    v = _mm256_min_ps(_mm256_max_ps(v, qlo), qhi);  // vmaxps(v, lo) first: a NaN gives lo
    q[i] = _mm256_add_epi32(_mm256_cvtps_epi32(v), zp);
  }
  // packs work per 128-bit lane: [q0 0-3, q1 0-3 | q0 4-7, q1 4-7] etc.; vpermd puts the dwords back in order.
  const __m256i p01 = _mm256_packs_epi32(q[0], q[1]), p23 = _mm256_packs_epi32(q[2], q[3]);
  const __m256i p = _mm256_packs_epi16(p01, p23);
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

void quantize_rows(const void* vctx, size_t task) {
  const QdCtx& c = *static_cast<const QdCtx*>(vctx);
  const size_t r0 = c.rows * task / c.tasks, r1 = c.rows * (task + 1) / c.tasks, K = c.cols;
  for (size_t r = r0; r < r1; ++r) {
    const float* x = c.x + r * K;
    int8_t* y = c.y + r * K;
    __m256 vlo = _mm256_setzero_ps(), vhi = _mm256_setzero_ps();
    size_t k = 0;
    for (; k + 8 <= K; k += 8) {
      const __m256 v = _mm256_loadu_ps(x + k);
      vlo = _mm256_min_ps(v, vlo);  // NaN lanes keep the running value (the second operand)
      vhi = _mm256_max_ps(v, vhi);
    }
    if (k < K) {
      const __m256 v = _mm256_maskload_ps(x + k, lane_mask(K - k));  // absent lanes read 0: in the range
      vlo = _mm256_min_ps(v, vlo);
      vhi = _mm256_max_ps(v, vhi);
    }
    const float lo = hmin(vlo), hi = hmax(vhi);
    const float scale = hi == lo ? 1.f : (hi - lo) / 255.f;
    __m128 z = _mm_set_ss(-128.f - lo / scale);
    z = _mm_min_ss(_mm_max_ss(z, _mm_set_ss(-128.f)), _mm_set_ss(127.f));  // NaN -> -128
    const int32_t zp = _mm_cvtss_si32(z);  // round to nearest even (MXCSR default)
    const __m256 vs = _mm256_set1_ps(scale);
    const __m256 qlo = _mm256_set1_ps(static_cast<float>(-128 - zp));
    const __m256 qhi = _mm256_set1_ps(static_cast<float>(127 - zp));
    const __m256i vz = _mm256_set1_epi32(zp);
    for (k = 0; k + 32 <= K; k += 32)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + k), quantize32(x + k, vs, qlo, qhi, vz));
    if (k < K) {
      alignas(32) float tmp[32] = {};
      alignas(32) int8_t out[32];
      std::memcpy(tmp, x + k, (K - k) * 4);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out), quantize32(tmp, vs, qlo, qhi, vz));
      std::memcpy(y + k, out, K - k);
    }
    c.params[r] = RowQuant{zp, scale};
  }
}

}  // namespace

void quantize_qd8(size_t rows, size_t cols, const float* x, int8_t* y, RowQuant* params, Parallel& par) {
  if (rows == 0) return;
  QdCtx c{rows, cols, 1, x, y, params};
  c.tasks = internal::task_count(rows, 3.0 * static_cast<double>(cols), internal::parallel_threads(par), 4);
  if (c.tasks > 1) return internal::parallel_run(par, c.tasks, quantize_rows, &c);
  quantize_rows(&c, 0);
}

}  // namespace avx2
}  // namespace webxnn
