// AVX2+FMA depthwise convolution (depth multiplier 1; others go to the scalar kernel). Per output pixel the
// valid taps are listed once, then each 8-channel block accumulates all taps in one register.
// Packed layout = the scalar one: [C bias][kh*kw][C].
#include <immintrin.h>

#include "kernels/avx2/avx2.h"
#include "kernels/internal.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace avx2 {
namespace {

inline size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

struct DwCtx {
  const ConvParams* p;
  size_t N, H, W, OH, OW, C, taps, rows, col_chunks, units, tasks;
  const float* in;
  const float* bias;
  const float* w;
  float* out;
  float vmin, vmax;
};

inline __m256i tail_mask(size_t n) {  // first n lanes set (n < 8)
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), idx);
}

void dw_task(const void* vctx, size_t task) {
  const DwCtx& x = *static_cast<const DwCtx*>(vctx);
  const ConvParams& p = *x.p;
  const size_t u0 = x.units * task / x.tasks, u1 = x.units * (task + 1) / x.tasks;
  const __m256 vmin = _mm256_set1_ps(x.vmin), vmax = _mm256_set1_ps(x.vmax);
  const size_t C = x.C;
  const __m256i mask = tail_mask(C % 8);
  const float** src = static_cast<const float**>(internal::aligned_alloc64(x.taps * sizeof(float*)));
  const float** wts = static_cast<const float**>(internal::aligned_alloc64(x.taps * sizeof(float*)));
  for (size_t u = u0; u < u1; ++u) {
    const size_t row = u / x.col_chunks, chunk = u % x.col_chunks;
    const size_t n = row / x.OH, oy = row % x.OH;
    const size_t ox0 = x.OW * chunk / x.col_chunks, ox1 = x.OW * (chunk + 1) / x.col_chunks;
    const float* in_n = x.in + n * x.H * x.W * C;
    for (size_t ox = ox0; ox < ox1; ++ox) {
      size_t nt = 0;
      for (size_t ky = 0; ky < p.kernel_h; ++ky) {
        const size_t iy_p = oy * p.stride_h + ky * p.dilation_h;
        if (iy_p < p.pad_top || iy_p - p.pad_top >= x.H) continue;
        for (size_t kx = 0; kx < p.kernel_w; ++kx) {
          const size_t ix_p = ox * p.stride_w + kx * p.dilation_w;
          if (ix_p < p.pad_left || ix_p - p.pad_left >= x.W) continue;
          src[nt] = in_n + ((iy_p - p.pad_top) * x.W + (ix_p - p.pad_left)) * C;
          wts[nt] = x.w + (ky * p.kernel_w + kx) * C;
          ++nt;
        }
      }
      float* o = x.out + ((n * x.OH + oy) * x.OW + ox) * C;
      size_t c = 0;
      for (; c + 16 <= C; c += 16) {
        __m256 a0 = _mm256_loadu_ps(x.bias + c), a1 = _mm256_loadu_ps(x.bias + c + 8);
        for (size_t t = 0; t < nt; ++t) {
          a0 = _mm256_fmadd_ps(_mm256_loadu_ps(src[t] + c), _mm256_loadu_ps(wts[t] + c), a0);
          a1 = _mm256_fmadd_ps(_mm256_loadu_ps(src[t] + c + 8), _mm256_loadu_ps(wts[t] + c + 8), a1);
        }
        _mm256_storeu_ps(o + c, _mm256_min_ps(vmax, _mm256_max_ps(vmin, a0)));
        _mm256_storeu_ps(o + c + 8, _mm256_min_ps(vmax, _mm256_max_ps(vmin, a1)));
      }
      for (; c + 8 <= C; c += 8) {
        __m256 a0 = _mm256_loadu_ps(x.bias + c);
        for (size_t t = 0; t < nt; ++t)
          a0 = _mm256_fmadd_ps(_mm256_loadu_ps(src[t] + c), _mm256_loadu_ps(wts[t] + c), a0);
        _mm256_storeu_ps(o + c, _mm256_min_ps(vmax, _mm256_max_ps(vmin, a0)));
      }
      if (c < C) {
        __m256 a0 = _mm256_maskload_ps(x.bias + c, mask);
        for (size_t t = 0; t < nt; ++t)
          a0 = _mm256_fmadd_ps(_mm256_maskload_ps(src[t] + c, mask), _mm256_maskload_ps(wts[t] + c, mask), a0);
        _mm256_maskstore_ps(o + c, mask, _mm256_min_ps(vmax, _mm256_max_ps(vmin, a0)));
      }
    }
  }
  internal::aligned_free(src);
  internal::aligned_free(wts);
}

}  // namespace

void dwconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
              const void* packed, float* out, Parallel& par) {
  if (p.group_output_channels != 1) return scalar::dwconv2d(p, N, H, W, in, OH, OW, packed, out, par);
  if (N == 0 || OH == 0 || OW == 0 || p.groups == 0) return;
  DwCtx x;
  x.p = &p;
  x.N = N;
  x.H = H;
  x.W = W;
  x.OH = OH;
  x.OW = OW;
  x.C = p.groups;
  x.taps = size_t{p.kernel_h} * p.kernel_w;
  x.in = in;
  x.bias = static_cast<const float*>(packed);
  x.w = x.bias + x.C;
  x.out = out;
  x.vmin = p.act.min;
  x.vmax = p.act.max;
  x.rows = N * OH;
  const size_t threads = internal::parallel_threads(par);
  x.col_chunks = 1;
  if (threads > 1 && x.rows < threads * 4 && OW > 1) x.col_chunks = min_sz(OW, (threads * 4 + x.rows - 1) / x.rows);
  x.units = x.rows * x.col_chunks;
  const double cost = static_cast<double>(OW / x.col_chunks + 1) * x.taps * x.C;
  size_t tasks = 1;
  if (threads > 1 && x.units > 1) {
    tasks = static_cast<size_t>(cost * static_cast<double>(x.units) / 32768.0);
    tasks = min_sz(min_sz(tasks, threads * 8), x.units);
    if (tasks == 0) tasks = 1;
  }
  x.tasks = tasks;
  internal::parallel_run(par, x.tasks, dw_task, &x);
}

}  // namespace avx2
}  // namespace webxnn
