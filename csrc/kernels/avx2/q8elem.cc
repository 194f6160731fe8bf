// AVX2 qint8 element-wise ops, pooling, lookup and the fp32 <-> qint8 conversions (table.def's qadd, qmul,
// qmax_pool2d, qglobal_avg_pool, qlut, quantize_qs8, dequantize_qs8; qavg_pool2d is the scalar one). Same
// bits as the scalar kernels: the arithmetic is table.def's, lane by lane.
#include <immintrin.h>

#include <cstring>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/qadd.h"
#include "kernels/internal.h"

namespace webxnn {
namespace avx2 {
namespace {

inline size_t min_z(size_t a, size_t b) { return a < b ? a : b; }

// 8 int8 at p, minus the zero point, as int32.
inline __m256i load8_i(const int8_t* p, __m256i z) { return lanes8_i(load8(p), z); }

// ---- qadd / qmul (qadd's arithmetic and the requantization: qadd.h) ----

struct MulV {
  __m256 m;
  __m256i za, zb;
  explicit MulV(const QElemParams& q)
      : m(_mm256_set1_ps((q.a_scale * q.b_scale) / q.out_scale)),
        za(_mm256_set1_epi32(q.a_zero_point)),
        zb(_mm256_set1_epi32(q.b_zero_point)) {}
  __m256 part_a(__m128i x) const { return _mm256_castsi256_ps(lanes8_i(x, za)); }
  __m256 part_b(__m128i x) const { return _mm256_castsi256_ps(lanes8_i(x, zb)); }
  __m256 combine(__m256 a, __m256 b) const {
    const __m256i prod = _mm256_mullo_epi32(_mm256_castps_si256(a), _mm256_castps_si256(b));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(prod), m);
  }
  static float max_abs(const QElemParams& q) { return 65536.f * ((q.a_scale * q.b_scale) / q.out_scale); }
};

struct QBinCtx {
  const BinaryShape* s;
  const int8_t *a, *b;
  int8_t* out;
  const QElemParams* q;
  size_t inner, units, chunks, tasks;
};

// One row piece of n outputs; sa, sb are 0 (broadcast) or 1 (the innermost dim after collapsing).
template <typename Op>
void qbin_row(const Op& op, const QElemRequant& rq, const int8_t* pa, size_t sa, const int8_t* pb, size_t sb,
              int8_t* o, size_t n) {
  int8_t ta[16], tb[16];
  std::memset(ta, *pa, 16);
  std::memset(tb, *pb, 16);
  const __m256 ca = op.part_a(load8(ta)), cb = op.part_b(load8(tb));
  auto step = [&](const int8_t* xa, const int8_t* xb, int8_t* dst) {
    const __m256 a0 = sa ? op.part_a(load8(xa)) : ca, a1 = sa ? op.part_a(load8(xa + 8)) : ca;
    const __m256 b0 = sb ? op.part_b(load8(xb)) : cb, b1 = sb ? op.part_b(load8(xb + 8)) : cb;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), qbinary16(op, rq, a0, a1, b0, b1));
  };
  size_t i = 0;
  for (; i + 16 <= n; i += 16) step(pa + i * sa, pb + i * sb, o + i);
  if (i < n) {  // the tail through a buffer (reads every input before writing: out may be a or b)
    const size_t r = n - i;
    int8_t xa[16] = {}, xb[16] = {}, y[16];
    std::memcpy(xa, pa + i * sa, sa ? r : 1);
    std::memcpy(xb, pb + i * sb, sb ? r : 1);
    step(xa, xb, y);
    std::memcpy(o + i, y, r);
  }
}

