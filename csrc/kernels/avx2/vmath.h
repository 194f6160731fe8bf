// Vector math shared by the AVX2 translation units (compiled with -mavx2 -mfma; generic code must not include
// this header): exp, sigmoid, erfc, gelu and hardswish, and the fused post-op (Activation::post) that the conv
// and GEMM kernels apply to their output tiles with the same functions `unary` uses, so fusing an activation
// into a conv never changes its bits. Accuracy notes are in math.cc's header comment.
#pragma once

#include <immintrin.h>

#include <cstddef>

#include "kernels/avx2/simd.h"
#include "kernels/kernels.h"

namespace webxnn {
namespace avx2 {
namespace {

inline __m256 vabs(__m256 x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.f), x); }
inline __m256 nan_mask(__m256 x) { return _mm256_cmp_ps(x, x, _CMP_UNORD_Q); }

inline __m256 pow2i(__m256i n) {  // 2^n for n in [-126, 127]
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
}

// e^x = 2^n e^r: n = round(x log2 e) (returned in *n), r = x - n ln 2 by two constants (Cody-Waite), |r| <= ln2/2.
inline __m256 exp_reduce(__m256 x, __m256* n) {
  *n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 r = _mm256_fnmadd_ps(*n, _mm256_set1_ps(0.693145751953125f), x);
  return _mm256_fnmadd_ps(*n, _mm256_set1_ps(1.428606765330187045e-06f), r);
}

// e^x without NaN handling (callers that can see NaN blend it back).
inline __m256 exp_core(__m256 x) {
  __m256 n;
  const __m256 r = exp_reduce(_mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-104.f)), _mm256_set1_ps(89.f)), &n);
  __m256 p = _mm256_set1_ps(1.f / 720.f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 120.f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 24.f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 6.f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2i(n1)), pow2i(_mm256_sub_epi32(ni, n1)));
}

// e^x for x in [-87.3, 88.7] (clamped to it), where 2^n is one normal float: one scaling instead of two, and
// the polynomial by Estrin's scheme. Below e^-87.3 (~1e-38) it returns that value instead of denormals (its
// one caller, erfc, zeroes those results itself).
inline __m256 exp_narrow(__m256 x) {
  __m256 n;
  const __m256 r = exp_reduce(_mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.7f)), &n);
  const __m256 r2 = _mm256_mul_ps(r, r);
  const __m256 a = _mm256_add_ps(_mm256_set1_ps(1.f), r);
  const __m256 b = _mm256_fmadd_ps(_mm256_set1_ps(1.f / 6.f), r, _mm256_set1_ps(0.5f));
  const __m256 c = _mm256_fmadd_ps(_mm256_set1_ps(1.f / 120.f), r, _mm256_set1_ps(1.f / 24.f));
  const __m256 p = _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(1.f / 720.f), r2, c), r2, b), r2, a);
  return _mm256_mul_ps(p, pow2i(_mm256_cvtps_epi32(n)));
}

inline __m256 exp_ps(__m256 x) { return _mm256_blendv_ps(exp_core(x), x, nan_mask(x)); }

