// Row kernels of the fp32 tables: softmax and layer normalization over the last axis, one row at a time
// (compiled with -mavx2 -mfma). Compiled again for the AVX512-VNNI table (kernels/avx512f/rows.cc), where
// softmax runs its rows on zmm (WEBXNN_F32_ZMM) with vmath.h's exponential on 16 lanes.
#include <immintrin.h>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/simd.h"
#include "kernels/avx2/vmath.h"
#include "kernels/internal.h"

namespace webxnn {
namespace WEBXNN_AVX2_NS {
namespace {

// Horizontal sum/max of 8 lanes in a fixed order (the same for any thread split).
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

struct RowCtx {
  size_t rows, cols, tasks;
  const float* in;
  const float* scale;
  const float* bias;
  float* out;
  float eps;
};

// e^d for d <= 0 (x - the row's max): where the whole vector is above -87.3 (a normal float result) the
// one-scaling exp_narrow, else exp_core (denormal results, and 0 for -inf).
inline __m256 exp_nonpos(__m256 d) {
  if (_mm256_movemask_ps(_mm256_cmp_ps(d, _mm256_set1_ps(-87.3f), _CMP_LT_OQ)) == 0)
    return exp_narrow<false>(d);
  return exp_core(d);
}

#if defined(WEBXNN_F32_ZMM)
// exp_nonpos on 16 lanes: exp_narrow on zmm (the ymm one's bits, vmath.h's F32x16), or exp_core on each half
// where a lane is below -87.3.
inline __m512 exp_nonpos16(__m512 d) {
  if (_mm512_cmp_ps_mask(d, _mm512_set1_ps(-87.3f), _CMP_LT_OQ) == 0) return exp_narrow<false, F32x16>(d);
  const __m256 lo = exp_core(_mm512_castps512_ps256(d));
  const __m256 hi = exp_core(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(d), 1)));
  return _mm512_castpd_ps(
      _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}

// One softmax row on zmm, the passes of softmax_task's ymm loop (masked loads for the tail): the same exp
// per element, the sum in another order. MiniLM-L6's 12 x 128 rows of 128: 115 -> 86 us a layer at 1 thread.
void softmax_row16(const float* in, float* out, size_t n) {
  const size_t nv = n & ~size_t{15};
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - nv)) - 1);
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  __m512 vmx = ninf;
  __mmask16 nan = 0;
  for (size_t i = 0; i < nv; i += 16) {
    const __m512 a = _mm512_loadu_ps(in + i);
    vmx = _mm512_max_ps(vmx, a);
    nan |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
  }
  if (tail) {
    const __m512 a = _mm512_mask_loadu_ps(ninf, tail, in + nv);
    vmx = _mm512_max_ps(vmx, a);
    nan |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
  }
  const float mx = _mm512_reduce_max_ps(vmx);
  if (nan != 0 || !(mx > -__builtin_inff() && mx < __builtin_inff())) {
    for (size_t i = 0; i < n; ++i) out[i] = __builtin_nanf("");  // as the ymm rows
    return;
  }
  vmx = _mm512_set1_ps(mx);
  __m512 s = _mm512_setzero_ps();
  for (size_t i = 0; i < nv; i += 16) {
    const __m512 e = exp_nonpos16(_mm512_sub_ps(_mm512_loadu_ps(in + i), vmx));
    _mm512_storeu_ps(out + i, e);
    s = _mm512_add_ps(s, e);
  }
  if (tail) {  // the lanes past the row read the max: e^0, then zeroed
    const __m512 e =
        _mm512_maskz_mov_ps(tail, exp_nonpos16(_mm512_sub_ps(_mm512_mask_loadu_ps(vmx, tail, in + nv), vmx)));
    _mm512_mask_storeu_ps(out + nv, tail, e);
    s = _mm512_add_ps(s, e);
  }
  const __m512 inv = _mm512_set1_ps(1.f / _mm512_reduce_add_ps(s));
  for (size_t i = 0; i < nv; i += 16) _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_loadu_ps(out + i), inv));
  if (tail) _mm512_mask_storeu_ps(out + nv, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, out + nv), inv));
}
#endif

