// AVX2 int8 depthwise convolution (table.def's qdwconv2d), exact: compiled with -mavx2 -mfma.
//
// Per output pixel, its taps' input rows (the zero-point row for padding taps); per tile of 16 channels, two
// taps at a time: both rows' 16 bytes sign- (or zero-) extended to int16, interleaved (vpunpck{l,h}wd) and
// multiplied by the packed int16 weight pairs with vpmaddwd into two int32 accumulators started from the
// packed bias. int16 x int16 products and int32 sums: exact for any weights and activations (no vpmaddubsw
// saturation to avoid). The accumulators' channel order is the packed slots' (qdw_layout.h), which the
// requantization's final permute undoes. A last tile of fewer than 16 channels reads its rows through a copy
// (no reads past C), and a depth multiplier m > 1 scatters each tile's 16 bytes to channels c * m + j.
//
// ODR hygiene: no std:: templates here; parallelism goes through internal.h.
#include <immintrin.h>

#include <cstring>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/qrequant.h"
#include "kernels/avx2/simd.h"
#include "kernels/internal.h"
#include "kernels/qdw_layout.h"

namespace webxnn {
namespace avx2 {
namespace {

struct QDwCtx {
  ConvParams p;
  QDwHeader h;
  size_t N, H, W, OH, OW, C, OC, tiles, tb, rows, tasks, ntaps;  // ntaps: 2 x pairs
  const uint8_t* in;
  const uint8_t* tiles0;
  const uint8_t* zero_row;
  uint8_t* out;
  QRequant rq;
};

template <bool kU8>
__attribute__((always_inline)) inline __m256i widen(const uint8_t* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return kU8 ? _mm256_cvtepu8_epi16(v) : _mm256_cvtepi8_epi16(v);
}

// One tile: 16 channels at offset c of the rows tp[0 .. ntaps). kPairs: the tap pairs when known at compile
// time (5: 3x3, unrolled), else 0 (x.h.pairs).
template <bool kU8, size_t kPairs>
__attribute__((always_inline)) inline __m128i tile16(const QDwCtx& x, const uint8_t* tile,
                                                     const uint8_t* const* tp, size_t c) {
  const size_t pairs = kPairs ? kPairs : x.h.pairs;
  __m256i acc0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(tile));
  __m256i acc1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(tile + 32));
  const __m256i* w = reinterpret_cast<const __m256i*>(tile + kQDwTile * 8);
#pragma GCC unroll 5
  for (size_t q = 0; q < pairs; ++q) {
    const __m256i x0 = widen<kU8>(tp[2 * q] + c), x1 = widen<kU8>(tp[2 * q + 1] + c);
    acc0 = _mm256_add_epi32(acc0,
                            _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1), _mm256_load_si256(w + 2 * q)));
    acc1 = _mm256_add_epi32(
        acc1, _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1), _mm256_load_si256(w + 2 * q + 1)));
  }
  const float* scale = reinterpret_cast<const float*>(tile + kQDwTile * 4);
  return requant16(x.rq, acc0, acc1, scale, _mm256_setr_epi32(0, 1, 4, 5, 0, 1, 4, 5));
}

