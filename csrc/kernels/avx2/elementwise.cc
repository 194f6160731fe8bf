// AVX2 element-wise kernels: the arithmetic binary ops and the cheap unary ops, 8 floats per step with a
// masked tail. exp/sigmoid/tanh/erf/gelu are in math.cc; the other transcendental ops (and pow) use the
// scalar table.
#include <immintrin.h>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/simd.h"
#include "kernels/avx2/vmath.h"
#include "kernels/internal.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace avx2 {
namespace {

// NaN-propagating min/max (numpy semantics, matching the scalar table).
inline __m256 nan_min(__m256 a, __m256 b) {
  const __m256 r = _mm256_min_ps(b, a);  // a if either is NaN
  return _mm256_blendv_ps(r, b, _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
}
inline __m256 nan_max(__m256 a, __m256 b) {
  const __m256 r = _mm256_max_ps(b, a);
  return _mm256_blendv_ps(r, b, _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
}

template <BinaryOp kOp>
inline __m256 binv(__m256 a, __m256 b) {
  switch (kOp) {
    case BinaryOp::kAdd: return _mm256_add_ps(a, b);
    case BinaryOp::kSub: return _mm256_sub_ps(a, b);
    case BinaryOp::kMul: return _mm256_mul_ps(a, b);
    case BinaryOp::kDiv: return _mm256_div_ps(a, b);
    case BinaryOp::kMin: return nan_min(a, b);
    case BinaryOp::kMax: return nan_max(a, b);
    case BinaryOp::kPrelu:
      return _mm256_blendv_ps(_mm256_mul_ps(a, b), a, _mm256_cmp_ps(a, _mm256_setzero_ps(), _CMP_GT_OQ));
    case BinaryOp::kSquaredDiff: {
      const __m256 d = _mm256_sub_ps(a, b);
      return _mm256_mul_ps(d, d);
    }
    default: return a;  // kPow never reaches here
  }
}

struct BinCtx {
  const BinaryShape* s;
  const float* a;
  const float* b;
  float* out;
  size_t inner, chunks, units, tasks;
  float vmin, vmax;
};

template <BinaryOp kOp>
void bin_task(const void* vctx, size_t task) {
  const BinCtx& x = *static_cast<const BinCtx*>(vctx);
  const BinaryShape& s = *x.s;
  const size_t rank = s.rank;
  const size_t sa = s.a_strides[rank - 1], sb = s.b_strides[rank - 1];
  const __m256 vmin = _mm256_set1_ps(x.vmin), vmax = _mm256_set1_ps(x.vmax);
  const size_t u0 = x.units * task / x.tasks, u1 = x.units * (task + 1) / x.tasks;
  for (size_t u = u0; u < u1; ++u) {
    const size_t row = u / x.chunks, chunk = u % x.chunks;
    const size_t i0 = x.inner * chunk / x.chunks, i1 = x.inner * (chunk + 1) / x.chunks;
    size_t oa, ob;
    binary_row_offsets(s, row, &oa, &ob);
    const float* pa = x.a + oa + i0 * sa;
    const float* pb = x.b + ob + i0 * sb;
    float* o = x.out + row * x.inner + i0;
    const size_t n = i1 - i0;
    size_t i = 0;
    if (sa <= 1 && sb <= 1) {
      const __m256 ca = _mm256_set1_ps(*pa), cb = _mm256_set1_ps(*pb);
      for (; i + 8 <= n; i += 8) {
        const __m256 va = sa ? _mm256_loadu_ps(pa + i) : ca;
        const __m256 vb = sb ? _mm256_loadu_ps(pb + i) : cb;
        _mm256_storeu_ps(o + i, clamp8(binv<kOp>(va, vb), vmin, vmax));
      }
      if (i < n) {
        const __m256i m = lane_mask(n - i);
        const __m256 va = sa ? _mm256_maskload_ps(pa + i, m) : ca;
        const __m256 vb = sb ? _mm256_maskload_ps(pb + i, m) : cb;
        store_lanes(o + i, m, clamp8(binv<kOp>(va, vb), vmin, vmax));
      }
    } else {
      for (; i < n; ++i) {
        const __m256 r = binv<kOp>(_mm256_set1_ps(pa[i * sa]), _mm256_set1_ps(pb[i * sb]));
        o[i] = _mm256_cvtss_f32(clamp8(r, vmin, vmax));
      }
    }
  }
}

template <UnaryOp kOp>
inline __m256 unv(__m256 x, __m256 alpha, __m256 beta) {
  const __m256 zero = _mm256_setzero_ps();
  switch (kOp) {
    case UnaryOp::kAbs: return _mm256_andnot_ps(_mm256_set1_ps(-0.f), x);
    case UnaryOp::kNeg: return _mm256_xor_ps(_mm256_set1_ps(-0.f), x);
    case UnaryOp::kFloor: return _mm256_round_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    case UnaryOp::kCeil: return _mm256_round_ps(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
    case UnaryOp::kRoundEven: return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    case UnaryOp::kSqrt: return _mm256_sqrt_ps(x);
    case UnaryOp::kRsqrt: return _mm256_div_ps(_mm256_set1_ps(1.f), _mm256_sqrt_ps(x));
    case UnaryOp::kReciprocal: return _mm256_div_ps(_mm256_set1_ps(1.f), x);
    case UnaryOp::kSquare: return _mm256_mul_ps(x, x);
    case UnaryOp::kRelu:  // x < 0 ? 0 : x (NaN stays)
      return _mm256_blendv_ps(x, zero, _mm256_cmp_ps(x, zero, _CMP_LT_OQ));
    case UnaryOp::kLeakyRelu:
      return _mm256_blendv_ps(x, _mm256_mul_ps(alpha, x), _mm256_cmp_ps(x, zero, _CMP_LT_OQ));
    case UnaryOp::kHardswish: return hswish_ps(x);
    case UnaryOp::kSoftsign:
      return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.f), _mm256_andnot_ps(_mm256_set1_ps(-0.f), x)));
    case UnaryOp::kHardSigmoid: {  // vmaxps / vminps return their second operand on NaN: y last keeps a NaN
      const __m256 y = _mm256_fmadd_ps(alpha, x, beta);
      return _mm256_min_ps(_mm256_set1_ps(1.f), _mm256_max_ps(zero, y));
    }
    default: return x;  // kClamp, kCopy
  }
}

struct UnCtx {
  const float* in;
  float* out;
  size_t n, tasks;
  float alpha, beta, vmin, vmax;
};

template <UnaryOp kOp>
void un_task(const void* vctx, size_t task) {
  const UnCtx& x = *static_cast<const UnCtx*>(vctx);
  const __m256 alpha = _mm256_set1_ps(x.alpha), beta = _mm256_set1_ps(x.beta);
  map_task<false>(x.in, x.out, x.n, task, x.tasks, _mm256_set1_ps(x.vmin), _mm256_set1_ps(x.vmax),
                  [&](__m256 v) { return unv<kOp>(v, alpha, beta); });
}

}  // namespace

