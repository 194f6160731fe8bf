// The AVX512-VNNI table's 512-bit int8 tiles (avx512vnni.cc only): qgemm_tiles.h's tile_one with one zmm
// accumulator per row and panel. A packed panel's row group is 16 columns x 4 bytes = 64 bytes (qgemm_layout.h),
// exactly one zmm of vpdpbusd operands, so the panels are read as they are and one vpdpbusd does what two ymm
// ones do. On Intel servers (two 512-bit FMA ports) that doubles the int8 rate: 12 independent ymm vpdpbusd
// chains sampled 373 GOP/s on one core of this machine's Xeon (Emerald Rapids), zmm ones twice that.
//
// Per row group: one 4-byte broadcast per row (+ one vpxord when the activations are s8, QCtx::flip: a' = a ^
// 0x80, the shift qgemm_layout.h folds into the bias), one 64-byte load per panel, MR x NP vpdpbusd. The sums
// are the ymm tiles' sums in the same order per lane, so every table gives the same bits; the epilogue is
// qgemm_tiles.h's (store2x16 / store_out on the two 256-bit halves of each accumulator).
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

// The Mul of the 512-bit tiles: qgemm_tiles.h's tile_one hands the whole tile to tile() (kZmm).
struct ZmmDotMul {
  static constexpr bool kZmm = true;

  // qgemm_tiles.h's tile_one contract (MR rows x NP panels from row m0; kRange: weight groups [gw0, gw1)
  // from the sums `in`, saved to `out` unless null), on zmm accumulators. in / out hold a tile's sums as
  // MR x 2NP ymm (row m, panel p: its 16 columns' two halves), which is one zmm per row and panel.
  template <int MR, int NP, bool kFlip, bool kRange, typename Src>
  __attribute__((always_inline)) static void tile(const qtiles::QCtx& x, const Src& src, size_t m0,
                                                  const uint8_t* panel, uint8_t* c, size_t nc, size_t gw0,
                                                  size_t gw1, const __m256i* in, __m256i* out) {
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
      for (int p = 0; p < NP; ++p) wv[p] = _mm512_loadu_si512(w[p] + gw * 64);
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
    const size_t n0 = x.rowq ? qtiles::panel_column(x, panel) : 0;  // qd8_gemm only
    const int8_t* rt = qtiles::residual_at(x, c, m0);
#pragma GCC unroll 16
    for (int m = 0; m < MR; m += 2) {
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) {
        const uint8_t* pp = panel + p * x.pb;
        uint8_t* cm = c + m * x.ldc + p * x.cstep;
        const size_t ncp = p == NP - 1 ? nc : kQNR;
        const int8_t* rm = rt ? rt + m * x.res->ldr + p * kQNR : nullptr;
        const __m256i s0 = _mm512_castsi512_si256(acc[m][p]), s1 = _mm512_extracti64x4_epi64(acc[m][p], 1);
        if (m + 1 < MR && x.pairs && !rt) {
          qtiles::store2x16(x, s0, s1, _mm512_castsi512_si256(acc[m + 1][p]),
                            _mm512_extracti64x4_epi64(acc[m + 1][p], 1),
                            reinterpret_cast<const float*>(pp + kQNR * 4), cm, cm + x.ldc, ncp);
          continue;
        }
        qtiles::store_out(x, s0, s1, pp, n0 + p * kQNR, m0 + m, cm, ncp, rm);
        if (m + 1 < MR) {
          qtiles::store_out(x, _mm512_castsi512_si256(acc[m + 1][p]),
                            _mm512_extracti64x4_epi64(acc[m + 1][p], 1), pp, n0 + p * kQNR, m0 + m + 1,
                            cm + x.ldc, ncp, rm ? rm + x.res->ldr : nullptr);
        }
      }
    }
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