template <typename Op>
void qbin_task(const void* vctx, size_t task) {
  const QBinCtx& x = *static_cast<const QBinCtx*>(vctx);
  const BinaryShape& s = *x.s;
  const Op op(*x.q);
  const QElemRequant rq(*x.q, Op::max_abs(*x.q));
  const size_t sa = s.a_strides[s.rank - 1], sb = s.b_strides[s.rank - 1];
  const size_t u0 = x.units * task / x.tasks, u1 = x.units * (task + 1) / x.tasks;
  for (size_t u = u0; u < u1; ++u) {
    const size_t row = u / x.chunks, chunk = u % x.chunks;
    const size_t i0 = x.inner * chunk / x.chunks, i1 = x.inner * (chunk + 1) / x.chunks;
    size_t oa, ob;
    binary_row_offsets(s, row, &oa, &ob);
    if (sa > 1 || sb > 1) {  // not produced by the runtime's collapsing; one element at a time
      for (size_t i = i0; i < i1; ++i) {
        qbin_row(op, rq, x.a + oa + i * sa, 0, x.b + ob + i * sb, 0, x.out + row * x.inner + i, 1);
      }
      continue;
    }
    qbin_row(op, rq, x.a + oa + i0 * sa, sa, x.b + ob + i0 * sb, sb, x.out + row * x.inner + i0, i1 - i0);
  }
}

template <typename Op>
void qbinary(const BinaryShape& s, const int8_t* a, const int8_t* b, int8_t* out, const QElemParams& q,
             Parallel& par) {
  if (s.rank == 0) {
    const Op op(q);
    const QElemRequant rq(q, Op::max_abs(q));
    qbin_row(op, rq, a, 0, b, 0, out, 1);
    return;
  }
  QBinCtx x{&s, a, b, out, &q, s.out_dims[s.rank - 1], 0, 1, 0};
  size_t outer = 1;
  for (size_t d = 0; d + 1 < s.rank; ++d) outer *= s.out_dims[d];
  if (x.inner == 0 || outer == 0) return;
  const size_t threads = internal::parallel_threads(par);
  // Long rows with few of them (a residual add is one row): split rows into chunks too.
  if (outer < threads * 4 && x.inner >= 16384) x.chunks = min_z(x.inner / 8192, threads * 4);
  x.units = outer * x.chunks;
  x.tasks = internal::task_count(x.units, static_cast<double>(x.inner / x.chunks), threads, 8);
  internal::parallel_run(par, x.tasks, qbin_task<Op>, &x);
}

// ---- pooling ----

struct QPoolCtx {
  const PoolParams* p;
  size_t H, W, C, OH, OW, rows, tasks;
  const int8_t* in;
  int8_t* out;
  int32_t out_min, out_max;
};

void qmax_task(const void* vctx, size_t task) {
  const QPoolCtx& x = *static_cast<const QPoolCtx*>(vctx);
  const PoolParams& p = *x.p;
  const size_t C = x.C;
  const __m256i vlo = _mm256_set1_epi8(static_cast<char>(x.out_min));
  const __m256i vhi = _mm256_set1_epi8(static_cast<char>(x.out_max));
  const size_t r0 = x.rows * task / x.tasks, r1 = x.rows * (task + 1) / x.tasks;
  for (size_t r = r0; r < r1; ++r) {
    const size_t n = r / x.OH, oy = r % x.OH;
    for (size_t ox = 0; ox < x.OW; ++ox) {
      // The taps inside the input (padding takes no part); qmax_pool2d sends windows of over 64 taps to the
      // scalar table.
      const int8_t* taps[64];
      size_t nt = 0;
      for (size_t ky = 0; ky < p.pool_h; ++ky) {
        const long iy = static_cast<long>(oy * p.stride_h + ky * p.dilation_h) - static_cast<long>(p.pad_top);
        if (iy < 0 || iy >= static_cast<long>(x.H)) continue;
        for (size_t kx = 0; kx < p.pool_w; ++kx) {
          const long ix =
              static_cast<long>(ox * p.stride_w + kx * p.dilation_w) - static_cast<long>(p.pad_left);
          if (ix < 0 || ix >= static_cast<long>(x.W)) continue;
          taps[nt++] = x.in + ((n * x.H + static_cast<size_t>(iy)) * x.W + static_cast<size_t>(ix)) * C;
        }
      }
      int8_t* o = x.out + ((n * x.OH + oy) * x.OW + ox) * C;
      size_t c = 0;
      for (; c + 32 <= C; c += 32) {
        __m256i m = _mm256_set1_epi8(-128);
        for (size_t t = 0; t < nt; ++t) {
          m = _mm256_max_epi8(m, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(taps[t] + c)));
        }
        m = _mm256_min_epi8(_mm256_max_epi8(m, vlo), vhi);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + c), m);
      }
      for (; c < C; ++c) {
        int32_t m = -128;
        for (size_t t = 0; t < nt; ++t) m = taps[t][c] > m ? taps[t][c] : m;
        m = m < x.out_min ? x.out_min : m;
        o[c] = static_cast<int8_t>(m > x.out_max ? x.out_max : m);
      }
    }
  }
}

