// Scalar convolution kernels (NHWC): dense/grouped conv, depthwise conv, transposed conv.
//
// Packed dense filter (conv and deconv): [OC bias][groups][kh][kw][gic][goc] — output channels innermost so
// the inner loop streams a row of weights into a row of accumulators (vectorised by the compiler).
// Packed depthwise filter: [OC bias][kh][kw][OC] (OC = channels * depth multiplier).
// Each output pixel is bias + taps accumulated in (ky, kx, ci) order whatever the task split, so results are
// identical for any thread count.
#include <cstring>
#include <vector>

#include "kernels/scalar/common.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace scalar {
namespace {

using isize = std::ptrdiff_t;

size_t out_channels(const ConvParams& p) { return size_t{p.groups} * p.group_output_channels; }
size_t in_channels(const ConvParams& p) { return size_t{p.groups} * p.group_input_channels; }

// Splits N*OH output rows (and, when there are few rows, each row into column chunks) into tasks.
struct PixelSplit {
  size_t rows, col_chunks, units, tasks;
  PixelSplit(const Parallel& par, size_t N, size_t OH, size_t OW, double pixel_cost) {
    rows = N * OH;
    col_chunks = 1;
    const size_t want = par.threads() * 4;
    if (rows < want && OW > 1) col_chunks = std::min(OW, (want + rows - 1) / std::max<size_t>(rows, 1));
    units = rows * col_chunks;
    tasks = pick_tasks(par, units, pixel_cost * static_cast<double>(OW) / static_cast<double>(col_chunks));
  }
  // Calls fn(n, oy, ox0, ox1) for every piece of task `task`.
  template <typename Fn>
  void for_each(size_t task, size_t OH, size_t OW, Fn&& fn) const {
    size_t u0, u1;
    chunk_range(units, tasks, task, &u0, &u1);
    for (size_t u = u0; u < u1; ++u) {
      const size_t row = u / col_chunks, chunk = u % col_chunks;
      size_t x0, x1;
      chunk_range(OW, col_chunks, chunk, &x0, &x1);
      fn(row / OH, row % OH, x0, x1);
    }
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------- conv2d
size_t conv2d_packed_size(const ConvParams& p) {
  const size_t oc = out_channels(p);
  return (oc + oc * size_t{p.kernel_h} * p.kernel_w * p.group_input_channels) * sizeof(float);
}

void conv2d_pack(const ConvParams& p, const float* filter, const float* bias, void* packed) {
  const size_t oc = out_channels(p), gic = p.group_input_channels, goc = p.group_output_channels;
  const size_t taps = size_t{p.kernel_h} * p.kernel_w;
  float* out = static_cast<float*>(packed);
  if (bias) {
    std::memcpy(out, bias, oc * sizeof(float));
  } else {
    std::fill(out, out + oc, 0.f);
  }
  float* w = out + oc;
  for (size_t g = 0; g < p.groups; ++g)
    for (size_t co = 0; co < goc; ++co)
      for (size_t t = 0; t < taps; ++t)
        for (size_t ci = 0; ci < gic; ++ci)
          w[((g * taps + t) * gic + ci) * goc + co] = filter[((g * goc + co) * taps + t) * gic + ci];
}

void conv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
            const void* packed, float* out, Parallel& par) {
  const size_t OC = out_channels(p), IC = in_channels(p);
  const size_t gic = p.group_input_channels, goc = p.group_output_channels;
  const size_t KH = p.kernel_h, KW = p.kernel_w, taps = KH * KW;
  if (N == 0 || OH == 0 || OW == 0 || OC == 0) return;
  const float* bias = static_cast<const float*>(packed);
  const float* wts = bias + OC;
  const Clamp clamp(p.act);
  const PixelSplit split(par, N, OH, OW, static_cast<double>(taps) * gic * OC);
  par.run(split.tasks, [&](size_t task) {
    split.for_each(task, OH, OW, [&](size_t n, size_t oy, size_t x0, size_t x1) {
      const float* in_n = in + n * H * W * IC;
      for (size_t ox = x0; ox < x1; ++ox) {
        float* acc = out + ((n * OH + oy) * OW + ox) * OC;
        std::memcpy(acc, bias, OC * sizeof(float));
        for (size_t ky = 0; ky < KH; ++ky) {
          const isize iy = static_cast<isize>(oy * p.stride_h + ky * p.dilation_h) - static_cast<isize>(p.pad_top);
          if (iy < 0 || iy >= static_cast<isize>(H)) continue;
          for (size_t kx = 0; kx < KW; ++kx) {
            const isize ix =
                static_cast<isize>(ox * p.stride_w + kx * p.dilation_w) - static_cast<isize>(p.pad_left);
            if (ix < 0 || ix >= static_cast<isize>(W)) continue;
            const float* px = in_n + (static_cast<size_t>(iy) * W + static_cast<size_t>(ix)) * IC;
            const size_t t = ky * KW + kx;
            for (size_t g = 0; g < p.groups; ++g) {
              const float* a = px + g * gic;
              const float* w = wts + (g * taps + t) * gic * goc;
              float* c = acc + g * goc;
              for (size_t ci = 0; ci < gic; ++ci) {
                const float av = a[ci];
                const float* wr = w + ci * goc;
                for (size_t co = 0; co < goc; ++co) c[co] += av * wr[co];
              }
            }
          }
        }
        clamp.apply(acc, OC);
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------- dwconv2d
void conv2d_residual(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
                     const void* packed, const float* residual, float* out, Parallel& par) {
  ConvParams q = p;
  q.act = Activation{};
  conv2d(q, N, H, W, in, OH, OW, packed, out, par);
  const Clamp clamp(p.act);
  const size_t n = N * OH * OW * out_channels(p);
  for (size_t i = 0; i < n; ++i) out[i] = clamp(out[i] + residual[i]);
}

size_t dwconv2d_packed_size(const ConvParams& p) {
  const size_t oc = out_channels(p);
  return (oc + oc * size_t{p.kernel_h} * p.kernel_w) * sizeof(float);
}

void dwconv2d_pack(const ConvParams& p, const float* filter, const float* bias, void* packed) {
  const size_t oc = out_channels(p), taps = size_t{p.kernel_h} * p.kernel_w;
  float* out = static_cast<float*>(packed);
  if (bias) {
    std::memcpy(out, bias, oc * sizeof(float));
  } else {
    std::fill(out, out + oc, 0.f);
  }
  std::memcpy(out + oc, filter, taps * oc * sizeof(float));
}

void dwconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
              const void* packed, float* out, Parallel& par) {
  const size_t C = p.groups, dm = p.group_output_channels, OC = C * dm;
  const size_t KH = p.kernel_h, KW = p.kernel_w;
  if (N == 0 || OH == 0 || OW == 0 || OC == 0) return;
  const float* bias = static_cast<const float*>(packed);
  const float* wts = bias + OC;
  const Clamp clamp(p.act);
  const PixelSplit split(par, N, OH, OW, static_cast<double>(KH * KW) * OC);
  par.run(split.tasks, [&](size_t task) {
    split.for_each(task, OH, OW, [&](size_t n, size_t oy, size_t x0, size_t x1) {
      const float* in_n = in + n * H * W * C;
      for (size_t ox = x0; ox < x1; ++ox) {
        float* acc = out + ((n * OH + oy) * OW + ox) * OC;
        std::memcpy(acc, bias, OC * sizeof(float));
        for (size_t ky = 0; ky < KH; ++ky) {
          const isize iy = static_cast<isize>(oy * p.stride_h + ky * p.dilation_h) - static_cast<isize>(p.pad_top);
          if (iy < 0 || iy >= static_cast<isize>(H)) continue;
          for (size_t kx = 0; kx < KW; ++kx) {
            const isize ix =
                static_cast<isize>(ox * p.stride_w + kx * p.dilation_w) - static_cast<isize>(p.pad_left);
            if (ix < 0 || ix >= static_cast<isize>(W)) continue;
            const float* a = in_n + (static_cast<size_t>(iy) * W + static_cast<size_t>(ix)) * C;
            const float* w = wts + (ky * KW + kx) * OC;
            if (dm == 1) {
              for (size_t c = 0; c < C; ++c) acc[c] += a[c] * w[c];
            } else {
              for (size_t c = 0; c < C; ++c) {
                const float av = a[c];
                for (size_t j = 0; j < dm; ++j) acc[c * dm + j] += av * w[c * dm + j];
              }
            }
          }
        }
        clamp.apply(acc, OC);
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------- deconv2d
size_t deconv2d_packed_size(const ConvParams& p) { return conv2d_packed_size(p); }

void deconv2d_pack(const ConvParams& p, const float* filter, const float* bias, void* packed) {
  conv2d_pack(p, filter, bias, packed);
}

// Transposed convolution as a gather: output (oy, ox) receives input (iy, ix) through tap (ky, kx) when
// oy + pad_top = iy*sh + ky*dh (and likewise for x). Rows added by the adjustment simply receive fewer taps.
void deconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
              const void* packed, float* out, Parallel& par) {
  const size_t OC = out_channels(p), IC = in_channels(p);
  const size_t gic = p.group_input_channels, goc = p.group_output_channels;
  const size_t KH = p.kernel_h, KW = p.kernel_w, taps = KH * KW;
  const size_t sh = p.stride_h, sw = p.stride_w;
  if (N == 0 || OH == 0 || OW == 0 || OC == 0) return;
  const float* bias = static_cast<const float*>(packed);
  const float* wts = bias + OC;
  const Clamp clamp(p.act);
  const double pixel_cost = static_cast<double>(taps) * gic * OC / static_cast<double>(sh * sw);
  const PixelSplit split(par, N, OH, OW, pixel_cost);
  par.run(split.tasks, [&](size_t task) {
    split.for_each(task, OH, OW, [&](size_t n, size_t oy, size_t x0, size_t x1) {
      const float* in_n = in + n * H * W * IC;
      for (size_t ox = x0; ox < x1; ++ox) {
        float* acc = out + ((n * OH + oy) * OW + ox) * OC;
        std::memcpy(acc, bias, OC * sizeof(float));
        for (size_t ky = 0; ky < KH; ++ky) {
          const isize ty = static_cast<isize>(oy + p.pad_top) - static_cast<isize>(ky * p.dilation_h);
          if (ty < 0 || ty % static_cast<isize>(sh) != 0) continue;
          const size_t iy = static_cast<size_t>(ty) / sh;
          if (iy >= H) continue;
          for (size_t kx = 0; kx < KW; ++kx) {
            const isize tx = static_cast<isize>(ox + p.pad_left) - static_cast<isize>(kx * p.dilation_w);
            if (tx < 0 || tx % static_cast<isize>(sw) != 0) continue;
            const size_t ix = static_cast<size_t>(tx) / sw;
            if (ix >= W) continue;
            const float* px = in_n + (iy * W + ix) * IC;
            const size_t t = ky * KW + kx;
            for (size_t g = 0; g < p.groups; ++g) {
              const float* a = px + g * gic;
              const float* w = wts + (g * taps + t) * gic * goc;
              float* c = acc + g * goc;
              for (size_t ci = 0; ci < gic; ++ci) {
                const float av = a[ci];
                const float* wr = w + ci * goc;
                for (size_t co = 0; co < goc; ++co) c[co] += av * wr[co];
              }
            }
          }
        }
        clamp.apply(acc, OC);
      }
    });
  });
}

}  // namespace scalar
}  // namespace webxnn
