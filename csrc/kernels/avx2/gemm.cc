// AVX2+FMA GEMM: C[M,N] = act(A[M,K] * B + bias) on B packed once at load (compiled with -mavx2 -mfma).
//
// Packed B (shared with nothing else): per 16-column panel [16 bias][K x 16 weights], N zero-padded to 16.
// A K-block of a panel is a contiguous sub-range, so K blocking needs no repacking.
//
// Blocking (GotoBLAS/BLIS order): work units are (M chunk of <= 144 rows, N group of panels whose C block is
// <= 128 KB). Per unit, per K block of <= 1536: for every 16-column panel the MR x 16 microkernel sweeps the
// M chunk's row tiles over the kc x 16 B micro-panel (<= 96 KB, read from L2, where the previous panel
// prefetched it; see kKCMax for why not an L1-sized block); A's rows are read in place, or, when their stride
// is a multiple of 4 KB (the six rows of a tile would share L1 sets), from a copy with a stride of kc + 16,
// made once per task and M chunk. Not packed into MR-interleaved micro-panels (BLIS): the interleave costs
// ~1 cycle per element, a row copy ~0.1, and in-place rows stream as well. An N tail of <= 8 columns runs
// with the panel before it as 4 x 24 tiles (ukernel24), or alone as 12 x 8 tiles. The first K block starts the
// accumulators from the bias, later ones from C; the activation is applied after the last. Every output is
// still bias + the products summed in k order, so results do not depend on the blocking or on the thread
// count.
// M = 1 goes to a GEMV that streams 4 panels at once (8 independent accumulator chains, bandwidth-bound).
//
// ODR hygiene: no std:: templates here; scratch and parallelism go through internal.h.
#include <immintrin.h>

#include <cstring>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/gemm_microkernel.h"
#include "kernels/avx2/simd.h"
#include "kernels/avx2/vmath.h"
#include "kernels/internal.h"

