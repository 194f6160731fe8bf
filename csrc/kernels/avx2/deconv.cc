// AVX2+FMA transposed convolution: one GEMM per image and group, then a gather (compiled with -mavx2 -mfma).
//
// Every input pixel times every tap is one product of a transposed convolution, and none is wasted, so the
// multiplies are one GEMM: cols[H*W, taps*goc] = in[H*W, gic] x W[gic, taps*goc], on gemm.cc's packed
// panels at its ~95 % of the FMA peak. Then each output pixel gathers its taps' columns (oy + pad_top =
// iy*sh + ky*dh, likewise for x), adds the bias and clamps: a pass over memory, split by output rows, with
// no scatter races and a fixed summation order (bias, then taps in (ky, kx) order, as the scalar kernel), so
// the result does not depend on the thread count. The zero-inserted form would multiply by zeros; stride
// phases as sub-convolutions would do the same products as here with more code. The cost is the cols
// buffer, bounded by working in bands of output rows (8 MB of columns at most).
//
// Packed layout (private to this table): per group gemm panels of W [gic x taps*goc] (column t*goc + co),
// zero bias in the panels, then the bias [groups*goc].
#include <immintrin.h>

#include <cstdint>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/simd.h"
#include "kernels/internal.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace WEBXNN_AVX2_NS {
namespace {

// Shapes the scalar kernel keeps, decided the same way by packing and running (the two layouts differ):
// narrow groups, and kernels with more taps than the gather's per-pixel list holds.
bool deconv_uses_scalar(const ConvParams& p) {
  return narrow_groups(p) || size_t{p.kernel_h} * p.kernel_w > 256 || p.kernel_h > 255 || p.kernel_w > 255;
}

size_t group_bytes(const ConvParams& p) {
  return gemm_packed_size(p.group_input_channels, size_t{p.kernel_h} * p.kernel_w * p.group_output_channels);
}

struct GatherCtx {
  const ConvParams* p;
  size_t H, W, OH, OW, OC, goc, taps, tasks;
  size_t oy0, oy1;    // the band of output rows gathered
  size_t iy0;         // the first input row in cols
  const float* cols;  // [rows from iy0, W, taps*goc] of one image and group
  const float* bias;  // this group's
  float* out;         // this image's [OH, OW, OC], at this group's first channel
};

// Valid taps along one axis for output coordinate o: k with o + pad = i*stride + k*dil, 0 <= i < n.
// Writes (k, i) pairs to ks/is and returns how many.
size_t axis_taps(size_t o, size_t pad, size_t stride, size_t dil, size_t kernel, size_t n, uint32_t* ks,
                 uint32_t* is) {
  size_t cnt = 0;
  for (size_t k = 0; k < kernel; ++k) {
    const ptrdiff_t t = static_cast<ptrdiff_t>(o + pad) - static_cast<ptrdiff_t>(k * dil);
    if (t < 0 || t % static_cast<ptrdiff_t>(stride) != 0) continue;
    const size_t i = static_cast<size_t>(t) / stride;
    if (i >= n) continue;
    ks[cnt] = static_cast<uint32_t>(k);
    is[cnt] = static_cast<uint32_t>(i);
    ++cnt;
  }
  return cnt;
}

void gather_task(const void* vctx, size_t task) {
  const GatherCtx& x = *static_cast<const GatherCtx*>(vctx);
  const ConvParams& p = *x.p;
  const size_t rows = x.oy1 - x.oy0;
  const size_t y0 = x.oy0 + rows * task / x.tasks, y1 = x.oy0 + rows * (task + 1) / x.tasks;
  const size_t row = x.taps * x.goc;  // cols floats per input pixel
  const size_t KW = p.kernel_w;
  const __m256 vmin = _mm256_set1_ps(p.act.min), vmax = _mm256_set1_ps(p.act.max);
  // The horizontal taps of every output column, worked out once per task (they do not depend on the row).
  uint32_t* xk = static_cast<uint32_t*>(internal::aligned_alloc64(2 * x.OW * KW * sizeof(uint32_t) + 64));
  uint32_t* xi = xk + x.OW * KW;
  uint8_t* xn = static_cast<uint8_t*>(internal::aligned_alloc64(x.OW + 64));
  for (size_t ox = 0; ox < x.OW; ++ox)
    xn[ox] = static_cast<uint8_t>(
        axis_taps(ox, p.pad_left, p.stride_w, p.dilation_w, KW, x.W, xk + ox * KW, xi + ox * KW));
  uint32_t yk[256], yi[256];
  const float*
      src[256];  // the contributing cols rows of one output pixel (taps <= 256 checked by the caller)
  for (size_t oy = y0; oy < y1; ++oy) {
    const size_t ny = axis_taps(oy, p.pad_top, p.stride_h, p.dilation_h, p.kernel_h, x.H, yk, yi);
    for (size_t ox = 0; ox < x.OW; ++ox) {
      size_t n = 0;
      for (size_t a = 0; a < ny; ++a)  // (ky, kx) order, as the scalar kernel
        for (size_t b = 0; b < xn[ox]; ++b)
          src[n++] = x.cols + ((yi[a] - x.iy0) * x.W + xi[ox * KW + b]) * row +
                     (yk[a] * KW + xk[ox * KW + b]) * x.goc;
      float* o = x.out + (oy * x.OW + ox) * x.OC;
      for (size_t c = 0; c < x.goc; c += 8) {
        const bool full = c + 8 <= x.goc;
        const __m256i m = lane_mask(x.goc - c);
        __m256 acc = full ? _mm256_loadu_ps(x.bias + c) : _mm256_maskload_ps(x.bias + c, m);
        for (size_t t = 0; t < n; ++t)
          acc = _mm256_add_ps(acc, full ? _mm256_loadu_ps(src[t] + c) : _mm256_maskload_ps(src[t] + c, m));
        acc = _mm256_min_ps(vmax, _mm256_max_ps(vmin, acc));
        if (full) {
          _mm256_storeu_ps(o + c, acc);
        } else {
          store_lanes(o + c, m, acc);
        }
      }
    }
  }
  internal::aligned_free(xk);
  internal::aligned_free(xn);
}

}  // namespace

