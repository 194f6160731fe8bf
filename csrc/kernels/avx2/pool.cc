// AVX2+FMA 2-D and global pooling, NHWC.
//
// Pooling (max / average, padding excluded from the average's divisor): per output pixel, 8-channel blocks
// reduce the valid taps; max pooling propagates NaN like the scalar kernel (a NaN anywhere in the window
// gives NaN; which NaN bit pattern is not specified). Max pooling 3 wide, stride-w 2, dilation-w 1 (the
// ResNet stem pool) has a separable interior path: each input column's vertical max is computed once and
// shared by the two output pixels whose windows overlap on it (6 loads per output vector instead of 9). It
// sweeps a row in channel groups of up to 64 (8 vectors of column maxima carried), so 64 channels read each
// input pixel's 256 bytes at once and in order: with 16-channel groups, 4 sweeps each took one line of every
// pixel, and the prefetchers fell behind (ResNet-50's pool, its input just written by the stem: 187 -> 108 us).
#include <immintrin.h>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/simd.h"
#include "kernels/avx2/vmath.h"
#include "kernels/avx2/window.h"
#include "kernels/internal.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace WEBXNN_AVX2_NS {
namespace {
struct PoolCtx {
  const PoolParams* p;
  size_t H, W, OH, OW, C, rows, tasks;
  const float* in;
  float* out;
  bool is_max;
  bool sep;  // max pool 3 wide, stride-w 2, dilation-w 1: separable interior path
};

inline __m256 max_nan(__m256 acc, __m256 v) {  // NaN from either side wins (numpy's maximum)
  return _mm256_blendv_ps(_mm256_max_ps(v, acc), v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}

// vmaxps returns its second operand when either is NaN, so max(b, acc) keeps a NaN already in acc and
// drops one in b: the dropped ones are caught by unordered compares (one per two inputs) OR-ed into the
// result (an all-ones lane is a NaN).

// Max of the ny >= 1 rows at element offset off, NaN in every lane where any input is NaN.
template <bool kMask>
inline __m256 col_max(const float* const* rowp, size_t ny, size_t off, __m256i m) {
  __m256 acc = load8<kMask>(rowp[0] + off, m);
  if (ny == 3) {
    const __m256 b = load8<kMask>(rowp[1] + off, m), c = load8<kMask>(rowp[2] + off, m);
    return _mm256_or_ps(_mm256_max_ps(c, _mm256_max_ps(b, acc)), _mm256_cmp_ps(b, c, _CMP_UNORD_Q));
  }
  __m256 nan = _mm256_setzero_ps();
  size_t j = 1;
  for (; j + 2 <= ny; j += 2) {
    const __m256 b = load8<kMask>(rowp[j] + off, m), c = load8<kMask>(rowp[j + 1] + off, m);
    acc = _mm256_max_ps(c, _mm256_max_ps(b, acc));
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(b, c, _CMP_UNORD_Q));
  }
  if (j < ny) {
    const __m256 b = load8<kMask>(rowp[j] + off, m);
    acc = _mm256_max_ps(b, acc);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
  }
  return _mm256_or_ps(acc, nan);
}

// Max of three column maxima (each already NaN where its column has a NaN): p's NaN is kept by max(., acc),
// c1's and c2's by the compare.
inline __m256 max3(__m256 p, __m256 c1, __m256 c2) {
  return _mm256_or_ps(_mm256_max_ps(c2, _mm256_max_ps(c1, p)), _mm256_cmp_ps(c1, c2, _CMP_UNORD_Q));
}

// Interior output pixels [lo, hi) of a 3-wide, stride-2 max pool row, channels [c0, c0 + 8*NV) (the last
// vector masked when kMask): ix0 = input column of pixel lo's first tap.
template <int NV, bool kMask>
void max3s2_span(const float* const* rowp, size_t ny, size_t C, size_t c0, size_t ix0, size_t lo, size_t hi,
                 __m256i m, __m256 vmin, __m256 vmax, float* orow) {
  __m256 prev[NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) prev[v] = col_max<kMask>(rowp, ny, ix0 * C + c0 + 8 * v, m);
  size_t off = ix0 * C + c0;
  for (size_t ox = lo; ox < hi; ++ox, off += 2 * C) {
    float* o = orow + ox * C + c0;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const __m256 c1 = col_max<kMask>(rowp, ny, off + C + 8 * v, m);
      const __m256 c2 = col_max<kMask>(rowp, ny, off + 2 * C + 8 * v, m);
      const __m256 r = clamp8(max3(prev[v], c1, c2), vmin, vmax);
      prev[v] = c2;
      if (kMask) {
        store_lanes(o + 8 * v, m, r);
      } else {
        _mm256_storeu_ps(o + 8 * v, r);
      }
    }
  }
}

