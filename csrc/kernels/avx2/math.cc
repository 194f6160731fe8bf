// AVX2+FMA transcendental element-wise ops (compiled with -mavx2 -mfma); softmax and layer norm are in rows.cc.
//
// exp: n = round(x * log2 e), r = x - n ln2 (two-constant Cody-Waite), e^r by a degree-6 polynomial on
//   |r| <= ln2/2 (truncation < 2^-24 relative), scaled by 2^n as two factors 2^(n>>1) * 2^(n - (n>>1)) so the
//   whole range [-104, 89] needs no special case: results overflow to inf / underflow (gradually) to 0.
// sigmoid: e = exp(-|x|), 1/(1+e) or e/(1+e) — never exponentiates a large positive number.
// tanh: odd Taylor polynomial below |x| = 0.4 (no cancellation near 0), else (1 - e)/(1 + e), e = exp(-2|x|).
// erf: odd Taylor polynomial below |x| = 0.5, else 1 - erfc(|x|) with erfc = e^(-x^2) t Q(t) (a polynomial fit
//   of erfcx, see erfcx_small). gelu = x/2 (1 + erf(x/sqrt 2)) through erfc alone (see gelu_ps).
// All within the tolerances of the kernel tests (2e-6) and WPT's ULP budgets (sigmoid 34, tanh 16, exp 32).
// NaN inputs give NaN.
#include <immintrin.h>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/simd.h"
#include "kernels/avx2/vmath.h"
#include "kernels/internal.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace avx2 {
namespace {

inline __m256 tanh_ps(__m256 x) {
  const __m256 ax = vabs(x), sign = _mm256_and_ps(x, _mm256_set1_ps(-0.f));
  // small: x + x^3 P(x^2)
  const __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(21844.f / 6081075.f);
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1382.f / 155925.f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(62.f / 2835.f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-17.f / 315.f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(2.f / 15.f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1.f / 3.f));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, x2), x, x);
  // large: (1 - e) / (1 + e), e = exp(-2|x|)
  const __m256 one = _mm256_set1_ps(1.f);
  const __m256 e = exp_core(_mm256_mul_ps(ax, _mm256_set1_ps(-2.f)));
  const __m256 large = _mm256_or_ps(_mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e)), sign);
  const __m256 r = _mm256_blendv_ps(large, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.4f), _CMP_LT_OQ));
  return _mm256_blendv_ps(r, x, nan_mask(x));
}

// erf(x) for |x| < 0.5: 2/sqrt(pi) (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320 + x^13/9360).
inline __m256 erf_small(__m256 x) {
  const __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(1.f / 9360.f);
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1.f / 1320.f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(1.f / 216.f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1.f / 42.f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(1.f / 10.f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1.f / 3.f));
  return _mm256_mul_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, x2), x, x), _mm256_set1_ps(1.12837916709551257f));
}

inline __m256 erf_ps(__m256 x) {
  const __m256 ax = vabs(x), sign = _mm256_and_ps(x, _mm256_set1_ps(-0.f));
  const __m256 large = _mm256_or_ps(_mm256_sub_ps(_mm256_set1_ps(1.f), erfc_pos(ax)), sign);
  const __m256 r = _mm256_blendv_ps(large, erf_small(x), _mm256_cmp_ps(ax, _mm256_set1_ps(0.5f), _CMP_LT_OQ));
  return _mm256_blendv_ps(r, x, nan_mask(x));
}

template <UnaryOp kOp>
inline __m256 tv(__m256 x) {
  switch (kOp) {
    case UnaryOp::kExp: return exp_ps(x);
    case UnaryOp::kSigmoid: return sigmoid_ps(x);
    case UnaryOp::kTanh: return tanh_ps(x);
    case UnaryOp::kErf: return erf_ps(x);
    case UnaryOp::kGelu: return gelu_ps(x);
    default: return x;
  }
}

struct UnCtx {
  const float* in;
  float* out;
  size_t n, tasks;
  float vmin, vmax;
};

template <UnaryOp kOp>
void un_task(const void* vctx, size_t task) {
  const UnCtx& x = *static_cast<const UnCtx*>(vctx);
  // Pairs of vectors: the polynomial chains are long, and the second one fills their latency.
  map_task<true>(x.in, x.out, x.n, task, x.tasks, _mm256_set1_ps(x.vmin), _mm256_set1_ps(x.vmax),
                 [](__m256 v) { return tv<kOp>(v); });
}

}  // namespace

bool unary_transcendental(UnaryOp op, size_t n, const float* in, float* out, const UnaryParams& p,
                          Parallel& par) {
  internal::TaskFn fn = nullptr;
  switch (op) {
    case UnaryOp::kExp: fn = un_task<UnaryOp::kExp>; break;
    case UnaryOp::kSigmoid: fn = un_task<UnaryOp::kSigmoid>; break;
    case UnaryOp::kTanh: fn = un_task<UnaryOp::kTanh>; break;
    case UnaryOp::kErf: fn = un_task<UnaryOp::kErf>; break;
    case UnaryOp::kGelu: fn = un_task<UnaryOp::kGelu>; break;
    default: return false;
  }
  if (n == 0) return true;
  UnCtx x;
  x.in = in;
  x.out = out;
  x.n = n;
  x.vmin = p.act.min;
  x.vmax = p.act.max;
  const size_t threads = internal::parallel_threads(par);
  size_t tasks = 1;
  if (threads > 1 && n >= 16384) tasks = min_sz(threads * 4, n / 4096);
  x.tasks = tasks;
  internal::parallel_run(par, x.tasks, fn, &x);
  return true;
}

}  // namespace avx2
}  // namespace webxnn
