// The int8 GEMM / IGEMM tiles (table.def's qgemm, qconv2d, qd8_gemm) on 256-bit vectors, written once for
// every table whose kernels read qgemm_layout.h's panels: AVX2 (avx2/qgemm.cc) and the VNNI ones
// (vnni/qgemm_vnni.h). A table supplies a policy P (see avx2/qgemm.cc's Avx2Policy):
//   P::kMR2, P::kMR1  rows of the 32-column (two-panel) and 16-column (lone last panel) tiles;
//   P::kWide          whether the table has the 16-bit path for QPath::kWide buffers (tile_wide);
//   P::select(x, f)   calls f(Flag<flip>{}, Mul{}) with the activation flip (a ^ 0x80) and the multiply step
//                     for x's packed buffer; a Mul has row(a) (what the MR rows' steps share per row group)
//                     and add(acc, a, row(a), w) (acc += the 4-byte dot products of a and 8 columns of w).
// Tiles: MR rows x NP panels of 16 columns, MR x 2NP int32 accumulators started from the packed bias, full K
// per tile (K blocks when a strip's weights pass L1), a row group (4 bytes) broadcast per row; the int8
// epilogue requantizes two rows at a time (store2x16), qd8_gemm's is fp32 (store16_f32), qgemm_residual's and
// qconv2d_residual's adds the residual to the requantized values before they are stored (store16_residual).
// avx2/qgemm.cc's head comment has the measurements behind these choices.
//
// ODR: everything here is in an anonymous namespace, so each translation unit that includes this header (each
// compiled with its own ISA flags) has its own copy: the linker can never hand one ISA's instance to another
// table. No std:: templates (they would be weak symbols shared across TUs); parallelism goes through
// internal.h. Include it only from ISA translation units (the AVX2 and VNNI ones).
#pragma once

#include <immintrin.h>

#include <cstring>

#include "kernels/avx2/qadd.h"
#include "kernels/avx2/qrequant.h"
#include "kernels/avx2/simd.h"
#include "kernels/internal.h"
#include "kernels/qgemm_layout.h"

namespace webxnn {
namespace qtiles {
namespace {

using avx2::div_up;
using avx2::min_sz;
using avx2::QRequant;
using avx2::requant16;
using avx2::store_bytes16;

constexpr size_t kQMC = 192;  // rows of A per M chunk: a chunk's rows stay in L2 while its panels sweep them
// K blocks (tile_strip): at most this many bytes of a strip's weights per block, half of Zen 4's 32 KB L1D
// beside the tiles' rows and partial sums (a strip of up to 1.5x that runs unblocked); and tiles per group
// sharing a block (their int32 sums: 6 KB for 2 x 32 tiles). Measured on AVX2 (1 thread, GOP/s, min of
// repeats, A/B in alternating processes) in two states of this shared VM: while full-K strips ran slow (load
// 8-10), blocks of 16 KB from 24 KB strips on gave 3x3 7x7x512->512 94-98 -> 109-112, 1x1 7x7x2048->512
// 94-102 -> 116-121, 1x1 14x14x1024->256 98-102 -> 119-121, 3x3 14x14x256->256 90-101 -> 111-114; while full
// K ran at 112-126 (later, load 13), both were level (medians of 8 pairs within -3 .. +5 %). Blocking from
// 16 KB strips made 3136x64x576 (K = 576, 18 KB) slower (112 -> 67-103); blocks of 8 KB or 24 KB gained less.
// The 512-bit tiles (Intel Xeon, Emerald Rapids: 48 KB L1D, 2 MB L2, 8 x 32 tiles) want larger blocks
// (kQBlockBytesZmm): 3x3 convs, 1 thread, s8 activations, GOP/s at 16 / 32 / 40 / 64 KB: 28x28x128 601 / 698 /
// 698 / 697, 14x14x256 614 / 656 / 682 / 708, 7x7x512 575 / 609 / 622 / 633; ResNet-50 int8's steps summed
// 16.2 ms at 16 KB, 14.8-15.9 at 40 and 14.7-16.0 at 64 (run to run).
constexpr size_t kQBlockBytes = 16 * 1024;
constexpr size_t kQBlockBytesZmm = 40 * 1024;
constexpr size_t kQBlockTiles = 24;

// A convolution's geometry for IGEMM tiles (qconv2d); null for a plain GEMM.
struct QConvGeom {
  size_t H, W, C, OH, OW;
  size_t in_stride;  // bytes from one input pixel to the next (groups x C)
  ConvParams p;
  QConvTaps t;  // merged: a tap is a filter row, t.row_k = kw * C contiguous input bytes
  const uint8_t* zero_row;  // t.tap_k bytes of the input zero point: the rows of padding taps
};

// qgemm_residual / qconv2d_residual (table.def): the Add after the product, run on each tile's requantized
// values in registers, before they are stored, by the stand-alone Add's own code (qadd.h's AddV and
// QElemRequant; store16_residual). Row m, column n of a qrun call's output adds the residual's R[m * ldr + n]
// (QCtx::R).
struct QResidual {
  size_t ldr;
  int32_t za;  // the Add's zero point of operand a (the product's output zero point, in practice)
  avx2::AddV add;  // a: the product's qint8 output, b: r
  avx2::QElemRequant rq;
  QResidual(size_t ldr_, const QElemParams& q)
      : ldr(ldr_), za(q.a_zero_point), add(q), rq(q, avx2::AddV::max_abs(q)) {}
};

struct QCtx {
  size_t M, N, K, lda, ldc, panels, pb;
  // The k loop: `taps` row pointers per output row (1 for a GEMM), each read in `groups` whole row groups and
  // a partial one of `krem` bytes; the weights of tap t start at group t * tap_groups.
  size_t taps, tap_groups, groups, krem;
  const QConvGeom* conv;
  size_t m_chunks, n_groups, tasks;
  size_t pstep;  // N groups hold whole tiles of this many panels (4 for the GEMV)
  const uint8_t* A;
  const uint8_t* panels0;  // first panel
  uint8_t* C;
  size_t cstep;  // bytes of C per panel: 16 int8 or (qd8_gemm) 16 fp32 outputs
  const RowQuant* rowq;  // qd8_gemm: the rows' quantization (fp32 out); null for qgemm / qconv2d
  const QResidual* res;  // qgemm_residual / qconv2d_residual; else null
  const int8_t* R;  // their residual
  int32_t res_dz;  // the output zero point minus res->za
  Qd8Columns cols;  // qd8_gemm: column sums and fp32 bias
  float flo, fhi;  // the clamp, relative to the output zero point (qd8_gemm: in real units)
  int32_t zy;
  int32_t qmin, qmax;  // the int8 clamp in output units (flo + zy, fhi + zy; qmin > qmax gives qmax)
  // int8 out, zy small enough for store2x16's int16 add (any valid zero point is), qmin <= qmax (else every
  // output is qmax, which may lie outside the type: store16 does that)
  bool pairs;
  bool flip, out_u8, wide, small;
};

// Row group g of a (4 bytes) broadcast (kFlip: a ^ 0x80, qgemm_layout.h's shift d): a whole group straight
// from memory (vpbroadcastd m32: no trip through a general register), or (tail) the zero-filled partial last
// one.
template <bool kFlip>
__attribute__((always_inline)) inline __m256i row_group(const QCtx& x, const uint8_t* a, size_t g,
                                                        bool tail) {
  __m256i v;
  if (tail) {
    // Byte loads, not memcpy into a stack word: a call, spilled accumulators and a failed store forward per
    // row and tap, which made 3-channel stems (every tap a tail) run 5x slower in a model than alone.
    const uint8_t* t = a + 4 * g;
    uint32_t u = t[0];
    if (x.krem > 1) u |= uint32_t{t[1]} << 8;
    if (x.krem > 2) u |= uint32_t{t[2]} << 16;
    v = _mm256_set1_epi32(static_cast<int32_t>(u));
  } else {
    v = _mm256_castps_si256(_mm256_broadcast_ss(reinterpret_cast<const float*>(a + 4 * g)));
  }
  return kFlip ? _mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0x80))) : v;
}