void pool_task(const void* vctx, size_t task) {
  const PoolCtx& x = *static_cast<const PoolCtx*>(vctx);
  const PoolParams& p = *x.p;
  const size_t r0 = x.rows * task / x.tasks, r1 = x.rows * (task + 1) / x.tasks;
  const __m256 vmin = _mm256_set1_ps(p.act.min), vmax = _mm256_set1_ps(p.act.max);
  const size_t C = x.C, cfull = C & ~size_t{7};
  const __m256i cmask = lane_mask(C - cfull);
  const __m256 init = _mm256_set1_ps(x.is_max ? -__builtin_inff() : 0.f);
  for (size_t r = r0; r < r1; ++r) {
    const size_t n = r / x.OH, oy = r % x.OH;
    const float* in_n = x.in + n * x.H * x.W * C;
    const float* rowp[64];
    size_t ny = 0;
    for (size_t ky = 0; ky < p.pool_h && ny < 64; ++ky) {
      const size_t iy_p = oy * p.stride_h + ky * p.dilation_h;
      if (iy_p < p.pad_top || iy_p - p.pad_top >= x.H) continue;
      rowp[ny++] = in_n + (iy_p - p.pad_top) * x.W * C;
    }
    size_t lo = 0, hi = 0;  // interior pixels already done by the separable path
    if (x.sep && ny > 0) {
      interior(x.OW, x.W, 3, 2, 1, p.pad_left, &lo, &hi);
      if (lo < hi) {
        const size_t ix0 = lo * 2 - p.pad_left;
        float* orow = x.out + r * x.OW * C;
        size_t c = 0;
        for (; c + 64 <= C; c += 64)
          max3s2_span<8, false>(rowp, ny, C, c, ix0, lo, hi, cmask, vmin, vmax, orow);
        for (; c + 16 <= C; c += 16)
          max3s2_span<2, false>(rowp, ny, C, c, ix0, lo, hi, cmask, vmin, vmax, orow);
        for (; c + 8 <= C; c += 8)
          max3s2_span<1, false>(rowp, ny, C, c, ix0, lo, hi, cmask, vmin, vmax, orow);
        if (c < C) max3s2_span<1, true>(rowp, ny, C, c, ix0, lo, hi, cmask, vmin, vmax, orow);
      }
    }
    for (size_t ox = 0; ox < x.OW; ++ox) {
      if (ox >= lo && ox < hi) {
        ox = hi - 1;
        continue;
      }
      size_t cols[64];  // element offsets of the valid columns within a row
      size_t nx = 0;
      for (size_t kx = 0; kx < p.pool_w && nx < 64; ++kx) {
        const size_t ix_p = ox * p.stride_w + kx * p.dilation_w;
        if (ix_p < p.pad_left || ix_p - p.pad_left >= x.W) continue;
        cols[nx++] = (ix_p - p.pad_left) * C;
      }
      const __m256 div = _mm256_set1_ps(static_cast<float>(nx * ny));
      float* o = x.out + (r * x.OW + ox) * C;
      for (size_t c = 0; c < C; c += 8) {
        const bool full = c < cfull;
        __m256 acc = init;
        for (size_t j = 0; j < ny; ++j) {
          for (size_t i = 0; i < nx; ++i) {
            const float* ip = rowp[j] + cols[i] + c;
            const __m256 v = full ? _mm256_loadu_ps(ip) : _mm256_maskload_ps(ip, cmask);
            acc = x.is_max ? max_nan(acc, v) : _mm256_add_ps(acc, v);
          }
        }
        if (!x.is_max && nx * ny > 0) acc = _mm256_div_ps(acc, div);
        acc = clamp8(acc, vmin, vmax);
        if (full) {
          _mm256_storeu_ps(o + c, acc);
        } else {
          store_lanes(o + c, cmask, acc);
        }
      }
    }
  }
}

void pool(bool is_max, const PoolParams& p, size_t N, size_t H, size_t W, size_t C, const float* in,
          size_t OH, size_t OW, float* out, Parallel& par) {
  if (N == 0 || OH == 0 || OW == 0 || C == 0) return;
  PoolCtx x;
  x.p = &p;
  x.H = H;
  x.W = W;
  x.OH = OH;
  x.OW = OW;
  x.C = C;
  x.rows = N * OH;
  x.in = in;
  x.out = out;
  x.is_max = is_max;
  x.sep = is_max && p.pool_w == 3 && p.stride_w == 2 && p.dilation_w == 1;
  x.tasks = internal::task_count(x.rows, static_cast<double>(OW) * C * p.pool_h * p.pool_w,
                                 internal::parallel_threads(par), 4);
  internal::parallel_run(par, x.tasks, pool_task, &x);
}

