// Scalar GEMM, batch matmul and qs8 fully-connected kernels.
//
// Packed f32 B:   [N bias][K x N weights, row-major]. The inner loops stream one row of B across a block of
// output columns held in a small accumulator array, for up to 4 rows of A at once; the compiler vectorises
// them with the baseline ISA. Every output is bias + sum_k a[k]*b[k] accumulated in k order, so the result
// does not depend on how rows/columns are split into tasks.
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/scalar/common.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace scalar {
namespace {

constexpr size_t kMR = 4;     // rows of A per tile
constexpr size_t kNB = 256;   // output columns per block (accumulators stay in L1)

// C[m0:m0+mr, n0:n0+nb] for one tile, with B given [K, ldb] row-major and bias (may be null).
void gemm_tile(size_t mr, size_t nb, size_t K, const float* A, size_t lda, const float* B, size_t ldb,
               const float* bias, float* C, size_t ldc, const Clamp& clamp) {
  float acc[kMR][kNB];
  for (size_t i = 0; i < mr; ++i) {
    if (bias) {
      std::memcpy(acc[i], bias, nb * sizeof(float));
    } else {
      std::fill(acc[i], acc[i] + nb, 0.f);
    }
  }
  if (mr == kMR) {
    float* c0 = acc[0];
    float* c1 = acc[1];
    float* c2 = acc[2];
    float* c3 = acc[3];
    for (size_t k = 0; k < K; ++k) {
      const float a0 = A[k], a1 = A[lda + k], a2 = A[2 * lda + k], a3 = A[3 * lda + k];
      const float* b = B + k * ldb;
      for (size_t j = 0; j < nb; ++j) {
        const float bj = b[j];
        c0[j] += a0 * bj;
        c1[j] += a1 * bj;
        c2[j] += a2 * bj;
        c3[j] += a3 * bj;
      }
    }
  } else {
    for (size_t i = 0; i < mr; ++i) {
      float* c = acc[i];
      const float* a = A + i * lda;
      for (size_t k = 0; k < K; ++k) {
        const float ak = a[k];
        const float* b = B + k * ldb;
        for (size_t j = 0; j < nb; ++j) c[j] += ak * b[j];
      }
    }
  }
  for (size_t i = 0; i < mr; ++i) {
    float* out = C + i * ldc;
    for (size_t j = 0; j < nb; ++j) out[j] = clamp(acc[i][j]);
  }
}

// Shared driver: C = act(A * B + bias) with B as [K, ldb] row-major.
void gemm_kn(size_t M, size_t N, size_t K, const float* A, size_t lda, const float* B, size_t ldb,
             const float* bias, float* C, size_t ldc, Activation act, Parallel& par) {
  if (M == 0 || N == 0) return;
  const Clamp clamp(act);
  const size_t m_tiles = (M + kMR - 1) / kMR;
  const size_t n_blocks = (N + kNB - 1) / kNB;
  const size_t units = m_tiles * n_blocks;
  const size_t tasks = pick_tasks(par, units, static_cast<double>(kMR) * std::min(N, kNB) * (K + 1));
  par.run(tasks, [&](size_t task) {
    size_t u0, u1;
    chunk_range(units, tasks, task, &u0, &u1);
    for (size_t u = u0; u < u1; ++u) {
      // n-block outer so consecutive units of one task reuse the same block of B.
      const size_t nb_i = u / m_tiles, mt = u % m_tiles;
      const size_t m0 = mt * kMR, n0 = nb_i * kNB;
      const size_t mr = std::min(kMR, M - m0), nb = std::min(kNB, N - n0);
      gemm_tile(mr, nb, K, A + m0 * lda, lda, B + n0, ldb, bias ? bias + n0 : nullptr, C + m0 * ldc + n0, ldc,
                clamp);
    }
  });
}

}  // namespace

size_t gemm_packed_size(size_t K, size_t N) { return (N + K * N) * sizeof(float); }

void gemm_pack(size_t K, size_t N, const float* B, bool b_is_nk, const float* bias, void* packed) {
  float* out = static_cast<float*>(packed);
  if (bias) {
    std::memcpy(out, bias, N * sizeof(float));
  } else {
    std::fill(out, out + N, 0.f);
  }
  float* w = out + N;
  if (!b_is_nk) {
    std::memcpy(w, B, K * N * sizeof(float));
  } else {
    for (size_t n = 0; n < N; ++n)
      for (size_t k = 0; k < K; ++k) w[k * N + n] = B[n * K + k];
  }
}

void gemm(size_t M, size_t N, size_t K, const float* A, size_t lda, const void* packed, float* C, size_t ldc,
          Activation act, Parallel& par) {
  const float* bias = static_cast<const float*>(packed);
  gemm_kn(M, N, K, A, lda, bias + N, N, bias, C, ldc, act, par);
}

void gemm_residual(size_t M, size_t N, size_t K, const float* A, size_t lda, const void* packed,
                   const float* R, size_t ldr, float* C, size_t ldc, Activation act, Parallel& par) {
  // bias + products, then + R, then the clamp (the order the fused kernels use).
  gemm(M, N, K, A, lda, packed, C, ldc, Activation{}, par);
  const Clamp clamp(act);
  for (size_t m = 0; m < M; ++m)
    for (size_t n = 0; n < N; ++n) C[m * ldc + n] = clamp(C[m * ldc + n] + R[m * ldr + n]);
}

void batch_matmul(size_t batch, size_t M, size_t N, size_t K, const float* A, size_t a_batch_stride,
                  const float* B, size_t b_batch_stride, bool b_is_nk, float* C, Parallel& par) {
  if (batch == 0 || M == 0 || N == 0) return;
  if (!b_is_nk) {
    const Activation none;
    if (batch == 1 || par.threads() == 1 || M * N * K >= 65536 * 4) {
      // Parallelise inside each product.
      for (size_t b = 0; b < batch; ++b)
        gemm_kn(M, N, K, A + b * a_batch_stride, K, B + b * b_batch_stride, N, nullptr, C + b * M * N, N,
                none, par);
      return;
    }
    // Many small products: one task per range of batches, each product serial.
    SerialParallel serial;
    const size_t tasks = pick_tasks(par, batch, static_cast<double>(M) * N * (K + 1));
    par.run(tasks, [&](size_t task) {
      size_t b0, b1;
      chunk_range(batch, tasks, task, &b0, &b1);
      for (size_t b = b0; b < b1; ++b)
        gemm_kn(M, N, K, A + b * a_batch_stride, K, B + b * b_batch_stride, N, nullptr, C + b * M * N, N,
                none, serial);
    });
    return;
  }
  // B is [N, K]: each output is a dot product of two contiguous rows, summed in k order.
  const size_t rows = batch * M;
  const size_t tasks = pick_tasks(par, rows, static_cast<double>(N) * K);
  par.run(tasks, [&](size_t task) {
    size_t r0, r1;
    chunk_range(rows, tasks, task, &r0, &r1);
    for (size_t r = r0; r < r1; ++r) {
      const size_t b = r / M, m = r % M;
      const float* a = A + b * a_batch_stride + m * K;
      const float* bb = B + b * b_batch_stride;
      float* c = C + r * N;
      for (size_t n = 0; n < N; ++n) {
        const float* brow = bb + n * K;
        float s = 0.f;
        for (size_t k = 0; k < K; ++k) s += a[k] * brow[k];
        c[n] = s;
      }
    }
  });
}

// ---- qs8 fully connected ----
// Packed: [int32 out_zero_point, 3 x pad][int32 bias'[N]][float scale[N]][int8 w[K x N]] where
// bias'[n] = bias[n] - in_zp * sum_k w[k][n] (the input zero point folded in) and
// scale[n] = in_scale * w_scale[n] / out_scale.
namespace {
constexpr size_t kQHeader = 16;
}

size_t qs8_gemm_packed_size(size_t K, size_t N) { return kQHeader + N * 8 + K * N; }

void qs8_gemm_pack(size_t K, size_t N, const int8_t* B, bool b_is_nk, const int32_t* bias,
                   const float* w_scales, float in_scale, int32_t in_zero_point, float out_scale,
                   int32_t out_zero_point, void* packed) {
  uint8_t* base = static_cast<uint8_t*>(packed);
  std::memset(base, 0, kQHeader);
  std::memcpy(base, &out_zero_point, sizeof(int32_t));
  int32_t* pbias = reinterpret_cast<int32_t*>(base + kQHeader);
  float* pscale = reinterpret_cast<float*>(base + kQHeader + N * 4);
  int8_t* w = reinterpret_cast<int8_t*>(base + kQHeader + N * 8);
  if (!b_is_nk) {
    std::memcpy(w, B, K * N);
  } else {
    for (size_t n = 0; n < N; ++n)
      for (size_t k = 0; k < K; ++k) w[k * N + n] = B[n * K + k];
  }
  for (size_t n = 0; n < N; ++n) {
    // Unsigned arithmetic: wraps like the int32 accumulator instead of overflowing (UB) on hostile weights.
    uint32_t wsum = 0;
    for (size_t k = 0; k < K; ++k) wsum += static_cast<uint32_t>(static_cast<int32_t>(w[k * N + n]));
    const uint32_t b = bias ? static_cast<uint32_t>(bias[n]) : 0u;
    pbias[n] = static_cast<int32_t>(b - static_cast<uint32_t>(in_zero_point) * wsum);
    pscale[n] = in_scale * w_scales[n] / out_scale;
  }
}

void qs8_gemm(size_t M, size_t N, size_t K, const int8_t* A, size_t lda, const void* packed, int8_t* C,
              size_t ldc, int8_t out_min, int8_t out_max, Parallel& par) {
  if (M == 0 || N == 0) return;
  const uint8_t* base = static_cast<const uint8_t*>(packed);
  int32_t out_zp;
  std::memcpy(&out_zp, base, sizeof(int32_t));
  const int32_t* pbias = reinterpret_cast<const int32_t*>(base + kQHeader);
  const float* pscale = reinterpret_cast<const float*>(base + kQHeader + N * 4);
  const int8_t* w = reinterpret_cast<const int8_t*>(base + kQHeader + N * 8);
  const float fmin = static_cast<float>(out_min), fmax = static_cast<float>(out_max);
  const float fzp = static_cast<float>(out_zp);
  const size_t tasks = pick_tasks(par, M, static_cast<double>(N) * (K + 1));
  par.run(tasks, [&](size_t task) {
    size_t m0, m1;
    chunk_range(M, tasks, task, &m0, &m1);
    std::vector<uint32_t> acc(N);
    for (size_t m = m0; m < m1; ++m) {
      for (size_t n = 0; n < N; ++n) acc[n] = static_cast<uint32_t>(pbias[n]);
      const int8_t* a = A + m * lda;
      for (size_t k = 0; k < K; ++k) {
        const uint32_t ak = static_cast<uint32_t>(static_cast<int32_t>(a[k]));
        const int8_t* wk = w + k * N;
        for (size_t n = 0; n < N; ++n) acc[n] += ak * static_cast<uint32_t>(static_cast<int32_t>(wk[n]));
      }
      int8_t* c = C + m * ldc;
      for (size_t n = 0; n < N; ++n) {
        float v = round_even(static_cast<float>(static_cast<int32_t>(acc[n])) * pscale[n]) + fzp;
        v = v >= fmin ? v : fmin;  // also maps NaN (hostile scales) to out_min
        v = v > fmax ? fmax : v;
        c[n] = static_cast<int8_t>(v);
      }
    }
  });
}

}  // namespace scalar
}  // namespace webxnn
