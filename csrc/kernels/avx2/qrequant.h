// The int8 kernels' requantization of 16 int32 sums (table.def's qgemm formula), shared by qgemm_tiles.h,
// qconv_fp32acc.cc and qdwconv.cc (ISA translation units only: AVX2's and the VNNI ones, each compiled with its
// own flags). The anonymous namespace gives each TU its own copy (simd.h says why).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace webxnn {
namespace avx2 {
namespace {

// The clamp and output zero point of one call, as vectors.
struct QRequant {
  __m256 lo, hi;  // relative to the output zero point
  __m256i zy;
  bool out_u8;
};

// s0, s1: 16 sums whose channels are given by `order` (the dword permutation that puts the packed bytes in
// channel order: (0, 4, 1, 5) when s0 holds channels 0-7 and s1 8-15; (0, 1, 4, 5) for qdwconv2d's slots,
// s0 holding 0-3, 8-11 and s1 4-7, 12-15); scale: the 16 scales in s0, s1's order. Returns the 16 bytes.
__attribute__((always_inline)) inline __m128i requant16(const QRequant& r, __m256i s0, __m256i s1,
                                                        const float* scale, __m256i order) {
  // vmaxps(v, lo) first: a NaN v gives lo (its second operand), as the scalar reference does.
  __m256 f0 = _mm256_mul_ps(_mm256_cvtepi32_ps(s0), _mm256_load_ps(scale));
  __m256 f1 = _mm256_mul_ps(_mm256_cvtepi32_ps(s1), _mm256_load_ps(scale + 8));
  f0 = _mm256_min_ps(_mm256_max_ps(f0, r.lo), r.hi);
  f1 = _mm256_min_ps(_mm256_max_ps(f1, r.lo), r.hi);
  const __m256i r0 = _mm256_add_epi32(_mm256_cvtps_epi32(f0), r.zy);  // round to nearest even (MXCSR default)
  const __m256i r1 = _mm256_add_epi32(_mm256_cvtps_epi32(f1), r.zy);
  // Values are in the output type's range already; the packs only narrow.
  const __m256i p16 = _mm256_packs_epi32(r0, r1);
  const __m256i p8 = r.out_u8 ? _mm256_packus_epi16(p16, p16) : _mm256_packs_epi16(p16, p16);
  return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(p8, order));
}

// requant16 without the fp32 clamp, for sums whose |sum * scale| is known to stay below 2^30 (a finite scale;
// qdwconv2d checks this at pack time): vcvtps2dq is then exact, and the clamp moves to the bytes after the
// saturating packs (same results: the bounds are integers, so rounding first cannot cross them). 12 vector ops
// for 16 channels instead of 16.
struct QRequantBounded {
  __m256i zy16;  // output zero point, int16 lanes
  __m256i lo8, hi8;  // [out_min, out_max] clipped to the output type's range, byte lanes
  bool out_u8;
};

__attribute__((always_inline)) inline __m128i requant16_bounded(const QRequantBounded& r, __m256i s0,
                                                                __m256i s1, const float* scale,
                                                                __m256i order) {
  const __m256 f0 = _mm256_mul_ps(_mm256_cvtepi32_ps(s0), _mm256_load_ps(scale));
  const __m256 f1 = _mm256_mul_ps(_mm256_cvtepi32_ps(s1), _mm256_load_ps(scale + 8));
  const __m256i p16 =
      _mm256_adds_epi16(_mm256_packs_epi32(_mm256_cvtps_epi32(f0), _mm256_cvtps_epi32(f1)), r.zy16);
  __m256i p8 = r.out_u8 ? _mm256_packus_epi16(p16, p16) : _mm256_packs_epi16(p16, p16);
  // max then min: out_min > out_max gives out_max, as the reference's clamp does
  p8 = r.out_u8 ? _mm256_min_epu8(_mm256_max_epu8(p8, r.lo8), r.hi8)
                : _mm256_min_epi8(_mm256_max_epi8(p8, r.lo8), r.hi8);
  return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(p8, order));
}