namespace webxnn {
namespace WEBXNN_AVX2_NS {
namespace {

constexpr size_t kMC = 144;  // rows of A per M chunk
// K block bound. Not the textbook L1-sized B micro-panel (kc 256-320, <= 20 KB): every extra K block reads
// and writes the whole C block once more, while Zen 4's L2 feeds a 6x16 tile's B stream (64 bytes per 12
// FMAs) with room to spare. Measured here (1 thread, GFLOP/s, old bound 320 / 512 with packed A -> 1536):
// 128x3072x768 107-108 -> 112-114, 64x768x768 111 -> 115, 384^3 112 -> 113, 128x384x1536 112 -> 115,
// 196x256x1024 100-106 -> 108, 1024^3 108 -> 110-111; a 6-layer FC chain with cold weights -2 %.
constexpr size_t kKCMax = 1536;
constexpr size_t kCBlockBytes = 128 * 1024;  // C block of one (M chunk, N group) unit, kept in L2
constexpr size_t kSharedBBytes = 768 * 1024;  // weights a B-heavy product may stream whole on every thread
// The K of MobileNets' first expand (12544 x 96 x 16 in MobileNetV2): sweep's 6 x 16 tiles run it with the
// k loop unrolled whole. Measured: that GEMM 425 -> 390 us in isolation, MobileNetV2's first stride-2 block
// 643 -> 620 us. Unrolled for K = 24 and 32 as well, the blocks using them did not get faster; a 4x unroll
// of the general loop gained 6 us.
constexpr size_t kShortK = 16;
constexpr size_t kPanelUnit = kTwoPanels ? 2 : 1;  // N groups are whole units of this many panels

struct Tail {  // masks for a partial 16-column panel, and whether the output is clamped at all
  __m256i lo, hi;
  bool clamp;  // false for {-inf, +inf}: skips 2 * MR min/max per tile (they share ports with the FMAs)
  // lo covers all 8 lanes (a panel of >= 8 columns; for ukernel24's tail panel: N = 16 p + 8): its stores are
  // plain ones. With masked stores (vmaskmovps: 12 cycles each here) the 4 x 24 tiles of 560x24x96 ran at
  // 90.5 % of the FMA peak, against 97 % for N = 16 and 32 (now 96.7 %); through store_lanes, 95.5 %.
  bool lo_full = false;
  size_t pstride = 0;  // floats from a full panel to the next: a two-panel tile's second (the 512-bit build)
  // Bytes from each prefetched line of the next panel block to the same line of the panel after it, which the
  // next two-panel tile reads too (0: no second stream; the 512-bit build).
  size_t pf2 = 0;
};

// The k loop of a tile over kc steps of panel rows from b: step(w, k) for each, w = b + k * kNR, with ukernel's
// prefetch streams (below), and with each pf line also the line pf2 bytes on when pf2 > 0 (the 512-bit build's
// second panel).
template <size_t KC, bool kAhead, typename Step>
__attribute__((always_inline)) inline void k_loop(size_t kc_rt, const float* b, const char* pf,
                                                  size_t pf_step, const char* ah, size_t ah_step, size_t ah_n,
                                                  Step step, size_t pf2 = 0) {
  const size_t kc = KC ? KC : kc_rt;
  size_t k = 0;
  if (KC > 0) {
    if (pf && pf_step > 0) {
      for (size_t kk = pf_step; kk < KC; kk += pf_step, pf += 64) {
        _mm_prefetch(pf, _MM_HINT_T1);
        if (pf2) _mm_prefetch(pf + pf2, _MM_HINT_T1);
      }
    }
    if (kAhead) {
      for (size_t i = 0; i < ah_n; ++i) _mm_prefetch(ah + i * 64, _MM_HINT_T1);
    }
#pragma GCC unroll 32
    for (; k < KC; ++k) step(b + k * kNR, k);
    pf = nullptr;
  }
  size_t k_pf = pf ? pf_step : kc + 1;
  size_t k_ah = kAhead ? kc - ah_n * ah_step : 0;  // kc when ah_n = 0: never reached
  for (; k < kc; ++k) {
    if (k == k_pf) {
      _mm_prefetch(pf, _MM_HINT_T1);
      if (pf2) _mm_prefetch(pf + pf2, _MM_HINT_T1);
      pf += 64;
      k_pf += pf_step;
    }
    if (kAhead && k == k_ah) {  // ah_n of these
      _mm_prefetch(ah, _MM_HINT_T1);
      ah += 64;
      k_ah += ah_step;
    }
    step(b, k);
    b += kNR;
  }
}

// One MR x 16 tile (gemm_microkernel.h) over kc: acc = (bias ? bias : C) + sum_k A[m][k] * b[k][:]; then act
// when `last`.
// A's rows are a + m * lda.
// r: the residual tile added at the last K block before the clamp (null: none), row stride ldr.
// pf (null: none): a line to prefetch toward L2 every pf_step steps of the k loop, advancing 64 bytes each time.
// KC > 0: kc is KC, known at compile time: the k loop is unrolled whole (see kShortK), pf's lines are all
// prefetched at the start.
// kAhead: a second stream, ah_n lines from ah, one every ah_step steps of the k loop, the last at kc - ah_step
// (all at the start when KC > 0; ah_n * ah_step <= kc): a later step's weights (Prefetch). A template flag so
// the tiles without one keep their loop as it was.
template <int MR, bool kFull, size_t KC = 0, bool kAhead = false>
__attribute__((always_inline)) inline void ukernel(size_t kc_rt, const float* a, size_t lda, const float* b,
                                                   float* c, size_t ldc, const float* bias, bool last,
                                                   __m256 vmin, __m256 vmax, const Tail& tail, const float* r,
                                                   size_t ldr, const char* pf = nullptr, size_t pf_step = 0,
                                                   const char* ah = nullptr, size_t ah_step = 0,
                                                   size_t ah_n = 0) {
  __m256 acc0[MR], acc1[MR];
  if (bias) {
    tile16_load_bias<MR>(bias, acc0, acc1);
  } else {
#pragma GCC unroll 6
    for (int m = 0; m < MR; ++m) {
      if (kFull) {
        acc0[m] = _mm256_loadu_ps(c + m * ldc);
        acc1[m] = _mm256_loadu_ps(c + m * ldc + 8);
      } else {
        acc0[m] = _mm256_maskload_ps(c + m * ldc, tail.lo);
        acc1[m] = _mm256_maskload_ps(c + m * ldc + 8, tail.hi);
      }
    }
  }
  const float* ar[MR];
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) ar[m] = a + m * lda;
  k_loop<KC, kAhead>(kc_rt, b, pf, pf_step, ah, ah_step, ah_n,
                     [&](const float* w, size_t k)
                         __attribute__((always_inline)) { tile16_fma<MR>(w, ar, k, acc0, acc1); });
  if (last && r) {
    if (kFull) {
      tile16_add_rows<MR>(r, ldr, acc0, acc1);
    } else {
#pragma GCC unroll 6
      for (int m = 0; m < MR; ++m) {
        acc0[m] = _mm256_add_ps(acc0[m], _mm256_maskload_ps(r + m * ldr, tail.lo));
        acc1[m] = _mm256_add_ps(acc1[m], _mm256_maskload_ps(r + m * ldr + 8, tail.hi));
      }
    }
  }
  if (last && tail.clamp) tile16_clamp<MR>(vmin, vmax, acc0, acc1);
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) {
    if (kFull) {
      _mm256_storeu_ps(c + m * ldc, acc0[m]);
      _mm256_storeu_ps(c + m * ldc + 8, acc1[m]);
    } else {
      if (tail.lo_full) {
        _mm256_storeu_ps(c + m * ldc, acc0[m]);
      } else {
        store_lanes(c + m * ldc, tail.lo, acc0[m]);
      }
      store_lanes(c + m * ldc + 8, tail.hi, acc1[m]);
    }
  }
}

#if defined(WEBXNN_F32_ZMM)
// ukernel's full-panel tile on gemm_microkernel.h's 512-bit pieces (the AVX-512 build of this file), NP = 1 or
// 2 panels, the second tail.pstride floats after the first. Measured 384^3: 181 GFLOP/s with two, 129 with one,
// 95 on the ymm tile.
template <int MR, int NP, size_t KC, bool kAhead>
__attribute__((always_inline)) inline void ukernel_zmm(size_t kc_rt, const float* a, size_t lda,
                                                       const float* b, float* c, size_t ldc,
                                                       const float* bias, bool last, __m256 vmin, __m256 vmax,
                                                       const Tail& tail, const float* r, size_t ldr,
                                                       const char* pf, size_t pf_step, const char* ah,
                                                       size_t ah_step, size_t ah_n) {
  const size_t ps = tail.pstride;
  __m512 acc[MR][NP];
  if (bias) {
    ztile_load_bias<MR, NP>(bias, ps, acc);
  } else {
#pragma GCC unroll 6
    for (int m = 0; m < MR; ++m)
#pragma GCC unroll 2
      for (int q = 0; q < NP; ++q) acc[m][q] = _mm512_loadu_ps(c + m * ldc + q * 16);
  }
  const float* ar[MR];
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) ar[m] = a + m * lda;
  k_loop<KC, kAhead>(
      kc_rt, b, pf, pf_step, ah, ah_step, ah_n,
      [&](const float* w, size_t k) __attribute__((always_inline)) { ztile_fma<MR, NP>(w, ps, ar, k, acc); },
      tail.pf2);
  ztile_store<MR, NP>(acc, c, ldc, last ? r : nullptr, ldr, last && tail.clamp, vmin, vmax);
}
#endif

// A tile of full panels: ukernel's, or in the 512-bit build ukernel_zmm's, which also takes NP = 2.
template <int MR, size_t KC = 0, bool kAhead = false, int NP = 1>
__attribute__((always_inline)) inline void full_tile(size_t kc, const float* a, size_t lda, const float* b,
                                                     float* c, size_t ldc, const float* bias, bool last,
                                                     __m256 vmin, __m256 vmax, const Tail& tail,
                                                     const float* r, size_t ldr, const char* pf = nullptr,
                                                     size_t pf_step = 0, const char* ah = nullptr,
                                                     size_t ah_step = 0, size_t ah_n = 0) {
#if defined(WEBXNN_F32_ZMM)
  ukernel_zmm<MR, NP, KC, kAhead>(kc, a, lda, b, c, ldc, bias, last, vmin, vmax, tail, r, ldr, pf, pf_step,
                                  ah, ah_step, ah_n);
#else
  static_assert(NP == 1, "two-panel tiles are the 512-bit build's");
  ukernel<MR, true, KC, kAhead>(kc, a, lda, b, c, ldc, bias, last, vmin, vmax, tail, r, ldr, pf, pf_step, ah,
                                ah_step, ah_n);
#endif
}

