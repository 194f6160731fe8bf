// The AVX512-VNNI table's 512-bit int8 tiles (avx512vnni.cc only): qgemm_tiles.h's tile_one with one zmm
// accumulator per row and panel. A packed panel's row group is 16 columns x 4 bytes = 64 bytes (qgemm_layout.h),
// exactly one zmm of vpdpbusd operands, so the panels are read as they are and one vpdpbusd does what two ymm
// ones do. On Intel servers (two 512-bit FMA ports) that doubles the int8 rate: 12 independent ymm vpdpbusd
// chains sampled 373 GOP/s on one core of this machine's Xeon (Emerald Rapids), zmm ones twice that.
//
// Per row group: one 4-byte broadcast per row, one 64-byte load per panel, MR x NP vpdpbusd. s8 activations
// (QCtx::flip: a' = a ^ 0x80, the shift qgemm_layout.h folds into the bias) arrive flipped already, in
// qgemm_tiles.h's copy of the rows a unit reads (P::kCopyRows); only grouped convolutions flip in the tile, one
// vpxord per broadcast. The sums are the ymm tiles' sums in the same order per lane, so every table gives the
// same bits. The epilogue walk is qgemm_tiles.h's store_tile, on the zmm epilogues below.
#pragma once

#include <immintrin.h>

#include "kernels/avx2/qgemm_tiles.h"

namespace webxnn {
namespace vnni {
namespace {

// Row group g of a as 16 lanes of the same 4 bytes (kFlip: ^ 0x80); a partial last group through
// qgemm_tiles.h's row_group (no reads past K).
template <bool kFlip>
__attribute__((always_inline)) inline __m512i row_group16(const qtiles::QCtx& x, const uint8_t* a, size_t g,
                                                          bool tail) {
  if (tail) return _mm512_broadcastd_epi32(_mm256_castsi256_si128(qtiles::row_group<kFlip>(x, a, g, true)));
  int32_t u;
  __builtin_memcpy(&u, a + 4 * g, 4);
  const __m512i v = _mm512_set1_epi32(u);
  return kFlip ? _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80))) : v;
}

// The epilogues on whole zmm rows (16 columns per vector), the same arithmetic as qgemm_tiles.h's ymm ones
// (requant2x16, store16_residual) in half the instructions, with masked stores for a partial last panel.
// They matter where K is short (ResNet-50's 1x1 convs, K = 64..256: 16..64 vpdpbusd per row and panel) and
// most in the residual steps: with them and the flip once per unit, ResNet-50 int8's 16 conv + residual add
// steps took 3.8 ms (1 thread, Program.profile), 9.3 before.

// Rows m and m + 1 of one panel (a, b), requantized as qrequant.h's requant2x16 (x.pairs: v clamped to hi in
// fp32, rint, + zy in saturating int16, the packs, then [qmin, qmax] on the bytes), nc bytes stored at c0, c1.
__attribute__((always_inline)) inline void store2x16_zmm(const qtiles::QCtx& x, __m512i a, __m512i b,
                                                         const float* scale, uint8_t* c0, uint8_t* c1,
                                                         size_t nc) {
  const __m512 sc = _mm512_loadu_ps(scale), hi = _mm512_set1_ps(x.fhi);
  const __m512i ra = _mm512_cvtps_epi32(_mm512_min_ps(hi, _mm512_mul_ps(_mm512_cvtepi32_ps(a), sc)));
  const __m512i rb = _mm512_cvtps_epi32(_mm512_min_ps(hi, _mm512_mul_ps(_mm512_cvtepi32_ps(b), sc)));
  // Per 128-bit lane j: a's columns 4j..4j+3 then b's, int16; then bytes, twice over.
  const __m512i p16 =
      _mm512_adds_epi16(_mm512_packs_epi32(ra, rb), _mm512_set1_epi16(static_cast<int16_t>(x.zy)));
  const __m512i p8 = x.out_u8 ? _mm512_packus_epi16(p16, p16) : _mm512_packs_epi16(p16, p16);
  // Lane j's dwords: [a 4j.., b 4j.., a, b]: gather a's four dwords, then b's.
  __m256i v = _mm512_castsi512_si256(
      _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0), p8));
  const __m256i lo8 = _mm256_set1_epi8(static_cast<char>(x.qmin)),
                hi8 = _mm256_set1_epi8(static_cast<char>(x.qmax));
  v = x.out_u8 ? _mm256_min_epu8(_mm256_max_epu8(v, lo8), hi8)
               : _mm256_min_epi8(_mm256_max_epi8(v, lo8), hi8);
  const __mmask16 k = static_cast<__mmask16>((1u << nc) - 1);
  _mm_mask_storeu_epi8(c0, k, _mm256_castsi256_si128(v));
  _mm_mask_storeu_epi8(c1, k, _mm256_extracti128_si256(v, 1));
}