void softmax_task(const void* vctx, size_t task) {
  const RowCtx& x = *static_cast<const RowCtx*>(vctx);
  const size_t r0 = x.rows * task / x.tasks, r1 = x.rows * (task + 1) / x.tasks;
#if defined(WEBXNN_F32_ZMM)
  for (size_t r = r0; r < r1; ++r) softmax_row16(x.in + r * x.cols, x.out + r * x.cols, x.cols);
#else
  const size_t n = x.cols, nv = n & ~size_t{7};
  const __m256i m = lane_mask(n - nv);
  const __m256 ninf = _mm256_set1_ps(-__builtin_inff());
  for (size_t r = r0; r < r1; ++r) {
    const float* in = x.in + r * n;
    float* out = x.out + r * n;
    // pass 1: max, and whether the row holds a NaN (vmaxps drops NaN operands)
    __m256 vmx0 = ninf, vmx1 = ninf, nan = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= nv; i += 16) {
      const __m256 a = _mm256_loadu_ps(in + i), b = _mm256_loadu_ps(in + i + 8);
      vmx0 = _mm256_max_ps(vmx0, a);
      vmx1 = _mm256_max_ps(vmx1, b);
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
    }
    for (; i < nv; i += 8) {
      const __m256 a = _mm256_loadu_ps(in + i);
      vmx0 = _mm256_max_ps(vmx0, a);
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
    }
    if (nv < n) {
      const __m256 a = _mm256_blendv_ps(ninf, _mm256_maskload_ps(in + nv, m), _mm256_castsi256_ps(m));
      vmx1 = _mm256_max_ps(vmx1, a);
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
    }
    const float mx = hmax(_mm256_max_ps(vmx0, vmx1));
    if (_mm256_movemask_ps(nan) != 0 || !(mx > -__builtin_inff() && mx < __builtin_inff())) {
      // A NaN, a +inf, or nothing but -inf: x - max has a NaN, and so does every output (as in the scalar
      // kernel: the sum is NaN).
      for (i = 0; i < n; ++i) out[i] = __builtin_nanf("");
      continue;
    }
    const __m256 vmx = _mm256_set1_ps(mx);
    // pass 2: e = exp(x - max), stored, summed
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    for (i = 0; i + 16 <= nv; i += 16) {
      const __m256 e0 = exp_nonpos(_mm256_sub_ps(_mm256_loadu_ps(in + i), vmx));
      const __m256 e1 = exp_nonpos(_mm256_sub_ps(_mm256_loadu_ps(in + i + 8), vmx));
      _mm256_storeu_ps(out + i, e0);
      _mm256_storeu_ps(out + i + 8, e1);
      s0 = _mm256_add_ps(s0, e0);
      s1 = _mm256_add_ps(s1, e1);
    }
    for (; i < nv; i += 8) {
      const __m256 e0 = exp_nonpos(_mm256_sub_ps(_mm256_loadu_ps(in + i), vmx));
      _mm256_storeu_ps(out + i, e0);
      s0 = _mm256_add_ps(s0, e0);
    }
    if (nv < n) {
      const __m256 e1 = _mm256_and_ps(exp_nonpos(_mm256_sub_ps(_mm256_maskload_ps(in + nv, m), vmx)),
                                      _mm256_castsi256_ps(m));
      store_lanes(out + nv, m, e1);
      s1 = _mm256_add_ps(s1, e1);
    }
    // pass 3 (over the output, in L1): scale by 1 / sum
    const __m256 inv = _mm256_set1_ps(1.f / hsum(_mm256_add_ps(s0, s1)));
    for (i = 0; i < nv; i += 8) _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(out + i), inv));
    if (nv < n) store_lanes(out + nv, m, _mm256_mul_ps(_mm256_maskload_ps(out + nv, m), inv));
  }
#endif
}