// A panel tail of <= 8 columns on its own (N <= 8, or a tail whose full panel is in another N group; after a
// full panel ukernel24 takes it): an MR x 8 tile, half the FMAs of the 16-wide kernel. MR = 12 keeps 12
// accumulator chains in flight: with 6, the FMA latency (4 cycles, 2 pipes) left a quarter of the issue slots
// empty.
template <int MR>
inline void ukernel8(size_t kc, const float* a, size_t lda, const float* b, float* c, size_t ldc,
                     const float* bias, bool last, __m256 vmin, __m256 vmax, __m256i mask, bool full,
                     const float* r, size_t ldr) {
  __m256 acc[MR];
  const __m256 b0 = bias ? _mm256_load_ps(bias) : _mm256_setzero_ps();
#pragma GCC unroll 12
  for (int m = 0; m < MR; ++m) acc[m] = bias ? b0 : _mm256_maskload_ps(c + m * ldc, mask);
  const float* ar[MR];
#pragma GCC unroll 12
  for (int m = 0; m < MR; ++m) ar[m] = a + m * lda;
  for (size_t k = 0; k < kc; ++k) {
    const __m256 w = _mm256_load_ps(b);
    b += kNR;
#pragma GCC unroll 12
    for (int m = 0; m < MR; ++m) acc[m] = _mm256_fmadd_ps(_mm256_broadcast_ss(ar[m] + k), w, acc[m]);
  }
#pragma GCC unroll 12
  for (int m = 0; m < MR; ++m) {
    if (last && r) acc[m] = _mm256_add_ps(acc[m], _mm256_maskload_ps(r + m * ldr, mask));
    if (last) acc[m] = _mm256_min_ps(vmax, _mm256_max_ps(vmin, acc[m]));
    if (full) {
      _mm256_storeu_ps(c + m * ldc, acc[m]);
    } else {
      store_lanes(c + m * ldc, mask, acc[m]);
    }
  }
}

// The last full panel and an <= 8-column tail panel after it in one pass (N = 16 p + 1..8, e.g. MobileNetV2's
// 24-channel convs): an MR x 24 tile (MR <= 4), 12 accumulators fed by 3 B loads and 4 broadcasts per k. Apart,
// the tail's 12 x 8 tiles need 12 broadcasts per 8 columns: load-bound, N = 24 products ran at 86 % of peak.
// b, bias: the full panel's; b2, bias2: the tail panel's; mask: the tail's columns.
template <int MR>
inline void ukernel24(size_t kc, const float* a, size_t lda, const float* b, const float* b2, float* c,
                      size_t ldc, const float* bias, const float* bias2, bool last, __m256 vmin, __m256 vmax,
                      const Tail& tail, const float* r, size_t ldr) {
  __m256 acc0[MR], acc1[MR], acc2[MR];
  if (bias) {
    const __m256 v0 = _mm256_load_ps(bias), v1 = _mm256_load_ps(bias + 8), v2 = _mm256_load_ps(bias2);
#pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) {
      acc0[m] = v0;
      acc1[m] = v1;
      acc2[m] = v2;
    }
  } else {
#pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) {
      acc0[m] = _mm256_loadu_ps(c + m * ldc);
      acc1[m] = _mm256_loadu_ps(c + m * ldc + 8);
      acc2[m] = _mm256_maskload_ps(c + m * ldc + 16, tail.lo);
    }
  }
  const float* ar[MR];
#pragma GCC unroll 4
  for (int m = 0; m < MR; ++m) ar[m] = a + m * lda;
  for (size_t k = 0; k < kc; ++k) {
    const __m256 w0 = _mm256_load_ps(b), w1 = _mm256_load_ps(b + 8), w2 = _mm256_load_ps(b2);
    b += kNR;
    b2 += kNR;
#pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) {
      const __m256 va = _mm256_broadcast_ss(ar[m] + k);
      acc0[m] = _mm256_fmadd_ps(va, w0, acc0[m]);
      acc1[m] = _mm256_fmadd_ps(va, w1, acc1[m]);
      acc2[m] = _mm256_fmadd_ps(va, w2, acc2[m]);
    }
  }
#pragma GCC unroll 4
  for (int m = 0; m < MR; ++m) {
    if (last && r) {
      acc0[m] = _mm256_add_ps(acc0[m], _mm256_loadu_ps(r + m * ldr));
      acc1[m] = _mm256_add_ps(acc1[m], _mm256_loadu_ps(r + m * ldr + 8));
      acc2[m] = _mm256_add_ps(acc2[m], _mm256_maskload_ps(r + m * ldr + 16, tail.lo));
    }
    if (last && tail.clamp) {
      acc0[m] = clamp8(acc0[m], vmin, vmax);
      acc1[m] = clamp8(acc1[m], vmin, vmax);
      acc2[m] = clamp8(acc2[m], vmin, vmax);
    }
    _mm256_storeu_ps(c + m * ldc, acc0[m]);
    _mm256_storeu_ps(c + m * ldc + 8, acc1[m]);
    if (tail.lo_full) {
      _mm256_storeu_ps(c + m * ldc + 16, acc2[m]);
    } else {
      store_lanes(c + m * ldc + 16, tail.lo, acc2[m]);
    }
  }
}

constexpr size_t kMR24 = 4;  // rows of a 24-column tile

void run_ukernel24(size_t mr, size_t kc, const float* a, size_t lda, const float* b, const float* b2,
                   float* c, size_t ldc, const float* bias, const float* bias2, bool last, __m256 vmin,
                   __m256 vmax, const Tail& tail, const float* r, size_t ldr) {
  with_rows<kMR24>(mr, [&](auto m) {
    ukernel24<decltype(m)::value>(kc, a, lda, b, b2, c, ldc, bias, bias2, last, vmin, vmax, tail, r, ldr);
  });
}

// Rows per tile of an <= 8-column panel tail: 12 while that many are left, else tile_rows' split.
inline size_t tail8_rows(size_t rows_left) { return rows_left >= 2 * kMR ? 2 * kMR : tile_rows(rows_left); }