// Where a tile's rows come from, per tap: a GEMM's A rows, or a convolution's input pixels (IGEMM: the row
// of input pixel (iy, ix) for output pixel m and tap (ky, kx), the zero-point row where that is padding).
// Per tile, start() works out what the taps share (for a convolution: each output pixel's image and top-left
// input coordinate, the divisions done once per tile, not per tap); rows() then gives the tile's row pointers
// for each tap in turn (t = 0, 1, ...).
struct GemmRows {
  const uint8_t* a;
  size_t lda;
  template <int MR>
  struct Tile {
    const uint8_t* r[MR];
  };
  template <int MR>
  __attribute__((always_inline)) void start(size_t m0, Tile<MR>& tl) const {
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) tl.r[m] = a + (m0 + m) * lda;
  }
  template <int MR>
  __attribute__((always_inline)) void rows(Tile<MR>& tl, const uint8_t* (&ar)[MR]) const {
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) ar[m] = tl.r[m];
  }
  template <int MR>
  void seek(Tile<MR>&, size_t) const {}  // one tap
};

template <bool kMerged>  // qgemm_layout.h's merged taps: one per filter row
struct ConvRows {
  const QConvGeom& g;
  const uint8_t* in;
  template <int MR>
  struct Tile {
    const uint8_t* img[MR];
    size_t iy0[MR], ix0[MR];  // top-left tap's input coordinates; negative ones wrap around (unsigned)
    size_t ky = 0, kx = 0;  // the next tap
    uint8_t gather[MR][64];  // merged taps: a filter row that overlaps the left or right padding
  };
  template <int MR>
  void start(size_t m0, Tile<MR>& tl) const {
    const ConvParams& p = g.p;
    for (int m = 0; m < MR; ++m) {
      const size_t pix = m0 + m, n = pix / (g.OH * g.OW), r = pix % (g.OH * g.OW);
      tl.img[m] = in + n * g.H * g.W * g.in_stride;
      tl.iy0[m] = r / g.OW * p.stride_h - p.pad_top;
      tl.ix0[m] = r % g.OW * p.stride_w - p.pad_left;
    }
  }
  // The next rows() gives tap t's rows (a K block starting at tap t).
  template <int MR>
  void seek(Tile<MR>& tl, size_t t) const {
    tl.ky = kMerged ? t : t / g.p.kernel_w;
    tl.kx = kMerged ? 0 : t % g.p.kernel_w;
  }
  template <int MR>
  void rows(Tile<MR>& tl, const uint8_t* (&ar)[MR]) const {
    const ConvParams& p = g.p;
    if (kMerged) return merged_rows(tl, ar);
    const size_t dy = tl.ky * p.dilation_h, dx = tl.kx * p.dilation_w;
    for (int m = 0; m < MR; ++m) {
      // Unsigned: a coordinate in the top / left padding wrapped past H / W, so one compare catches both sides.
      const size_t iy = tl.iy0[m] + dy, ix = tl.ix0[m] + dx;
      ar[m] = iy < g.H && ix < g.W ? tl.img[m] + (iy * g.W + ix) * g.in_stride : g.zero_row;
    }
    if (++tl.kx == p.kernel_w) {
      tl.kx = 0;
      ++tl.ky;
    }
  }
  // Merged taps (qgemm_layout.h): filter row ky reads the kw * C bytes from input pixel (iy, ix0) on, or where
  // that run overlaps the left / right padding, a copy with the zero point in the padding pixels' places.
  template <int MR>
  void merged_rows(Tile<MR>& tl, const uint8_t* (&ar)[MR]) const {
    const ConvParams& p = g.p;
    const size_t dy = tl.ky++ * p.dilation_h, kw = p.kernel_w;
    for (int m = 0; m < MR; ++m) {
      const size_t iy = tl.iy0[m] + dy, ix = tl.ix0[m];
      if (iy >= g.H) {
        ar[m] = g.zero_row;
      } else if (ix < g.W && g.W - ix >= kw) {
        ar[m] = tl.img[m] + (iy * g.W + ix) * g.in_stride;
      } else {
        for (size_t kx = 0; kx < kw; ++kx) {
          const size_t xx = ix + kx;
          const uint8_t* src = xx < g.W ? tl.img[m] + (iy * g.W + xx) * g.in_stride : g.zero_row;
          // C < 8 (qconv2d_taps); a bounded conditional copy, which the compiler keeps inline (a memcpy
          // call here would spill the tile's accumulators).
#pragma GCC unroll 8
          for (size_t c = 0; c < 8; ++c)
            if (c < g.C) tl.gather[m][kx * g.C + c] = src[c];
        }
        ar[m] = tl.gather[m];
      }
    }
  }
};

