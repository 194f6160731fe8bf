// AVX2 int8 depthwise convolution (table.def's qdwconv2d), exact: compiled with -mavx2 -mfma. The rows, pair
// rows and ring are qdw_rows.h's (shared with the AVX512-VNNI table); this file is AVX2's strip.
//
// ODR hygiene: no std:: templates here; parallelism goes through internal.h.
#include <immintrin.h>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/qdw_rows.h"
#include "kernels/avx2/simd.h"

namespace webxnn {
namespace avx2 {
namespace {

// qdw_rows.h's strip on ymm: 4 pixels (8 accumulators, 2 weight vectors, temporaries), per tap pair one
// vpmaddwd + vpaddd per accumulator.
struct Avx2DwStrip {
  static constexpr size_t kStrip = 4;
  struct Consts {
    QRequant rq;
    QRequantBounded rqb;  // x.h.bounded
    explicit Consts(const QDwCtx& x)
        : rq{_mm256_set1_ps(x.lo), _mm256_set1_ps(x.hi), _mm256_set1_epi32(x.zy), x.out_u8},
          rqb{_mm256_set1_epi16(static_cast<int16_t>(x.zy)), _mm256_set1_epi8(static_cast<char>(x.qlo)),
              _mm256_set1_epi8(static_cast<char>(x.qhi)), x.out_u8} {}
  };
  // NP output pixels of tile t from the pair rows pr[ky] (already offset to the strip's first entry and the
  // tile), pixel step `step` bytes; KH, KP: kernel_h and kpairs when known at compile time, else 0.
  template <size_t NP, size_t KH, size_t KP>
  __attribute__((always_inline)) static void run(const QDwCtx& x, const Consts& k, const uint8_t* const* pr,
                                                 size_t step, size_t pair_step, const uint8_t* tile,
                                                 uint8_t* o, size_t nc) {
    const size_t kh = KH ? KH : x.p.kernel_h, kp = KP ? KP : x.kp;
    __m256i acc[2 * NP];
    const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(tile));
    const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(tile + 32));
#pragma GCC unroll 8
    for (size_t i = 0; i < NP; ++i) acc[2 * i] = b0, acc[2 * i + 1] = b1;
    const __m256i* w = reinterpret_cast<const __m256i*>(tile + kQDwTile * 8);
#pragma GCC unroll 5
    for (size_t ky = 0; ky < kh; ++ky) {
      const uint8_t* row = pr[ky];
#pragma GCC unroll 3
      for (size_t j = 0; j < kp; ++j, w += 2, row += pair_step) {
        const __m256i w0 = _mm256_load_si256(w), w1 = _mm256_load_si256(w + 1);
#pragma GCC unroll 8
        for (size_t i = 0; i < NP; ++i) {
          const __m256i* q = reinterpret_cast<const __m256i*>(row + i * step);
          acc[2 * i] = _mm256_add_epi32(acc[2 * i], _mm256_madd_epi16(_mm256_load_si256(q), w0));
          acc[2 * i + 1] = _mm256_add_epi32(acc[2 * i + 1], _mm256_madd_epi16(_mm256_load_si256(q + 1), w1));
        }
        // Keep the sums in registers, pair by pair: left alone, GCC hoists every pair's weights and re-associates
        // the sums into trees of products, which spill.
#pragma GCC unroll 16
        for (size_t i = 0; i < 2 * NP; ++i) __asm__("" : "+x"(acc[i]));
      }
    }
    const float* scale = reinterpret_cast<const float*>(tile + kQDwTile * 4);
    const __m256i order = _mm256_setr_epi32(0, 1, 4, 5, 0, 1, 4, 5);
    // Local copies: the byte stores below may alias anything reached through x, which would be reloaded.
    const size_t OC = x.OC;
    const bool bounded = x.h.bounded;
    const QRequant rq = k.rq;
    const QRequantBounded rqb = k.rqb;
#pragma GCC unroll 8
    for (size_t i = 0; i < NP; ++i, o += OC) {
      const __m128i v = bounded ? requant16_bounded(rqb, acc[2 * i], acc[2 * i + 1], scale, order)
                                : requant16(rq, acc[2 * i], acc[2 * i + 1], scale, order);
      store_bytes16(o, v, nc);
    }
  }
};

}  // namespace

void qdwconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH, size_t OW,
               const void* packed, void* out, int32_t out_min, int32_t out_max, Parallel& par) {
  qdwconv2d_run<Avx2DwStrip>(p, N, H, W, in, OH, OW, packed, out, out_min, out_max, par);
}

}  // namespace avx2
}  // namespace webxnn
