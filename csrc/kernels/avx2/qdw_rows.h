// The int8 depthwise convolution (table.def's qdwconv2d), exact, for every table that reads qdw_layout.h's
// tiles on x86: AVX2's (avx2/qdwconv.cc, 256-bit strips) and AVX512-VNNI's (vnni/avx512vnni.cc, 512-bit strips
// on vpdpwssd). A table supplies the strip S: S::kStrip pixels per strip, S::Consts (its requantization
// constants, built from QDwCtx's bounds once per output row) and S::run<NP, KH, KP>(x, consts, pair rows,
// pixel step, pair step, tile, out, nc), which sums NP pixels of one 16-channel tile and stores them.
//
// Row-wise, like the fp32 depthwise kernel (dwconv.cc). The packed weights pair each kernel row's taps left
// to right (qdw_layout.h), so a pair reads two input columns dilation_w apart of one input row. Each input
// row a task needs is turned once into a "pair row": for each column cp where a pair can start, per tile of
// 16 channels, the two columns' bytes sign- (or zero-) extended to int16 and interleaved (vpunpck{l,h}wd), 64
// bytes in the order vpmaddwd wants. Pair rows live in a per-thread ring of (kernel_h - 1) * dilation_h + 1
// slots (the rows one output row reads are distinct modulo that), kept across a thread's tasks of one call,
// so with stride 1 each input row is interleaved once and read by kernel_h output rows. An output row then
// runs per tile in strips of up to S::kStrip pixels: accumulators started from the packed bias, and per tap
// pair one multiply-add of the pair row's entry and the pair's weights per pixel (AVX2: vpmaddwd + vpaddd on
// two ymm halves; AVX512-VNNI: one zmm vpdpwssd), the weights loaded once per strip. Padding (rows and
// columns) is read as the input zero point, written into the pair rows, so every pixel takes the same path;
// channels past OC read whatever the padded byte row holds, times zero weights. A depth multiplier m > 1
// builds the pair rows from input rows expanded to OC channels (channel c * m + j holds input channel c).
// int16 x int16 products and int32 sums: exact for any weights and activations. Input columns are read in
// place when their channels fill whole tiles, else through a copy with the channel tail filled in (no load
// past the input). Geometries whose ring would not fit kMaxRingBytes run the scalar kernel.
//
// ODR: everything here is in an anonymous namespace (each ISA translation unit that includes it has its own
// copy); no std:: templates; parallelism and scratch go through internal.h.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "kernels/avx2/qrequant.h"
#include "kernels/internal.h"
#include "kernels/qdw_layout.h"
#include "kernels/qgemm_layout.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace avx2 {
namespace {

constexpr double kMaxRingBytes = 16.0 * (1 << 20);

struct QDwCtx {
  ConvParams p;
  QDwHeader h;
  size_t H, W, OH, OW, C, OC, m, tiles, tb, kp, rows, tasks;
  size_t cs;  // column step between a pair row's entries (the stride when every pair start is a multiple)
  size_t entries;  // entries (pair-start columns) per pair row
  size_t entry_bytes;  // tiles x 64
  size_t cols;  // padded columns a pair row reads
  size_t ring_rows, ring_bytes, col_bytes;  // col_bytes: the zero-point column and the column copies
  bool direct;  // input columns read in place: depth multiplier 1, channels a multiple of 16
  const uint8_t* in;
  const uint8_t* tiles0;
  uint8_t* out;
  // The requantization's bounds (each strip S widens them once per output row, S::Consts): the clamp relative
  // to the output zero point zy (requant16), and [qlo, qhi], out_min / out_max clipped to the output type
  // (requant16_bounded, when x.h.bounded).
  float lo, hi;
  int32_t zy, qlo, qhi;
  bool out_u8;
  uint64_t call;
};

template <bool kU8>
__attribute__((always_inline)) inline __m256i widen(const uint8_t* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return kU8 ? _mm256_cvtepu8_epi16(v) : _mm256_cvtepi8_epi16(v);
}

// Input column ix (< W) of input row iy as the pair rows read it: tiles * 16 bytes, in place when the
// channels fill whole tiles (depth multiplier 1), else copied into `col` with the channel tail (and the
// expansion of a depth multiplier) filled in.
const uint8_t* input_column(const QDwCtx& x, const uint8_t* src, uint8_t* col) {
  if (x.direct) return src;
  const size_t tc = x.tiles * kQDwTile;
  if (x.m == 1) {
    std::memcpy(col, src, x.C);
  } else {
    for (size_t o = 0; o < x.OC; ++o) col[o] = src[o / x.m];
  }
  std::memset(col + x.OC, static_cast<uint8_t>(x.h.a_zero_point), tc - x.OC);
  return col;
}

// The pair row of padded input row rp of image n into pr. zcol: a column of the input zero point (padding);
// cols: space for the columns a pair row reads when they are not read in place (x.cols x tiles x 16 bytes).
template <bool kU8>
void fill_pair_row(const QDwCtx& x, size_t n, size_t rp, const uint8_t* zcol, uint8_t* cols, uint8_t* pr) {
  const size_t tc = x.tiles * kQDwTile, dw = x.p.dilation_w;
  const size_t iy = rp - x.p.pad_top;  // unsigned: wraps past H in the top padding
  const uint8_t* src = iy < x.H ? x.in + (n * x.H + iy) * x.W * x.C : nullptr;
  // Column cp of the padded row: the input's (in place or a copy in `cols`), or the padding's.
  const auto column = [&](size_t cp) -> const uint8_t* {
    const size_t ix = cp - x.p.pad_left;
    return src && ix < x.W ? input_column(x, src + ix * x.C, cols + cp * tc) : zcol;
  };
  for (size_t e = 0; e < x.entries; ++e) {
    const uint8_t* c0 = column(e * x.cs);
    const uint8_t* c1 = column(e * x.cs + dw);
    for (size_t t = 0; t < x.tiles; ++t, pr += 64) {
      const __m256i a = widen<kU8>(c0 + t * kQDwTile), d = widen<kU8>(c1 + t * kQDwTile);
      _mm256_store_si256(reinterpret_cast<__m256i*>(pr), _mm256_unpacklo_epi16(a, d));
      _mm256_store_si256(reinterpret_cast<__m256i*>(pr + 32), _mm256_unpackhi_epi16(a, d));
    }
  }
}

// The last n (< NP + 1) pixels of a row's strips: one strip of n pixels.
template <typename S, size_t NP, size_t KH, size_t KP>
__attribute__((always_inline)) inline void strip_tail(const QDwCtx& x, const typename S::Consts& k,
                                                      const uint8_t* const* rows, size_t n, size_t step,
                                                      size_t pair_step, const uint8_t* tile, uint8_t* o,
                                                      size_t nc) {
  if constexpr (NP > 0) {
    if (n == NP) return S::template run<NP, KH, KP>(x, k, rows, step, pair_step, tile, o, nc);
    strip_tail<S, NP - 1, KH, KP>(x, k, rows, n, step, pair_step, tile, o, nc);
  }
}

// One output row from its kernel rows' pair rows pr[ky], in strips of S::kStrip pixels (S::run).
template <typename S, size_t KH, size_t KP>
void out_row(const QDwCtx& x, const uint8_t* const* pr, uint8_t* orow) {
  const typename S::Consts k(x);
  const size_t kh = KH ? KH : x.p.kernel_h, OW = x.OW, OC = x.OC, tiles = x.tiles, tb = x.tb;
  const size_t step = x.p.stride_w / x.cs * x.entry_bytes;  // one output pixel further
  const size_t pair_step = 2 * x.p.dilation_w / x.cs * x.entry_bytes;  // the next tap pair of a kernel row
  const uint8_t* tiles0 = x.tiles0;
  const uint8_t* rows[64];
  for (size_t t = 0; t < tiles; ++t) {
    const uint8_t* tile = tiles0 + t * tb;
    const size_t nc = OC - t * kQDwTile < kQDwTile ? OC - t * kQDwTile : kQDwTile;
    for (size_t ky = 0; ky < kh; ++ky) rows[ky] = pr[ky] + t * 64;
    uint8_t* o = orow + t * kQDwTile;
    size_t ox = 0;
    for (; ox + S::kStrip <= OW; ox += S::kStrip, o += S::kStrip * OC) {
      S::template run<S::kStrip, KH, KP>(x, k, rows, step, pair_step, tile, o, nc);
      for (size_t ky = 0; ky < kh; ++ky) rows[ky] += S::kStrip * step;
    }
    strip_tail<S, S::kStrip - 1, KH, KP>(x, k, rows, OW - ox, step, pair_step, tile, o, nc);
  }
}

template <typename S, bool kU8, size_t KH, size_t KP>
void qdw_rows(const QDwCtx& x, size_t r0, size_t r1) {
  const ConvParams& p = x.p;
  uint8_t* ring = static_cast<uint8_t*>(
      internal::scratch(internal::Scratch::kDwRing, x.ring_rows * x.ring_bytes + x.col_bytes));
  uint8_t* zcol = ring + x.ring_rows * x.ring_bytes;
  uint8_t* cols = zcol + x.tiles * kQDwTile;
  std::memset(zcol, static_cast<uint8_t>(x.h.a_zero_point), x.tiles * kQDwTile);
  uint64_t* keys = static_cast<uint64_t*>(
      internal::scratch(internal::Scratch::kDwRingKeys, (x.ring_rows + 1) * sizeof(uint64_t)));
  uint64_t* ring_key = keys + 1;  // which (image, padded input row) each slot holds
  if (keys[0] != x.call) {  // the ring holds another call's rows, or garbage
    keys[0] = x.call;
    for (size_t i = 0; i < x.ring_rows; ++i) ring_key[i] = ~uint64_t{0};
  }
  const size_t hp = (x.OH - 1) * p.stride_h + (p.kernel_h - 1) * p.dilation_h + 1;  // padded rows read
  const uint8_t* pr[64];
  for (size_t r = r0; r < r1; ++r) {
    const size_t n = r / x.OH, oy = r % x.OH;
    for (size_t ky = 0; ky < p.kernel_h; ++ky) {
      const size_t rp = oy * p.stride_h + ky * p.dilation_h, key = n * hp + rp, slot = key % x.ring_rows;
      uint8_t* dst = ring + slot * x.ring_bytes;
      if (ring_key[slot] != key) {
        fill_pair_row<kU8>(x, n, rp, zcol, cols, dst);
        ring_key[slot] = key;
      }
      pr[ky] = dst;
    }
    out_row<S, KH, KP>(x, pr, x.out + r * x.OW * x.OC);
  }
}

template <typename S>
void qdw_task(const void* vctx, size_t task) {
  const QDwCtx& x = *static_cast<const QDwCtx*>(vctx);
  const size_t r0 = x.rows * task / x.tasks, r1 = x.rows * (task + 1) / x.tasks;
  if (r1 <= r0) return;
  const bool u8 = x.h.a_type == QType::kU8;
  const size_t kh = x.p.kernel_h, kp = x.kp;
  if (kh == 3 && kp == 2)
    return u8 ? qdw_rows<S, true, 3, 2>(x, r0, r1) : qdw_rows<S, false, 3, 2>(x, r0, r1);
  if (kh == 5 && kp == 3)
    return u8 ? qdw_rows<S, true, 5, 3>(x, r0, r1) : qdw_rows<S, false, 5, 3>(x, r0, r1);
  u8 ? qdw_rows<S, true, 0, 0>(x, r0, r1) : qdw_rows<S, false, 0, 0>(x, r0, r1);
}

// table.def's qdwconv2d on strips S.
template <typename S>
void qdwconv2d_run(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH, size_t OW,
                   const void* packed, void* out, int32_t out_min, int32_t out_max, Parallel& par) {
  QDwCtx x;
  std::memcpy(&x.h, packed, sizeof(x.h));
  x.p = p;
  x.H = H;
  x.W = W;
  x.OH = OH;
  x.OW = OW;
  x.C = x.h.channels;
  x.m = x.h.multiplier;
  x.OC = x.C * x.m;
  x.rows = N * OH;
  if (x.rows == 0 || OW == 0 || x.OC == 0) return;
  if (p.kernel_h == 0 || p.kernel_w == 0 || p.kernel_h > 64 || p.stride_w == 0 || p.dilation_w == 0)
    return scalar::qdwconv2d(p, N, H, W, in, OH, OW, packed, out, out_min, out_max, par);
  x.tiles = qdw_tiles(x.h);
  x.kp = x.h.kpairs;
  x.tb = qdw_tile_bytes(size_t{p.kernel_h} * x.kp);
  // Pair j of output pixel ox starts at padded column ox * stride_w + 2 j dilation_w: all multiples of the
  // stride when 2 dilation_w is one (strides 1 and 2), and only those columns get entries.
  x.cs = (2 * size_t{p.dilation_w}) % p.stride_w == 0 ? p.stride_w : 1;
  x.entries = ((OW - 1) * p.stride_w + (x.kp - 1) * 2 * p.dilation_w) / x.cs + 1;
  x.entry_bytes = x.tiles * 64;
  x.cols = (x.entries - 1) * x.cs + p.dilation_w + 1;  // the last entry's second column
  x.ring_rows = (size_t{p.kernel_h} - 1) * p.dilation_h + 1;
  x.ring_bytes = x.entries * x.entry_bytes;
  x.direct = x.m == 1 && x.C % kQDwTile == 0;
  x.col_bytes = (1 + (x.direct ? 0 : x.cols)) * x.tiles * kQDwTile;
  const double ring = static_cast<double>(x.ring_rows) * x.ring_bytes + x.col_bytes;
  if (ring > kMaxRingBytes || static_cast<double>(OW) * p.stride_w > kMaxRingBytes)
    return scalar::qdwconv2d(p, N, H, W, in, OH, OW, packed, out, out_min, out_max, par);
  x.in = static_cast<const uint8_t*>(in);
  x.tiles0 = static_cast<const uint8_t*>(packed) + 64;
  x.out = static_cast<uint8_t*>(out);
  float lo = 0.f, hi = 0.f;
  q8_clamp_bounds(x.h.out_type, x.h.out_zero_point, out_min, out_max, &lo, &hi);
  x.lo = lo;
  x.hi = hi;
  x.zy = x.h.out_zero_point;
  x.qlo = static_cast<int32_t>(lo) + x.zy;
  x.qhi = static_cast<int32_t>(hi) + x.zy;
  x.out_u8 = x.h.out_type == QType::kU8;
  x.call = internal::unique_call_id();
  const double row_cost = static_cast<double>(OW) * x.OC * p.kernel_h * p.kernel_w;
  x.tasks = internal::task_count(x.rows, row_cost, internal::parallel_threads(par), 4);
  internal::parallel_run(par, x.tasks, qdw_task<S>, &x);
}

}  // namespace
}  // namespace avx2
}  // namespace webxnn
