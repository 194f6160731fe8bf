// WX spatial kernels: WebNN resample2d (any two axes), XNNPACK's bilinear resize (NHWC), 2-D pooling
// (max / average / l2, NHWC) with padding excluded.
#include <cmath>

#include "kernels/wx/common.h"

namespace webxnn {
namespace wx {
namespace {

// Source coordinate of output position o: index pair and weight of the second.
struct Tap {
  size_t i0 = 0, i1 = 0;
  double w1 = 0;
};

Tap linear_tap(double src, size_t n) {
  Tap t;
  if (src < 0) src = 0;
  const double maxv = static_cast<double>(n - 1);
  if (src > maxv) src = maxv;
  const double f = std::floor(src);
  t.i0 = static_cast<size_t>(f);
  t.i1 = std::min(t.i0 + 1, n - 1);
  t.w1 = src - f;
  return t;
}

template <class T>
void resample_typed(int mode, size_t outer, size_t H, size_t mid, size_t W, size_t inner, size_t OH,
                    size_t OW, const std::vector<Tap>& ty, const std::vector<Tap>& tx, const T* x, T* y,
                    Parallel& par, bool round_ints) {
  parallel_for(par, outer * OH * mid, 8, [&](size_t b, size_t e) {
    for (size_t w = b; w < e; ++w) {
      const size_t m = w % mid;
      const size_t oy = (w / mid) % OH;
      const size_t o = w / (mid * OH);
      const Tap& a = ty[oy];
      for (size_t ox = 0; ox < OW; ++ox) {
        const Tap& c = tx[ox];
        T* dst = y + (((o * OH + oy) * mid + m) * OW + ox) * inner;
        auto at = [&](size_t iy, size_t ix) { return x + (((o * H + iy) * mid + m) * W + ix) * inner; };
        if (mode == 0) {
          const T* src = at(a.i0, c.i0);
          for (size_t i = 0; i < inner; ++i) dst[i] = src[i];
        } else {
          const T* p00 = at(a.i0, c.i0);
          const T* p01 = at(a.i0, c.i1);
          const T* p10 = at(a.i1, c.i0);
          const T* p11 = at(a.i1, c.i1);
          for (size_t i = 0; i < inner; ++i) {
            const double top = to_double(p00[i]) * (1 - c.w1) + to_double(p01[i]) * c.w1;
            const double bot = to_double(p10[i]) * (1 - c.w1) + to_double(p11[i]) * c.w1;
            const double v = top * (1 - a.w1) + bot * a.w1;
            dst[i] = from_double<T>(round_ints ? std::nearbyint(v) : v);
          }
        }
      }
    }
  });
}

void resample_core(ET t, int mode, size_t outer, size_t H, size_t mid, size_t W, size_t inner, size_t OH,
                   size_t OW, const std::vector<Tap>& ty, const std::vector<Tap>& tx, const void* px,
                   void* py, Parallel& par, bool round_ints = false) {
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    resample_typed<T>(mode, outer, H, mid, W, inner, OH, OW, ty, tx, static_cast<const T*>(px),
                      static_cast<T*>(py), par, round_ints);
  });
}

}  // namespace

void resample2d(ET t, int mode, const Dims& x, const Dims& o, const size_t axes[2], const float scales[2],
                const void* px, void* py, Parallel& par) {
  size_t a0 = axes[0], a1 = axes[1];
  double s0 = scales[0], s1 = scales[1];
  if (a0 > a1) {
    std::swap(a0, a1);
    std::swap(s0, s1);
  }
  size_t outer = 1, mid = 1, inner = 1;
  for (size_t d = 0; d < a0; ++d) outer *= x[d];
  for (size_t d = a0 + 1; d < a1; ++d) mid *= x[d];
  for (size_t d = a1 + 1; d < x.size(); ++d) inner *= x[d];
  const size_t H = x[a0], W = x[a1], OH = o[a0], OW = o[a1];
  auto taps = [&](size_t n, size_t on, double s) {
    std::vector<Tap> r(on);
    for (size_t k = 0; k < on; ++k) {
      if (mode == 0) {
        double src = std::floor((static_cast<double>(k) + 0.5) / s);
        if (src < 0) src = 0;
        r[k].i0 = std::min(n - 1, static_cast<size_t>(std::min(src, 1e18)));
        r[k].i1 = r[k].i0;
      } else {
        r[k] = linear_tap((static_cast<double>(k) + 0.5) / s - 0.5, n);
      }
    }
    return r;
  };
  resample_core(t, mode, outer, H, mid, W, inner, OH, OW, taps(H, OH, s0), taps(W, OW, s1), px, py, par);
}