struct QGapCtx {
  size_t N, HW, C, tasks;
  const int8_t* in;
  int8_t* out;
  const QElemParams* q;
};

void qgap_task(const void* vctx, size_t task) {
  const QGapCtx& x = *static_cast<const QGapCtx*>(vctx);
  const QElemParams& q = *x.q;
  const QElemRequant rq(q, 256.f * (q.a_scale / q.out_scale));  // |acc| <= 255 * HW, mc ~ m / HW
  const __m256 mc = _mm256_set1_ps((q.a_scale / q.out_scale) / static_cast<float>(x.HW));
  const __m256i bias = _mm256_set1_epi32(-static_cast<int32_t>(x.HW) * q.a_zero_point);
  const size_t C = x.C, HW = x.HW;
  // Units: (image, block of 16 channels); the sums of a block stay in two registers over all pixels.
  const size_t blocks = (C + 15) / 16, units = x.N * blocks;
  const size_t u0 = units * task / x.tasks, u1 = units * (task + 1) / x.tasks;
  for (size_t u = u0; u < u1; ++u) {
    const size_t n = u / blocks, c0 = u % blocks * 16, w = min_z(16, C - c0);
    const int8_t* src = x.in + n * HW * C + c0;
    __m256i s0 = bias, s1 = bias;
    if (w == 16) {
      for (size_t i = 0; i < HW; ++i) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * C));
        s0 = _mm256_add_epi32(s0, _mm256_cvtepi8_epi32(v));
        s1 = _mm256_add_epi32(s1, _mm256_cvtepi8_epi32(_mm_unpackhi_epi64(v, v)));
      }
    } else {
      alignas(32) int32_t acc[16] = {};
      for (size_t i = 0; i < HW; ++i) {
        for (size_t c = 0; c < w; ++c) acc[c] += src[i * C + c];
      }
      s0 = _mm256_add_epi32(s0, _mm256_load_si256(reinterpret_cast<const __m256i*>(acc)));
      s1 = _mm256_add_epi32(s1, _mm256_load_si256(reinterpret_cast<const __m256i*>(acc + 8)));
    }
    const __m128i y =
        rq(_mm256_mul_ps(_mm256_cvtepi32_ps(s0), mc), _mm256_mul_ps(_mm256_cvtepi32_ps(s1), mc));
    if (w == 16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(x.out + n * C + c0), y);
    } else {
      int8_t t[16];
      _mm_storeu_si128(reinterpret_cast<__m128i*>(t), y);
      std::memcpy(x.out + n * C + c0, t, w);
    }
  }
}

// ---- qlut ----
// A 256-entry byte lookup by vpshufb (16-entry lookups that give 0 where the index byte's top bit is set).
// Signed index s: for s >= 0 the entry is in chunk s >> 4 of the table's first half. Chain over j = 0..7 with
// indices s - 16j (saturating: a negative s stays negative) and tables T'_j = T_j ^ T_(j-1) (T'_0 = T_0): the
// lookups that hit are j = 0..(s >> 4), all at s's low nibble, and their XOR telescopes to T_(s>>4). The second
// half is the same chain on s ^ 0x80 over chunks 8..15; each chain gives 0 for the other half's bytes.

struct LutCtx {
  const int8_t* in;
  int8_t* out;
  size_t n, tasks;
  __m256i t[16];  // T'_j of both halves, each 16 bytes in both lanes
};