// A convolution's rows read from a copy of its input with the padding written out (run_block_padded): every
// tap of every output pixel lies in the copy, so a tile's row pointers are its pixels' top-left corners plus
// one offset per tap, with no bounds to check and no gathered rows.
struct PaddedRows {
  const uint8_t* base;  // padded pixel (n, yp, xp) at base + ((n * Hp + yp) * Wp + xp) * C
  size_t Hp, Wp, C, OH, OW, sh, sw;
  const size_t* tap_off;  // bytes from a pixel's top-left corner to each tap's first byte
  template <int MR>
  struct Tile {
    const uint8_t* r[MR];
    size_t t = 0;
  };
  template <int MR>
  void start(size_t m0, Tile<MR>& tl) const {
    for (int m = 0; m < MR; ++m) {
      const size_t pix = m0 + m, n = pix / (OH * OW), r = pix % (OH * OW);
      tl.r[m] = base + ((n * Hp + r / OW * sh) * Wp + r % OW * sw) * C;
    }
    tl.t = 0;
  }
  template <int MR>
  void seek(Tile<MR>& tl, size_t t) const {
    tl.t = t;
  }
  template <int MR>
  __attribute__((always_inline)) void rows(Tile<MR>& tl, const uint8_t* (&ar)[MR]) const {
    const size_t off = tap_off[tl.t++];
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) ar[m] = tl.r[m] + off;
  }
};

// Requantizes 16 int32 sums (columns n0..n0+nc of one row; scale: the panel's 16 scales) and stores nc bytes.
__attribute__((always_inline)) inline void store16(const QCtx& x, __m256i s0, __m256i s1, const float* scale,
                                                   uint8_t* c, size_t nc) {
  const QRequant r{_mm256_set1_ps(x.flo), _mm256_set1_ps(x.fhi), _mm256_set1_epi32(x.zy), x.out_u8};
  const __m128i v = requant16(r, s0, s1, scale, _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5));
  store_bytes16(c, v, nc);
}

// The residual epilogue of one row's 16 sums (columns n0..n0+nc; scale: their scales): the product's own
// requantization -- requant16's: v clamped in fp32 to the product's clamp, rounded -- kept as fp32 lanes
// y - za instead of packed to bytes (the same values: integers in the output type's range), then the Add with
// the residual's r[0, nc) by the stand-alone Add's code (qadd.h's AddV, qbinary16, QElemRequant), and nc bytes
// stored. Bit for bit requant16's bytes, then qadd; it skips packing those bytes and unpacking them again
// (the stand-alone Add unpacks both operands). The residual is read only within [0, nc) (a graph input has no
// slack after it).
__attribute__((always_inline)) inline void store16_residual(const QCtx& x, __m256i s0, __m256i s1,
                                                            const float* scale, uint8_t* c, size_t nc,
                                                            const int8_t* r) {
  const QResidual& res = *x.res;
  const __m256 lo = _mm256_set1_ps(x.flo), hi = _mm256_set1_ps(x.fhi);
  __m256 f0 = _mm256_mul_ps(_mm256_cvtepi32_ps(s0), _mm256_load_ps(scale));
  __m256 f1 = _mm256_mul_ps(_mm256_cvtepi32_ps(s1), _mm256_load_ps(scale + 8));
  f0 = _mm256_min_ps(_mm256_max_ps(f0, lo), hi);  // max first: a NaN gives lo, as requant16
  f1 = _mm256_min_ps(_mm256_max_ps(f1, lo), hi);
  // y - za = rint(v) + zy - za, as fp32 (exact: small integers; vroundps rounds half to even like vcvtps2dq,
  // and saves the trip to int32 and back)
  const __m256 dz = _mm256_set1_ps(static_cast<float>(x.res_dz));
  const __m256 a0 = _mm256_add_ps(_mm256_round_ps(f0, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), dz);
  const __m256 a1 = _mm256_add_ps(_mm256_round_ps(f1, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), dz);
  __m128i b;
  if (nc == kQNR) {
    b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r));
  } else if (nc == 8) {  // a 24-channel map's last panel (MobileNetV2)
    b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r));
  } else {
    alignas(16) int8_t buf[16] = {};
    std::memcpy(buf, r, nc);
    b = _mm_load_si128(reinterpret_cast<const __m128i*>(buf));
  }
  const avx2::AddV& op = res.add;
  const __m128i v = avx2::qbinary16(op, res.rq, op.part_a_f(a0), op.part_a_f(a1), op.part_b(b),
                                    op.part_b(_mm_unpackhi_epi64(b, b)));
  store_bytes16(c, v, nc);
}

// qd8_gemm's epilogue (table.def): 16 fp32 outputs of row `row` from its int32 sums, stored as nc floats.
__attribute__((always_inline)) inline void store16_f32(const QCtx& x, __m256i s0, __m256i s1,
                                                       const uint8_t* panel, size_t n0, size_t row,
                                                       uint8_t* c, size_t nc) {
  const float* sw = reinterpret_cast<const float*>(panel + kQNR * 4);
  const RowQuant q = x.rowq[row];
  const __m256i za = _mm256_set1_epi32(q.zero_point);
  const __m256 sa = _mm256_set1_ps(q.scale);
  const __m256 lo = _mm256_set1_ps(x.flo), hi = _mm256_set1_ps(x.fhi);
  const int32_t* ws = x.cols.wsum + n0;
  const float* bias = x.cols.bias + n0;
  s0 = _mm256_sub_epi32(s0, _mm256_mullo_epi32(za, _mm256_load_si256(reinterpret_cast<const __m256i*>(ws))));
  s1 = _mm256_sub_epi32(s1,
                        _mm256_mullo_epi32(za, _mm256_load_si256(reinterpret_cast<const __m256i*>(ws + 8))));
  __m256 f0 =
      _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_mul_ps(sa, _mm256_load_ps(sw)), _mm256_load_ps(bias));
  __m256 f1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_mul_ps(sa, _mm256_load_ps(sw + 8)),
                              _mm256_load_ps(bias + 8));
  f0 = _mm256_min_ps(_mm256_max_ps(f0, lo), hi);  // a NaN gives lo, as the scalar reference does
  f1 = _mm256_min_ps(_mm256_max_ps(f1, lo), hi);
  float* out = reinterpret_cast<float*>(c);
  if (nc == kQNR) {
    _mm256_storeu_ps(out, f0);
    _mm256_storeu_ps(out + 8, f1);
  } else {
    alignas(32) float tmp[16];
    _mm256_store_ps(tmp, f0);
    _mm256_store_ps(tmp + 8, f1);
    std::memcpy(out, tmp, nc * 4);
  }
}

// Two rows' 16 sums each (s: row 0, t: row 1, the same 16 columns; scale: their scales), requantized per
// table.def (qrequant.h's requant2x16) and stored as nc bytes at c0 and c1.
__attribute__((always_inline)) inline void store2x16(const QCtx& x, __m256i s0, __m256i s1, __m256i t0,
                                                     __m256i t1, const float* scale, uint8_t* c0, uint8_t* c1,
                                                     size_t nc) {
  const avx2::QRequantPair r{_mm256_set1_ps(x.fhi), _mm256_set1_epi16(static_cast<int16_t>(x.zy)),
                             _mm256_set1_epi8(static_cast<char>(x.qmin)),
                             _mm256_set1_epi8(static_cast<char>(x.qmax)), x.out_u8};
  avx2::store_bytes2x16(c0, c1, avx2::requant2x16(r, s0, s1, t0, t1, scale), nc);
}