// A product that the compiler may not contract into an FMA with the addition after it (qadd.h's rounded).
__attribute__((always_inline)) inline __m512 rounded16(__m512 v) {
  __asm__("" : "+v"(v));
  return v;
}

// qgemm_tiles.h's store16_residual on one zmm row: the product requantized to its own int8 values (kept as
// fp32 y - za), then qadd.h's AddV and QElemRequant arithmetic with the residual's r[0, nc), nc bytes stored.
// The constants are the ymm ones' lanes, widened once per tile.
struct ResidualZmm {
  __m512 lo, hi, dz, ma, mb, elo, ehi;
  __m512i zb, zy;
  __m128i lo8, hi8;
  bool in_int;
  explicit ResidualZmm(const qtiles::QCtx& x) {
    const qtiles::QResidual& r = *x.res;
    const auto wide = [](__m256 v) { return _mm512_set1_ps(_mm256_cvtss_f32(v)); };
    lo = _mm512_set1_ps(x.flo);
    hi = _mm512_set1_ps(x.fhi);
    dz = _mm512_set1_ps(static_cast<float>(x.res_dz));
    ma = wide(r.add.ma);
    mb = wide(r.add.mb);
    zb = _mm512_set1_epi32(_mm256_cvtsi256_si32(r.add.zb));
    elo = wide(r.rq.lo);
    ehi = wide(r.rq.hi);
    zy = _mm512_set1_epi32(_mm256_cvtsi256_si32(r.rq.zy));
    lo8 = r.rq.lo8;
    hi8 = r.rq.hi8;
    in_int = r.rq.in_int;
  }
  __attribute__((always_inline)) void store(__m512i s, const float* scale, uint8_t* c, size_t nc,
                                            const int8_t* r) const {
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(s), _mm512_loadu_ps(scale));
    f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);  // max first: a NaN gives lo, as requant16
    const __m512 a =
        _mm512_add_ps(_mm512_roundscale_ps(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), dz);
    const __mmask16 k = static_cast<__mmask16>((1u << nc) - 1);
    const __m512i b = _mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, r)), zb);
    __m512 v =
        _mm512_add_ps(rounded16(_mm512_mul_ps(a, ma)), rounded16(_mm512_mul_ps(_mm512_cvtepi32_ps(b), mb)));
    if (!in_int) v = _mm512_min_ps(_mm512_max_ps(v, elo), ehi);
    __m128i y = _mm512_cvtsepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), zy));  // = the two packs
    if (in_int) y = _mm_min_epi8(_mm_max_epi8(y, lo8), hi8);
    _mm_mask_storeu_epi8(c, k, y);
  }
};

// The Mul of the 512-bit tiles: qgemm_tiles.h's tile_one hands the whole tile to tile() (kZmm).
struct ZmmDotMul {
  static constexpr bool kZmm = true;

