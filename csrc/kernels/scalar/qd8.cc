// Dynamic int8 (table.def's quantize_qd8, qd8_gemm_packed_size, qd8_gemm_pack, qd8_gemm): the per-row
// quantizer and the reference qd8-f32-qc8w GEMM the AVX2 kernels are tested against, on the same packed panels.
#include <cmath>
#include <cstring>

#include "kernels/qgemm_layout.h"
#include "kernels/scalar/common.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {

namespace {
size_t padded_n(size_t N) { return (N + kQNR - 1) / kQNR * kQNR; }

// qd8_gemm_pack (dot: qd8_gemm_pack_dot, the VNNI tables' QPath::kDot).
void pack_qd8(size_t K, size_t N, const int8_t* B, bool b_is_nk, const float* w_scales, size_t w_scale_count,
              const float* bias, void* packed, bool dot) {
  QGemmQuant q;  // s8 activations, zero point 0, unit scales: the column scale is w_scale[n]
  q.w_scales = w_scales;
  q.w_scale_count = w_scale_count;
  if (dot) {
    qgemm_pack_dot(K, N, B, b_is_nk, nullptr, q, packed);
  } else {
    scalar::qgemm_pack(K, N, B, b_is_nk, nullptr, q, packed);
  }
  uint8_t* s = static_cast<uint8_t*>(packed) + qgemm_layout_bytes(K, N);
  std::memset(s, 0, padded_n(N) * 8);
  int32_t* wsum = reinterpret_cast<int32_t*>(s);
  float* b = reinterpret_cast<float*>(s + padded_n(N) * 4);
  for (size_t n = 0; n < N; ++n) {
    uint32_t sum = 0;  // wraps like the kernels' int32 accumulators
    for (size_t k = 0; k < K; ++k)
      sum += static_cast<uint32_t>(int32_t{b_is_nk ? B[n * K + k] : B[k * N + n]});
    wsum[n] = static_cast<int32_t>(sum);
    b[n] = bias ? bias[n] : 0.f;
  }
}
}  // namespace

void qd8_gemm_pack_dot(size_t K, size_t N, const int8_t* B, bool b_is_nk, const float* w_scales,
                       size_t w_scale_count, const float* bias, void* packed) {
  pack_qd8(K, N, B, b_is_nk, w_scales, w_scale_count, bias, packed, true);
}

Qd8Columns qd8_columns(const void* packed, size_t K, size_t N) {
  const uint8_t* s = static_cast<const uint8_t*>(packed) + qgemm_layout_bytes(K, N);
  return {reinterpret_cast<const int32_t*>(s), reinterpret_cast<const float*>(s + padded_n(N) * 4)};
}

namespace scalar {

void quantize_qd8(size_t rows, size_t cols, const float* x, int8_t* y, RowQuant* params, Parallel& par) {
  const size_t tasks = pick_tasks(par, rows, 3.0 * cols);
  par.run(tasks, [&](size_t task) {
    size_t r0, r1;
    chunk_range(rows, tasks, task, &r0, &r1);
    for (size_t r = r0; r < r1; ++r) {
      const float* xr = x + r * cols;
      float lo = 0.f, hi = 0.f;
      for (size_t k = 0; k < cols; ++k) {
        lo = xr[k] < lo ? xr[k] : lo;  // a NaN is skipped
        hi = xr[k] > hi ? xr[k] : hi;
      }
      const float scale = hi == lo ? 1.f : (hi - lo) / 255.f;
      float z = -128.f - lo / scale;
      z = z >= -128.f ? z : -128.f;  // NaN (infinite range) -> -128
      z = z <= 127.f ? z : 127.f;
      const int32_t zp = static_cast<int32_t>(round_even(z));
      const float qlo = static_cast<float>(-128 - zp), qhi = static_cast<float>(127 - zp);
      for (size_t k = 0; k < cols; ++k) {
        float v = xr[k] / scale;
        v = v >= qlo ? v : qlo;
        v = v <= qhi ? v : qhi;
        y[r * cols + k] = static_cast<int8_t>(static_cast<int32_t>(round_even(v)) + zp);
      }
      params[r] = RowQuant{zp, scale};
    }
  });
}

size_t qd8_gemm_packed_size(size_t K, size_t N) { return qgemm_layout_bytes(K, N) + padded_n(N) * 8; }

void qd8_gemm_pack(size_t K, size_t N, const int8_t* B, bool b_is_nk, const float* w_scales,
                   size_t w_scale_count, const float* bias, void* packed) {
  pack_qd8(K, N, B, b_is_nk, w_scales, w_scale_count, bias, packed, false);
}

void qd8_gemm(size_t M, size_t N, size_t K, const int8_t* A, size_t lda, const RowQuant* aq,
              const void* packed, float* C, size_t ldc, float out_min, float out_max, Parallel& par) {
  if (M == 0 || N == 0) return;
  const QGemmRun run = qgemm_run_params(packed, K, -128, 127);
  const Qd8Columns cols = qd8_columns(packed, K, N);
  const size_t pb = run.panel_bytes;
  const int32_t d = run.h.a_shift;
  const size_t tasks = pick_tasks(par, M, static_cast<double>(N) * (K + 1));
  par.run(tasks, [&](size_t task) {
    size_t m0, m1;
    chunk_range(M, tasks, task, &m0, &m1);
    for (size_t m = m0; m < m1; ++m) {
      const uint8_t* a = reinterpret_cast<const uint8_t*>(A) + m * lda;
      const uint32_t za = static_cast<uint32_t>(aq[m].zero_point);
      for (size_t n = 0; n < N; ++n) {
        // The kernels' view: a + d and the packed bias -d * wsum (qgemm_layout.h), then - za * wsum (wrapping).
        float sw;
        uint32_t acc = qgemm_column_sum(packed, pb, n, a, K, false, d, &sw);
        acc -= za * static_cast<uint32_t>(cols.wsum[n]);
        const float s = aq[m].scale * sw;
        float v = std::fma(static_cast<float>(static_cast<int32_t>(acc)), s, cols.bias[n]);
        v = v >= out_min ? v : out_min;  // NaN -> out_min, like vmaxps(v, lo)
        v = v <= out_max ? v : out_max;
        C[m * ldc + n] = v;
      }
    }
  });
}

}  // namespace scalar
}  // namespace webxnn