// A tile's 16 sums of one row (columns of `panel`) to C: requantized int8 (+ the residual row r when x has
// one), or (qd8_gemm) fp32. n0: the panel's first column (qd8_gemm's column sums and bias).
__attribute__((always_inline)) inline void store_out(const QCtx& x, __m256i s0, __m256i s1,
                                                     const uint8_t* panel, size_t n0, size_t row, uint8_t* c,
                                                     size_t nc, const int8_t* r) {
  if (x.rowq) return store16_f32(x, s0, s1, panel, n0, row, c, nc);
  const float* scale = reinterpret_cast<const float*>(panel + kQNR * 4);
  if (x.res) return store16_residual(x, s0, s1, scale, c, nc, r);
  store16(x, s0, s1, scale, c, nc);
}

// The first column of `panel` (qd8_gemm's column sums and bias).
__attribute__((always_inline)) inline size_t panel_column(const QCtx& x, const uint8_t* panel) {
  return static_cast<size_t>(panel - x.panels0) / x.pb * kQNR;
}

// The residual at a tile's first output c = C + row * ldc + its first column (null: no residual).
__attribute__((always_inline)) inline const int8_t* residual_at(const QCtx& x, const uint8_t* c, size_t row) {
  if (!x.res) return nullptr;
  return x.R + row * x.res->ldr + (static_cast<size_t>(c - x.C) - row * x.ldc);
}

// A tile's epilogue walk (tile_one's and the 512-bit tiles'), row pairs down each panel: pair(m, p, scale,
// c_m, c_m+1, nc) requantizes rows m and m + 1 of panel p together where it can (x.pairs, no residual), else
// one(m, p, panel p, its first column n0, row m0 + m, c_m, nc, the row's residual or null) stores each row.
template <int MR, int NP, typename Pair, typename One>
__attribute__((always_inline)) inline void store_tile(const QCtx& x, size_t m0, const uint8_t* panel,
                                                      uint8_t* c, size_t nc, const Pair& pair,
                                                      const One& one) {
  const size_t n0 = x.rowq ? panel_column(x, panel) : 0;  // qd8_gemm only
  const int8_t* rt = residual_at(x, c, m0);  // the tile's first residual row (null: none)
#pragma GCC unroll 16
  for (int m = 0; m < MR; m += 2) {
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      const uint8_t* pp = panel + p * x.pb;
      uint8_t* cm = c + m * x.ldc + p * x.cstep;
      const size_t ncp = p == NP - 1 ? nc : kQNR;
      const int8_t* rm = rt ? rt + m * x.res->ldr + p * kQNR : nullptr;
      if (m + 1 < MR && x.pairs && !rt) {
        pair(m, p, reinterpret_cast<const float*>(pp + kQNR * 4), cm, cm + x.ldc, ncp);
        continue;
      }
      one(m, p, pp, n0 + p * kQNR, m0 + m, cm, ncp, rm);
      if (m + 1 < MR)
        one(m + 1, p, pp, n0 + p * kQNR, m0 + m + 1, cm + x.ldc, ncp, rm ? rm + x.res->ldr : nullptr);
    }
  }
}

// The k loop of a tile: for each tap, its rows into ar, then step(weight group, row group, tail) over the row
// groups (a partial last one with tail set). kRange: only weight groups [gw0, gw1) of the flat order (tap t's
// groups are t * tap_groups + 0 .. tap_groups - 1, the partial one last), for a K block; else all of them.
template <bool kRange, int MR, typename Src, typename Step>
__attribute__((always_inline)) inline void for_each_group(const QCtx& x, const Src& src, size_t m0,
                                                          size_t gw0, size_t gw1, const uint8_t* (&ar)[MR],
                                                          const Step& step) {
  typename Src::template Tile<MR> tl;
  src.start(m0, tl);
  if (!kRange) {
    for (size_t t = 0; t < x.taps; ++t) {
      src.rows(tl, ar);
      const size_t gb = t * x.tap_groups;
      for (size_t g = 0; g < x.groups; ++g) step(gb + g, g, false);
      if (x.krem) step(gb + x.groups, x.groups, true);
    }
    return;
  }
  size_t t = gw0 / x.tap_groups;
  src.seek(tl, t);
  for (size_t gb = t * x.tap_groups; gb < gw1; gb += x.tap_groups) {
    src.rows(tl, ar);
    const size_t hi = min_sz(gw1 - gb, x.tap_groups);
    for (size_t g = gw0 > gb ? gw0 - gb : 0; g < min_sz(hi, x.groups); ++g) step(gb + g, g, false);
    if (x.krem && hi == x.tap_groups) step(gb + x.groups, x.groups, true);
  }
}

// MR rows x NP panels (16 columns each): per row group, acc = mul.add(acc, a, mul.row(a), w) for each row and
// 8 columns (the table's Mul: AVX2's maddubs steps, avx2/qgemm.cc; vpdpbusd, vnni/qgemm_vnni.h).
// a: the tile's first row; panel: its first panel; c: its first output; nc: columns of the last panel.
// kRange (a K block, tile_strip): weight groups [gw0, gw1) only, the sums started from `in` (null: the packed
// bias) and, unless `out` is null, saved there instead of stored to C (MR x 2NP vectors each).
template <int MR, int NP, bool kFlip, typename Mul, bool kRange, typename Src>
__attribute__((always_inline)) inline void tile_one(const QCtx& x, const Src& src, size_t m0,
                                                    const uint8_t* panel, uint8_t* c, size_t nc, size_t gw0,
                                                    size_t gw1, const __m256i* in, __m256i* out) {
  __m256i acc[MR][2 * NP];
  const int8_t* w[NP];
#pragma GCC unroll 4
  for (int p = 0; p < NP; ++p) {
    const uint8_t* pp = panel + p * x.pb;
    const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(pp));
    const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(pp + 32));
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      acc[m][2 * p] = kRange && in ? in[m * 2 * NP + 2 * p] : b0;
      acc[m][2 * p + 1] = kRange && in ? in[m * 2 * NP + 2 * p + 1] : b1;
    }
    w[p] = reinterpret_cast<const int8_t*>(pp + kQNR * 8);
  }
  const Mul mul;
  const uint8_t* ar[MR];
  // Row group ga of the rows, weight group gw.
  const auto step = [&](size_t gw, size_t ga, bool tail) __attribute__((always_inline)) {
    __m256i w0[NP], w1[NP];
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      w0[p] = _mm256_load_si256(reinterpret_cast<const __m256i*>(w[p] + gw * 64));
      w1[p] = _mm256_load_si256(reinterpret_cast<const __m256i*>(w[p] + gw * 64 + 32));
    }
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m256i va = row_group<kFlip>(x, ar[m], ga, tail);
      const __m256i ua = mul.row(va);
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) {
        acc[m][2 * p] = mul.add(acc[m][2 * p], va, ua, w0[p]);
        acc[m][2 * p + 1] = mul.add(acc[m][2 * p + 1], va, ua, w1[p]);
      }
    }
  };
  for_each_group<kRange>(x, src, m0, gw0, gw1, ar, step);
  if (kRange && out) {
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
      for (int j = 0; j < 2 * NP; ++j) out[m * 2 * NP + j] = acc[m][j];
    return;
  }
  store_tile<MR, NP>(
      x, m0, panel, c, nc,
      [&](int m, int p, const float* scale, uint8_t* c0, uint8_t* c1, size_t n)
          __attribute__((always_inline)) {
            store2x16(x, acc[m][2 * p], acc[m][2 * p + 1], acc[m + 1][2 * p], acc[m + 1][2 * p + 1], scale,
                      c0, c1, n);
          },
      [&](int m, int p, const uint8_t* pp, size_t n0, size_t row, uint8_t* cm, size_t n, const int8_t* r)
          __attribute__((always_inline)) {
            store_out(x, acc[m][2 * p], acc[m][2 * p + 1], pp, n0, row, cm, n, r);
          });
}

