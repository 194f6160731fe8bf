// The AVX512-VNNI table's int8 depthwise strip (avx512vnni.cc only): qdw_rows.h's rows and pair rows, with a
// tile's 16 channels per pixel in one zmm. A pair row's entry for a tile is 64 bytes (the two vpunpck{l,h}wd
// halves) and so are the tap pair's int16 weights, so one vpdpwssd (acc += a0 * w0 + a1 * w1 per int32 lane,
// exact: int16 products of widened bytes) does what AVX2's two vpmaddwd and two vpaddd do. The requantization
// is qrequant.h's requant16 / requant16_bounded on 16 lanes at once: clamped in int32 (bounded) or fp32, then
// narrowed by vpmovdb (in range by then), then the slot order (channels 0-3, 8-11, 4-7, 12-15: qdw_layout.h)
// put back with one dword shuffle; a partial tile stores through a byte mask.
#pragma once

#include <immintrin.h>

#include "kernels/avx2/qdw_rows.h"

namespace webxnn {
namespace vnni {
namespace {

struct ZmmDwStrip {
  static constexpr size_t kStrip = 8;  // 8 accumulators
  struct Consts {
    __m512 lo, hi;
    __m512i zy, qlo, qhi;
    explicit Consts(const avx2::QDwCtx& x)
        : lo(_mm512_set1_ps(x.lo)),
          hi(_mm512_set1_ps(x.hi)),
          zy(_mm512_set1_epi32(x.zy)),
          qlo(_mm512_set1_epi32(x.qlo)),
          qhi(_mm512_set1_epi32(x.qhi)) {}
  };

  template <size_t NP, size_t KH, size_t KP>
  __attribute__((always_inline)) static void run(const avx2::QDwCtx& x, const Consts& k,
                                                 const uint8_t* const* pr, size_t step, size_t pair_step,
                                                 const uint8_t* tile, uint8_t* o, size_t nc) {
    const size_t kh = KH ? KH : x.p.kernel_h, kp = KP ? KP : x.kp;
    __m512i acc[NP];
    const __m512i b = _mm512_loadu_si512(tile);
#pragma GCC unroll 8
    for (size_t i = 0; i < NP; ++i) acc[i] = b;
    const uint8_t* w = tile + kQDwTile * 8;
#pragma GCC unroll 5
    for (size_t ky = 0; ky < kh; ++ky) {
      const uint8_t* row = pr[ky];
#pragma GCC unroll 3
      for (size_t j = 0; j < kp; ++j, w += 64, row += pair_step) {
        const __m512i wv = _mm512_loadu_si512(w);
#pragma GCC unroll 8
        for (size_t i = 0; i < NP; ++i)
          acc[i] = _mm512_dpwssd_epi32(acc[i], _mm512_loadu_si512(row + i * step), wv);
      }
    }
    const __m512 scale = _mm512_loadu_ps(tile + kQDwTile * 4);
    const size_t OC = x.OC;  // local: the byte stores below may alias anything reached through x
    const bool bounded = x.h.bounded;
    const __m512 lo = k.lo, hi = k.hi;  // local: see OC
    const __m512i zy = k.zy, qlo = k.qlo, qhi = k.qhi;
    const __mmask16 mask = static_cast<__mmask16>((1u << nc) - 1);
#pragma GCC unroll 8
    for (size_t i = 0; i < NP; ++i, o += OC) {
      __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[i]), scale);
      __m512i v;
      if (bounded) {  // requant16_bounded: exact rounding, then the saturations and the byte clamp in int32
        v = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(f), zy), qlo), qhi);
      } else {  // requant16: max first, so a NaN gives lo
        f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
        v = _mm512_add_epi32(_mm512_cvtps_epi32(f), zy);
      }
      const __m128i bytes = _mm_shuffle_epi32(_mm512_cvtepi32_epi8(v), _MM_SHUFFLE(3, 1, 2, 0));
      _mm_mask_storeu_epi8(o, mask, bytes);
    }
  }
};

}  // namespace
}  // namespace vnni
}  // namespace webxnn
