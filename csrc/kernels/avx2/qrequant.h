// The int8 kernels' requantization of 16 int32 sums (table.def's qgemm formula), shared by qgemm_tiles.h and
// qdwconv.cc (ISA translation units only: AVX2's and the VNNI ones, each compiled with its own flags). The
// anonymous namespace gives each TU its own copy (simd.h says why).
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