// tile_one, or the Mul's own tile where it has one (Mul::kZmm: the AVX512-VNNI table's 512-bit tiles,
// vnni/qgemm_zmm.h; `first`: the first tile to read these weights, which the 512-bit tiles prefetch).
template <int MR, int NP, bool kFlip, typename Mul, bool kRange, typename Src>
__attribute__((always_inline)) inline void tile_any(const QCtx& x, const Src& src, size_t m0,
                                                    const uint8_t* panel, uint8_t* c, size_t nc, size_t gw0,
                                                    size_t gw1, const __m256i* in, __m256i* out, bool first) {
  if constexpr (Mul::kZmm) {
    Mul::template tile<MR, NP, kFlip, kRange>(x, src, m0, panel, c, nc, gw0, gw1, in, out, first);
  } else {
    tile_one<MR, NP, kFlip, Mul, kRange>(x, src, m0, panel, c, nc, gw0, gw1, in, out);
  }
}

// `tiles` tiles of MR rows down the same panels, from row m0 (c: its output) in one call: the call, the
// stack frame and the loop set-up are paid once per column strip, not per tile (at K = 16..32, MobileNetV2's
// first 1x1 convs, a tile's k loop is only 4..8 row groups).
// Long K (a strip of more than 1.5 x kQBlockBytes of weights, kQBlockBytesZmm on the 512-bit tiles, e.g.
// ResNet-50 3x3x512 convs: 2 x 73 KB) runs in K blocks of at most that many bytes of weights: per group of up
// to kQBlockTiles tiles, every tile sums one block, its int32 sums parked in `part` between blocks, so each
// block is read from L2 once per tile group and then from L1 (full K per tile reads the whole strip from L2
// for every tile, which ran at 80-98 GOP/s instead of 110-120 at times on this shared machine). Same sums in
// the same order, so the same bits; a lone tile has nothing to share and runs full K.
template <int MR, int NP, bool kFlip, typename Mul, typename Src>
void tile_strip(const QCtx& x, const Src& src, size_t m0, size_t tiles, const uint8_t* panel, uint8_t* c,
                size_t nc) {
  const size_t total = x.taps * x.tap_groups;
  const size_t block = (Mul::kZmm ? kQBlockBytesZmm : kQBlockBytes) / (NP * kQNR * 4);
  if (tiles < 2 || 2 * total <= 3 * block) {
    for (size_t t = 0; t < tiles; ++t)
      tile_any<MR, NP, kFlip, Mul, false>(x, src, m0 + t * MR, panel, c + t * MR * x.ldc, nc, 0, 0, nullptr,
                                          nullptr, t == 0);
    return;
  }
  constexpr size_t kVecs = MR * 2 * NP;  // one tile's sums
  __m256i part[kQBlockTiles * kVecs];
  const size_t blocks = div_up(total, block);
  for (size_t t0 = 0; t0 < tiles; t0 += kQBlockTiles) {
    const size_t nt = min_sz(kQBlockTiles, tiles - t0);
    for (size_t b = 0; b < blocks; ++b) {
      const size_t gw0 = total * b / blocks, gw1 = total * (b + 1) / blocks;
      for (size_t t = 0; t < nt; ++t)
        tile_any<MR, NP, kFlip, Mul, true>(x, src, m0 + (t0 + t) * MR, panel, c + (t0 + t) * MR * x.ldc, nc,
                                           gw0, gw1, b ? part + t * kVecs : nullptr,
                                           b + 1 < blocks ? part + t * kVecs : nullptr, t == 0);
    }
  }
}

// MR rows x 16 columns, 16-bit path (any weights, -128 included): per row group, the 4 activations as int16
// broadcast to every 64-bit lane, the weights sign-extended to int16 (4 columns x 4 k per vector), vpmaddwd
// into 4 accumulators per row holding 2 partial sums per column; vphaddd + vpermq reduce them at the end.
template <int MR, bool kFlip, typename Src>
void tile_wide(const QCtx& x, const Src& src, size_t m0, const uint8_t* panel, uint8_t* c, size_t nc) {
  __m256i acc[MR][4];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) acc[m][q] = _mm256_setzero_si256();
  const int8_t* w = reinterpret_cast<const int8_t*>(panel + kQNR * 8);
  const uint8_t* ar[MR];
  const auto step = [&](size_t gw, size_t ga, bool tail) __attribute__((always_inline)) {
    __m256i w16[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q)
      w16[q] = _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(w + gw * 64 + q * 16)));
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m128i a8 = _mm256_castsi256_si128(row_group<kFlip>(x, ar[m], ga, tail));
      const __m256i va = _mm256_broadcastq_epi64(_mm_cvtepi8_epi16(a8));
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) acc[m][q] = _mm256_add_epi32(acc[m][q], _mm256_madd_epi16(va, w16[q]));
    }
  };
  for_each_group<false>(x, src, m0, 0, 0, ar, step);
  const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(panel));
  const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(panel + 32));
  const size_t n0 = x.rowq ? panel_column(x, panel) : 0;  // qd8_gemm only
  const int8_t* rt = residual_at(x, c, m0);
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    // hadd lanes: [c0 c1 c4 c5 | c2 c3 c6 c7] -> vpermq 0, 2, 1, 3.
    const __m256i s0 = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[m][0], acc[m][1]), 0xD8);
    const __m256i s1 = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[m][2], acc[m][3]), 0xD8);
    store_out(x, _mm256_add_epi32(s0, b0), _mm256_add_epi32(s1, b1), panel, n0, m0 + m, c + m * x.ldc, nc,
              rt ? rt + m * x.res->ldr : nullptr);
  }
}