void run_ukernel8(size_t mr, size_t kc, const float* a, size_t lda, const float* b, float* c, size_t ldc,
                  const float* bias, bool last, __m256 vmin, __m256 vmax, const Tail& tail, const float* r,
                  size_t ldr) {
  const __m256i mask = tail.lo;
  const bool full = tail.lo_full;
  if (mr == 2 * kMR) {
    return ukernel8<2 * kMR>(kc, a, lda, b, c, ldc, bias, last, vmin, vmax, mask, full, r, ldr);
  }
  with_rows<kMR>(mr, [&](auto m) {
    ukernel8<decltype(m)::value>(kc, a, lda, b, c, ldc, bias, last, vmin, vmax, mask, full, r, ldr);
  });
}

// A tile of a partial panel (9-15 columns: masked loads and stores); full panels run full_tile.
void run_partial(size_t mr, size_t kc, const float* a, size_t lda, const float* b, float* c, size_t ldc,
                 const float* bias, bool last, __m256 vmin, __m256 vmax, const Tail& tail, const float* r,
                 size_t ldr) {
  with_rows<kMR>(mr, [&](auto m) {
    ukernel<decltype(m)::value, false>(kc, a, lda, b, c, ldc, bias, last, vmin, vmax, tail, r, ldr);
  });
}

// NP full 16-column panels (2: the 512-bit build's two-panel tiles) over the M chunk's row tiles: the MR = 6
// tiles inlined in one loop (no call and no dispatch per tile: with short K those cost as much as the tile's
// FMAs), the last partial tile dispatched.
// a: the chunk's first row (row stride lda).
// Prefetches a slice of the next panel's block per kMR-row tile (next_b, pf_per_tile lines, spread over the
// tile's k loop) and, when C is read back by a later K block (c_prefetch), the next tile's C rows. The
// ahead_n lines at ahead (a later step's weights: Prefetch) are shared out over the kMR-row tiles likewise, at
// most one per step of a tile's k loop.
template <int NP>
void sweep(size_t mc, size_t kc, const float* a, size_t lda, const float* b, float* c, size_t ldc,
           const float* r, size_t ldr, const float* bias, bool last, __m256 vmin, __m256 vmax,
           const Tail& tail, const char* next_b, size_t pf_per_tile, bool c_prefetch, const char* ahead,
           size_t ahead_n) {
  size_t pf = 0, t0 = 0;
  const size_t a_step = kMR * lda;
  const size_t tiles = ahead_n ? RowTiles(mc).full() : 0;  // the kMR-row tiles, which run the loop below
  if (tiles == 0 || kc == 0) ahead_n = 0;
  const size_t ah_per_tile = ahead_n ? min_sz(kc, div_up(ahead_n, tiles)) : 0;
  const size_t ah_step = ah_per_tile ? kc / ah_per_tile : 0;
  // The tile's share of the next block's lines: one every kc / pf_per_tile steps of its k loop (bursts of
  // ~30 prefetches at the tile's start left some unserved: measured 5 % slower on weights from DRAM at
  // M = 49), or all at its start when the share is over half the steps.
  const bool spread_pf = next_b && pf_per_tile * 2 <= kc;
  const size_t spread_step = spread_pf ? kc / pf_per_tile : 0;
  for (; tile_rows(mc - t0) == kMR; t0 += kMR, a += a_step, c += kMR * ldc, r = r ? r + kMR * ldr : nullptr) {
    const char* spread = nullptr;
    if (spread_pf) {
      spread = next_b + pf * 64;
      pf = min_sz(kc, pf + pf_per_tile);
    } else if (next_b) {
      for (const size_t e = min_sz(kc, pf + pf_per_tile); pf < e; ++pf) {
        _mm_prefetch(next_b + pf * 64, _MM_HINT_T1);
        if (tail.pf2) _mm_prefetch(next_b + tail.pf2 + pf * 64, _MM_HINT_T1);
      }
    }
    if (c_prefetch && t0 + kMR < mc) {
      const char* cn = reinterpret_cast<const char*>(c + kMR * ldc);
      for (size_t m = 0; m < kMR; ++m) {
        for (int q = 0; q < NP; ++q) _mm_prefetch(cn + m * ldc * sizeof(float) + q * 64, _MM_HINT_T0);
        _mm_prefetch(cn + m * ldc * sizeof(float) + NP * 64 - 4, _MM_HINT_T0);
      }
    }
    if (ahead_n) {
      const size_t n = min_sz(ahead_n, ah_per_tile);
      if (kc == kShortK) {
        full_tile<kMR, kShortK, true, NP>(kc, a, lda, b, c, ldc, bias, last, vmin, vmax, tail, r, ldr, spread,
                                          spread_step, ahead, ah_step, n);
      } else {
        full_tile<kMR, 0, true, NP>(kc, a, lda, b, c, ldc, bias, last, vmin, vmax, tail, r, ldr, spread,
                                    spread_step, ahead, ah_step, n);
      }
      ahead += n * 64;
      ahead_n -= n;
    } else if (kc == kShortK) {
      full_tile<kMR, kShortK, false, NP>(kc, a, lda, b, c, ldc, bias, last, vmin, vmax, tail, r, ldr, spread,
                                         spread_step);
    } else {
      full_tile<kMR, 0, false, NP>(kc, a, lda, b, c, ldc, bias, last, vmin, vmax, tail, r, ldr, spread,
                                   spread_step);
    }
  }
  for (size_t mr; t0 < mc; t0 += mr, a += mr * lda, c += mr * ldc, r = r ? r + mr * ldr : nullptr) {
    mr = tile_rows(mc - t0);
    with_rows<kMR>(mr, [&](auto m) {
      full_tile<decltype(m)::value, 0, false, NP>(kc, a, lda, b, c, ldc, bias, last, vmin, vmax, tail, r,
                                                  ldr);
    });
  }
}

// Prefetches lines [*pf, end) of the block at next (toward L2; null: none), and moves *pf to end: a tile's
// share of the next B block, when the tiles of a sweep take it in turns.
inline void prefetch_share(const char* next, size_t end, size_t* pf) {
  if (!next) return;
  for (; *pf < end; ++*pf) _mm_prefetch(next + *pf * 64, _MM_HINT_T1);
}