// Output rows [r0, r1). tp: 2 x ntaps + kernel_h row pointers of scratch; tail: ntaps x 16 bytes.
template <bool kU8, size_t kPairs>
void qdw_rows(const QDwCtx& x, size_t r0, size_t r1, const uint8_t** tp, uint8_t* tail) {
  const ConvParams& p = x.p;
  const size_t taps = x.h.taps, full = x.C / kQDwTile, m = x.h.multiplier;
  const uint8_t** tt = tp + x.ntaps;  // the tail tile's rows: copies in `tail`
  const uint8_t** rows = tt + x.ntaps;  // per filter row: its input row, or null in the padding
  for (size_t r = r0; r < r1; ++r) {
    const size_t n = r / x.OH, oy = r % x.OH;
    const uint8_t* img = x.in + n * x.H * x.W * x.C;
    for (size_t ky = 0; ky < p.kernel_h; ++ky) {
      // Unsigned: a coordinate in the top / left padding wraps past H / W.
      const size_t iy = oy * p.stride_h + ky * p.dilation_h - p.pad_top;
      rows[ky] = iy < x.H ? img + iy * x.W * x.C : nullptr;
    }
    for (size_t ox = 0; ox < x.OW; ++ox) {
      const size_t ix0 = ox * p.stride_w - p.pad_left;
      size_t t = 0;
      for (size_t ky = 0; ky < p.kernel_h; ++ky) {
        for (size_t kx = 0; kx < p.kernel_w; ++kx, ++t) {
          const size_t ix = ix0 + kx * p.dilation_w;
          tp[t] = rows[ky] && ix < x.W ? rows[ky] + ix * x.C : x.zero_row;
        }
      }
      if (taps < x.ntaps) tp[taps] = x.zero_row;  // the odd tap's partner (zero weights)
      const size_t rem = x.C - full * kQDwTile;
      if (rem) {
        for (size_t t = 0; t < x.ntaps; ++t) {
          std::memcpy(tail + t * kQDwTile, tp[t] + full * kQDwTile, rem);
          tt[t] = tail + t * kQDwTile;
        }
      }
      uint8_t* o = x.out + (r * x.OW + ox) * x.OC;
      for (size_t j = 0; j < m; ++j) {
        for (size_t ti = 0; ti < x.tiles; ++ti) {
          const uint8_t* tile = x.tiles0 + (j * x.tiles + ti) * x.tb;
          const size_t c = ti * kQDwTile, nc = ti < full ? kQDwTile : rem;
          const __m128i v =
              ti < full ? tile16<kU8, kPairs>(x, tile, tp, c) : tile16<kU8, kPairs>(x, tile, tt, 0);
          if (m == 1 && nc == kQDwTile) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(o + c), v);
            continue;
          }
          alignas(16) uint8_t b[16];
          _mm_store_si128(reinterpret_cast<__m128i*>(b), v);
          for (size_t i = 0; i < nc; ++i) o[(c + i) * m + j] = b[i];
        }
      }
    }
  }
}

void qdw_task(const void* vctx, size_t task) {
  const QDwCtx& x = *static_cast<const QDwCtx*>(vctx);
  const size_t r0 = x.rows * task / x.tasks, r1 = x.rows * (task + 1) / x.tasks;
  if (r1 <= r0) return;
  // Row pointers: ntaps for the pixel, ntaps for its tail tile, kernel_h filter rows; the tail's row copies.
  const size_t ptrs = 2 * x.ntaps + x.p.kernel_h;
  void* mem = internal::aligned_alloc64(ptrs * sizeof(const uint8_t*) + x.ntaps * kQDwTile);
  const uint8_t** tp = static_cast<const uint8_t**>(mem);
  uint8_t* tail = static_cast<uint8_t*>(mem) + ptrs * sizeof(const uint8_t*);
  const bool u8 = x.h.a_type == QType::kU8, k3x3 = x.h.pairs == 5;
  if (u8) {
    k3x3 ? qdw_rows<true, 5>(x, r0, r1, tp, tail) : qdw_rows<true, 0>(x, r0, r1, tp, tail);
  } else {
    k3x3 ? qdw_rows<false, 5>(x, r0, r1, tp, tail) : qdw_rows<false, 0>(x, r0, r1, tp, tail);
  }
  internal::aligned_free(mem);
}

}  // namespace

void qdwconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH, size_t OW,
               const void* packed, void* out, int32_t out_min, int32_t out_max, Parallel& par) {
  QDwCtx x;
  std::memcpy(&x.h, packed, sizeof(x.h));
  x.p = p;
  x.N = N;
  x.H = H;
  x.W = W;
  x.OH = OH;
  x.OW = OW;
  x.C = x.h.channels;
  x.OC = x.C * x.h.multiplier;
  x.tiles = qdw_tiles(x.C);
  x.tb = qdw_tile_bytes(x.h.pairs);
  x.ntaps = 2 * size_t{x.h.pairs};
  x.rows = N * OH;
  if (x.rows == 0 || OW == 0 || x.OC == 0) return;
  x.in = static_cast<const uint8_t*>(in);
  x.tiles0 = static_cast<const uint8_t*>(packed) + 64;
  x.zero_row = x.tiles0 + qdw_tiles_bytes(x.h);
  x.out = static_cast<uint8_t*>(out);
  float lo = 0.f, hi = 0.f;
  q8_clamp_bounds(x.h.out_type, x.h.out_zero_point, out_min, out_max, &lo, &hi);
  x.rq = QRequant{_mm256_set1_ps(lo), _mm256_set1_ps(hi), _mm256_set1_epi32(x.h.out_zero_point),
                  x.h.out_type == QType::kU8};
  const double row_cost = static_cast<double>(OW) * x.OC * x.h.taps;
  x.tasks = internal::task_count(x.rows, row_cost, internal::parallel_threads(par), 4);
  if (x.tasks > 1) return internal::parallel_run(par, x.tasks, qdw_task, &x);
  qdw_task(&x, 0);
}

}  // namespace avx2
}  // namespace webxnn