// Two rows' 16 sums each (s: row 0, t: row 1, the same 16 columns, s0 / t0 holding columns 0-7; scale: their
// 16 scales), requantized per table.def: row 0's 16 bytes in the low lane, row 1's in the high one. Half
// requant16's work per output, which shows at small K (MobileNetV2's 1x1 convs with K = 16..32 spent a third
// of their instructions here). The clamp is split: v to at most hi in fp32 (minps(hi, v) keeps a NaN v),
// rint, then + zy in saturating int16 and the packs, then [qmin, qmax] on the bytes. Equal to clamping v to
// [lo, hi] first: rint is monotone and the bounds are integers; a NaN or a v below the int16 range converts /
// saturates to below qmin, hence qmin, as clip does. Needs qmin <= qmax (the bounds of a non-empty clamp) and
// an int16 zero point (any valid one).
struct QRequantPair {
  __m256 hi;  // the clamp's upper bound relative to the output zero point
  __m256i zy16;  // output zero point, int16 lanes
  __m256i qmin8, qmax8;  // [out_min, out_max] clipped to the output type's range, byte lanes
  bool out_u8;
};

// requant2x16 of sums already converted to fp32 (float(int32 sum), as requant2x16 converts them).
__attribute__((always_inline)) inline __m256i requant2x16_ps(const QRequantPair& r, __m256 s0, __m256 s1,
                                                             __m256 t0, __m256 t1, const float* scale) {
  const __m256 sc0 = _mm256_load_ps(scale), sc1 = _mm256_load_ps(scale + 8);
  const auto conv = [&](__m256 v, __m256 sc) __attribute__((always_inline)) {
    return _mm256_cvtps_epi32(_mm256_min_ps(r.hi, _mm256_mul_ps(v, sc)));
  };
  // Per 128-bit lane: [s0 s1 t0 t1] x 4 columns each, lane 0 columns 0-3 (+8), lane 1 columns 4-7 (+8).
  const __m256i p0 = _mm256_adds_epi16(_mm256_packs_epi32(conv(s0, sc0), conv(s1, sc1)), r.zy16);
  const __m256i p1 = _mm256_adds_epi16(_mm256_packs_epi32(conv(t0, sc0), conv(t1, sc1)), r.zy16);
  __m256i b = r.out_u8 ? _mm256_packus_epi16(p0, p1) : _mm256_packs_epi16(p0, p1);
  b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));  // row 0 | row 1
  return r.out_u8 ? _mm256_min_epu8(_mm256_max_epu8(b, r.qmin8), r.qmax8)
                  : _mm256_min_epi8(_mm256_max_epi8(b, r.qmin8), r.qmax8);
}

__attribute__((always_inline)) inline __m256i requant2x16(const QRequantPair& r, __m256i s0, __m256i s1,
                                                          __m256i t0, __m256i t1, const float* scale) {
  return requant2x16_ps(r, _mm256_cvtepi32_ps(s0), _mm256_cvtepi32_ps(s1), _mm256_cvtepi32_ps(t0),
                        _mm256_cvtepi32_ps(t1), scale);
}

// requant2x16's rows: the first n (<= 16) bytes of each lane of b at c0 and c1.
__attribute__((always_inline)) inline void store_bytes2x16(uint8_t* c0, uint8_t* c1, __m256i b, size_t n) {
  if (n == 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(c0), _mm256_castsi256_si128(b));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(c1), _mm256_extracti128_si256(b, 1));
    return;
  }
  alignas(32) uint8_t tmp[32];
  _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), b);
  std::memcpy(c0, tmp, n);
  std::memcpy(c1, tmp + 16, n);
}

// Stores the first n (<= 16) bytes of v at p: one store for a whole vector, else through a stack buffer (no
// write past p + n: the bytes after a row's last channel belong to the next pixel).
__attribute__((always_inline)) inline void store_bytes16(uint8_t* p, __m128i v, size_t n) {
  if (n == 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
    return;
  }
  alignas(16) uint8_t buf[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(buf), v);
  std::memcpy(p, buf, n);
}

}  // namespace
}  // namespace avx2
}  // namespace webxnn