struct GemmCtx {
  size_t M, N, K, lda, ldc, panels, kc_blocks, kc;
  size_t m_chunk, m_chunks, n_groups, units, tasks;
  bool copy_a;  // A rows alias in L1 (row stride a multiple of 4 KB): copied, once per thread and M chunk,
  // to a row stride of kc + 16
  uint64_t call;  // with copy_a, internal::unique_call_id() of this call (a thread's copy is kept by call)
  const float* A;
  const float* R;  // residual [M, N] (ldr) or null
  size_t ldr;
  const float* packed;
  const float* next;  // the packed B the caller multiplies next (null: none), prefetched after the last panel
  const char* ahead;  // Prefetch: ahead_lines lines for a later step, shared out over the units' panels
  size_t ahead_lines;
  float* C;
  float vmin, vmax;
  bool clamp;  // vmin > -inf or vmax < +inf
  PostOp post;  // applied to each unit's C block once its last K block is done (the block is in L2)
};

void gemm_task(const void* vctx, size_t task) {
  const GemmCtx& x = *static_cast<const GemmCtx*>(vctx);
  const size_t u0 = x.units * task / x.tasks, u1 = x.units * (task + 1) / x.tasks;
  const size_t panel_floats = kNR + x.K * kNR;
  const __m256 vmin = _mm256_set1_ps(x.vmin), vmax = _mm256_set1_ps(x.vmax);
  // Copied A: the whole M chunk (every K block) is copied once per thread and chunk, then shared by all of
  // the chunk's N groups: a task's units are consecutive, m chunk major, and a thread's next task of the same
  // call usually starts where its last one ended (thread_pool.h), so the copy is kept from task to task
  // (keyed by call and chunk). Copied per task, a 2-thread ResNet-50 copied each 400 KB chunk of its K = 1024
  // and 2048 1x1 convs four times: 196x1024x256 ran 1.76x faster at 2 threads than at 1, against 1.98x for
  // K = 256.
  const size_t ldp = x.kc + 16;  // copied A's row stride: rows one line apart in L1's sets
  const size_t a_block = x.m_chunk * ldp;  // floats per copied K block
  float* abuf = x.copy_a ? static_cast<float*>(internal::scratch(internal::Scratch::kGemmA,
                                                                 a_block * x.kc_blocks * sizeof(float)))
                         : nullptr;
  for (size_t u = u0; u < u1; ++u) {
    // Units: m chunks outer, n groups inner, so a task's units (a contiguous range: see thread_pool.h) cover
    // whole rows when there are at least as many chunks as threads: the rows the previous op wrote on this
    // core, and the rows the next op will read here.
    const size_t mch = u / x.n_groups, ng = u % x.n_groups;
    const size_t m0 = x.M * mch / x.m_chunks, mc = x.M * (mch + 1) / x.m_chunks - m0;
    const size_t full_tiles = max_sz(1, RowTiles(mc).full());  // the kMR-row tiles share the B prefetches
    // N groups of whole panel units (pairs in the 512-bit build, so no group splits a two-panel tile).
    const size_t pu = div_up(x.panels, kPanelUnit);
    const size_t p0 = min_sz(x.panels, kPanelUnit * (pu * ng / x.n_groups));
    const size_t p1 = min_sz(x.panels, kPanelUnit * (pu * (ng + 1) / x.n_groups));
    if (x.copy_a && !internal::scratch_holds(internal::Scratch::kGemmAKey, x.call, mch)) {
      for (size_t kb = 0; kb < x.kc_blocks; ++kb) {
        const size_t k0 = kb * x.kc;
        const size_t kc = min_sz(x.kc, x.K - k0);
        for (size_t m = 0; m < mc; ++m)
          std::memcpy(abuf + kb * a_block + m * ldp, x.A + (m0 + m) * x.lda + k0, kc * sizeof(float));
      }
    }
    for (size_t kb = 0; kb < x.kc_blocks; ++kb) {
      const size_t k0 = kb * x.kc, kc = min_sz(x.kc, x.K - k0);
      const bool last = kb + 1 == x.kc_blocks;
      const float* a_base = x.copy_a ? abuf + kb * a_block : x.A + m0 * x.lda + k0;
      const size_t a_ld = x.copy_a ? ldp : x.lda;
      const size_t pf_per_tile = div_up(kc, full_tiles);

      for (size_t p = p0; p < p1; ++p) {
        const float* panel = x.packed + p * panel_floats;
        const float* bias = kb == 0 ? panel : nullptr;
        const float* b = panel + kNR + k0 * kNR;
        const size_t n0 = p * kNR, nc = min_sz(kNR, x.N - n0);
        Tail tail;
        tail.lo = lane_mask(nc);
        tail.hi = lane_mask(nc > 8 ? nc - 8 : 0);
        tail.clamp = x.clamp;
        tail.lo_full = nc >= 8;
        // This panel and an <= 8-column tail panel after it (the group's last) run as one 24-wide pass.
        const bool pair = nc == kNR && p + 2 == p1 && x.N - n0 - kNR <= 8;
        // The 512-bit build runs two full panels at once (see ukernel_zmm).
        const bool two = kTwoPanels && nc == kNR && p + 1 < p1 && x.N - n0 >= 2 * kNR;
        tail.pstride = panel_floats;
        // Pull the next B block this unit reads (first touched from L3 or DRAM) toward L2, a slice per tile: the
        // next panel's kc x 16 block; after the group's last panel, the first panel's block of the next K
        // block, or of the next group (the next unit, on this task or the next one on this thread).
        const size_t p_next = p + (pair || two ? 2 : 1);
        const char* next_b = nullptr;
        size_t p_nb = x.panels;  // the panel of this GEMM that next_b is in (panels: none)
        if (p_next < p1) {
          next_b = reinterpret_cast<const char*>(x.packed + p_next * panel_floats + kNR + k0 * kNR);
          p_nb = p_next;
        } else if (kb + 1 < x.kc_blocks) {
          next_b = reinterpret_cast<const char*>(x.packed + p0 * panel_floats + kNR + (k0 + kc) * kNR);
          p_nb = p0;
        } else if (p1 < x.panels) {
          next_b = reinterpret_cast<const char*>(x.packed + p1 * panel_floats + kNR);
          p_nb = p1;
        } else if (x.next && u + 1 == x.units) {
          next_b = reinterpret_cast<const char*>(x.next + kNR);
        }
        // A two-panel tile reads next: its second panel's block too (the one after next_b's).
        if (kTwoPanels && p_nb + 1 < x.panels && x.N >= (p_nb + 2) * kNR)
          tail.pf2 = panel_floats * sizeof(float);
        if (pair) {
          const float* panel2 = panel + panel_floats;
          Tail tail2;
          tail2.lo = lane_mask(x.N - n0 - kNR);
          tail2.clamp = x.clamp;
          tail2.lo_full = x.N - n0 - kNR == 8;
          size_t pf = 0;
          for (size_t t0 = 0, mr; t0 < mc; t0 += mr) {
            mr = min_sz(kMR24, mc - t0);
            prefetch_share(next_b, kc * (t0 + mr) / mc, &pf);
            float* c = x.C + (m0 + t0) * x.ldc + n0;
            const float* rt = x.R ? x.R + (m0 + t0) * x.ldr + n0 : nullptr;
            run_ukernel24(mr, kc, a_base + t0 * a_ld, a_ld, b, panel2 + kNR + k0 * kNR, c, x.ldc, bias,
                          kb == 0 ? panel2 : nullptr, last, vmin, vmax, tail2, rt, x.ldr);
          }
          break;
        }
        if (nc == kNR) {
          float* c = x.C + m0 * x.ldc + n0;
          const float* rt = x.R ? x.R + m0 * x.ldr + n0 : nullptr;
          // This (M chunk, K block, panel)'s share of the Prefetch lines (two panels: both shares).
          const size_t items = x.m_chunks * x.kc_blocks * x.panels;
          const size_t item = (mch * x.kc_blocks + kb) * x.panels + p;
          const size_t l0 = x.ahead_lines * item / items, l1 = x.ahead_lines * (item + (two ? 2 : 1)) / items;
          const char* ahead = x.ahead ? x.ahead + l0 * 64 : nullptr;
          if constexpr (kTwoPanels) {
            if (two) {
              sweep<2>(mc, kc, a_base, a_ld, b, c, x.ldc, rt, x.ldr, bias, last, vmin, vmax, tail, next_b,
                       pf_per_tile, x.kc_blocks > 1, ahead, l1 - l0);
              ++p;
              continue;
            }
          }
          sweep<1>(mc, kc, a_base, a_ld, b, c, x.ldc, rt, x.ldr, bias, last, vmin, vmax, tail, next_b,
                   pf_per_tile, x.kc_blocks > 1, ahead, l1 - l0);
          continue;
        }
        size_t pf = 0;
        for (size_t t0 = 0, mr; t0 < mc; t0 += mr) {  // a partial panel (N tail)
          mr = nc <= 8 ? tail8_rows(mc - t0) : tile_rows(mc - t0);
          // The tile's share of the next block's kc lines, by rows (its tiles are not all kMR rows high).
          prefetch_share(next_b, kc * (t0 + mr) / mc, &pf);
          float* c = x.C + (m0 + t0) * x.ldc + n0;
          const float* rt = x.R ? x.R + (m0 + t0) * x.ldr + n0 : nullptr;
          const float* a = a_base + t0 * a_ld;
          // The next tile's C rows (read at its start on K blocks after the first): fetch them while this
          // tile computes; C rows of a tall GEMM do not stay in L2 between K blocks.
          if (x.kc_blocks > 1 && t0 + mr < mc) {
            const char* cn = reinterpret_cast<const char*>(c + mr * x.ldc);
            const size_t next_mr = nc <= 8 ? tail8_rows(mc - t0 - mr) : tile_rows(mc - t0 - mr);
            for (size_t m = 0; m < next_mr; ++m) {
              _mm_prefetch(cn + m * x.ldc * sizeof(float), _MM_HINT_T0);
              _mm_prefetch(cn + m * x.ldc * sizeof(float) + 60, _MM_HINT_T0);
            }
          }
          if (nc <= 8) {
            run_ukernel8(mr, kc, a, a_ld, b, c, x.ldc, bias, last, vmin, vmax, tail, rt, x.ldr);
          } else {
            run_partial(mr, kc, a, a_ld, b, c, x.ldc, bias, last, vmin, vmax, tail, rt, x.ldr);
          }
        }
      }
    }
    apply_post(x.post, x.C + m0 * x.ldc + p0 * kNR, mc, min_sz(x.N, p1 * kNR) - p0 * kNR, x.ldc);
  }
}