// The last rows of a column strip, fewer than a whole tile (r < MR + 1): one tile of r rows.
template <int MR, int NP, bool kFlip, typename Mul, typename Src>
void tile_rest(const QCtx& x, const Src& src, size_t m0, size_t r, const uint8_t* panel, uint8_t* c,
               size_t nc) {
  if constexpr (MR > 0) {
    if (r == MR) return tile_strip<MR, NP, kFlip, Mul>(x, src, m0, 1, panel, c, nc);
    tile_rest<MR - 1, NP, kFlip, Mul>(x, src, m0, r, panel, c, nc);
  }
}

// Rows [m0, m1) x panels [p0, p1): pairs of panels in tiles of P::kMR2 rows x 32 columns, a lone last panel in
// tiles of P::kMR1 rows x 16, a single row (GEMV) in 1 x 64 tiles; kWide weights (P::kWide tables only) on
// tile_wide.
template <typename P, bool kFlip, typename Mul, typename Src>
void run_block(const QCtx& x, const Src& src, size_t m0, size_t m1, size_t p0, size_t p1) {
  uint8_t* c0 = x.C + m0 * x.ldc;
  const size_t rows = m1 - m0;
  if constexpr (P::kWide) {
    if (x.wide) {
      for (size_t p = p0; p < p1; ++p) {
        const uint8_t* panel = x.panels0 + p * x.pb;
        const size_t nc = min_sz(kQNR, x.N - p * kQNR);
        size_t m = 0;
        for (; m + 2 <= rows; m += 2)
          tile_wide<2, kFlip>(x, src, m0 + m, panel, c0 + m * x.ldc + p * x.cstep, nc);
        if (m < rows) tile_wide<1, kFlip>(x, src, m0 + m, panel, c0 + m * x.ldc + p * x.cstep, nc);
      }
      return;
    }
  }
  if (rows == 1) {  // GEMV: 4 panels at a time
    size_t p = p0;
    for (; p + 4 <= p1; p += 4) {
      tile_strip<1, 4, kFlip, Mul>(x, src, m0, 1, x.panels0 + p * x.pb, c0 + p * x.cstep,
                                   min_sz(kQNR, x.N - (p + 3) * kQNR));
    }
    for (; p < p1; ++p)
      tile_strip<1, 1, kFlip, Mul>(x, src, m0, 1, x.panels0 + p * x.pb, c0 + p * x.cstep,
                                   min_sz(kQNR, x.N - p * kQNR));
    return;
  }
  constexpr int kMR2 = P::kMR2, kMR1 = P::kMR1;
  size_t p = p0;
  for (; p + 2 <= p1; p += 2) {
    const uint8_t* panel = x.panels0 + p * x.pb;
    const size_t nc = min_sz(kQNR, x.N - (p + 1) * kQNR);
    const size_t m = rows / kMR2 * kMR2;
    tile_strip<kMR2, 2, kFlip, Mul>(x, src, m0, rows / kMR2, panel, c0 + p * x.cstep, nc);
    tile_rest<kMR2 - 1, 2, kFlip, Mul>(x, src, m0 + m, rows - m, panel, c0 + m * x.ldc + p * x.cstep, nc);
  }
  for (; p < p1; ++p) {
    const uint8_t* panel = x.panels0 + p * x.pb;
    const size_t nc = min_sz(kQNR, x.N - p * kQNR);
    const size_t m = rows / kMR1 * kMR1;
    tile_strip<kMR1, 1, kFlip, Mul>(x, src, m0, rows / kMR1, panel, c0 + p * x.cstep, nc);
    tile_rest<kMR1 - 1, 1, kFlip, Mul>(x, src, m0 + m, rows - m, panel, c0 + m * x.ldc + p * x.cstep, nc);
  }
}

// A compile-time flag for P::select's callback.
template <bool B>
struct Flag {
  static constexpr bool value = B;
};

// run_block with the activation flip and the Mul that P picks for this packed buffer (P::select calls
// f(Flag<flip>, Mul) once).
template <typename P, typename Src>
void run_block_src(const QCtx& x, const Src& src, size_t m0, size_t m1, size_t p0, size_t p1) {
  P::select(x, [&](auto flip, auto mul) {
    run_block<P, decltype(flip)::value, decltype(mul)>(x, src, m0, m1, p0, p1);
  });
}

// dst[0, n) = src[0, n) ^ 0x80: s8 activations as the u8 ones vpdpbusd multiplies.
inline void flip_bytes(const uint8_t* src, uint8_t* dst, size_t n) {
  const __m256i f = _mm256_set1_epi8(static_cast<char>(0x80));
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_xor_si256(v, f));
  }
  for (; i < n; ++i) dst[i] = src[i] ^ 0x80;
}

// p - off as a pointer, without pointer arithmetic outside p's block: a base that only in-block offsets
// (>= off) are ever added to.
inline const uint8_t* rebase(const uint8_t* p, size_t off) {
  return reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(p) - off);
}

// run_block_src for s8 activations of a GEMM on a P::kCopyRows table (the 512-bit tiles, where an xor per
// broadcast row group takes a third of the vpdpbusd issue slots): rows [m0, m1) are flipped to u8 once, into
// this thread's scratch, and the tiles run unflipped on that copy. The same bytes in the same order, so the
// same sums.
template <typename P>
void run_block_flipped(const QCtx& x0, size_t m0, size_t m1, size_t p0, size_t p1) {
  QCtx x = x0;
  x.flip = false;
  const size_t K = x0.K;
  uint8_t* buf = static_cast<uint8_t*>(internal::scratch(internal::Scratch::kQRows, (m1 - m0) * K + 64));
  for (size_t m = m0; m < m1; ++m) flip_bytes(x0.A + m * x0.lda, buf + (m - m0) * K, K);
  run_block_src<P>(x, GemmRows{rebase(buf, m0 * K), K}, m0, m1, p0, p1);
}