inline __m256i lut32(const __m256i* t, __m256i x) {
  const __m256i k16 = _mm256_set1_epi8(16);
  __m256i ia = x, ib = _mm256_xor_si256(x, _mm256_set1_epi8(static_cast<char>(0x80)));
  __m256i ra = _mm256_shuffle_epi8(t[0], ia), rb = _mm256_shuffle_epi8(t[8], ib);
  for (int j = 1; j < 8; ++j) {
    ia = _mm256_subs_epi8(ia, k16);
    ib = _mm256_subs_epi8(ib, k16);
    ra = _mm256_xor_si256(ra, _mm256_shuffle_epi8(t[j], ia));
    rb = _mm256_xor_si256(rb, _mm256_shuffle_epi8(t[8 + j], ib));
  }
  return _mm256_or_si256(ra, rb);
}

void lut_task(const void* vctx, size_t task) {
  const LutCtx& x = *static_cast<const LutCtx*>(vctx);
  const size_t i0 = (x.n * task / x.tasks) & ~size_t{31};
  const size_t i1 = task + 1 == x.tasks ? x.n : (x.n * (task + 1) / x.tasks) & ~size_t{31};
  size_t i = i0;
  for (; i + 32 <= i1; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.in + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(x.out + i), lut32(x.t, v));
  }
  if (i < i1) {
    alignas(32) int8_t buf[32] = {};
    std::memcpy(buf, x.in + i, i1 - i);
    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(buf));
    _mm256_store_si256(reinterpret_cast<__m256i*>(buf), lut32(x.t, v));
    std::memcpy(x.out + i, buf, i1 - i);
  }
}

// quantize_qs8 / dequantize_qs8 (a quantized model's input and output Converts; MobileNetV2's 224x224x3 input
// took 0.41 ms scalar, 5 % of the int8 model, on one thread): 8 values per step, a partial last step through
// a zero-padded buffer; contiguous chunks per task, 32-aligned starts.
struct QConvertCtx {
  size_t n, tasks;
  const void* in;
  void* out;
  float scale;
  int32_t zp;
};

// Elements [i0, i1) of task `task`.
inline void task_span(const QConvertCtx& x, size_t task, size_t* i0, size_t* i1) {
  *i0 = (x.n * task / x.tasks) & ~size_t{31};
  *i1 = task + 1 == x.tasks ? x.n : (x.n * (task + 1) / x.tasks) & ~size_t{31};
}

// The scalar kernel's formula lane by lane: in / scale (a division, as there), round half even (vroundps:
// values at or past 2^23, infinities and NaN pass unchanged, as round_even's), + zp, NaN -> zp, clamp.
inline __m128i quantize8(const QConvertCtx& x, const float* p) {
  const __m256 zp = _mm256_set1_ps(static_cast<float>(x.zp));
  const __m256 q = _mm256_div_ps(_mm256_loadu_ps(p), _mm256_set1_ps(x.scale));
  __m256 v = _mm256_add_ps(_mm256_round_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zp);
  v = _mm256_blendv_ps(v, zp, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-128.f)), _mm256_set1_ps(127.f));
  const __m256i i32 = _mm256_cvttps_epi32(v);
  const __m128i i16 = _mm_packs_epi32(_mm256_castsi256_si128(i32), _mm256_extracti128_si256(i32, 1));
  return _mm_packs_epi16(i16, i16);  // 8 bytes in the low half
}

void quantize_task(const void* vctx, size_t task) {
  const QConvertCtx& x = *static_cast<const QConvertCtx*>(vctx);
  size_t i, i1;
  task_span(x, task, &i, &i1);
  const float* in = static_cast<const float*>(x.in);
  int8_t* out = static_cast<int8_t*>(x.out);
  for (; i + 8 <= i1; i += 8) _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), quantize8(x, in + i));
  if (i < i1) {
    float buf[8] = {};
    std::memcpy(buf, in + i, (i1 - i) * sizeof(float));
    alignas(16) int8_t b8[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(b8), quantize8(x, buf));
    std::memcpy(out + i, b8, i1 - i);
  }
}

// (int32(q) - zp) * scale, as the scalar kernel.
inline __m256 dequantize8(const QConvertCtx& x, const int8_t* p) {
  return _mm256_mul_ps(_mm256_cvtepi32_ps(load8_i(p, _mm256_set1_epi32(x.zp))), _mm256_set1_ps(x.scale));
}

