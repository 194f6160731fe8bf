// Small helpers shared by the AVX2 translation units (and only by them: everything here is compiled with
// -mavx2 -mfma; generic code must not include this header). The anonymous namespace gives each TU its own
// copy, so no AVX2 instruction can reach a generic caller through the linker's choice of an inline twin.
#pragma once

#include <immintrin.h>

#include <cstddef>

#include "kernels/avx2/isa_ns.h"
#include "kernels/kernels.h"

namespace webxnn {
namespace WEBXNN_AVX2_NS {
namespace {

// gemm.cc's packed panels: 16 output columns per panel; row tiles of up to 6 rows (2 x 6 accumulators + 2 B
// vectors + 1 broadcast fill the 16 ymm registers). igemm.cc and winograd.cc use the same panels.
constexpr size_t kNR = 16;
constexpr size_t kMR = 6;

// Rows of the next row tile when r rows (output pixels) remain: kMR, except that the last 7-13 rows are split
// into tiles of 4 and 5 (7 = 4 + 3, 8 = 4 + 4, 9 = 5 + 4, 13 = 5 + 4 + 4). A tile of fewer than 4 rows has
// fewer than 8 accumulator chains and waits on the FMA latency: it takes as long as a 4-row tile. So M = 49
// runs as 6 x 6 + 5 + 4 + 4 (the cost of 49 rows; 8 x 6 + 1 costs 52) and M = 128 as 20 x 6 + 4 + 4 (128;
// 21 x 6 + 2 costs 130). Every row's sums are the same for any tiling.
inline size_t tile_rows(size_t r) {
  switch (r) {
    case 7:
    case 8: return 4;
    case 9:
    case 13: return 5;
    default: return r < kMR ? r : kMR;
  }
}

// A tile's row count as a compile-time constant (the microkernels are templates on it).
template <int N>
struct Rows {
  static constexpr int value = N;
};

// Calls f(Rows<mr>{}) for a tile of mr = 1..kMax rows (mr > kMax runs kMax, mr 0 runs 1: callers pass tiles).
template <int kMax, typename F>
inline void with_rows(size_t mr, F&& f) {
  if constexpr (kMax > 1) {
    if (mr < size_t{kMax}) return with_rows<kMax - 1>(mr, f);
  }
  f(Rows<kMax>{});
}

// The tiles tile_rows cuts m rows into, by index (for kernels whose tasks start at an arbitrary tile):
// `lead` tiles of kMR rows, then the tail of the last 8-13 rows (or all of m < 14) in at most 3 tiles.
struct RowTiles {
  size_t lead = 0, count = 0, tail[4] = {};
  explicit RowTiles(size_t m) {
    lead = m >= 14 ? (m - 8) / kMR : 0;
    count = lead;
    for (size_t r = m - lead * kMR; r > 0; ++count) {
      tail[count - lead] = tile_rows(r);
      r -= tail[count - lead];
    }
  }
  size_t rows(size_t t) const { return t < lead ? kMR : tail[t - lead]; }
  size_t full() const {  // how many tiles have kMR rows
    size_t f = lead;
    for (size_t i = lead; i < count; ++i) f += tail[i - lead] == kMR ? 1 : 0;
    return f;
  }
  size_t start(size_t t) const {
    if (t <= lead) return t * kMR;
    size_t s = lead * kMR;
    for (size_t i = lead; i < t; ++i) s += tail[i - lead];
    return s;
  }
};

// Grouped (transposed) convolutions with fewer than 8 outputs per group would leave most of each 16-wide panel
// empty: those stay on the scalar kernels.
inline bool narrow_groups(const ConvParams& p) { return p.groups > 1 && p.group_output_channels < 8; }

inline size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }
inline size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }
inline size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }
inline size_t round_up(size_t a, size_t b) { return div_up(a, b) * b; }

// The first min(n, 8) lanes set: masked loads/stores of a vector's tail.
inline __m256i lane_mask(size_t n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n > 8 ? 8 : n)), idx);
}