// Layer norm over the last axis, one row at a time: pass 1 sums x (for the mean), pass 2 sums (x - mean)^2
// (two-pass variance: no cancellation), pass 3 writes (x - mean) * rstd * scale + bias. The row stays in L1.
void normalize_task(const void* vctx, size_t task) {
  const RowCtx& x = *static_cast<const RowCtx*>(vctx);
  const size_t r0 = x.rows * task / x.tasks, r1 = x.rows * (task + 1) / x.tasks;
  const size_t n = x.cols, nv = n & ~size_t{7};
  const __m256i m = lane_mask(n - nv);
  const __m256 mf = _mm256_castsi256_ps(m);
  for (size_t r = r0; r < r1; ++r) {
    const float* in = x.in + r * n;
    float* out = x.out + r * n;
    // Sum of x - x[0]: a large common offset does not eat the float sum's precision.
    const __m256 shift = _mm256_set1_ps(in[0]);
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= nv; i += 16) {
      s0 = _mm256_add_ps(s0, _mm256_sub_ps(_mm256_loadu_ps(in + i), shift));
      s1 = _mm256_add_ps(s1, _mm256_sub_ps(_mm256_loadu_ps(in + i + 8), shift));
    }
    for (; i < nv; i += 8) s0 = _mm256_add_ps(s0, _mm256_sub_ps(_mm256_loadu_ps(in + i), shift));
    if (nv < n)
      s1 = _mm256_add_ps(s1, _mm256_and_ps(_mm256_sub_ps(_mm256_maskload_ps(in + nv, m), shift), mf));
    // Centred values are computed as (x - x[0]) - (mean - x[0]): x - x[0] is exact for nearby values, so a
    // large offset costs no precision.
    const __m256 vmean = _mm256_set1_ps(hsum(_mm256_add_ps(s0, s1)) / static_cast<float>(n));
    s0 = _mm256_setzero_ps();
    s1 = _mm256_setzero_ps();
    for (i = 0; i + 16 <= nv; i += 16) {
      const __m256 d0 = _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(in + i), shift), vmean);
      const __m256 d1 = _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(in + i + 8), shift), vmean);
      s0 = _mm256_fmadd_ps(d0, d0, s0);
      s1 = _mm256_fmadd_ps(d1, d1, s1);
    }
    for (; i < nv; i += 8) {
      const __m256 d0 = _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(in + i), shift), vmean);
      s0 = _mm256_fmadd_ps(d0, d0, s0);
    }
    if (nv < n) {
      const __m256 d1 =
          _mm256_and_ps(_mm256_sub_ps(_mm256_sub_ps(_mm256_maskload_ps(in + nv, m), shift), vmean), mf);
      s1 = _mm256_fmadd_ps(d1, d1, s1);
    }
    const float var = hsum(_mm256_add_ps(s0, s1)) / static_cast<float>(n);
    const __m256 rstd = _mm256_div_ps(_mm256_set1_ps(1.f), _mm256_sqrt_ps(_mm256_set1_ps(var + x.eps)));
    const __m256 one = _mm256_set1_ps(1.f), zero = _mm256_setzero_ps();
    for (i = 0; i < nv; i += 8) {
      const __m256 g = x.scale ? _mm256_loadu_ps(x.scale + i) : one;
      const __m256 b = x.bias ? _mm256_loadu_ps(x.bias + i) : zero;
      const __m256 y =
          _mm256_mul_ps(_mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(in + i), shift), vmean), rstd);
      _mm256_storeu_ps(out + i, _mm256_fmadd_ps(y, g, b));
    }
    if (nv < n) {
      const __m256 g = x.scale ? _mm256_maskload_ps(x.scale + nv, m) : one;
      const __m256 b = x.bias ? _mm256_maskload_ps(x.bias + nv, m) : zero;
      const __m256 y =
          _mm256_mul_ps(_mm256_sub_ps(_mm256_sub_ps(_mm256_maskload_ps(in + nv, m), shift), vmean), rstd);
      store_lanes(out + nv, m, _mm256_fmadd_ps(y, g, b));
    }
  }
}

// fn over x's rows on `par`: a few tasks per thread, sized by `col_cost`, the work per element.
void run_rows(RowCtx x, double col_cost, internal::TaskFn fn, Parallel& par) {
  if (x.rows == 0 || x.cols == 0) return;
  x.tasks = internal::task_count(x.rows, static_cast<double>(x.cols) * col_cost,
                                 internal::parallel_threads(par), 4);
  internal::parallel_run(par, x.tasks, fn, &x);
}

}  // namespace

void softmax(size_t rows, size_t cols, const float* in, float* out, Parallel& par) {
  run_rows(RowCtx{rows, cols, 0, in, nullptr, nullptr, out, 0.f}, 8.0, softmax_task, par);
}

void normalize(size_t rows, size_t cols, const float* in, const float* scale, const float* bias,
               float epsilon, float* out, Parallel& par) {
  run_rows(RowCtx{rows, cols, 0, in, scale, bias, out, epsilon}, 4.0, normalize_task, par);
}

}  // namespace WEBXNN_AVX2_NS
}  // namespace webxnn