void binary(BinaryOp op, const BinaryShape& s, const float* a, const float* b, float* out, Activation act,
            Parallel& par) {
  if (op == BinaryOp::kPow || s.rank == 0) return scalar::binary(op, s, a, b, out, act, par);
  BinCtx x;
  x.s = &s;
  x.a = a;
  x.b = b;
  x.out = out;
  x.vmin = act.min;
  x.vmax = act.max;
  x.inner = s.out_dims[s.rank - 1];
  size_t outer = 1;
  for (size_t d = 0; d + 1 < s.rank; ++d) outer *= s.out_dims[d];
  if (x.inner == 0 || outer == 0) return;
  const size_t threads = internal::parallel_threads(par);
  x.chunks = 1;
  if (outer < threads * 4 && x.inner >= 8192) x.chunks = min_sz(x.inner / 4096, threads * 4);
  x.units = outer * x.chunks;
  x.tasks = internal::task_count(x.units, static_cast<double>(x.inner / x.chunks), threads, 8);
  internal::TaskFn fn = nullptr;
  switch (op) {
    case BinaryOp::kAdd: fn = bin_task<BinaryOp::kAdd>; break;
    case BinaryOp::kSub: fn = bin_task<BinaryOp::kSub>; break;
    case BinaryOp::kMul: fn = bin_task<BinaryOp::kMul>; break;
    case BinaryOp::kDiv: fn = bin_task<BinaryOp::kDiv>; break;
    case BinaryOp::kMin: fn = bin_task<BinaryOp::kMin>; break;
    case BinaryOp::kMax: fn = bin_task<BinaryOp::kMax>; break;
    case BinaryOp::kPrelu: fn = bin_task<BinaryOp::kPrelu>; break;
    case BinaryOp::kSquaredDiff: fn = bin_task<BinaryOp::kSquaredDiff>; break;
    default: return scalar::binary(op, s, a, b, out, act, par);
  }
  internal::parallel_run(par, x.tasks, fn, &x);
}

void unary(UnaryOp op, size_t n, const float* in, float* out, const UnaryParams& p, Parallel& par) {
  internal::TaskFn fn = nullptr;
  switch (op) {
#define WEBXNN_UN(name) \
  case UnaryOp::name: fn = un_task<UnaryOp::name>; break;
    WEBXNN_UN(kClamp)
    WEBXNN_UN(kCopy)
    WEBXNN_UN(kAbs)
    WEBXNN_UN(kNeg)
    WEBXNN_UN(kFloor)
    WEBXNN_UN(kCeil)
    WEBXNN_UN(kRoundEven)
    WEBXNN_UN(kSqrt)
    WEBXNN_UN(kRsqrt)
    WEBXNN_UN(kReciprocal)
    WEBXNN_UN(kSquare)
    WEBXNN_UN(kRelu)
    WEBXNN_UN(kLeakyRelu)
    WEBXNN_UN(kHardswish)
    WEBXNN_UN(kSoftsign)
    WEBXNN_UN(kHardSigmoid)
#undef WEBXNN_UN
    default:
      if (unary_transcendental(op, n, in, out, p, par)) return;
      return scalar::unary(op, n, in, out, p, par);
  }
  if (n == 0) return;
  UnCtx x;
  x.in = in;
  x.out = out;
  x.n = n;
  x.alpha = p.alpha;
  x.beta = p.beta;
  x.vmin = p.act.min;
  x.vmax = p.act.max;
  x.tasks = internal::task_count((n + 4095) / 4096, 4096.0 * 2, internal::parallel_threads(par), 8);
  internal::parallel_run(par, x.tasks, fn, &x);
}

}  // namespace avx2
}  // namespace webxnn