  // qgemm_tiles.h's tile_one contract (MR rows x NP panels from row m0; kRange: weight groups [gw0, gw1)
  // from the sums `in`, saved to `out` unless null), on zmm accumulators. in / out hold a tile's sums as
  // MR x 2NP ymm (row m, panel p: its 16 columns' two halves), which is one zmm per row and panel.
  template <int MR, int NP, bool kFlip, bool kRange, typename Src>
  __attribute__((always_inline)) static void tile(const qtiles::QCtx& x, const Src& src, size_t m0,
                                                  const uint8_t* panel, uint8_t* c, size_t nc, size_t gw0,
                                                  size_t gw1, const __m256i* in, __m256i* out, bool first) {
    __m512i acc[MR][NP];
    const int8_t* w[NP];
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      const uint8_t* pp = panel + p * x.pb;
      const __m512i b = _mm512_loadu_si512(pp);
#pragma GCC unroll 16
      for (int m = 0; m < MR; ++m) acc[m][p] = kRange && in ? _mm512_loadu_si512(in + (m * NP + p) * 2) : b;
      w[p] = reinterpret_cast<const int8_t*>(pp + kQNR * 8);
    }
    const uint8_t* ar[MR];
    const auto step = [&](size_t gw, size_t ga, bool tail) __attribute__((always_inline)) {
      __m512i wv[NP];
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) {
        wv[p] = _mm512_loadu_si512(w[p] + gw * 64);
        // The first tile down a strip (or of a K block's group) reads the weights from L2 or L3, the others
        // from L1: it fetches 16 row groups ahead. ResNet-50 int8's 7x7x512 3x3 convs 0.52 -> 0.42 ms each.
        if (first) _mm_prefetch(reinterpret_cast<const char*>(w[p] + (gw + 16) * 64), _MM_HINT_T0);
      }
#pragma GCC unroll 16
      for (int m = 0; m < MR; ++m) {
        const __m512i va = row_group16<kFlip>(x, ar[m], ga, tail);
#pragma GCC unroll 4
        for (int p = 0; p < NP; ++p) acc[m][p] = _mm512_dpbusd_epi32(acc[m][p], va, wv[p]);
      }
    };
    qtiles::for_each_group<kRange>(x, src, m0, gw0, gw1, ar, step);
    if (kRange && out) {
#pragma GCC unroll 16
      for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
        for (int p = 0; p < NP; ++p) _mm512_storeu_si512(out + (m * NP + p) * 2, acc[m][p]);
      return;
    }
    // Rows in pairs (store2x16_zmm) or, for qd8_gemm's fp32 out and a lone last row, through qgemm_tiles.h's
    // store_out on the accumulator's two halves; rows with a residual on ResidualZmm.
    const auto pair =
        [&](int m, int p, const float* scale, uint8_t* c0, uint8_t* c1, size_t n)
            __attribute__((always_inline)) { store2x16_zmm(x, acc[m][p], acc[m + 1][p], scale, c0, c1, n); };
    if (x.res) {
      const ResidualZmm rz(x);
      return qtiles::store_tile<MR, NP>(
          x, m0, panel, c, nc, pair,
          [&](int m, int p, const uint8_t* pp, size_t, size_t, uint8_t* cm, size_t n, const int8_t* r)
              __attribute__((always_inline)) {
                rz.store(acc[m][p], reinterpret_cast<const float*>(pp + kQNR * 4), cm, n, r);
              });
    }
    qtiles::store_tile<MR, NP>(
        x, m0, panel, c, nc, pair,
        [&](int m, int p, const uint8_t* pp, size_t n0, size_t row, uint8_t* cm, size_t n, const int8_t*)
            __attribute__((always_inline)) {
              qtiles::store_out(x, _mm512_castsi512_si256(acc[m][p]), _mm512_extracti64x4_epi64(acc[m][p], 1),
                                pp, n0, row, cm, n, nullptr);
            });
  }
};

// peak_loop's vector ops (qgemm_vnni.h) on zmm.
struct ZmmOps {
  using Vec = __m512i;
  static Vec bytes(char b) { return _mm512_set1_epi8(b); }
  static Vec lanes(int32_t v) { return _mm512_set1_epi32(v); }
  static Vec dot(Vec acc, Vec a, Vec w) { return _mm512_dpbusd_epi32(acc, a, w); }
  static Vec add(Vec a, Vec b) { return _mm512_add_epi32(a, b); }
  static int32_t first(Vec v) { return _mm512_cvtsi512_si32(v); }
};

}  // namespace
}  // namespace vnni
}  // namespace webxnn