void resize_bilinear_nhwc(ET t, uint32_t flags, const Dims& x, const Dims& o, const void* px, void* py,
                          Parallel& par, bool round_ints) {
  const size_t N = x[0], H = x[1], W = x[2], C = x[3], OH = o[1], OW = o[2];
  auto taps = [&](size_t n, size_t on) {
    std::vector<Tap> r(on);
    for (size_t k = 0; k < on; ++k) {
      double src;
      if (flags & 0x8) {  // align corners
        src =
            on > 1 ? static_cast<double>(k) * static_cast<double>(n - 1) / static_cast<double>(on - 1) : 0.0;
      } else if (flags & 0x4) {  // TensorFlow legacy
        src = static_cast<double>(k) * static_cast<double>(n) / static_cast<double>(on);
      } else {
        src = (static_cast<double>(k) + 0.5) * static_cast<double>(n) / static_cast<double>(on) - 0.5;
      }
      r[k] = linear_tap(src, n);
    }
    return r;
  };
  resample_core(t, 1, N, H, 1, W, C, OH, OW, taps(H, OH), taps(W, OW), px, py, par, round_ints);
}

void pool2d(int op, ET t, const PoolParams& p, size_t N, size_t H, size_t W, size_t C, const void* px,
            size_t OH, size_t OW, void* py, Parallel& par) {
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_v<T>) {
      const T* x = static_cast<const T*>(px);
      T* y = static_cast<T*>(py);
      parallel_for(par, N * OH, 4, [&](size_t b, size_t e) {
        std::vector<double> acc(C);
        std::vector<size_t> cnt(1);
        for (size_t w = b; w < e; ++w) {
          const size_t n = w / OH, oy = w % OH;
          for (size_t ox = 0; ox < OW; ++ox) {
            std::fill(acc.begin(), acc.end(), op == 0 ? -INFINITY : 0.0);
            size_t count = 0;
            for (size_t ky = 0; ky < p.pool_h; ++ky) {
              const int64_t iy = static_cast<int64_t>(oy * p.stride_h + ky * p.dilation_h) - p.pad_top;
              if (iy < 0 || iy >= static_cast<int64_t>(H)) continue;
              for (size_t kx = 0; kx < p.pool_w; ++kx) {
                const int64_t ix = static_cast<int64_t>(ox * p.stride_w + kx * p.dilation_w) - p.pad_left;
                if (ix < 0 || ix >= static_cast<int64_t>(W)) continue;
                ++count;
                const T* src = x + ((n * H + static_cast<size_t>(iy)) * W + static_cast<size_t>(ix)) * C;
                for (size_t c = 0; c < C; ++c) {
                  const double v = to_double(src[c]);
                  if (op == 0)
                    acc[c] = (std::isnan(v) || v > acc[c]) ? (std::isnan(acc[c]) ? acc[c] : v) : acc[c];
                  else if (op == 1)
                    acc[c] += v;
                  else
                    acc[c] += v * v;
                }
              }
            }
            T* dst = y + ((n * OH + oy) * OW + ox) * C;
            for (size_t c = 0; c < C; ++c) {
              double v = acc[c];
              if (count == 0)
                v = 0;
              else if (op == 1)
                v /= static_cast<double>(count);
              else if (op == 2)
                v = std::sqrt(v);
              v = std::min(std::max(v, static_cast<double>(p.act.min)), static_cast<double>(p.act.max));
              dst[c] = from_double<T>(v);
            }
          }
        }
      });
    }
  });
}

}  // namespace wx
}  // namespace webxnn
