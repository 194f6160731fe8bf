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

// Writes the bias block that starts every packed filter (zeros when there is no bias).
void pack_bias(const float* bias, size_t oc, float* out) {
  if (bias) {
    std::memcpy(out, bias, oc * sizeof(float));
  } else {
    std::fill(out, out + oc, 0.f);
  }
}

// Runs fn(in_n, oy, ox, acc) for every output pixel, split over tasks, with acc (OC floats) preset to the
// bias and clamped afterwards. The per-pixel work order never depends on the split.
template <typename Fn>
void for_each_output_pixel(const ConvParams& p, Parallel& par, size_t N, size_t HWC, size_t OH, size_t OW,
                           size_t OC, double pixel_cost, const float* in, const float* bias, float* out,
                           Fn&& fn) {
  const Clamp clamp(p.act);
  const PixelSplit split(par, N, OH, OW, pixel_cost);
  par.run(split.tasks, [&](size_t task) {
    split.for_each(task, OH, OW, [&](size_t n, size_t oy, size_t x0, size_t x1) {
      for (size_t ox = x0; ox < x1; ++ox) {
        float* acc = out + ((n * OH + oy) * OW + ox) * OC;
        std::memcpy(acc, bias, OC * sizeof(float));
        fn(in + n * HWC, oy, ox, acc);
        clamp.apply(acc, OC);
      }
    });
  });
}

// Calls fn(px, t) for each filter tap t = ky*KW + kx of output pixel (oy, ox) that lands inside the H x W
// input, in (ky, kx) order; px points at that input pixel (C elements between adjacent pixels: the channels
// of NHWC, 1 for planes). Padding taps are skipped.
template <typename Fn>
void for_each_tap(const ConvParams& p, size_t H, size_t W, size_t C, const float* in_n, size_t oy, size_t ox,
                  Fn&& fn) {
  for (size_t ky = 0; ky < p.kernel_h; ++ky) {
    const isize iy = static_cast<isize>(oy * p.stride_h + ky * p.dilation_h) - static_cast<isize>(p.pad_top);
    if (iy < 0 || iy >= static_cast<isize>(H)) continue;
    for (size_t kx = 0; kx < p.kernel_w; ++kx) {
      const isize ix =
          static_cast<isize>(ox * p.stride_w + kx * p.dilation_w) - static_cast<isize>(p.pad_left);
      if (ix < 0 || ix >= static_cast<isize>(W)) continue;
      fn(in_n + (static_cast<size_t>(iy) * W + static_cast<size_t>(ix)) * C, ky * p.kernel_w + kx);
    }
  }
}

// acc[group g] += the input pixel px (groups * gic channels, cs elements apart) times tap t of the packed
// dense filter ([groups][taps][gic][goc]); output channels innermost, so the inner loop streams a weight row.
void accumulate_grouped_tap(const ConvParams& p, const float* px, size_t cs, const float* wts, size_t t,
                            float* acc) {
  const size_t gic = p.group_input_channels, goc = p.group_output_channels;
  const size_t taps = size_t{p.kernel_h} * p.kernel_w;
  for (size_t g = 0; g < p.groups; ++g) {
    const float* a = px + g * gic * cs;
    const float* w = wts + (g * taps + t) * gic * goc;
    float* c = acc + g * goc;
    for (size_t ci = 0; ci < gic; ++ci) {
      const float av = a[ci * cs];
      const float* wr = w + ci * goc;
      for (size_t co = 0; co < goc; ++co) c[co] += av * wr[co];
    }
  }
}

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
  pack_bias(bias, oc, out);
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
  const size_t taps = size_t{p.kernel_h} * p.kernel_w;
  if (N == 0 || OH == 0 || OW == 0 || OC == 0) return;
  const float* bias = static_cast<const float*>(packed);
  const float* wts = bias + OC;
  const double cost = static_cast<double>(taps) * p.group_input_channels * OC;
  // Element strides between adjacent pixels and between channels: NHWC, or planes (p.input_nchw).
  const size_t pix = p.input_nchw ? 1 : IC, cs = p.input_nchw ? H * W : 1;
  for_each_output_pixel(p, par, N, H * W * IC, OH, OW, OC, cost, in, bias, out,
                        [&](const float* in_n, size_t oy, size_t ox, float* acc) {
                          for_each_tap(p, H, W, pix, in_n, oy, ox, [&](const float* px, size_t t) {
                            accumulate_grouped_tap(p, px, cs, wts, t, acc);
                          });
                        });
}