// Global average pooling: per (image, block of 64 channels) eight accumulators summed over the pixels in
// order, then divided by the pixel count: the scalar kernel's operations in its order (same bits).
struct GapCtx {
  size_t HW, C, cblocks, units, tasks;
  const float* in;
  float* out;
  float vmin, vmax;
};

void gap_task(const void* vctx, size_t task) {
  const GapCtx& x = *static_cast<const GapCtx*>(vctx);
  const size_t u0 = x.units * task / x.tasks, u1 = x.units * (task + 1) / x.tasks;
  const __m256 vmin = _mm256_set1_ps(x.vmin), vmax = _mm256_set1_ps(x.vmax);
  const __m256 div = _mm256_set1_ps(static_cast<float>(x.HW));
  for (size_t u = u0; u < u1; ++u) {
    const size_t n = u / x.cblocks, c0 = (u % x.cblocks) * 64, cn = min_sz(64, x.C - c0);
    const size_t nv = div_up(cn, 8);
    __m256i mask[8];
    for (size_t v = 0; v < nv; ++v) mask[v] = lane_mask(min_sz(8, cn - v * 8));
    __m256 acc[8];
    for (size_t v = 0; v < 8; ++v) acc[v] = _mm256_setzero_ps();
    const float* a = x.in + n * x.HW * x.C + c0;
    if (cn == 64) {
      for (size_t i = 0; i < x.HW; ++i, a += x.C) {
#pragma GCC unroll 8
        for (size_t v = 0; v < 8; ++v) acc[v] = _mm256_add_ps(acc[v], _mm256_loadu_ps(a + v * 8));
      }
    } else {
      for (size_t i = 0; i < x.HW; ++i, a += x.C)
        for (size_t v = 0; v < nv; ++v)
          acc[v] = _mm256_add_ps(acc[v], _mm256_maskload_ps(a + v * 8, mask[v]));
    }
    float* o = x.out + n * x.C + c0;
    for (size_t v = 0; v < nv; ++v) {
      const __m256 r = x.HW ? _mm256_div_ps(acc[v], div) : _mm256_setzero_ps();
      store_lanes(o + v * 8, mask[v], clamp8(r, vmin, vmax));
    }
  }
}

}  // namespace

void global_avg_pool(size_t N, size_t HW, size_t C, const float* in, float* out, Activation act,
                     Parallel& par) {
  if (N == 0 || C == 0) return;
  GapCtx x;
  x.HW = HW;
  x.C = C;
  x.cblocks = div_up(C, 64);
  x.units = N * x.cblocks;
  x.in = in;
  x.out = out;
  x.vmin = act.min;
  x.vmax = act.max;
  // A unit's cost in task_count's multiply-adds: each input element is a load from L2 or from the core that
  // wrote it (the conv before splits its channels over the threads, as these units do). Counted as one,
  // MobileNetV2's 7x7x1280 pool ran on the caller alone at 2 threads, reading half its input from the other
  // core: 7.1 us against 6.4 at 1 thread.
  x.tasks = internal::task_count(x.units, 4.0 * static_cast<double>(HW) * min_sz(C, 64),
                                 internal::parallel_threads(par), 1);
  internal::parallel_run(par, x.tasks, gap_task, &x);
}

void max_pool2d(const PoolParams& p, size_t N, size_t H, size_t W, size_t C, const float* in, size_t OH,
                size_t OW, float* out, Parallel& par) {
  if (p.pool_h > 64 || p.pool_w > 64) return scalar::max_pool2d(p, N, H, W, C, in, OH, OW, out, par);
  pool(true, p, N, H, W, C, in, OH, OW, out, par);
}

void avg_pool2d(const PoolParams& p, size_t N, size_t H, size_t W, size_t C, const float* in, size_t OH,
                size_t OW, float* out, Parallel& par) {
  if (p.pool_h > 64 || p.pool_w > 64) return scalar::avg_pool2d(p, N, H, W, C, in, OH, OW, out, par);
  pool(false, p, N, H, W, C, in, OH, OW, out, par);
}

}  // namespace WEBXNN_AVX2_NS
}  // namespace webxnn