// ---- M = 1: y = act(bias + a * B), 4 panels (64 columns, 8 accumulator chains) per step.
struct GemvCtx {
  size_t N, K, panels, group, tasks;
  const float* r;  // residual row or null
  const float* a;
  const float* packed;
  float* y;
  float vmin, vmax;
  PostOp post;
};

void gemv_task(const void* vctx, size_t task) {
  const GemvCtx& x = *static_cast<const GemvCtx*>(vctx);
  const size_t groups = div_up(x.panels, x.group);
  const size_t g0 = groups * task / x.tasks, g1 = groups * (task + 1) / x.tasks;
  const size_t panel_floats = kNR + x.K * kNR;
  const __m256 vmin = _mm256_set1_ps(x.vmin), vmax = _mm256_set1_ps(x.vmax);
  for (size_t p = g0 * x.group; p < min_sz(x.panels, g1 * x.group);) {
    const size_t np = min_sz(4, x.panels - p);
    const float* w[4];
    __m256 acc[8];
    for (size_t j = 0; j < 4; ++j) {
      w[j] = x.packed + (p + (j < np ? j : 0)) * panel_floats;
      acc[2 * j] = _mm256_load_ps(w[j]);
      acc[2 * j + 1] = _mm256_load_ps(w[j] + 8);
      w[j] += kNR;
    }
    if (np == 4) {
      for (size_t k = 0; k < x.K; ++k) {
        const __m256 va = _mm256_broadcast_ss(x.a + k);
#pragma GCC unroll 4
        for (size_t j = 0; j < 4; ++j) {
          acc[2 * j] = _mm256_fmadd_ps(va, _mm256_load_ps(w[j] + k * kNR), acc[2 * j]);
          acc[2 * j + 1] = _mm256_fmadd_ps(va, _mm256_load_ps(w[j] + k * kNR + 8), acc[2 * j + 1]);
        }
      }
    } else {
      for (size_t k = 0; k < x.K; ++k) {
        const __m256 va = _mm256_broadcast_ss(x.a + k);
        for (size_t j = 0; j < np; ++j) {
          acc[2 * j] = _mm256_fmadd_ps(va, _mm256_load_ps(w[j] + k * kNR), acc[2 * j]);
          acc[2 * j + 1] = _mm256_fmadd_ps(va, _mm256_load_ps(w[j] + k * kNR + 8), acc[2 * j + 1]);
        }
      }
    }
    for (size_t j = 0; j < np; ++j) {
      const size_t n0 = (p + j) * kNR, nc = min_sz(kNR, x.N - n0);
      if (x.r) {
        const __m256i mlo = lane_mask(nc), mhi = lane_mask(nc > 8 ? nc - 8 : 0);
        acc[2 * j] = _mm256_add_ps(acc[2 * j], _mm256_maskload_ps(x.r + n0, mlo));
        acc[2 * j + 1] = _mm256_add_ps(acc[2 * j + 1], _mm256_maskload_ps(x.r + n0 + 8, mhi));
      }
      const __m256 lo = _mm256_min_ps(vmax, _mm256_max_ps(vmin, acc[2 * j]));
      const __m256 hi = _mm256_min_ps(vmax, _mm256_max_ps(vmin, acc[2 * j + 1]));
      if (nc == kNR) {
        _mm256_storeu_ps(x.y + n0, lo);
        _mm256_storeu_ps(x.y + n0 + 8, hi);
      } else {
        store_lanes(x.y + n0, lane_mask(nc), lo);
        store_lanes(x.y + n0 + 8, lane_mask(nc > 8 ? nc - 8 : 0), hi);
      }
    }
    apply_post(x.post, x.y + p * kNR, 1, min_sz(x.N, (p + np) * kNR) - p * kNR, 0);
    p += np;
  }
}

}  // namespace