size_t deconv2d_packed_size(const ConvParams& p) {
  if (deconv_uses_scalar(p)) return scalar::deconv2d_packed_size(p);
  const size_t OC = size_t{p.groups} * p.group_output_channels;
  return p.groups * group_bytes(p) + (OC + 16) * sizeof(float);
}

void deconv2d_pack(const ConvParams& p, const float* filter_ohwi, const float* bias, void* packed) {
  if (deconv_uses_scalar(p)) return scalar::deconv2d_pack(p, filter_ohwi, bias, packed);
  const size_t gic = p.group_input_channels, goc = p.group_output_channels;
  const size_t taps = size_t{p.kernel_h} * p.kernel_w, N = taps * goc;
  // W as an [N, K] operand: row t*goc + co is filter[g*goc + co][t][:].
  float* w = static_cast<float*>(internal::aligned_alloc64(N * gic * sizeof(float)));
  char* out = static_cast<char*>(packed);
  for (size_t g = 0; g < p.groups; ++g) {
    for (size_t t = 0; t < taps; ++t)
      for (size_t co = 0; co < goc; ++co)
        for (size_t ci = 0; ci < gic; ++ci)
          w[(t * goc + co) * gic + ci] = filter_ohwi[((g * goc + co) * taps + t) * gic + ci];
    gemm_pack(gic, N, w, true, nullptr, out + g * group_bytes(p));
  }
  internal::aligned_free(w);
  float* b = reinterpret_cast<float*>(out + p.groups * group_bytes(p));
  const size_t OC = size_t{p.groups} * goc;
  for (size_t c = 0; c < OC + 16; ++c) b[c] = bias && c < OC ? bias[c] : 0.f;
}

void deconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
              const void* packed, float* out, Parallel& par) {
  const size_t taps = size_t{p.kernel_h} * p.kernel_w;
  if (deconv_uses_scalar(p)) return scalar::deconv2d(p, N, H, W, in, OH, OW, packed, out, par);
  if (N == 0 || OH == 0 || OW == 0 || p.groups == 0 || p.group_output_channels == 0) return;
  const size_t gic = p.group_input_channels, goc = p.group_output_channels;
  const size_t IC = size_t{p.groups} * gic, OC = size_t{p.groups} * goc;
  const char* pk = static_cast<const char*>(packed);
  const float* bias = reinterpret_cast<const float*>(pk + p.groups * group_bytes(p));
  // Bands of output rows whose input rows' columns fit kColsBytes (at least one output row per band): the
  // scratch stays bounded whatever the shapes, and a band's columns are still in cache when gathered. Input
  // rows shared by two bands (kernel taller than the stride) are multiplied again, a small share.
  constexpr size_t kColsBytes = size_t{8} << 20;
  const size_t row_bytes = W * taps * goc * sizeof(float);  // columns of one input row
  const size_t in_rows_cap = max_sz(1, kColsBytes / row_bytes);
  const size_t span = size_t{p.dilation_h} * (p.kernel_h - 1);  // oy + pt - span .. oy + pt reach input rows
  const size_t band =
      max_sz(1, in_rows_cap > span / p.stride_h + 1 ? (in_rows_cap - span / p.stride_h - 1) * p.stride_h : 1);
  const size_t cap_rows = min_sz(H, (band - 1 + span) / p.stride_h + 2);
  float* cols =
      static_cast<float*>(internal::scratch(internal::Scratch::kDeconvCols, cap_rows * row_bytes + 64));
  const size_t threads = internal::parallel_threads(par);
  GatherCtx x;
  x.p = &p;
  x.H = H;
  x.W = W;
  x.OH = OH;
  x.OW = OW;
  x.OC = OC;
  x.goc = goc;
  x.taps = taps;
  x.cols = cols;
  const Activation none;
  for (size_t n = 0; n < N; ++n) {
    for (size_t g = 0; g < p.groups; ++g) {
      x.bias = bias + g * goc;
      x.out = out + n * OH * OW * OC + g * goc;
      for (size_t oy0 = 0; oy0 < OH; oy0 += band) {
        const size_t oy1 = min_sz(OH, oy0 + band);
        // Input rows that reach output rows [oy0, oy1): iy * sh in [oy0 + pt - span, oy1 - 1 + pt].
        const ptrdiff_t lo = static_cast<ptrdiff_t>(oy0 + p.pad_top) - static_cast<ptrdiff_t>(span);
        const size_t i0 = lo <= 0 ? 0 : (static_cast<size_t>(lo) + p.stride_h - 1) / p.stride_h;
        const size_t i1 = min_sz(H, (oy1 - 1 + p.pad_top) / p.stride_h + 1);
        x.iy0 = i0;
        if (i1 > i0) {
          gemm((i1 - i0) * W, taps * goc, gic, in + (n * H + i0) * W * IC + g * gic, IC,
               pk + g * group_bytes(p), cols, taps * goc, none, par);
        }
        x.oy0 = oy0;
        x.oy1 = oy1;
        // A few thousand output values per task at least: below that a fork/join costs more than the gather.
        x.tasks = threads > 1 && (oy1 - oy0) * OW * goc >= 16384 ? min_sz(oy1 - oy0, threads * 4) : 1;
        internal::parallel_run(par, x.tasks, gather_task, &x);
      }
    }
  }
}

}  // namespace WEBXNN_AVX2_NS
}  // namespace webxnn