// Stores the lanes of v that a lane_mask(n) mask selects (its first n): what _mm256_maskstore_ps does, with
// plain stores. A vmaskmovps store costs 12 cycles here (Zen 4), a plain one 1; this takes 1 to 3 stores
// (measured 1.0 cycle with all 8 lanes, 3.3 with 5).
inline void store_lanes(float* p, __m256i mask, __m256 v) {
  const unsigned bits = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(mask)));
  unsigned n = static_cast<unsigned>(__builtin_ctz(~bits));  // lanes 0..n-1 are set
  if (n >= 8) return _mm256_storeu_ps(p, v);
  __m128 x = _mm256_castps256_ps128(v);
  if (n >= 4) {
    _mm_storeu_ps(p, x);
    x = _mm256_extractf128_ps(v, 1);
    p += 4;
    n -= 4;
  }
  if (n >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(p), x);
    x = _mm_movehl_ps(x, x);
    p += 2;
    n -= 2;
  }
  if (n == 1) _mm_store_ss(p, x);
}

// v clamped to [vmin, vmax]; NaN passes through (max_ps/min_ps return the second operand when either is NaN).
inline __m256 clamp8(__m256 v, __m256 vmin, __m256 vmax) {
  return _mm256_min_ps(vmax, _mm256_max_ps(vmin, v));
}

// An element-wise map's task: out[i] = clamp8(f(in[i])) over task `task` of `tasks`' share of n floats, the
// shares cut at whole 8-float vectors (the last one ends in a masked tail). out may be in (reads before writes).
// kPairs: two independent vectors per step, for an f with long dependency chains (vmath.h's polynomials: the
// second vector fills the first one's latency).
template <bool kPairs, typename F>
inline void map_task(const float* in, float* out, size_t n, size_t task, size_t tasks, __m256 vmin,
                     __m256 vmax, F f) {
  const size_t blocks = (n + 7) / 8;
  const size_t b0 = blocks * task / tasks, b1 = blocks * (task + 1) / tasks;
  const size_t i1 = min_sz(n, b1 * 8);
  size_t i = b0 * 8;
  if constexpr (kPairs) {
    for (; i + 16 <= i1; i += 16) {
      const __m256 a = f(_mm256_loadu_ps(in + i)), b = f(_mm256_loadu_ps(in + i + 8));
      _mm256_storeu_ps(out + i, clamp8(a, vmin, vmax));
      _mm256_storeu_ps(out + i + 8, clamp8(b, vmin, vmax));
    }
  }
  for (; i + 8 <= i1; i += 8) _mm256_storeu_ps(out + i, clamp8(f(_mm256_loadu_ps(in + i)), vmin, vmax));
  if (i < i1) {
    const __m256i m = lane_mask(i1 - i);
    store_lanes(out + i, m, clamp8(f(_mm256_maskload_ps(in + i, m)), vmin, vmax));
  }
}

// Packs `count` output columns (each given by a column reader) of a [rows x count] weight block into 16-wide
// panels: [16 bias][rows x 16], zero-padded to whole panels. get(r, j) returns weight row r of column j. The
// GEMM's B and the convolutions' filters share this layout (and so the microkernels).
template <typename Get>
void pack_panels(size_t rows, size_t count, const float* bias, Get get, float* out) {
  const size_t panels = div_up(count, kNR);
  for (size_t p = 0; p < panels; ++p) {
    float* o = out + p * (kNR + rows * kNR);
    const size_t n0 = p * kNR, nc = min_sz(kNR, count - n0);
    for (size_t j = 0; j < kNR; ++j) o[j] = (j < nc && bias) ? bias[n0 + j] : 0.f;
    for (size_t r = 0; r < rows; ++r)
      for (size_t j = 0; j < kNR; ++j) o[kNR + r * kNR + j] = j < nc ? get(r, n0 + j) : 0.f;
  }
}

}  // namespace
}  // namespace WEBXNN_AVX2_NS
}  // namespace webxnn