size_t gemm_packed_size(size_t K, size_t N) { return div_up(N, kNR) * (kNR + K * kNR) * sizeof(float); }

namespace {

// gemm_pack of a B whose rows (k, or n when b_is_nk) are ldb floats apart.
void pack_b(size_t K, size_t N, const float* B, size_t ldb, bool b_is_nk, const float* bias, void* packed) {
  float* out = static_cast<float*>(packed);
  if (b_is_nk) {
    pack_panels(K, N, bias, [&](size_t k, size_t n) { return B[n * ldb + k]; }, out);
  } else {
    pack_panels(K, N, bias, [&](size_t k, size_t n) { return B[k * ldb + n]; }, out);
  }
}

}  // namespace

void gemm_pack(size_t K, size_t N, const float* B, bool b_is_nk, const float* bias, void* packed) {
  pack_b(K, N, B, b_is_nk ? K : N, b_is_nk, bias, packed);
}

namespace {

// Runs C = act(A * packed + bias) with the work split for `threads` threads; on `par` when given, else
// serially on the calling thread (the per-batch path of batch_matmul).
void gemm_run(size_t M, size_t N, size_t K, const float* A, size_t lda, const void* packed, float* C,
              size_t ldc, Activation act, size_t threads, Parallel* par, const float* R = nullptr,
              size_t ldr = 0, const void* next = nullptr, const Prefetch& ahead = Prefetch()) {
  if (M == 0 || N == 0) return;
  const size_t panels = div_up(N, kNR);
  const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K + 1);
  // Below ~100 kflop a fork/join costs more than it saves.
  const size_t want_tasks = par && threads > 1 && flops > 2e5 ? threads * 4 : 1;
  if (M == 1) {
    GemvCtx v;
    v.N = N;
    v.K = K;
    v.panels = panels;
    v.group = 4;
    v.tasks = min_sz(want_tasks, div_up(panels, v.group));
    v.a = A;
    v.r = R;
    v.packed = static_cast<const float*>(packed);
    v.y = C;
    v.vmin = act.min;
    v.vmax = act.max;
    v.post = act.post;
    if (v.tasks > 1) return internal::parallel_run(*par, v.tasks, gemv_task, &v);
    return gemv_task(&v, 0);
  }
  GemmCtx x;
  x.M = M;
  x.N = N;
  x.K = K;
  x.lda = lda;
  x.ldc = ldc;
  x.A = A;
  x.R = R;
  x.ldr = ldr;
  x.packed = static_cast<const float*>(packed);
  x.next = static_cast<const float*>(next);
  x.ahead = static_cast<const char*>(ahead.data);
  x.ahead_lines = ahead.data ? ahead.bytes / 64 : 0;
  x.C = C;
  x.vmin = act.min;
  x.vmax = act.max;
  x.clamp = !(act.min == -__builtin_inff() && act.max == __builtin_inff());
  x.post = act.post;
  x.panels = panels;
  // A is read in place (six row streams) unless its rows alias in L1 (row stride a multiple of 4 KB): then
  // it is copied to a padded stride. Measured here against the MR-interleaved packing it replaced (1 thread,
  // GFLOP/s): 196x256x1024 108.8 -> 113.0, 49x512x2048 109.9 -> 112.0, 1024^3 unchanged (110-112).
  x.copy_a = (lda * sizeof(float)) % 4096 == 0;
  x.call = x.copy_a ? internal::unique_call_id() : 0;
  x.kc_blocks = max_sz(1, div_up(K, kKCMax));
  x.kc = div_up(K, x.kc_blocks);  // 0 when K = 0: the output is act(bias [+ R])
  // M chunks and N groups of panels, each of equal size (chunk i: rows [M * i / m_chunks, M * (i + 1) /
  // m_chunks), m_chunk rows at most; groups likewise). Groups are sized so the C block of a unit (m_chunk x
  // group columns) stays in L2 across the K blocks.
  // Equal sizes, not whole MR tiles or a fixed group width: the threads' shares of the units stay equal, so
  // neither thread waits for the other at the end, nor finishes early and takes the other's rows (which the
  // next op then reads across cores). Measured on MobileNetV2 at 2 threads: 7 units of 3 panels (20 panels)
  // left one thread idle for 13 us; 196 rows as 54+54+54+34 made one thread do 55 % of the work. A chunk's
  // 7-13 row tail runs as 4- and 5-row tiles (RowTiles), which cost no more than the padded MR tiles.
  x.m_chunks = div_up(M, kMC);
  x.m_chunk = div_up(M, x.m_chunks);
  const size_t n_units = div_up(panels, kPanelUnit);  // what N groups are made of (see gemm_task)
  size_t n_groups =
      min_sz(n_units, div_up(panels, max_sz(1, kCBlockBytes / (x.m_chunk * kNR * sizeof(float)))));
  if (want_tasks > 1) {
    // Enough units for the threads. Every N group reads all of its M chunk's A rows and every M chunk all of
    // its N group's B panels; splitting N also leaves each output row half on each core, so the next op
    // (which takes rows) reads half of it from the other core's cache. Measured on MobileNetV2 at 2 threads:
    // keeping rows together cut the 14x14 depthwise steps from 27 to 20 us.
    // So B-heavy products (weights bigger than the input rows plus half the output: transformer FCs) split
    // whichever side moves fewer bytes; the rest split M first, keeping rows on one core from op to op. B-heavy
    // ones whose weights every thread can stream whole (kSharedBBytes) split M into one chunk per thread
    // first, then N: MobileNetV2's 7x7 expands (49 x 160 -> 960, 614 KB) split N before, and the depthwise
    // after each read half its rows from the other core (2 threads: depthwise 12.7 -> 10.7 us, expand 47.5 ->
    // 48.3; the 7x7 steps' sum 568 -> 562 us). With 1.2 MB of weights (49 x 960 -> 320) that lost 7 us.
    const bool b_outweighs = K * N > M * K + M * N / 2;
    const bool b_heavy = b_outweighs && K * N * sizeof(float) > kSharedBBytes;
    const size_t m_first = b_outweighs ? threads : want_tasks;  // M chunks wanted before N groups
    while (x.m_chunks * n_groups < want_tasks) {
      const bool can_n = n_groups < n_units;
      const bool can_m = M / kMR > x.m_chunks;
      if (!can_n && !can_m) break;
      if (can_n && (!can_m || (b_heavy ? M * n_groups <= N * x.m_chunks : x.m_chunks >= m_first))) {
        n_groups = min_sz(n_units, n_groups * 2);
        continue;
      }
      x.m_chunks = min_sz(M / kMR, x.m_chunks * 2);
      x.m_chunk = div_up(M, x.m_chunks);
    }
    for (size_t i = 0; i < threads && (x.m_chunks * n_groups) % threads != 0 && n_groups < n_units; ++i)
      ++n_groups;
  }
  x.n_groups = n_groups;
  x.units = x.n_groups * x.m_chunks;
  x.tasks = want_tasks > 1 ? min_sz(x.units, threads * 16) : 1;
  if (x.tasks > 1) return internal::parallel_run(*par, x.tasks, gemm_task, &x);
  gemm_task(&x, 0);
}

}  // namespace