// run_block_src for a convolution (groups 1) on a P::kCopyRows table: the input rows that the output pixels
// [m0, m1) read, copied into this thread's scratch with the padding written out as the input zero point (and
// s8 activations flipped to u8 on the way, as run_block_flipped), then PaddedRows over the copy. A filter row
// whose taps are contiguous in the copy (dilation_w 1, and C a multiple of 4 or the packing's merged rows:
// the same packed bytes either way) is one tap of kw * C bytes. Each output pixel reads the same bytes as
// through ConvRows, in the same order: the same sums. False (nothing run) for more than 64 taps.
template <typename P>
bool run_block_padded(const QCtx& x0, size_t m0, size_t m1, size_t p0, size_t p1) {
  const QConvGeom& g = *x0.conv;
  const ConvParams& p = g.p;
  const bool merge = p.dilation_w == 1 && (g.t.merged || g.C % 4 == 0);
  const size_t kh = p.kernel_h, kw = p.kernel_w, taps = merge ? kh : kh * kw;
  const size_t C = g.C, Hp = g.H + p.pad_top + p.pad_bottom, Wp = g.W + p.pad_left + p.pad_right;
  const auto reach = [](size_t out, size_t stride, size_t k, size_t dil) {
    return (out - 1) * stride + (k - 1) * dil + 1;
  };
  if (taps > 64 || reach(g.OH, p.stride_h, kh, p.dilation_h) > Hp ||
      reach(g.OW, p.stride_w, kw, p.dilation_w) > Wp)
    return false;  // (an output that reads past the padding: ConvRows' bounds checks)
  const size_t plane = g.OH * g.OW, row = Wp * C;
  // Padded rows (image n, row yp) as q = n * Hp + yp: from the first pixel's top tap row to the last one's
  // bottom row.
  const size_t first = m0 / plane * Hp + m0 % plane / g.OW * p.stride_h;
  const size_t last =
      (m1 - 1) / plane * Hp + (m1 - 1) % plane / g.OW * p.stride_h + (kh - 1) * p.dilation_h + 1;
  uint8_t* buf =
      static_cast<uint8_t*>(internal::scratch(internal::Scratch::kQRows, (last - first) * row + 64));
  const uint8_t z = static_cast<uint8_t>(g.zero_row[0] ^ (x0.flip ? 0x80 : 0));
  for (size_t q = first; q < last; ++q) {
    uint8_t* dst = buf + (q - first) * row;
    const size_t n = q / Hp, iy = q % Hp - p.pad_top;  // unsigned: wraps past H in the top padding
    if (iy >= g.H) {
      std::memset(dst, z, row);
      continue;
    }
    const uint8_t* src = x0.A + (n * g.H + iy) * g.W * C;
    std::memset(dst, z, p.pad_left * C);
    if (x0.flip) {
      flip_bytes(src, dst + p.pad_left * C, g.W * C);
    } else {
      std::memcpy(dst + p.pad_left * C, src, g.W * C);
    }
    std::memset(dst + (p.pad_left + g.W) * C, z, p.pad_right * C);
  }
  size_t tap_off[64];
  for (size_t t = 0; t < taps; ++t) {
    const size_t ky = merge ? t : t / kw, kx = merge ? 0 : t % kw;
    tap_off[t] = (ky * p.dilation_h * Wp + kx * p.dilation_w) * C;
  }
  QCtx x = x0;
  x.flip = false;
  if (merge) {
    x.taps = kh;
    x.tap_groups = div_up(kw * C, 4);
  }
  // A tap's partial last row group is read whole: its extra bytes (the next pixel's, or the copy's slack)
  // meet the packed weights' zero padding, and no tile assembles a tail byte by byte.
  x.groups = x.tap_groups;
  x.krem = 0;
  const PaddedRows src{rebase(buf, first * row), Hp, Wp, C, g.OH, g.OW, p.stride_h, p.stride_w, tap_off};
  run_block_src<P>(x, src, m0, m1, p0, p1);
  return true;
}

// Units are (M chunk, N group) pairs, M chunk fastest; a task runs a contiguous range of them.
template <typename P>
void qgemm_task(const void* vctx, size_t task) {
  const QCtx& x = *static_cast<const QCtx*>(vctx);
  const size_t units = x.m_chunks * x.n_groups;
  const size_t u0 = units * task / x.tasks, u1 = units * (task + 1) / x.tasks;
  for (size_t u = u0; u < u1; ++u) {
    const size_t mc = u % x.m_chunks, ngi = u / x.m_chunks;
    const size_t m0 = x.M * mc / x.m_chunks, m1 = x.M * (mc + 1) / x.m_chunks;
    const size_t tiles = div_up(x.panels, x.pstep);
    const size_t p0 = min_sz(x.panels, tiles * ngi / x.n_groups * x.pstep);
    const size_t p1 = min_sz(x.panels, tiles * (ngi + 1) / x.n_groups * x.pstep);
    if (m1 <= m0 || p1 <= p0) continue;
    if constexpr (P::kCopyRows) {
      if (x.conv && x.conv->p.groups == 1 && run_block_padded<P>(x, m0, m1, p0, p1)) continue;
      if (!x.conv && x.flip) {
        run_block_flipped<P>(x, m0, m1, p0, p1);
        continue;
      }
    }
    if (x.conv && x.conv->t.merged) {
      run_block_src<P>(x, ConvRows<true>{*x.conv, x.A}, m0, m1, p0, p1);
    } else if (x.conv) {
      run_block_src<P>(x, ConvRows<false>{*x.conv, x.A}, m0, m1, p0, p1);
    } else {
      run_block_src<P>(x, GemmRows{x.A, x.lda}, m0, m1, p0, p1);
    }
  }
}

