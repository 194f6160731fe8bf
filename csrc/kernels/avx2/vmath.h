// Vector math shared by the AVX2 translation units (compiled with -mavx2 -mfma; generic code must not include
// this header): exp, sigmoid, erfc, gelu and hardswish, and the fused post-op (Activation::post) that the conv
// and GEMM kernels apply to their output tiles with the same functions `unary` uses, so fusing an activation
// into a conv never changes its bits. Accuracy notes are in math.cc's header comment.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/avx2/simd.h"
#include "kernels/kernels.h"

namespace webxnn {
namespace WEBXNN_AVX2_NS {
namespace {

inline __m256 vabs(__m256 x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.f), x); }
inline __m256 nan_mask(__m256 x) { return _mm256_cmp_ps(x, x, _CMP_UNORD_Q); }

// The operations the polynomials below (exp_narrow, erfcx_small, exp_neg_square, gelu) are written on: 8 floats
// (ymm) here, 16 (zmm) in the 512-bit fp32 build (F32x16). The same IEEE operations lane by lane, so both widths
// give the same bits, which the fused post-op needs (a conv's GELU epilogue on zmm equals the unary GELU on
// ymm). vrcpps' estimate is not vrcp14ps', so F32x16::rcp takes it on two ymm halves.
struct F32x8 {
  using V = __m256;
  using I = __m256i;
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V fnmadd(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
  static V fmsub(V a, V b, V c) { return _mm256_fmsub_ps(a, b, c); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V neg(V x) { return _mm256_xor_ps(x, set1(-0.f)); }
  static V abs(V x) { return vabs(x); }
  static V round(V x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static I cvt(V x) { return _mm256_cvtps_epi32(x); }
  static V pow2i(I n) {  // 2^n for n in [-126, 127]
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
  }
  static V rcp(V x) { return _mm256_rcp_ps(x); }
  static V zero_where_ge(V x, float lim, V v) {
    return _mm256_andnot_ps(_mm256_cmp_ps(x, set1(lim), _CMP_GE_OQ), v);
  }
  static V by_sign(V x, V nonneg, V neg) { return _mm256_blendv_ps(nonneg, neg, x); }  // x's sign bit picks
};

inline __m256 pow2i(__m256i n) { return F32x8::pow2i(n); }

// e^x = 2^n e^r: n = round(x log2 e) (returned in *n), r = x - n ln 2 by two constants (Cody-Waite), |r| <= ln2/2.
template <class S = F32x8>
inline typename S::V exp_reduce(typename S::V x, typename S::V* n) {
  *n = S::round(S::mul(x, S::set1(1.44269504088896341f)));
  const typename S::V r = S::fnmadd(*n, S::set1(0.693145751953125f), x);
  return S::fnmadd(*n, S::set1(1.428606765330187045e-06f), r);
}

// e^x without NaN handling (callers that can see NaN blend it back).
inline __m256 exp_core(__m256 x) {
  __m256 n;
  const __m256 r =
      exp_reduce(_mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-104.f)), _mm256_set1_ps(89.f)), &n);
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

// e^x for x in [-87.3, 88.7], where 2^n is one normal float: one scaling instead of two, and the polynomial
// by Estrin's scheme. kClamp: x is clamped to that range first (below e^-87.3, ~1e-38, it returns that value
// instead of denormals: its callers zero those results themselves); without it the caller guarantees it.
template <bool kClamp = true, class S = F32x8>
inline typename S::V exp_narrow(typename S::V x) {
  using V = typename S::V;
  V n;
  if (kClamp) x = S::min(S::max(x, S::set1(-87.3f)), S::set1(88.7f));
  const V r = exp_reduce<S>(x, &n);
  const V r2 = S::mul(r, r);
  const V a = S::add(S::set1(1.f), r);
  const V b = S::fmadd(S::set1(1.f / 6.f), r, S::set1(0.5f));
  const V c = S::fmadd(S::set1(1.f / 120.f), r, S::set1(1.f / 24.f));
  const V p = S::fmadd(S::fmadd(S::fmadd(S::set1(1.f / 720.f), r2, c), r2, b), r2, a);
  return S::mul(p, S::pow2i(S::cvt(n)));
}

inline __m256 exp_ps(__m256 x) { return _mm256_blendv_ps(exp_core(x), x, nan_mask(x)); }

inline __m256 sigmoid_ps(__m256 x) {
  const __m256 e = exp_core(_mm256_xor_ps(vabs(x), _mm256_set1_ps(-0.f)));  // exp(-|x|)
  const __m256 one = _mm256_set1_ps(1.f);
  const __m256 d = _mm256_add_ps(one, e);
  const __m256 num = _mm256_blendv_ps(one, e, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
  return _mm256_blendv_ps(_mm256_div_ps(num, d), x, nan_mask(x));
}

// S erfcx(z) = S e^(z^2) erfc(z) for 0 <= z <= 9.3 (relative error < 4e-7), z = kZ a: t Q(t), t = 1 / (1 + z/2),
// Q a degree-8 polynomial fitted here (weighted least squares toward minimax, relative error 4e-8 in exact
// arithmetic; the rest is float32 rounding). t by the reciprocal estimate and one Newton step (no divide), Q
// by Estrin's scheme: a short chain that runs beside the caller's e^(-z^2). The scales kZ (of the argument)
// and S (of the result, folded into Q's coefficients) save the callers two multiplies.
template <int kVariant, class S = F32x8>  // 0: kZ = 1, S = 1 (erfc); 1: kZ = 1 / sqrt 2, S = 1/2 (gelu)
inline typename S::V erfcx_small(typename S::V a) {
  using V = typename S::V;
  constexpr float kZ = kVariant == 0 ? 1.f : 0.70710678118654752f, kS = kVariant == 0 ? 1.f : 0.5f;
  const V d = S::fmadd(S::set1(0.5f * kZ), a, S::set1(1.f));  // 1 <= d <= 5.65
  const V t0 = S::rcp(d);
  const V t = S::mul(t0, S::fnmadd(d, t0, S::set1(2.f)));
  auto c = [](float v) { return S::set1(v * kS); };
  const V t2 = S::mul(t, t), t4 = S::mul(t2, t2), t8 = S::mul(t4, t4);
  const V q01 = S::fmadd(c(0.28237539529800415f), t, c(0.28208640217781067f));
  const V q23 = S::fmadd(c(0.2026902437210083f), t, c(0.24310307204723358f));
  const V q45 = S::fmadd(c(0.2780832350254059f), t, c(-0.026635171845555305f));
  const V q67 = S::fmadd(c(0.2845836579799652f), t, c(-0.48721590638160706f));
  const V r03 = S::fmadd(q23, t2, q01), r47 = S::fmadd(q67, t2, q45);
  const V q = S::fmadd(c(-0.05907093733549118f), t8, S::fmadd(r47, t4, r03));
  return S::mul(t, q);
}

// e^(-s^2) for s = a (k = 1) or a / sqrt 2 (k = 1/2, s^2 = a^2 / 2), s^2 <= 86.5 (the caller clamps a), with s^2
// carried exactly as hi + lo (lo by an FMA; halving is exact): the rounding of s^2 would cost erfc a relative
// error of up to ~s^2 ulp. e^(-hi - lo) = e^(-hi) (1 - lo) to float precision (|lo| <= ulp(hi) / 2).
template <int kHalf, class S = F32x8>
inline typename S::V exp_neg_square(typename S::V a) {
  using V = typename S::V;
  const V ak = kHalf ? S::mul(a, S::set1(0.5f)) : a;
  const V hi = S::mul(ak, a), lo = S::fmsub(ak, a, hi);
  const V e = exp_narrow<false, S>(S::neg(hi));
  return S::fnmadd(e, lo, e);
}

// erfc(z) for z >= 0 with small *relative* error: e^(-z^2) erfcx(z). Below 1e-39 (z >= 9.3) it returns 0;
// NaN becomes 9.3 here (callers blend NaN back).
inline __m256 erfc_pos(__m256 z) {
  const __m256 beyond = _mm256_cmp_ps(z, _mm256_set1_ps(9.3f), _CMP_GE_OQ);
  z = _mm256_min_ps(z, _mm256_set1_ps(9.3f));
  return _mm256_andnot_ps(beyond, _mm256_mul_ps(erfcx_small<0>(z), exp_neg_square<0>(z)));
}

// gelu = x/2 (1 + erf(x/sqrt 2)) = x (1 - erfc(z)/2) for x >= 0 and x erfc(|z|)/2 for x < 0, z = x/sqrt 2.
// 1 + erf(z) >= 1 - erf(0.5) ~ 0.48 wherever erfc's form could lose relative accuracy (z near 0), so the
// erfc form alone is accurate everywhere and the small-|z| polynomial of erf is not needed here. The
// exponent e^(-x^2/2) is taken from x itself (x^2 split exactly), not from the rounded z: that rounding cost
// up to 80 ulp at x = -8, where WPT allows 18.
template <class S = F32x8>
inline typename S::V gelu(typename S::V x) {
  using V = typename S::V;
  const V ax = S::abs(x);
  const V a = S::min(ax, S::set1(13.15f));  // erfc(13.15 / sqrt 2) < 1e-39
  const V hc = S::zero_where_ge(ax, 13.15f, S::mul(erfcx_small<1, S>(a), exp_neg_square<1, S>(a)));  // erfc/2
  const V f = S::by_sign(x, S::sub(S::set1(1.f), hc), hc);
  return S::mul(x, f);  // a NaN x stays NaN
}
inline __m256 gelu_ps(__m256 x) { return gelu<F32x8>(x); }

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

#if defined(WEBXNN_F32_ZMM)
// F32x8's operations on 16 floats (see there); AVX-512 F only, as the 512-bit fp32 build is compiled.
struct F32x16 {
  using V = __m512;
  using I = __m512i;
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V fnmadd(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
  static V fmsub(V a, V b, V c) { return _mm512_fmsub_ps(a, b, c); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V neg(V x) {
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN)));
  }
  static V abs(V x) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MAX)));
  }
  static V round(V x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static I cvt(V x) { return _mm512_cvtps_epi32(x); }
  static V pow2i(I n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n, _mm512_set1_epi32(127)), 23));
  }
  static V rcp(V x) {
    const __m256 lo = _mm512_castps512_ps256(x);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
    const __m512d r = _mm512_castps_pd(_mm512_castps256_ps512(_mm256_rcp_ps(lo)));
    return _mm512_castpd_ps(_mm512_insertf64x4(r, _mm256_castps_pd(_mm256_rcp_ps(hi)), 1));
  }
  static V zero_where_ge(V x, float lim, V v) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, set1(lim), _CMP_NGE_UQ), v);
  }
  static V by_sign(V x, V nonneg, V neg) {
    return _mm512_mask_blend_ps(_mm512_cmplt_epi32_mask(_mm512_castps_si512(x), _mm512_setzero_si512()),
                                nonneg, neg);
  }
};
#endif

