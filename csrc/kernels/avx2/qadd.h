// table.def's qadd arithmetic on vectors, written once for its two users: the stand-alone qint8 Add
// (q8elem.cc's qadd) and the int8 GEMM / IGEMM tiles' residual epilogue (qgemm_tiles.h: qgemm_residual,
// qconv2d_residual), which runs it on the product's requantized values while they are in registers -- so a
// fused residual Add cannot drift from the Add run apart. Also the element-wise entries' requantization
// (QElemRequant), which q8elem.cc's other entries share.
// ISA translation units only (AVX2's and the VNNI ones, each with its own flags); the anonymous namespace gives
// each TU its own copy (simd.h says why).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/kernels.h"

namespace webxnn {
namespace avx2 {
namespace {

// A product the compiler may not contract into an FMA with the addition after it (qadd rounds each product
// to fp32 first; these TUs are compiled with -mfma or AVX-512, and GCC contracts by default).
__attribute__((always_inline)) inline __m256 rounded(__m256 x) {
  __asm__("" : "+x"(x));
  return x;
}

// Bytes 0-7 of x (int8), minus the zero point, as int32 / as fp32.
__attribute__((always_inline)) inline __m256i lanes8_i(__m128i x, __m256i z) {
  return _mm256_sub_epi32(_mm256_cvtepi8_epi32(x), z);
}
__attribute__((always_inline)) inline __m256 lanes8_f(__m128i x, __m256i z) {
  return _mm256_cvtepi32_ps(lanes8_i(x, z));
}
// The 8 int8 at p (an 8-byte load).
__attribute__((always_inline)) inline __m128i load8(const int8_t* p) {
  return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
}

// table.def's requantization of 16 values (QElemParams' clamp and output zero point): round to nearest even
// (MXCSR default), add zy, pack to bytes, clamp. When every |v| is known to stay below 2^30 (max_abs, from the
// operands' ranges and the multipliers), rounding first is exact and the packs' saturation plus an int8 clamp
// give the same bytes as clamping in fp32 first (rint is monotone, the bounds are integers); otherwise (huge
// scale ratios, NaN) v is clamped in fp32 first (vmaxps gives lo for NaN).
struct QElemRequant {
  __m256 lo, hi;
  __m256i zy;
  __m128i lo8, hi8;
  bool in_int;
  QElemRequant(const QElemParams& q, float max_abs)
      : lo(_mm256_set1_ps(static_cast<float>(q.out_min - q.out_zero_point))),
        hi(_mm256_set1_ps(static_cast<float>(q.out_max - q.out_zero_point))),
        zy(_mm256_set1_epi32(q.out_zero_point)),
        lo8(_mm_set1_epi8(static_cast<char>(q.out_min))),
        hi8(_mm_set1_epi8(static_cast<char>(q.out_max))),
        in_int(max_abs < 1073741824.f) {}  // false for NaN too
  __attribute__((always_inline)) __m256i i32(__m256 v) const {
    if (!in_int) v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    return _mm256_add_epi32(_mm256_cvtps_epi32(v), zy);
  }
  // v0: values 0-7, v1: 8-15 -> their 16 bytes.
  __attribute__((always_inline)) __m128i operator()(__m256 v0, __m256 v1) const {
    const __m256i p = _mm256_packs_epi32(i32(v0), i32(v1));  // lanes: v0 0-3, v1 0-3, v0 4-7, v1 4-7
    const __m256i o = _mm256_permute4x64_epi64(p, 0xD8);
    const __m128i y = _mm_packs_epi16(_mm256_castsi256_si128(o), _mm256_extracti128_si256(o, 1));
    return in_int ? _mm_min_epi8(_mm_max_epi8(y, lo8), hi8) : y;
  }
};

// qadd's arithmetic (table.def): v = fp32(float(a - za) * ma) + fp32(float(b - zb) * mb), each product
// rounded on its own. part_a / part_b: an operand's share of 8 lanes (bytes 0-7 of x; a broadcast operand's is
// computed once per row), combine: their sum.
struct AddV {
  __m256 ma, mb;
  __m256i za, zb;
  explicit AddV(const QElemParams& q)
      : ma(_mm256_set1_ps(q.a_scale / q.out_scale)),
        mb(_mm256_set1_ps(q.b_scale / q.out_scale)),
        za(_mm256_set1_epi32(q.a_zero_point)),
        zb(_mm256_set1_epi32(q.b_zero_point)) {}
  __attribute__((always_inline)) __m256 part_a(__m128i x) const { return part_a_f(lanes8_f(x, za)); }
  // part_a of 8 operands given as a - za in (integer-valued) fp32 lanes: the int8 GEMM tiles' residual
  // epilogue has them so, never packed to bytes.
  __attribute__((always_inline)) __m256 part_a_f(__m256 a) const { return rounded(_mm256_mul_ps(a, ma)); }
  __attribute__((always_inline)) __m256 part_b(__m128i x) const {
    return rounded(_mm256_mul_ps(lanes8_f(x, zb), mb));
  }
  __attribute__((always_inline)) __m256 combine(__m256 a, __m256 b) const { return _mm256_add_ps(a, b); }
  // A bound on |v| for QElemRequant.
  static float max_abs(const QElemParams& q) {
    return 256.f * (q.a_scale / q.out_scale + q.b_scale / q.out_scale);
  }
};

// An element-wise op's 16 outputs from its operands' parts (a0, b0: lanes 0-7; a1, b1: 8-15), requantized.
template <typename Op>
__attribute__((always_inline)) inline __m128i qbinary16(const Op& op, const QElemRequant& rq, __m256 a0,
                                                        __m256 a1, __m256 b0, __m256 b1) {
  return rq(op.combine(a0, b0), op.combine(a1, b1));
}

}  // namespace
}  // namespace avx2
}  // namespace webxnn
