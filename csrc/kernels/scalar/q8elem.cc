// Scalar qint8 element-wise ops, pooling and lookup (table.def's qadd, qmul, qmax_pool2d, qavg_pool2d,
// qglobal_avg_pool, qlut): the reference the AVX2 ones are tested against.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/scalar/common.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace scalar {
namespace {

// The requantization every entry ends with (table.def): clamp v in fp32, round half to even, add zy.
struct Requant {
  float lo, hi;
  int32_t zy;
  explicit Requant(const QElemParams& q)
      : lo(static_cast<float>(q.out_min - q.out_zero_point)),
        hi(static_cast<float>(q.out_max - q.out_zero_point)),
        zy(q.out_zero_point) {}
  int8_t operator()(float v) const { return static_cast<int8_t>(requantize(v, lo, hi, zy)); }
};

// A value the compiler may not fuse into a following addition (qadd's products are rounded on their own,
// where a target has FMA and contraction is on).
inline float rounded(float x) {
#if defined(__GNUC__)
  __asm__("" : "+m"(x));
#endif
  return x;
}

struct AddOp {
  float ma, mb;
  int32_t za, zb;
  explicit AddOp(const QElemParams& q)
      : ma(q.a_scale / q.out_scale), mb(q.b_scale / q.out_scale), za(q.a_zero_point), zb(q.b_zero_point) {}
  float operator()(int8_t a, int8_t b) const {
    return rounded(static_cast<float>(a - za) * ma) + rounded(static_cast<float>(b - zb) * mb);
  }
};

struct MulOp {
  float m;
  int32_t za, zb;
  explicit MulOp(const QElemParams& q)
      : m((q.a_scale * q.b_scale) / q.out_scale), za(q.a_zero_point), zb(q.b_zero_point) {}
  float operator()(int8_t a, int8_t b) const { return static_cast<float>((a - za) * (b - zb)) * m; }
};

template <typename Op>
void qbinary(const BinaryShape& s, const int8_t* a, const int8_t* b, int8_t* out, const QElemParams& q,
             Parallel& par) {
  const Op op(q);
  const Requant rq(q);
  if (s.rank == 0) {
    out[0] = rq(op(a[0], b[0]));
    return;
  }
  const size_t inner = s.out_dims[s.rank - 1];
  size_t outer = 1;
  for (size_t d = 0; d + 1 < s.rank; ++d) outer *= s.out_dims[d];
  if (inner == 0 || outer == 0) return;
  const size_t sa = s.a_strides[s.rank - 1], sb = s.b_strides[s.rank - 1];
  const size_t tasks = pick_tasks(par, outer, static_cast<double>(inner));
  par.run(tasks, [&](size_t task) {
    size_t r0, r1;
    chunk_range(outer, tasks, task, &r0, &r1);
    for (size_t row = r0; row < r1; ++row) {
      size_t oa, ob;
      binary_row_offsets(s, row, &oa, &ob);
      int8_t* o = out + row * inner;
      for (size_t i = 0; i < inner; ++i) o[i] = rq(op(a[oa + i * sa], b[ob + i * sb]));
    }
  });
}

// The window of output pixel (oy, ox): [y0, y1) x [x0, x1) taps (tap indices) that fall inside the input.
struct Window {
  size_t ky0, ky1, kx0, kx1;
};
inline void window_taps(size_t o, uint32_t stride, uint32_t dil, uint32_t pad, uint32_t k, size_t n,
                        size_t* t0, size_t* t1) {
  // tap t reads input index o * stride + t * dil - pad; keep those in [0, n)
  const long base = static_cast<long>(o * stride) - static_cast<long>(pad);
  size_t lo = 0, hi = k;
  while (lo < hi && base + static_cast<long>(lo * dil) < 0) ++lo;
  while (hi > lo && base + static_cast<long>((hi - 1) * dil) >= static_cast<long>(n)) --hi;
  *t0 = lo;
  *t1 = hi;
}

template <typename Fn>
void for_each_window(const PoolParams& p, size_t N, size_t H, size_t W, size_t C, size_t OH, size_t OW,
                     Parallel& par, Fn fn) {
  const size_t rows = N * OH;
  const size_t tasks = pick_tasks(par, rows, static_cast<double>(OW * C * p.pool_h * p.pool_w));
  par.run(tasks, [&](size_t task) {
    size_t r0, r1;
    chunk_range(rows, tasks, task, &r0, &r1);
    for (size_t r = r0; r < r1; ++r) {
      const size_t n = r / OH, oy = r % OH;
      Window w;
      window_taps(oy, p.stride_h, p.dilation_h, p.pad_top, p.pool_h, H, &w.ky0, &w.ky1);
      for (size_t ox = 0; ox < OW; ++ox) {
        window_taps(ox, p.stride_w, p.dilation_w, p.pad_left, p.pool_w, W, &w.kx0, &w.kx1);
        fn(n, oy, ox, w);
      }
    }
  });
}

inline size_t tap_index(size_t o, uint32_t stride, uint32_t dil, uint32_t pad, size_t t) {
  return o * stride + t * dil - pad;
}

}  // namespace

