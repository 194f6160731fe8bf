// Scalar pooling kernels (NHWC). Padding taps are skipped: max pool ignores them, average pool divides by the
// number of valid taps (padding excluded from the divisor). A window with no valid tap yields 0 (avg) or -inf
// (max) before the clamp.
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/scalar/common.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace scalar {
namespace {

using isize = std::ptrdiff_t;

template <bool kMax>
void pool2d(const PoolParams& p, size_t N, size_t H, size_t W, size_t C, const float* in, size_t OH,
            size_t OW, float* out, Parallel& par) {
  if (N == 0 || OH == 0 || OW == 0 || C == 0) return;
  const Clamp clamp(p.act);
  const size_t rows = N * OH;
  const size_t tasks = pick_tasks(par, rows, static_cast<double>(OW) * C * p.pool_h * p.pool_w);
  par.run(tasks, [&](size_t task) {
    size_t r0, r1;
    chunk_range(rows, tasks, task, &r0, &r1);
    for (size_t r = r0; r < r1; ++r) {
      const size_t n = r / OH, oy = r % OH;
      const float* in_n = in + n * H * W * C;
      // Valid vertical taps of this output row.
      size_t ys[64];
      std::vector<size_t> ys_heap;
      size_t* yv = ys;
      if (p.pool_h > 64) {
        ys_heap.resize(p.pool_h);
        yv = ys_heap.data();
      }
      size_t ny = 0;
      for (size_t ky = 0; ky < p.pool_h; ++ky) {
        const isize iy =
            static_cast<isize>(oy * p.stride_h + ky * p.dilation_h) - static_cast<isize>(p.pad_top);
        if (iy >= 0 && iy < static_cast<isize>(H)) yv[ny++] = static_cast<size_t>(iy);
      }
      for (size_t ox = 0; ox < OW; ++ox) {
        float* o = out + (r * OW + ox) * C;
        std::fill(o, o + C, kMax ? -std::numeric_limits<float>::infinity() : 0.f);
        size_t count = 0;
        for (size_t j = 0; j < ny; ++j) {
          for (size_t kx = 0; kx < p.pool_w; ++kx) {
            const isize ix =
                static_cast<isize>(ox * p.stride_w + kx * p.dilation_w) - static_cast<isize>(p.pad_left);
            if (ix < 0 || ix >= static_cast<isize>(W)) continue;
            const float* a = in_n + (yv[j] * W + static_cast<size_t>(ix)) * C;
            ++count;
            if (kMax) {
              // NaN propagates (like numpy's max): a NaN input wins.
              for (size_t c = 0; c < C; ++c) o[c] = (a[c] > o[c] || a[c] != a[c]) ? a[c] : o[c];
            } else {
              for (size_t c = 0; c < C; ++c) o[c] += a[c];
            }
          }
        }
        if (!kMax && count > 0) {
          const float div = static_cast<float>(count);
          for (size_t c = 0; c < C; ++c) o[c] /= div;
        }
        clamp.apply(o, C);
      }
    }
  });
}

}  // namespace

void max_pool2d(const PoolParams& p, size_t N, size_t H, size_t W, size_t C, const float* in, size_t OH,
                size_t OW, float* out, Parallel& par) {
  pool2d<true>(p, N, H, W, C, in, OH, OW, out, par);
}

void avg_pool2d(const PoolParams& p, size_t N, size_t H, size_t W, size_t C, const float* in, size_t OH,
                size_t OW, float* out, Parallel& par) {
  pool2d<false>(p, N, H, W, C, in, OH, OW, out, par);
}

void global_avg_pool(size_t N, size_t HW, size_t C, const float* in, float* out, Activation act,
                     Parallel& par) {
  if (N == 0 || C == 0) return;
  const Clamp clamp(act);
  // Split over (batch, channel block); each output sums its column in hw order.
  constexpr size_t kCB = 64;
  const size_t cblocks = (C + kCB - 1) / kCB;
  const size_t units = N * cblocks;
  const size_t tasks = pick_tasks(par, units, static_cast<double>(HW) * std::min(C, kCB));
  const float div = static_cast<float>(HW);
  par.run(tasks, [&](size_t task) {
    size_t u0, u1;
    chunk_range(units, tasks, task, &u0, &u1);
    for (size_t u = u0; u < u1; ++u) {
      const size_t n = u / cblocks, c0 = (u % cblocks) * kCB, cn = std::min(kCB, C - c0);
      float acc[kCB] = {};
      const float* a = in + n * HW * C + c0;
      for (size_t i = 0; i < HW; ++i, a += C)
        for (size_t c = 0; c < cn; ++c) acc[c] += a[c];
      float* o = out + n * C + c0;
      for (size_t c = 0; c < cn; ++c) o[c] = clamp(HW ? acc[c] / div : 0.f);
    }
  });
}

}  // namespace scalar
}  // namespace webxnn