// The one driver of qgemm and qconv2d. K: the packed K (taps x C rounded up to 4 for a convolution).
// rowq (qd8_gemm): C is fp32 with row stride ldc floats, clamped to [flo, fhi]; else int8 (out_min, out_max).
// res (qgemm_residual, qconv2d_residual; null: none): C = qadd(the int8 product, R).
template <typename P>
void qrun(size_t M, size_t N, size_t K, const QConvGeom* conv, const void* A, size_t lda, const void* packed,
          void* C, size_t ldc, int32_t out_min, int32_t out_max, const RowQuant* rowq, float flo, float fhi,
          Parallel& par, const QResidual* res = nullptr, const int8_t* R = nullptr) {
  if (M == 0 || N == 0) return;
  const QGemmRun run = qgemm_run_params(packed, K, out_min, out_max);
  const QGemmHeader& h = run.h;
  QCtx x;
  x.M = M;
  x.N = N;
  x.K = K;
  x.lda = lda;
  x.ldc = rowq ? ldc * 4 : ldc;
  x.cstep = rowq ? kQNR * 4 : kQNR;
  x.rowq = rowq;
  x.res = res;
  x.R = R;
  x.res_dz = res ? h.out_zero_point - res->za : 0;
  x.cols = rowq ? qd8_columns(packed, K, N) : Qd8Columns{nullptr, nullptr};
  x.panels = div_up(N, kQNR);
  x.conv = conv;
  const size_t row_k = conv ? conv->t.row_k : K;  // bytes read per row and tap
  x.taps = conv ? conv->t.taps : 1;
  x.tap_groups = div_up(row_k, 4);
  x.groups = row_k / 4;
  x.krem = row_k % 4;
  x.pb = run.panel_bytes;
  x.A = static_cast<const uint8_t*>(A);
  x.panels0 = static_cast<const uint8_t*>(packed) + kQHeaderBytes;
  x.C = static_cast<uint8_t*>(C);
  x.out_u8 = h.out_type == QType::kU8;
  x.flo = rowq ? flo : run.lo;
  x.fhi = rowq ? fhi : run.hi;
  x.zy = h.out_zero_point;
  x.qmin = static_cast<int32_t>(run.lo) + x.zy;
  x.qmax = static_cast<int32_t>(run.hi) + x.zy;
  x.pairs = !rowq && x.zy >= -512 && x.zy <= 512 && x.qmin <= x.qmax;
  x.flip = h.a_shift != 0;
  x.wide = h.path == QPath::kWide;
  x.small = h.path == QPath::kSmall;
  // The split: M chunks of <= kQMC rows, then more chunks or N groups until there are a few units per thread.
  // Any split gives the same bits (exact int32 sums).
  const size_t threads = internal::parallel_threads(par);
  const double macs = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K + 1);
  const size_t want = threads > 1 && macs > 4e5 ? threads * 4 : 1;
  // Weight-heavy products (N > M: FC layers at small batch) split N first, so each core reads only its share
  // of the weights; the rest split M, keeping output rows on one core.
  x.m_chunks = M == 1 ? 1 : div_up(M, kQMC);
  x.n_groups = 1;
  x.pstep = M == 1 && !x.wide ? 4 : 1;
  const size_t max_groups = div_up(x.panels, x.pstep);
  if (N > M) {
    while (x.m_chunks * x.n_groups < want && x.n_groups < max_groups) ++x.n_groups;
  }
  while (x.m_chunks * x.n_groups < want && M / (x.m_chunks * 2) >= 16) x.m_chunks *= 2;
  while (x.m_chunks * x.n_groups < want && x.n_groups < max_groups) ++x.n_groups;
  x.tasks = min_sz(want, x.m_chunks * x.n_groups);
  if (x.tasks > 1) return internal::parallel_run(par, x.tasks, qgemm_task<P>, &x);
  qgemm_task<P>(&x, 0);
}

template <typename P>
void qgemm_run(size_t M, size_t N, size_t K, const void* A, size_t lda, const void* packed, void* C,
               size_t ldc, int32_t out_min, int32_t out_max, Parallel& par) {
  qrun<P>(M, N, K, nullptr, A, lda, packed, C, ldc, out_min, out_max, nullptr, 0.f, 0.f, par);
}

template <typename P>
void qgemm_residual_run(size_t M, size_t N, size_t K, const void* A, size_t lda, const void* packed,
                        const int8_t* R, size_t ldr, void* C, size_t ldc, int32_t out_min, int32_t out_max,
                        const QElemParams& add, Parallel& par) {
  const QResidual res(ldr, add);
  qrun<P>(M, N, K, nullptr, A, lda, packed, C, ldc, out_min, out_max, nullptr, 0.f, 0.f, par, &res, R);
}

// qconv2d, or (res not null) qconv2d_residual: R is the dense residual, like out (rows G * OC apart).
template <typename P>
void qconv2d_run(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH, size_t OW,
                 const void* packed, void* out, int32_t out_min, int32_t out_max, Parallel& par,
                 const QResidual* res = nullptr, const int8_t* R = nullptr) {
  const size_t G = p.groups, K = qconv2d_packed_k(p), OC = p.group_output_channels;
  // Aggregate-initialized: copying p, not default-constructing a ConvParams (whose constructor, unoptimized,
  // would be a weak symbol shared with other TUs: see ODR above).
  QConvGeom g{H, W, p.group_input_channels, OH, OW, G * p.group_input_channels, p, qconv2d_taps(p), nullptr};
  // A pointwise conv (1x1, stride 1, no padding) is a plain GEMM over the NHWC pixel rows (lda: the input's
  // channels), K = C unpadded (the panels are the same: one tap): no per-tile pixel divisions, no tap pointers.
  // That is 3/4 of MobileNetV2's int8 time, often with K = 16..32, where those per-tile costs showed.
  const bool pointwise = p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 &&
                         p.pad_top == 0 && p.pad_left == 0 && OH == H && OW == W;
  // One IGEMM per group, each split over the threads (grouped convs are rare and have few groups: the
  // depthwise-like ones, one input channel per group, run on qdwconv2d).
  for (size_t gi = 0; gi < G; ++gi) {
    const uint8_t* gpacked = static_cast<const uint8_t*>(packed) + gi * qconv2d_group_bytes(p);
    g.zero_row = gpacked + qgemm_layout_bytes(K, OC);
    const uint8_t* gin = static_cast<const uint8_t*>(in) + gi * g.C;
    uint8_t* gout = static_cast<uint8_t*>(out) + gi * OC;
    const int8_t* gr = res ? R + gi * OC : nullptr;  // the group's columns of the residual
    if (pointwise) {
      qrun<P>(N * H * W, OC, g.C, nullptr, gin, g.in_stride, gpacked, gout, G * OC, out_min, out_max, nullptr,
              0.f, 0.f, par, res, gr);
    } else {
      qrun<P>(N * OH * OW, OC, K, &g, gin, 0, gpacked, gout, G * OC, out_min, out_max, nullptr, 0.f, 0.f, par,
              res, gr);
    }
  }
}

template <typename P>
void qconv2d_residual_run(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH,
                          size_t OW, const void* packed, const int8_t* R, void* out, int32_t out_min,
                          int32_t out_max, const QElemParams& add, Parallel& par) {
  const QResidual res(size_t{p.groups} * p.group_output_channels, add);
  qconv2d_run<P>(p, N, H, W, in, OH, OW, packed, out, out_min, out_max, par, &res, R);
}

template <typename P>
void qd8_gemm_run(size_t M, size_t N, size_t K, const int8_t* A, size_t lda, const RowQuant* aq,
                  const void* packed, float* C, size_t ldc, float out_min, float out_max, Parallel& par) {
  qrun<P>(M, N, K, nullptr, A, lda, packed, C, ldc, -128, 127, aq, out_min, out_max, par);
}

}  // namespace
}  // namespace qtiles
}  // namespace webxnn