template <PostOp kOp>
void post_rows_op(float* c, size_t rows, size_t cols, size_t ldc) {
  const size_t full = cols & ~size_t{7};
  const __m256i m = lane_mask(cols - full);
  for (size_t r = 0; r < rows; ++r, c += ldc) {
    size_t j = 0;
#if defined(WEBXNN_F32_ZMM)
    // GELU on zmm (a long polynomial: half the instructions), the same bits as on ymm (F32x8).
    if constexpr (kOp == PostOp::kGelu) {
      for (; j + 32 <= full; j += 32) {
        const __m512 a = gelu<F32x16>(_mm512_loadu_ps(c + j)), b = gelu<F32x16>(_mm512_loadu_ps(c + j + 16));
        _mm512_storeu_ps(c + j, a);
        _mm512_storeu_ps(c + j + 16, b);
      }
    }
#endif
    for (; j + 16 <= full; j += 16) {  // two independent vectors per step (long polynomial chains)
      const __m256 a = post8<kOp>(_mm256_loadu_ps(c + j)), b = post8<kOp>(_mm256_loadu_ps(c + j + 8));
      _mm256_storeu_ps(c + j, a);
      _mm256_storeu_ps(c + j + 8, b);
    }
    if (j < full) _mm256_storeu_ps(c + j, post8<kOp>(_mm256_loadu_ps(c + j)));
    if (full < cols) store_lanes(c + full, m, post8<kOp>(_mm256_maskload_ps(c + full, m)));
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
}  // namespace WEBXNN_AVX2_NS
}  // namespace webxnn
