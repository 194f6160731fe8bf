// Scalar GEMM and batch matmul kernels.
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

void batch_matmul(size_t batch, size_t M, size_t N, size_t K, const float* A, MatStrides as, const float* B,
                  MatStrides bs, bool b_is_nk, float* C, MatStrides cs, Parallel& par) {
  if (batch == 0 || M == 0 || N == 0) return;
  if (!b_is_nk) {
    const Activation none;
    if (batch == 1 || par.threads() == 1 || M * N * K >= 65536 * 4) {
      // Parallelise inside each product.
      for (size_t b = 0; b < batch; ++b)
        gemm_kn(M, N, K, A + b * as.batch, as.row, B + b * bs.batch, bs.row, nullptr, C + b * cs.batch,
                cs.row, none, par);
      return;
    }
    // Many small products: one task per range of batches, each product serial.
    SerialParallel serial;
    const size_t tasks = pick_tasks(par, batch, static_cast<double>(M) * N * (K + 1));
    par.run(tasks, [&](size_t task) {
      size_t b0, b1;
      chunk_range(batch, tasks, task, &b0, &b1);
      for (size_t b = b0; b < b1; ++b)
        gemm_kn(M, N, K, A + b * as.batch, as.row, B + b * bs.batch, bs.row, nullptr, C + b * cs.batch,
                cs.row, none, serial);
    });
    return;
  }
  // B is [N, K]: each output is a dot product of two rows, summed in k order.
  const size_t rows = batch * M;
  const size_t tasks = pick_tasks(par, rows, static_cast<double>(N) * K);
  par.run(tasks, [&](size_t task) {
    size_t r0, r1;
    chunk_range(rows, tasks, task, &r0, &r1);
    for (size_t r = r0; r < r1; ++r) {
      const size_t b = r / M, m = r % M;
      const float* a = A + b * as.batch + m * as.row;
      const float* bb = B + b * bs.batch;
      float* c = C + b * cs.batch + m * cs.row;
      for (size_t n = 0; n < N; ++n) {
        const float* brow = bb + n * bs.row;
        float s = 0.f;
        for (size_t k = 0; k < K; ++k) s += a[k] * brow[k];
        c[n] = s;
      }
    }
  });
}

}  // namespace scalar
}  // namespace webxnn