void dequantize_task(const void* vctx, size_t task) {
  const QConvertCtx& x = *static_cast<const QConvertCtx*>(vctx);
  size_t i, i1;
  task_span(x, task, &i, &i1);
  const int8_t* in = static_cast<const int8_t*>(x.in);
  float* out = static_cast<float*>(x.out);
  for (; i + 8 <= i1; i += 8) _mm256_storeu_ps(out + i, dequantize8(x, in + i));
  if (i < i1) {
    int8_t buf[8] = {};
    std::memcpy(buf, in + i, i1 - i);
    float f[8];
    _mm256_storeu_ps(f, dequantize8(x, buf));
    std::memcpy(out + i, f, (i1 - i) * sizeof(float));
  }
}

void convert_run(QConvertCtx& x, double unit_cost, internal::TaskFn fn, Parallel& par) {
  if (x.n == 0) return;
  x.tasks = internal::task_count((x.n + 31) / 32, unit_cost, internal::parallel_threads(par), 8);
  internal::parallel_run(par, x.tasks, fn, &x);
}

}  // namespace

void quantize_qs8(size_t n, const float* in, int8_t* out, float scale, int32_t zero_point, Parallel& par) {
  QConvertCtx x{n, 0, in, out, scale, zero_point};
  convert_run(x, 128.0, quantize_task, par);
}

void dequantize_qs8(size_t n, const int8_t* in, float* out, float scale, int32_t zero_point, Parallel& par) {
  QConvertCtx x{n, 0, in, out, scale, zero_point};
  convert_run(x, 64.0, dequantize_task, par);
}

void qadd(const BinaryShape& s, const int8_t* a, const int8_t* b, int8_t* out, const QElemParams& q,
          Parallel& par) {
  qbinary<AddV>(s, a, b, out, q, par);
}

void qmul(const BinaryShape& s, const int8_t* a, const int8_t* b, int8_t* out, const QElemParams& q,
          Parallel& par) {
  qbinary<MulV>(s, a, b, out, q, par);
}

void qmax_pool2d(const PoolParams& p, size_t N, size_t H, size_t W, size_t C, const int8_t* in, size_t OH,
                 size_t OW, int8_t* out, int32_t out_min, int32_t out_max, Parallel& par) {
  if (size_t{p.pool_h} * p.pool_w > 64) {
    return internal::scalar_table().qmax_pool2d(p, N, H, W, C, in, OH, OW, out, out_min, out_max, par);
  }
  QPoolCtx x{&p, H, W, C, OH, OW, N * OH, 0, in, out, out_min, out_max};
  if (x.rows == 0 || OW == 0 || C == 0) return;
  x.tasks = internal::task_count(x.rows, static_cast<double>(OW * C * p.pool_h * p.pool_w),
                                 internal::parallel_threads(par), 8);
  internal::parallel_run(par, x.tasks, qmax_task, &x);
}

void qglobal_avg_pool(size_t N, size_t HW, size_t C, const int8_t* in, int8_t* out, const QElemParams& q,
                      Parallel& par) {
  if (N == 0 || C == 0) return;
  QGapCtx x{N, HW, C, 0, in, out, &q};
  const size_t units = N * ((C + 15) / 16);
  x.tasks = internal::task_count(units, static_cast<double>(HW) * 16, internal::parallel_threads(par), 8);
  internal::parallel_run(par, x.tasks, qgap_task, &x);
}

void qlut(size_t n, const int8_t* in, int8_t* out, const int8_t* table, Parallel& par) {
  if (n == 0) return;
  LutCtx x;
  x.in = in;
  x.out = out;
  x.n = n;
  for (int half = 0; half < 2; ++half) {
    for (int j = 0; j < 8; ++j) {
      alignas(16) int8_t chunk[16];
      for (int l = 0; l < 16; ++l) {
        const int k = half * 8 + j;
        chunk[l] = static_cast<int8_t>(table[k * 16 + l] ^ (j ? table[(k - 1) * 16 + l] : 0));
      }
      x.t[half * 8 + j] =
          _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(chunk)));
    }
  }
  x.tasks = internal::task_count((n + 31) / 32, 32.0, internal::parallel_threads(par), 8);
  internal::parallel_run(par, x.tasks, lut_task, &x);
}

}  // namespace avx2
}  // namespace webxnn