bool conv2d_reads_nchw(const ConvParams&) { return true; }  // the same loop either way

void conv2d_residual(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
                     const void* packed, const float* residual, float* out, Parallel& par) {
  ConvParams q = p;
  q.act = Activation{};
  conv2d(q, N, H, W, in, OH, OW, packed, out, par);
  const Clamp clamp(p.act);
  const size_t n = N * OH * OW * out_channels(p);
  for (size_t i = 0; i < n; ++i) out[i] = clamp(out[i] + residual[i]);
}

// ---------------------------------------------------------------------------------------------- dwconv2d
size_t dwconv2d_packed_size(const ConvParams& p) {
  const size_t oc = out_channels(p);
  return (oc + oc * size_t{p.kernel_h} * p.kernel_w) * sizeof(float);
}

void dwconv2d_pack(const ConvParams& p, const float* filter, const float* bias, void* packed) {
  const size_t oc = out_channels(p), taps = size_t{p.kernel_h} * p.kernel_w;
  float* out = static_cast<float*>(packed);
  pack_bias(bias, oc, out);
  std::memcpy(out + oc, filter, taps * oc * sizeof(float));
}

void dwconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
              const void* packed, float* out, Parallel& par) {
  const size_t C = p.groups, dm = p.group_output_channels, OC = C * dm;
  if (N == 0 || OH == 0 || OW == 0 || OC == 0) return;
  const float* bias = static_cast<const float*>(packed);
  const float* wts = bias + OC;
  const double cost = static_cast<double>(p.kernel_h) * p.kernel_w * OC;
  for_each_output_pixel(p, par, N, H * W * C, OH, OW, OC, cost, in, bias, out,
                        [&](const float* in_n, size_t oy, size_t ox, float* acc) {
                          for_each_tap(p, H, W, C, in_n, oy, ox, [&](const float* a, size_t t) {
                            const float* w = wts + t * OC;
                            if (dm == 1) {
                              for (size_t c = 0; c < C; ++c) acc[c] += a[c] * w[c];
                            } else {
                              for (size_t c = 0; c < C; ++c) {
                                const float av = a[c];
                                for (size_t j = 0; j < dm; ++j) acc[c * dm + j] += av * w[c * dm + j];
                              }
                            }
                          });
                        });
}

// The expanded tensor in full, then the depthwise convolution over it (the reference the fused kernels match).
void dwconv2d_fused(const PointwiseConv* expand, const ConvParams& p, size_t N, size_t H, size_t W,
                    const float* in, size_t OH, size_t OW, const void* dw_packed,
                    const PointwiseConv* project, const float* residual, float* out, Parallel& par) {
  const size_t C = p.groups;
  std::vector<float> mid, dw_out;
  if (expand) {
    mid.resize(N * H * W * C);
    gemm(N * H * W, C, expand->channels, in, expand->channels, expand->packed, mid.data(), C, expand->act,
         par);
    in = mid.data();
  }
  if (!project) return dwconv2d(p, N, H, W, in, OH, OW, dw_packed, out, par);
  dw_out.resize(N * OH * OW * C);
  dwconv2d(p, N, H, W, in, OH, OW, dw_packed, dw_out.data(), par);
  const size_t M = N * OH * OW, cout = project->channels;
  if (residual) {
    return gemm_residual(M, cout, C, dw_out.data(), C, project->packed, residual, cout, out, cout,
                         project->act, par);
  }
  gemm(M, cout, C, dw_out.data(), C, project->packed, out, cout, project->act, par);
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
  const size_t KH = p.kernel_h, KW = p.kernel_w, taps = KH * KW;
  const size_t sh = p.stride_h, sw = p.stride_w;
  if (N == 0 || OH == 0 || OW == 0 || OC == 0) return;
  const float* bias = static_cast<const float*>(packed);
  const float* wts = bias + OC;
  const double cost = static_cast<double>(taps) * p.group_input_channels * OC / static_cast<double>(sh * sw);
  for_each_output_pixel(
      p, par, N, H * W * IC, OH, OW, OC, cost, in, bias, out,
      [&](const float* in_n, size_t oy, size_t ox, float* acc) {
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
            accumulate_grouped_tap(p, in_n + (iy * W + ix) * IC, 1, wts, ky * KW + kx, acc);
          }
        }
      });
}

}  // namespace scalar
}  // namespace webxnn