void gemm_serial(size_t M, size_t N, size_t K, const float* A, size_t lda, const void* packed, float* C,
                 size_t ldc, Activation act, const float* R, size_t ldr, const void* next_packed) {
  gemm_run(M, N, K, A, lda, packed, C, ldc, act, 1, nullptr, R, ldr, next_packed);
}

namespace {

struct BmmCtx {
  size_t batch, M, N, K, tasks, packed_bytes;
  MatStrides a, b, c;
  const float* A;
  const float* B;
  float* C;
  bool nk;
};

// A range of whole products per task, each packed into task-local scratch and multiplied serially.
void bmm_task(const void* vctx, size_t task) {
  const BmmCtx& x = *static_cast<const BmmCtx*>(vctx);
  const size_t b0 = x.batch * task / x.tasks, b1 = x.batch * (task + 1) / x.tasks;
  void* packed = internal::scratch(internal::Scratch::kBmmB, x.packed_bytes);
  const Activation none;
  for (size_t b = b0; b < b1; ++b) {
    if (b == b0 || x.b.batch != 0) pack_b(x.K, x.N, x.B + b * x.b.batch, x.b.row, x.nk, nullptr, packed);
    gemm_run(x.M, x.N, x.K, x.A + b * x.a.batch, x.a.row, packed, x.C + b * x.c.batch, x.c.row, none, 1,
             nullptr);
  }
}

}  // namespace

void gemm(size_t M, size_t N, size_t K, const float* A, size_t lda, const void* packed, float* C, size_t ldc,
          Activation act, Parallel& par) {
  gemm_run(M, N, K, A, lda, packed, C, ldc, act, internal::parallel_threads(par), &par);
}

void gemm_residual(size_t M, size_t N, size_t K, const float* A, size_t lda, const void* packed,
                   const float* R, size_t ldr, float* C, size_t ldc, Activation act, Parallel& par) {
  gemm_run(M, N, K, A, lda, packed, C, ldc, act, internal::parallel_threads(par), &par, R, ldr);
}

void gemm_ahead(size_t M, size_t N, size_t K, const float* A, size_t lda, const void* packed, const float* R,
                size_t ldr, float* C, size_t ldc, Activation act, const Prefetch& ahead, Parallel& par) {
  gemm_run(M, N, K, A, lda, packed, C, ldc, act, internal::parallel_threads(par), &par, R, ldr, nullptr,
           ahead);
}

void batch_matmul(size_t batch, size_t M, size_t N, size_t K, const float* A, MatStrides as, const float* B,
                  MatStrides bs, bool b_is_nk, float* C, MatStrides cs, Parallel& par) {
  if (batch == 0 || M == 0 || N == 0) return;
  BmmCtx x;
  x.batch = batch;
  x.M = M;
  x.N = N;
  x.K = K;
  x.a = as;
  x.b = bs;
  x.c = cs;
  x.A = A;
  x.B = B;
  x.C = C;
  x.nk = b_is_nk;
  x.packed_bytes = gemm_packed_size(K, N);
  const size_t threads = internal::parallel_threads(par);
  const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K + 1);
  if (threads > 1 && batch >= threads && flops * static_cast<double>(batch) > 2e5) {
    // Whole products per task (heads of attention): no fork/join per product.
    x.tasks = min_sz(batch, threads * 4);
    if (batch % threads == 0 && batch <= threads * 8) x.tasks = batch;
    return internal::parallel_run(par, x.tasks, bmm_task, &x);
  }
  // Few large products: pack each, then split the product itself over the threads.
  void* packed = internal::scratch(internal::Scratch::kBmmB, x.packed_bytes);
  const Activation none;
  for (size_t b = 0; b < batch; ++b) {
    if (b == 0 || bs.batch != 0) pack_b(K, N, B + b * bs.batch, bs.row, b_is_nk, nullptr, packed);
    gemm_run(M, N, K, A + b * as.batch, as.row, packed, C + b * cs.batch, cs.row, none, threads, &par);
  }
}

}  // namespace WEBXNN_AVX2_NS
}  // namespace webxnn