inline __m256 sigmoid_ps(__m256 x) {
  const __m256 e = exp_core(_mm256_xor_ps(vabs(x), _mm256_set1_ps(-0.f)));  // exp(-|x|)
  const __m256 one = _mm256_set1_ps(1.f);
  const __m256 d = _mm256_add_ps(one, e);
  const __m256 num = _mm256_blendv_ps(one, e, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
  return _mm256_blendv_ps(_mm256_div_ps(num, d), x, nan_mask(x));
}

// erfc(z) for z >= 0 with small *relative* error (< 1.2e-7 plus the rounding of z^2 in the exponent):
// t exp(-z^2 + P(t)), t = 1 / (1 + z/2), P a degree-9 Chebyshev fit (the classic "erfcc" form).
inline __m256 erfc_pos(__m256 z) {
  const __m256 one = _mm256_set1_ps(1.f);
  // erfc(z) < 1e-44 for z >= 10: that is returned as 0 and z clamped, which keeps t finite (NaN becomes 10
  // here; callers blend NaN back). t = 1 / d by the reciprocal estimate and one Newton step (relative error
  // ~1e-7 with no divide: the divide's latency dominated gelu); 1 <= d <= 6.
  const __m256 beyond = _mm256_cmp_ps(z, _mm256_set1_ps(10.f), _CMP_GE_OQ);
  z = _mm256_min_ps(z, _mm256_set1_ps(10.f));
  const __m256 d = _mm256_fmadd_ps(_mm256_set1_ps(0.5f), z, one);
  const __m256 t0 = _mm256_rcp_ps(d);
  const __m256 t = _mm256_mul_ps(t0, _mm256_fnmadd_ps(d, t0, _mm256_set1_ps(2.f)));
  // P by Estrin's scheme (depth 4 instead of Horner's 9 dependent FMAs; the chain's latency is the cost).
  auto c = [](float v) { return _mm256_set1_ps(v); };
  const __m256 t2 = _mm256_mul_ps(t, t), t4 = _mm256_mul_ps(t2, t2), t8 = _mm256_mul_ps(t4, t4);
  const __m256 q01 = _mm256_fmadd_ps(c(1.00002368f), t, c(-1.26551223f));
  const __m256 q23 = _mm256_fmadd_ps(c(0.09678418f), t, c(0.37409196f));
  const __m256 q45 = _mm256_fmadd_ps(c(0.27886807f), t, c(-0.18628806f));
  const __m256 q67 = _mm256_fmadd_ps(c(1.48851587f), t, c(-1.13520398f));
  const __m256 q89 = _mm256_fmadd_ps(c(0.17087277f), t, c(-0.82215223f));
  const __m256 r03 = _mm256_fmadd_ps(q23, t2, q01), r47 = _mm256_fmadd_ps(q67, t2, q45);
  const __m256 p = _mm256_fmadd_ps(q89, t8, _mm256_fmadd_ps(r47, t4, r03));
  return _mm256_andnot_ps(beyond, _mm256_mul_ps(t, exp_narrow(_mm256_fnmadd_ps(z, z, p))));
}

// gelu = x/2 (1 + erf(x/sqrt 2)) = x/2 (2 - erfc(z)) for x >= 0 and x/2 erfc(|z|) for x < 0, z = x/sqrt 2.
// 1 + erf(z) >= 1 - erf(0.5) ~ 0.48 wherever erfc's form could lose relative accuracy (z near 0), so the
// erfc form alone is accurate everywhere and the small-|z| polynomial of erf is not needed here.
inline __m256 gelu_ps(__m256 x) {
  const __m256 ec = erfc_pos(vabs(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f))));
  const __m256 f = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.f), ec), ec, x);  // sign bit of x selects
  return _mm256_blendv_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), f), x, nan_mask(x));
}

// hardswish = x * clamp(x + 3, 0, 6) / 6 (a true divide, as the scalar kernel does).
inline __m256 hswish_ps(__m256 x) {
  __m256 t = _mm256_add_ps(x, _mm256_set1_ps(3.f));
  t = _mm256_min_ps(_mm256_max_ps(t, _mm256_setzero_ps()), _mm256_set1_ps(6.f));
  return _mm256_div_ps(_mm256_mul_ps(x, t), _mm256_set1_ps(6.f));
}

template <PostOp kOp>
inline __m256 post8(__m256 x) {
  switch (kOp) {
    case PostOp::kHardswish: return hswish_ps(x);
    case PostOp::kSigmoid: return sigmoid_ps(x);
    case PostOp::kGelu: return gelu_ps(x);
    default: return x;
  }
}

template <PostOp kOp>
void post_rows_op(float* c, size_t rows, size_t cols, size_t ldc) {
  const size_t full = cols & ~size_t{7};
  const __m256i m = lane_mask(cols - full);
  for (size_t r = 0; r < rows; ++r, c += ldc) {
    for (size_t j = 0; j < full; j += 8) _mm256_storeu_ps(c + j, post8<kOp>(_mm256_loadu_ps(c + j)));
    if (full < cols) _mm256_maskstore_ps(c + full, m, post8<kOp>(_mm256_maskload_ps(c + full, m)));
  }
}

// c[r * ldc + j] = post(c[r * ldc + j]) for r < rows, j < cols, in place: the fused post-op over an output
// block the kernel has just written (still in L1 or L2).
inline void apply_post(PostOp op, float* c, size_t rows, size_t cols, size_t ldc) {
  switch (op) {
    case PostOp::kHardswish: return post_rows_op<PostOp::kHardswish>(c, rows, cols, ldc);
    case PostOp::kSigmoid: return post_rows_op<PostOp::kSigmoid>(c, rows, cols, ldc);
    case PostOp::kGelu: return post_rows_op<PostOp::kGelu>(c, rows, cols, ldc);
    case PostOp::kNone: return;
  }
}

// p without its post-op: for the scalar kernels this table falls back to, whose output then gets this table's
// apply_post (so a fused result keeps the bits of this table's `unary`).
inline ConvParams without_post(const ConvParams& p) {
  ConvParams q = p;
  q.act.post = PostOp::kNone;
  return q;
}

}  // namespace
}  // namespace avx2
}  // namespace webxnn