void qadd(const BinaryShape& s, const int8_t* a, const int8_t* b, int8_t* out, const QElemParams& q,
          Parallel& par) {
  qbinary<AddOp>(s, a, b, out, q, par);
}

void qmul(const BinaryShape& s, const int8_t* a, const int8_t* b, int8_t* out, const QElemParams& q,
          Parallel& par) {
  qbinary<MulOp>(s, a, b, out, q, par);
}

void qmax_pool2d(const PoolParams& p, size_t N, size_t H, size_t W, size_t C, const int8_t* in, size_t OH,
                 size_t OW, int8_t* out, int32_t out_min, int32_t out_max, Parallel& par) {
  for_each_window(p, N, H, W, C, OH, OW, par, [&](size_t n, size_t oy, size_t ox, const Window& w) {
    int8_t* o = out + ((n * OH + oy) * OW + ox) * C;
    for (size_t c = 0; c < C; ++c) {
      int32_t m = -128;
      for (size_t ky = w.ky0; ky < w.ky1; ++ky) {
        const size_t iy = tap_index(oy, p.stride_h, p.dilation_h, p.pad_top, ky);
        for (size_t kx = w.kx0; kx < w.kx1; ++kx) {
          const size_t ix = tap_index(ox, p.stride_w, p.dilation_w, p.pad_left, kx);
          m = std::max<int32_t>(m, in[((n * H + iy) * W + ix) * C + c]);
        }
      }
      o[c] = static_cast<int8_t>(std::min(std::max(m, out_min), out_max));
    }
  });
}

void qavg_pool2d(const PoolParams& p, size_t N, size_t H, size_t W, size_t C, const int8_t* in, size_t OH,
                 size_t OW, int8_t* out, const QElemParams& q, Parallel& par) {
  const Requant rq(q);
  const float m = q.a_scale / q.out_scale;
  for_each_window(p, N, H, W, C, OH, OW, par, [&](size_t n, size_t oy, size_t ox, const Window& w) {
    int8_t* o = out + ((n * OH + oy) * OW + ox) * C;
    const size_t count = (w.ky1 - w.ky0) * (w.kx1 - w.kx0);
    const float mc = count ? m / static_cast<float>(count) : 0.f;  // padding alone (dilation): 0, like fp32
    for (size_t c = 0; c < C; ++c) {
      int32_t acc = 0;
      for (size_t ky = w.ky0; ky < w.ky1; ++ky) {
        const size_t iy = tap_index(oy, p.stride_h, p.dilation_h, p.pad_top, ky);
        for (size_t kx = w.kx0; kx < w.kx1; ++kx) {
          const size_t ix = tap_index(ox, p.stride_w, p.dilation_w, p.pad_left, kx);
          acc += in[((n * H + iy) * W + ix) * C + c] - q.a_zero_point;
        }
      }
      o[c] = rq(static_cast<float>(acc) * mc);
    }
  });
}

void qglobal_avg_pool(size_t N, size_t HW, size_t C, const int8_t* in, int8_t* out, const QElemParams& q,
                      Parallel& par) {
  if (N == 0 || C == 0) return;
  const Requant rq(q);
  const float mc = (q.a_scale / q.out_scale) / static_cast<float>(HW);
  const size_t tasks = pick_tasks(par, N, static_cast<double>(HW * C));
  par.run(tasks, [&](size_t task) {
    size_t n0, n1;
    chunk_range(N, tasks, task, &n0, &n1);
    std::vector<int32_t> acc(C);
    for (size_t n = n0; n < n1; ++n) {
      std::fill(acc.begin(), acc.end(), -static_cast<int32_t>(HW) * q.a_zero_point);
      const int8_t* x = in + n * HW * C;
      for (size_t i = 0; i < HW; ++i) {
        for (size_t c = 0; c < C; ++c) acc[c] += x[i * C + c];
      }
      for (size_t c = 0; c < C; ++c) out[n * C + c] = rq(static_cast<float>(acc[c]) * mc);
    }
  });
}

void qlut(size_t n, const int8_t* in, int8_t* out, const int8_t* table, Parallel& par) {
  const size_t tasks = pick_tasks(par, n, 1.0);
  par.run(tasks, [&](size_t task) {
    size_t i0, i1;
    chunk_range(n, tasks, task, &i0, &i1);
    for (size_t i = i0; i < i1; ++i) out[i] = table[static_cast<uint8_t>(in[i])];
  });
}

}  // namespace scalar
}  // namespace webxnn
